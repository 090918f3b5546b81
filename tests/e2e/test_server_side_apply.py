"""Server-side apply with managedFields, as a kubectl user meets it: field ownership per
manager (`--field-manager`), conflicts between managers (409 naming the field and the other
manager), `--force-conflicts`, removal of fields the applier dropped, `before-first-apply` for
objects written before their first apply, `kubectl scale` taking `spec.replicas`, and
`fieldManager` required on a raw apply PATCH.

Tracking starts with an object's first apply (upstream's skip-non-applied manager): objects
that were never applied carry no managedFields."""

import json
import ssl
import urllib.error
import urllib.request

from conftest import eventually


def deployment(name, replicas=1, labels=None, image="nginx:1.27"):
    meta = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"schedulerName": "e2e-manual",
                                           "containers": [{"name": "c", "image": image}]}}}}


def configmap(name, labels=None, data=None):
    meta = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


def apply(berth, ns, manifest, manager, *flags, check=True):
    return berth.kubectl("apply", "--server-side", f"--field-manager={manager}", *flags,
                         "-n", ns, "-f", "-", stdin=manifest, check=check)


def managed(berth, ns, kind, name):
    obj = berth.kubectl_json("get", kind, name, "-n", ns, "--show-managed-fields")
    return obj, obj["metadata"].get("managedFields", [])


def entry(entries, manager, operation=None):
    found = [e for e in entries
             if e["manager"] == manager and (operation is None or e["operation"] == operation)]
    assert len(found) == 1, f"one entry of {manager} expected in {json.dumps(entries, indent=1)}"
    return found[0]


def owners_of_replicas(entries):
    return sorted(e["manager"] for e in entries if "f:replicas" in e["fieldsV1"].get("f:spec", {}))


def test_apply_creates_with_an_apply_entry_shown_only_on_request(berth, ns):
    out = apply(berth, ns, configmap("cm", labels={"a": "1"}, data={"k": "v"}), "a").stdout
    assert out.strip() == "configmap/cm serverside-applied"
    _, entries = managed(berth, ns, "configmap", "cm")
    e = entry(entries, "a")
    assert e["operation"] == "Apply" and e["apiVersion"] == "v1"
    assert e["fieldsType"] == "FieldsV1" and e["time"].endswith("Z")
    assert e["fieldsV1"] == {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:a": {}}}}
    # kubectl hides them by default.
    assert "managedFields" not in berth.kubectl("get", "configmap", "cm", "-n", ns,
                                                "-o", "yaml").stdout
    shown = berth.kubectl("get", "configmap", "cm", "-n", ns, "-o", "yaml",
                          "--show-managed-fields").stdout
    assert "managedFields:" in shown and "manager: a" in shown


def test_two_field_managers_conflicting(berth, ns):
    apply(berth, ns, deployment("d", replicas=2), "a")
    # b sets a field a owns to another value: 409 naming a and the field.
    r = apply(berth, ns, deployment("d", replicas=3), "b", check=False)
    assert r.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "a": .spec.replicas' in r.stderr, r.stderr
    assert "--force-conflicts" in r.stderr  # kubectl's advice on a conflict
    obj, entries = managed(berth, ns, "deployment", "d")
    assert obj["spec"]["replicas"] == 2
    # The same value: no conflict, both own it.
    apply(berth, ns, deployment("d", replicas=2), "b")
    _, entries = managed(berth, ns, "deployment", "d")
    assert owners_of_replicas(entries) == ["a", "b"]
    # --force-conflicts: b wins, a loses the field.
    apply(berth, ns, deployment("d", replicas=4), "b", "--force-conflicts")
    obj, entries = managed(berth, ns, "deployment", "d")
    assert obj["spec"]["replicas"] == 4
    assert owners_of_replicas(entries) == ["b"]
    assert "f:template" in entry(entries, "a", "Apply")["fieldsV1"]["f:spec"]
    # The deployment controller's status writes are tracked under its program's name, as
    # upstream's User-Agent prefix names them.
    def controller_entry():
        _, entries = managed(berth, ns, "deployment", "d")
        return [e for e in entries if e.get("subresource") == "status"]
    status = eventually(controller_entry, what="the controller's status entry")
    assert [(e["manager"], e["operation"]) for e in status] == [
        ("kube-controller-manager", "Update")], status


def test_fields_the_applier_dropped_are_removed(berth, ns):
    apply(berth, ns, configmap("drop", labels={"x": "1", "y": "2"}, data={"k": "v", "j": "w"}),
          "a")
    apply(berth, ns, configmap("drop", labels={"x": "1"}, data={"k": "v"}), "a")
    obj, entries = managed(berth, ns, "configmap", "drop")
    assert obj["metadata"]["labels"] == {"x": "1"}
    assert obj["data"] == {"k": "v"}
    # A container dropped from a deployment goes too.
    two = deployment("two")
    two["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    apply(berth, ns, two, "a")
    apply(berth, ns, deployment("two"), "a")
    obj, _ = managed(berth, ns, "deployment", "two")
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["c"]
    # A label another manager also applies stays when one of them drops it.
    apply(berth, ns, configmap("drop", labels={"shared": "s"}), "b")
    apply(berth, ns, configmap("drop", labels={"x": "1", "shared": "s"}, data={"k": "v"}), "a")
    apply(berth, ns, configmap("drop", labels={"x": "1"}, data={"k": "v"}), "a")
    obj, _ = managed(berth, ns, "configmap", "drop")
    assert obj["metadata"]["labels"] == {"x": "1", "shared": "s"}


def test_objects_written_before_the_first_apply_belong_to_before_first_apply(berth, ns):
    berth.kubectl("create", "-n", ns, "-f", "-", stdin=deployment("old", replicas=1))
    obj, entries = managed(berth, ns, "deployment", "old")
    assert entries == []  # never applied: nothing tracked
    r = apply(berth, ns, deployment("old", replicas=3), "a", check=False)
    assert r.returncode != 0
    assert ('conflict with "before-first-apply" using apps/v1: .spec.replicas'
            in r.stderr), r.stderr
    # Re-applying what is there takes shared ownership.
    apply(berth, ns, deployment("old", replicas=1), "a")
    _, entries = managed(berth, ns, "deployment", "old")
    assert owners_of_replicas(entries) == ["a", "before-first-apply"]
    assert entry(entries, "before-first-apply")["operation"] == "Update"


def test_kubectl_scale_takes_replicas_from_the_applier(berth, ns):
    apply(berth, ns, deployment("sc", replicas=2), "a")
    berth.kubectl("scale", "deployment", "sc", "--replicas=5", "-n", ns)
    obj, entries = managed(berth, ns, "deployment", "sc")
    assert obj["spec"]["replicas"] == 5
    # This kubectl sends no fieldManager on scale: the manager is its User-Agent's first part.
    scale = entry(entries, "kubectl")
    assert (scale["operation"], scale["subresource"], scale["apiVersion"]) == (
        "Update", "scale", "apps/v1")
    assert scale["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert owners_of_replicas(entries) == ["kubectl"]
    r = apply(berth, ns, deployment("sc", replicas=2), "a", check=False)
    assert r.returncode != 0
    assert ('conflict with "kubectl" with subresource "scale" using apps/v1: '
            '.spec.replicas') in r.stderr, r.stderr


def test_updates_of_an_applied_object_are_tracked_and_managed_fields_can_be_cleared(berth, ns):
    apply(berth, ns, configmap("upd", labels={"a": "1"}, data={"k": "v"}), "a")
    berth.kubectl("label", "configmap", "upd", "-n", ns, "a=2", "--overwrite")
    _, entries = managed(berth, ns, "configmap", "upd")
    label = entry(entries, "kubectl-label")
    assert label["operation"] == "Update"
    assert label["fieldsV1"] == {"f:metadata": {"f:labels": {"f:a": {}}}}
    assert entry(entries, "a")["fieldsV1"] == {"f:data": {"f:k": {}}}
    # An update sending `managedFields: []` clears them (upstream's reset).
    status, _ = request(berth, "PATCH", f"/api/v1/namespaces/{ns}/configmaps/upd",
                        json.dumps({"metadata": {"managedFields": []}}).encode(),
                        "application/merge-patch+json")
    obj = berth.kubectl_json("get", "configmap", "upd", "-n", ns)
    obj["metadata"]["managedFields"] = []
    berth.kubectl("replace", "-n", ns, "-f", "-", stdin=json.dumps(obj))
    _, entries = managed(berth, ns, "configmap", "upd")
    assert status == 200 and entries == []
    # Garbage managedFields are not stored: the server keeps what it had.
    apply(berth, ns, configmap("upd", data={"k": "v"}), "a")
    obj = berth.kubectl_json("get", "configmap", "upd", "-n", ns, "--show-managed-fields")
    kept = obj["metadata"]["managedFields"]
    obj["metadata"]["managedFields"] = [{"manager": "x", "operation": "Bogus"}]
    berth.kubectl("replace", "-n", ns, "-f", "-", stdin=json.dumps(obj))
    _, entries = managed(berth, ns, "configmap", "upd")
    assert [e["manager"] for e in entries] == [e["manager"] for e in kept]


def request(berth, method, path, body, content_type):
    ctx = ssl.create_default_context(cafile=berth.ca_file())
    req = urllib.request.Request(berth.url + path, data=body, method=method, headers={
        "Content-Type": content_type, "Authorization": f"Bearer {berth.token()}",
        "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_apply_without_field_manager_is_invalid(berth, ns):
    body = json.dumps(configmap("nofm", data={"k": "v"})).encode()
    path = f"/api/v1/namespaces/{ns}/configmaps/nofm"
    status, s = request(berth, "PATCH", path, body, "application/apply-patch+yaml")
    assert status == 422, s
    assert s["reason"] == "Invalid"
    assert s["message"] == ('PatchOptions.meta.k8s.io "" is invalid: '
                            "fieldManager: Required value: is required for apply patch")
    # With one, the same request creates; the conflict Status names the field and manager.
    status, _ = request(berth, "PATCH", path + "?fieldManager=a", body,
                        "application/apply-patch+yaml")
    assert status == 201
    other = json.dumps(configmap("nofm", data={"k": "other"})).encode()
    status, s = request(berth, "PATCH", path + "?fieldManager=b", other,
                        "application/apply-patch+yaml")
    assert status == 409 and s["reason"] == "Conflict", s
    assert s["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                       "message": 'conflict with "a"', "field": ".data.k"}]
