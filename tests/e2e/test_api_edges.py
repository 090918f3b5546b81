"""API edges a client meets: what a delete answers per kind, and the older versions the seeds use
(`scheduling.k8s.io/v1beta1` PriorityClass, `policy/v1beta1` PodDisruptionBudget) with
upstream's defaults, and ReplicationController labels defaulted from the template."""

import json
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


def test_events_k8s_io_is_a_view_of_the_core_events(berth, ns):
    b = berth
    # Written through core/v1: seen through events.k8s.io/v1 with its field names.
    b.kubectl("create", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "core-made", "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
        "reason": "Tested", "message": "written as core/v1", "type": "Normal", "count": 2,
        "source": {"component": "e2e"}, "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z"})
    viewed = b.kubectl_json("get", "events.v1.events.k8s.io", "core-made", "-n", ns)
    assert viewed["apiVersion"] == "events.k8s.io/v1"
    assert viewed["regarding"] == {"kind": "Pod", "name": "p", "namespace": ns}
    assert viewed["note"] == "written as core/v1"
    assert viewed["deprecatedCount"] == 2
    assert viewed["deprecatedSource"] == {"component": "e2e"}
    assert "message" not in viewed and "involvedObject" not in viewed

    # Written through events.k8s.io/v1: listed as a core Event.
    b.kubectl("create", "-f", "-", stdin={
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "v1-made", "namespace": ns},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "e2e/tester",
        "reportingInstance": "e2e-1", "action": "Testing", "reason": "Tested",
        "regarding": {"kind": "Pod", "name": "p", "namespace": ns},
        "note": "written as events.k8s.io/v1", "type": "Warning"})
    core = {e["metadata"]["name"]: e for e in b.kubectl_json("get", "events", "-n", ns)["items"]}
    assert set(core) >= {"core-made", "v1-made"}
    assert core["v1-made"]["message"] == "written as events.k8s.io/v1"
    assert core["v1-made"]["involvedObject"]["name"] == "p"
    assert core["v1-made"]["reportingComponent"] == "e2e/tester"
    # Both are one object: a patch through one view shows in the other.
    b.kubectl("patch", "events.v1.events.k8s.io", "core-made", "-n", ns, "--type=merge",
              "-p", '{"note": "patched through events.k8s.io"}')
    assert b.kubectl_json("get", "event", "core-made", "-n", ns)["message"] == \
        "patched through events.k8s.io"
    b.kubectl("delete", "events.v1.events.k8s.io", "v1-made", "-n", ns)
    assert b.kubectl("get", "event", "v1-made", "-n", ns, check=False).returncode != 0


def test_the_access_log_names_each_request_and_dependencies_stay_quiet(berth_factory,
                                                                      monkeypatch):
    monkeypatch.setenv("BERTH_LOG", "debug")
    b = berth_factory(nodes=1)
    b.kubectl("get", "pods", "-n", "default")
    log = b.log_path.read_text()
    lines = [line for line in log.splitlines() if "berth::access" in line and
             'URI="/api/v1/namespaces/default/pods' in line and "kubectl" in line]
    assert lines, log[-3000:]
    # klog's text: text values quoted, numbers bare.
    assert 'verb="GET"' in lines[-1] and "resp=200" in lines[-1]
    assert 'user="system:admin"' in lines[-1]
    # A bare level is berth's own: no debug lines from hyper, h2, rustls or kube's client.
    for noisy in (" hyper", " h2::", " rustls::", " kube_client", " tower::"):
        assert not any(noisy in line and "DEBUG" in line for line in log.splitlines()), noisy


def test_a_uid_in_a_write_is_a_precondition_and_one_owner_is_the_controller(berth, ns):
    """A controller puts the object's uid in its writes so they cannot land on a same-named
    replacement, and relies on the server to refuse a second controller when it adopts by
    patch (upstream's controller-ref managers)."""
    cm = berth.core.create_namespaced_config_map(ns, k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name="cm"), data={"a": "b"}))
    stale = str(uuid.uuid4())
    body = berth.api_client.sanitize_for_serialization(cm)
    body["metadata"]["uid"] = stale
    try:
        berth.core.replace_namespaced_config_map("cm", ns, body)
        raise AssertionError("a PUT with another uid was taken")
    except k8s.ApiException as e:
        assert e.status == 409
        assert json.loads(e.body)["message"] == (
            f'Operation cannot be fulfilled on configmaps "cm": Precondition failed: UID in '
            f'precondition: {stale}, UID in object meta: {cm.metadata.uid}')
    try:
        berth.core.patch_namespaced_config_map("cm", ns, {"metadata": {"uid": stale}})
        raise AssertionError("a patch with another uid was taken")
    except k8s.ApiException as e:
        assert e.status == 422
        assert f'metadata.uid: Invalid value: "{stale}": field is immutable' in \
            json.loads(e.body)["message"]

    def ref(name, uid):
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": uid,
                "controller": True}

    berth.core.patch_namespaced_config_map(
        "cm", ns, {"metadata": {"uid": cm.metadata.uid, "ownerReferences": [ref("a", "1")]}})
    try:
        berth.core.patch_namespaced_config_map(
            "cm", ns, {"metadata": {"ownerReferences": [ref("a", "1"), ref("b", "2")]}})
        raise AssertionError("a second controller was taken")
    except k8s.ApiException as e:
        assert e.status == 422
        assert ('Only one reference can have Controller set to true. Found "true" in '
                'references for ReplicaSet/a and ReplicaSet/b') in json.loads(e.body)["message"]
    got = berth.core.read_namespaced_config_map("cm", ns)
    assert [r.name for r in got.metadata.owner_references] == ["a"]
