"""Events as upstream's controllers record them (issue 32 item 1), read the way an administrator
reads them: `kubectl events --for`, `kubectl describe` (which selects on `involvedObject.*`),
and field selectors on both event APIs.

One `berth serve` for the module with node failures scaled down (leases every 250 ms, a node is
`Unknown` after 4 s). Reasons and messages are compared with upstream's wording; timeouts only
keep a broken server from hanging the suite.
"""

import json
import subprocess
import uuid

import pytest

from conftest import BERTH_BIN, Berth, eventually, to_yaml


@pytest.fixture(scope="module")
def eb(tmp_path_factory):
    b = Berth.start(tmp_path_factory.mktemp("berth-events"), nodes=3, args=[
        "--node-status-update-frequency", "250ms", "--node-monitor-grace-period", "4s",
        "--node-monitor-period", "1s"])
    yield b
    b.stop()


@pytest.fixture
def ens(eb, request):
    base = request.node.name.lower().replace("_", "-")
    name = "".join(ch for ch in base if ch.isalnum() or ch == "-")[:40].strip("-")
    name = f"{name}-{uuid.uuid4().hex[:5]}"
    eb.create_namespace(name)
    yield name
    eb.kubectl("delete", "namespace", name, "--wait=false", check=False)


def events_for(b, ns, what, *args):
    """(type, reason, message) of `kubectl events --for what`."""
    out = b.kubectl_json("events", "-n", ns, "--for", what, *args)
    return [(e.get("type"), e.get("reason"), e.get("message")) for e in out.get("items", [])]


def reasons_for(b, ns, what, *args):
    return {r for _, r, _ in events_for(b, ns, what, *args)}


def deployment(name, ns, replicas, image="nginx:1.27"):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def job(name, ns, exit_code=0, **spec):
    annotations = {"berth.io/run-seconds": "1", "berth.io/exit-code": str(exit_code)}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {**spec, "template": {"metadata": {"annotations": annotations},
                                          "spec": {"restartPolicy": "Never",
                                                   "containers": [{"name": "c", "image": "busybox"}]}}}}


def replica_sets(b, ns, app):
    items = b.kubectl_json("get", "rs", "-n", ns, "-l", f"app={app}")["items"]
    return {rs["metadata"]["name"]: rs for rs in items}


def test_a_rollout_and_a_scale_show_scaling_and_pod_creation(eb, ens):
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([deployment("web", ens, 2)]))
    eventually(lambda: len(replica_sets(eb, ens, "web")) == 1, what="the first ReplicaSet")
    first = next(iter(replica_sets(eb, ens, "web")))
    eventually(lambda: ("Normal", "ScalingReplicaSet", f"Scaled up replica set {first} to 2 from 0")
               in events_for(eb, ens, "deploy/web"), what="ScalingReplicaSet to 2")

    eb.kubectl("scale", "deploy/web", "-n", ens, "--replicas=3")
    eventually(lambda: ("Normal", "ScalingReplicaSet", f"Scaled up replica set {first} to 3 from 2")
               in events_for(eb, ens, "deploy/web"), what="ScalingReplicaSet to 3")

    # The ReplicaSet says which pods it made, one event per pod, as upstream's pod control.
    def created():
        pods = eb.kubectl_json("get", "pods", "-n", ens, "-l", "app=web")["items"]
        said = events_for(eb, ens, f"rs/{first}")
        return len(pods) == 3 and all(
            ("Normal", "SuccessfulCreate", f"Created pod: {p['metadata']['name']}") in said
            for p in pods)
    eventually(created, what="SuccessfulCreate for each pod")

    # A rollout: the new set scales up, the old one down.
    eb.kubectl("set", "image", "deploy/web", "-n", ens, "c=nginx:1.28")
    eventually(lambda: len(replica_sets(eb, ens, "web")) == 2, what="the new ReplicaSet")
    second = next(n for n in replica_sets(eb, ens, "web") if n != first)

    def rolled():
        said = [m for _, r, m in events_for(eb, ens, "deploy/web") if r == "ScalingReplicaSet"]
        return (any(m.startswith(f"Scaled up replica set {second} to ") for m in said)
                and f"Scaled down replica set {first} to 0 from 1" in said)
    eventually(rolled, timeout=90, what="the rollout's scaling events")
    eventually(lambda: "SuccessfulDelete" in reasons_for(eb, ens, f"rs/{first}"),
               what="SuccessfulDelete on the old set")

    # describe selects on involvedObject.* and prints the events.
    out = eb.kubectl("describe", "deploy/web", "-n", ens).stdout
    assert f"Scaled up replica set {first} to 2 from 0" in out, out
    out = eb.kubectl("describe", "rs", first, "-n", ens).stdout
    assert "SuccessfulCreate" in out and "Created pod: " in out, out
    pod = eb.kubectl_json("get", "pods", "-n", ens, "-l", "app=web")["items"][0]
    out = eb.kubectl("describe", "pod", pod["metadata"]["name"], "-n", ens).stdout
    assert "Successfully assigned" in out, out


def test_jobs_say_they_completed_or_failed(eb, ens):
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([job("ok", ens), job("bad", ens, exit_code=1,
                                                                     backoffLimit=0)]))
    eventually(lambda: ("Normal", "Completed", "Job completed") in events_for(eb, ens, "job/ok"),
               what="Completed")
    said = events_for(eb, ens, "job/ok")
    assert any(r == "SuccessfulCreate" and m.startswith("Created pod: ok-") for _, r, m in said)
    eventually(lambda: ("Warning", "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit")
               in events_for(eb, ens, "job/bad"), what="BackoffLimitExceeded")
    # `--types` filters on the event type.
    warnings = events_for(eb, ens, "job/bad", "--types=Warning")
    assert warnings and all(t == "Warning" for t, _, _ in warnings), warnings


def test_a_daemon_set_and_a_stateful_set_record_their_pods(eb, ens):
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "agent", "namespace": ens},
          "spec": {"selector": {"matchLabels": {"app": "agent"}},
                   "template": {"metadata": {"labels": {"app": "agent"}},
                                "spec": {"containers": [{"name": "c", "image": "agent:1"}]}}}}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet",
           "metadata": {"name": "db", "namespace": ens},
           "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}},
                                 "spec": {"containers": [{"name": "c", "image": "db:1"}]}}}}
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([ds, sts]))
    eventually(lambda: "SuccessfulCreate" in reasons_for(eb, ens, "ds/agent"), what="daemon pods")
    out = eb.kubectl("describe", "ds/agent", "-n", ens).stdout
    assert "Created pod: agent-" in out, out
    eventually(lambda: ("Normal", "SuccessfulCreate", "create Pod db-0 in StatefulSet db successful")
               in events_for(eb, ens, "statefulset/db"), what="the stateful pod's event")


def test_field_selectors_on_both_event_apis(eb, ens):
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([deployment("sel", ens, 1)]))
    eventually(lambda: "ScalingReplicaSet" in reasons_for(eb, ens, "deploy/sel"), what="an event")

    core = eb.kubectl_json("get", "events", "-n", ens, "--field-selector",
                           "involvedObject.kind=Deployment,involvedObject.name=sel,"
                           "reason=ScalingReplicaSet,type=Normal,source=deployment-controller")
    assert [e["involvedObject"]["name"] for e in core["items"]] == ["sel"]
    e = core["items"][0]
    assert e["source"] == {"component": "deployment-controller"}
    assert e["reportingComponent"] == "deployment-controller"
    assert e["involvedObject"]["apiVersion"] == "apps/v1" and e["involvedObject"]["uid"]
    assert e["count"] == 1 and e["firstTimestamp"] == e["lastTimestamp"]
    none = eb.kubectl_json("get", "events", "-n", ens, "--field-selector",
                           "involvedObject.name=sel,type=Warning")
    assert none["items"] == []

    path = (f"/apis/events.k8s.io/v1/namespaces/{ens}/events?fieldSelector="
            "regarding.kind%3DDeployment,regarding.name%3Dsel,reason%3DScalingReplicaSet,"
            "reportingController%3Ddeployment-controller,type%3DNormal")
    view = json.loads(eb.kubectl("get", "--raw", path).stdout)
    assert [e["regarding"]["name"] for e in view["items"]] == ["sel"]
    assert view["items"][0]["note"].startswith("Scaled up replica set sel-")


def node_names(b):
    return [n["metadata"]["name"] for n in b.kubectl_json("get", "nodes")["items"]]


def test_node_events_after_a_cordon_and_a_node_failure(eb, ens):
    name = node_names(eb)[0]
    # Registered by the node lifecycle controller, as upstream words it.
    registered = f"Node {name} event: Registered Node {name} in Controller"
    eventually(lambda: registered in eb.kubectl("describe", "node", name).stdout,
               what="RegisteredNode in describe")
    eb.kubectl("cordon", name)
    eb.kubectl("uncordon", name)

    # A pod bound to the node, then the node stops: the node goes NotReady on the node's
    # events, the pod is marked not ready (Warning NodeNotReady), and the taint manager marks
    # it for deletion once its 1 s toleration runs out.
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "doomed", "namespace": ens},
         "spec": {"nodeName": name, "containers": [{"name": "c", "image": "nginx:1.27"}],
                  "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                   "effect": "NoExecute", "tolerationSeconds": 1}]}}
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([p]))
    eventually(lambda: eb.kubectl_json("get", "pod", "doomed", "-n", ens)["status"]
               .get("phase") == "Running", what="the pod running")
    eb.kubectl("annotate", "node", name, "berth.io/simulate=stopped", "--overwrite")
    try:
        eventually(lambda: ("Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady")
                   in events_for(eb, "default", f"node/{name}"), timeout=60,
                   what="NodeNotReady on the node")
        eventually(lambda: ("Warning", "NodeNotReady", "Node is not ready")
                   in events_for(eb, ens, "pod/doomed"), timeout=60,
                   what="NodeNotReady on the pod")
        eventually(lambda: ("Normal", "TaintManagerEviction", f"Marking for deletion Pod {ens}/doomed")
                   in events_for(eb, ens, "pod/doomed"), timeout=60,
                   what="TaintManagerEviction")
    finally:
        eb.kubectl("annotate", "node", name, "berth.io/simulate=running", "--overwrite")
        eventually(lambda: not [t for t in eb.kubectl_json("get", "node", name)["spec"]
                                .get("taints", []) if t["key"].startswith("node.kubernetes.io/u")],
                   timeout=90, what="the node back")


def test_a_deleted_node_is_removed_from_the_controller(eb):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "ghost"}}
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([node]))
    eventually(lambda: "RegisteredNode" in reasons_for(eb, "default", "node/ghost"),
               what="RegisteredNode")
    eb.kubectl("delete", "node", "ghost")
    eventually(lambda: ("Normal", "RemovingNode", "Node ghost event: Removing Node ghost from Controller")
               in events_for(eb, "default", "node/ghost"), what="RemovingNode")


def test_the_scheduler_writes_events_k8s_io_events_and_repeats_as_a_series(eb, ens):
    """Upstream's scheduler records through events.k8s.io/v1: an action, a reporting instance,
    and a repeated FailedScheduling becomes one event's `series` (x2 in `kubectl events`)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stuck", "namespace": ens},
           "spec": {"nodeSelector": {"berth.io/nowhere": "true"},
                    "containers": [{"name": "c", "image": "nginx:1.27"}]}}
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([pod]))
    eventually(lambda: "FailedScheduling" in reasons_for(eb, ens, "pod/stuck"),
               what="the first FailedScheduling")
    # A node change sends the pod back to the scheduler, which fails it again.
    node = node_names(eb)[0]
    path = f"/apis/events.k8s.io/v1/namespaces/{ens}/events"

    def series():
        eb.kubectl("label", "node", node, f"berth.io/poke={uuid.uuid4().hex[:8]}", "--overwrite")
        items = json.loads(eb.kubectl("get", "--raw", path).stdout)["items"]
        failed = [e for e in items if e["reason"] == "FailedScheduling"]
        return failed if failed and failed[0].get("series") else None
    failed = eventually(series, what="the FailedScheduling series")
    assert len(failed) == 1, failed
    e = failed[0]
    assert e["series"]["count"] >= 2 and e["series"]["lastObservedTime"]
    assert e["action"] == "Scheduling" and e["type"] == "Warning"
    assert e["reportingController"] == "default-scheduler"
    assert e["reportingInstance"].startswith("default-scheduler-")
    assert e["regarding"]["kind"] == "Pod" and e["regarding"]["name"] == "stuck"
    assert "nodes are available" in e["note"]
    assert e["eventTime"]
    out = eb.kubectl("events", "-n", ens, "--for", "pod/stuck").stdout
    assert "(x" in out and "FailedScheduling" in out, out
    out = eb.kubectl("describe", "pod", "stuck", "-n", ens).stdout
    assert "(x" in out and "default-scheduler" in out, out
    eb.kubectl("label", "node", node, "berth.io/poke-", check=False)


def test_scheduled_is_a_binding_action_reported_by_the_scheduler(eb, ens):
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([deployment("bound", ens, 1)]))
    path = f"/apis/events.k8s.io/v1/namespaces/{ens}/events?fieldSelector=reason%3DScheduled"
    items = eventually(lambda: json.loads(eb.kubectl("get", "--raw", path).stdout)["items"],
                       what="a Scheduled event")
    e = items[0]
    assert e["action"] == "Binding" and e["type"] == "Normal"
    assert e["note"].startswith(f"Successfully assigned {ens}/bound-")
    assert "series" not in e


NODE_AFFINITY_POLICY = """\
apiVersion: "descheduler/v1alpha1"
kind: "DeschedulerPolicy"
strategies:
  "RemovePodsViolatingNodeAffinity":
    enabled: true
    params:
      nodeAffinityType:
      - "requiredDuringSchedulingIgnoredDuringExecution"
"""


def test_a_descheduled_pod_shows_the_descheduler_and_the_kubelet_events(eb, ens, tmp_path):
    """The descheduler records through events.k8s.io/v1 as upstream's (action `Descheduled`,
    reported by `sigs.k8s.io.descheduler`, the pod's version in `regarding`); the kubelet then
    records `Killing` as it stops the evicted pod's container."""
    label = f"berth.io/keep-{uuid.uuid4().hex[:6]}"
    # Two nodes may run it: once its node loses the label, another still fits (the strategy
    # evicts only then).
    for n in node_names(eb)[:2]:
        eb.kubectl("label", "node", n, f"{label}=yes")
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": label, "operator": "In", "values": ["yes"]}]}]}}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "moved", "namespace": ens,
                        "annotations": {"descheduler.alpha.kubernetes.io/evict": "true"}},
           "spec": {"affinity": affinity,
                    "containers": [{"name": "app", "image": "nginx:1.27"}]}}
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([pod]))
    eventually(lambda: "Started" in reasons_for(eb, ens, "pod/moved"), what="the pod running")
    node = eb.kubectl_json("get", "pod", "moved", "-n", ens)["spec"]["nodeName"]
    eb.kubectl("label", "node", node, f"{label}-")
    policy = tmp_path / "policy.yaml"
    policy.write_text(NODE_AFFINITY_POLICY)
    r = subprocess.run(
        [str(BERTH_BIN), "descheduler", "--kubeconfig", str(eb.kubeconfig),
         "--policy-config-file", str(policy), "--descheduling-interval", "0", "-o", "json"],
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    path = f"/apis/events.k8s.io/v1/namespaces/{ens}/events?fieldSelector=reason%3DDescheduled"
    items = eventually(lambda: json.loads(eb.kubectl("get", "--raw", path).stdout)["items"],
                       what="the Descheduled event")
    e = items[0]
    assert e["action"] == "Descheduled" and e["type"] == "Normal"
    assert e["reportingController"] == "sigs.k8s.io.descheduler"
    assert e["reportingInstance"].startswith("sigs.k8s.io.descheduler-")
    assert e["regarding"]["name"] == "moved" and e["regarding"]["resourceVersion"]
    assert e["note"].startswith("pod evicted by sigs.k8s.io/descheduler: RemovePodsViolatingNodeAffinity")
    eventually(lambda: ("Normal", "Killing", "Stopping container app")
               in events_for(eb, ens, "pod/moved"), what="the kubelet's Killing event")
    for n in node_names(eb):
        eb.kubectl("label", "node", n, f"{label}-", check=False)


def test_controller_events_name_the_objects_version(eb, ens):
    """Upstream's ObjectReference: apiVersion, uid and the resourceVersion the controller saw."""
    eb.kubectl("apply", "-f", "-", stdin=to_yaml([deployment("versioned", ens, 1)]))
    eventually(lambda: "ScalingReplicaSet" in reasons_for(eb, ens, "deploy/versioned"),
               what="the deployment's event")
    items = eb.kubectl_json("get", "events", "-n", ens, "--field-selector",
                            "involvedObject.name=versioned")["items"]
    ref = items[0]["involvedObject"]
    assert ref["apiVersion"] == "apps/v1" and ref["kind"] == "Deployment"
    assert ref["uid"] and ref["resourceVersion"], ref
    rs = eventually(lambda: [e["involvedObject"] for e in eb.kubectl_json(
        "get", "events", "-n", ens, "--field-selector", "reason=SuccessfulCreate")["items"]],
        what="the replica set's event")[0]
    assert rs["kind"] == "ReplicaSet" and rs["resourceVersion"], rs
