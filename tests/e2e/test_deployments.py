"""Deployments, ReplicaSets and ReplicationControllers of `berth serve`, driven with kubectl as a
user would: `create deployment`, `rollout status|undo`, `set image`, `scale`, and a
ReplicationController from a manifest.

Uses the session server (3 simulated nodes, pods become ready as soon as they run). Timeouts only
keep a broken server from hanging the suite; nothing asserts on durations.
"""

import json
import threading

from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from conftest import eventually

REVISION = "deployment.kubernetes.io/revision"


def live_pods(b, ns, selector):
    pods = b.kubectl_json("get", "pods", "-n", ns, "-l", selector)["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def deploy(b, ns, name):
    return b.kubectl_json("get", "deploy", name, "-n", ns)


def test_a_deployment_of_3_becomes_available_and_rollout_status_succeeds(berth, ns):
    b = berth
    b.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3", "-n", ns)
    r = b.kubectl("rollout", "status", "deploy/web", "-n", ns, "--timeout=60s")
    assert "successfully rolled out" in r.stdout
    row = b.kubectl("get", "deploy", "web", "-n", ns, "--no-headers").stdout.split()
    assert row[1:4] == ["3/3", "3", "3"]  # READY UP-TO-DATE AVAILABLE
    d = deploy(b, ns, "web")
    assert d["metadata"]["annotations"][REVISION] == "1"
    conditions = {c["type"]: c for c in d["status"]["conditions"]}
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    rs = b.kubectl_json("get", "rs", "-n", ns, "-l", "app=web")["items"]
    assert len(rs) == 1
    h = rs[0]["metadata"]["labels"]["pod-template-hash"]
    assert rs[0]["metadata"]["name"] == f"web-{h}"
    assert rs[0]["spec"]["selector"]["matchLabels"]["pod-template-hash"] == h
    assert rs[0]["metadata"]["annotations"][REVISION] == "1"
    assert rs[0]["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    pods = live_pods(b, ns, "app=web")
    assert len(pods) == 3
    for p in pods:
        assert p["metadata"]["name"].startswith(f"web-{h}-")
        ref = p["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"], ref["blockOwnerDeletion"]) == (
            "ReplicaSet", f"web-{h}", True, True)


def test_an_image_change_rolls_out_without_losing_availability_and_undo_goes_back(berth, ns):
    b = berth
    b.kubectl("create", "deployment", "app", "--image=nginx:1", "--replicas=3", "-n", ns)
    b.kubectl("patch", "deploy", "app", "-n", ns, "-p", json.dumps(
        {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}}))
    b.kubectl("rollout", "status", "deploy/app", "-n", ns, "--timeout=60s")
    first = b.kubectl_json("get", "rs", "-n", ns, "-l", "app=app")["items"][0]["metadata"]["name"]

    # Watch the Deployment's availability through the whole rollout.
    apps = k8s.AppsV1Api(b.api_client)
    seen, stop = [], threading.Event()
    w = k8s_watch.Watch()

    def follow():
        for ev in w.stream(apps.list_namespaced_deployment, ns, field_selector="metadata.name=app",
                           timeout_seconds=90):
            seen.append(ev["object"].status.available_replicas or 0)
            if stop.is_set():
                break

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    eventually(lambda: seen, what="the watch's first event")
    b.kubectl("set", "image", "deploy/app", "nginx=nginx:2", "-n", ns)
    b.kubectl("rollout", "status", "deploy/app", "-n", ns, "--timeout=90s")
    stop.set()
    w.stop()
    assert min(seen) >= 3, seen
    d = deploy(b, ns, "app")
    assert d["metadata"]["annotations"][REVISION] == "2"
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    pods = live_pods(b, ns, "app=app")
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:2"}

    b.kubectl("rollout", "undo", "deploy/app", "-n", ns)
    b.kubectl("rollout", "status", "deploy/app", "-n", ns, "--timeout=90s")
    d = deploy(b, ns, "app")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
    assert d["metadata"]["annotations"][REVISION] == "3"
    rs = {r["metadata"]["name"]: r for r in b.kubectl_json("get", "rs", "-n", ns, "-l", "app=app")["items"]}
    assert rs[first]["metadata"]["annotations"][REVISION] == "3"
    assert rs[first]["spec"]["replicas"] == 3
    history = b.kubectl("rollout", "history", "deploy/app", "-n", ns).stdout
    assert "2" in history and "3" in history


def test_scale_up_and_down_keeps_the_costliest_pods(berth, ns):
    b = berth
    b.kubectl("create", "deployment", "scaled", "--image=nginx", "--replicas=3", "-n", ns)
    b.kubectl("rollout", "status", "deploy/scaled", "-n", ns, "--timeout=60s")
    b.kubectl("scale", "deploy/scaled", "--replicas=10", "-n", ns)
    b.kubectl("rollout", "status", "deploy/scaled", "-n", ns, "--timeout=60s")
    pods = live_pods(b, ns, "app=scaled")
    assert len(pods) == 10
    # Upstream ranks a lower pod-deletion-cost for deletion first: these two stay.
    keep = sorted(p["metadata"]["name"] for p in pods)[3:5]
    for name in keep:
        b.kubectl("annotate", "pod", name, "-n", ns, "controller.kubernetes.io/pod-deletion-cost=100")
    b.kubectl("scale", "deploy/scaled", "--replicas=2", "-n", ns)
    eventually(lambda: sorted(p["metadata"]["name"] for p in live_pods(b, ns, "app=scaled")) == keep,
               what="the two costly pods left")
    b.kubectl("rollout", "status", "deploy/scaled", "-n", ns, "--timeout=60s")
    row = b.kubectl("get", "deploy", "scaled", "-n", ns, "--no-headers").stdout.split()
    assert row[1:4] == ["2/2", "2", "2"]


def test_a_deleted_pod_is_recreated(berth, ns):
    b = berth
    b.kubectl("create", "deployment", "again", "--image=nginx", "--replicas=2", "-n", ns)
    b.kubectl("rollout", "status", "deploy/again", "-n", ns, "--timeout=60s")
    before = {p["metadata"]["name"] for p in live_pods(b, ns, "app=again")}
    victim = sorted(before)[0]
    b.kubectl("delete", "pod", victim, "-n", ns, "--wait=false")
    after = eventually(lambda: (names := {p["metadata"]["name"] for p in live_pods(b, ns, "app=again")})
                       and len(names) == 2 and victim not in names and names,
                       what="a replacement pod")
    assert len(after - before) == 1


def test_a_replication_controller_gets_its_pods_and_scales(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", "-n", ns, stdin={
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {"replicas": 2,
                 "template": {"metadata": {"labels": {"app": "legacy"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    rc = eventually(lambda: (r := b.kubectl_json("get", "rc", "legacy", "-n", ns))
                    ["status"].get("readyReplicas") == 2 and r, what="2 ready replicas")
    assert rc["metadata"]["labels"] == {"app": "legacy"}
    assert rc["spec"]["selector"] == {"app": "legacy"}
    pods = live_pods(b, ns, "app=legacy")
    assert len(pods) == 2
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController" for p in pods)
    b.kubectl("scale", "rc/legacy", "--replicas=4", "-n", ns)
    eventually(lambda: len(live_pods(b, ns, "app=legacy")) == 4, what="4 pods")
    eventually(lambda: b.kubectl_json("get", "rc", "legacy", "-n", ns)["status"].get("availableReplicas") == 4,
               what="4 available")
