"""CustomResourceDefinitions as an operator's user meets them: the CRD applied, its kind
served with a schema (defaults, pruning, types, CEL rules), printer columns, `kubectl scale`,
watch, and deleting the CRD deleting its objects (upstream's
test/e2e/apimachinery/custom_resource_definition.go, crd_validation_rules.go, crd_watch.go,
field_validation.go)."""

import json
import queue
import threading
import time

import pytest
from conftest import KubectlError, eventually, to_yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

GROUP = "stable.example.com"


def crd(plural="widgets", kind="Widget", scope="Namespaced"):
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                      "shortNames": [plural[:2] + "x"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas",
                              "statusReplicasPath": ".status.replicas",
                              "labelSelectorPath": ".status.selector"},
                },
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "x-kubernetes-validations": [{
                                "rule": "self.minReplicas <= self.replicas",
                                "message": "replicas should be greater than or equal to minReplicas",
                            }],
                            "properties": {
                                "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                                "minReplicas": {"type": "integer", "default": 0},
                                "color": {"type": "string", "default": "blue",
                                          "enum": ["blue", "green", "red"]},
                                "ports": {
                                    "type": "array",
                                    "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["name"],
                                    "items": {"type": "object", "required": ["name"],
                                              "properties": {"name": {"type": "string"},
                                                             "port": {"type": "integer"}}},
                                },
                            },
                        },
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"},
                            "selector": {"type": "string"},
                        }},
                    },
                }},
            }],
        },
    }


def widget(name, ns, **spec):
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


@pytest.fixture(scope="module")
def widgets(berth):
    berth.kubectl("apply", "-f", "-", stdin=to_yaml([crd()]))
    berth.kubectl("wait", "--for", "condition=established", "--timeout=60s",
                  f"crd/widgets.{GROUP}")
    yield
    berth.kubectl("delete", "crd", f"widgets.{GROUP}", "--ignore-not-found", check=False)


def custom(berth):
    return k8s.CustomObjectsApi(berth.api_client)


def test_a_crd_is_established_and_listed_in_discovery(berth, widgets):
    got = berth.kubectl_json("get", "crd", f"widgets.{GROUP}")
    conditions = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conditions["Established"] == "True" and conditions["NamesAccepted"] == "True"
    assert got["status"]["acceptedNames"]["kind"] == "Widget"
    assert got["status"]["storedVersions"] == ["v1"]
    assert "customresourcecleanup.apiextensions.k8s.io" in got["metadata"]["finalizers"]
    out = berth.kubectl("api-resources", "--api-group", GROUP).stdout
    line = [l for l in out.splitlines() if l.startswith("widgets")][0]
    assert "wix" in line and f"{GROUP}/v1" in line and "true" in line and "Widget" in line


def test_kubectl_explain_reads_the_published_schema(berth, widgets):
    out = berth.kubectl("explain", "widgets.spec").stdout
    assert "KIND:       Widget" in out and "VERSION:    v1" in out
    for field in ("replicas", "minReplicas", "color", "ports"):
        assert field in out


def v2_definitions(berth):
    return json.loads(berth.kubectl("get", "--raw", "/openapi/v2").stdout)["definitions"]


def test_openapi_v2_publishes_custom_kinds_and_follows_the_crds(berth, widgets):
    defs = v2_definitions(berth)
    widget_def = defs["com.example.stable.v1.Widget"]
    assert widget_def["x-kubernetes-group-version-kind"] == [
        {"group": GROUP, "version": "v1", "kind": "Widget"}]
    assert set(widget_def["properties"]["spec"]["properties"]) >= {"replicas", "color", "ports"}
    assert widget_def["properties"]["apiVersion"]["type"] == "string"
    assert "com.example.stable.v1.WidgetList" in defs
    assert "io.k8s.api.core.v1.Pod" in defs  # the built-in kinds stay
    # kubectl reads v2 as protobuf for this output.
    out = berth.kubectl("explain", "widgets.spec", "--output=plaintext-openapiv2").stdout
    assert "KIND:     Widget" in out and f"VERSION:  {GROUP}/v1" in out, out
    for field in ("replicas", "minReplicas", "color", "ports"):
        assert f"   {field}\t<" in out, out
    # A CRD added appears; removed, it goes.
    gadgets = crd(plural="gadgets", kind="Gadget")
    berth.kubectl("apply", "-f", "-", stdin=to_yaml([gadgets]))
    assert "com.example.stable.v1.Gadget" in v2_definitions(berth)
    berth.kubectl("delete", "crd", f"gadgets.{GROUP}", "--timeout=60s")
    eventually(lambda: "com.example.stable.v1.Gadget" not in v2_definitions(berth),
               what="the Gadget definition gone from /openapi/v2")


def test_client_side_apply_of_a_custom_resource_patches_it(berth, ns, widgets):
    berth.kubectl("apply", "-n", ns, "-f", "-", stdin=to_yaml([widget("ca", ns, replicas=1)]))
    obj = widget("ca", ns, replicas=3, color="green")
    berth.kubectl("apply", "-n", ns, "-f", "-", stdin=to_yaml([obj]))
    got = berth.kubectl_json("get", "widget", "ca", "-n", ns)
    assert got["spec"]["replicas"] == 3 and got["spec"]["color"] == "green"
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]


def test_an_invalid_crd_is_refused_with_upstreams_words(berth):
    bad = crd(plural="gadgets", kind="Gadget")
    bad["metadata"]["name"] = "gadget.wrong.com"
    r = berth.kubectl("apply", "-f", "-", stdin=to_yaml([bad]), check=False)
    assert r.returncode != 0
    assert 'metadata.name: Invalid value: "gadget.wrong.com": must be spec.names.plural+"."+spec.group' in r.stderr


def test_a_defaulted_field_is_set_and_printer_columns_show(berth, ns, widgets):
    berth.kubectl("apply", "-n", ns, "-f", "-", stdin=to_yaml([widget("w1", ns, replicas=2)]))
    got = berth.kubectl_json("get", "widget", "w1", "-n", ns)
    assert got["spec"] == {"replicas": 2, "minReplicas": 0, "color": "blue"}
    out = berth.kubectl("get", "widgets", "-n", ns).stdout.splitlines()
    assert out[0].split() == ["NAME", "REPLICAS", "COLOR", "AGE"]
    assert out[1].split()[:3] == ["w1", "2", "blue"]
    # Short name, and `kubectl get all` includes kinds of category `all`.
    assert "w1" in berth.kubectl("get", "wix", "-n", ns).stdout
    assert "widget.stable.example.com/w1" in berth.kubectl("get", "all", "-n", ns, "-o", "name").stdout


def test_an_invalid_object_is_refused_with_the_rules_message_and_types(berth, ns, widgets):
    r = berth.kubectl("apply", "-n", ns, "-f", "-", check=False,
                      stdin=to_yaml([widget("w2", ns, replicas=1, minReplicas=3)]))
    assert r.returncode != 0
    assert ('The Widget "w2" is invalid: spec: Invalid value: "object": '
            "replicas should be greater than or equal to minReplicas") in r.stderr, r.stderr
    api = custom(berth)
    with pytest.raises(ApiException) as e:
        api.create_namespaced_custom_object(GROUP, "v1", ns, "widgets",
                                            widget("w3", ns, replicas="string"))
    assert e.value.status == 422
    msg = json.loads(e.value.body)["message"]
    assert ('spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'
            in msg), msg
    assert msg.startswith('Widget.stable.example.com "w3" is invalid')
    with pytest.raises(ApiException) as e:
        api.create_namespaced_custom_object(GROUP, "v1", ns, "widgets",
                                            widget("w4", ns, replicas=20, color="purple"))
    msg = json.loads(e.value.body)["message"]
    assert "spec.replicas in body should be less than or equal to 10" in msg
    assert 'spec.color: Unsupported value: "purple": supported values: "blue", "green", "red"' in msg
    with pytest.raises(ApiException) as e:
        api.create_namespaced_custom_object(GROUP, "v1", ns, "widgets",
                                            widget("w5", ns, ports=[{"name": "a"}, {"name": "a"}]))
    assert "spec.ports[1]: Duplicate value" in json.loads(e.value.body)["message"]


def test_unknown_fields_are_pruned_or_refused_per_field_validation(berth, ns, widgets):
    obj = widget("w6", ns, replicas=1, bogus=True)
    r = berth.kubectl("create", "-n", ns, "--validate=strict", "-f", "-", check=False,
                      stdin=to_yaml([obj]))
    assert r.returncode != 0 and 'unknown field "spec.bogus"' in r.stderr, r.stderr
    r = berth.kubectl("create", "-n", ns, "--validate=warn", "-f", "-", stdin=to_yaml([obj]))
    assert 'unknown field "spec.bogus"' in r.stderr
    got = berth.kubectl_json("get", "widget", "w6", "-n", ns)
    assert "bogus" not in got["spec"]
    api = custom(berth)
    obj = widget("w7", ns, replicas=1, bogus=True)
    api.create_namespaced_custom_object(GROUP, "v1", ns, "widgets", obj, field_validation="Ignore")
    assert "bogus" not in api.get_namespaced_custom_object(GROUP, "v1", ns, "widgets", "w7")["spec"]


def test_kubectl_scale_and_patch_a_custom_resource(berth, ns, widgets):
    berth.kubectl("apply", "-n", ns, "-f", "-", stdin=to_yaml([widget("ws", ns, replicas=1)]))
    assert berth.kubectl("scale", "widget/ws", "--replicas=4", "-n", ns).returncode == 0
    assert berth.kubectl_json("get", "widget", "ws", "-n", ns)["spec"]["replicas"] == 4
    scale = custom(berth).get_namespaced_custom_object_scale(GROUP, "v1", ns, "widgets", "ws")
    assert scale["spec"]["replicas"] == 4
    berth.kubectl("patch", "widget", "ws", "-n", ns, "--type=merge", "-p", '{"spec":{"color":"red"}}')
    assert berth.kubectl_json("get", "widget", "ws", "-n", ns)["spec"]["color"] == "red"
    r = berth.kubectl("patch", "widget", "ws", "-n", ns, "-p", '{"spec":{"color":"green"}}', check=False)
    assert r.returncode != 0 and "unknown format" in r.stderr, r.stderr
    # The status subresource: the main resource does not change the status, status does.
    custom(berth).patch_namespaced_custom_object_status(
        GROUP, "v1", ns, "widgets", "ws", {"status": {"replicas": 4, "selector": "app=ws"}})
    got = berth.kubectl_json("get", "widget", "ws", "-n", ns)
    assert got["status"] == {"replicas": 4, "selector": "app=ws"}


def test_watch_and_selectors_on_custom_resources(berth, ns, widgets):
    api = custom(berth)
    events = queue.Queue()

    def watch():
        from kubernetes import watch as kwatch
        w = kwatch.Watch()
        for e in w.stream(api.list_namespaced_custom_object, GROUP, "v1", ns, "widgets",
                          timeout_seconds=20):
            events.put((e["type"], e["object"]["metadata"]["name"]))
            if e["type"] == "DELETED":
                w.stop()

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    time.sleep(1)
    obj = widget("wa", ns, replicas=1)
    obj["metadata"]["labels"] = {"tier": "front"}
    api.create_namespaced_custom_object(GROUP, "v1", ns, "widgets", obj)
    api.create_namespaced_custom_object(GROUP, "v1", ns, "widgets", widget("wb", ns, replicas=1))
    listed = api.list_namespaced_custom_object(GROUP, "v1", ns, "widgets", label_selector="tier=front")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["wa"]
    listed = api.list_namespaced_custom_object(GROUP, "v1", ns, "widgets",
                                               field_selector="metadata.name=wb")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["wb"]
    api.delete_namespaced_custom_object(GROUP, "v1", ns, "widgets", "wa")
    t.join(25)
    seen = []
    while not events.empty():
        seen.append(events.get())
    assert ("ADDED", "wa") in seen and ("DELETED", "wa") in seen, seen


def junctor_crd():
    """A kind whose spec says which fields go together with allOf/anyOf/oneOf/not, as
    operators' CRDs do (one of two sources, at least one target, a forbidden value)."""
    c = crd(plural="pipes", kind="Pipe")
    c["spec"]["names"].pop("shortNames")
    version = c["spec"]["versions"][0]
    version.pop("subresources")
    version.pop("additionalPrinterColumns")
    version["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "properties": {
                "url": {"type": "string"}, "secret": {"type": "string"},
                "name": {"type": "string", "anyOf": [{"maxLength": 5}, {"pattern": "^x+$"}]},
                "port": {"type": "integer", "not": {"enum": [0]},
                         "allOf": [{"minimum": 1}, {"maximum": 100}]},
            },
            "oneOf": [{"required": ["url"]}, {"required": ["secret"]}],
        }},
    }
    return c


@pytest.fixture
def pipes(berth):
    berth.kubectl("apply", "-f", "-", stdin=to_yaml([junctor_crd()]))
    berth.kubectl("wait", "--for", "condition=established", "--timeout=60s", f"crd/pipes.{GROUP}")
    yield
    berth.kubectl("delete", "crd", f"pipes.{GROUP}", "--ignore-not-found", check=False)


def pipe(name, ns, spec):
    return {"apiVersion": f"{GROUP}/v1", "kind": "Pipe",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_junctors_in_a_schema_validate_objects_with_upstreams_words(berth, ns, pipes):
    berth.kubectl("apply", "-n", ns, "-f", "-", stdin=to_yaml([pipe("ok", ns, {"url": "u", "port": 8})]))
    for spec, want in [
        ({}, '<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). '
             'Found none valid'),
        ({"url": "u", "secret": "s"}, '"spec" must validate one and only one schema (oneOf). '
                                      'Found 2 valid alternatives'),
        ({"url": "u", "name": "abcdefg"},
         '<nil>: Invalid value: "": "spec.name" must validate at least one schema (anyOf)'),
        ({"url": "u", "port": 0}, '"spec.port" must not validate the schema (not)'),
        ({"url": "u", "port": 200},
         "spec.port: Invalid value: 200: spec.port in body should be less than or equal to 100"),
        ({"url": "u", "port": 200}, '"spec.port" must validate all the schemas (allOf)'),
    ]:
        r = berth.kubectl("apply", "-n", ns, "-f", "-", check=False,
                          stdin=to_yaml([pipe("bad", ns, spec)]))
        assert r.returncode != 0, spec
        assert 'The Pipe "bad" is invalid' in r.stderr and want in r.stderr, (spec, r.stderr)


def test_a_crd_with_types_inside_junctors_is_refused_with_upstreams_words(berth):
    bad = junctor_crd()
    spec = bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["oneOf"][0]["type"] = "object"
    spec["anyOf"] = [{"properties": {"metadata": {"type": "object"}}}]
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["allOf"] = [
        {"properties": {"spec": {"properties": {"other": {"minLength": 1}}}}}]
    r = berth.kubectl("apply", "-f", "-", stdin=to_yaml([bad]), check=False)
    assert r.returncode != 0
    p = "spec.versions[0].schema.openAPIV3Schema"
    for want in [
        f"{p}.properties[spec].oneOf[0].type: Forbidden: must be empty to be structural",
        f"{p}.properties[spec].anyOf[0].properties[metadata]: Forbidden: "
        "must not be specified in a nested context",
        f"{p}.properties[spec].properties[other]: Required value: because it is defined in "
        f"{p}.allOf[0].properties[spec].properties[other]",
    ]:
        assert want in r.stderr, r.stderr


def test_deleting_the_crd_deletes_its_objects_and_stops_serving_it(berth, ns):
    gadgets = crd(plural="gadgets", kind="Gadget")
    berth.kubectl("apply", "-f", "-", stdin=to_yaml([gadgets]))
    berth.kubectl("wait", "--for", "condition=established", "--timeout=60s", f"crd/gadgets.{GROUP}")
    obj = {"apiVersion": f"{GROUP}/v1", "kind": "Gadget",
           "metadata": {"name": "g1", "namespace": ns}, "spec": {"replicas": 1}}
    berth.kubectl("apply", "-n", ns, "-f", "-", stdin=to_yaml([obj]))
    assert "g1" in berth.kubectl("get", "gadgets", "-n", ns).stdout
    berth.kubectl("delete", "crd", f"gadgets.{GROUP}", "--timeout=60s")
    r = berth.kubectl("get", "crd", f"gadgets.{GROUP}", check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr
    api = custom(berth)
    with pytest.raises(ApiException) as e:
        api.get_namespaced_custom_object(GROUP, "v1", ns, "gadgets", "g1")
    assert e.value.status == 404
    # Created again, the kind is empty: the objects went with the CRD.
    berth.kubectl("apply", "-f", "-", stdin=to_yaml([gadgets]))
    eventually(lambda: api.list_namespaced_custom_object(GROUP, "v1", ns, "gadgets")["items"] == [],
               what="an empty gadgets list")
    berth.kubectl("delete", "crd", f"gadgets.{GROUP}")


def test_a_crd_on_etcd_is_served_by_every_replica(tmp_path):
    """Two `berth serve` replicas over one etcd: a CRD created through one is served by the
    other (which follows the stored CRDs), with its schema's defaults."""
    import os

    from conftest import Berth
    from etcd_support import EtcdCluster, etcd_installed

    if not etcd_installed():
        if os.environ.get("CI"):
            raise AssertionError("etcd is not installed")
        pytest.skip("etcd is not installed (apt-get install etcd-server)")
    cluster = EtcdCluster.start(1, tmp_path / "etcd")
    replicas = []
    try:
        for i in range(2):
            replicas.append(Berth.start(tmp_path / f"r{i}", nodes=0,
                                        args=("--etcd-servers", cluster.urls)))
        a, b = replicas
        a.kubectl("apply", "-f", "-", stdin=to_yaml([crd()]))
        a.kubectl("create", "namespace", "crd-etcd")

        def served_by_b():
            r = b.kubectl("get", "widgets", "-n", "crd-etcd", check=False)
            return r.returncode == 0

        eventually(served_by_b, what="widgets served by the second replica")
        b.kubectl("apply", "-n", "crd-etcd", "-f", "-",
                  stdin=to_yaml([widget("we", "crd-etcd", replicas=2)]))
        got = a.kubectl_json("get", "widget", "we", "-n", "crd-etcd")
        assert got["spec"] == {"replicas": 2, "minReplicas": 0, "color": "blue"}
    finally:
        for r in replicas:
            r.stop()
        cluster.stop()


def ratchet_crd(name_schema, size_schema):
    """A kind whose spec's name and size rules a test tightens after objects exist."""
    c = crd(plural="ratchets", kind="Ratchet")
    c["spec"]["names"].pop("shortNames")
    version = c["spec"]["versions"][0]
    version.pop("subresources")
    version.pop("additionalPrinterColumns")
    version["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "name": name_schema, "size": size_schema, "note": {"type": "string"}}}},
    }
    return c


def test_a_tightened_schema_does_not_block_updates_of_values_left_as_they_were(berth, ns):
    """CRD validation ratcheting (upstream's CRDValidationRatcheting, GA in 1.33): an object
    written under an older schema keeps its now-invalid values through unrelated updates;
    changing such a value to another invalid one is refused with the schema's words."""
    loose = ratchet_crd({"type": "string"}, {"type": "integer"})
    berth.kubectl("apply", "-f", "-", stdin=to_yaml([loose]))
    berth.kubectl("wait", "--for", "condition=established", "--timeout=60s",
                  f"crd/ratchets.{GROUP}")
    try:
        obj = {"apiVersion": f"{GROUP}/v1", "kind": "Ratchet",
               "metadata": {"name": "old", "namespace": ns},
               "spec": {"name": "much-too-long", "size": 9, "note": "a"}}
        berth.kubectl("apply", "-f", "-", stdin=to_yaml([obj]))
        tight = ratchet_crd(
            {"type": "string", "maxLength": 5},
            {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self <= 5", "message": "size must be at most 5"}]})
        berth.kubectl("apply", "-f", "-", stdin=to_yaml([tight]))

        def refuses_new_objects():
            fresh = dict(obj, metadata={"name": "new", "namespace": ns})
            r = berth.kubectl("create", "-f", "-", stdin=to_yaml([fresh]), check=False)
            if r.returncode == 0:  # the old schema still served it: try again
                berth.kubectl("delete", "ratchet", "new", "-n", ns, check=False)
            return r.returncode != 0 and "Too long" in r.stderr

        eventually(refuses_new_objects, timeout=30, what="the tightened schema in force")
        # Another field changes: the old values are not judged again.
        berth.kubectl("patch", "ratchet", "old", "-n", ns, "--type=merge",
                      "-p", '{"spec": {"note": "b"}}')
        got = berth.kubectl_json("get", "ratchet", "old", "-n", ns)
        assert got["spec"] == {"name": "much-too-long", "size": 9, "note": "b"}
        # Changing a bad value to another bad value is judged, with the schema's words.
        r = berth.kubectl("patch", "ratchet", "old", "-n", ns, "--type=merge",
                          "-p", '{"spec": {"name": "still-too-long"}}', check=False)
        assert r.returncode != 0
        assert ('The Ratchet "old" is invalid: spec.name: Too long: '
                'may not be more than 5 bytes') in r.stderr, r.stderr
        r = berth.kubectl("patch", "ratchet", "old", "-n", ns, "--type=merge",
                          "-p", '{"spec": {"size": 8}}', check=False)
        assert r.returncode != 0
        assert ('spec.size: Invalid value: "integer": size must be at most 5'
                in r.stderr), r.stderr
        # A good value is taken, and from then on it is held to the schema.
        berth.kubectl("patch", "ratchet", "old", "-n", ns, "--type=merge",
                      "-p", '{"spec": {"name": "short", "size": 5}}')
    finally:
        berth.kubectl("delete", "crd", f"ratchets.{GROUP}", "--ignore-not-found", check=False)
