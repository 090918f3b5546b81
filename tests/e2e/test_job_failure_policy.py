"""A Job's podFailurePolicy (batch/v1) driven with kubectl: a FailJob exit code fails the Job at
once, the API server refuses a policy upstream refuses, and an Ignore rule on the
`DisruptionTarget` condition keeps a Job retrying through kubelet evictions that would fail it
otherwise.

Containers finish or use memory by the pod annotations the simulated kubelet reads
(`berth.io/run-seconds`, `berth.io/exit-code`, `berth.io/usage`). Waits are short real ones;
nothing asserts on durations.
"""

import pytest

from conftest import KubectlError, eventually
from test_jobs import condition, job, job_pods

FAIL_ON_42 = {"rules": [{"action": "FailJob",
                         "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}]}
IGNORE_DISRUPTIONS = {"rules": [{"action": "Ignore",
                                 "onPodConditions": [{"type": "DisruptionTarget"}]}]}


def test_a_container_exiting_42_under_fail_job_fails_the_job_at_once(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=job("answer", ns, run_seconds=1, exit_code=42,
                                             backoffLimit=6, podFailurePolicy=FAIL_ON_42))
    b.kubectl("wait", "--for=condition=failed", "job/answer", "-n", ns, "--timeout=90s")
    j = b.kubectl_json("get", "job", "answer", "-n", ns)
    pods = job_pods(b, ns, "answer")
    assert len(pods) == 1, "no retry despite backoffLimit 6"
    pod = pods[0]["metadata"]["name"]
    message = (f"Container c for pod {ns}/{pod} failed with exit code 42 "
               "matching FailJob rule at index 0")
    for type_ in ("FailureTarget", "Failed"):
        c = condition(j, type_)
        assert c["status"] == "True"
        assert c["reason"] == "PodFailurePolicy"
        assert c["message"] == message
    assert j["status"]["failed"] == 1
    assert j["spec"]["podReplacementPolicy"] == "Failed"


def test_another_exit_code_is_retried_as_usual(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=job("other", ns, run_seconds=1, exit_code=1,
                                             backoffLimit=0, podFailurePolicy=FAIL_ON_42))
    b.kubectl("wait", "--for=condition=failed", "job/other", "-n", ns, "--timeout=90s")
    j = b.kubectl_json("get", "job", "other", "-n", ns)
    assert condition(j, "Failed")["reason"] == "BackoffLimitExceeded"


def test_the_api_server_refuses_what_upstream_refuses(berth, ns):
    b = berth
    bad = job("bad", ns, restart="OnFailure", podFailurePolicy={"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 3, 3]}},
        {"action": "Ignore"}]})
    with pytest.raises(KubectlError) as e:
        b.kubectl("apply", "-f", "-", stdin=bad)
    out = str(e.value)
    assert ('spec.template.spec.restartPolicy: Invalid value: "OnFailure": '
            'only "Never" is supported when podFailurePolicy is specified') in out
    assert ("spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: "
            "must not be 0 for the In operator") in out
    assert "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3" in out
    assert ("spec.podFailurePolicy.rules[1]: Invalid value: "
            "specifying one of OnExitCodes and OnPodConditions is required") in out
    assert b.kubectl("get", "job", "bad", "-n", ns, check=False).returncode != 0


# One node whose kubelet evicts at once when memory.available falls under 1Gi.
CLUSTER = """
pools:
- name: tight
  capacity: {cpu: "4", memory: 4Gi}
  systemUsage: {memory: 256Mi}
  kubeletArguments:
    eviction-hard: ["memory.available<1Gi"]
    eviction-pressure-transition-period: ["2s"]
"""


def hungry_job(name, ns, **spec):
    """A Job whose pods use 3Gi of the tight node's 4Gi, so its kubelet evicts each of them.

    Burstable (a 10Mi request), so that a replacement is admitted there under MemoryPressure.
    """
    j = job(name, ns, run_seconds=3600, backoffLimit=0, **spec)
    j["spec"]["template"]["metadata"]["annotations"]["berth.io/usage"] = "memory=3Gi"
    j["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "tight-1"}
    j["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"memory": "10Mi"}}
    return j


def disrupted(pod):
    return next((c for c in pod["status"].get("conditions", [])
                 if c["type"] == "DisruptionTarget"), None)


def test_ignore_on_disruption_target_keeps_retrying_through_evictions(berth_factory, tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    b = berth_factory(nodes=0, args=["--cluster", cluster, "--housekeeping-interval", "1s"])
    eventually(lambda: len(b.kubectl_json("get", "nodes")["items"]) == 1, what="the node")
    ns = "evictions"
    b.create_namespace(ns)

    # Without the rule an eviction is a failure like any other: backoffLimit 0 ends the Job.
    b.kubectl("apply", "-f", "-", stdin=hungry_job("counted", ns))
    b.kubectl("wait", "--for=condition=failed", "job/counted", "-n", ns, "--timeout=90s")
    j = b.kubectl_json("get", "job", "counted", "-n", ns)
    assert condition(j, "Failed")["reason"] == "BackoffLimitExceeded"
    evicted = job_pods(b, ns, "counted")[0]
    assert evicted["status"]["reason"] == "Evicted"
    c = disrupted(evicted)
    assert c["status"] == "True" and c["reason"] == "TerminationByKubelet"
    b.kubectl("delete", "job", "counted", "-n", ns)

    # With it, the Job replaces each evicted pod and never fails.
    b.kubectl("apply", "-f", "-", stdin=hungry_job("ignored", ns,
                                                    podFailurePolicy=IGNORE_DISRUPTIONS))

    def evicted_pods():
        pods = job_pods(b, ns, "ignored")
        gone = [p for p in pods if p["status"].get("phase") == "Failed"]
        return len(gone) >= 3 and gone

    gone = eventually(evicted_pods, timeout=120, what="three evictions")
    assert all(disrupted(p)["reason"] == "TerminationByKubelet" for p in gone)
    j = b.kubectl_json("get", "job", "ignored", "-n", ns)
    assert condition(j, "Failed") is None
    assert j["status"].get("failed", 0) == 0
    out = b.kubectl("get", "job", "ignored", "-n", ns).stdout
    assert "Running" in out or "0/1" in out
