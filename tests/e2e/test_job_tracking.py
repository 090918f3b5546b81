"""Job tracking with finalizers and per-index back-off limits, driven with kubectl.

Every pod a Job creates carries the `batch.kubernetes.io/job-tracking` finalizer, so a pod
deleted before it finished is still counted as a failure; an Indexed Job with
`backoffLimitPerIndex` retries each index on its own and records `failedIndexes`. Containers
finish by the `berth.io/run-seconds` and `berth.io/exit-code` annotations; waits are short real
ones (one 10s index back-off), nothing asserts on durations.
"""

from conftest import eventually
from test_jobs import condition, job, job_pods

TRACKING = "batch.kubernetes.io/job-tracking"


def test_a_job_pod_deleted_while_running_counts_as_a_failure(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=job("tracked", ns, run_seconds=600, backoffLimit=0))
    pods = eventually(lambda: [p for p in job_pods(b, ns, "tracked")
                               if p.get("status", {}).get("phase") == "Running"], timeout=60)
    pod = pods[0]
    assert TRACKING in pod["metadata"]["finalizers"]
    b.kubectl("delete", "pod", pod["metadata"]["name"], "-n", ns, "--wait=false")
    b.kubectl("wait", "--for=condition=failed", "job/tracked", "-n", ns, "--timeout=90s")
    j = b.kubectl_json("get", "job", "tracked", "-n", ns)
    assert condition(j, "Failed")["reason"] == "BackoffLimitExceeded"
    assert j["status"]["failed"] == 1
    assert not j["status"].get("uncountedTerminatedPods", {}).get("failed")
    # Counted, the pod is released and goes.
    eventually(lambda: not job_pods(b, ns, "tracked"), timeout=60)


def test_finished_pods_are_released_once_counted(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=job("released", ns, run_seconds=1, completions=2,
                                             parallelism=2))
    b.kubectl("wait", "--for=condition=complete", "job/released", "-n", ns, "--timeout=90s")
    j = b.kubectl_json("get", "job", "released", "-n", ns)
    assert j["status"]["succeeded"] == 2
    assert condition(j, "SuccessCriteriaMet")["status"] == "True"
    pods = job_pods(b, ns, "released")
    assert len(pods) == 2
    for p in pods:
        assert TRACKING not in (p["metadata"].get("finalizers") or [])


def test_deleting_a_job_releases_and_removes_its_running_pods(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=job("gone", ns, run_seconds=600, parallelism=2,
                                             completions=2))
    eventually(lambda: len(job_pods(b, ns, "gone")) == 2, timeout=60)
    b.kubectl("delete", "job", "gone", "-n", ns, "--timeout=60s")
    eventually(lambda: not job_pods(b, ns, "gone"), timeout=90)


def test_an_index_failing_past_its_own_limit_fails_alone(berth, ns):
    b = berth
    spec = job("perindex", ns, run_seconds=1, exit_code=1, completions=2, parallelism=2,
               completionMode="Indexed", backoffLimitPerIndex=1, maxFailedIndexes=1)
    b.kubectl("apply", "-f", "-", stdin=spec)
    j = b.kubectl_json("get", "job", "perindex", "-n", ns)
    assert j["spec"]["backoffLimit"] == 2147483647
    b.kubectl("wait", "--for=condition=failed", "job/perindex", "-n", ns, "--timeout=120s")
    j = b.kubectl_json("get", "job", "perindex", "-n", ns)
    failed = condition(j, "Failed")
    # Both indexes fail twice: the second failed index is one more than maxFailedIndexes.
    assert failed["reason"] == "MaxFailedIndexesExceeded"
    assert failed["message"] == "Job has exceeded the specified maximal number of failed indexes"
    assert j["status"]["failedIndexes"] == "0,1"
    pods = job_pods(b, ns, "perindex")
    counts = sorted((p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
                     p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"])
                    for p in pods)
    assert counts == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
    assert j["status"]["failed"] == 4


def test_per_index_limits_are_validated_as_upstream(berth, ns):
    b = berth
    bad = job("bad", ns, backoffLimitPerIndex=1, maxFailedIndexes=3, completions=2)
    r = b.kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert r.returncode != 0
    assert "spec.backoffLimitPerIndex: Forbidden: requires indexed completion mode" in r.stderr
    assert "spec.maxFailedIndexes: Invalid value: 3: must be less than or equal to completions" \
        in r.stderr
