"""The simulated kubelet as upstream's conformance specs see it (issue 39, issue 37 item 7).

Each test reproduces what an upstream spec checks (test/e2e/{scheduling,node,common,apps}):
extended resources patched into a node's capacity (every preemption spec), kubelet admission of
pods placed by `spec.nodeName` (predicate.go), `activeDeadlineSeconds`, readiness probes'
initial delay, container resources in the status, and containers that finish as their commands
say (`sleep N`, `exit N`, `true`/`false`, init containers in order).

One `berth serve` with 2 nodes for the module, its own so that tainting and patching nodes
touches no other test. Nothing asserts on durations; only generous timeouts bound the waits.
"""

import json
import uuid

import pytest

from conftest import Berth, eventually, pod

FAKE = "example.com/fakecpu"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    b = Berth.start(tmp_path_factory.mktemp("kubelet-conformance"), nodes=2)
    yield b
    b.stop()


@pytest.fixture
def kns(kb, request):
    # Parametrized tests share a name's first 40 characters: a suffix keeps each namespace its
    # own while the previous one may still be terminating.
    base = "".join(ch for ch in request.node.name.lower().replace("_", "-") if ch.isalnum() or ch == "-")
    name = f"{base[:40].strip('-')}-{uuid.uuid4().hex[:5]}"
    kb.create_namespace(name)
    yield name
    kb.kubectl("delete", "namespace", name, "--wait=false", check=False)


def apply(kb, obj):
    kb.kubectl("apply", "-f", "-", stdin=json.dumps(obj))


def get(kb, ns, name):
    return kb.kubectl_json("get", "pod", name, "-n", ns)


def phase(kb, ns, name):
    return get(kb, ns, name).get("status", {}).get("phase")


def condition(p, type_):
    return next((c for c in p["status"].get("conditions", []) if c["type"] == type_), None)


def patch_capacity(kb, node, value):
    """As upstream's preemption specs: a strategic merge patch of the node's status."""
    kb.kubectl("patch", "node", node, "--subresource=status", "--type=strategic",
               "-p", json.dumps({"status": {"capacity": {FAKE: value}}}))


def allocatable(kb, node):
    return kb.kubectl_json("get", "node", node)["status"]["allocatable"]


def pause_pod(name, ns, res=None, node=None, node_name=None, priority=None, **spec):
    p = pod(name, ns, scheduler=None, image="registry.k8s.io/pause:3.10", **spec)
    c = p["spec"]["containers"][0]
    if res is not None:
        c["resources"] = {"requests": res, "limits": res}
    if node:
        p["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    if node_name:
        p["spec"]["nodeName"] = node_name
    if priority:
        p["spec"]["priorityClassName"] = priority
    return p


def test_extended_resources_patched_into_capacity_become_allocatable_and_admit_pods(kb, kns):
    patch_capacity(kb, "node-1", "5")
    try:
        eventually(lambda: allocatable(kb, "node-1").get(FAKE) == "5",
                   what="the extended resource allocatable")
        for name in ("a", "b"):
            apply(kb, pause_pod(name, kns, res={FAKE: "2"}, node="node-1"))
        for name in ("a", "b"):
            eventually(lambda n=name: phase(kb, kns, n) == "Running", what=f"{name} running")
        # A pod placed by nodeName meets only the kubelet's admission: 2 + 2 + 2 > 5.
        apply(kb, pause_pod("over", kns, res={FAKE: "2"}, node_name="node-1"))
        st = eventually(lambda: (s := get(kb, kns, "over")["status"]).get("phase") == "Failed" and s,
                        what="the pod over capacity refused")
        assert st["reason"] == f"OutOf{FAKE}"
        assert st["message"] == (f"Node didn't have enough resource: {FAKE}, "
                                 "requested: 2, used: 4, capacity: 5")
        # An extended resource the node does not know is not the kubelet's to check.
        apply(kb, pause_pod("cluster-level", kns, res={"example.com/elsewhere": "1"},
                            node_name="node-1"))
        eventually(lambda: phase(kb, kns, "cluster-level") == "Running",
                   what="a pod asking for an unknown extended resource running")
        # The kubelet's own status writes keep the patched capacity.
        assert kb.kubectl_json("get", "node", "node-1")["status"]["capacity"][FAKE] == "5"
    finally:
        kb.kubectl("patch", "node", "node-1", "--subresource=status", "--type=json", "-p",
                   json.dumps([{"op": "remove", "path": "/status/capacity/example.com~1fakecpu"}]))
    eventually(lambda: FAKE not in allocatable(kb, "node-1"),
               what="the extended resource gone from allocatable with its capacity")


def test_basic_preemption_works_with_extended_resources(kb, kns):
    """`validates basic preemption works` (test/e2e/scheduling/preemption.go) on one node."""
    for name, value in (("kc-low", 1), ("kc-medium", 100), ("kc-high", 1000)):
        apply(kb, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": name}, "value": value})
    patch_capacity(kb, "node-2", "5")
    try:
        eventually(lambda: allocatable(kb, "node-2").get(FAKE) == "5",
                   what="the extended resource allocatable")
        apply(kb, pause_pod("victim", kns, res={FAKE: "2"}, node="node-2", priority="kc-low"))
        apply(kb, pause_pod("keeper", kns, res={FAKE: "2"}, node="node-2", priority="kc-medium"))
        for name in ("victim", "keeper"):
            eventually(lambda n=name: phase(kb, kns, n) == "Running", what=f"{name} running")
        apply(kb, pause_pod("preemptor", kns, res={FAKE: "2"}, node="node-2", priority="kc-high"))
        eventually(lambda: phase(kb, kns, "preemptor") == "Running", timeout=90,
                   what="the preemptor running")
        gone = kb.kubectl("get", "pod", "victim", "-n", kns, check=False)
        assert gone.returncode != 0 or json.loads(
            kb.kubectl("get", "pod", "victim", "-n", kns, "-o", "json").stdout
        )["metadata"].get("deletionTimestamp")
        assert phase(kb, kns, "keeper") == "Running"
    finally:
        kb.kubectl("patch", "node", "node-2", "--subresource=status", "--type=json", "-p",
                   json.dumps([{"op": "remove", "path": "/status/capacity/example.com~1fakecpu"}]))


def refused(kb, ns, name):
    return eventually(lambda: (s := get(kb, ns, name)["status"]).get("phase") == "Failed" and s,
                      what=f"{name} refused by the kubelet")


def test_kubelet_admission_refuses_what_the_scheduler_would_have(kb, kns):
    apply(kb, pod("selector", kns, node="node-1", nodeSelector={"disktype": "ssd"}))
    st = refused(kb, kns, "selector")
    assert st["reason"] == "NodeAffinity"
    assert st["message"] == \
        "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"

    def host_port(name):
        p = pod(name, kns, node="node-1")
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 18080}]
        return p
    apply(kb, host_port("first"))
    eventually(lambda: phase(kb, kns, "first") == "Running", what="the first host port user")
    apply(kb, host_port("second"))
    st = refused(kb, kns, "second")
    assert st["reason"] == "NodePorts"
    assert st["message"] == \
        "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
    events = eventually(lambda: [e for e in kb.kubectl_json("get", "events", "-n", kns)["items"]
                                 if e["involvedObject"]["name"] == "second"], what="an event")
    assert events[0]["reason"] == "NodePorts"

    kb.kubectl("taint", "node", "node-1", "kc=x:NoExecute")
    try:
        apply(kb, pod("untolerated", kns, node="node-1"))
        # The taint manager deletes the refused pod soon after; the kubelet's event stays.
        events = eventually(lambda: [e for e in kb.kubectl_json("get", "events", "-n", kns)["items"]
                                     if e["involvedObject"]["name"] == "untolerated"
                                     and e["reason"] == "TaintToleration"],
                            what="the kubelet's refusal of the untolerating pod")
        assert events[0]["message"] == \
            "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
        apply(kb, pod("tolerated", kns, node="node-1", tolerations=[
            {"key": "kc", "operator": "Equal", "value": "x", "effect": "NoExecute"}]))
        eventually(lambda: phase(kb, kns, "tolerated") == "Running", what="the tolerating pod")
    finally:
        kb.kubectl("taint", "node", "node-1", "kc=x:NoExecute-")


def test_active_deadline_fails_the_pod_and_may_be_lowered(kb, kns):
    apply(kb, pod("short", kns, node="node-2", activeDeadlineSeconds=2))
    st = eventually(lambda: (s := get(kb, kns, "short")["status"]).get("phase") == "Failed" and s,
                    what="the pod past its deadline")
    assert st["reason"] == "DeadlineExceeded"
    assert st["message"] == "Pod was active on the node longer than the specified deadline"
    assert st["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    # `should allow activeDeadlineSeconds to be updated` (test/e2e/common/node/pods.go).
    apply(kb, pod("updated", kns, node="node-2", activeDeadlineSeconds=600))
    eventually(lambda: phase(kb, kns, "updated") == "Running", what="running")
    kb.kubectl("patch", "pod", "updated", "-n", kns, "-p", '{"spec":{"activeDeadlineSeconds":5}}')
    st = eventually(lambda: (s := get(kb, kns, "updated")["status"]).get("phase") == "Failed" and s,
                    what="the pod past its lowered deadline")
    assert st["reason"] == "DeadlineExceeded"


def test_readiness_waits_for_the_probe_initial_delay(kb, kns):
    """`with readiness probe should not be ready before initial delay and never restart`."""
    p = pod("probed", kns, node="node-2")
    p["spec"]["containers"][0]["readinessProbe"] = {
        "exec": {"command": ["cat", "/tmp/health"]}, "initialDelaySeconds": 3, "periodSeconds": 1}
    apply(kb, p)
    eventually(lambda: phase(kb, kns, "probed") == "Running", what="running")
    ready = eventually(lambda: (c := condition(get(kb, kns, "probed"), "Ready"))["status"] == "True"
                       and c, what="ready")
    p = get(kb, kns, "probed")
    started = p["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    from datetime import datetime
    ts = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    assert (ts(ready["lastTransitionTime"]) - ts(started)).total_seconds() >= 3
    assert p["status"]["containerStatuses"][0]["restartCount"] == 0


def test_container_statuses_report_resources_and_allocated_resources(kb, kns):
    p = pod("sized", kns, node="node-2")
    p["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}
    apply(kb, p)
    eventually(lambda: phase(kb, kns, "sized") == "Running", what="running")
    s = get(kb, kns, "sized")["status"]["containerStatuses"][0]
    assert s["resources"] == {"requests": {"cpu": "100m", "memory": "64Mi"},
                              "limits": {"cpu": "200m", "memory": "64Mi"}}
    assert s["allocatedResources"] == {"cpu": "100m", "memory": "64Mi"}


def command_pod(name, ns, command, restart="Never", init=(), args=None):
    p = pod(name, ns, node="node-2", image="registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
            restartPolicy=restart)
    p["spec"]["containers"][0]["command"] = command
    if args is not None:
        p["spec"]["containers"][0]["args"] = args
    if init:
        p["spec"]["initContainers"] = [
            {"name": f"init{i + 1}", "image": "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
             "command": c} for i, c in enumerate(init)]
    return p


def ended(kb, ns, name):
    return eventually(lambda: (s := get(kb, ns, name)["status"]).get("phase") in
                      ("Succeeded", "Failed") and s, what=f"{name} ended")


@pytest.mark.parametrize("command,args,phase_,code", [
    (["/bin/true"], None, "Succeeded", 0),
    (["/bin/false"], None, "Failed", 1),
    (["/bin/sh", "-c", "exit 3"], None, "Failed", 3),
    (["sh", "-c"], ["sleep 1; exit 0"], "Succeeded", 0),
    (["sleep", "1"], None, "Succeeded", 0),
])
def test_containers_exit_as_their_commands_say(kb, kns, command, args, phase_, code):
    apply(kb, command_pod("cmd", kns, command, args=args))
    st = ended(kb, kns, "cmd")
    assert st["phase"] == phase_
    t = st["containerStatuses"][0]["state"]["terminated"]
    assert t["exitCode"] == code
    assert t["reason"] == ("Completed" if code == 0 else "Error")


def test_a_container_that_serves_keeps_running(kb, kns):
    p = pod("agnhost", kns, node="node-2", image="registry.k8s.io/e2e-test-images/agnhost:2.53",
            restartPolicy="Never")
    p["spec"]["containers"][0]["args"] = ["pause"]
    apply(kb, p)
    eventually(lambda: phase(kb, kns, "agnhost") == "Running", what="running")
    apply(kb, command_pod("after", kns, ["/bin/true"]))
    ended(kb, kns, "after")
    assert phase(kb, kns, "agnhost") == "Running"


def test_init_containers_run_in_order_before_the_app_containers(kb, kns):
    """`should invoke init containers on a RestartNever pod` (test/e2e/common/node/init_container.go)."""
    apply(kb, command_pod("inits", kns, ["/bin/true"], init=[["/bin/true"], ["/bin/true"]]))
    st = ended(kb, kns, "inits")
    assert st["phase"] == "Succeeded"
    assert [s["state"]["terminated"]["reason"] for s in st["initContainerStatuses"]] == \
        ["Completed", "Completed"]
    assert condition({"status": st}, "Initialized")["status"] == "True"


def test_a_failing_init_container_fails_a_never_restarting_pod(kb, kns):
    """`should not start app containers and fail the pod if init containers fail on a RestartNever pod`."""
    apply(kb, command_pod("badinit", kns, ["/bin/true"], init=[["/bin/false"], ["/bin/true"]]))
    st = ended(kb, kns, "badinit")
    assert st["phase"] == "Failed"
    init1, init2 = st["initContainerStatuses"]
    assert init1["state"]["terminated"]["exitCode"] == 1
    assert init2["state"]["waiting"]["reason"] == "PodInitializing"
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
    initialized = condition({"status": st}, "Initialized")
    assert initialized["status"] == "False"
    assert initialized["reason"] == "ContainersNotInitialized"


def test_a_failing_init_container_holds_an_always_restarting_pod_pending(kb, kns):
    apply(kb, command_pod("stuck", kns, ["sleep", "3600"], restart="Always",
                          init=[["/bin/false"]]))
    s = eventually(lambda: (p := get(kb, kns, "stuck")["status"]).get("initContainerStatuses") and p,
                   what="the init container's status")
    assert s["phase"] == "Pending"
    init = s["initContainerStatuses"][0]
    assert init["lastState"]["terminated"]["exitCode"] == 1
    assert init["restartCount"] >= 1
    assert s["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"


def job(name, ns, command, backoff=0):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"backoffLimit": backoff, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
                                "command": command}]}}}}


def test_jobs_finish_as_their_commands_say(kb, kns):
    apply(kb, job("succeeds", kns, ["sleep", "1"]))
    apply(kb, job("fails", kns, ["/bin/sh", "-c", "exit 1"]))
    kb.kubectl("wait", "--for=condition=complete", "job/succeeds", "-n", kns, "--timeout=90s")
    kb.kubectl("wait", "--for=condition=failed", "job/fails", "-n", kns, "--timeout=90s")
    j = kb.kubectl_json("get", "job", "fails", "-n", kns)
    failed = next(c for c in j["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
