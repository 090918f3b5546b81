"""API edges a client meets: what a delete answers per kind, and the older versions the seeds use
(`scheduling.k8s.io/v1beta1` PriorityClass, `policy/v1beta1` PodDisruptionBudget) with
upstream's defaults, and ReplicationController labels defaulted from the template."""

import uuid

from kubernetes import client as k8s

from conftest import pod


def test_deleting_a_config_map_answers_a_status_and_a_pod_the_pod(berth, ns):
    berth.core.create_namespaced_config_map(ns, k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name="cm"), data={"a": "b"}))
    uid = berth.core.read_namespaced_config_map("cm", ns).metadata.uid
    status = berth.core.delete_namespaced_config_map("cm", ns)
    # This client version hands a delete's answer back undecoded (a dict).
    if isinstance(status, k8s.V1Status):
        status = berth.api_client.sanitize_for_serialization(status)
    assert status["kind"] == "Status" and status["status"] == "Success"
    assert status["details"]["name"] == "cm" and status["details"]["kind"] == "configmaps"
    assert status["details"]["uid"] == uid
    berth.kubectl("apply", "-f", "-", stdin=pod("p", namespace=ns))
    deleted = berth.core.delete_namespaced_pod("p", ns)
    if not isinstance(deleted, dict):
        deleted = berth.api_client.sanitize_for_serialization(deleted)
    assert deleted["kind"] == "Pod" and deleted["metadata"]["name"] == "p"


def test_v1beta1_priority_class_gets_the_preemption_policy_default(berth):
    name = f"seed-{uuid.uuid4().hex[:6]}"
    berth.kubectl("apply", "-f", "-", stdin={
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": 1000, "globalDefault": False,
        "description": "from the seeds"})
    try:
        pc = berth.kubectl_json("get", "priorityclasses.v1beta1.scheduling.k8s.io", name)
        assert pc["apiVersion"] == "scheduling.k8s.io/v1beta1"
        assert pc["preemptionPolicy"] == "PreemptLowerPriority"
    finally:
        berth.kubectl("delete", "priorityclass", name, check=False)


def test_v1beta1_pod_disruption_budget_is_served(berth, ns):
    berth.kubectl("apply", "-f", "-", stdin={
        "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "old", "namespace": ns},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}})
    assert berth.kubectl_json("get", "pdb", "old", "-n", ns)["spec"]["minAvailable"] == 1


def test_replication_controller_labels_and_selector_default_to_the_template(berth, ns):
    berth.kubectl("apply", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "rc", "namespace": ns},
        "spec": {"replicas": 0, "template": {
            "metadata": {"labels": {"app": "old-web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    rc = berth.kubectl_json("get", "rc", "rc", "-n", ns)
    assert rc["metadata"]["labels"] == {"app": "old-web"}
    assert rc["spec"]["selector"] == {"app": "old-web"}
