"""Who may do what, as two kubectl users see it: the admin, and a developer whose certificate
comes from `berth kubeconfig` and who may create pods in one namespace only. RBAC denials in
upstream's words, `kubectl auth can-i` (and `--list`), `kubectl auth whoami`, a token from
`--token-auth-file`, anonymous and bad-token requests, and the modes of the data dir's secrets."""

import json
import ssl
import stat
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import BERTH_BIN, KUBECTL_TIMEOUT, eventually, pod

DEV_NS = "team-a"


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def b_of(cluster):
    return cluster[0]


def user_kubectl(b, kubeconfig, *args, check=True, stdin=None):
    """kubectl as another user: their kubeconfig, the server's fresh discovery cache."""
    r = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", b.cache_dir + "-u",
         *map(str, args)],
        input=stdin, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT,
    )
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {args} exited {r.returncode}: {r.stderr}")
    return r


def token_kubectl(b, token, *args, check=True):
    return subprocess.run(
        ["kubectl", "--server", b.url, "--certificate-authority", b.ca_file(),
         "--token", token, "--cache-dir", b.cache_dir + "-t", *map(str, args)],
        capture_output=True, text=True, timeout=KUBECTL_TIMEOUT, check=check,
    )


def http(b, path, token=None):
    """GET `path` with an optional bearer token; (status code, parsed body)."""
    ctx = ssl.create_default_context(cafile=b.ca_file())
    req = urllib.request.Request(b.url + path)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            body = r.read().decode()
            code = r.status
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        code = e.code
    try:
        return code, json.loads(body)
    except ValueError:
        return code, body


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from conftest import Berth

    tmp = tmp_path_factory.mktemp("rbac")
    tokens = tmp / "tokens.csv"
    tokens.write_text('bobtoken,bob,1002,"qa"\n')
    b = Berth.start(tmp / "data", nodes=1, args=("--token-auth-file", tokens,
                                                 "--use-service-account-credentials"))
    alice = tmp / "alice.kubeconfig"
    subprocess.run([str(BERTH_BIN), "kubeconfig", "--user", "alice", "--group", "dev",
                    "--data-dir", str(b.data_dir), "-o", str(alice)],
                   check=True, capture_output=True, text=True)
    b.create_namespace(DEV_NS)
    b.kubectl("create", "role", "pod-creator", "-n", DEV_NS,
              "--verb=create,get,list,watch", "--resource=pods")
    b.kubectl("create", "rolebinding", "alice-pods", "-n", DEV_NS,
              "--role=pod-creator", "--user=alice")
    yield b, alice
    b.stop()


def test_secrets_are_readable_by_their_owner_only(cluster):
    b, alice = cluster
    assert mode(b.data_dir) == 0o700
    for f in ["server.key", "ca.key", "token", "kubeconfig", "store/berth.redb"]:
        assert mode(b.data_dir / f) == 0o600, f
    assert mode(b.data_dir / "store") == 0o700
    assert mode(alice) == 0o600


def test_whoami_names_each_user(cluster):
    b, alice = cluster
    me = json.loads(user_kubectl(b, alice, "auth", "whoami", "-o", "json").stdout)
    assert me["status"]["userInfo"]["username"] == "alice"
    assert me["status"]["userInfo"]["groups"] == ["dev", "system:authenticated"]
    admin = json.loads(b.kubectl("auth", "whoami", "-o", "json").stdout)
    assert admin["status"]["userInfo"]["username"] == "system:admin"
    assert "system:masters" in admin["status"]["userInfo"]["groups"]


def test_the_developer_may_create_pods_in_their_namespace_only(cluster):
    b, alice = cluster
    user_kubectl(b, alice, "create", "-f", "-", "-n", DEV_NS, stdin=json.dumps(pod("mine")))
    assert b.kubectl_json("get", "pod", "mine", "-n", DEV_NS)["metadata"]["name"] == "mine"
    listed = user_kubectl(b, alice, "get", "pods", "-n", DEV_NS, "-o", "name").stdout
    assert "pod/mine" in listed

    r = user_kubectl(b, alice, "get", "pods", "-n", "default", check=False)
    assert r.returncode != 0
    assert ('pods is forbidden: User "alice" cannot list resource "pods" in API group "" '
            'in the namespace "default"') in r.stderr

    r = user_kubectl(b, alice, "create", "-f", "-", "-n", "default", check=False,
                     stdin=json.dumps(pod("theirs")))
    assert r.returncode != 0
    assert ('pods is forbidden: User "alice" cannot create resource "pods" in API group "" '
            'in the namespace "default"') in r.stderr
    # Nothing was written.
    assert b.kubectl("get", "pod", "theirs", "-n", "default", check=False).returncode != 0

    r = user_kubectl(b, alice, "delete", "pod", "mine", "-n", DEV_NS, check=False)
    assert ('pods "mine" is forbidden: User "alice" cannot delete resource "pods" in API group '
            f'"" in the namespace "{DEV_NS}"') in r.stderr
    r = user_kubectl(b, alice, "get", "nodes", check=False)
    assert ('nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" '
            'at the cluster scope') in r.stderr


def test_can_i_for_both_users(cluster):
    b, alice = cluster

    def can(*args, as_admin=False):
        r = (b.kubectl("auth", "can-i", *args, check=False) if as_admin
             else user_kubectl(b, alice, "auth", "can-i", *args, check=False))
        return r.stdout.strip()

    assert can("create", "pods", "-n", DEV_NS) == "yes"
    assert can("create", "pods", "-n", "default") == "no"
    assert can("delete", "pods", "-n", DEV_NS) == "no"
    assert can("create", "pods", "--subresource=binding", "-n", DEV_NS) == "no"
    assert can("delete", "nodes", as_admin=True) == "yes"
    assert can("create", "pods", "--subresource=binding", "-n", DEV_NS, as_admin=True) == "yes"

    listing = user_kubectl(b, alice, "auth", "can-i", "--list", "-n", DEV_NS).stdout
    pods = [line for line in listing.splitlines() if line.startswith("pods ")]
    assert pods and "[create get list watch]" in pods[0], listing
    assert "selfsubjectaccessreviews.authorization.k8s.io" in listing


def test_subject_access_review_answers_for_another_user(cluster):
    b, _ = cluster
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": "alice", "groups": ["dev"],
                       "resourceAttributes": {"verb": "create", "resource": "pods",
                                              "namespace": DEV_NS}}}
    out = json.loads(b.kubectl("create", "-f", "-", "-o", "json",
                               stdin=json.dumps(review)).stdout)
    assert out["status"]["allowed"] is True
    review["spec"]["resourceAttributes"]["namespace"] = "default"
    out = json.loads(b.kubectl("create", "-f", "-", "-o", "json",
                               stdin=json.dumps(review)).stdout)
    assert out["status"]["allowed"] is False


def test_a_token_file_user_gets_what_their_group_is_bound_to(cluster):
    b, _ = cluster
    me = json.loads(token_kubectl(b, "bobtoken", "auth", "whoami", "-o", "json").stdout)
    assert me["status"]["userInfo"]["username"] == "bob"
    assert me["status"]["userInfo"]["uid"] == "1002"
    r = token_kubectl(b, "bobtoken", "get", "pods", "-n", DEV_NS, check=False)
    assert 'User "bob" cannot list resource "pods"' in r.stderr
    # A v1beta1 manifest, as the seed writes them.
    b.kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "RoleBinding",
        "metadata": {"name": "qa-pods", "namespace": DEV_NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "pod-creator"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "qa"}]}))
    assert "pod/mine" in token_kubectl(b, "bobtoken", "get", "pods", "-n", DEV_NS,
                                       "-o", "name").stdout


def test_anonymous_and_bad_tokens(cluster):
    # A known user asking beyond their rights gets the 403 Status upstream sends.
    code, body = http(b_of(cluster), "/api/v1/namespaces/default/pods", token="bobtoken")
    assert code == 403
    assert body["message"] == ('pods is forbidden: User "bob" cannot list resource '
                               '"pods" in API group "" in the namespace "default"')
    assert body["details"] == {"kind": "pods"}
    assert body["reason"] == "Forbidden" and body["code"] == 403
    b, _ = cluster
    code, body = http(b, "/api/v1/namespaces/default/pods", token="not-a-token")
    assert code == 401
    assert body["reason"] == "Unauthorized" and body["message"] == "Unauthorized"
    # No credentials: system:anonymous, whom RBAC lets reach health and version only
    # (system:public-info-viewer); anywhere else, upstream's 403 naming the user.
    code, body = http(b, "/api/v1/namespaces/default/pods")
    assert code == 403, body
    assert body["message"] == ('pods is forbidden: User "system:anonymous" cannot list '
                               'resource "pods" in API group "" in the namespace "default"')
    assert http(b, "/healthz")[0] == 200
    assert http(b, "/version")[0] == 200
    code, body = http(b, "/api")
    assert code == 403 and body["reason"] == "Forbidden", body
    code, body = http(b, "/api/v1/namespaces", token=b.token())
    assert code == 200


def test_impersonation_is_denied_without_the_verb_and_honoured_with_it(cluster):
    b, alice = cluster
    # (kubectl auth whoami words every 403 its own way: ask with get to see the server's.)
    r = user_kubectl(b, alice, "--as", "carol", "get", "pods", "-n", DEV_NS, check=False)
    assert r.returncode != 0
    assert ('users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API '
            'group "" at the cluster scope') in r.stderr
    # Written out rather than `kubectl create clusterrole --resource=users`: berth serves
    # OpenShift's users.user.openshift.io, which kubectl would resolve that name to (as it does
    # against OpenShift); impersonation is of the core group's virtual `users`.
    b.kubectl("apply", "-f", "-", stdin="""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-carol}
rules:
- {apiGroups: [""], resources: [users], resourceNames: [carol], verbs: [impersonate]}
""")
    b.kubectl("create", "clusterrolebinding", "alice-impersonates", "--user=alice",
              "--clusterrole=impersonate-carol")
    me = json.loads(user_kubectl(b, alice, "--as", "carol", "auth", "whoami", "-o", "json").stdout)
    assert me["status"]["userInfo"]["username"] == "carol"
    assert me["status"]["userInfo"]["groups"] == ["system:authenticated"]
    # carol herself may not list pods; alice acting as carol neither.
    r = user_kubectl(b, alice, "--as", "carol", "get", "pods", "-n", DEV_NS, check=False)
    assert 'User "carol" cannot list resource "pods"' in r.stderr
    # Only carol: another name is still refused.
    r = user_kubectl(b, alice, "--as", "dave", "get", "pods", "-n", DEV_NS, check=False)
    assert 'users "dave" is forbidden' in r.stderr


def test_view_is_extended_by_a_cluster_role_labelled_to_aggregate_into_it(cluster):
    b, alice = cluster
    # The aggregation controller fills view from system:aggregate-to-view.
    def view_rules():
        return b.kubectl_json("get", "clusterrole", "view").get("rules") or []
    eventually(lambda: any("configmaps" in r.get("resources", []) for r in view_rules()),
               what="view aggregated")
    b.kubectl("create", "rolebinding", "alice-views", "-n", DEV_NS, "--clusterrole=view",
              "--user=alice")

    def can(*args):
        return user_kubectl(b, alice, "auth", "can-i", *args, check=False).stdout.strip()

    eventually(lambda: can("list", "configmaps", "-n", DEV_NS) == "yes", what="view bound")
    assert can("get", "secrets", "-n", DEV_NS) == "no"
    b.kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "secret-viewer",
                     "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}))
    eventually(lambda: can("get", "secrets", "-n", DEV_NS) == "yes", what="view extended")
    # edit and admin take view's rules too.
    eventually(lambda: {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}
               in (b.kubectl_json("get", "clusterrole", "admin").get("rules") or []),
               what="admin extended")
    b.kubectl("delete", "clusterrole", "secret-viewer")
    eventually(lambda: can("get", "secrets", "-n", DEV_NS) == "no", what="view shrunk")
    b.kubectl("delete", "rolebinding", "alice-views", "-n", DEV_NS)


def role_json(name, rules, namespace=DEV_NS):
    return json.dumps({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                       "metadata": {"name": name, "namespace": namespace}, "rules": rules})


def binding_json(name, role, user, namespace=DEV_NS):
    return json.dumps({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                       "metadata": {"name": name, "namespace": namespace},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                   "name": role},
                       "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                     "name": user}]})


def test_escalation_is_refused_unless_held_or_allowed_by_escalate_and_bind(cluster):
    b, alice = cluster
    rbac = "rbac.authorization.k8s.io"
    b.kubectl("apply", "-f", "-", stdin=role_json("rbac-writer", [
        {"apiGroups": [rbac], "resources": ["roles", "rolebindings"],
         "verbs": ["create", "get", "update"]}]))
    b.kubectl("create", "rolebinding", "alice-rbac", "-n", DEV_NS, "--role=rbac-writer",
              "--user=alice")
    pods = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    secrets = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]

    # A role whose rules alice holds: allowed.
    eventually(lambda: user_kubectl(b, alice, "create", "-f", "-", stdin=role_json(
        "pod-reader", pods), check=False).returncode == 0, what="rbac-writer bound")
    # One she does not hold: refused in upstream's words, nothing written.
    r = user_kubectl(b, alice, "create", "-f", "-", stdin=role_json("secret-reader", secrets),
                     check=False)
    assert r.returncode != 0
    assert ('roles.rbac.authorization.k8s.io "secret-reader" is forbidden: user "alice" '
            '(groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions '
            'not currently held:\n{APIGroups:[""], Resources:["secrets"], '
            'Verbs:["get" "list"]}') in r.stderr, r.stderr
    assert b.kubectl("get", "role", "secret-reader", "-n", DEV_NS,
                     check=False).returncode != 0

    # Binding a role she holds is allowed; binding one she does not is refused.
    b.kubectl("apply", "-f", "-", stdin=role_json("secret-reader", secrets))
    user_kubectl(b, alice, "create", "-f", "-",
                 stdin=binding_json("bob-pods", "pod-reader", "bob"))
    r = user_kubectl(b, alice, "create", "-f", "-",
                     stdin=binding_json("bob-secrets", "secret-reader", "bob"), check=False)
    assert r.returncode != 0
    assert ('rolebindings.rbac.authorization.k8s.io "bob-secrets" is forbidden: user "alice" '
            '(groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions '
            'not currently held') in r.stderr, r.stderr

    # With `bind` on that role, she may bind it; with `escalate`, write any role.
    b.kubectl("apply", "-f", "-", stdin=role_json("binder", [
        {"apiGroups": [rbac], "resources": ["roles"], "resourceNames": ["secret-reader"],
         "verbs": ["bind"]},
        {"apiGroups": [rbac], "resources": ["roles"], "verbs": ["escalate"]}]))
    b.kubectl("create", "rolebinding", "alice-binds", "-n", DEV_NS, "--role=binder",
              "--user=alice")
    eventually(lambda: user_kubectl(b, alice, "create", "-f", "-", stdin=binding_json(
        "bob-secrets", "secret-reader", "bob"), check=False).returncode == 0,
        what="bind allowed")
    user_kubectl(b, alice, "create", "-f", "-",
                 stdin=role_json("config-reader", [{"apiGroups": [""],
                                                    "resources": ["configmaps"],
                                                    "verbs": ["get"]}]))
    # The admin (system:masters) may always.
    b.kubectl("apply", "-f", "-", stdin=role_json("anything", [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]))


def test_the_scheduler_acts_as_system_kube_scheduler(cluster):
    b, _ = cluster

    def can(*args):
        return b.kubectl("auth", "can-i", "--as", "system:kube-scheduler", *args,
                         check=False).stdout.strip()

    assert can("create", "pods", "--subresource=binding", "-n", "default") == "yes"
    assert can("list", "nodes") == "yes"
    assert can("delete", "nodes") == "no"
    assert can("create", "secrets", "-n", "default") == "no"

    def node_of(name):
        return b.kubectl_json("get", "pod", name, "-n", "default")["spec"].get("nodeName")

    # The built-in scheduler binds pods through its role: without the binding, it cannot.
    b.kubectl("create", "-f", "-", stdin=json.dumps(pod("sched-before", scheduler=None)))
    eventually(lambda: node_of("sched-before"), what="scheduled under its role")
    saved = b.kubectl_json("get", "clusterrolebinding", "system:kube-scheduler")
    b.kubectl("delete", "clusterrolebinding", "system:kube-scheduler")
    try:
        eventually(lambda: can("create", "pods", "--subresource=binding", "-n",
                               "default") == "no", what="binding removed")
        b.kubectl("create", "-f", "-", stdin=json.dumps(pod("sched-denied", scheduler=None)))
        # Its binding is refused (403), so the pod waits (the scheduler binds an unconstrained
        # pod on an idle node at once when it may).
        for _ in range(15):
            assert node_of("sched-denied") is None
            time.sleep(0.2)
    finally:
        for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
            saved["metadata"].pop(k, None)
        b.kubectl("create", "-f", "-", stdin=json.dumps(saved))
    eventually(lambda: node_of("sched-denied"), timeout=120, what="scheduled again")
    b.kubectl("delete", "pod", "sched-before", "sched-denied", "-n", "default", "--wait=false")


def test_controllers_act_as_their_service_accounts(cluster):
    """As upstream with --use-service-account-credentials: the ReplicaSet controller creates
    pods as kube-system:replicaset-controller, authorized by system:controller:replicaset-
    controller; without that binding a new set gets no pods, with it back they appear."""
    b, _ = cluster
    account = "system:serviceaccount:kube-system:replicaset-controller"

    def can(*args):
        return b.kubectl("auth", "can-i", "--as", account, "--as-group",
                         "system:serviceaccounts", *args, check=False).stdout.strip()

    assert can("create", "pods", "-n", "default") == "yes"
    assert can("update", "replicasets", "--subresource=status", "-n", "default") == "yes"
    assert can("create", "secrets", "-n", "default") == "no"

    def replicaset(name):
        labels = {"app": name}
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                         "template": {"metadata": {"labels": labels},
                                      "spec": {"containers": [{"name": "c",
                                                               "image": "nginx:1.27"}]}}}}

    def pods_of(name):
        return b.kubectl_json("get", "pods", "-n", "default", "-l", f"app={name}")["items"]

    def ready_replicas(name):
        rs = b.kubectl_json("get", "replicaset", name, "-n", "default")
        return rs.get("status", {}).get("replicas", 0)

    b.kubectl("create", "-f", "-", stdin=json.dumps(replicaset("rs-before")))
    eventually(lambda: len(pods_of("rs-before")) == 1, what="pod created under its role")
    # Its status is written with `update`, the verb its role grants.
    eventually(lambda: ready_replicas("rs-before") == 1, what="status written")
    name = "system:controller:replicaset-controller"
    saved = b.kubectl_json("get", "clusterrolebinding", name)
    b.kubectl("delete", "clusterrolebinding", name)
    try:
        eventually(lambda: can("create", "pods", "-n", "default") == "no",
                   what="binding removed")
        b.kubectl("create", "-f", "-", stdin=json.dumps(replicaset("rs-denied")))
        # Its creates are refused (403): no pod appears.
        for _ in range(15):
            assert pods_of("rs-denied") == []
            time.sleep(0.2)
    finally:
        for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
            saved["metadata"].pop(k, None)
        b.kubectl("create", "-f", "-", stdin=json.dumps(saved))
    eventually(lambda: can("create", "pods", "-n", "default") == "yes", what="binding back")
    # berth's ReplicaSet controller does not retry a refused create on a timer: the next
    # change to the set brings the next pass.
    b.kubectl("annotate", "replicaset", "rs-denied", "-n", "default", "nudge=1")
    eventually(lambda: len(pods_of("rs-denied")) == 1, timeout=120, what="pods created again")
    b.kubectl("delete", "replicaset", "rs-before", "rs-denied", "-n", "default",
              "--wait=false")
