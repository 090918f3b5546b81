"""What upstream's API-machinery conformance specs check of kinds berth serves (issues 38, 39):
field selectors on absent fields, chunked lists, Tables of kinds without metadata, status writes,
unconditional updates, validation, strategic-merge order, discovery, watch-lists and OIDC
discovery, each reproduced with kubectl or the Python client as the upstream spec drives it."""

import base64
import json
import time

import pytest
import requests
from conftest import eventually, pod
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException


def raw(berth, method, path, token=None, headers=None, **kwargs):
    """A plain HTTPS request with the admin token (or `token`)."""
    h = {"Authorization": f"Bearer {token or berth.token()}", **(headers or {})}
    return requests.request(method, berth.url + path, headers=h, verify=berth.ca_file(),
                            timeout=30, **kwargs)


def config_maps(berth, ns, n, labels=None):
    for i in range(n):
        berth.core.create_namespaced_config_map(ns, k8s.V1ConfigMap(
            metadata=k8s.V1ObjectMeta(name=f"cm-{i:03d}", labels=labels)))


# ---- field selectors ---------------------------------------------------------------------


def test_absent_booleans_select_as_false(berth, ns):
    # The e2e framework lists schedulable nodes this way before every suite.
    nodes = berth.kubectl_json("get", "nodes", "--field-selector", "spec.unschedulable=false")
    assert len(nodes["items"]) == berth.nodes
    berth.kubectl("apply", "-f", "-", stdin=pod("p", namespace=ns))
    pods = berth.core.list_namespaced_pod(ns, field_selector="spec.hostNetwork=false").items
    assert [p.metadata.name for p in pods] == ["p"]
    assert berth.core.list_namespaced_pod(ns, field_selector="spec.hostNetwork=true").items == []


def test_events_select_by_their_fields_in_both_apis(berth, ns):
    berth.core.create_namespaced_event(ns, k8s.CoreV1Event(
        metadata=k8s.V1ObjectMeta(name="e1"), reason="Started", type="Normal",
        involved_object=k8s.V1ObjectReference(kind="Pod", name="p", namespace=ns),
        source=k8s.V1EventSource(component="kubelet")))
    core = berth.core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=Pod,involvedObject.name=p,reason=Started,"
                           "type=Normal,source=kubelet").items
    assert [e.metadata.name for e in core] == ["e1"]
    # (The Python client cannot decode an events.k8s.io Event without eventTime: plain GETs.)
    path = f"/apis/events.k8s.io/v1/namespaces/{ns}/events"

    def names(selector):
        r = raw(berth, "GET", path, params={"fieldSelector": selector})
        assert r.status_code == 200, r.text
        return [e["metadata"]["name"] for e in r.json()["items"]]

    assert names("regarding.kind=Pod,regarding.name=p,reason=Started,type=Normal") == ["e1"]
    assert names("source=kubelet") == ["e1"]
    assert names("regarding.name=q") == []
    r = raw(berth, "GET", path, params={"fieldSelector": "involvedObject.name=p"})
    assert r.status_code == 400 and "field label not supported" in r.json()["message"]


# ---- chunking ----------------------------------------------------------------------------


def test_chunks_count_what_remains(berth, ns):
    config_maps(berth, ns, 25)
    # The namespace may hold a config map of its own (the root CA bundle).
    total = len(berth.core.list_namespaced_config_map(ns).items)
    assert total >= 25
    seen, token = [], None
    while True:
        page = berth.core.list_namespaced_config_map(ns, limit=10, _continue=token)
        seen += [c.metadata.name for c in page.items]
        token = page.metadata._continue
        if not token:
            assert page.metadata.remaining_item_count is None
            break
        assert len(page.items) == 10
        assert page.metadata.remaining_item_count + len(seen) == total
    assert len(seen) == total == len(set(seen))
    # With a selector the count is not known, as upstream leaves it out.
    selected = berth.core.list_namespaced_config_map(ns, limit=10, label_selector="!x")
    assert selected.metadata._continue and selected.metadata.remaining_item_count is None


def test_a_compacted_continue_token_answers_410_with_one_that_continues(berth_factory):
    b = berth_factory(nodes=1, args=("--etcd-compaction-interval", "1s"))
    ns = "chunks"
    b.create_namespace(ns)
    config_maps(b, ns, 30)
    first = b.core.list_namespaced_config_map(ns, limit=10)
    assert first.metadata._continue

    def expired():
        # Writes move the revision on, so the first page's revision is compacted away.
        b.core.create_namespaced_config_map("default", k8s.V1ConfigMap(
            metadata=k8s.V1ObjectMeta(generate_name="tick-")))
        try:
            b.core.list_namespaced_config_map(ns, limit=10, _continue=first.metadata._continue)
            return None
        except ApiException as e:
            return e

    e = eventually(expired, timeout=60, interval=0.5, what="the continue token to expire")
    status = json.loads(e.body)
    assert e.status == 410 and status["reason"] == "Expired"
    assert status["message"].startswith(
        "The provided continue parameter is too old to display a consistent list result.")
    inconsistent = status["metadata"]["continue"]
    second = b.core.list_namespaced_config_map(ns, limit=10, _continue=inconsistent)
    assert second.metadata.resource_version != first.metadata.resource_version
    assert len(second.items) == 10
    last_of_first = first.items[-1].metadata.name
    assert all(c.metadata.name > last_of_first for c in second.items)


# ---- tables, status writes, updates ------------------------------------------------------


def test_a_table_of_a_review_is_not_acceptable(berth):
    ssar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "list", "resource": "pods"}}}
    r = raw(berth, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=ssar,
            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert r.status_code == 406, r.text
    assert r.json()["reason"] == "NotAcceptable"


def test_a_namespace_status_patch_keeps_its_annotation(berth, ns):
    patched = berth.core.patch_namespace_status(
        ns, {"metadata": {"annotations": {"e2e-patched-ns-status": ns}},
             "status": {"conditions": [{"type": "StatusPatch", "status": "True",
                                        "reason": "E2E", "message": "patched"}]}})
    assert patched.metadata.annotations["e2e-patched-ns-status"] == ns
    assert patched.status.conditions[0].type == "StatusPatch"


def test_an_update_at_resource_version_0_is_unconditional(berth, ns):
    berth.core.create_namespaced_config_map(ns, k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name="cm"), data={"a": "1"}))
    berth.core.patch_namespaced_config_map("cm", ns, {"data": {"a": "2"}})
    updated = berth.core.replace_namespaced_config_map("cm", ns, k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name="cm", resource_version="0"), data={"a": "3"}))
    assert updated.data == {"a": "3"}


def test_deletion_moves_a_pods_generation_on(berth, ns):
    held = pod("p", namespace=ns)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    berth.kubectl("apply", "-f", "-", stdin=held)
    before = berth.core.read_namespaced_pod("p", ns).metadata.generation
    assert before == 1
    berth.core.delete_namespaced_pod("p", ns)
    after = berth.core.read_namespaced_pod("p", ns)
    assert after.metadata.deletion_timestamp is not None
    assert after.metadata.generation == before + 1
    berth.kubectl("patch", "pod", "p", "-n", ns, "--type=json", "-p",
                  json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]))


# ---- validation ---------------------------------------------------------------------------


def test_a_secret_with_an_empty_key_is_invalid(berth, ns):
    with pytest.raises(ApiException) as e:
        berth.core.create_namespaced_secret(ns, k8s.V1Secret(
            metadata=k8s.V1ObjectMeta(name="s"), data={"": base64.b64encode(b"v").decode()}))
    assert e.value.status == 422
    assert 'data[]: Invalid value: "": a valid config key must consist of alphanumeric' \
        in json.loads(e.value.body)["message"]


def test_invalid_sysctls_are_refused_and_valid_ones_pass(berth, ns):
    body = pod("sysctls", namespace=ns, securityContext={"sysctls": [
        {"name": "foo-", "value": "bar"}, {"name": "kernel.shmmax", "value": "100000000"},
        {"name": "safe-and-unsafe", "value": "100000000"}, {"name": "bar..", "value": "42"}]})
    r = berth.kubectl("create", "-f", "-", stdin=body, check=False)
    assert r.returncode != 0
    assert 'Invalid value: "foo-"' in r.stderr and 'Invalid value: "bar.."' in r.stderr
    assert "safe-and-unsafe" not in r.stderr and "kernel.shmmax" not in r.stderr


def test_strict_decoding_lists_unknown_fields_then_duplicates(berth, ns):
    body = ('{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "my-dep"},'
            ' "spec": {"unknownField": "foo", "replicas": 2, "replicas": 3,'
            ' "selector": {"matchLabels": {"app": "nginx"}},'
            ' "template": {"metadata": {"labels": {"app": "nginx"}},'
            ' "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}}')
    r = raw(berth, "POST", f"/apis/apps/v1/namespaces/{ns}/deployments?fieldValidation=Strict",
            data=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert ('strict decoding error: unknown field "spec.unknownField", '
            'duplicate field "spec.replicas"') in r.json()["message"]


# ---- strategic merge patch ----------------------------------------------------------------


def test_strategic_merge_puts_new_list_items_first(berth, ns):
    berth.kubectl("apply", "-f", "-", stdin=pod("p", namespace=ns))
    berth.kubectl("patch", "pod", "p", "-n", ns, "-p",
                  json.dumps({"metadata": {"finalizers": ["example.com/a"]}}))
    berth.kubectl("patch", "pod", "p", "-n", ns, "-p",
                  json.dumps({"metadata": {"finalizers": ["example.com/b"]}}))
    got = berth.core.read_namespaced_pod("p", ns).metadata.finalizers
    assert got == ["example.com/b", "example.com/a"]
    berth.kubectl("patch", "pod", "p", "-n", ns, "--type=json", "-p",
                  json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]))


# ---- discovery, root, watch-list, OIDC ----------------------------------------------------


def test_a_path_not_served_has_empty_details(berth):
    r = raw(berth, "GET", "/apis/nothing.example.com/v1/widgets")
    assert r.status_code == 404 and r.json()["details"] == {}


def test_the_root_lists_every_group_version(berth):
    paths = json.loads(berth.kubectl("get", "--raw", "/").stdout)["paths"]
    assert paths == sorted(paths)
    groups = json.loads(berth.kubectl("get", "--raw", "/apis").stdout)["groups"]
    for g in groups:
        for v in g["versions"]:
            assert f"/apis/{v['groupVersion']}" in paths
            listed = json.loads(berth.kubectl("get", "--raw", f"/apis/{v['groupVersion']}").stdout)
            assert listed["groupVersion"] == v["groupVersion"]
    for p in ["/api", "/api/v1", "/healthz", "/livez", "/readyz", "/version", "/openapi/v2",
              "/.well-known/openid-configuration", "/openid/v1/jwks"]:
        assert p in paths


def test_aggregated_discovery_lists_every_resource(berth):
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    aggregated = {}
    for path in ["/api", "/apis"]:
        doc = raw(berth, "GET", path, headers={"Accept": accept}).json()
        for group in doc["items"]:
            for v in group["versions"]:
                gv = f"{group['metadata'].get('name') or ''}/{v['version']}".lstrip("/")
                aggregated[gv] = sorted(r["resource"] for r in v["resources"])
    legacy_groups = raw(berth, "GET", "/apis").json()["groups"]
    gvs = ["v1"] + [v["groupVersion"] for g in legacy_groups for v in g["versions"]]
    assert sorted(aggregated) == sorted(gvs)
    for gv in gvs:
        path = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        listed = raw(berth, "GET", path).json()["resources"]
        assert aggregated[gv] == sorted(r["name"] for r in listed if "/" not in r["name"]), gv


def test_a_watch_list_sends_the_state_then_the_end_bookmark(berth, ns):
    config_maps(berth, ns, 3)
    r = raw(berth, "GET", f"/api/v1/namespaces/{ns}/configmaps", stream=True, params={
        "watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true", "timeoutSeconds": "5"})
    assert r.status_code == 200, r.text
    events = []
    for line in r.iter_lines():
        events.append(json.loads(line))
        if events[-1]["type"] == "BOOKMARK":
            break
    r.close()
    assert [e["type"] for e in events[:-1]] == ["ADDED"] * (len(events) - 1)
    names = [e["object"]["metadata"]["name"] for e in events[:-1]]
    assert {"cm-000", "cm-001", "cm-002"} <= set(names)
    end = events[-1]["object"]["metadata"]
    assert end["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(end["resourceVersion"]) >= max(
        int(e["object"]["metadata"]["resourceVersion"]) for e in events[:-1])
    r = raw(berth, "GET", f"/api/v1/namespaces/{ns}/configmaps",
            params={"watch": "true", "sendInitialEvents": "true"})
    assert r.status_code == 422 and "resourceVersionMatch to NotOlderThan" in r.text


def test_service_accounts_discover_the_token_issuer(berth, ns):
    berth.core.create_namespaced_service_account(ns, k8s.V1ServiceAccount(
        metadata=k8s.V1ObjectMeta(name="sa")))
    token = berth.kubectl("create", "token", "sa", "-n", ns).stdout.strip()
    config = raw(berth, "GET", "/.well-known/openid-configuration", token=token)
    assert config.status_code == 200, config.text
    doc = config.json()
    assert doc["issuer"] == "https://kubernetes.default.svc.cluster.local"
    assert doc["jwks_uri"].endswith("/openid/v1/jwks")
    assert doc["id_token_signing_alg_values_supported"] == ["RS256"]
    jwks = raw(berth, "GET", "/openid/v1/jwks", token=token)
    assert jwks.status_code == 200
    assert jwks.headers["Content-Type"] == "application/jwk-set+json"
    (key,) = jwks.json()["keys"]
    assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig"
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header["kid"] == key["kid"]
