"""The simulated kubelet (issue 6): node pools, allocatable, usage, eviction, summary API.

One `berth serve --cluster <file> --housekeeping-interval 1s` for the module. Nodes:
- `hard-1`: 4Gi, system daemons 256Mi, eviction-hard memory.available<1Gi, transition 6s;
- `soft-1`: 4Gi, system daemons 256Mi, eviction-soft memory.available<1Gi for 8s;
- `press-1`: like soft-1 with a 1h grace period: pressure without eviction;
- `seed-1`: seed 004's 32Gi node (kube-reserved 2Gi, system-reserved 1Gi, hard 100Mi), tainted;
- `tenpct-1`: 10Gi, system-reserved 1Gi, hard memory.available<10% (upstream's exact number).
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
    eventually(lambda: len(b.kubectl_json("get", "nodes")["items"]) == 5, what="5 nodes")
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
        "The node was low on resource: memory. "
        "Container c was using 2Gi, request is 0, has larger consumption of memory. ")
    events = eventually(lambda: [e for e in kb.kubectl_json("get", "events", "-n", kns)["items"]
                                 if e["reason"] == "Evicted" and e["involvedObject"]["name"] == "be"],
                        what="Evicted event")
    assert events[0]["type"] == "Warning"
    assert events[0]["message"] == st["message"]
    out = kb.kubectl("get", "pod", "be", "-n", kns).stdout
    assert "Evicted" in out
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
    assert [c["name"] for c in summary["node"]["systemContainers"]] == ["kubelet", "runtime"]
    assert p["memory"]["workingSetBytes"] == 300 * 2**20
    assert p["cpu"]["usageNanoCores"] == 200_000_000
    assert p["ephemeral-storage"]["usedBytes"] == 2 * 2**30
