"""Jobs, CronJobs and containers that finish, driven with kubectl on the shared server.

Containers finish by the pod annotations `berth.io/run-seconds` (and `berth.io/exit-code`), which
the simulated kubelet reads. Waits are short real ones (a few seconds of run time, one Job
back-off of 10s; CronJob minutes on a cluster of their own at 60 times the speed); timeouts only keep a broken server from hanging the suite,
nothing asserts on durations.
"""

import json
import re
import threading

from kubernetes import watch

from conftest import eventually, pod


def job(name, ns, run_seconds=1, exit_code=0, restart="Never", **spec):
    annotations = {"berth.io/run-seconds": str(run_seconds), "berth.io/exit-code": str(exit_code)}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns},
            "spec": {**spec,
                     "template": {"metadata": {"annotations": annotations},
                                  "spec": {"restartPolicy": restart,
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}


def job_pods(b, ns, name):
    return b.kubectl_json("get", "pods", "-n", ns, "-l", f"job-name={name}")["items"]


def condition(obj, type_):
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), None)


class PodWatch:
    """Watches a namespace's pods; `most_alive` is the most pods seen alive (not finished, not
    deleted) at once."""

    def __init__(self, b, ns):
        self.alive, self.most_alive, self.seen = set(), 0, set()
        self.w = watch.Watch()
        self.thread = threading.Thread(target=self._run, args=(b, ns), daemon=True)
        self.thread.start()

    def _run(self, b, ns):
        try:
            self._follow(b, ns)
        except Exception:  # noqa: BLE001 - the stream ends when the test stops it
            pass

    def _follow(self, b, ns):
        for ev in self.w.stream(b.core.list_namespaced_pod, ns, timeout_seconds=120):
            p = ev["object"]
            name = p.metadata.name
            self.seen.add(name)
            done = p.status and p.status.phase in ("Succeeded", "Failed")
            if ev["type"] == "DELETED" or done or p.metadata.deletion_timestamp:
                self.alive.discard(name)
            else:
                self.alive.add(name)
            self.most_alive = max(self.most_alive, len(self.alive))

    def stop(self):
        self.w.stop()


def test_three_completions_two_at_a_time_complete_and_kubectl_wait_sees_it(berth, ns):
    b = berth
    watcher = PodWatch(b, ns)
    b.kubectl("apply", "-f", "-", stdin=job("pi", ns, run_seconds=2, completions=3, parallelism=2))
    b.kubectl("wait", "--for=condition=complete", "job/pi", "-n", ns, "--timeout=90s")
    watcher.stop()
    j = b.kubectl_json("get", "job", "pi", "-n", ns)
    assert j["status"]["succeeded"] == 3
    assert j["status"].get("active", 0) == 0
    assert j["status"]["startTime"] and j["status"]["completionTime"]
    assert condition(j, "Complete")["status"] == "True"
    assert condition(j, "SuccessCriteriaMet")["status"] == "True"
    uid = j["metadata"]["uid"]
    assert j["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    pods = job_pods(b, ns, "pi")
    assert len(pods) == 3
    for p in pods:
        labels = p["metadata"]["labels"]
        assert labels["batch.kubernetes.io/job-name"] == "pi"
        assert labels["batch.kubernetes.io/controller-uid"] == uid
        assert labels["controller-uid"] == uid
        owner = p["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "pi", True)
        assert p["status"]["phase"] == "Succeeded"
        state = p["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (state["exitCode"], state["reason"]) == (0, "Completed")
        assert state["startedAt"] and state["finishedAt"]
    assert len(watcher.seen) == 3, watcher.seen
    assert watcher.most_alive <= 2, f"{watcher.most_alive} pods ran at once"
    row = b.kubectl("get", "jobs", "-n", ns, "--no-headers").stdout.split()
    assert row[:3] == ["pi", "Complete", "3/3"]


def test_a_failing_job_stops_at_its_backoff_limit(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=job("crash", ns, run_seconds=1, exit_code=1, backoffLimit=1))
    b.kubectl("wait", "--for=condition=failed", "job/crash", "-n", ns, "--timeout=90s")
    j = b.kubectl_json("get", "job", "crash", "-n", ns)
    failed = condition(j, "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"] == "Job has reached the specified backoff limit"
    assert j["status"]["failed"] == 2
    pods = job_pods(b, ns, "crash")
    assert len(pods) == 2
    for p in pods:
        assert p["status"]["phase"] == "Failed"
        state = p["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (state["exitCode"], state["reason"]) == (1, "Error")
    row = b.kubectl("get", "jobs", "-n", ns, "--no-headers").stdout.split()
    assert row[:3] == ["crash", "Failed", "0/1"]


def test_an_active_deadline_fails_the_job_and_deletes_its_pods(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=job("slow", ns, run_seconds=3600, activeDeadlineSeconds=2))
    b.kubectl("wait", "--for=condition=failed", "job/slow", "-n", ns, "--timeout=60s")
    j = b.kubectl_json("get", "job", "slow", "-n", ns)
    assert condition(j, "Failed")["reason"] == "DeadlineExceeded"
    eventually(lambda: not job_pods(b, ns, "slow"), what="the job's running pod deleted")


def test_a_finished_job_is_deleted_after_its_ttl(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=job("brief", ns, run_seconds=1, ttlSecondsAfterFinished=1))
    eventually(lambda: b.kubectl("get", "job", "brief", "-n", ns, check=False).returncode != 0,
               what="the job deleted after its TTL")


def test_a_job_with_restart_policy_always_is_refused(berth, ns):
    b = berth
    r = b.kubectl("apply", "-f", "-", stdin=job("bad", ns, restart="Always"), check=False)
    assert r.returncode != 0
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Always"' in r.stderr


def test_a_restarting_container_keeps_its_last_state_and_counts_restarts(berth, ns):
    b = berth
    p = pod("flaky", ns, scheduler=None, restartPolicy="OnFailure")
    p["metadata"]["annotations"] = {"berth.io/run-seconds": "1", "berth.io/exit-code": "3"}
    b.kubectl("apply", "-f", "-", stdin=p)

    def restarted():
        s = b.kubectl_json("get", "pod", "flaky", "-n", ns)["status"]
        c = (s.get("containerStatuses") or [{}])[0]
        return c.get("restartCount", 0) >= 1 and s

    s = eventually(restarted, what="a restart after the container exited 3")
    c = s["containerStatuses"][0]
    assert c["lastState"]["terminated"]["exitCode"] == 3
    assert c["lastState"]["terminated"]["reason"] == "Error"
    assert s["phase"] == "Running"


def test_a_pod_that_exits_zero_under_never_succeeds(berth, ns):
    b = berth
    p = pod("once", ns, scheduler=None, restartPolicy="Never")
    p["metadata"]["annotations"] = {"berth.io/run-seconds": "1"}
    b.kubectl("apply", "-f", "-", stdin=p)
    eventually(lambda: b.kubectl_json("get", "pod", "once", "-n", ns)["status"].get("phase")
               == "Succeeded", what="the pod Succeeded")
    row = b.kubectl("get", "pod", "once", "-n", ns, "--no-headers").stdout.split()
    assert row[2] == "Completed"


def cron_job(name, ns, schedule="* * * * *", **spec):
    template = job(name, ns, run_seconds=1)["spec"]
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"schedule": schedule, **spec, "jobTemplate": {"spec": template}}}


def test_cron_jobs_are_served_and_kubectl_creates_a_job_from_one(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=cron_job("nightly", ns, schedule="0 3 * * *"))
    cj = b.kubectl_json("get", "cronjob", "nightly", "-n", ns)
    assert cj["spec"]["concurrencyPolicy"] == "Allow"
    assert cj["spec"]["successfulJobsHistoryLimit"] == 3
    row = b.kubectl("get", "cj", "-n", ns, "--no-headers").stdout.split()
    assert row[:7] == ["nightly", "0", "3", "*", "*", "*", "<none>"]
    b.kubectl("create", "job", "now", "--from=cronjob/nightly", "-n", ns)
    b.kubectl("wait", "--for=condition=complete", "job/now", "-n", ns, "--timeout=60s")
    j = b.kubectl_json("get", "job", "now", "-n", ns)
    assert j["metadata"]["ownerReferences"][0]["kind"] == "CronJob"


def test_a_cron_job_every_minute_makes_jobs_and_keeps_its_history_limit(berth_factory):
    # A cluster of its own on a clock 60 times as fast: each cron minute passes in a second.
    b = berth_factory(nodes=1, args=("--time-scale", "60"))
    ns = "cron"
    b.create_namespace(ns)
    b.kubectl("apply", "-f", "-", stdin=cron_job("tick", ns, successfulJobsHistoryLimit=1))
    made = set()

    def three_runs():
        events = b.kubectl_json("get", "events", "-n", ns)["items"]
        made.update(e["message"].split()[-1] for e in events if e["reason"] == "SuccessfulCreate"
                    and e["involvedObject"]["kind"] == "CronJob")
        return len(made) >= 3

    eventually(three_runs, timeout=60, interval=0.5, what="three scheduled jobs")
    # Each Job is named after its scheduled minute (minutes since the epoch): one per minute.
    minutes = sorted(int(name.rsplit("-", 1)[1]) for name in made)
    assert all(name.startswith("tick-") for name in made)
    assert len(set(minutes)) == len(minutes)

    def history_kept():
        jobs = b.kubectl_json("get", "jobs", "-n", ns)["items"]
        complete = [j for j in jobs if condition(j, "Complete")]
        return len(complete) == 1 and len(jobs) <= 2 and jobs

    eventually(history_kept, timeout=30, interval=0.5, what="one successful job kept")
    cj = b.kubectl_json("get", "cronjob", "tick", "-n", ns)
    assert cj["status"]["lastScheduleTime"]
    assert cj["status"]["lastSuccessfulTime"]


def test_an_indexed_job_runs_each_completion_index_once(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=job("indexed", ns, completions=3, parallelism=2,
                                            completionMode="Indexed"))
    b.kubectl("wait", "--for=condition=complete", "job/indexed", "-n", ns, "--timeout=90s")
    j = b.kubectl_json("get", "job", "indexed", "-n", ns)
    assert j["status"]["completedIndexes"] == "0-2"
    assert j["status"]["succeeded"] == 3
    pods = job_pods(b, ns, "indexed")
    key = "batch.kubernetes.io/job-completion-index"
    indexes = sorted(p["metadata"]["annotations"][key] for p in pods)
    assert indexes == ["0", "1", "2"]
    for p in pods:
        i = p["metadata"]["annotations"][key]
        assert p["metadata"]["name"].startswith(f"indexed-{i}-")
        assert p["metadata"]["labels"][key] == i
        assert p["spec"]["hostname"] == f"indexed-{i}"
        env = p["spec"]["containers"][0]["env"]
        assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1",
            "fieldPath": f"metadata.annotations['{key}']"}}} in env, env
    r = b.kubectl("describe", "job", "indexed", "-n", ns)
    assert re.search(r"Completion Mode:\s+Indexed", r.stdout), r.stdout
    assert re.search(r"Completed Indexes:\s+0-2", r.stdout), r.stdout


def test_an_indexed_job_needs_its_completions(berth, ns):
    manifest = job("noindex", ns, parallelism=2, completionMode="Indexed")
    r = berth.kubectl("apply", "-f", "-", stdin=manifest, check=False)
    assert r.returncode != 0
    assert "spec.completions: Required value: when completion mode is Indexed" in r.stderr, \
        r.stderr
