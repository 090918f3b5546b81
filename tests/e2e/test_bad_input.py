"""Bad input gets a clear error with the right code, and changes nothing."""

import json

import pytest
import requests
from conftest import pod, to_yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException


class Raw:
    """Plain HTTPS requests with the admin token, for bodies no client would send."""

    def __init__(self, berth):
        self.berth = berth

    def request(self, method, path, body=None, content_type="application/json", **params):
        headers = {"Authorization": f"Bearer {self.berth.token()}"}
        if content_type:
            headers["Content-Type"] = content_type
        return requests.request(method, self.berth.url + path, data=body, params=params,
                                headers=headers, verify=self.berth.ca_file(), timeout=30)


@pytest.fixture
def raw(berth):
    return Raw(berth)


def pod_names(berth, ns):
    return sorted(p.metadata.name for p in berth.core.list_namespaced_pod(ns).items)


def assert_status(resp, code, reason, *fragments):
    assert resp.status_code == code, resp.text
    status = resp.json()
    assert status["kind"] == "Status" and status["status"] == "Failure"
    assert status["code"] == code and status["reason"] == reason
    for f in fragments:
        assert f in status["message"], status["message"]
    return status


def test_malformed_json_is_bad_request(berth, raw, ns):
    r = raw.request("POST", f"/api/v1/namespaces/{ns}/pods", b'{"apiVersion":"v1","kind":"Pod",')
    assert_status(r, 400, "BadRequest")
    r = raw.request("POST", f"/api/v1/namespaces/{ns}/pods", b"not json at all")
    assert_status(r, 400, "BadRequest")
    assert pod_names(berth, ns) == []


def test_malformed_yaml_is_bad_request(berth, raw, ns):
    body = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n"
    r = raw.request("POST", f"/api/v1/namespaces/{ns}/pods", body,
                    content_type="application/yaml")
    assert_status(r, 400, "BadRequest")
    assert pod_names(berth, ns) == []


def test_well_formed_yaml_body_is_accepted(berth, raw, ns):
    r = raw.request("POST", f"/api/v1/namespaces/{ns}/pods", to_yaml(pod("fromyaml")),
                    content_type="application/yaml")
    assert r.status_code == 201, r.text
    assert pod_names(berth, ns) == ["fromyaml"]


def test_malformed_patch_is_bad_request(berth, raw, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("target", labels={"a": "1"}))
    before = berth.core.read_namespaced_pod("target", ns)
    r = raw.request("PATCH", f"/api/v1/namespaces/{ns}/pods/target", b'{"metadata":',
                    content_type="application/merge-patch+json")
    assert_status(r, 400, "BadRequest")
    r = raw.request("PATCH", f"/api/v1/namespaces/{ns}/pods/target", b'{"a":1}',
                    content_type="application/json-patch+json")
    assert r.status_code in (400, 422), r.text
    r = raw.request("PATCH", f"/api/v1/namespaces/{ns}/pods/target", b'{}',
                    content_type="text/plain")
    assert_status(r, 415, "UnsupportedMediaType")
    after = berth.core.read_namespaced_pod("target", ns)
    assert after.metadata.resource_version == before.metadata.resource_version


def test_unknown_field_under_strict_validation_is_refused_by_name(berth, ns):
    bad = pod("strict")
    bad["spec"]["foo"] = "bar"
    bad["spec"]["containers"][0]["imagePullPolice"] = "Always"
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=bad, check=False)
    assert r.returncode != 0
    assert "Error from server (BadRequest)" in r.stderr
    assert 'unknown field "spec.foo"' in r.stderr
    assert 'unknown field "spec.containers[0].imagePullPolice"' in r.stderr
    assert pod_names(berth, ns) == []
    # The same file goes through when the user turns validation off.
    out = berth.kubectl("create", "-f", "-", "-n", ns, "--validate=false", stdin=bad).stdout
    assert out.strip() == "pod/strict created"


def test_unknown_field_in_apply_of_an_existing_pod(berth, ns):
    berth.kubectl("apply", "-f", "-", "-n", ns, stdin=pod("ap", labels={"a": "1"}))
    before = berth.core.read_namespaced_pod("ap", ns)
    bad = pod("ap", labels={"a": "2"})
    bad["spec"]["bogus"] = True
    r = berth.kubectl("apply", "-f", "-", "-n", ns, stdin=bad, check=False)
    assert r.returncode != 0
    assert 'unknown field "spec.bogus"' in r.stderr
    after = berth.core.read_namespaced_pod("ap", ns)
    assert after.metadata.resource_version == before.metadata.resource_version


def test_duplicate_field_is_bad_request(berth, raw, ns):
    body = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"d1","name":"d2"},'
            '"spec":{"containers":[{"name":"c","image":"i"}]}}')
    r = raw.request("POST", f"/api/v1/namespaces/{ns}/pods", body, fieldValidation="Strict")
    assert_status(r, 400, "BadRequest", 'duplicate field "metadata.name"')
    assert pod_names(berth, ns) == []


def test_toleration_exists_with_a_value_is_invalid(berth, ns):
    bad = pod("tol", tolerations=[{"key": "k", "operator": "Exists", "value": "v",
                                   "effect": "NoSchedule"}])
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=bad, check=False)
    assert r.returncode != 0
    assert 'The Pod "tol" is invalid' in r.stderr
    assert "spec.tolerations[0].operator" in r.stderr
    assert pod_names(berth, ns) == []


def test_pod_without_containers_is_invalid(berth, raw, ns):
    body = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"},
                       "spec": {"containers": []}})
    r = raw.request("POST", f"/api/v1/namespaces/{ns}/pods", body)
    status = assert_status(r, 422, "Invalid", 'Pod "empty" is invalid')
    assert any(c["field"] == "spec.containers" for c in status["details"]["causes"])
    assert pod_names(berth, ns) == []


def test_stale_resource_version_on_update_conflicts(berth, ns):
    core = berth.core
    core.create_namespaced_pod(ns, pod("cas", labels={"v": "1"}))
    stale = core.read_namespaced_pod("cas", ns)
    core.patch_namespaced_pod("cas", ns, {"metadata": {"labels": {"v": "2"}}})
    stale.metadata.labels = {"v": "stale"}
    try:
        core.replace_namespaced_pod("cas", ns, stale)
        raise AssertionError("stale update accepted")
    except ApiException as e:
        assert e.status == 409
        body = json.loads(e.body)
        assert body["reason"] == "Conflict"
        assert "the object has been modified" in body["message"]
    assert core.read_namespaced_pod("cas", ns).metadata.labels == {"v": "2"}

    # kubectl replace with the stale object says the same.
    stale_manifest = pod("cas", labels={"v": "stale"})
    stale_manifest["metadata"]["resourceVersion"] = stale.metadata.resource_version
    r = berth.kubectl("replace", "-f", "-", "-n", ns, stdin=stale_manifest, check=False)
    assert r.returncode != 0 and "Error from server (Conflict)" in r.stderr
    assert core.read_namespaced_pod("cas", ns).metadata.labels == {"v": "2"}


def test_binding_an_already_bound_pod_with_kubectl_conflicts(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("bound", node="node-1"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bound"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-2"}}
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=binding, check=False)
    assert r.returncode != 0
    assert "Error from server (Conflict)" in r.stderr
    assert "already assigned to node" in r.stderr
    assert berth.core.read_namespaced_pod("bound", ns).spec.node_name == "node-1"


def test_create_in_a_missing_namespace_is_not_found(berth):
    r = berth.kubectl("create", "-f", "-", "-n", "no-such-ns", stdin=pod("p"), check=False)
    assert r.returncode != 0
    assert 'namespaces "no-such-ns" not found' in r.stderr


# priority classes ------------------------------------------------------------------------------


def priority_class(name, value, global_default=False):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": global_default}


@pytest.fixture
def classes(berth):
    """Priority classes the test creates, deleted afterwards."""
    made = []

    def create(name, value, global_default=False, check=True):
        r = berth.kubectl("create", "-f", "-", stdin=priority_class(name, value, global_default),
                          check=check)
        if r.returncode == 0:
            made.append(name)
        return r

    yield create
    for name in made:
        berth.kubectl("delete", "priorityclass", name, check=False)


def class_names(berth):
    return sorted(c.metadata.name for c in berth.scheduling.list_priority_class().items)


def test_priority_class_value_over_one_billion_is_invalid(berth, classes):
    before = class_names(berth)
    r = classes("too-high", 1_000_000_001, check=False)
    assert r.returncode != 0
    assert 'The PriorityClass "too-high" is invalid' in r.stderr
    assert "value" in r.stderr and "1000000000" in r.stderr
    assert class_names(berth) == before
    # The ceiling itself is allowed.
    classes("at-ceiling", 1_000_000_000)


def test_second_global_default_priority_class_is_refused(berth, classes):
    classes("first-default", 1000, global_default=True)
    r = classes("second-default", 2000, global_default=True, check=False)
    assert r.returncode != 0
    assert "Error from server (Forbidden)" in r.stderr or "is invalid" in r.stderr
    assert "first-default" in r.stderr and "Only one default can exist" in r.stderr
    assert "second-default" not in class_names(berth)


def test_pod_with_unknown_priority_class_is_forbidden(berth, ns):
    bad = pod("prio", priorityClassName="no-such-class")
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=bad, check=False)
    assert r.returncode != 0
    assert "Error from server (Forbidden)" in r.stderr
    assert "no PriorityClass with name no-such-class was found" in r.stderr
    assert pod_names(berth, ns) == []


def test_pod_gets_the_priority_of_its_class(berth, ns, classes):
    classes("e2e-high", 100000)
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("hi", priorityClassName="e2e-high"))
    p = berth.core.read_namespaced_pod("hi", ns)
    assert p.spec.priority == 100000 and p.spec.priority_class_name == "e2e-high"


def test_priority_class_through_the_python_client_is_forbidden(berth):
    body = k8s.V1PriorityClass(metadata=k8s.V1ObjectMeta(name="system-fake"), value=5)
    try:
        berth.scheduling.create_priority_class(body)
        raise AssertionError("reserved name accepted")
    except ApiException as e:
        assert e.status == 422
        assert "system-" in json.loads(e.body)["message"]
    assert "system-fake" not in class_names(berth)


def test_wrong_type_is_bad_request_naming_the_field(berth, ns):
    bad = pod("typed")
    bad["spec"]["containers"][0]["ports"] = [{"containerPort": "eighty"}]
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=bad, check=False)
    assert r.returncode != 0
    assert "Error from server (BadRequest)" in r.stderr
    assert "spec.containers[0].ports[0].containerPort" in r.stderr
    assert pod_names(berth, ns) == []


def test_patches_that_break_the_object_are_refused_and_change_nothing(berth, raw, ns):
    berth.core.create_namespaced_config_map(
        ns, {"metadata": {"name": "cm"}, "data": {"a": "b"}})
    before = berth.core.read_namespaced_config_map("cm", ns)
    path = f"/api/v1/namespaces/{ns}/configmaps/cm"
    for content_type, body in [
        ("application/strategic-merge-patch+json", '{"data":"str"}'),
        ("application/merge-patch+json", '{"data":"str"}'),
        ("application/merge-patch+json", "[1]"),
        ("application/json-patch+json", '[{"op":"replace","path":"/data","value":5}]'),
    ]:
        r = raw.request("PATCH", path, body, content_type=content_type)
        assert_status(r, 422, "Invalid", "ConfigMap \"cm\" is invalid", "patch")
    r = raw.request("PATCH", path, '[{"op":"replace","path":"/metadata/name","value":"other"}]',
                    content_type="application/json-patch+json")
    assert_status(r, 400, "BadRequest",
                  "the name of the object (other) does not match the name on the URL (cm)")
    after = berth.core.read_namespaced_config_map("cm", ns)
    assert after.data == {"a": "b"}
    assert after.metadata.resource_version == before.metadata.resource_version
    # A good patch still works.
    berth.core.patch_namespaced_config_map("cm", ns, {"data": {"x": "y"}})
    assert berth.core.read_namespaced_config_map("cm", ns).data == {"a": "b", "x": "y"}


def test_an_overflowing_request_is_never_scheduled(berth, ns):
    huge = pod("huge", scheduler=None)
    huge["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "10000000000000000"}}
    berth.core.create_namespaced_pod(ns, huge)
    ok = pod("small", scheduler=None)
    berth.core.create_namespaced_pod(ns, ok)
    # The scheduler is working (the small pod binds); the huge one stays Pending, unschedulable.
    from conftest import eventually
    eventually(lambda: berth.core.read_namespaced_pod("small", ns).spec.node_name,
               what="the small pod bound")

    def unschedulable():
        p = berth.core.read_namespaced_pod("huge", ns)
        conds = {c.type: c for c in (p.status.conditions or [])}
        c = conds.get("PodScheduled")
        return c is not None and c.status == "False" and "Insufficient cpu" in (c.message or "")
    eventually(unschedulable, what="the huge pod reported unschedulable")
    assert berth.core.read_namespaced_pod("huge", ns).spec.node_name is None


def test_pod_updates_change_only_what_upstream_allows(berth, ns):
    """Upstream's ValidatePodUpdate: images, added tolerations and a lower activeDeadlineSeconds
    may change; anything else in the spec is refused (422, nothing written)."""
    tol = [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
    berth.kubectl("create", "-f", "-", "-n", ns,
                  stdin=pod("upd", node="node-1", tolerations=tol, activeDeadlineSeconds=600))
    # The kubelet writes the pod's status meanwhile: compare what updates may touch, the spec.
    before = berth.core.read_namespaced_pod("upd", ns)
    for patch in [{"spec": {"nodeSelector": {"disk": "ssd"}}},
                  {"spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]}},
                  {"spec": {"nodeName": "node-2"}}]:
        r = berth.kubectl("patch", "pod", "upd", "-n", ns, "-p", json.dumps(patch), check=False)
        assert r.returncode != 0, patch
        assert 'The Pod "upd" is invalid: spec: Forbidden: pod updates may not change fields ' \
               "other than `spec.containers[*].image`" in r.stderr, r.stderr
    r = berth.kubectl("patch", "pod", "upd", "-n", ns, "--type=json", "-p",
                      '[{"op":"remove","path":"/spec/tolerations/0"}]', check=False)
    assert "existing toleration can not be modified except its tolerationSeconds" in r.stderr
    r = berth.kubectl("patch", "pod", "upd", "-n", ns, "-p",
                      '{"spec":{"activeDeadlineSeconds":1200}}', check=False)
    assert "must be less than or equal to previous value" in r.stderr, r.stderr
    after = berth.core.read_namespaced_pod("upd", ns)
    assert after.spec == before.spec
    assert after.metadata.generation == before.metadata.generation

    berth.kubectl("set", "image", "pod/upd", "c=nginx:1.28", "-n", ns)
    berth.kubectl("patch", "pod", "upd", "-n", ns, "--type=json", "-p",
                  '[{"op":"add","path":"/spec/tolerations/-","value":'
                  '{"key":"x","operator":"Exists","effect":"NoSchedule"}}]')
    berth.kubectl("patch", "pod", "upd", "-n", ns, "-p", '{"spec":{"activeDeadlineSeconds":300}}')
    berth.kubectl("label", "pod", "upd", "-n", ns, "edited=yes")
    p = berth.core.read_namespaced_pod("upd", ns)
    assert p.spec.containers[0].image == "nginx:1.28"
    keys = [t.key for t in p.spec.tolerations]
    assert keys[0] == "k" and "x" in keys
    assert p.spec.active_deadline_seconds == 300 and p.metadata.labels["edited"] == "yes"
    # A replace of the pod as read back is accepted (defaults compare equal).
    r = berth.kubectl("get", "pod", "upd", "-n", ns, "-o", "json")
    berth.kubectl("replace", "-f", "-", "-n", ns, stdin=json.loads(r.stdout))


def test_a_body_over_three_mebibytes_is_413_and_writes_nothing(berth, raw, ns):
    big = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge"},
                      "data": {"k": "x" * (4 * 1024 * 1024)}})
    r = raw.request("POST", f"/api/v1/namespaces/{ns}/configmaps", big)
    assert_status(r, 413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
    assert berth.core.list_namespaced_config_map(ns, field_selector="metadata.name=huge").items == []


def test_config_map_and_secret_data_over_one_mebibyte_are_invalid(berth, ns, tmp_path):
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                "data": {"k": "x" * (1024 * 1024 + 1)}}
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=json.dumps(manifest), check=False)
    assert r.returncode != 0
    assert 'ConfigMap "big" is invalid' in r.stderr
    assert "Too long: may not be more than 1048576 bytes" in r.stderr, r.stderr
    big = tmp_path / "k"
    big.write_text("x" * (1024 * 1024 + 1))
    r = berth.kubectl("create", "secret", "generic", "big", "-n", ns, f"--from-file={big}",
                      check=False)
    assert 'Secret "big" is invalid: data: Too long: may not be more than 1048576 bytes' \
        in r.stderr, r.stderr
    assert berth.core.list_namespaced_secret(ns, field_selector="metadata.name=big").items == []
    berth.kubectl("create", "configmap", "fits", "-n", ns, "--from-literal=k=" + "x" * 1000)


def test_plain_http_to_the_https_port_gets_go_s_400(berth):
    import socket
    from urllib.parse import urlparse
    u = urlparse(berth.url)
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.0 400 Bad Request"), reply
    assert b"Client sent an HTTP request to an HTTPS server." in reply


def test_readyz_and_livez_list_their_checks_when_verbose(berth):
    r = berth.kubectl("get", "--raw", "/readyz?verbose")
    lines = r.stdout.splitlines()
    for check in ("[+]ping ok", "[+]etcd ok", "[+]informer-sync ok", "[+]shutdown ok",
                  "[+]poststarthook/berth-control-loops ok"):
        assert check in lines, r.stdout
    assert lines[-1] == "readyz check passed"
    assert berth.kubectl("get", "--raw", "/livez?verbose").stdout.splitlines()[-1] == \
        "livez check passed"
    assert berth.kubectl("get", "--raw", "/readyz").stdout == "ok"
    assert berth.kubectl("get", "--raw", "/readyz/etcd").stdout == "ok"
    excluded = berth.kubectl("get", "--raw", "/readyz?verbose&exclude=etcd").stdout
    assert "[+]etcd excluded: ok" in excluded.splitlines()


RFC1123 = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
           "'-' or '.', and must start and end with an alphanumeric character")


def test_generate_name_is_validated_as_a_name_prefix(berth, raw, ns):
    """As upstream: a trailing '-' is masked (`foo-` is fine); `foo.` and `Foo-` are 422 on
    metadata.generateName (and `Foo-` on the generated name too), and nothing is stored."""

    def create(prefix):
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"generateName": prefix}})
        return raw.request("POST", f"/api/v1/namespaces/{ns}/configmaps", body)

    ok = create("foo-")
    assert ok.status_code == 201 and ok.json()["metadata"]["name"].startswith("foo-")
    for prefix in ["foo.", "Foo-"]:
        r = create(prefix)
        assert r.status_code == 422, r.text
        status = r.json()
        assert status["reason"] == "Invalid"
        causes = {c["field"]: c for c in status["details"]["causes"]}
        assert causes["metadata.generateName"]["message"].startswith(
            f'Invalid value: "{prefix}": {RFC1123}'), causes
    names = [c["metadata"]["name"] for c in
             berth.kubectl_json("get", "configmaps", "-n", ns)["items"]]
    assert not [n for n in names if n.startswith(("foo.", "Foo-"))]


def test_unknown_fields_are_named_whatever_their_value(berth, ns):
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "typo", "labelz": {}}, "dta": {}}
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=cm, check=False)
    assert r.returncode != 0
    assert ('ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
            'unknown field "dta", unknown field "metadata.labelz"') in r.stderr, r.stderr
    bad = pod("emptytypo")
    bad["spec"]["containerz"] = []
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=bad, check=False)
    assert 'unknown field "spec.containerz"' in r.stderr, r.stderr
    assert pod_names(berth, ns) == []


def test_unknown_fields_are_dropped_with_a_warning_unless_strict(berth, raw, ns):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "warned"},
          "data": {"a": "1"}, "dta": {"b": "2"}}
    r = berth.kubectl("create", "-f", "-", "-n", ns, "--validate=warn", stdin=cm)
    assert 'Warning: unknown field "dta"' in r.stderr, r.stderr
    stored = json.loads(berth.kubectl("get", "cm", "warned", "-n", ns, "-o", "json").stdout)
    assert "dta" not in stored and stored["data"] == {"a": "1"}

    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("patched"))
    before = berth.core.read_namespaced_pod("patched", ns).metadata.resource_version
    path = f"/api/v1/namespaces/{ns}/pods/patched"
    body = json.dumps({"metadata": {"labels": {"a": "b"}}, "spec": {"bogus": 1}})
    r = raw.request("PATCH", path, body, content_type="application/merge-patch+json",
                    fieldValidation="Strict")
    assert_status(r, 400, "BadRequest", 'strict decoding error: unknown field "spec.bogus"')
    assert berth.core.read_namespaced_pod("patched", ns).metadata.resource_version == before
    r = raw.request("PATCH", path, body, content_type="application/merge-patch+json")
    assert r.status_code == 200, r.text
    assert r.headers["Warning"] == '299 - "unknown field \\"spec.bogus\\""'
    assert "bogus" not in r.json()["spec"] and r.json()["metadata"]["labels"] == {"a": "b"}
    stored = json.loads(berth.kubectl("get", "pod", "patched", "-n", ns, "-o", "json").stdout)
    assert "bogus" not in stored["spec"]


def test_every_kind_is_checked_against_its_schema(berth, ns):
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r"}, "rules": [{"verbz": ["get"], "resources": ["pods"],
                                                  "apiGroups": [""]}]}
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=role, check=False)
    assert 'unknown field "rules[0].verbz"' in r.stderr, r.stderr
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}},
                "scheduel": "x"}}
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=cron, check=False)
    assert 'unknown field "spec.scheduel"' in r.stderr, r.stderr
    assert berth.kubectl("get", "roles,cronjobs", "-n", ns, "-o", "name").stdout.strip() == ""
