"""API surfaces real clients need beyond CRUD: protobuf bodies on subresources and DELETE (as Go
clients such as kube-scheduler send them), the scale subresource (`kubectl scale`), the RBAC API
(`kubectl apply -f deploy/`, `kubectl create role`, `kubectl auth can-i`), and a leader-elected
`berth scheduler` that gives its Lease up when it is stopped."""

import json
import signal
import ssl
import time
import urllib.error
import urllib.request
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from conftest import REPO, eventually, pod
from scheduler_support import SchedulerProcess, lease_holder, wait_bound
from scheduler_support import pod as scheduler_pod

PROTOBUF = "application/vnd.kubernetes.protobuf"


# Protobuf bodies, written the way Go's marshaller writes them ----------------------------------

def _varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def pb_str(tag, value):
    data = value if isinstance(value, bytes) else value.encode()
    return _varint(tag << 3 | 2) + _varint(len(data)) + data


def pb_int(tag, value):
    return _varint(tag << 3) + _varint(value)


def envelope(api_version, kind, raw):
    """`k8s\\0` + runtime.Unknown{typeMeta: {apiVersion, kind}, raw}."""
    return b"k8s\x00" + pb_str(1, pb_str(1, api_version) + pb_str(2, kind)) + pb_str(2, raw)


def object_meta(name, namespace="", uid=""):
    return pb_str(1, name) + pb_str(3, namespace) + pb_str(5, uid)


def request(berth, method, path, body=None, content_type="application/json"):
    """One HTTPS request with the admin token; returns (status, parsed JSON body)."""
    ctx = ssl.create_default_context(cafile=berth.ca_file())
    req = urllib.request.Request(berth.url + path, data=body, method=method, headers={
        "Content-Type": content_type, "Authorization": f"Bearer {berth.token()}",
        "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def pod_json(berth, ns, name):
    r = berth.kubectl("get", "pod", name, "-n", ns, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def test_protobuf_binding_eviction_and_delete_as_go_clients_send_them(berth, ns):
    for name in ("bound", "evicted", "deleted"):
        berth.kubectl("create", "-f", "-", stdin=pod(name, namespace=ns))
    uid = pod_json(berth, ns, "bound")["metadata"]["uid"]

    # kube-scheduler: POST pods/<name>/binding with a v1.Binding.
    binding = pb_str(1, object_meta("bound", ns, uid)) + pb_str(2, pb_str(1, "Node") + pb_str(3, "node-1"))
    code, status = request(berth, "POST", f"/api/v1/namespaces/{ns}/pods/bound/binding",
                           envelope("v1", "Binding", binding), PROTOBUF)
    assert (code, status["status"]) == (201, "Success"), status
    assert pod_json(berth, ns, "bound")["spec"]["nodeName"] == "node-1"

    # An eviction (policy/v1) with deleteOptions {gracePeriodSeconds: 0}: the pod is unbound,
    # so it goes at once.
    eviction = pb_str(1, object_meta("evicted", ns)) + pb_str(2, pb_int(1, 0))
    code, status = request(berth, "POST", f"/api/v1/namespaces/{ns}/pods/evicted/eviction",
                           envelope("policy/v1", "Eviction", eviction), PROTOBUF)
    assert (code, status["status"]) == (201, "Success"), status
    eventually(lambda: pod_json(berth, ns, "evicted") is None, what="the evicted pod to go")

    # DELETE with DeleteOptions (under the client's group version): a wrong uid precondition
    # is a 409 and keeps the pod; the right one deletes it.
    path = f"/api/v1/namespaces/{ns}/pods/deleted"
    wrong = envelope("v1", "DeleteOptions", pb_str(2, pb_str(1, "not-its-uid")))
    code, status = request(berth, "DELETE", path, wrong, PROTOBUF)
    assert (code, status["reason"]) == (409, "Conflict"), status
    assert pod_json(berth, ns, "deleted") is not None
    right_uid = pod_json(berth, ns, "deleted")["metadata"]["uid"]
    right = envelope("v1", "DeleteOptions", pb_int(1, 0) + pb_str(2, pb_str(1, right_uid)))
    code, status = request(berth, "DELETE", path, right, PROTOBUF)
    assert code == 200, status
    eventually(lambda: pod_json(berth, ns, "deleted") is None, what="the deleted pod to go")

    # Garbage is a 400 Status and binds nothing.
    berth.kubectl("create", "-f", "-", stdin=pod("untouched", namespace=ns))
    code, status = request(berth, "POST", f"/api/v1/namespaces/{ns}/pods/untouched/binding",
                           b"k8s\x00\x12\xff\xff\x03", PROTOBUF)
    assert (code, status["kind"], status["reason"]) == (400, "Status", "BadRequest"), status
    assert not pod_json(berth, ns, "untouched")["spec"].get("nodeName")


# Scale ----------------------------------------------------------------------------------------

def replicas(berth, ns, resource, name):
    return int(berth.kubectl("get", resource, name, "-n", ns, "-o",
                             "jsonpath={.spec.replicas}").stdout)


def test_kubectl_scale_a_deployment(berth, ns):
    berth.kubectl("create", "deployment", "web", "--image=nginx", "-n", ns)
    out = berth.kubectl("scale", "deployment", "web", "--replicas=3", "-n", ns).stdout
    assert out.strip() == "deployment.apps/web scaled"
    assert replicas(berth, ns, "deployment", "web") == 3

    def get_scale():
        return json.loads(berth.kubectl(
            "get", "--raw", f"/apis/apps/v1/namespaces/{ns}/deployments/web/scale").stdout)

    scale = get_scale()
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"]["replicas"] == 3
    assert scale["status"]["selector"] == "app=web"
    assert "replicas" in scale["status"]

    # kubectl checks --current-replicas and --resource-version itself, then PUTs the Scale
    # with the resourceVersion as a precondition. The deployment controller may still be
    # writing status (pods becoming ready) between our read and kubectl's, which moves the
    # resourceVersion; kubectl then refuses as upstream's would, so read again and retry.
    for _ in range(20):
        rv = scale["metadata"]["resourceVersion"]
        r = berth.kubectl("scale", "deployment", "web", "--replicas=4",
                          f"--resource-version={rv}", "--current-replicas=3", "-n", ns,
                          check=False)
        if r.returncode == 0 or "Expected resource version" not in r.stderr:
            break
        time.sleep(0.2)
        scale = get_scale()
    assert r.returncode == 0, r.stderr
    assert replicas(berth, ns, "deployment", "web") == 4

    # The server refuses a stale resourceVersion (409) and negative replicas (422).
    stale = dict(scale, spec={"replicas": 1})
    r = berth.kubectl("replace", "--raw",
                      f"/apis/apps/v1/namespaces/{ns}/deployments/web/scale", "-f", "-",
                      stdin=json.dumps(stale), check=False)
    assert r.returncode != 0
    assert "the object has been modified" in r.stderr, r.stderr
    r = berth.kubectl("scale", "deployment", "web", "--replicas=-1", "-n", ns, check=False)
    assert r.returncode != 0
    assert replicas(berth, ns, "deployment", "web") == 4

    # The Python client's patch of the scale subresource.
    apps = k8s.AppsV1Api(berth.api_client)
    s = apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 2}})
    assert s.spec.replicas == 2 and s.status.selector == "app=web"
    assert replicas(berth, ns, "deployment", "web") == 2


def test_kubectl_scale_replica_sets_stateful_sets_and_replication_controllers(berth, ns):
    template = {"metadata": {"labels": {"app": "s"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    selector = {"matchLabels": {"app": "s"}}
    berth.kubectl("apply", "-f", "-", stdin=[
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": ns},
         "spec": {"replicas": 1, "selector": selector, "template": template}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "sts", "namespace": ns},
         "spec": {"replicas": 1, "serviceName": "sts", "selector": selector, "template": template}},
        {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc", "namespace": ns},
         "spec": {"replicas": 1, "selector": {"app": "s"}, "template": template}},
    ])
    for resource, name in (("replicaset", "rs"), ("statefulset", "sts"),
                           ("replicationcontroller", "rc")):
        out = berth.kubectl("scale", resource, name, "--replicas=5", "-n", ns).stdout
        assert out.strip().endswith(f"/{name} scaled"), out
        assert replicas(berth, ns, resource, name) == 5
    # Several at once, by file-less type/name pairs.
    berth.kubectl("scale", "rs/rs", "rc/rc", "--replicas=0", "-n", ns)
    assert replicas(berth, ns, "rs", "rs") == 0
    assert replicas(berth, ns, "rc", "rc") == 0


# RBAC -----------------------------------------------------------------------------------------

def test_kubectl_apply_deploy_dir_with_rbac(berth):
    r = berth.kubectl("apply", "--dry-run=server", "-f", str(REPO / "deploy"))
    for line in ["serviceaccount/berth-scheduler",
                 "clusterrolebinding.rbac.authorization.k8s.io/berth-scheduler-as-kube-scheduler",
                 "clusterrole.rbac.authorization.k8s.io/berth-scheduler",
                 "role.rbac.authorization.k8s.io/berth-scheduler-leader-election",
                 "rolebinding.rbac.authorization.k8s.io/berth-scheduler-leader-election",
                 "configmap/custom-scheduler-policy", "deployment.apps/custom-scheduler"]:
        assert f"{line} created (server dry run)" in r.stdout, r.stdout
    # The dry run stored nothing.
    r = berth.kubectl("get", "clusterrole", "berth-scheduler", check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr

    # Applied for real, the RBAC objects read back; a second apply changes nothing.
    rbac = REPO / "deploy" / "rbac.yaml"
    try:
        berth.kubectl("apply", "-f", str(rbac))
        out = berth.kubectl("get", "clusterrolebinding", "berth-scheduler-as-kube-scheduler").stdout
        header, row = out.splitlines()[:2]
        assert header.split() == ["NAME", "ROLE", "AGE"]
        assert row.split()[:2] == ["berth-scheduler-as-kube-scheduler",
                                   "ClusterRole/system:kube-scheduler"]
        wide = berth.kubectl("get", "rolebinding", "berth-scheduler-leader-election", "-n",
                             "kube-system", "-o", "wide").stdout
        assert wide.splitlines()[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS",
                                                "SERVICEACCOUNTS"]
        assert "kube-system/berth-scheduler" in wide
        roles = berth.kubectl("get", "roles", "-n", "kube-system").stdout
        assert roles.splitlines()[0].split() == ["NAME", "CREATED", "AT"]
        assert "berth-scheduler-leader-election" in roles
        rule = berth.kubectl_json("get", "clusterrole", "berth-scheduler")["rules"][0]
        assert rule == {"apiGroups": [""], "resources": ["pods/binding", "bindings"],
                        "verbs": ["create"]}
        again = berth.kubectl("apply", "-f", str(rbac)).stdout
        assert "clusterrole.rbac.authorization.k8s.io/berth-scheduler unchanged" in again
    finally:
        berth.kubectl("delete", "-f", str(rbac), "--ignore-not-found")


def test_bootstrap_cluster_roles_and_bindings(berth):
    """A new cluster has upstream's bootstrap roles a scheduler needs, and cluster-admin."""
    names = berth.kubectl("get", "clusterroles", "-o", "name").stdout.split()
    for role in ["cluster-admin", "system:kube-scheduler", "system:volume-scheduler",
                 "system:discovery", "system:basic-user", "system:public-info-viewer"]:
        assert f"clusterrole.rbac.authorization.k8s.io/{role}" in names, names
    admin = berth.kubectl_json("get", "clusterrole", "cluster-admin")
    assert admin["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    assert admin["metadata"]["annotations"] == {
        "rbac.authorization.kubernetes.io/autoupdate": "true"}
    assert admin["rules"] == [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                              {"nonResourceURLs": ["*"], "verbs": ["*"]}]
    b = berth.kubectl_json("get", "clusterrolebinding", "cluster-admin")
    assert b["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                              "name": "system:masters"}]
    # The role deploy/rbac.yaml binds a custom scheduler to lets it bind pods.
    sched = berth.kubectl_json("get", "clusterrole", "system:kube-scheduler")["rules"]
    assert {"apiGroups": [""], "resources": ["bindings", "pods/binding"],
            "verbs": ["create"]} in sched
    out = berth.kubectl("describe", "clusterrolebinding", "system:kube-scheduler").stdout
    assert "system:kube-scheduler" in out and "User" in out


def test_roles_and_bindings_with_kubectl_create(berth, ns):
    name = f"reader-{uuid.uuid4().hex[:6]}"
    berth.kubectl("create", "clusterrole", name, "--verb=get,list,watch", "--resource=pods")
    try:
        berth.kubectl("create", "clusterrolebinding", name, f"--clusterrole={name}",
                      f"--serviceaccount={ns}:robot", "--user=alice")
        b = berth.kubectl_json("get", "clusterrolebinding", name)
        assert b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": name}
        assert {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"} in b["subjects"]
        # roleRef may not change: 422 with upstream's message.
        r = berth.kubectl("patch", "clusterrolebinding", name, "--type=merge",
                          "-p", '{"roleRef":{"name":"cluster-admin"}}', check=False)
        assert r.returncode != 0
        assert "Invalid" in r.stderr and "cannot change roleRef" in r.stderr, r.stderr
        # Subjects may.
        berth.kubectl("patch", "clusterrolebinding", name, "--type=merge",
                      "-p", '{"subjects":[{"kind":"Group","name":"devs"}]}')
        assert berth.kubectl_json("get", "clusterrolebinding", name)["subjects"] == [
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}]
    finally:
        berth.kubectl("delete", "clusterrolebinding,clusterrole", name, "--ignore-not-found")

    # Namespaced roles: created, watched, listed, deleted.
    rbac = k8s.RbacAuthorizationV1Api(berth.api_client)
    w = k8s_watch.Watch()
    rv = rbac.list_namespaced_role(ns).metadata.resource_version
    berth.kubectl("create", "role", "pod-reader", "--verb=get", "--resource=pods", "-n", ns)
    berth.kubectl("create", "rolebinding", "read-pods", "--role=pod-reader", "--user=bob", "-n", ns)
    seen = None
    for event in w.stream(rbac.list_namespaced_role, ns, resource_version=rv, timeout_seconds=20):
        seen = (event["type"], event["object"].metadata.name)
        w.stop()
    assert seen == ("ADDED", "pod-reader")
    out = berth.kubectl("get", "rolebindings", "-n", ns, "-o", "wide").stdout
    row = out.splitlines()[1].split()
    assert row[:2] == ["read-pods", "Role/pod-reader"] and row[3] == "bob", out
    berth.kubectl("delete", "rolebinding", "read-pods", "-n", ns)
    assert berth.kubectl("get", "rolebindings", "-n", ns, "-o", "name").stdout.strip() == ""


def test_invalid_rbac_objects_are_refused(berth, ns):
    no_ref = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
              "metadata": {"name": "no-ref", "namespace": ns},
              "subjects": [{"kind": "User", "name": "alice"}]}
    r = berth.kubectl("create", "-f", "-", stdin=no_ref, check=False)
    assert r.returncode != 0
    assert 'The RoleBinding "no-ref" is invalid' in r.stderr, r.stderr
    assert "roleRef.name: Required value" in r.stderr
    bad_rule = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "bad", "namespace": ns},
                "rules": [{"apiGroups": [""], "resources": ["pods"]}]}
    r = berth.kubectl("create", "-f", "-", stdin=bad_rule, check=False)
    assert r.returncode != 0
    assert "rules[0].verbs: Required value: verbs must contain at least one value" in r.stderr
    assert berth.kubectl("get", "roles,rolebindings", "-n", ns, "-o", "name").stdout.strip() == ""


def test_kubectl_auth_can_i(berth, ns):
    assert berth.kubectl("auth", "can-i", "create", "pods", "-n", ns).stdout.strip() == "yes"
    assert berth.kubectl("auth", "can-i", "delete", "nodes").stdout.strip() == "yes"
    assert berth.kubectl("auth", "can-i", "get", "/healthz").stdout.strip() == "yes"
    listing = berth.kubectl("auth", "can-i", "--list", "-n", ns).stdout
    assert "*.*" in listing, listing


# Leader election: release on SIGTERM ----------------------------------------------------------

#: A lease far longer than the test waits: a standby that takes over did not wait it out.
SLOW_EXPIRY = ["--leader-elect", "--leader-elect-lease-duration", "120s",
               "--leader-elect-renew-deadline", "60s", "--leader-elect-retry-period", "500ms"]


@pytest.fixture
def schedulers(tmp_path):
    started = []

    def start(berth, name, *extra):
        s = SchedulerProcess(berth, name, *extra,
                             log_path=tmp_path / f"scheduler-{len(started)}.log")
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def test_leader_releases_the_lease_on_sigterm(berth, ns, schedulers):
    name = f"release-{uuid.uuid4().hex[:6]}"
    first = schedulers(berth, name, *SLOW_EXPIRY)
    eventually(lambda: lease_holder(berth, name) == first.identity(), what="the first to lead")
    second = schedulers(berth, name, *SLOW_EXPIRY)
    assert second.identity() and second.identity() != first.identity()

    # A standby that stops leaves the leader's lease alone.
    third = schedulers(berth, name, *SLOW_EXPIRY)
    third.kill(signal.SIGTERM)
    assert third.proc.returncode == 0, third.log()
    assert lease_holder(berth, name) == first.identity()

    first.kill(signal.SIGTERM)
    assert first.proc.returncode == 0, first.log()
    assert any("gave up the lease" in line for line in first.lines), first.lines
    # Well inside the 120 s lease duration: the standby did not wait for expiry.
    eventually(lambda: lease_holder(berth, name) == second.identity(), timeout=60,
               what="the standby to take the released lease")
    eventually(second.became_leader, what="the standby to say it leads")
    berth.kubectl("create", "-f", "-", stdin=scheduler_pod("after-release", ns, schedulerName=name))
    wait_bound(berth, ns, "after-release")

    second.kill(signal.SIGINT)
    assert second.proc.returncode == 0, second.log()
    eventually(lambda: lease_holder(berth, name) == "", what="the lease to have no holder")
    berth.kubectl("delete", "lease", name, "-n", "kube-system", check=False)
