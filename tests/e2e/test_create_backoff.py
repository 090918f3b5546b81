"""Refused pod creates are retried with back-off (issue 13): a workload controller whose pod
create is refused (here a 403 from RBAC: its role lost `create pods`) records upstream's
FailedCreate warning, creates no pod while refused, and creates its pods once the cause is
lifted, with nothing touching the workload itself. Runs on accelerated time (--time-scale),
so the back-off (5 ms doubling) comes round in seconds."""

import json
import time

import pytest

from conftest import eventually

NS = "backoff"

WORKLOADS = {
    # controller ServiceAccount, kind, how the workload is written.
    "replicaset-controller": ("ReplicaSet", lambda name, labels, spec: {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": spec}}}),
    "statefulset-controller": ("StatefulSet", lambda name, labels, spec: {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": 1, "serviceName": name, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": spec}}}),
    "daemon-set-controller": ("DaemonSet", lambda name, labels, spec: {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": spec}}}),
    "job-controller": ("Job", lambda name, labels, spec: {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"template": {"metadata": {"labels": labels},
                              "spec": {**spec, "restartPolicy": "Never"}}}}),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from conftest import Berth

    b = Berth.start(tmp_path_factory.mktemp("backoff") / "data", nodes=1,
                    args=("--use-service-account-credentials", "--time-scale", "20"))
    b.create_namespace(NS)
    yield b
    b.stop()


def without_pod_creates(role):
    """The role with `create` taken from every rule on pods."""
    role = json.loads(json.dumps(role))
    for rule in role.get("rules", []):
        if "pods" in rule.get("resources", []) and "create" in rule.get("verbs", []):
            rule["verbs"] = [v for v in rule["verbs"] if v != "create"]
    return role


def clean(obj):
    for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        obj["metadata"].pop(k, None)
    return obj


@pytest.mark.parametrize("account", sorted(WORKLOADS))
def test_refused_creates_are_retried_after_the_cause_is_lifted(cluster, account):
    b = cluster
    kind, manifest = WORKLOADS[account]
    user = f"system:serviceaccount:kube-system:{account}"
    role_name = f"system:controller:{account}"
    name = f"refused-{kind.lower()}"
    labels = {"app": name}
    spec = {"containers": [{"name": "c", "image": "nginx:1.27"}]}

    def can_create():
        return b.kubectl("auth", "can-i", "--as", user, "--as-group", "system:serviceaccounts",
                         "create", "pods", "-n", NS, check=False).stdout.strip()

    def pods():
        return b.kubectl_json("get", "pods", "-n", NS, "-l", f"app={name}")["items"]

    def failed_creates():
        events = b.kubectl_json("get", "events", "-n", NS)["items"]
        return [e for e in events
                if e.get("reason") == "FailedCreate"
                and e["involvedObject"].get("name") == name
                and e["involvedObject"].get("kind") == kind]

    saved = b.kubectl_json("get", "clusterrole", role_name)
    b.kubectl("replace", "-f", "-", stdin=json.dumps(without_pod_creates(clean(saved))))
    try:
        eventually(lambda: can_create() == "no", what="create pods taken from the role")
        b.kubectl("create", "-f", "-", stdin=json.dumps(manifest(name, labels, spec)))
        # Refused: a FailedCreate warning as upstream words it, and no pod.
        events = eventually(failed_creates, what="FailedCreate event")
        message = events[0]["message"]
        assert events[0]["type"] == "Warning"
        assert f'User "{user}" cannot create resource "pods"' in message, message
        if kind == "StatefulSet":
            assert message.startswith(f"create Pod {name}-0 in StatefulSet {name} failed error: ")
        else:
            assert message.startswith("Error creating: pods "), message
        # Retried with back-off: more attempts follow without any change to the workload (the
        # repeats bump the first event's count, as upstream's recorder does).
        eventually(lambda: sum(e.get("count", 1) for e in failed_creates()) >= 2,
                   what="a retry after the back-off")
        if kind == "ReplicaSet":
            check_replica_failure(b, kind, name, user)
        for _ in range(10):
            assert pods() == []
            time.sleep(0.2)
    finally:
        b.kubectl("replace", "-f", "-", stdin=json.dumps(clean(saved)))
    eventually(lambda: can_create() == "yes", what="role restored")
    # Nothing touches the workload: its back-off brings the next attempt.
    generation_before = b.kubectl_json("get", kind.lower(), name, "-n", NS)["metadata"]
    eventually(lambda: len(pods()) >= 1, timeout=90, what="pods created after the cause lifted")
    after = b.kubectl_json("get", kind.lower(), name, "-n", NS)["metadata"]
    assert after.get("generation") == generation_before.get("generation")
    if kind == "ReplicaSet":
        eventually(lambda: replica_failure(b, kind, name) is None,
                   what="ReplicaFailure removed once creates succeed")
    b.kubectl("delete", kind.lower(), name, "-n", NS, "--wait=false")


def replica_failure(b, kind, name):
    """The set's ReplicaFailure condition, or None."""
    status = b.kubectl_json("get", kind.lower(), name, "-n", NS).get("status", {})
    return next((c for c in status.get("conditions", []) if c["type"] == "ReplicaFailure"),
                None)


def check_replica_failure(b, kind, name, user):
    """Upstream's ReplicaFailure condition while creates are refused: reason FailedCreate,
    the API server's error as the message."""
    cond = eventually(lambda: replica_failure(b, kind, name), what="ReplicaFailure condition")
    assert cond["status"] == "True" and cond["reason"] == "FailedCreate", cond
    assert cond["message"].startswith("pods "), cond
    assert f'User "{user}" cannot create resource "pods"' in cond["message"], cond
    assert cond.get("lastTransitionTime"), cond


def test_a_replication_controller_shows_replica_failure_while_refused(cluster):
    b = cluster
    user = "system:serviceaccount:kube-system:replication-controller"
    role_name = "system:controller:replication-controller"
    name = "refused-rc"
    saved = b.kubectl_json("get", "clusterrole", role_name)
    b.kubectl("replace", "-f", "-", stdin=json.dumps(without_pod_creates(clean(saved))))
    try:
        eventually(lambda: b.kubectl("auth", "can-i", "--as", user, "--as-group",
                                     "system:serviceaccounts", "create", "pods", "-n", NS,
                                     check=False).stdout.strip() == "no",
                   what="create pods taken from the role")
        b.kubectl("create", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 1, "selector": {"app": name},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c",
                                                           "image": "nginx:1.27"}]}}}}))
        check_replica_failure(b, "ReplicationController", name, user)
    finally:
        b.kubectl("replace", "-f", "-", stdin=json.dumps(clean(saved)))
    eventually(lambda: replica_failure(b, "ReplicationController", name) is None, timeout=90,
               what="ReplicaFailure removed once creates succeed")
    b.kubectl("delete", "replicationcontroller", name, "-n", NS, "--wait=false")
