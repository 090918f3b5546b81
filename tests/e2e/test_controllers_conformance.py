"""What kube-controller-manager does that upstream's conformance specs check, against `berth
serve` (and `berth controllers` against it): namespace deletion (finalizers, pods first,
conditions), the root CA publisher, `--controllers`, Deployment and Job adoption, a Job's
success policy, and garbage collection of an ownership circle.

Timeouts below only keep a broken server from hanging the suite; nothing asserts on durations.
"""

import json
import subprocess
import uuid

import pytest

from conftest import BERTH_BIN, eventually, pod

KEEP = "e2e.example.com/keep"


def get(berth, *args):
    r = berth.kubectl("get", *args, "-o", "json", check=False)
    if r.returncode != 0:
        assert "NotFound" in r.stderr, r.stderr
        return None
    return json.loads(r.stdout)


def conditions(ns_obj):
    return {c["type"]: c for c in (ns_obj.get("status") or {}).get("conditions") or []}


def new_namespace(berth, prefix):
    name = f"{prefix}-{uuid.uuid4().hex[:5]}"
    berth.create_namespace(name)
    return name


# namespace deletion --------------------------------------------------------------------------


def test_a_pod_with_a_finalizer_keeps_its_namespace_terminating_and_is_deleted_first(berth):
    """Upstream's OrderedNamespaceDeletion spec: the pod is deleted first, the ConfigMap waits."""
    name = new_namespace(berth, "ordered")
    held = pod("held", node="node-1")
    held["metadata"]["finalizers"] = [KEEP]
    berth.kubectl("create", "-n", name, "-f", "-", stdin=held)
    berth.kubectl("create", "configmap", "settings", "-n", name, "--from-literal=a=b")
    berth.kubectl("delete", "namespace", name, "--wait=false")

    def reported():
        ns = get(berth, "namespace", name)
        c = conditions(ns)
        return ns if "NamespaceFinalizersRemaining" in c else None

    ns = eventually(reported, what="the namespace's conditions")
    assert ns["status"]["phase"] == "Terminating"
    assert ns["spec"]["finalizers"] == ["kubernetes"]
    c = conditions(ns)
    assert c["NamespaceContentRemaining"]["status"] == "True"
    assert c["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
    assert c["NamespaceContentRemaining"]["message"] == \
        "Some resources are remaining: pods. has 1 resource instances"
    assert c["NamespaceFinalizersRemaining"]["reason"] == "SomeFinalizerRemain"
    assert c["NamespaceFinalizersRemaining"]["message"] == \
        f"Some finalizers are remaining: {KEEP} in 1 resource instances"
    assert c["NamespaceDeletionContentFailure"]["status"] == "False"
    assert c["NamespaceDeletionContentFailure"]["reason"] == "ContentDeleted"
    assert c["NamespaceDeletionDiscoveryFailure"]["reason"] == "ResourcesDiscovered"

    p = get(berth, "pod", "held", "-n", name)
    assert p["metadata"].get("deletionTimestamp"), "the pod is deleted first"
    cm = get(berth, "configmap", "settings", "-n", name)
    assert cm is not None and not cm["metadata"].get("deletionTimestamp"), \
        "nothing else is deleted while a pod remains"

    berth.kubectl("patch", "pod", "held", "-n", name, "--type=json",
                  "-p", '[{"op": "remove", "path": "/metadata/finalizers"}]')
    eventually(lambda: get(berth, "namespace", name) is None, timeout=90,
               what="the namespace to go once the finalizer is removed")
    assert get(berth, "configmap", "settings", "-n", name) is None


def test_a_namespace_without_content_goes_and_the_name_can_be_reused(berth):
    name = new_namespace(berth, "empty")
    out = berth.kubectl("delete", "namespace", name, timeout=120).stdout
    assert out.strip() == f'namespace "{name}" deleted'
    assert get(berth, "namespace", name) is None
    berth.create_namespace(name)
    berth.kubectl("delete", "namespace", name, "--wait=false")


def test_a_namespace_with_a_spec_finalizer_of_its_own_waits_for_it(berth):
    name = f"own-{uuid.uuid4().hex[:5]}"
    berth.kubectl("create", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
        "spec": {"finalizers": ["kubernetes", "example.com/other"]}})
    berth.kubectl("delete", "namespace", name, "--wait=false")
    ns = eventually(lambda: (n := get(berth, "namespace", name))
                    and n["spec"].get("finalizers") == ["example.com/other"] and n,
                    what="the kubernetes finalizer to go")
    assert ns["status"]["phase"] == "Terminating"
    # The other finalizer's owner finishes through the finalize subresource.
    ns["spec"]["finalizers"] = []
    berth.core.replace_namespace_finalize(name, ns)
    eventually(lambda: get(berth, "namespace", name) is None, what="the namespace to go")


def test_berth_controllers_finishes_namespace_deletion_against_an_api_server(berth_factory,
                                                                               tmp_path):
    """`berth controllers` runs the namespace controller (and the root CA publisher) against an
    API server whose own controllers leave namespaces alone."""
    server = berth_factory(args=["--controllers=*,-namespace-controller,"
                                 "-root-ca-certificate-publisher-controller"])
    name = new_namespace(server, "remote")
    server.kubectl("create", "configmap", "c", "-n", name, "--from-literal=a=b")
    server.kubectl("delete", "namespace", name, "--wait=false")
    ns = get(server, "namespace", name)
    assert ns["status"]["phase"] == "Terminating"
    assert get(server, "configmap", "kube-root-ca.crt", "-n", name) is None
    log = open(tmp_path / "controllers.log", "wb")
    proc = subprocess.Popen(
        [str(BERTH_BIN), "controllers", "--kubeconfig", str(server.kubeconfig),
         "--leader-elect=false",
         "--controllers=namespace-controller,root-ca-certificate-publisher-controller"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        eventually(lambda: get(server, "namespace", name) is None, timeout=90,
                   what="berth controllers to finish the namespace's deletion")
        other = new_namespace(server, "published")
        cm = eventually(lambda: get(server, "configmap", "kube-root-ca.crt", "-n", other),
                        what="the root CA ConfigMap")
        assert cm["data"]["ca.crt"] == open(server.ca_file()).read()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_unknown_controllers_are_refused_in_upstreams_words():
    r = subprocess.run([str(BERTH_BIN), "controllers", "--leader-elect=false",
                        "--controllers=*,-bogus"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert '"bogus" is not in the list of known controllers' in r.stderr


# root CA publisher ---------------------------------------------------------------------------


def test_every_namespace_has_the_cluster_ca_and_it_is_put_back(berth, ns):
    cm = eventually(lambda: get(berth, "configmap", "kube-root-ca.crt", "-n", ns),
                    what="kube-root-ca.crt")
    ca = open(berth.ca_file()).read()
    assert cm["data"] == {"ca.crt": ca}
    assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith(
        "Contains a CA bundle that can be used to verify the kube-apiserver")
    berth.kubectl("delete", "configmap", "kube-root-ca.crt", "-n", ns)
    again = eventually(lambda: get(berth, "configmap", "kube-root-ca.crt", "-n", ns),
                       what="kube-root-ca.crt to come back")
    assert again["data"] == {"ca.crt": ca}
    berth.kubectl("patch", "configmap", "kube-root-ca.crt", "-n", ns, "--type=merge",
                  "-p", '{"data": {"ca.crt": "tampered"}}')
    eventually(lambda: get(berth, "configmap", "kube-root-ca.crt", "-n", ns)["data"]
               == {"ca.crt": ca}, what="the CA to be put back")


# adoption ------------------------------------------------------------------------------------


def replica_set(name, ns, labels, replicas=1, image="nginx:1.27"):
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def deployment(name, ns, labels, replicas=1, image="nginx:1.27"):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def controller_of(obj):
    return next((r for r in obj["metadata"].get("ownerReferences") or []
                 if r.get("controller")), None)


def test_a_deployment_adopts_a_matching_orphan_replica_set_and_rolls_it_over(berth, ns):
    """Upstream's "deployment should support rollover" start: the orphan is adopted, scaled
    down, and the Deployment's new ReplicaSet has revision 1."""
    berth.kubectl("apply", "-f", "-", stdin=replica_set(
        "test-rollover-controller", ns, {"name": "rollover-pod", "pod": "httpd"}))
    berth.kubectl("apply", "-f", "-", stdin=deployment(
        "test-rollover-deployment", ns, {"name": "rollover-pod"}, image="redis:7"))
    d = eventually(lambda: (x := get(berth, "deployment", "test-rollover-deployment", "-n", ns))
                   and x.get("metadata", {}).get("uid") and x, what="the deployment")

    def adopted():
        rs = get(berth, "rs", "test-rollover-controller", "-n", ns)
        ref = controller_of(rs)
        return rs if ref and ref["uid"] == d["metadata"]["uid"] else None

    rs = eventually(adopted, what="the orphan ReplicaSet to be adopted")
    assert controller_of(rs)["kind"] == "Deployment"
    assert controller_of(rs)["blockOwnerDeletion"] is True
    eventually(lambda: get(berth, "rs", "test-rollover-controller", "-n", ns)["spec"]["replicas"]
               == 0, what="the adopted ReplicaSet to be scaled down")
    d = eventually(lambda: (x := get(berth, "deployment", "test-rollover-deployment", "-n", ns))
                   ["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision")
                   and x, what="the deployment's revision")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"


def test_a_new_deployment_adopts_the_replica_sets_an_orphaning_delete_left(berth, ns):
    """Upstream's controllerRef spec: a Deployment deleted with orphaning leaves its
    ReplicaSet; a new Deployment with the same selector and template adopts it."""
    labels = {"app": "adopt-me"}
    berth.kubectl("apply", "-f", "-", stdin=deployment("first", ns, labels))
    rs = eventually(lambda: [r for r in get(berth, "rs", "-n", ns)["items"]
                             if controller_of(r)], what="the first deployment's replica set")[0]
    berth.kubectl("delete", "deployment", "first", "-n", ns, "--cascade=orphan")
    eventually(lambda: controller_of(get(berth, "rs", rs["metadata"]["name"], "-n", ns)) is None,
               what="the replica set to be orphaned")
    berth.kubectl("apply", "-f", "-", stdin=deployment("second", ns, labels))
    second = eventually(lambda: get(berth, "deployment", "second", "-n", ns)["metadata"]["uid"],
                        what="the second deployment")
    eventually(lambda: (controller_of(get(berth, "rs", rs["metadata"]["name"], "-n", ns))
                        or {}).get("uid") == second, what="the second deployment to adopt it")
    assert [r["metadata"]["name"] for r in get(berth, "rs", "-n", ns)["items"]] == \
        [rs["metadata"]["name"]], "the adopted replica set is reused, not replaced"


def job(name, ns, run_seconds=None, **spec):
    """A Job whose containers run forever, or `run_seconds` and exit 0 (berth's annotations)."""
    annotations = {"berth.io/run-seconds": str(run_seconds)} if run_seconds else {}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"template": {"metadata": {"annotations": annotations},
                                  "spec": {"restartPolicy": "Never", "containers": [
                                      {"name": "c", "image": "busybox"}]}}, **spec}}


def test_a_job_readopts_an_orphaned_pod_and_releases_one_it_no_longer_selects(berth, ns):
    """Upstream's "should adopt matching orphans and release non-matching pods"."""
    berth.kubectl("apply", "-f", "-", stdin=job("adopt-release", ns, parallelism=2,
                                               completions=4))
    uid = eventually(lambda: get(berth, "job", "adopt-release", "-n", ns)["metadata"]["uid"],
                     what="the job")
    pods = eventually(lambda: (items := [p for p in get(berth, "pods", "-n", ns)["items"]
                                         if not p["metadata"].get("deletionTimestamp")])
                      and len(items) == 2 and items, what="the job's two pods")
    orphan = pods[0]["metadata"]["name"]
    berth.kubectl("patch", "pod", orphan, "-n", ns, "--type=json",
                  "-p", '[{"op": "remove", "path": "/metadata/ownerReferences"}]')
    eventually(lambda: (controller_of(get(berth, "pod", orphan, "-n", ns)) or {}).get("uid")
               == uid, what="the orphan to be re-adopted")
    p = get(berth, "pod", orphan, "-n", ns)
    assert "batch.kubernetes.io/job-tracking" in p["metadata"]["finalizers"]

    released = pods[1]["metadata"]["name"]
    berth.kubectl("label", "pod", released, "-n", ns, "controller-uid-", "job-name-",
                  "batch.kubernetes.io/controller-uid-", "batch.kubernetes.io/job-name-")
    eventually(lambda: controller_of(get(berth, "pod", released, "-n", ns)) is None,
               what="the relabelled pod to be released")


def test_an_indexed_job_succeeds_by_its_success_policy(berth, ns):
    """Upstream's successPolicy spec: index 0 succeeding completes the Job, through the interim
    SuccessCriteriaMet condition, with reason SuccessPolicy (not CompletionsReached)."""
    berth.kubectl("apply", "-f", "-", stdin=job(
        "success-policy", ns, run_seconds=1, completions=3, parallelism=3,
        completionMode="Indexed", successPolicy={"rules": [{"succeededIndexes": "0"}]}))

    def done():
        j = get(berth, "job", "success-policy", "-n", ns)
        cs = {c["type"]: c for c in (j.get("status") or {}).get("conditions") or []}
        return cs if "Complete" in cs else None

    cs = eventually(done, timeout=120, what="the job to complete")
    assert cs["SuccessCriteriaMet"]["status"] == "True"
    assert cs["SuccessCriteriaMet"]["reason"] == "SuccessPolicy"
    assert cs["SuccessCriteriaMet"]["message"] == "Matched rules at index 0"
    assert (cs["Complete"]["reason"], cs["Complete"]["message"]) == \
        ("SuccessPolicy", "Matched rules at index 0")


# garbage collection --------------------------------------------------------------------------


def circle(berth, ns, names):
    """Pods owning each other in a circle, every reference blocking its owner's deletion."""
    uids = {}
    for n in names:
        berth.kubectl("create", "-n", ns, "-f", "-", stdin=pod(n, node="node-1"))
        uids[n] = get(berth, "pod", n, "-n", ns)["metadata"]["uid"]
    for i, n in enumerate(names):
        owner = names[i - 1]
        refs = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": uids[owner],
                 "blockOwnerDeletion": True}]
        berth.kubectl("patch", "pod", n, "-n", ns, "--type=merge",
                      "-p", json.dumps({"metadata": {"ownerReferences": refs}}))


@pytest.mark.parametrize("propagation", ["Background", "Foreground"])
def test_pods_owning_each_other_in_a_circle_are_all_deleted(berth, ns, propagation):
    """Upstream's "should not be blocked by dependency circle", and the foreground deletion
    of the same circle (upstream's collector breaks it)."""
    names = ["pod1", "pod2", "pod3"]
    circle(berth, ns, names)
    berth.kubectl("delete", "pod", "pod1", "-n", ns, f"--cascade={propagation.lower()}",
                  "--wait=false")

    def all_gone():
        left = [p["metadata"]["name"] for p in get(berth, "pods", "-n", ns)["items"]]
        return not left or None

    eventually(all_gone, timeout=90, what=f"the circle to be collected ({propagation})")


# failed writes -------------------------------------------------------------------------------


def test_a_deployment_whose_replica_set_is_refused_reports_it_and_not_a_created_one(berth, ns):
    """A name the Deployment may have but its ReplicaSet (`<name>-<hash>`) may not: the create
    is refused (422); upstream sets Progressing False, ReplicaSetCreateError, and retries."""
    name = "d" * 250
    berth.kubectl("apply", "-f", "-", stdin=deployment(name, ns, {"app": "refused"}))

    def progressing():
        d = get(berth, "deployment", name, "-n", ns)
        cs = {c["type"]: c for c in (d.get("status") or {}).get("conditions") or []}
        return cs.get("Progressing")

    c = eventually(progressing, what="the Progressing condition")
    assert (c["status"], c["reason"]) == ("False", "ReplicaSetCreateError")
    assert c["message"].startswith(f'Failed to create new replica set "{name}-')
    assert get(berth, "rs", "-n", ns)["items"] == []
    # (The warning event is refused too, here: its name, `<deployment>.<time>`, is as long.)
