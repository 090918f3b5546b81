"""Nodes that fail on purpose (issue 14): `berth.io/simulate` / `berth node`, the node lifecycle
controller's zones and rate limits, and the taint manager's countdowns (seed 000, control-loops
§3).

One `berth serve --cluster` for the module with two zones: `a-1..a-4` in zone-a, `b-1..b-2` in
zone-b. Time is scaled down through flags, not waited out: leases renew four times a second
(nodes stopped together then fall silent within one monitor pass, as one failure, not two
passes apart as two), a node is `Unknown` after 4 s of silence, the controller looks every second and taints 0.5 nodes/s per
zone (one node every 2 s instead of 10 s). Every test leaves all nodes running, Ready and
untainted. Timeouts only keep a broken server from hanging the suite; the one comparison of
times is a lower bound the rate limit guarantees.
"""

import json
import os
import re
import subprocess
from datetime import datetime

import pytest

from conftest import BERTH_BIN, Berth, eventually, pod

CLUSTER = """
pools:
- name: a
  count: 4
  zone: zone-a
- name: b
  count: 2
  zone: zone-b
"""

NODES = ["a-1", "a-2", "a-3", "a-4", "b-1", "b-2"]
RATE = 0.5
LIFECYCLE = {"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"}


@pytest.fixture(scope="module")
def fb(tmp_path_factory):
    d = tmp_path_factory.mktemp("berth-node-failure")
    f = d / "cluster.yaml"
    f.write_text(CLUSTER)
    b = Berth.start(d / "data", nodes=0, args=[
        "--cluster", f, "--housekeeping-interval", "1s",
        "--node-status-update-frequency", "250ms", "--node-monitor-grace-period", "4s",
        "--node-monitor-period", "1s", "--node-eviction-rate", str(RATE)])
    eventually(lambda: len(b.kubectl_json("get", "nodes")["items"]) == len(NODES),
               what="6 nodes")
    yield b
    b.stop()


@pytest.fixture
def fns(fb, request):
    name = request.node.name.lower().replace("_", "-")[:40].strip("-")
    fb.create_namespace(name)
    yield name
    fb.kubectl("delete", "namespace", name, "--wait=false", check=False)
    heal_all(fb)


def node_cli(b, *args):
    env = dict(os.environ, KUBECONFIG=str(b.kubeconfig))
    return subprocess.run([str(BERTH_BIN), "node", *args], env=env, capture_output=True,
                          text=True, timeout=60)


def simulate(b, mode, *nodes):
    b.kubectl("annotate", "node", *nodes, f"berth.io/simulate={mode}", "--overwrite")


def heal_all(b):
    simulate(b, "running", *NODES)
    eventually(lambda: all(ready(b, n) == "True" and not lifecycle_taints(b, n)
                           for n in NODES), timeout=90, what="every node Ready and untainted")


def node(b, name):
    return b.kubectl_json("get", "node", name)


def ready(b, name):
    conds = node(b, name)["status"].get("conditions") or []
    return next((c["status"] for c in conds if c["type"] == "Ready"), None)


def taints(b, name):
    return node(b, name)["spec"].get("taints") or []


def lifecycle_taints(b, name, effect=None):
    return [t for t in taints(b, name) if t["key"] in LIFECYCLE
            and (effect is None or t["effect"] == effect)]


def no_execute(b, name):
    return lifecycle_taints(b, name, "NoExecute")


def tolerating(name, ns, node_name, seconds="unset"):
    """A pod on `node_name` tolerating unreachable/not-ready NoExecute for `seconds` (None:
    no toleration at all, so the 300 s default is added; "unset": tolerated forever)."""
    p = pod(name, namespace=ns, node=node_name)
    if seconds is None:
        return p
    tol = [{"key": k, "operator": "Exists", "effect": "NoExecute"} for k in sorted(LIFECYCLE)]
    if seconds != "unset":
        for t in tol:
            t["tolerationSeconds"] = seconds
    p["spec"]["tolerations"] = tol
    return p


def pod_state(b, ns, name):
    """'gone', 'deleting', or the pod's phase."""
    r = b.kubectl("get", "pod", name, "-n", ns, "-o", "json", check=False)
    if r.returncode != 0:
        assert "NotFound" in r.stderr, r.stderr
        return "gone"
    p = json.loads(r.stdout)
    if p["metadata"].get("deletionTimestamp"):
        return "deleting"
    return p["status"].get("phase")


def events(b, ns, reason, field=None):
    args = ["get", "events", "-n", ns, "--field-selector", f"reason={reason}"]
    if field:
        args[-1] += f",{field}"
    return b.kubectl_json(*args)["items"]


def when(t):
    return datetime.fromisoformat(t.replace("Z", "+00:00"))


def test_stopped_node_is_tainted_and_its_pods_evicted_after_their_toleration(fb, fns):
    b = fb
    b.kubectl("apply", "-f", "-", stdin=[
        tolerating("short", fns, "b-1", seconds=2),
        tolerating("default", fns, "b-1", seconds=None),
        tolerating("forever", fns, "b-1"),
    ])
    eventually(lambda: all(pod_state(b, fns, p) == "Running"
                           for p in ("short", "default", "forever")), what="pods running")
    simulate(b, "stopped", "b-1")
    eventually(lambda: ready(b, "b-1") == "Unknown", what="b-1 Unknown")
    cond = next(c for c in node(b, "b-1")["status"]["conditions"] if c["type"] == "Ready")
    assert cond["reason"] == "NodeStatusUnknown"
    eventually(lambda: {(t["key"], t["effect"]) for t in lifecycle_taints(b, "b-1")} ==
               {("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/unreachable", "NoSchedule")}, what="unreachable taints")
    # The pod tolerating 2 s is deleted; a dead machine never confirms, so it stays Terminating.
    eventually(lambda: pod_state(b, fns, "short") == "deleting", what="short deleted")
    assert [e["message"] for e in events(b, fns, "TaintManagerEviction",
                                         "involvedObject.name=short")] == [
        f"Marking for deletion Pod {fns}/short"]
    # The default 300 s and the toleration without seconds keep theirs.
    default = b.kubectl_json("get", "pod", "default", "-n", fns)
    assert {t.get("tolerationSeconds") for t in default["spec"]["tolerations"]
            if t.get("key") in LIFECYCLE} == {300}
    assert pod_state(b, fns, "default") == "Running"
    assert pod_state(b, fns, "forever") == "Running"
    # Back up: taints go, the countdown of `default` is cancelled, the deletion is finished.
    simulate(b, "running", "b-1")
    eventually(lambda: ready(b, "b-1") == "True" and not lifecycle_taints(b, "b-1"),
               what="b-1 Ready again")
    eventually(lambda: pod_state(b, fns, "short") == "gone", what="short gone")
    eventually(lambda: any(e["message"] == f"Cancelling deletion of Pod {fns}/default"
                           for e in events(b, fns, "TaintManagerEviction")),
               what="countdown cancelled")
    assert pod_state(b, fns, "default") == "Running"
    assert pod_state(b, fns, "forever") == "Running"


def test_two_nodes_of_a_zone_are_tainted_one_token_apart(fb, fns):
    b = fb
    simulate(b, "stopped", "a-1", "a-2")
    eventually(lambda: no_execute(b, "a-1") and no_execute(b, "a-2"), what="both tainted")
    added = sorted(when(no_execute(b, n)[0]["timeAdded"]) for n in ("a-1", "a-2"))
    # One node per 1/rate seconds (timeAdded has whole seconds).
    assert (added[1] - added[0]).total_seconds() >= 1 / RATE - 1


def test_small_zone_mostly_down_is_not_tainted_and_events_say_why(fb, fns):
    b = fb
    simulate(b, "stopped", "a-1", "a-2", "a-3")
    eventually(lambda: all(ready(b, n) == "Unknown" for n in ("a-1", "a-2", "a-3")),
               what="3 of 4 nodes Unknown")
    seen = eventually(lambda: [e for e in events(b, "default", "ZonePartialDisruption")
                               if e["involvedObject"]["name"] in ("a-1", "a-2", "a-3")],
                      what="ZonePartialDisruption events")
    assert "3 of 4 nodes are not ready" in seen[0]["message"]
    assert "no node is tainted NoExecute" in seen[0]["message"]
    for n in ("a-1", "a-2", "a-3"):
        assert not no_execute(b, n), n
        assert lifecycle_taints(b, n, "NoSchedule"), n


def test_all_zones_down_only_no_schedule_then_one_zone_back_evicts_the_other(fb, fns):
    b = fb
    # 20 s: should a node of zone-b go silent a pass before the others (and be tainted until
    # the rest follow), the pod outlives that moment.
    b.kubectl("apply", "-f", "-", stdin=tolerating("on-b", fns, "b-2", seconds=20))
    eventually(lambda: pod_state(b, fns, "on-b") == "Running", what="pod running")
    simulate(b, "stopped", *NODES)
    eventually(lambda: all(ready(b, n) == "Unknown" for n in NODES), what="all Unknown")
    eventually(lambda: any(e["involvedObject"]["name"] == "b-2"
                           for e in events(b, "default", "MasterDisruption")),
               what="master disruption event")
    eventually(lambda: not any(no_execute(b, n) for n in NODES), what="no NoExecute taint")
    assert all(lifecycle_taints(b, n, "NoSchedule") for n in NODES)
    assert pod_state(b, fns, "on-b") == "Running"
    simulate(b, "running", "a-1", "a-2", "a-3", "a-4")
    eventually(lambda: no_execute(b, "b-2"), what="zone-b tainted once zone-a is back")
    eventually(lambda: pod_state(b, fns, "on-b") in ("deleting", "gone"), what="on-b evicted")


def test_partitioned_node_keeps_running_its_pods_until_evicted_then_heals(fb, fns):
    b = fb
    b.kubectl("apply", "-f", "-", stdin=tolerating("cut-off", fns, "b-2", seconds=1))
    eventually(lambda: pod_state(b, fns, "cut-off") == "Running", what="pod running")
    simulate(b, "partitioned", "b-2")
    eventually(lambda: no_execute(b, "b-2"), what="b-2 tainted")
    # Deleted in the API; the node cannot confirm, so it stays Terminating meanwhile.
    eventually(lambda: pod_state(b, fns, "cut-off") == "deleting", what="cut-off deleted")
    # Nothing the node writes arrives: its endpoints do not answer either.
    r = b.kubectl("get", "--raw", "/api/v1/nodes/b-2/proxy/healthz", check=False)
    assert r.returncode != 0
    simulate(b, "running", "b-2")
    eventually(lambda: ready(b, "b-2") == "True", what="b-2 posts Ready again")
    eventually(lambda: pod_state(b, fns, "cut-off") == "gone", what="deletion finished")
    assert b.kubectl("get", "--raw", "/api/v1/nodes/b-2/proxy/healthz").stdout == "ok"


def test_not_ready_node_posts_ready_false_and_gets_not_ready_taints(fb, fns):
    b = fb
    simulate(b, "not-ready", "b-1")
    eventually(lambda: ready(b, "b-1") == "False", what="Ready=False")
    cond = next(c for c in node(b, "b-1")["status"]["conditions"] if c["type"] == "Ready")
    assert cond["reason"] == "KubeletNotReady"
    eventually(lambda: {t["effect"] for t in lifecycle_taints(b, "b-1")
                        if t["key"] == "node.kubernetes.io/not-ready"} ==
               {"NoExecute", "NoSchedule"}, what="not-ready taints")


def test_berth_node_cli_stops_and_starts_nodes(fb, fns):
    b = fb
    r = node_cli(b, "stop", "b-1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "node/b-1 stopped"
    assert node(b, "b-1")["metadata"]["annotations"]["berth.io/simulate"] == "stopped"
    eventually(lambda: ready(b, "b-1") == "Unknown", what="b-1 Unknown")
    r = node_cli(b, "start", "b-1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "node/b-1 started"
    eventually(lambda: ready(b, "b-1") == "True", what="b-1 Ready")
    r = node_cli(b, "stop", "no-such-node")
    assert r.returncode != 0
    assert 'nodes "no-such-node" not found' in r.stderr


def metric(b, name, **labels):
    """The value of the series `name` with these labels in `kubectl get --raw /metrics`."""
    for line in b.kubectl("get", "--raw", "/metrics").stdout.splitlines():
        m = re.match(r"^([^{ ]+)(?:\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            return float(m.group(3))
    return None


def test_zone_metrics_after_a_zone_node_goes_down(fb, fns):
    b = fb
    before = metric(b, "node_collector_evictions_total", zone="zone-b") or 0
    assert metric(b, "node_collector_zone_size", zone="zone-b") == 2
    simulate(b, "stopped", "b-1")
    eventually(lambda: metric(b, "node_collector_unhealthy_nodes_in_zone", zone="zone-b") == 1,
               what="one unhealthy node in zone-b")
    assert metric(b, "node_collector_zone_health", zone="zone-b") == 50
    assert metric(b, "node_collector_zone_health", zone="zone-a") == 100
    eventually(lambda: metric(b, "node_collector_evictions_total", zone="zone-b") == before + 1,
               what="the tainting counted as an eviction in zone-b")


def test_failure_schedule_in_the_cluster_file_stops_and_restarts_a_node(tmp_path):
    f = tmp_path / "cluster.yaml"
    f.write_text("""
pools:
- name: s
  count: 2
  failures:
  - {node: s-2, stop: 2s, for: 8s, mode: stopped}
""")
    b = Berth.start(tmp_path / "data", nodes=0, args=[
        "--cluster", f, "--node-status-update-frequency", "250ms",
        "--node-monitor-grace-period", "3s", "--node-monitor-period", "1s"])
    try:
        eventually(lambda: node(b, "s-2")["metadata"].get("annotations", {})
                   .get("berth.io/simulate") == "stopped", what="s-2 stopped by the schedule")
        eventually(lambda: ready(b, "s-2") == "Unknown", what="s-2 Unknown")
        assert ready(b, "s-1") == "True"
        eventually(lambda: node(b, "s-2")["metadata"]["annotations"]["berth.io/simulate"]
                   == "running", what="s-2 back on schedule")
        eventually(lambda: ready(b, "s-2") == "True", what="s-2 Ready again")
    finally:
        b.stop()


def test_a_bad_failure_entry_stops_the_start_naming_file_field_and_reason(tmp_path):
    f = tmp_path / "cluster.yaml"
    f.write_text("pools:\n- name: s\n  count: 2\n  failures:\n  - {node: s-3, stop: 2s}\n")
    r = subprocess.run([str(BERTH_BIN), "serve", "--data-dir", str(tmp_path / "data"),
                        "--port", "0", "--cluster", str(f)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert str(f) in r.stderr
    assert "pool s: failures[0].node: no node \"s-3\" in this pool" in r.stderr, r.stderr


# Container states, logs and `kubectl top` -------------------------------------------------

def test_container_over_its_memory_limit_is_oom_killed_and_restarted(fb, fns):
    b = fb
    p = pod("leaky", namespace=fns, node="b-1")
    p["metadata"]["annotations"] = {"berth.io/usage": "memory=100Mi"}
    p["spec"]["containers"][0]["resources"] = {
        "requests": {"memory": "100Mi"}, "limits": {"memory": "200Mi"}}
    b.kubectl("apply", "-f", "-", stdin=p)
    eventually(lambda: pod_state(b, fns, "leaky") == "Running", what="leaky running")
    # No previous run yet: a Status 400, as upstream.
    r = b.kubectl("logs", "leaky", "-n", fns, "--previous", check=False)
    assert r.returncode != 0
    assert 'previous terminated container "c" in pod "leaky" not found' in r.stderr
    # Over its own limit on a node with memory to spare: OOM-killed, restarted.
    b.kubectl("annotate", "pod", "leaky", "-n", fns, "--overwrite",
              "berth.io/usage=memory=300Mi")

    def restarted():
        s = b.kubectl_json("get", "pod", "leaky", "-n", fns)["status"]["containerStatuses"][0]
        return s["restartCount"] >= 1 and s

    s = eventually(restarted, what="an OOM kill and restart")
    assert s["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert s["lastState"]["terminated"]["exitCode"] == 137
    out = b.kubectl("describe", "pod", "leaky", "-n", fns).stdout
    assert re.search(r"Last State:\s+Terminated\n\s+Reason:\s+OOMKilled\n\s+Exit Code:\s+137", out), out
    prev = b.kubectl("logs", "leaky", "-n", fns, "--previous").stdout
    assert "OOM-killed (exit code 137)" in prev


def test_a_crashing_container_backs_off_as_crash_loop_back_off(fb, fns):
    b = fb
    p = pod("crasher", namespace=fns, node="b-2")
    p["metadata"]["annotations"] = {"berth.io/run-seconds": "1", "berth.io/exit-code": "1"}
    b.kubectl("apply", "-f", "-", stdin=p)
    eventually(lambda: "CrashLoopBackOff" in b.kubectl("get", "pod", "crasher", "-n", fns,
                                                       "--no-headers").stdout,
               what="STATUS CrashLoopBackOff in kubectl get pods")
    eventually(lambda: [e["message"] for e in events(b, fns, "BackOff")], what="BackOff event")
    msg = events(b, fns, "BackOff")[0]["message"]
    assert msg.startswith(f"Back-off restarting failed container c in pod crasher_{fns}("), msg


def test_logs_start_with_where_and_when_the_pod_was_scheduled(fb, fns):
    b = fb
    b.kubectl("apply", "-f", "-", stdin=pod("placed", namespace=fns, scheduler=None))
    eventually(lambda: pod_state(b, fns, "placed") == "Running", what="placed running")
    node_name = b.kubectl_json("get", "pod", "placed", "-n", fns)["spec"]["nodeName"]
    lines = b.kubectl("logs", "placed", "-n", fns).stdout.splitlines()
    assert lines[0].startswith(f"berth: pod placed scheduled to node {node_name} at "), lines
    assert "started on node" in lines[1], lines


def test_a_never_restarting_container_over_its_limit_fails(fb, fns):
    b = fb
    p = pod("once", namespace=fns, node="b-1", restartPolicy="Never")
    p["metadata"]["annotations"] = {"berth.io/usage": "memory=300Mi"}
    p["spec"]["containers"][0]["resources"] = {"limits": {"memory": "200Mi"}}
    b.kubectl("apply", "-f", "-", stdin=p)
    eventually(lambda: pod_state(b, fns, "once") == "Failed", what="once failed")
    s = b.kubectl_json("get", "pod", "once", "-n", fns)["status"]["containerStatuses"][0]
    assert s["state"]["terminated"]["reason"] == "OOMKilled"
    assert s["state"]["terminated"]["exitCode"] == 137
    row = b.kubectl("get", "pod", "once", "-n", fns, "--no-headers").stdout.split()
    assert row[2] == "OOMKilled"


def test_logs_follow_shows_new_lines_as_they_happen(fb, fns):
    b = fb
    p = pod("chatty", namespace=fns, node="b-2")
    p["metadata"]["annotations"] = {"berth.io/usage": "cpu=100m,memory=64Mi"}
    b.kubectl("apply", "-f", "-", stdin=p)
    eventually(lambda: pod_state(b, fns, "chatty") == "Running", what="chatty running")
    follower = b.kubectl_bg("logs", "-f", "chatty", "-n", fns)
    try:
        first = follower.stdout.readline()
        assert "started on node b-2" in first
        b.kubectl("annotate", "pod", "chatty", "-n", fns, "--overwrite",
                  "berth.io/usage=cpu=100m,memory=128Mi")
        lines = []
        while not any("memory=134217728" in line for line in lines):
            line = follower.stdout.readline()
            assert line, "the followed log ended early"
            lines.append(line)
        assert follower.poll() is None
    finally:
        follower.kill()
        follower.wait(timeout=10)


def test_kubectl_top_nodes_and_pods(fb, fns):
    b = fb
    p = pod("busy", namespace=fns, node="a-4")
    p["metadata"]["annotations"] = {"berth.io/usage": "cpu=250m,memory=512Mi"}
    b.kubectl("apply", "-f", "-", stdin=p)
    eventually(lambda: pod_state(b, fns, "busy") == "Running", what="busy running")
    pods = eventually(lambda: b.kubectl("top", "pods", "-n", fns, check=False).stdout,
                      what="kubectl top pods")
    row = next(line.split() for line in pods.splitlines() if line.startswith("busy"))
    assert row[1:] == ["250m", "512Mi"]
    nodes = b.kubectl("top", "nodes").stdout
    assert nodes.splitlines()[0].split()[:2] == ["NAME", "CPU(cores)"], nodes
    names = {line.split()[0] for line in nodes.splitlines()[1:] if line.strip()}
    assert names == set(NODES)
    raw = json.loads(b.kubectl("get", "--raw",
                               f"/apis/metrics.k8s.io/v1beta1/namespaces/{fns}/pods/busy").stdout)
    assert raw["kind"] == "PodMetrics"
    assert raw["containers"][0]["usage"]["cpu"] == "250000000n"
    # Nothing is stored for it: no stats ConfigMaps.
    cms = b.kubectl_json("get", "configmaps", "-A")["items"]
    assert not [c for c in cms if "stats" in c["metadata"]["name"]]


def test_a_large_zone_mostly_down_is_tainted_at_the_secondary_rate(tmp_path):
    """60 nodes in one zone (over --large-cluster-size-threshold 50), 40 of them stopped: the
    zone is in PartialDisruption and, being large, keeps tainting at
    --secondary-node-eviction-rate (scaled to one node per 5 s) rather than stopping."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("pools:\n- name: big\n  count: 60\n  zone: zone-big\n")
    secondary = 0.2
    b = Berth.start(tmp_path / "data", nodes=0, args=[
        "--cluster", cluster, "--housekeeping-interval", "1s",
        "--node-status-update-frequency", "250ms", "--node-monitor-grace-period", "4s",
        "--node-monitor-period", "1s", "--node-eviction-rate", "10",
        "--secondary-node-eviction-rate", str(secondary)])
    try:
        eventually(lambda: len(b.kubectl_json("get", "nodes")["items"]) == 60, what="60 nodes")
        stopped = [f"big-{i}" for i in range(1, 41)]
        simulate(b, "stopped", *stopped)

        def tainted():
            items = b.kubectl_json("get", "nodes")["items"]
            return sorted(when(t["timeAdded"]) for n in items
                          for t in n["spec"].get("taints") or []
                          if t["key"] in LIFECYCLE and t["effect"] == "NoExecute")

        # The nodes fall silent over a pass or two: until 55% of the zone is not ready it is
        # Normal and tainted at the primary rate, as upstream. From the PartialDisruption event
        # on, the large zone goes on at the secondary rate.
        seen = eventually(lambda: events(b, "default", "ZonePartialDisruption"), timeout=90,
                          what="the zone in PartialDisruption")
        assert "tainted NoExecute at the secondary rate of 0.2/s" in seen[0]["message"], seen
        since = when(seen[0].get("firstTimestamp") or seen[0]["eventTime"][:19] + "Z")
        later = eventually(lambda: (lambda t: t if len(t) >= 2 else None)(
            [t for t in tainted() if t > since]), timeout=60,
            what="two nodes tainted after the zone's PartialDisruption")
        # One node per 1/secondary seconds (timeAdded has whole seconds), where the primary
        # rate would taint ten a second.
        assert (later[1] - later[0]).total_seconds() >= 1 / secondary - 1, later
        assert len(tainted()) < len(stopped)
    finally:
        b.stop()
