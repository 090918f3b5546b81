"""StatefulSets and DaemonSet updates, driven with kubectl on the shared server: ordered pod
names, one at a time; scale down from the top; rolling updates recorded as ControllerRevisions,
followed with `kubectl rollout status` and `rollout history`. Timeouts only keep a broken server
from hanging the suite; nothing asserts on durations.
"""

from conftest import eventually


def stateful_set(name, ns, replicas=3, image="nginx:1.27", **spec):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "serviceName": name, **spec,
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def daemon_set(name, ns, image="agent:1"):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def pods_of(b, ns, app):
    items = b.kubectl_json("get", "pods", "-n", ns, "-l", f"app={app}")["items"]
    return {p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")}


def test_a_stateful_set_creates_its_pods_in_order(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=stateful_set("web", ns))
    b.kubectl("rollout", "status", "sts/web", "-n", ns, "--timeout=90s")

    def ready_at(p):
        return next(c["lastTransitionTime"] for c in p["status"]["conditions"]
                    if c["type"] == "Ready")

    # OrderedReady: each pod is created only once the one before it is Ready.
    pods = pods_of(b, ns, "web")
    for before, after in [("web-0", "web-1"), ("web-1", "web-2")]:
        assert pods[after]["metadata"]["creationTimestamp"] >= ready_at(pods[before])
    pods = pods_of(b, ns, "web")
    assert sorted(pods) == ["web-0", "web-1", "web-2"]
    p = pods["web-1"]
    assert p["spec"]["hostname"] == "web-1"
    assert p["spec"]["subdomain"] == "web"
    assert p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "web-1"
    sts = b.kubectl_json("get", "sts", "web", "-n", ns)
    st = sts["status"]
    assert (st["replicas"], st["readyReplicas"], st["currentReplicas"], st["updatedReplicas"]) == (3, 3, 3, 3)
    assert st["currentRevision"] == st["updateRevision"]
    assert p["metadata"]["labels"]["controller-revision-hash"] == st["updateRevision"]
    row = b.kubectl("get", "sts", "web", "-n", ns, "--no-headers").stdout.split()
    assert row[1] == "3/3"


def test_scale_down_removes_the_highest_ordinals(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=stateful_set("db", ns, replicas=3))
    b.kubectl("rollout", "status", "sts/db", "-n", ns, "--timeout=90s")
    b.kubectl("scale", "sts/db", "--replicas=1", "-n", ns)
    eventually(lambda: sorted(pods_of(b, ns, "db")) == ["db-0"], what="db-0 alone")


def test_a_rolling_update_replaces_every_pod_and_history_records_it(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=stateful_set("api", ns, replicas=2))
    b.kubectl("rollout", "status", "sts/api", "-n", ns, "--timeout=90s")
    b.kubectl("set", "image", "sts/api", "c=nginx:1.28", "-n", ns)
    b.kubectl("rollout", "status", "sts/api", "-n", ns, "--timeout=90s")
    pods = pods_of(b, ns, "api")
    assert {p["spec"]["containers"][0]["image"] for p in pods.values()} == {"nginx:1.28"}
    st = b.kubectl_json("get", "sts", "api", "-n", ns)["status"]
    assert st["currentRevision"] == st["updateRevision"]
    history = b.kubectl("rollout", "history", "sts/api", "-n", ns).stdout
    revisions = [line.split()[0] for line in history.splitlines()[2:] if line.strip()]
    assert revisions == ["1", "2"], history


def test_a_daemon_set_image_change_rolls_and_rollout_status_succeeds(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=daemon_set("agent", ns))
    b.kubectl("rollout", "status", "ds/agent", "-n", ns, "--timeout=90s")
    ds = b.kubectl_json("get", "ds", "agent", "-n", ns)
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                           "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    b.kubectl("set", "image", "ds/agent", "c=agent:2", "-n", ns)
    b.kubectl("rollout", "status", "ds/agent", "-n", ns, "--timeout=90s")
    eventually(lambda: {p["spec"]["containers"][0]["image"]
                        for p in pods_of(b, ns, "agent").values()} == {"agent:2"},
               what="every daemon at agent:2")
    history = b.kubectl("rollout", "history", "ds/agent", "-n", ns).stdout
    revisions = [line.split()[0] for line in history.splitlines()[2:] if line.strip()]
    assert revisions == ["1", "2"], history
