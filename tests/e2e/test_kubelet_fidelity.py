"""The simulated kubelet as an administrator watches it (issue 32, item 2 and the kubelet's events).

One `berth serve --cluster <file> --time-scale 30` for the module (the cluster's clock runs 30
times as fast, so back-offs, heartbeats every 5 minutes and grace periods pass in seconds), with
a 30s housekeeping interval (1s of the machine's time). Nodes:
- `prio-1`: 4Gi, system daemons 256Mi, hard memory.available<1Gi: upstream's ranking (priority);
- `qos-1`: the same with `feature-gates: PodPriority=false`: the seed's QoS-only order;
- `static-1`: runs a static pod `web` (the pool's `staticPods`), mirrored in the API;
- `plain-1`: 16Gi, for the rest.
Nothing asserts on durations; only generous timeouts bound the waits.
"""

import json
import re

import pytest

from conftest import Berth, eventually, pod

CLUSTER = """
pools:
- name: prio
  capacity: {cpu: "4", memory: 4Gi}
  taints: [{key: berth.io/reserved, effect: NoSchedule}]
  kubeletArguments:
    eviction-hard: ["memory.available<1Gi"]
- name: qos
  capacity: {cpu: "4", memory: 4Gi}
  taints: [{key: berth.io/reserved, effect: NoSchedule}]
  kubeletArguments:
    eviction-hard: ["memory.available<1Gi"]
    feature-gates: ["PodPriority=false"]
- name: static
  taints: [{key: berth.io/reserved, effect: NoSchedule}]
  staticPods:
  - metadata: {name: web, namespace: default, labels: {tier: static}}
    spec:
      containers: [{name: web, image: nginx}]
- name: plain
"""


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    d = tmp_path_factory.mktemp("kubelet-fidelity")
    f = d / "cluster.yaml"
    f.write_text(CLUSTER)
    b = Berth.start(d / "data", nodes=0, args=["--cluster", f, "--time-scale", "30",
                                                "--housekeeping-interval", "30s"])
    eventually(lambda: len(b.kubectl_json("get", "nodes")["items"]) == 4, what="4 nodes")
    yield b
    b.stop()


@pytest.fixture
def kns(kb, request):
    name = request.node.name.lower().replace("_", "-")[:40].strip("-")
    kb.create_namespace(name)
    yield name
    kb.kubectl("delete", "namespace", name, "--wait=false", check=False)


def apply(kb, obj):
    kb.kubectl("apply", "-f", "-", stdin=json.dumps(obj))


def get(kb, ns, name):
    return kb.kubectl_json("get", "pod", name, "-n", ns)


def events(kb, ns, **involved):
    """The events of `ns` whose involvedObject has the given fields."""
    return [e for e in kb.kubectl_json("get", "events", "-n", ns)["items"]
            if all(e["involvedObject"].get(k) == v for k, v in involved.items())]


def reasons(kb, ns, name):
    return [e["reason"] for e in events(kb, ns, name=name)]


def test_a_crashing_container_waits_in_crash_loop_back_off(kb, kns):
    p = pod("crash", kns, node="plain-1", image="busybox")
    p["spec"]["containers"][0]["command"] = ["sh", "-c", "exit 1"]
    apply(kb, p)
    # kubectl's STATUS column shows the waiting reason.
    eventually(lambda: "CrashLoopBackOff" in kb.kubectl("get", "pod", "crash", "-n", kns).stdout,
               what="CrashLoopBackOff in kubectl get pod")
    st = eventually(lambda: (s := get(kb, kns, "crash")["status"]["containerStatuses"][0])
                    ["restartCount"] >= 2 and "waiting" in s["state"] and s, what="2 restarts")
    uid = get(kb, kns, "crash")["metadata"]["uid"]
    assert st["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert re.fullmatch(rf"back-off \d+[hms0-9]* restarting failed container=c pod=crash_{kns}\({uid}\)",
                        st["state"]["waiting"]["message"]), st
    assert st["lastState"]["terminated"]["exitCode"] == 1
    described = eventually(lambda: (d := kb.kubectl("describe", "pod", "crash", "-n", kns).stdout)
                           and "BackOff" in d and d, what="the BackOff event in describe")
    assert f"Back-off restarting failed container c in pod crash_{kns}({uid})" in described
    # The run before the last restart is kept for `kubectl logs --previous`.
    prev = kb.kubectl("logs", "crash", "-n", kns, "--previous").stdout
    assert "exited with code 1" in prev


def test_an_oom_killed_container_backs_off_too(kb, kns):
    p = pod("hog", kns, node="plain-1")
    p["metadata"]["annotations"] = {"berth.io/usage": "memory=200Mi"}
    p["spec"]["containers"][0]["resources"] = {"limits": {"memory": "100Mi"}}
    apply(kb, p)
    st = eventually(lambda: (s := get(kb, kns, "hog")["status"]["containerStatuses"][0])
                    ["restartCount"] >= 2 and "waiting" in s["state"] and s,
                    what="OOM kills restarted after a back-off")
    assert st["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert st["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert st["lastState"]["terminated"]["exitCode"] == 137
    eventually(lambda: "BackOff" in reasons(kb, kns, "hog"), what="a BackOff event")
    assert "OOM-killed" in kb.kubectl("logs", "hog", "-n", kns, "--previous").stdout


def priority_pods(kb, ns, node):
    """A BestEffort pod of priority 1000 and a Burstable pod over its request of priority 10,
    together pushing `node` past its memory.available<1Gi threshold."""
    for name, value in (("fid-high", 1000), ("fid-low", 10)):
        apply(kb, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": name}, "value": value})
    best = pod("best-effort", ns, node=node, priorityClassName="fid-high")
    best["metadata"]["annotations"] = {"berth.io/usage": "memory=1500Mi"}
    burst = pod("burstable", ns, node=node, priorityClassName="fid-low")
    burst["metadata"]["annotations"] = {"berth.io/usage": "memory=1500Mi"}
    burst["spec"]["containers"][0]["resources"] = {"requests": {"memory": "100Mi"}}
    apply(kb, best)
    apply(kb, burst)


def evicted(kb, ns):
    def check():
        out = [n for n in ("best-effort", "burstable")
               if get(kb, ns, n)["status"].get("reason") == "Evicted"]
        return out or None
    return eventually(check, what="an eviction")


def test_eviction_ranks_by_priority_as_upstream(kb, kns):
    priority_pods(kb, kns, "prio-1")
    # Both use more than they request: the lower priority goes first.
    assert evicted(kb, kns) == ["burstable"]
    p = get(kb, kns, "burstable")
    st = p["status"]
    assert st["phase"] == "Failed"
    assert st["message"].startswith(
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: ")
    assert st["message"].endswith(
        "Container c was using 1500Mi, request is 100Mi, has larger consumption of memory. ")
    c = st["containerStatuses"][0]
    assert "running" not in c["state"] and "terminated" in c["state"]
    disruption = next(x for x in st["conditions"] if x["type"] == "DisruptionTarget")
    assert (disruption["status"], disruption["reason"]) == ("True", "TerminationByKubelet")
    described = kb.kubectl("describe", "pod", "burstable", "-n", kns).stdout
    assert "Evicted" in described and "Terminated" in described
    ev = eventually(lambda: [e for e in events(kb, kns, name="burstable") if e["reason"] == "Evicted"],
                    what="the Evicted event")
    assert ev[0]["type"] == "Warning" and ev[0]["source"]["component"] == "kubelet"
    assert get(kb, kns, "best-effort")["status"]["phase"] == "Running"


def test_without_pod_priority_the_seed_qos_order_applies(kb, kns):
    priority_pods(kb, kns, "qos-1")
    assert evicted(kb, kns) == ["best-effort"]


def test_host_network_pods_have_the_node_ip(kb, kns):
    apply(kb, pod("hostnet", kns, node="plain-1", hostNetwork=True))
    apply(kb, pod("podnet", kns, node="plain-1"))
    for name in ("hostnet", "podnet"):
        eventually(lambda n=name: get(kb, kns, n)["status"].get("podIP"), what=f"{name} IP")
    host = get(kb, kns, "hostnet")["status"]
    assert host["podIP"] == host["hostIP"]
    assert host["podIPs"] == [{"ip": host["hostIP"]}]
    other = get(kb, kns, "podnet")["status"]
    assert other["podIP"] != other["hostIP"]


def test_configz_answers_the_kubelet_configuration(kb):
    c = json.loads(kb.kubectl("get", "--raw", "/api/v1/nodes/qos-1/proxy/configz").stdout)
    k = c["kubeletconfig"]
    assert k["kind"] == "KubeletConfiguration"
    assert k["evictionHard"] == {"memory.available": "1Gi"}
    assert k["featureGates"] == {"PodPriority": False}
    assert k["nodeStatusReportFrequency"] == "5m0s"
    assert k["housekeepingInterval"] == "30s"


def test_the_summary_api_has_the_pods_container_and_start_times(kb, kns):
    apply(kb, pod("sum", kns, node="plain-1"))
    eventually(lambda: get(kb, kns, "sum")["status"].get("phase") == "Running", what="running")
    s = json.loads(kb.kubectl("get", "--raw", "/api/v1/nodes/plain-1/proxy/stats/summary").stdout)
    names = [c["name"] for c in s["node"]["systemContainers"]]
    assert names == ["kubelet", "runtime", "pods"]
    mine = next(p for p in s["pods"] if p["podRef"]["name"] == "sum")
    # The pod's start, not the time of the request: the same in a later summary.
    again = json.loads(kb.kubectl("get", "--raw", "/api/v1/nodes/plain-1/proxy/stats/summary").stdout)
    assert next(p for p in again["pods"] if p["podRef"]["name"] == "sum")["startTime"] == mine["startTime"]
    assert again["node"]["startTime"] == s["node"]["startTime"]


def test_node_heartbeats_are_refreshed(kb):
    def heartbeats():
        conds = kb.kubectl_json("get", "node", "plain-1")["status"]["conditions"]
        return {c["type"]: (c["lastHeartbeatTime"], c["lastTransitionTime"]) for c in conds}
    before = heartbeats()
    # Every nodeStatusReportFrequency (5m, 10s here) at the latest, with nothing changed.
    after = eventually(lambda: (h := heartbeats())["Ready"][0] != before["Ready"][0] and h,
                       timeout=90, what="a fresh heartbeat")
    for type_, (beat, transition) in after.items():
        assert beat > before[type_][0], type_
        assert transition == before[type_][1], type_


def test_a_static_pod_is_mirrored_by_its_node(kb):
    m = eventually(lambda: get(kb, "default", "web-static-1"), what="the mirror pod")
    assert m["metadata"]["annotations"]["kubernetes.io/config.mirror"]
    assert m["metadata"]["annotations"]["kubernetes.io/config.source"] == "file"
    owner = m["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Node", "static-1", True)
    assert "serviceAccountName" not in m["spec"]
    eventually(lambda: get(kb, "default", "web-static-1")["status"].get("phase") == "Running",
               what="the static pod running")
    # A deleted mirror comes back, as the kubelet's next sync makes it (the static pod is the
    # node's, not the API's).
    kb.kubectl("delete", "pod", "web-static-1", "-n", "default", "--wait=false")
    def made_again():
        out = kb.kubectl("get", "pod", "web-static-1", "-n", "default", "-o", "json",
                         check=False)
        if out.returncode != 0:
            return None
        p = json.loads(out.stdout)
        return (p["metadata"]["uid"] != m["metadata"]["uid"]
                and p["status"].get("phase") == "Running")
    eventually(made_again, what="the mirror pod made again and running")


def test_kubelet_events_show_in_describe(kb, kns):
    apply(kb, pod("ev", kns, node="plain-1", image="registry.k8s.io/pause:3.10"))
    eventually(lambda: get(kb, kns, "ev")["status"].get("phase") == "Running", what="running")
    evs = eventually(lambda: (e := {x["reason"]: x for x in events(kb, kns, name="ev")})
                     and "Started" in e and e, what="the kubelet's events")
    assert evs["Pulling"]["message"] == 'Pulling image "registry.k8s.io/pause:3.10"'
    assert evs["Pulled"]["message"].startswith('Successfully pulled image "registry.k8s.io/pause:3.10" in ')
    assert evs["Created"]["message"] == "Created container: c"
    assert evs["Started"]["message"] == "Started container c"
    for e in evs.values():
        assert e["source"] == {"component": "kubelet", "host": "plain-1"}
    described = kb.kubectl("describe", "pod", "ev", "-n", kns).stdout
    assert "Started container c" in described and "kubelet" in described
    # The same image again is already present.
    apply(kb, pod("ev2", kns, node="plain-1", image="registry.k8s.io/pause:3.10"))
    eventually(lambda: any(e["message"] == 'Container image "registry.k8s.io/pause:3.10" already present on machine'
                           for e in events(kb, kns, name="ev2")), what="already present")
    kb.kubectl("delete", "pod", "ev", "-n", kns, "--wait=false")
    kill = eventually(lambda: [e for e in events(kb, kns, name="ev") if e["reason"] == "Killing"],
                      what="the Killing event")
    assert kill[0]["message"] == "Stopping container c"


def test_node_events_as_upstream(kb):
    def node_reasons():
        return [e["reason"] for e in events(kb, "default", kind="Node", name="plain-1")]
    got = eventually(lambda: (r := node_reasons()) and "NodeReady" in r and r, what="node events")
    for reason in ("Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure",
                   "NodeHasSufficientPID", "NodeAllocatableEnforced", "NodeReady"):
        assert reason in got
    kb.kubectl("cordon", "plain-1")
    try:
        eventually(lambda: "NodeNotSchedulable" in node_reasons(), what="NodeNotSchedulable")
    finally:
        kb.kubectl("uncordon", "plain-1")
    eventually(lambda: "NodeSchedulable" in node_reasons(), what="NodeSchedulable")
    described = kb.kubectl("describe", "node", "plain-1").stdout
    assert "Node plain-1 status is now: NodeNotSchedulable" in described
