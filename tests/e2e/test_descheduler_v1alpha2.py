"""`berth descheduler` with upstream's `descheduler/v1alpha2` DeschedulerPolicy (profiles,
pluginConfig, plugins per extension point) against `berth serve`, driven as a user would: pods
made with kubectl, the descheduler run once with a policy file, the outcome read back with
kubectl. The seed's v1alpha1 file is covered, unchanged, by test_descheduler.py.

Pods are bound by hand and owned by a controller kind no controller in the cluster runs (see
test_descheduler.py), so each test sees exactly the evictions. Timeouts only keep a broken server
from hanging the suite; nothing asserts on durations.
"""

import json
import signal
import subprocess
import time

import pytest

from conftest import BERTH_BIN, eventually
from test_descheduler import (NS, create, deschedule, evicted_names, live_pods, owned,
                              replicaset, write_policy)


@pytest.fixture
def cluster(berth_factory):
    b = berth_factory(nodes=3)
    b.create_namespace(NS)
    return b


def v2(plugin_config, balance=(), deschedule=(), evictor=None):
    """A v1alpha2 policy text with one profile."""
    config = [{"name": "DefaultEvictor", "args": evictor or {}}] + [
        {"name": name, "args": args} for name, args in plugin_config.items()]
    plugins = {}
    if balance:
        plugins["balance"] = {"enabled": list(balance)}
    if deschedule:
        plugins["deschedule"] = {"enabled": list(deschedule)}
    return json.dumps({"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
                       "profiles": [{"name": "e2e", "pluginConfig": config,
                                     "plugins": plugins}]})


def annotated(pod, **annotations):
    pod["metadata"]["annotations"] = {**pod["metadata"].get("annotations", {}), **annotations}
    return pod


def status(berth, name):
    return berth.kubectl_json("get", "pod", name, "-n", NS)["status"]


def test_a_profile_of_several_plugins_evicts_the_right_pods(cluster, tmp_path):
    uid = replicaset(cluster, "web")
    crash = annotated(owned("crash", "node-2", "crash", uid=replicaset(cluster, "crash")),
                      **{"berth.io/run-seconds": "1", "berth.io/exit-code": "1"})
    failed = annotated(owned("failed", "node-3", "job", uid=replicaset(cluster, "job"),
                             restartPolicy="Never"),
                       **{"berth.io/run-seconds": "1", "berth.io/exit-code": "1"})
    cluster.kubectl("apply", "-f", "-", stdin=[
        owned("web-0", "node-1", "web", uid=uid), owned("web-1", "node-1", "web", uid=uid),
        owned("steady", "node-3", "steady", uid=replicaset(cluster, "steady")), crash, failed])
    eventually(lambda: status(cluster, "failed").get("phase") == "Failed", what="failed fails")
    restarts = lambda: sum(c.get("restartCount", 0)
                           for c in status(cluster, "crash").get("containerStatuses", []))
    eventually(lambda: restarts() >= 1, timeout=90, what="crash restarted")

    policy = v2({"RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 1},
                 "RemoveFailedPods": {"excludeOwnerKinds": ["Job"]}},
                balance=["RemoveDuplicates"],
                deschedule=["RemovePodsHavingTooManyRestarts", "RemoveFailedPods"])
    report = deschedule(cluster, write_policy(tmp_path, policy))
    by_strategy = {e["name"]: e["strategy"] for e in report["evictions"]}
    assert by_strategy == {"web-1": "RemoveDuplicates",
                           "crash": "RemovePodsHavingTooManyRestarts",
                           "failed": "RemoveFailedPods"}, report
    assert evicted_names(report) == ["crash", "failed", "web-1"]
    eventually(lambda: live_pods(cluster) == ["steady", "web-0"], what="the three gone")


def test_remove_failed_pods_leaves_excluded_owner_kinds(cluster, tmp_path):
    failed = annotated(owned("job-pod", "node-3", "job", kind="Job",
                             uid=replicaset(cluster, "job"), restartPolicy="Never"),
                       **{"berth.io/run-seconds": "1", "berth.io/exit-code": "1"})
    cluster.kubectl("apply", "-f", "-", stdin=failed)
    eventually(lambda: status(cluster, "job-pod").get("phase") == "Failed", what="it fails")
    policy = v2({"RemoveFailedPods": {"excludeOwnerKinds": ["Job"]}},
                deschedule=["RemoveFailedPods"])
    assert deschedule(cluster, write_policy(tmp_path, policy))["evictions"] == []
    assert live_pods(cluster) == ["job-pod"]


def test_pod_life_time_evicts_the_old_pods_its_selector_picks(cluster, tmp_path):
    uid = replicaset(cluster, "rs")
    create(cluster, [owned("old-a", "node-1", "a", uid=uid, labels={"tier": "batch"}),
                     owned("old-b", "node-2", "b", uid=uid, labels={"tier": "batch"}),
                     owned("web", "node-3", "c", uid=uid, labels={"tier": "web"})])
    time.sleep(2)  # older than maxPodLifeTimeSeconds: 1
    policy = v2({"PodLifeTime": {"maxPodLifeTimeSeconds": 1,
                                 "labelSelector": {"matchLabels": {"tier": "batch"}}}},
                deschedule=["PodLifeTime"])
    report = deschedule(cluster, write_policy(tmp_path, policy))
    assert evicted_names(report) == ["old-a", "old-b"]
    assert {e["strategy"] for e in report["evictions"]} == {"PodLifeTime"}
    eventually(lambda: live_pods(cluster) == ["web"], what="the old batch pods gone")


def test_topology_spread_moves_pods_off_the_crowded_zone(cluster, tmp_path):
    cluster.kubectl("label", "node", "node-1", "zone=a")
    cluster.kubectl("label", "node", "node-2", "zone=b")
    cluster.kubectl("label", "node", "node-3", "zone=b")
    uid = replicaset(cluster, "spread")
    constraint = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "spread"}}}]
    create(cluster, [owned(f"spread-{i}", "node-1", "spread", uid=uid, labels={"app": "spread"},
                           topologySpreadConstraints=constraint) for i in range(4)])
    policy = v2({"RemovePodsViolatingTopologySpreadConstraint": {}},
                balance=["RemovePodsViolatingTopologySpreadConstraint"])
    report = deschedule(cluster, write_policy(tmp_path, policy))
    # 4 in zone a, 0 in zone b: two move (the average is 2).
    moved = evicted_names(report)
    assert len(moved) == 2, report
    assert "zone=a has 4 matching pods" in report["evictions"][0]["reason"]
    eventually(lambda: len(live_pods(cluster)) == 2, what="two spread pods evicted")


def test_high_node_utilization_empties_the_least_used_node(cluster, tmp_path):
    node = cluster.kubectl_json("get", "node", "node-1")
    cpu_m = int(node["status"]["allocatable"]["cpu"]) * 1000
    tenth = f"{cpu_m // 10}m"
    uid = replicaset(cluster, "rs")
    # node-1: 10% cpu (underutilized under 20%), node-2 and node-3: 50%.
    pods = [owned("lonely", "node-1", "a", uid=uid, cpu=tenth)]
    pods += [owned(f"busy2-{i}", "node-2", "b", uid=uid, cpu=tenth) for i in range(5)]
    pods += [owned(f"busy3-{i}", "node-3", "c", uid=uid, cpu=tenth) for i in range(5)]
    create(cluster, pods)
    policy = v2({"HighNodeUtilization": {"thresholds": {"cpu": 20}}},
                balance=["HighNodeUtilization"])
    report = deschedule(cluster, write_policy(tmp_path, policy))
    assert evicted_names(report) == ["lonely"]
    assert report["evictions"][0]["strategy"] == "HighNodeUtilization"


def test_dry_run_of_a_v1alpha2_policy_changes_nothing(cluster, tmp_path):
    uid = replicaset(cluster, "web")
    create(cluster, [owned(f"web-{i}", "node-1", "web", uid=uid) for i in range(3)])
    policy = v2({}, balance=["RemoveDuplicates"])
    report = deschedule(cluster, write_policy(tmp_path, policy), "--dry-run")
    assert report["dryRun"] is True
    assert [e["outcome"]["result"] for e in report["evictions"]] == ["wouldEvict"] * 2
    assert live_pods(cluster) == ["web-0", "web-1", "web-2"]


def test_a_bad_v1alpha2_policy_names_the_plugin_and_field(cluster, tmp_path):
    policy = v2({"RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 0}},
                deschedule=["RemovePodsHavingTooManyRestarts"])
    r = deschedule(cluster, write_policy(tmp_path, policy, "bad.yaml"), check=False)
    assert r.returncode != 0
    assert "bad.yaml" in r.stderr
    assert "RemovePodsHavingTooManyRestarts" in r.stderr
    assert "args.podRestartThreshold" in r.stderr
    assert "invalid PodsHavingTooManyRestarts threshold" in r.stderr, r.stderr


def test_a_sigtermed_descheduler_exits_with_its_events_written(cluster, tmp_path):
    uid = replicaset(cluster, "web")
    create(cluster, [owned(f"web-{i}", "node-1", "web", uid=uid) for i in range(3)])
    policy = write_policy(tmp_path, v2({}, balance=["RemoveDuplicates"]))
    proc = subprocess.Popen(
        [str(BERTH_BIN), "descheduler", "--kubeconfig", str(cluster.kubeconfig),
         "--policy-config-file", str(policy), "--descheduling-interval", "1h", "-o", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first, proc.stderr.read()
        assert sorted(e["name"] for e in json.loads(first)["evictions"]) == ["web-1", "web-2"]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "received SIGTERM; exiting" in out
    events = cluster.kubectl_json("get", "events", "-n", NS)["items"]
    assert sorted(e["involvedObject"]["name"] for e in events
                  if e.get("reason") == "Descheduled") == ["web-1", "web-2"]
