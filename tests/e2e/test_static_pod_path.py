"""The kubelet's `staticPodPath` (issue 32): a KubeletConfiguration (the pool's `kubeletConfig`
in the cluster file) names a directory of pod manifests, which the node's kubelet runs as
static pods, each mirrored in the API as `<pod>-<node>`. As upstream's file source, the
directory is read again on every sync: a file added starts its pod, a file changed replaces
it, a file removed stops it (also when removed while the server was down: the mirror is
deleted at the first sync after the restart); hidden files are skipped and a broken file does
not stop the others. The housekeeping interval (the kubelet's sync) is 1s here; nothing asserts on durations.
"""

import json

import pytest

from conftest import Berth, eventually

MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: kube-system
  labels: {{component: {name}, tier: control-plane}}
spec:
  containers:
  - name: {name}
    image: {image}
"""


@pytest.fixture(scope="module")
def sp(tmp_path_factory):
    d = tmp_path_factory.mktemp("static-pod-path")
    manifests = d / "manifests"
    manifests.mkdir()
    (manifests / "etcd.yaml").write_text(MANIFEST.format(name="etcd", image="etcd:3.5"))
    cluster = d / "cluster.yaml"
    cluster.write_text(json.dumps({"pools": [
        {"name": "master", "kubeletConfig": {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "staticPodPath": str(manifests)}},
        {"name": "worker"},
    ]}))
    b = Berth.start(d / "data", nodes=0, args=["--cluster", cluster,
                                                "--housekeeping-interval", "1s"])
    eventually(lambda: len(b.kubectl_json("get", "nodes")["items"]) == 2, what="2 nodes")
    yield b, manifests
    b.stop()


def mirror(b, name):
    r = b.kubectl("get", "pod", name, "-n", "kube-system", "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def running(b, name):
    m = mirror(b, name)
    return m if m and m.get("status", {}).get("phase") == "Running" else None


def test_the_manifests_in_the_directory_run_as_static_pods_with_mirror_pods(sp):
    b, _ = sp
    m = eventually(lambda: running(b, "etcd-master-1"), what="etcd's mirror pod Running")
    assert m["spec"]["nodeName"] == "master-1"
    annotations = m["metadata"]["annotations"]
    assert annotations["kubernetes.io/config.source"] == "file"
    assert "kubernetes.io/config.mirror" in annotations
    owner = m["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Node", "master-1", True)
    # Only the node whose kubelet reads the directory runs it.
    assert mirror(b, "etcd-worker-1") is None
    c = json.loads(b.kubectl("get", "--raw", "/api/v1/nodes/master-1/proxy/configz").stdout)
    assert c["kubeletconfig"]["staticPodPath"].endswith("manifests")
    c = json.loads(b.kubectl("get", "--raw", "/api/v1/nodes/worker-1/proxy/configz").stdout)
    assert c["kubeletconfig"]["staticPodPath"] == ""


def test_a_file_added_starts_its_pod_and_hidden_or_broken_files_are_skipped(sp):
    b, manifests = sp
    (manifests / ".scheduler.yaml.swp").write_text(
        MANIFEST.format(name="hidden", image="nginx"))
    (manifests / "broken.yaml").write_text("kind: Pod\nmetadata: {name: broken}\n")
    (manifests / "kube-scheduler.yaml").write_text(
        MANIFEST.format(name="kube-scheduler", image="kube-scheduler:v1.35"))
    eventually(lambda: running(b, "kube-scheduler-master-1"), what="the added file's pod")
    assert mirror(b, "hidden-master-1") is None
    assert mirror(b, "broken-master-1") is None
    # The others keep running.
    assert running(b, "etcd-master-1")


def test_a_file_changed_replaces_its_pod(sp):
    b, manifests = sp
    old = eventually(lambda: running(b, "etcd-master-1"), what="etcd running")
    (manifests / "etcd.yaml").write_text(MANIFEST.format(name="etcd", image="etcd:3.6"))
    new = eventually(lambda: (m := running(b, "etcd-master-1"))
                     and m["spec"]["containers"][0]["image"] == "etcd:3.6" and m,
                     what="the mirror of the new manifest")
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert (new["metadata"]["annotations"]["kubernetes.io/config.mirror"]
            != old["metadata"]["annotations"]["kubernetes.io/config.mirror"])


def test_a_file_removed_stops_its_pod(sp):
    b, manifests = sp
    (manifests / "gone.yaml").write_text(MANIFEST.format(name="gone", image="nginx"))
    eventually(lambda: running(b, "gone-master-1"), what="the pod of gone.yaml")
    (manifests / "gone.yaml").unlink()
    eventually(lambda: mirror(b, "gone-master-1") is None, what="its mirror deleted")


def test_a_deleted_mirror_is_made_again(sp):
    b, _ = sp
    old = eventually(lambda: running(b, "etcd-master-1"), what="etcd running")
    b.kubectl("delete", "pod", "etcd-master-1", "-n", "kube-system", "--wait=false")
    eventually(lambda: (m := mirror(b, "etcd-master-1"))
               and m["metadata"]["uid"] != old["metadata"]["uid"],
               what="the mirror made again on the next sync")


def test_a_file_removed_while_the_server_was_down_loses_its_mirror_after_the_restart(sp):
    """Upstream's kubelet deletes the mirror pods no static pod makes on each sync
    (`deleteOrphanedMirrorPods`), whatever it saw before it stopped."""
    b, manifests = sp
    (manifests / "offline.yaml").write_text(MANIFEST.format(name="offline", image="nginx"))
    eventually(lambda: running(b, "offline-master-1"), what="the pod of offline.yaml")
    b.stop()
    (manifests / "offline.yaml").unlink()
    b.launch()
    eventually(lambda: mirror(b, "offline-master-1") is None,
               what="the orphaned mirror deleted after the restart")
    # The files still there keep their mirrors.
    eventually(lambda: running(b, "etcd-master-1"), what="etcd's mirror still there")
