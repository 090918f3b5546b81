"""Schedulers as components: a second scheduler next to the default one (16.4.3), a policy file
(16.2.8), a bad policy file, leader election between two replicas, and /metrics."""

import json
import subprocess
import uuid

import pytest

import conftest
from conftest import eventually
from scheduler_support import (SchedulerProcess, events_for, label_node, lease_holder,
                               metric_value, node_of, pod, start_serve, wait_bound)


@pytest.fixture
def schedulers(tmp_path):
    """Starts `berth scheduler` processes; ends them afterwards."""
    started = []

    def start(berth, name, *extra):
        s = SchedulerProcess(berth, name, *extra,
                             log_path=tmp_path / f"scheduler-{len(started)}.log")
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


# 16.4.3 -------------------------------------------------------------------------------------

def test_custom_scheduler_schedules_the_pod_that_names_it(berth, ns, schedulers):
    example = pod("custom-scheduler-example", ns, labels={"name": "custom-scheduler-example"},
                  schedulerName="custom-scheduler")
    berth.kubectl("create", "-f", "-", stdin=example)
    # The default scheduler ignores it: a pod created after it is scheduled, it is not.
    berth.kubectl("create", "-f", "-", stdin=pod("after", ns))
    wait_bound(berth, ns, "after")
    assert node_of(berth, ns, "custom-scheduler-example") == ""
    assert events_for(berth, ns, "custom-scheduler-example", "FailedScheduling") == []

    custom = schedulers(berth, "custom-scheduler", "--leader-elect=false")
    node = wait_bound(berth, ns, "custom-scheduler-example")
    row = berth.kubectl("get", "pod", "custom-scheduler-example", "-n", ns).stdout.splitlines()[1]
    assert row.split()[0] == "custom-scheduler-example"
    described = berth.kubectl("describe", "pod", "custom-scheduler-example", "-n", ns).stdout
    events = described[described.index("Events:"):]
    line = next(l for l in events.splitlines() if "Scheduled" in l)
    assert "custom-scheduler" in line
    assert f"Successfully assigned {ns}/custom-scheduler-example to {node}" in line
    assert "default-scheduler" not in events

    # Its metrics and health, on the plain-HTTP port.
    status, text = custom.get("/metrics")
    assert status == 200
    assert metric_value(text, "scheduler_schedule_attempts_total",
                        profile="custom-scheduler", result="scheduled") >= 1
    assert metric_value(text, "scheduler_preemption_attempts_total") == 0
    for name in ("scheduler_e2e_scheduling_duration_seconds_count",
                 "scheduler_scheduling_attempt_duration_seconds_count"):
        assert name in text
    for queue in ("active", "backoff", "unschedulable"):
        assert metric_value(text, "scheduler_pending_pods", queue=queue) is not None
    assert custom.get("/healthz") == (200, "ok")
    status, body = custom.get("/readyz")
    assert status == 200 and body.startswith("ok")


# 16.2.8 -------------------------------------------------------------------------------------

RACK_POLICY = {
    "kind": "Policy",
    "apiVersion": "v1",
    "predicates": [
        {"name": "GeneralPredicates"},
        {"name": "PodToleratesNodeTaints"},
        {"name": "RegionZoneAffinity",
         "argument": {"serviceAffinity": {"labels": ["region", "zone"]}}},
    ],
    "priorities": [
        {"name": "LeastRequestedPriority", "weight": 1},
        {"name": "RackSpread", "weight": 1,
         "argument": {"serviceAntiAffinity": {"label": "rack"}}},
    ],
}


def test_region_zone_affinity_and_rack_spread(tmp_path, monkeypatch):
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(RACK_POLICY))
    b = start_serve(tmp_path, "--policy-config-file", policy, nodes=4, monkeypatch=monkeypatch)
    try:
        topology = {"node-1": ("r1", "z1", "a"), "node-2": ("r1", "z1", "b"),
                    "node-3": ("r1", "z2", "c"), "node-4": ("r2", "z3", "d")}
        for node, (region, zone, rack) in topology.items():
            label_node(b, node, f"region={region}", f"zone={zone}", f"rack={rack}")
        b.kubectl("create", "-f", "-", stdin={
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
        # The first pod picks the zone (here by its node selector); the rest follow it.
        b.kubectl("create", "-f", "-", stdin=pod("web-0", "default", labels={"app": "web"},
                                                 nodeSelector={"zone": "z1"}))
        placed = [wait_bound(b, "default", "web-0")]
        for i in range(1, 6):
            b.kubectl("create", "-f", "-", stdin=pod(f"web-{i}", "default", labels={"app": "web"}))
            placed.append(wait_bound(b, "default", f"web-{i}"))
        assert set(placed) == {"node-1", "node-2"}, placed
        racks = [topology[n][2] for n in placed]
        assert abs(racks.count("a") - racks.count("b")) <= 1, racks
    finally:
        b.stop()


# A bad policy file ----------------------------------------------------------------------------

BAD_POLICY = {
    "kind": "Policy", "apiVersion": "v1",
    "predicates": [{"name": "PodFitsResources"}, {"name": "NoSuchPredicate"}],
    "priorities": [{"name": "LeastRequestedPriority", "weight": 0}],
}


def test_bad_policy_file_refuses_to_start_and_names_the_entry(tmp_path):
    bad = tmp_path / "bad-policy.json"
    bad.write_text(json.dumps(BAD_POLICY))
    for args in (["serve", "--port", "0", "--data-dir", tmp_path / "data"],
                 ["scheduler", "--scheduler-name", "custom-scheduler",
                  "--kubeconfig", tmp_path / "none"]):
        r = subprocess.run([str(conftest.BERTH_BIN), *map(str, args), "--policy-config-file",
                            str(bad)], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
        assert r.returncode != 0, r.stdout
        assert str(bad) in r.stderr
        assert "predicates[1] (NoSuchPredicate)" in r.stderr
        assert "priorities[0] (LeastRequestedPriority)" in r.stderr
        assert "positive weight" in r.stderr
        assert "serving the Kubernetes API" not in r.stdout


# Leader election ------------------------------------------------------------------------------

FAST_ELECTION = ["--leader-elect", "--leader-elect-lease-duration", "4s",
                 "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"]


def test_leader_election_one_leads_the_other_takes_over(berth, ns, schedulers):
    name = f"le-{uuid.uuid4().hex[:6]}"
    first = schedulers(berth, name, *FAST_ELECTION)
    leader_id = eventually(lambda: lease_holder(berth, name), what="a lease holder")
    assert leader_id == first.identity()
    second = schedulers(berth, name, *FAST_ELECTION)
    assert second.identity() and second.identity() != leader_id

    for i in range(5):
        berth.kubectl("create", "-f", "-", stdin=pod(f"a-{i}", ns, schedulerName=name))
    for i in range(5):
        wait_bound(berth, ns, f"a-{i}")
    # The standby did not lead while the first held the lease, and the lease did not move.
    assert not second.became_leader()
    assert lease_holder(berth, name) == leader_id
    status, body = second.get("/readyz")
    assert status == 200 and "not leading" in body

    first.kill()
    eventually(lambda: lease_holder(berth, name) == second.identity(), timeout=60,
               what="the standby to take the lease")
    eventually(second.became_leader, what="the standby to say it leads")
    for i in range(5):
        berth.kubectl("create", "-f", "-", stdin=pod(f"b-{i}", ns, schedulerName=name))
    for i in range(5):
        wait_bound(berth, ns, f"b-{i}")

    transitions = berth.kubectl("get", "lease", name, "-n", "kube-system", "-o",
                                "jsonpath={.spec.leaseTransitions}").stdout
    assert int(transitions) >= 1
    # No pod bound twice: one Scheduled event each, and no binding conflict in either log.
    for p in [f"a-{i}" for i in range(5)] + [f"b-{i}" for i in range(5)]:
        scheduled = events_for(berth, ns, p, "Scheduled")
        assert len(scheduled) == 1 and scheduled[0].get("count", 1) == 1, scheduled
    for s in (first, second):
        assert "binding failed" not in s.log()
    berth.kubectl("delete", "lease", name, "-n", "kube-system", check=False)


def test_leader_loses_the_lease_and_stops(berth, schedulers):
    """Another holder taking the lease makes the leader stop at once (it exits, like
    kube-scheduler) instead of scheduling next to the new holder."""
    name = f"le-{uuid.uuid4().hex[:6]}"
    only = schedulers(berth, name, *FAST_ELECTION)
    eventually(lambda: lease_holder(berth, name) == only.identity(), what="the lease")
    berth.kubectl("patch", "lease", name, "-n", "kube-system", "--type", "merge", "-p",
                  json.dumps({"spec": {"holderIdentity": "someone-else"}}))
    eventually(lambda: only.proc.poll() is not None, what="the old leader to exit")
    assert only.proc.returncode != 0
    assert "leader election lost" in only.log()
    berth.kubectl("delete", "lease", name, "-n", "kube-system", check=False)
