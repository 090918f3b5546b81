"""`berth descheduler` against `berth serve` (seed 16.3), driven as a user would: pods made with
kubectl, the descheduler run once (`--descheduling-interval 0`) with a policy file, the outcome
read back with kubectl.

Each test has a server of its own (the descheduler acts on the whole cluster). Most pods are bound
by hand (`spec.nodeName`) and owned by a controller of a kind no controller in the cluster runs
(`example.com/v1`, as a custom operator's pods would be): they count as controller-owned for the
descheduler, and nothing recreates or garbage-collects them, so each test sees exactly the
evictions. `test_duplicates_of_a_real_replicaset_are_spread_and_recreated` runs the seed's whole
loop with a real ReplicaSet instead. Timeouts only keep a broken server from hanging the suite;
nothing asserts on durations.
"""

import json
import uuid
import subprocess
import textwrap

import pytest

from conftest import BERTH_BIN, eventually, pod

#: The seed's sample policy (16.3.3) with numberOfNodes 0 (the seed's 3 needs four nodes or more
#: underutilized before anything moves) and all five strategies on.
SEED_LNU = """\
apiVersion: "descheduler/v1alpha1"
kind: "DeschedulerPolicy"
strategies:
  "LowNodeUtilization":
     enabled: true
     params:
       nodeResourceUtilizationThresholds:
         thresholds:
           "cpu" : 20
           "memory": 20
           "pods": 20
         targetThresholds:
           "cpu" : 50
           "memory": 50
           "pods": 50
         numberOfNodes: 0
"""

ALL_BUT_LNU = """\
apiVersion: "descheduler/v1alpha1"
kind: "DeschedulerPolicy"
strategies:
  "RemoveDuplicates":
     enabled: true
  "RemovePodsViolatingInterPodAntiAffinity":
     enabled: true
  "RemovePodsViolatingNodeAffinity":
    enabled: true
    params:
      nodeAffinityType:
      - "requiredDuringSchedulingIgnoredDuringExecution"
  "RemovePodsViolatingNodeTaints":
     enabled: true
"""

NS = "apps"


@pytest.fixture
def cluster(berth_factory):
    b = berth_factory(nodes=3)
    b.create_namespace(NS)
    return b


def write_policy(tmp_path, text, name="policy.yaml"):
    f = tmp_path / name
    f.write_text(text)
    return f


def deschedule(berth, policy_file, *flags, check=True):
    """Runs `berth descheduler` once with `-o json`; returns the report (or the process)."""
    r = subprocess.run(
        [str(BERTH_BIN), "descheduler", "--kubeconfig", str(berth.kubeconfig),
         "--policy-config-file", str(policy_file), "--descheduling-interval", "0",
         "-o", "json", *flags],
        capture_output=True, text=True, timeout=120)
    if not check:
        return r
    assert r.returncode == 0, f"descheduler exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


#: The group of the owners most tests use: a controller the cluster does not run.
OWNER_API = "example.com/v1"


def replicaset(berth, name):
    """The uid of an owner `name` of kind ReplicaSet in OWNER_API (no object: the garbage
    collector leaves dependents of kinds it cannot reach alone)."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.{NS}.example.com"))


def owned(name, node, owner=None, kind="ReplicaSet", uid="00000000-0000-0000-0000-000000000000",
          labels=None, cpu=None, **spec):
    p = pod(name, namespace=NS, node=node, labels=labels, **spec)
    if owner:
        p["metadata"]["ownerReferences"] = [{
            "apiVersion": OWNER_API, "kind": kind, "name": owner, "uid": uid,
            "controller": True}]
    if cpu:
        p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return p


def create(berth, pods):
    berth.kubectl("apply", "-f", "-", stdin=pods)
    names = [p["metadata"]["name"] for p in pods]

    def all_running():
        items = berth.kubectl_json("get", "pods", "-n", NS)["items"]
        phase = {p["metadata"]["name"]: p["status"].get("phase") for p in items}
        return all(phase.get(n) == "Running" for n in names)

    eventually(all_running, what=f"pods {names} running")


def live_pods(berth):
    """Names of the pods in NS that are not being deleted."""
    items = berth.kubectl_json("get", "pods", "-n", NS)["items"]
    return sorted(p["metadata"]["name"] for p in items
                  if not p["metadata"].get("deletionTimestamp"))


def evicted_names(report):
    return sorted(e["name"] for e in report["evictions"] if e["outcome"]["result"] == "evicted")


def test_duplicates_on_one_node_are_evicted_and_get_an_event(cluster, tmp_path):
    uid = replicaset(cluster, "web")
    create(cluster, [owned(f"web-{i}", "node-1", "web", uid=uid) for i in range(3)]
           + [owned("web-3", "node-2", "web", uid=uid)])
    report = deschedule(cluster, write_policy(tmp_path, ALL_BUT_LNU))
    assert evicted_names(report) == ["web-1", "web-2"]
    assert {e["strategy"] for e in report["evictions"]} == {"RemoveDuplicates"}
    eventually(lambda: live_pods(cluster) == ["web-0", "web-3"], what="duplicates gone")

    def descheduled_event():
        events = cluster.kubectl_json("get", "events", "-n", NS)["items"]
        return [e for e in events if e.get("reason") == "Descheduled"
                and e["involvedObject"]["name"] == "web-1"]

    event = eventually(descheduled_event, what="a Descheduled event")[0]
    assert event["type"] == "Normal"
    assert "RemoveDuplicates" in event["message"]


def test_duplicates_of_a_real_replicaset_are_spread_and_recreated(cluster, tmp_path):
    """The seed's loop: duplicates evicted, the ReplicaSet recreates them, the scheduler spreads
    them over the nodes that were cordoned when the first copies landed."""
    cluster.kubectl("cordon", "node-2", "node-3")
    cluster.kubectl("apply", "-f", "-", stdin={
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "spread", "namespace": NS},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"rs": "spread"}},
                 "template": {"metadata": {"labels": {"rs": "spread"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})

    def placement():
        items = cluster.kubectl_json("get", "pods", "-n", NS, "-l", "rs=spread")["items"]
        return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in items
                if p["status"].get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")}

    first = eventually(lambda: (lambda p: p if len(p) == 3 else None)(placement()),
                       what="three replicas running")
    assert set(first.values()) == {"node-1"}
    cluster.kubectl("uncordon", "node-2", "node-3")
    report = deschedule(cluster, write_policy(tmp_path, ALL_BUT_LNU))
    evicted = evicted_names(report)
    assert len(evicted) == 2 and set(evicted) <= set(first)

    def spread():
        now = placement()
        return now if len(now) == 3 and not set(evicted) & set(now) else None

    now = eventually(spread, what="evicted replicas recreated")
    assert len(set(now.values())) > 1, now


def test_low_node_utilization_with_the_seeds_thresholds(cluster, tmp_path):
    node = cluster.kubectl_json("get", "node", "node-1")
    cpu_m = int(node["status"]["allocatable"]["cpu"]) * 1000
    eighth = f"{cpu_m // 8}m"
    uid = replicaset(cluster, "big")
    # node-1: 75% cpu (overutilized), node-2: 12.5% (underutilized), node-3: 37.5% (neither).
    pods = [owned(f"big-{i}", "node-1", "big", uid=uid, cpu=eighth) for i in range(6)]
    pods += [owned("small-0", "node-2", "small", uid=uid, cpu=eighth)]
    pods += [owned(f"mid-{i}", "node-3", "mid", uid=uid, cpu=eighth) for i in range(3)]
    create(cluster, pods)
    report = deschedule(cluster, write_policy(tmp_path, SEED_LNU))
    moved = [e for e in report["evictions"] if e["strategy"] == "LowNodeUtilization"]
    # Two pods bring node-1 from 75% down to its 50% target.
    assert [e["name"] for e in moved] == ["big-0", "big-1"]
    assert all(e["node"] == "node-1" for e in moved)
    assert "underutilized: node-2" in moved[0]["reason"]
    eventually(lambda: "big-0" not in live_pods(cluster), what="big-0 evicted")


def test_the_seeds_anti_affinity_example_evicts_pod_a(cluster, tmp_path):
    uid = replicaset(cluster, "rs")
    against_a = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "a"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    create(cluster, [
        owned("pod-a", "node-1", "a", uid=uid, labels={"app": "a"}),
        owned("pod-b", "node-1", "b", uid=uid, affinity=against_a),
        owned("pod-c", "node-1", "c", uid=uid, affinity=against_a),
    ])
    report = deschedule(cluster, write_policy(tmp_path, ALL_BUT_LNU))
    assert evicted_names(report) == ["pod-a"]
    eventually(lambda: live_pods(cluster) == ["pod-b", "pod-c"], what="pod-a gone")


def test_a_node_label_change_breaking_required_node_affinity_evicts(cluster, tmp_path):
    uid = replicaset(cluster, "rs")
    for n in ("node-1", "node-2"):
        cluster.kubectl("label", "node", n, "disk=ssd")
    needs_ssd = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}}
    create(cluster, [owned("fast", "node-1", "rs", uid=uid, affinity=needs_ssd)])
    assert deschedule(cluster, write_policy(tmp_path, ALL_BUT_LNU))["evictions"] == []
    cluster.kubectl("label", "node", "node-1", "disk-")
    report = deschedule(cluster, write_policy(tmp_path, ALL_BUT_LNU))
    assert evicted_names(report) == ["fast"]
    assert report["evictions"][0]["strategy"] == "RemovePodsViolatingNodeAffinity"
    assert "node node-2 fits it" in report["evictions"][0]["reason"]
    eventually(lambda: live_pods(cluster) == [], what="fast evicted")


def test_a_pod_that_does_not_tolerate_its_nodes_taint_is_evicted(cluster, tmp_path):
    uid = replicaset(cluster, "rs")
    create(cluster, [
        owned("plain", "node-2", "a", uid=uid),
        owned("tolerant", "node-2", "b", uid=uid, tolerations=[
            {"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]),
    ])
    cluster.kubectl("taint", "node", "node-2", "dedicated=user1:NoSchedule")
    report = deschedule(cluster, write_policy(tmp_path, ALL_BUT_LNU))
    assert evicted_names(report) == ["plain"]
    assert "dedicated=user1:NoSchedule" in report["evictions"][0]["reason"]
    eventually(lambda: live_pods(cluster) == ["tolerant"], what="plain evicted")


def test_a_disruption_budget_blocks_the_eviction_and_the_report_says_so(cluster, tmp_path):
    uid = replicaset(cluster, "web")
    create(cluster, [owned(f"web-{i}", "node-1", "web", uid=uid, labels={"app": "web"})
                     for i in range(2)])
    cluster.kubectl("apply", "-f", "-", stdin={
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 2}})

    def settled():
        s = cluster.kubectl_json("get", "pdb", "web", "-n", NS).get("status") or {}
        return s.get("observedGeneration") and s.get("currentHealthy") == 2

    eventually(settled, what="the budget's status")
    policy = write_policy(tmp_path, ALL_BUT_LNU)
    report = deschedule(cluster, policy)
    [line] = report["evictions"]
    assert line["name"] == "web-1"
    assert line["outcome"]["result"] == "blockedByDisruptionBudget"
    assert "disruption budget" in line["outcome"]["message"]
    assert live_pods(cluster) == ["web-0", "web-1"]
    r = subprocess.run(
        [str(BERTH_BIN), "descheduler", "--kubeconfig", str(cluster.kubeconfig),
         "--policy-config-file", str(policy)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "skipped: PodDisruptionBudget" in r.stdout, r.stdout


def test_dry_run_changes_nothing(cluster, tmp_path):
    uid = replicaset(cluster, "web")
    create(cluster, [owned(f"web-{i}", "node-1", "web", uid=uid) for i in range(3)])

    def versions():
        items = cluster.kubectl_json("get", "pods", "-n", NS)["items"]
        return {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in items}

    before = versions()
    report = deschedule(cluster, write_policy(tmp_path, ALL_BUT_LNU), "--dry-run")
    assert report["dryRun"] is True
    assert [e["outcome"]["result"] for e in report["evictions"]] == ["wouldEvict"] * 2
    assert versions() == before
    events = cluster.kubectl_json("get", "events", "-n", NS)["items"]
    assert not [e for e in events if e.get("reason") == "Descheduled"]


def test_critical_standalone_and_daemonset_pods_are_never_evicted(cluster, tmp_path):
    uid = replicaset(cluster, "rs")
    critical = {"scheduler.alpha.kubernetes.io/critical-pod": "true"}
    pods = []
    for i in range(2):
        p = owned(f"critical-{i}", "node-2", "crit", uid=uid)
        p["metadata"]["annotations"] = critical
        pods.append(p)
        pods.append(owned(f"standalone-{i}", "node-2"))
        pods.append(owned(f"daemon-{i}", "node-2", "ds", kind="DaemonSet"))
    create(cluster, pods)
    cluster.kubectl("taint", "node", "node-2", "dedicated=user1:NoSchedule")
    report = deschedule(cluster, write_policy(tmp_path, ALL_BUT_LNU))
    assert report["evictions"] == []
    assert len(live_pods(cluster)) == 6


def test_a_bad_policy_file_names_the_field_and_evicts_nothing(cluster, tmp_path):
    uid = replicaset(cluster, "web")
    create(cluster, [owned(f"web-{i}", "node-1", "web", uid=uid) for i in range(2)])
    bad = write_policy(tmp_path, ALL_BUT_LNU.replace(
        "  \"RemoveDuplicates\":\n     enabled: true",
        "  \"RemoveDuplicates\":\n     enabled: maybe"), "bad.yaml")
    r = deschedule(cluster, bad, check=False)
    assert r.returncode != 0
    assert "bad.yaml" in r.stderr
    assert "strategy RemoveDuplicates" in r.stderr and "field enabled" in r.stderr, r.stderr
    assert live_pods(cluster) == ["web-0", "web-1"]


#: Seed 16.3.2's ClusterRole, as written (rbac v1beta1): what the descheduler may do.
SEED_CLUSTER_ROLE = """\
kind: ClusterRole
apiVersion: rbac.authorization.k8s.io/v1beta1
metadata:
  name: descheduler-cluster-role
rules:
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["get", "watch", "list"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "watch", "list", "delete"]
- apiGroups: [""]
  resources: ["pods/eviction"]
  verbs: ["create"]
"""


def grant_seed_descheduler_role(berth, bind=True):
    """Seed 16.3.2: the ClusterRole, the ServiceAccount and (with `bind`) the binding; a
    descheduler pod runs as its ServiceAccount, with exactly these rights."""
    berth.kubectl("create", "-f", "-", stdin=SEED_CLUSTER_ROLE)
    berth.kubectl("create", "sa", "descheduler-sa", "-n", "kube-system")
    if bind:
        berth.kubectl("create", "clusterrolebinding", "descheduler-cluster-role-binding",
                      "--clusterrole=descheduler-cluster-role",
                      "--serviceaccount=kube-system:descheduler-sa")


def test_a_bare_pod_running_bin_descheduler_succeeds_and_evicts(cluster):
    uid = replicaset(cluster, "web")
    create(cluster, [owned(f"web-{i}", "node-1", "web", uid=uid) for i in range(3)])
    grant_seed_descheduler_role(cluster)
    cluster.kubectl("create", "configmap", "descheduler-policy-configmap", "-n", "kube-system",
                    "--from-literal=policy.yaml=" + ALL_BUT_LNU)
    cluster.kubectl("apply", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "descheduler-pod", "namespace": "kube-system",
                     "annotations": {"scheduler.alpha.kubernetes.io/critical-pod": "true"}},
        "spec": {
            "nodeName": "node-3", "restartPolicy": "Never", "serviceAccountName": "descheduler-sa",
            "containers": [{
                "name": "descheduler",
                "image": "registry.access.redhat.com/openshift3/ose-descheduler",
                "volumeMounts": [{"mountPath": "/policy-dir", "name": "policy-volume"}],
                "command": ["/bin/sh", "-ec",
                            "/bin/descheduler --policy-config-file /policy-dir/policy.yaml\n"]}],
            "volumes": [{"name": "policy-volume",
                         "configMap": {"name": "descheduler-policy-configmap"}}]}})

    def finished():
        p = cluster.kubectl_json("get", "pod", "descheduler-pod", "-n", "kube-system")
        return p if p["status"].get("phase") in ("Succeeded", "Failed") else None

    p = eventually(finished, what="the descheduler pod to finish")
    state = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert p["status"]["phase"] == "Succeeded", state
    assert state["exitCode"] == 0
    assert "RemoveDuplicates: 2 chosen" in state["message"]
    eventually(lambda: live_pods(cluster) == ["web-0"], what="duplicates evicted")


def test_a_pod_with_a_missing_policy_file_fails_with_the_error(cluster):
    cluster.kubectl("apply", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "descheduler-pod", "namespace": NS},
        "spec": {"nodeName": "node-3", "restartPolicy": "Never",
                 "containers": [{"name": "descheduler", "image": "descheduler",
                                 "command": ["/bin/descheduler"],
                                 "args": ["--policy-config-file", "/policy-dir/policy.yaml"]}]}})

    def finished():
        p = cluster.kubectl_json("get", "pod", "descheduler-pod", "-n", NS)
        return p if p["status"].get("phase") in ("Succeeded", "Failed") else None

    p = eventually(finished, what="the descheduler pod to finish")
    assert p["status"]["phase"] == "Failed"
    state = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert state["exitCode"] == 1
    assert "/policy-dir/policy.yaml: no such file" in state["message"]


def test_serve_runs_the_descheduler_in_process(berth_factory, tmp_path):
    policy = write_policy(tmp_path, ALL_BUT_LNU)
    b = berth_factory(nodes=3, args=("--descheduler-policy", policy,
                                     "--descheduling-interval", "1s"))
    b.create_namespace(NS)
    uid = replicaset(b, "web")
    # Not waiting for Running: the in-process descheduler may evict web-1 before it starts.
    b.kubectl("apply", "-f", "-",
              stdin=[owned(f"web-{i}", "node-1", "web", uid=uid) for i in range(2)])
    eventually(lambda: live_pods(b) == ["web-0"], what="the in-process descheduler to evict web-1")
    # Its upstream metric is served with the API server's.
    metrics = eventually(lambda: [line for line in
                                  b.kubectl("get", "--raw", "/metrics").stdout.splitlines()
                                  if line.startswith("descheduler_pods_evicted{")
                                  and 'result="success"' in line],
                         what="descheduler_pods_evicted at /metrics")
    assert any('strategy="RemoveDuplicates"' in line and 'node="node-1"' in line
               for line in metrics), metrics


def test_serve_refuses_a_bad_descheduler_policy(tmp_path):
    bad = write_policy(tmp_path, "apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\n"
                                 "strategies:\n  RemoveDuplicates:\n    enabled: 3\n", "bad.yaml")
    r = subprocess.run([str(BERTH_BIN), "serve", "--port", "0", "--data-dir",
                        str(tmp_path / "data"), "--descheduler-policy", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "bad.yaml: strategy RemoveDuplicates: field enabled" in r.stderr, r.stderr


#: Seed 16.3.3's policy file, as written.
SEED_POLICY = """\
apiVersion: "descheduler/v1alpha1"
kind: "DeschedulerPolicy"
strategies:
  "RemovePodsViolatingNodeAffinity":
    enabled: true
    params:
      nodeAffinityType:
      - "requiredDuringSchedulingIgnoredDuringExecution"
"""

#: Seed 16.3.5's Job, as written.
SEED_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: descheduler-job
  namespace: kube-system
spec:
  parallelism: 1
  completions: 1
  template:
    metadata:
      name: descheduler-pod
      annotations:
        scheduler.alpha.kubernetes.io/critical-pod: "true"
    spec:
        containers:
        - name: descheduler
          image: registry.access.redhat.com/openshift3/ose-descheduler
          volumeMounts:
          - mountPath: /policy-dir
            name: policy-volume
          command:
          - "/bin/sh"
          - "-ec"
          - |
            /bin/descheduler --policy-config-file /policy-dir/policy.yaml
        restartPolicy: "Never"
        serviceAccountName: descheduler-sa
        volumes:
        - name: policy-volume
          configMap:
            name: descheduler-policy-configmap
"""


def job_pod(berth, job):
    items = berth.kubectl_json("get", "pods", "-n", "kube-system", "-l", f"job-name={job}")
    return items["items"][0] if items["items"] else None


def seed_16_3(berth, tmp_path, job=SEED_JOB, bind=True):
    """Seed 16.3.2-16.3.6 through kubectl (`oc` read as `kubectl`; the seed's
    `oc create sa descheduler-sa.yaml` names the account its Job and binding use,
    descheduler-sa)."""
    grant_seed_descheduler_role(berth, bind)
    policy_dir = tmp_path / "policy-dir"
    policy_dir.mkdir()
    (policy_dir / "policy.yaml").write_text(SEED_POLICY)
    berth.kubectl("create", "configmap", "descheduler-policy-configmap", "-n", "kube-system",
                  f"--from-file={policy_dir / 'policy.yaml'}")
    (tmp_path / "descheduler-job.yaml").write_text(job)
    berth.kubectl("create", "-f", str(tmp_path / "descheduler-job.yaml"))


def pinned_to_ssd(berth):
    """A controller-owned pod on node-1 that requires `disktype=ssd`, then the label moved to
    node-2: the seed's RemovePodsViolatingNodeAffinity case."""
    berth.kubectl("label", "node", "node-1", "disktype=ssd")
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "disktype", "operator": "In", "values": ["ssd"]}]}]}}}
    create(berth, [owned("pinned", "node-1", "pinned", uid=replicaset(berth, "pinned"),
                         affinity=affinity)])
    berth.kubectl("label", "node", "node-1", "disktype-")
    # Another node would take it: the strategy evicts only pods that fit elsewhere.
    berth.kubectl("label", "node", "node-2", "disktype=ssd")


def test_the_seeds_descheduler_job_completes_as_its_service_account(cluster, tmp_path):
    pinned_to_ssd(cluster)
    seed_16_3(cluster, tmp_path)
    eventually(lambda: cluster.kubectl_json("get", "job", "descheduler-job", "-n",
                                            "kube-system")["status"].get("succeeded") == 1,
               timeout=120, what="the seed's descheduler Job to complete")
    eventually(lambda: live_pods(cluster) == [], what="the pod violating node affinity evicted")
    # The eviction was the Job pod's ServiceAccount's: its token names the pod.
    p = job_pod(cluster, "descheduler-job")
    assert p["spec"]["serviceAccountName"] == "descheduler-sa"
    log = cluster.kubectl("logs", "-n", "kube-system", p["metadata"]["name"]).stdout
    assert "RemovePodsViolatingNodeAffinity" in log, log


def test_without_the_binding_the_seeds_job_fails_with_a_403(cluster, tmp_path):
    pinned_to_ssd(cluster)
    # The seed's procedure without step 3 (the binding); one try, so one pod to look at.
    job = SEED_JOB.replace("  parallelism: 1\n", "  parallelism: 1\n  backoffLimit: 0\n")
    seed_16_3(cluster, tmp_path, job=job, bind=False)

    def finished():
        p = job_pod(cluster, "descheduler-job")
        return p if p and p["status"].get("phase") in ("Succeeded", "Failed") else None

    p = eventually(finished, timeout=120, what="the descheduler pod to finish")
    assert p["status"]["phase"] == "Failed"
    state = p["status"]["containerStatuses"][0]["state"]["terminated"]
    who = "system:serviceaccount:kube-system:descheduler-sa"
    assert who in state["message"] and "forbidden" in state["message"], state
    log = cluster.kubectl("logs", "-n", "kube-system", p["metadata"]["name"]).stdout
    assert who in log and "forbidden" in log, log
    assert live_pods(cluster) == ["pinned"]
