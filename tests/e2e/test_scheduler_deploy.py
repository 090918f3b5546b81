"""The manifests in deploy/ (seed 16.4.2): the objects berth serves pass a server-side dry run,
the RBAC objects decode as the official client's models and grant what a second scheduler
needs (berth stores RBAC objects but enforces nothing; `test_api_gaps.py` applies them), and the
Deployment's command line, with the ConfigMap's policy, runs as a leader-elected scheduler."""

import json
import shlex
import time

import yaml
from kubernetes import client as k8s

from conftest import REPO, eventually
from scheduler_support import SchedulerProcess, lease_holder, pod, wait_bound

DEPLOY = REPO / "deploy"


def documents():
    docs = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def by_kind(kind):
    return [d for d in documents() if d["kind"] == kind]


def test_served_objects_pass_a_server_dry_run(berth):
    served = [d for d in documents() if not d["apiVersion"].startswith("rbac.")]
    assert {d["kind"] for d in served} == {"ServiceAccount", "ConfigMap", "Deployment"}
    r = berth.kubectl("apply", "--dry-run=server", "-f", "-", stdin=served)
    assert "serviceaccount/berth-scheduler created (server dry run)" in r.stdout
    assert "configmap/custom-scheduler-policy created (server dry run)" in r.stdout
    assert "deployment.apps/custom-scheduler created (server dry run)" in r.stdout


def test_rbac_objects_decode_and_grant_what_a_second_scheduler_needs():
    api = k8s.ApiClient()
    models = {"ClusterRole": "V1ClusterRole", "ClusterRoleBinding": "V1ClusterRoleBinding",
              "Role": "V1Role", "RoleBinding": "V1RoleBinding"}
    for doc in documents():
        if doc["kind"] in models:
            obj = api._ApiClient__deserialize(doc, models[doc["kind"]])
            assert obj.metadata.name
    bound = {d["roleRef"]["name"] for d in by_kind("ClusterRoleBinding")}
    assert {"system:kube-scheduler", "system:volume-scheduler", "berth-scheduler"} <= bound
    for b in by_kind("ClusterRoleBinding") + by_kind("RoleBinding"):
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": "berth-scheduler",
                                  "namespace": "kube-system"}]

    def granted(rules):
        out = set()
        for rule in rules:
            for res in rule["resources"]:
                for verb in rule["verbs"]:
                    out.add((res, verb))
        return out

    cluster = granted(by_kind("ClusterRole")[0]["rules"])
    for need in [("pods/binding", "create"), ("pods/status", "patch"), ("events", "create"),
                 ("events", "patch")]:
        assert need in cluster, need
    for res in ["nodes", "pods", "services", "replicationcontrollers", "replicasets",
                "statefulsets", "persistentvolumes", "persistentvolumeclaims",
                "storageclasses", "csinodes"]:
        for verb in ("list", "watch"):
            assert (res, verb) in cluster, (res, verb)
    role = by_kind("Role")[0]
    assert role["metadata"]["namespace"] == "kube-system"
    for verb in ("create", "get", "update"):
        assert ("leases", verb) in granted(role["rules"])


def test_the_deployments_command_runs_with_the_configmaps_policy(berth, ns, tmp_path):
    deployment = by_kind("Deployment")[0]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert args[0] == "scheduler"
    assert "--scheduler-name=custom-scheduler" in args and "--leader-elect" in args
    policy = tmp_path / "policy.json"
    policy.write_text(by_kind("ConfigMap")[0]["data"]["policy.json"])
    flags = [a.replace("/etc/berth/policy.json", str(policy)) for a in args[1:]
             if not a.startswith(("--metrics-bind-address", "--scheduler-name"))]
    s = SchedulerProcess(berth, "custom-scheduler", *flags,
                         log_path=tmp_path / "custom-scheduler.log")
    try:
        eventually(lambda: lease_holder(berth, "custom-scheduler") == s.identity(),
                   what="the Deployment's scheduler to take its lease")
        berth.kubectl("create", "-f", "-",
                      stdin=pod("opted-in", ns, schedulerName="custom-scheduler"))
        wait_bound(berth, ns, "opted-in")
        status, body = s.get("/readyz")
        assert status == 200, shlex.join(flags)
    finally:
        s.stop()
        berth.kubectl("delete", "lease", "custom-scheduler", "-n", "kube-system", check=False)


def running_pods(b, namespace, label):
    items = b.kubectl_json("get", "pods", "-n", namespace, "-l", label)["items"]
    return [p for p in items if p["status"].get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]


def test_the_deploy_dirs_scheduler_runs_in_pods_as_its_service_account(berth_factory):
    """deploy/ applied for real: the Deployment's two pods run berth's scheduler in process
    (berth's image, `args: [scheduler, ...]`) as kube-system:berth-scheduler, one holds the
    Lease and schedules `custom-scheduler` pods; deleted, they stop."""
    b = berth_factory(nodes=2)
    b.kubectl("apply", "-f", str(DEPLOY))
    eventually(lambda: len(running_pods(b, "kube-system", "app=custom-scheduler")) == 2,
               what="both scheduler pods running")
    names = {p["metadata"]["name"] for p in running_pods(b, "kube-system",
                                                         "app=custom-scheduler")}
    holder = eventually(lambda: lease_holder(b, "custom-scheduler"),
                        what="a scheduler pod to take the Lease")
    assert holder.split("_")[0] in names, holder
    b.create_namespace("apps")
    b.kubectl("create", "-f", "-", stdin=pod("opted-in", "apps", schedulerName="custom-scheduler"))
    wait_bound(b, "apps", "opted-in")
    event = eventually(lambda: [e for e in b.kubectl_json("get", "events", "-n", "apps")["items"]
                                if e["reason"] == "Scheduled"], what="the Scheduled event")
    assert "custom-scheduler" in json.dumps(event)
    # Deleted, the schedulers stop: a new pod naming them stays unbound.
    b.kubectl("delete", "deployment", "custom-scheduler", "-n", "kube-system")
    eventually(lambda: not b.kubectl_json("get", "pods", "-n", "kube-system", "-l",
                                          "app=custom-scheduler")["items"],
               what="the scheduler pods gone")
    # Give a scheduler that failed to stop time to act before looking.
    b.kubectl("create", "-f", "-", stdin=pod("after", "apps", schedulerName="custom-scheduler"))
    time.sleep(8)
    assert not b.kubectl_json("get", "pod", "after", "-n", "apps")["spec"].get("nodeName")


#: Seed 16.4.2's ServiceAccount and binding, as written, plus the binding to
#: system:volume-scheduler that upstream's "Configure Multiple Schedulers" adds (the scheduler
#: watches StorageClasses, which system:kube-scheduler does not grant, upstream as in berth);
#: its Deployment with the image's command spelled out (`ADD <binary>
#: /usr/local/bin/kube-scheduler`), one replica and no Lease (upstream's
#: system:kube-scheduler may renew only the `kube-scheduler` Lease).
SEED_16_4_2 = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: custom-scheduler
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: custom-scheduler
subjects:
- kind: ServiceAccount
  name: custom-scheduler
  namespace: kube-system
roleRef:
  kind: ClusterRole
  name: system:kube-scheduler
  apiGroup: rbac.authorization.k8s.io
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: custom-scheduler-as-volume-scheduler
subjects:
- kind: ServiceAccount
  name: custom-scheduler
  namespace: kube-system
roleRef:
  kind: ClusterRole
  name: system:volume-scheduler
  apiGroup: rbac.authorization.k8s.io
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: custom-scheduler
  namespace: kube-system
  labels:
    app: custom-scheduler
spec:
  replicas: 1
  selector:
    matchLabels:
      app: custom-scheduler
  template:
    metadata:
      labels:
        app: custom-scheduler
    spec:
      serviceAccount: custom-scheduler
      containers:
        - name: custom-scheduler
          image: "example/kube-scheduler:v1"
          imagePullPolicy: Always
          command:
          - /usr/local/bin/kube-scheduler
          - --scheduler-name=custom-scheduler
          - --leader-elect=false
"""


def test_the_seeds_custom_scheduler_deployment_schedules_as_system_kube_scheduler(berth_factory):
    b = berth_factory(nodes=2)
    b.kubectl("create", "-f", "-", stdin=SEED_16_4_2)
    eventually(lambda: running_pods(b, "kube-system", "app=custom-scheduler"),
               what="the custom scheduler pod running")
    b.create_namespace("apps")
    b.kubectl("create", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "custom-scheduler-example",
                     "labels": {"name": "multischeduler-example"}, "namespace": "apps"},
        "spec": {"schedulerName": "custom-scheduler",
                 "containers": [{"name": "pod-with-second-annotation-container",
                                 "image": "docker.io/ocpqe/hello-pod"}]}})
    wait_bound(b, "apps", "custom-scheduler-example")
    # Without its binding the scheduler may not bind: a new pod stays Pending.
    b.kubectl("delete", "clusterrolebinding", "custom-scheduler")
    b.kubectl("create", "-f", "-", stdin=pod("unbound", "apps", schedulerName="custom-scheduler"))
    time.sleep(5)
    assert not b.kubectl_json("get", "pod", "unbound", "-n", "apps")["spec"].get("nodeName")
