"""Issue 30, as a hostile tenant tries it: each attack now gets upstream's answer and changes
nothing. (Control loops, connections, overload and watch memory have tests of their own.)"""

import json
import subprocess
import uuid

import requests

from conftest import BERTH_BIN, KUBECTL_TIMEOUT, eventually

RBAC = "rbac.authorization.k8s.io"


class Raw:
    """Plain HTTPS requests as the admin (or another bearer token)."""

    def __init__(self, berth, token=None):
        self.berth = berth
        self.token = token or berth.token()

    def request(self, method, path, body=None, content_type="application/json", **params):
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": content_type}
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        return requests.request(method, self.berth.url + path, data=body, params=params,
                                headers=headers, verify=self.berth.ca_file(), timeout=60)


def status_of(resp, code, reason):
    assert resp.status_code == code, resp.text
    status = resp.json()
    assert status["kind"] == "Status" and status["code"] == code, status
    assert status["reason"] == reason, status
    return status["message"]


def user_kubeconfig(berth, tmp_path, user):
    path = tmp_path / f"{user}.kubeconfig"
    subprocess.run([str(BERTH_BIN), "kubeconfig", "--user", user, "--data-dir",
                    str(berth.data_dir), "-o", str(path)],
                   check=True, capture_output=True, text=True)
    return path


def as_user(berth, kubeconfig, *args, stdin=None):
    return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir",
                           berth.cache_dir + "-" + kubeconfig.stem, *map(str, args)],
                          input=stdin, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT)


def test_an_aggregation_rule_cannot_gather_admin_into_a_tenants_role(berth, tmp_path):
    user = f"mallory-{uuid.uuid4().hex[:5]}"
    role = f"{user}-role"
    berth.kubectl("create", "clusterrole", role, "--verb=create,get,update,patch",
                  f"--resource=clusterroles.{RBAC}")
    berth.kubectl("create", "clusterrolebinding", role, f"--clusterrole={role}", f"--user={user}")
    kubeconfig = user_kubeconfig(berth, tmp_path, user)
    aggregated = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                  "metadata": {"name": f"{user}-admin"},
                  "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {
                      f"{RBAC}/aggregate-to-admin": "true"}}]}}
    refusal = (f'clusterroles.{RBAC} "{{}}" is forbidden: must have cluster-admin privileges '
               'to use the aggregationRule')

    def create():
        return as_user(berth, kubeconfig, "create", "-f", "-", stdin=json.dumps(aggregated))

    eventually(lambda: "forbidden" in create().stderr, what="the binding reached RBAC")
    r = create()
    assert r.returncode != 0 and refusal.format(f"{user}-admin") in r.stderr, r.stderr
    # A merge patch adding the rule to the role bound to them: refused too.
    r = as_user(berth, kubeconfig, "patch", "clusterrole", role, "--type=merge", "-p",
                json.dumps({"aggregationRule": aggregated["aggregationRule"]}))
    assert r.returncode != 0 and refusal.format(role) in r.stderr, r.stderr
    r = as_user(berth, kubeconfig, "apply", "--server-side", "-f", "-",
                stdin=json.dumps(aggregated))
    assert r.returncode != 0 and refusal.format(f"{user}-admin") in r.stderr, r.stderr
    assert berth.kubectl("get", "clusterrole", f"{user}-admin", check=False).returncode != 0
    assert "aggregationRule" not in berth.kubectl_json("get", "clusterrole", role)
    # Still nothing beyond what they were given.
    r = as_user(berth, kubeconfig, "auth", "can-i", "impersonate", "serviceaccounts")
    assert r.stdout.strip() == "no"


def test_the_cluster_namespaces_may_not_be_deleted(berth):
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        r = berth.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        assert r.returncode != 0
        assert f'namespaces "{ns}" is forbidden: this namespace may not be deleted' in r.stderr
        phase = berth.kubectl_json("get", "namespace", ns)["status"]["phase"]
        assert phase == "Active"


def test_a_trailing_slash_names_no_resource(berth, ns):
    raw = Raw(berth)
    berth.kubectl("create", "configmap", "keep", "-n", ns, "--from-literal=a=b")
    for path in (f"/api/v1/namespaces/{ns}/", f"/api/v1/namespaces/{ns}/configmaps/"):
        assert raw.request("DELETE", path).status_code == 404, path
    berth.kubectl("get", "configmap", "keep", "-n", ns)
    assert berth.kubectl_json("get", "namespace", ns)["status"]["phase"] == "Active"
    # A collection is not replaced or patched whole.
    r = raw.request("PUT", f"/api/v1/namespaces/{ns}/configmaps", {"items": []})
    status_of(r, 405, "MethodNotAllowed")


def test_a_json_patch_cannot_amplify_an_object(berth, ns):
    raw = Raw(berth)
    berth.kubectl("create", "configmap", "amp", "-n", ns, "--from-literal=a=" + "x" * 1000)
    path = f"/api/v1/namespaces/{ns}/configmaps/amp"
    before = berth.kubectl_json("get", "configmap", "amp", "-n", ns)
    # Each copy doubles the data: about 2 KB of patch asks for a gigabyte.
    ops = []
    for i in range(20):
        ops.append({"op": "copy", "from": "/data", "path": "/metadata/annotations"})
        ops.append({"op": "copy", "from": "/metadata/annotations", "path": f"/data/a{i}"})
    r = raw.request("PATCH", path, ops, content_type="application/json-patch+json")
    message = status_of(r, 422, "Invalid")
    assert "the accumulated size increase of copy is" in message, message
    assert "exceeding the limit 3145728" in message, message
    # More operations than upstream takes.
    ops = [{"op": "test", "path": "/metadata/name", "value": "amp"}] * 10001
    r = raw.request("PATCH", path, ops, content_type="application/json-patch+json")
    assert status_of(r, 413, "RequestEntityTooLarge") == (
        "The allowed maximum operations in a JSON patch is 10000, got 10001")
    after = berth.kubectl_json("get", "configmap", "amp", "-n", ns)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    # A move into the moved value's parent, then a failing test: 422, not a dropped connection.
    r = raw.request("PATCH", path, [{"op": "move", "from": "/data/a", "path": "/data"},
                                    {"op": "test", "path": "/nope", "value": 1}],
                    content_type="application/json-patch+json")
    status_of(r, 422, "Invalid")


def test_an_object_over_the_storage_limit_is_refused(berth, ns):
    raw = Raw(berth)
    # 2 MB of container arguments: under the 3 MiB body limit, over the 1.5 MiB object limit.
    big = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
           "spec": {"containers": [{"name": "c", "image": "nginx",
                                    "args": ["y" * 100_000] * 20}]}}
    r = raw.request("POST", f"/api/v1/namespaces/{ns}/pods", big)
    assert "etcdserver: request is too large" in status_of(r, 413, "RequestEntityTooLarge")
    assert berth.kubectl("get", "pod", "big", "-n", ns, check=False).returncode != 0


def test_patches_that_unname_the_object_are_bad_requests(berth, ns):
    raw = Raw(berth)
    berth.kubectl("create", "configmap", "named", "-n", ns, "--from-literal=a=b")
    path = f"/api/v1/namespaces/{ns}/configmaps/named"
    unnamed = "the name of the object (named based on URL) was undeterminable: name must be provided"
    for ctype, body in [
        ("application/merge-patch+json", {"metadata": None}),
        ("application/json-patch+json", [{"op": "move", "from": "/metadata/name",
                                          "path": "/data/n"}]),
        ("application/strategic-merge-patch+json", {"$patch": "delete"}),
    ]:
        assert status_of(raw.request("PATCH", path, body, content_type=ctype),
                         400, "BadRequest") == unnamed, ctype
    assert berth.kubectl_json("get", "configmap", "named", "-n", ns)["data"] == {"a": "b"}


def test_list_options_are_validated(berth, ns):
    raw = Raw(berth)
    path = f"/api/v1/namespaces/{ns}/pods"
    r = raw.request("GET", path, resourceVersion="abc")
    assert "resourceVersion" in status_of(r, 400, "BadRequest")
    r = raw.request("GET", path, resourceVersion="1", resourceVersionMatch="Bogus")
    message = status_of(r, 422, "Invalid")
    assert message.startswith('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
                              'Unsupported value: "Bogus"'), message


def test_warnings_are_bounded(berth, ns, monkeypatch):
    # Upstream's bound still allows more than the 100 headers Python's client reads by default.
    import http.client
    monkeypatch.setattr(http.client, "_MAXHEADERS", 10_000)
    raw = Raw(berth)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "warned"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}],
                    **{f"unknownField{i:04}": i for i in range(2000)}}}
    r = raw.request("POST", f"/api/v1/namespaces/{ns}/pods", pod, fieldValidation="Warn")
    assert r.status_code == 201, r.text
    warnings = r.raw.headers.getlist("Warning")
    # Upstream keeps about 4 KiB of warning text (2,000 were sent before).
    assert 10 < len(warnings) < 200, len(warnings)
    assert sum(len(w) for w in warnings) < 4 * 1024 + 200 * 20


def test_a_resource_names_rule_allows_listing_that_name(berth, ns, tmp_path):
    user = f"lister-{uuid.uuid4().hex[:5]}"
    berth.kubectl("create", "configmap", "mine", "-n", ns, "--from-literal=a=b")
    berth.kubectl("create", "configmap", "theirs", "-n", ns, "--from-literal=a=b")
    berth.kubectl("create", "role", "one-cm", "-n", ns, "--verb=get,list,watch",
                  "--resource=configmaps", "--resource-name=mine")
    berth.kubectl("create", "rolebinding", "one-cm", "-n", ns, "--role=one-cm", f"--user={user}")
    kubeconfig = user_kubeconfig(berth, tmp_path, user)
    eventually(lambda: as_user(berth, kubeconfig, "get", "configmap", "mine", "-n", ns)
               .returncode == 0, what="the binding reached RBAC")
    r = as_user(berth, kubeconfig, "get", "configmaps", "-n", ns,
                "--field-selector=metadata.name=mine", "-o", "name")
    assert r.returncode == 0 and r.stdout.split() == ["configmap/mine"], r.stderr
    r = as_user(berth, kubeconfig, "get", "configmaps", "-n", ns)
    assert r.returncode != 0 and "forbidden" in r.stderr


def test_exec_is_authorized_in_the_pods_namespace(berth, ns, tmp_path):
    user = f"execer-{uuid.uuid4().hex[:5]}"
    berth.kubectl("create", "role", "exec", "-n", ns, "--verb=create,get",
                  "--resource=pods/exec")
    berth.kubectl("create", "rolebinding", "exec", "-n", ns, "--role=exec", f"--user={user}")
    kubeconfig = user_kubeconfig(berth, tmp_path, user)
    path = f"/api/v1/namespaces/{ns}/pods/p/exec?command=true"

    def exec_once():
        return as_user(berth, kubeconfig, "create", "--raw", path, "-f", "-", stdin="{}")

    eventually(lambda: "forbidden" not in exec_once().stderr, what="exec allowed by the Role")
    # Past RBAC: berth answers that simulated pods run no processes.
    assert "not supported on simulated nodes" in exec_once().stderr
    # Elsewhere, still refused.
    r = as_user(berth, kubeconfig, "create", "--raw",
                "/api/v1/namespaces/default/pods/p/exec?command=true", "-f", "-", stdin="{}")
    assert "forbidden" in r.stderr, r.stderr


def test_priority_and_fairness_classifies_every_request(berth, tmp_path):
    names = berth.kubectl("get", "flowschemas", "-o", "name").stdout.split()
    for schema in ("exempt", "probes", "system-nodes", "kube-scheduler", "global-default",
                   "catch-all"):
        assert f"flowschema.flowcontrol.apiserver.k8s.io/{schema}" in names, names
    levels = berth.kubectl("get", "prioritylevelconfigurations", "-o", "name").stdout.split()
    assert "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/workload-low" in levels

    def uid(kind, name):
        return berth.kubectl("get", kind, name, "-o", "jsonpath={.metadata.uid}").stdout

    def headers(token=None, cert=None):
        r = requests.get(berth.url + "/api/v1/namespaces/default/configmaps",
                         headers={"Authorization": f"Bearer {token}"} if token else {},
                         cert=cert, verify=berth.ca_file(), timeout=30)
        return (r.headers.get("X-Kubernetes-PF-FlowSchema-UID"),
                r.headers.get("X-Kubernetes-PF-PriorityLevel-UID"))

    # The admin (system:masters) is exempt; anyone else lands in global-default.
    assert headers(berth.token()) == (uid("flowschema", "exempt"),
                                      uid("prioritylevelconfiguration", "exempt"))
    assert headers() == (uid("flowschema", "global-default"),
                         uid("prioritylevelconfiguration", "global-default"))


def test_sigterm_is_a_clean_shutdown(berth_factory):
    import signal
    b = berth_factory(nodes=1)
    b.kubectl("get", "nodes")
    b.proc.send_signal(signal.SIGTERM)
    # Drained and exited by itself (a process killed by SIGTERM returns -15).
    assert b.proc.wait(timeout=60) == 0
