"""Events flushed on shutdown (issue 31 item 6): a `berth scheduler` stopped with SIGTERM right
after a burst writes the `Scheduled` events it had queued before it exits, as upstream's event
broadcaster does on `Shutdown()`. The issue saw 188 of 200 lost. Timeouts only keep a broken
server from hanging the suite; nothing asserts on durations."""

import signal

import conftest
from conftest import eventually
from scheduler_support import SchedulerProcess, pod

BURST = 200


def bound(berth, ns):
    items = berth.kubectl_json("get", "pods", "-n", ns)["items"]
    return [p["metadata"]["name"] for p in items if p["spec"].get("nodeName")]


def scheduled_events(berth, ns):
    items = berth.kubectl_json("get", "events", "-n", ns)["items"]
    return {e["involvedObject"]["name"] for e in items if e.get("reason") == "Scheduled"}


def test_a_scheduler_sigtermed_after_a_burst_leaves_every_scheduled_event(berth, ns, tmp_path):
    scheduler = SchedulerProcess(berth, "burst-scheduler", "--leader-elect=false",
                                 log_path=tmp_path / "scheduler.log")
    try:
        pods = [pod(f"burst-{i}", ns, schedulerName="burst-scheduler") for i in range(BURST)]
        berth.kubectl("apply", "-f", "-", stdin={"apiVersion": "v1", "kind": "List",
                                                 "items": pods}, timeout=120)
        eventually(lambda: len(bound(berth, ns)) == BURST, timeout=120,
                   what=f"{BURST} pods bound")
        # At once: its event queue is still being written.
        scheduler.proc.send_signal(signal.SIGTERM)
        assert scheduler.proc.wait(timeout=60) == 0, scheduler.log()
    finally:
        scheduler.kill()
    assert any("received SIGTERM" in line for line in scheduler.lines), scheduler.lines
    # Everything was written before the exit: no waiting here.
    assert len(scheduled_events(berth, ns)) == BURST
