"""The horizontal pod autoscaler (issue 37): `kubectl autoscale` makes an autoscaling/v2
HorizontalPodAutoscaler; the controller reads the simulated kubelets' usage through
`metrics.k8s.io`, scales the Deployment 2 -> 5 when its pods use more CPU than the target, and
back to 2 when they use less, with upstream's status, conditions and events. The pods' usage is
driven by their `berth.io/usage` annotation; the sync period is 1 s and the scale-down
stabilisation window is set to 0 through `spec.behavior`, so nothing waits for minutes.
"""

import json

import pytest

from conftest import eventually

SYNC = ["--horizontal-pod-autoscaler-sync-period=1s", "--use-service-account-credentials"]


def deployment(ns):
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"},
                             "annotations": {"berth.io/usage": "cpu=10m"}},
                "spec": {"containers": [{
                    "name": "c", "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
            },
        },
    }


@pytest.fixture
def server(berth_factory):
    return berth_factory(args=SYNC)


def hpa(b, ns):
    return b.kubectl_json("get", "hpa", "web", "-n", ns)


def utilization(h):
    for m in h.get("status", {}).get("currentMetrics") or []:
        if m.get("type") == "Resource" and m["resource"]["name"] == "cpu":
            return m["resource"]["current"].get("averageUtilization")
    return None


def replicas(b, ns):
    return b.kubectl_json("get", "deployment", "web", "-n", ns)["spec"]["replicas"]


def set_usage(b, ns, usage):
    b.kubectl("annotate", "pods", "-l", "app=web", "-n", ns,
              f"berth.io/usage={usage}", "--overwrite")


def test_autoscale_scales_a_deployment_up_and_back_down_on_simulated_cpu(server):
    b = server
    ns = "hpa"
    b.create_namespace(ns)
    b.kubectl("apply", "-f", "-", stdin=[deployment(ns)])
    b.kubectl("autoscale", "deployment", "web", "-n", ns, "--min=2", "--max=5", "--cpu-percent=50")
    b.kubectl("patch", "hpa", "web", "-n", ns, "--type=merge", "-p",
              json.dumps({"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}}))
    h = hpa(b, ns)
    assert h["apiVersion"] == "autoscaling/v2"
    assert h["spec"]["metrics"][0]["resource"]["target"] == {
        "type": "Utilization", "averageUtilization": 50}

    # Idle pods: measured at 10% of their request, nothing to do.
    eventually(lambda: utilization(hpa(b, ns)) == 10, timeout=90, what="10% measured")
    assert replicas(b, ns) == 2
    conditions = {c["type"]: c for c in hpa(b, ns)["status"]["conditions"]}
    assert conditions["AbleToScale"]["status"] == "True"
    assert conditions["ScalingActive"]["reason"] == "ValidMetricFound"
    assert conditions["ScalingActive"]["message"] == (
        "the HPA was able to successfully calculate a replica count from "
        "cpu resource utilization (percentage of request)")
    table = b.kubectl("get", "hpa", "web", "-n", ns).stdout
    assert "cpu: 10%/50%" in table, table

    # Load: 200% of the request asks for 8, capped at --max=5.
    set_usage(b, ns, "cpu=200m")
    eventually(lambda: replicas(b, ns) == 5, timeout=90, what="scaled up to 5")
    h = eventually(lambda: (lambda h: h if h["status"].get("desiredReplicas") == 5 else None)(hpa(b, ns)),
                   what="status desiredReplicas 5")
    assert h["status"].get("lastScaleTime")
    limited = {c["type"]: c for c in h["status"]["conditions"]}["ScalingLimited"]
    assert (limited["status"], limited["reason"]) == ("True", "TooManyReplicas")

    def rescale_events():
        evs = b.kubectl_json("get", "events", "-n", ns,
                             "--field-selector", "reason=SuccessfulRescale")["items"]
        return [e["message"] for e in evs] or None

    messages = eventually(rescale_events, what="SuccessfulRescale event")
    assert ("New size: 5; reason: cpu resource utilization (percentage of request) above target"
            in messages)
    eventually(lambda: b.kubectl_json("get", "deployment", "web", "-n", ns)["status"]
               .get("readyReplicas") == 5, timeout=90, what="5 ready")

    # The load goes: 10% of the request asks for 1, kept at --min=2 at once (window 0).
    set_usage(b, ns, "cpu=10m")
    eventually(lambda: replicas(b, ns) == 2, timeout=90, what="scaled back down to 2")
    messages = eventually(lambda: [m for m in rescale_events() or []
                                   if m == "New size: 2; reason: All metrics below target"] or None,
                          what="scale-down event")
    assert messages


def test_a_missing_target_is_reported_in_conditions(server):
    b = server
    ns = "hpa-missing"
    b.create_namespace(ns)
    b.kubectl("apply", "-f", "-", stdin=[{
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "nothing", "namespace": ns},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nothing"},
                 "maxReplicas": 3},
    }])

    def able():
        h = b.kubectl_json("get", "hpa", "nothing", "-n", ns)
        cs = {c["type"]: c for c in h.get("status", {}).get("conditions") or []}
        return cs.get("AbleToScale")

    c = eventually(able, timeout=60, what="AbleToScale condition")
    assert (c["status"], c["reason"]) == ("False", "FailedGetScale")
    assert c["message"].startswith("the HPA controller was unable to get the target's current scale: ")
    assert "not found" in c["message"]
