"""The seed's placement admission plugins (16.5.2-16.5.4, 16.10) configured with
`berth serve --master-config`, driven with kubectl as the administrator:

- PodNodeSelector: the seed's `ns1` whitelist example with the merged selector visible in
  `kubectl get pod -o yaml`, the cluster default, conflicts and whitelist refusals;
- the OpenShift project node selector (`openshift.io/node-selector`, default from
  `projectConfig.defaultNodeSelector`): the seed's `superregion` example, a pod kept Pending
  until a node gets the project's label;
- PodNodeConstraints: the administrator (allowed `pods/binding`) may set nodeName and
  blacklisted labels; a developer (a `berth kubeconfig` certificate, a Role to create pods and
  deployments, no `pods/binding`) is refused both, on pods and on a Deployment's template.
"""

import subprocess

import yaml
import pytest

from conftest import BERTH_BIN, KUBECTL_TIMEOUT, Berth, eventually
from scheduler_support import node_of, wait_bound, wait_failed_scheduling

MASTER_CONFIG = """\
admissionConfig:
  pluginConfig:
    PodNodeSelector:
      location: podnodeselector.yaml
    PodNodeConstraints:
      configuration:
        apiversion: v1
        kind: PodNodeConstraintsConfig
        nodeSelectorLabelBlacklist:
          - kubernetes.io/hostname
          - region
projectConfig:
  defaultNodeSelector: ""
  projectRequestMessage: "ask the admins"
"""

# The seed's file form of the PodNodeSelector configuration (16.5.4).
POD_NODE_SELECTOR = """\
podNodeSelectorPluginConfig:
    clusterDefaultNodeSelector: "k3=v3"
    ns1: region=west,env=test,infra=fedora,os=fedora
"""

NODES = ("node-1", "node-2", "node-3")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A server with the placement plugins configured; every node carries the cluster default
    label (`k3=v3`), as the seed's administrator gives it."""
    tmp = tmp_path_factory.mktemp("placement")
    (tmp / "podnodeselector.yaml").write_text(POD_NODE_SELECTOR)
    (tmp / "master-config.yaml").write_text(MASTER_CONFIG)
    b = Berth.start(tmp / "data", nodes=3, args=("--master-config", tmp / "master-config.yaml"))
    for n in NODES:
        b.kubectl("label", "node", n, "k3=v3")
    yield b
    b.stop()


def namespace(b, name, annotations=None):
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    b.kubectl("create", "-f", "-", stdin={"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": meta, "spec": {}, "status": {}})


def pod(name, node_selector=None, **spec):
    body = {"containers": [{"name": name, "image": "docker.io/ocpqe/hello-pod:latest"}], **spec}
    if node_selector is not None:
        body["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"name": name}}, "spec": body}


def create(b, ns, manifest, check=True):
    return b.kubectl("create", "-f", "-", "--namespace", ns, stdin=manifest, check=check)


def node_selector(b, ns, name):
    shown = yaml.safe_load(b.kubectl("get", "pod", name, "-n", ns, "-o", "yaml").stdout)
    return shown["spec"].get("nodeSelector", {})


def refused(b, ns, manifest):
    r = create(b, ns, manifest, check=False)
    assert r.returncode != 0, r.stdout
    return r.stderr


def test_the_seed_ns1_example_merges_the_project_labels_into_the_pod(cluster):
    namespace(cluster, "ns1", {"scheduler.alpha.kubernetes.io/node-selector": "env=test,infra=fedora"})
    hello = pod("hello-pod", {"env": "test", "os": "fedora"})
    hello["spec"].update({"dnsPolicy": "ClusterFirst", "restartPolicy": "Always"})
    create(cluster, "ns1", hello)
    assert node_selector(cluster, "ns1", "hello-pod") == {
        "env": "test", "infra": "fedora", "os": "fedora"}
    # A label with another value than the project's is refused...
    err = refused(cluster, "ns1", pod("prod-pod", {"env": "production", "infra": "fedora",
                                                    "os": "fedora"}))
    assert ('pods "prod-pod" is forbidden: pod node label selector conflicts with its '
            'namespace node label selector') in err
    # ...and so is one outside ns1's whitelist.
    err = refused(cluster, "ns1", pod("east-pod", {"region": "east"}))
    assert ('pods "east-pod" is forbidden: pod node label selector labels conflict with its '
            'namespace whitelist') in err
    assert cluster.kubectl("get", "pod", "east-pod", "-n", "ns1", check=False).returncode != 0


def test_namespaces_without_the_annotation_get_the_cluster_default(cluster):
    namespace(cluster, "plain")
    create(cluster, "plain", pod("p"))
    assert node_selector(cluster, "plain", "p") == {"k3": "v3"}
    # The default's label is on every node: the pod schedules.
    assert wait_bound(cluster, "plain", "p") in NODES
    create(cluster, "plain", pod("ssd", {"disk": "ssd"}))
    assert node_selector(cluster, "plain", "ssd") == {"disk": "ssd", "k3": "v3"}
    # An empty annotation opts a namespace out of the default.
    namespace(cluster, "opted-out", {"scheduler.alpha.kubernetes.io/node-selector": ""})
    create(cluster, "opted-out", pod("p"))
    assert node_selector(cluster, "opted-out", "p") == {}
    err = refused(cluster, "plain", pod("q", {"k3": "v9"}))
    assert "pod node label selector conflicts with its namespace node label selector" in err


def test_projects_without_a_node_selector_get_the_master_configs_default(berth_factory, tmp_path):
    mc = tmp_path / "master-config.yaml"
    mc.write_text('projectConfig:\n  defaultNodeSelector: "role=app"\n')
    b = berth_factory(args=("--master-config", mc))
    namespace(b, "plain")
    create(b, "plain", pod("p"))
    assert node_selector(b, "plain", "p") == {"role": "app"}
    namespace(b, "infra", {"openshift.io/node-selector": "role=infra"})
    create(b, "infra", pod("p"))
    assert node_selector(b, "infra", "p") == {"role": "infra"}
    namespace(b, "anywhere", {"openshift.io/node-selector": ""})
    create(b, "anywhere", pod("p"))
    assert node_selector(b, "anywhere", "p") == {}
    err = refused(b, "plain", pod("db", {"role": "db"}))
    assert ('pods "db" is forbidden: pod node label selector conflicts with its project node '
            'label selector') in err


def test_the_seed_superregion_example(cluster):
    # Nodes grouped into superregions; the developer's project is pinned to superregion=us.
    cluster.kubectl("label", "node", "node-1", "superregion=us", "region=us-east")
    cluster.kubectl("label", "node", "node-2", "superregion=apac", "region=apac-east")
    try:
        namespace(cluster, "us-dev", {"openshift.io/node-selector": "superregion=us"})
        create(cluster, "us-dev", pod("web"))
        assert node_selector(cluster, "us-dev", "web") == {
            "superregion": "us", "k3": "v3"}
        assert wait_bound(cluster, "us-dev", "web") == "node-1"
        # Another superregion than the project's is refused.
        err = refused(cluster, "us-dev", pod("apac", {"superregion": "apac"}))
        assert ('pods "apac" is forbidden: pod node label selector conflicts with its project '
                'node label selector') in err
        # `region` is blacklisted, but the administrator may bind pods: accepted.
        create(cluster, "us-dev", pod("east", {"region": "us-east"}))
        assert wait_bound(cluster, "us-dev", "east") == "node-1"
    finally:
        cluster.kubectl("label", "node", "node-1", "superregion-", "region-", check=False)
        cluster.kubectl("label", "node", "node-2", "superregion-", "region-", check=False)


def test_a_project_node_selector_keeps_a_pod_pending_until_a_node_matches(cluster):
    namespace(cluster, "gold", {"openshift.io/node-selector": "tier=gold"})
    create(cluster, "gold", pod("waiting"))
    assert node_selector(cluster, "gold", "waiting")["tier"] == "gold"
    wait_failed_scheduling(cluster, "gold", "waiting")
    assert node_of(cluster, "gold", "waiting") == ""
    phase = cluster.kubectl("get", "pod", "waiting", "-n", "gold",
                            "-o", "jsonpath={.status.phase}").stdout
    assert phase == "Pending"
    cluster.kubectl("label", "node", "node-3", "tier=gold")
    try:
        assert wait_bound(cluster, "gold", "waiting") == "node-3"
    finally:
        cluster.kubectl("label", "node", "node-3", "tier-", check=False)


def test_the_administrator_may_target_nodes_despite_pod_node_constraints(cluster):
    namespace(cluster, "pinned")
    # Seed 16.5.2: nodeName; 16.5.3: a blacklisted nodeSelector label.
    create(cluster, "pinned", pod("by-name", nodeName="node-2"))
    assert node_of(cluster, "pinned", "by-name") == "node-2"
    create(cluster, "pinned", pod("by-host", {"kubernetes.io/hostname": "node-3"}))
    assert wait_bound(cluster, "pinned", "by-host") == "node-3"
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "pinned"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "pinned"}},
                 "template": {"metadata": {"labels": {"app": "pinned"}},
                              "spec": {"nodeSelector": {"kubernetes.io/hostname": "node-1"},
                                       "containers": [{"name": "c", "image": "nginx"}]}}},
    }
    create(cluster, "pinned", deployment)
    cluster.kubectl("scale", "deployment", "pinned", "-n", "pinned", "--replicas", "2")
    shown = cluster.kubectl_json("get", "deployment", "pinned", "-n", "pinned")
    assert shown["spec"]["template"]["spec"]["nodeSelector"] == {
        "kubernetes.io/hostname": "node-1"}

    def pods_on_node_1():
        pods = cluster.kubectl_json("get", "pods", "-n", "pinned", "-l", "app=pinned")["items"]
        nodes = [p["spec"].get("nodeName") for p in pods]
        return len(nodes) == 2 and all(n == "node-1" for n in nodes)
    eventually(pods_on_node_1, what="the deployment's pods on node-1")

def test_a_developer_without_pods_binding_may_not_target_nodes(cluster, tmp_path):
    namespace(cluster, "dev-pinned")
    dev = tmp_path / "dev.kubeconfig"
    subprocess.run([str(BERTH_BIN), "kubeconfig", "--user", "dev", "--group", "developers",
                    "--data-dir", str(cluster.data_dir), "-o", str(dev)],
                   check=True, capture_output=True, text=True)
    cluster.kubectl("create", "role", "workloads", "-n", "dev-pinned",
                    "--verb=create,get,list", "--resource=pods,deployments.apps")
    cluster.kubectl("create", "rolebinding", "dev-workloads", "-n", "dev-pinned",
                    "--role=workloads", "--user=dev")

    def as_dev(manifest):
        return subprocess.run(
            ["kubectl", "--kubeconfig", str(dev), "--cache-dir", str(tmp_path / "cache"),
             "create", "-f", "-", "-n", "dev-pinned"],
            input=yaml.safe_dump(manifest), capture_output=True, text=True,
            timeout=KUBECTL_TIMEOUT)

    r = as_dev(pod("by-name", nodeName="node-2"))
    assert r.returncode != 0
    assert "node selection by nodeName is prohibited by policy for your role" in r.stderr
    r = as_dev(pod("by-region", {"region": "west"}))
    assert r.returncode != 0
    assert "node selection by label(s) [region] is prohibited by policy for your role" in r.stderr
    template = pod("t", {"kubernetes.io/hostname": "node-1"})
    r = as_dev({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pinned"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"name": "t"}},
                         "template": {"metadata": template["metadata"],
                                      "spec": template["spec"]}}})
    assert r.returncode != 0
    assert "prohibited by policy for your role" in r.stderr
    # Without node targeting the developer's pod is admitted.
    r = as_dev(pod("free"))
    assert r.returncode == 0, r.stderr


def test_unimplemented_project_settings_are_warned_about(cluster):
    eventually(lambda: "projectConfig.projectRequestMessage is not implemented"
               in cluster.log_path.read_text(), what="the projectConfig warning")
