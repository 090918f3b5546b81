"""The simulated kubelet (issue 6): node pools, allocatable, usage, eviction, summary API.

One `berth serve --cluster <file> --housekeeping-interval 1s` for the module. Nodes:
- `hard-1`: 4Gi, system daemons 256Mi, eviction-hard memory.available<1Gi, transition 6s;
- `soft-1`: 4Gi, system daemons 256Mi, eviction-soft memory.available<1Gi for 8s;
- `press-1`: like soft-1 with a 1h grace period: pressure without eviction;
- `seed-1`: seed 004's 32Gi node (kube-reserved 2Gi, system-reserved 1Gi, hard 100Mi), tainted;
- `tenpct-1`: 10Gi, system-reserved 1Gi, hard memory.available<10% (upstream's exact number);
- `disk-1`: 10Gi nodefs holding a 3Gi unused image, hard nodefs.available<2Gi, tainted;
- `oom-1`: 2Gi of memory and no eviction thresholds, so only the OOM killer acts, tainted.
Nothing here asserts on durations; only generous timeouts bound the waits.
"""

import json
import subprocess
from datetime import datetime

import pytest

from conftest import Berth, eventually, pod

CLUSTER = """
pools:
- name: hard
  capacity: {cpu: "4", memory: 4Gi}
  systemUsage: {memory: 256Mi}
  kubeletArguments:
    eviction-hard: ["memory.available<1Gi"]
    eviction-pressure-transition-period: ["6s"]
- name: soft
  capacity: {cpu: "4", memory: 4Gi}
  systemUsage: {memory: 256Mi}
  kubeletArguments:
    eviction-soft: ["memory.available<1Gi"]
    eviction-soft-grace-period: ["memory.available=8s"]
    eviction-max-pod-grace-period: ["0"]
    eviction-pressure-transition-period: ["4s"]
- name: press
  capacity: {cpu: "4", memory: 4Gi}
  systemUsage: {memory: 256Mi}
  kubeletArguments:
    eviction-soft: ["memory.available<1Gi"]
    eviction-soft-grace-period: ["memory.available=1h"]
- name: seed
  capacity: {cpu: "8", memory: 32Gi}
  taints: [{key: berth.io/reserved, effect: NoSchedule}]
  kubeletArguments:
    kube-reserved: ["memory=2Gi"]
    system-reserved: ["memory=1Gi"]
    eviction-hard: ["memory.available<100Mi"]
- name: tenpct
  capacity: {cpu: "4", memory: 10Gi}
  taints: [{key: berth.io/reserved, effect: NoSchedule}]
  kubeletArguments:
    system-reserved: ["memory=1Gi"]
    eviction-hard: ["memory.available<10%"]
- name: disk
  capacity: {cpu: "4", memory: 8Gi, ephemeral-storage: 10Gi}
  taints: [{key: berth.io/reserved, effect: NoSchedule}]
  images: [{name: "berth.io/old-image:1", size: 3Gi}]
  kubeletArguments:
    eviction-hard: ["nodefs.available<2Gi"]
    eviction-pressure-transition-period: ["1h"]
- name: oom
  capacity: {cpu: "4", memory: 2Gi}
  taints: [{key: berth.io/reserved, effect: NoSchedule}]
  kubeletArguments:
    eviction-hard: []
"""


class ClusterBerth(Berth):
    """`berth serve` with `--cluster` and a short housekeeping interval."""

    def __init__(self, data_dir, cluster_file):
        super().__init__(data_dir, nodes=0)
        self.extra = ["--cluster", str(cluster_file), "--housekeeping-interval", "1s"]

    def launch(self):
        real = subprocess.Popen
        extra = self.extra

        def popen(args, *a, **kw):
            return real([*args, *extra], *a, **kw)

        subprocess.Popen = popen
        try:
            super().launch()
        finally:
            subprocess.Popen = real


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    d = tmp_path_factory.mktemp("berth-kubelet")
    f = d / "cluster.yaml"
    f.write_text(CLUSTER)
    b = ClusterBerth(d / "data", f)
    b.launch()
    eventually(lambda: len(b.kubectl_json("get", "nodes")["items"]) == 7, what="7 nodes")
    yield b
    b.stop()


@pytest.fixture
def kns(kb, request):
    name = request.node.name.lower().replace("_", "-")[:40].strip("-")
    kb.create_namespace(name)
    yield name
    kb.kubectl("delete", "namespace", name, "--wait=false", check=False)


def on(node, name, ns, usage=None, resources=None, tolerations=None):
    p = pod(name, namespace=ns, scheduler=None, nodeSelector={"kubernetes.io/hostname": node})
    if usage:
        p["metadata"]["annotations"] = {"berth.io/usage": usage}
    if resources:
        p["spec"]["containers"][0]["resources"] = resources
    if tolerations:
        p["spec"]["tolerations"] = tolerations
    return p


def status(kb, ns, name):
    return kb.kubectl_json("get", "pod", name, "-n", ns)["status"]


def condition(kb, node, type_):
    conds = kb.kubectl_json("get", "node", node)["status"]["conditions"]
    return next(c for c in conds if c["type"] == type_)


def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def running(kb, ns, name):
    return status(kb, ns, name).get("phase") == "Running"


GUARANTEED = {"limits": {"cpu": "100m", "memory": "1Gi"}}
RESERVED = [{"key": "berth.io/reserved", "operator": "Exists", "effect": "NoSchedule"}]
BURSTABLE = {"requests": {"memory": "10Mi"}}


def taint_keys(kb, node):
    return [t["key"] for t in kb.kubectl_json("get", "node", node)["spec"].get("taints", [])]


def failed_scheduling(kb, ns, name):
    """The pod's FailedScheduling event messages."""
    return [e["message"] for e in kb.kubectl_json("get", "events", "-n", ns)["items"]
            if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == name]


def test_allocatable_shows_the_seed_numbers(kb):
    alloc = kb.kubectl("get", "node", "seed-1", "-o", "jsonpath={.status.allocatable.memory}").stdout
    assert alloc == "29596Mi"  # 32Gi − 2Gi − 1Gi − 100Mi ≈ 28.9Gi
    cap = kb.kubectl("get", "node", "seed-1", "-o", "jsonpath={.status.capacity.memory}").stdout
    assert cap == "32Gi"
    tenpct = kb.kubectl("get", "node", "tenpct-1", "-o", "jsonpath={.status.allocatable.memory}").stdout
    assert tenpct == "8589934576"  # 10Gi − 1Gi − trunc(10Gi × float32(0.1))


def test_hard_threshold_evicts_best_effort_and_keeps_guaranteed(kb, kns):
    kb.kubectl("apply", "-f", "-", stdin=[
        on("hard-1", "be", kns, usage="memory=100Mi"),
        on("hard-1", "g", kns, resources=GUARANTEED),
    ])
    for name in ("be", "g"):
        eventually(lambda n=name: running(kb, kns, n), what=f"{name} running")
    assert status(kb, kns, "g")["qosClass"] == "Guaranteed"
    # 4Gi − 256Mi − 1Gi − 2Gi = 768Mi < 1Gi
    kb.kubectl("annotate", "pod", "be", "-n", kns, "--overwrite", "berth.io/usage=memory=2Gi")
    eventually(lambda: condition(kb, "hard-1", "MemoryPressure")["status"] == "True",
               what="MemoryPressure")
    st = eventually(lambda: (s := status(kb, kns, "be")).get("reason") == "Evicted" and s,
                    what="be evicted")
    assert st["phase"] == "Failed"
    assert st["message"] == (
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: 768Mi. "
        "Container c was using 2Gi, request is 0, has larger consumption of memory. ")
    events = eventually(lambda: [e for e in kb.kubectl_json("get", "events", "-n", kns)["items"]
                                 if e["reason"] == "Evicted" and e["involvedObject"]["name"] == "be"],
                        what="Evicted event")
    assert events[0]["type"] == "Warning"
    assert events[0]["message"] == st["message"]
    # The container was killed: terminated with 137, so kubectl shows its reason (as upstream's
    # kubectl does for an evicted pod whose containers were killed).
    killed = status(kb, kns, "be")["containerStatuses"][0]["state"]["terminated"]
    assert (killed["exitCode"], killed["reason"]) == (137, "Error")
    out = kb.kubectl("get", "pod", "be", "-n", kns).stdout
    assert "Error" in out
    assert running(kb, kns, "g")
    # While under pressure: a new BestEffort pod is not placed there, a Burstable one is.
    true_at = ts(condition(kb, "hard-1", "MemoryPressure")["lastTransitionTime"])
    # The condition clears only after the transition period (6s) without a crossing.
    cleared = eventually(lambda: (c := condition(kb, "hard-1", "MemoryPressure"))["status"] == "False" and c,
                         what="MemoryPressure cleared")
    assert (ts(cleared["lastTransitionTime"]) - true_at).total_seconds() >= 5
    assert running(kb, kns, "g")


def test_pressure_admission_and_taint(kb, kns):
    kb.kubectl("apply", "-f", "-", stdin=[on("press-1", "hog", kns, usage="memory=100Mi")])
    eventually(lambda: running(kb, kns, "hog"), what="hog running")
    # 4Gi − 256Mi − 3200Mi = 640Mi < 1Gi: soft threshold met, grace 1h: pressure, no eviction.
    kb.kubectl("annotate", "pod", "hog", "-n", kns, "--overwrite", "berth.io/usage=memory=3200Mi")
    eventually(lambda: condition(kb, "press-1", "MemoryPressure")["status"] == "True",
               what="MemoryPressure")
    # Bound directly: the node admits a Burstable pod under MemoryPressure...
    kb.kubectl("apply", "-f", "-", stdin=[
        {**pod("bu2", namespace=kns, node="press-1"),
         "spec": {"nodeName": "press-1", "containers": [
             {"name": "c", "image": "nginx:1.27", "resources": {"requests": {"memory": "10Mi"}}}]}}])
    eventually(lambda: running(kb, kns, "bu2"), what="burstable admitted and running")
    # ...and refuses a BestEffort one.
    kb.kubectl("apply", "-f", "-", stdin=[pod("be3", namespace=kns, node="press-1")])
    st = eventually(lambda: (s := status(kb, kns, "be3")).get("phase") == "Failed" and s,
                    what="be3 rejected")
    assert st["reason"] == "Evicted"
    assert st["message"] == "The node had condition: [MemoryPressure]. "
    assert running(kb, kns, "hog")
    # The scheduler side (seed 000's table): the memory-pressure taint keeps new BestEffort
    # pods off the node, while Burstable ones still land there.
    eventually(lambda: "node.kubernetes.io/memory-pressure" in taint_keys(kb, "press-1"),
               what="the memory-pressure taint")
    kb.kubectl("apply", "-f", "-", stdin=[
        on("press-1", "be", kns),
        on("press-1", "bu", kns, resources=BURSTABLE),
    ])
    # Admission gave the Burstable pod a memory-pressure toleration (control-loops §4.5).
    tolerations = kb.kubectl_json("get", "pod", "bu", "-n", kns)["spec"]["tolerations"]
    assert {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists",
            "effect": "NoSchedule"} in tolerations
    eventually(lambda: running(kb, kns, "bu"), what="burstable pod scheduled and running")
    assert kb.kubectl_json("get", "pod", "bu", "-n", kns)["spec"]["nodeName"] == "press-1"
    messages = eventually(lambda: failed_scheduling(kb, kns, "be"), what="FailedScheduling for be")
    # Every other node fails the pod's node selector; press-1 fails on the taint alone.
    assert "1 node(s) had taints that the pod didn't tolerate" in messages[-1]
    assert "nodeName" not in kb.kubectl_json("get", "pod", "be", "-n", kns)["spec"]


def test_soft_threshold_waits_for_its_grace_period(kb, kns):
    kb.kubectl("apply", "-f", "-", stdin=[on("soft-1", "be", kns, usage="memory=100Mi")])
    eventually(lambda: running(kb, kns, "be"), what="be running")
    kb.kubectl("annotate", "pod", "be", "-n", kns, "--overwrite", "berth.io/usage=memory=3Gi")
    pressure = eventually(lambda: (c := condition(kb, "soft-1", "MemoryPressure"))["status"] == "True" and c,
                          what="MemoryPressure")
    eventually(lambda: status(kb, kns, "be").get("reason") == "Evicted", timeout=90, what="evicted")
    ev = eventually(lambda: [e for e in kb.kubectl_json("get", "events", "-n", kns)["items"]
                             if e["reason"] == "Evicted"], what="Evicted event")
    waited = (ts(ev[0]["lastTimestamp"]) - ts(pressure["lastTransitionTime"])).total_seconds()
    assert waited >= 7  # grace 8s, timestamps in whole seconds


def test_admission_rejects_pods_that_do_not_fit(kb, kns):
    p = pod("big", namespace=kns, node="hard-1")
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "5"}}
    kb.kubectl("apply", "-f", "-", stdin=[p])
    st = eventually(lambda: (s := status(kb, kns, "big")).get("phase") == "Failed" and s,
                    what="big rejected")
    assert st["reason"] == "OutOfcpu"
    assert st["message"].startswith("Node didn't have enough resource: cpu, requested: 5000")


def test_summary_api_matches_usage(kb, kns):
    kb.kubectl("apply", "-f", "-", stdin=[
        on("hard-1", "s", kns, usage="cpu=200m,memory=300Mi,ephemeral-storage=2Gi")])
    eventually(lambda: running(kb, kns, "s"), what="s running")

    def pod_stats():
        summary = json.loads(kb.kubectl("get", "--raw", "/api/v1/nodes/hard-1/proxy/stats/summary").stdout)
        return next((p for p in summary["pods"] if p["podRef"]["name"] == "s"), None), summary

    p, summary = eventually(lambda: pod_stats()[0] and pod_stats(), what="pod in summary")
    assert summary["node"]["nodeName"] == "hard-1"
    assert [c["name"] for c in summary["node"]["systemContainers"]] == ["kubelet", "runtime", "pods"]
    assert p["memory"]["workingSetBytes"] == 300 * 2**20
    assert p["cpu"]["usageNanoCores"] == 200_000_000
    assert p["ephemeral-storage"]["usedBytes"] == 2 * 2**30


def test_disk_pressure_reclaims_images_before_evicting_pods(kb, kns):
    kb.kubectl("apply", "-f", "-", stdin=[
        on("disk-1", "fill", kns, usage="ephemeral-storage=1Gi", tolerations=RESERVED)])
    eventually(lambda: running(kb, kns, "fill"), what="fill running")
    images = [n for i in kb.kubectl_json("get", "node", "disk-1")["status"]["images"]
              for n in i["names"]]
    assert "berth.io/old-image:1" in images
    # 10Gi − 3Gi (unused image) − 100Mi (nginx) − 5Gi = 1.9Gi < 2Gi; deleting the unused
    # image frees 3Gi, which is enough: no pod is evicted.
    kb.kubectl("annotate", "pod", "fill", "-n", kns, "--overwrite",
               "berth.io/usage=ephemeral-storage=5Gi")
    eventually(lambda: condition(kb, "disk-1", "DiskPressure")["status"] == "True",
               what="DiskPressure")

    def image_names():
        return [n for i in kb.kubectl_json("get", "node", "disk-1")["status"]["images"]
                for n in i["names"]]

    eventually(lambda: "berth.io/old-image:1" not in image_names(), what="unused image deleted")
    assert "nginx:1.27" in image_names()  # in use by fill: kept
    eventually(lambda: "node.kubernetes.io/disk-pressure" in taint_keys(kb, "disk-1"),
               what="the disk-pressure taint")
    # Under DiskPressure the scheduler places no new pod there, whatever its QoS class.
    kb.kubectl("apply", "-f", "-", stdin=[
        on("disk-1", "late", kns, resources=GUARANTEED, tolerations=RESERVED)])
    messages = eventually(lambda: failed_scheduling(kb, kns, "late"), what="FailedScheduling")
    assert "1 node(s) had taints that the pod didn't tolerate" in messages[-1]
    assert running(kb, kns, "fill")
    # Nothing left to reclaim: 10Gi − 100Mi − 9Gi < 2Gi evicts the pod.
    kb.kubectl("annotate", "pod", "fill", "-n", kns, "--overwrite",
               "berth.io/usage=ephemeral-storage=9Gi")
    st = eventually(lambda: (s := status(kb, kns, "fill")).get("reason") == "Evicted" and s,
                    what="fill evicted")
    assert st["message"].startswith(
        "The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: ")
    assert st["message"].endswith(
        "Container c was using 9Gi, request is 0, has larger consumption of ephemeral-storage. ")


def test_oom_killer_restarts_the_container(kb, kns):
    # 2Gi node, no thresholds: 256Mi of daemons + 2Gi of pod passes capacity.
    kb.kubectl("apply", "-f", "-", stdin=[
        on("oom-1", "leak", kns, usage="memory=100Mi", tolerations=RESERVED,
           resources={"requests": {"memory": "100Mi"}})])
    eventually(lambda: running(kb, kns, "leak"), what="leak running")
    kb.kubectl("annotate", "pod", "leak", "-n", kns, "--overwrite", "berth.io/usage=memory=2Gi")

    def restarted():
        s = status(kb, kns, "leak")["containerStatuses"][0]
        return s["restartCount"] >= 1 and s

    s = eventually(restarted, what="an OOM kill and restart")
    assert s["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert s["lastState"]["terminated"]["exitCode"] == 137
    # The restart waits out upstream's CrashLoopBackOff (10s), then the container runs again.
    assert "running" in s["state"] or s["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    eventually(lambda: "running" in status(kb, kns, "leak")["containerStatuses"][0]["state"],
               what="the container running again after its back-off")
    row = kb.kubectl("get", "pod", "leak", "-n", kns, "--no-headers").stdout.split()
    assert int(row[3]) >= 1  # the RESTARTS column counts OOM kills
    events = kb.kubectl_json("get", "events", "-n", "default")["items"]
    assert any(e["reason"] == "OOMKilling" and e["involvedObject"]["name"] == "oom-1"
               for e in events)


def test_kubelet_posts_ready_again_after_its_node_was_marked_unknown(kb):
    # What the node lifecycle controller writes when a node stops posting status.
    unknown = {"status": {"conditions": [
        {"type": t, "status": "Unknown", "reason": "NodeStatusUnknown",
         "message": "Kubelet stopped posting node status."}
        for t in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")]}}
    kb.kubectl("patch", "node", "tenpct-1", "--subresource=status", "--type=strategic",
               "-p", json.dumps(unknown))
    ready = eventually(lambda: (c := condition(kb, "tenpct-1", "Ready"))["status"] == "True" and c,
                       what="Ready=True posted again")
    assert ready["reason"] == "KubeletReady"
    for t in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        assert condition(kb, "tenpct-1", t)["status"] == "False"
    eventually(lambda: "node.kubernetes.io/unreachable" not in taint_keys(kb, "tenpct-1"),
               what="no unreachable taint")
    events = kb.kubectl_json("get", "events", "-n", "default")["items"]
    assert any(e["reason"] == "NodeReady" and e["involvedObject"]["name"] == "tenpct-1"
               for e in events)
