"""OpenAPI v2/v3 with real schemas (issue 15 item 7): `kubectl explain` prints upstream's
descriptions, kubectl validates server-side and computes apply patches from the published
patch strategies, and the Python client reads the documents."""

import json

from conftest import eventually  # noqa: F401 - harness import keeps the module self-describing


def explain(berth, *args):
    return berth.kubectl("explain", *args).stdout


def test_explain_pod_tolerations(berth):
    out = explain(berth, "pod.spec.tolerations")
    assert "KIND:       Pod" in out
    assert "VERSION:    v1" in out
    assert "FIELD: tolerations <[]Toleration>" in out
    assert "If specified, the pod's tolerations." in out
    assert "tolerationSeconds\t<integer>" in out
    assert "TolerationSeconds represents the period of time the toleration" in out
    for field in ("effect", "key", "operator", "value"):
        assert f"  {field}\t<string>" in out, out


def test_explain_from_the_v2_document(berth):
    # kubectl reads /openapi/v2 as protobuf for this output.
    out = explain(berth, "pod.spec.tolerations", "--output=plaintext-openapiv2")
    assert "KIND:     Pod" in out, out
    assert "RESOURCE: tolerations <[]Object>" in out, out
    assert "If specified, the pod's tolerations." in out
    assert "tolerationSeconds\t<integer>" in out
    out = explain(berth, "deployments.spec.strategy", "--output=plaintext-openapiv2")
    assert "VERSION:  apps/v1" in out, out
    assert "rollingUpdate\t<Object>" in out, out


def test_explain_pods_with_api_version(berth):
    out = explain(berth, "pods", "--api-version=v1")
    assert "Pod is a collection of containers that can run on a host." in out
    for field in ("apiVersion", "kind", "metadata", "spec", "status"):
        assert f"  {field}\t<" in out, out


def test_explain_deployment_strategy_recursive(berth):
    out = explain(berth, "deployment.spec.strategy", "--recursive")
    assert "GROUP:      apps" in out
    assert "KIND:       Deployment" in out
    assert "rollingUpdate\t<RollingUpdateDeployment>" in out
    assert "maxSurge\t<IntOrString>" in out
    assert "maxUnavailable\t<IntOrString>" in out
    assert "type\t<string>" in out


def test_explain_other_groups(berth):
    out = explain(berth, "cronjobs.spec")
    assert "GROUP:      batch" in out
    assert "schedule\t<string> -required-" in out
    assert "The schedule in Cron format" in out
    out = explain(berth, "priorityclass")
    assert "GROUP:      scheduling.k8s.io" in out
    assert "PriorityClass defines mapping from a priority class name" in out
    assert "value\t<integer> -required-" in out
    out = explain(berth, "poddisruptionbudget")
    assert "GROUP:      policy" in out
    assert "PodDisruptionBudget is an object to define the max disruption" in out
    out = explain(berth, "deployment.spec.template.spec.containers.resources.limits")
    assert "<map[string]Quantity>" in out


def get(api, path, query=None, accept="application/json"):
    """A plain GET through the Python client's authenticated transport."""
    method, url, headers, body, _ = api.param_serialize(
        "GET", path, query_params=query or [], header_params={"Accept": accept},
        auth_settings=["BearerToken"])
    resp = api.call_api(method, url, header_params=headers, body=body)
    resp.read()
    return resp


def test_python_client_reads_both_documents(berth):
    api = berth.api_client
    resp = get(api, "/openapi/v2")
    assert resp.status == 200
    v2 = json.loads(resp.data)
    assert v2["swagger"] == "2.0"
    pod = v2["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [
        {"group": "", "version": "v1", "kind": "Pod"}]
    containers = v2["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    index = json.loads(get(api, "/openapi/v3").data)
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    path, query = url.split("?", 1)
    resp = get(api, path, [tuple(query.split("=", 1))])
    assert resp.status == 200
    assert resp.getheader("Cache-Control") == "public, immutable"
    apps = json.loads(resp.data)
    deployment = apps["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "version": "v1", "kind": "Deployment"}]
    patch = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]


def test_apply_with_typo_fails_server_side(berth, ns):
    manifest = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "typo", "namespace": ns},
        "spec": {"selector": {"matchLabels": {"app": "typo"}},
                 "template": {"metadata": {"labels": {"app": "typo"}},
                              "spec": {"contaners": [{"name": "c", "image": "nginx"}]}}},
    }
    r = berth.kubectl("apply", "-f", "-", stdin=manifest, check=False)
    assert r.returncode != 0
    assert 'unknown field "spec.template.spec.contaners"' in r.stderr, r.stderr
    assert berth.kubectl("get", "deployment", "typo", "-n", ns, check=False).returncode != 0


def deployment(ns, containers, tolerations=None):
    spec = {"schedulerName": "e2e-manual", "containers": containers}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}},
    }


def test_reapply_merges_lists_by_the_published_keys(berth, ns):
    first = deployment(ns, [
        {"name": "app", "image": "nginx:1.26", "ports": [{"containerPort": 80}]},
        {"name": "sidecar", "image": "busybox:1.36"},
    ], tolerations=[{"key": "a", "operator": "Exists", "effect": "NoSchedule"}])
    berth.kubectl("apply", "-f", "-", stdin=first)
    second = deployment(ns, [
        {"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
        {"name": "sidecar", "image": "busybox:1.36"},
    ], tolerations=[{"key": "a", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "b", "operator": "Equal", "value": "x", "effect": "NoExecute"}])
    # -v=8 logs the requests: the patch is computed from the apps/v1 v3 document (kubectl
    # no longer falls back to /openapi/v2 or its compiled-in types) with the merge keys.
    r = berth.kubectl("apply", "-f", "-", "-v=8", stdin=second)
    assert "configured" in r.stdout
    assert "/openapi/v3/apis/apps/v1?hash=" in r.stderr
    assert "/openapi/v2" not in r.stderr
    assert "error calculating patch" not in r.stderr
    assert "$setElementOrder/containers" in r.stderr
    got = berth.kubectl_json("get", "deployment", "web", "-n", ns)["spec"]["template"]["spec"]
    assert [(c["name"], c["image"]) for c in got["containers"]] == [
        ("app", "nginx:1.27"), ("sidecar", "busybox:1.36")]
    assert [p["containerPort"] for p in got["containers"][0]["ports"]] == [80]
    assert [(t["key"], t["effect"]) for t in got["tolerations"]] == [
        ("a", "NoSchedule"), ("b", "NoExecute")]
    # Dropping a container and a toleration from the manifest removes exactly those.
    third = deployment(ns, [{"name": "app", "image": "nginx:1.27",
                             "ports": [{"containerPort": 80}]}],
                       tolerations=[{"key": "b", "operator": "Equal", "value": "x",
                                     "effect": "NoExecute"}])
    berth.kubectl("apply", "-f", "-", stdin=third)
    got = berth.kubectl_json("get", "deployment", "web", "-n", ns)["spec"]["template"]["spec"]
    assert [c["name"] for c in got["containers"]] == ["app"]
    assert [t["key"] for t in got["tolerations"]] == ["b"]
