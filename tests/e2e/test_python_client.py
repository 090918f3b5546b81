"""The official Python client: CRUD, binding and watch, as a controller written in Python does."""

import json
import queue
import threading

import urllib3

from conftest import eventually, pod
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.rest import ApiException


def test_create_read_patch_delete_a_pod(berth, ns):
    core = berth.core
    created = core.create_namespaced_pod(ns, pod("py", labels={"app": "py"}))
    assert created.metadata.name == "py" and created.metadata.uid
    assert created.status.phase == "Pending"

    read = core.read_namespaced_pod("py", ns)
    assert read.metadata.uid == created.metadata.uid
    assert read.spec.containers[0].image == "nginx:1.27"

    # A dict patch is a strategic merge patch.
    patched = core.patch_namespaced_pod("py", ns, {"metadata": {"labels": {"extra": "1"}}})
    assert patched.metadata.labels == {"app": "py", "extra": "1"}
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)

    # A list patch is a JSON patch.
    core.patch_namespaced_pod("py", ns, [{"op": "remove", "path": "/metadata/labels/app"}])
    assert core.read_namespaced_pod("py", ns).metadata.labels == {"extra": "1"}

    listed = core.list_namespaced_pod(ns, label_selector="extra=1")
    assert [p.metadata.name for p in listed.items] == ["py"]
    assert listed.metadata.resource_version

    core.delete_namespaced_pod("py", ns)
    try:
        core.read_namespaced_pod("py", ns)
        raise AssertionError("pod still exists")
    except ApiException as e:
        assert e.status == 404
        assert json.loads(e.body)["reason"] == "NotFound"


def test_replace_with_the_read_resource_version(berth, ns):
    core = berth.core
    core.create_namespaced_pod(ns, pod("rep"))
    p = core.read_namespaced_pod("rep", ns)
    p.metadata.labels = {"replaced": "yes"}
    replaced = core.replace_namespaced_pod("rep", ns, p)
    assert replaced.metadata.labels == {"replaced": "yes"}
    assert replaced.metadata.resource_version != p.metadata.resource_version


def test_bind_through_the_binding_subresource(berth, ns):
    core = berth.core
    core.create_namespaced_pod(ns, pod("tobind"))
    binding = k8s.V1Binding(
        metadata=k8s.V1ObjectMeta(name="tobind"),
        target=k8s.V1ObjectReference(api_version="v1", kind="Node", name="node-2"))
    # The client cannot decode the Status a real API server answers (known client bug).
    resp = core.create_namespaced_binding(ns, binding, _preload_content=False)
    assert resp.status == 201
    assert json.loads(resp.data)["status"] == "Success"
    running = eventually(lambda: core.read_namespaced_pod("tobind", ns).status.phase == "Running",
                         what="pod Running")
    assert running
    p = core.read_namespaced_pod("tobind", ns)
    assert p.spec.node_name == "node-2"
    assert p.status.host_ip == "10.0.0.3" and p.status.pod_ip.startswith("10.244.")


def test_binding_an_already_bound_pod_conflicts(berth, ns):
    core = berth.core
    core.create_namespaced_pod(ns, pod("once", node="node-1"))
    before = core.read_namespaced_pod("once", ns)
    binding = k8s.V1Binding(metadata=k8s.V1ObjectMeta(name="once"),
                            target=k8s.V1ObjectReference(kind="Node", name="node-2"))
    try:
        core.create_namespaced_binding(ns, binding, _preload_content=False)
        raise AssertionError("second binding accepted")
    except ApiException as e:
        assert e.status == 409
        assert 'is already assigned to node "node-1"' in json.loads(e.body)["message"]
    assert core.read_namespaced_pod("once", ns).spec.node_name == "node-1"
    assert before.spec.node_name == "node-1"


def test_watch_sees_added_modified_deleted(berth, ns):
    core = berth.core
    rv = core.list_namespaced_pod(ns).metadata.resource_version
    events = queue.Queue()
    w = watch.Watch()

    def run():
        try:
            for ev in w.stream(core.list_namespaced_pod, ns, resource_version=rv,
                               timeout_seconds=60):
                events.put((ev["type"], ev["object"].metadata.name,
                            ev["object"].metadata.labels or {}))
        except urllib3.exceptions.ProtocolError:
            pass  # the stream was cut (the server stopped): the assertions below report it
        finally:
            events.put(None)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    core.create_namespaced_pod(ns, pod("watched"))
    core.patch_namespaced_pod("watched", ns, {"metadata": {"labels": {"step": "2"}}})
    core.delete_namespaced_pod("watched", ns)

    seen = []

    def got_all():
        while not events.empty():
            ev = events.get_nowait()
            assert ev is not None, f"watch ended early; saw {seen}"
            seen.append(ev)
        return len(seen) >= 3

    eventually(got_all, what="three watch events")
    w.stop()
    assert [(t, n) for t, n, _ in seen[:3]] == [
        ("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")]
    assert seen[1][2] == {"step": "2"}


def test_watch_from_now_lists_existing_pods_as_added(berth, ns):
    core = berth.core
    core.create_namespaced_pod(ns, pod("there"))
    w = watch.Watch()
    first = next(iter(w.stream(core.list_namespaced_pod, ns, timeout_seconds=30)))
    w.stop()
    assert first["type"] == "ADDED" and first["object"].metadata.name == "there"


def test_namespaces_and_priority_classes_through_the_client(berth):
    names = [n.metadata.name for n in berth.core.list_namespace().items]
    for expected in ["default", "kube-system", "kube-public", "kube-node-lease"]:
        assert expected in names
    classes = {c.metadata.name: c.value for c in berth.scheduling.list_priority_class().items}
    assert classes["system-cluster-critical"] == 2000000000
    assert classes["system-node-critical"] == 2000001000


def test_nodes_through_the_client(berth):
    nodes = berth.core.list_node().items
    assert sorted(n.metadata.name for n in nodes) == ["node-1", "node-2", "node-3"]
    n1 = berth.core.read_node("node-1")
    assert n1.status.allocatable["cpu"] == "4"
    assert {c.type: c.status for c in n1.status.conditions}["Ready"] == "True"
