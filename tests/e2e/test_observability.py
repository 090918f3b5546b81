"""What an administrator watches (issue 32, items 3 and 4): `/metrics` read by Prometheus' own
text parser with every family's type; a custom scheduler deployed as seed 16.4 says, in
`kubectl logs`, in klog's lines, why it schedules nothing (one line per error), and schedules
once its account may; a fatal error ends its container with exit code 1; berth's clients send a
User-Agent the access log shows."""

import json
import re
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import eventually
from scheduler_support import SchedulerProcess, pod, wait_bound

KLOG = re.compile(r"^[IWE]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [\w.]+:\d+\] \".*\"")


def families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_metrics_are_prometheus_text_with_types(berth):
    # A scheduled pod moves the scheduler's and the API server's counters.
    raw = berth.kubectl("get", "--raw", "/metrics").stdout
    fams = families(raw)
    want = {
        "apiserver_request": "counter",
        "apiserver_request_duration_seconds": "histogram",
        "apiserver_storage_objects": "gauge",
        "etcd_request_duration_seconds": "histogram",
        "rest_client_requests": "counter",
        "scheduler_schedule_attempts": "counter",
        "scheduler_pending_pods": "gauge",
        "scheduler_e2e_scheduling_duration_seconds": "histogram",
        "scheduler_pod_scheduling_attempts": "histogram",
        "process_cpu_seconds": "counter",
    }
    for name, kind in want.items():
        assert name in fams, f"{name} missing"
        assert fams[name].type == kind, (name, fams[name].type)
    assert not [n for n, f in fams.items() if f.type == "unknown" and n.endswith("_total")]
    assert "# EOF" not in raw


def test_a_standalone_schedulers_metrics_and_user_agent(berth, tmp_path, ns, monkeypatch):
    monkeypatch.setenv("BERTH_LOG", "warn")
    s = SchedulerProcess(berth, "obs-scheduler", "--leader-elect=false",
                         log_path=tmp_path / "scheduler.log")
    try:
        berth.kubectl("create", "-f", "-", stdin=pod("opted-in", ns, schedulerName="obs-scheduler"))
        wait_bound(berth, ns, "opted-in")
        with urllib.request.urlopen(s.metrics_url + "/metrics", timeout=10) as r:
            assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            fams = families(r.read().decode())
        assert fams["scheduler_schedule_attempts"].type == "counter"
        scheduled = [x for x in fams["scheduler_schedule_attempts"].samples
                     if x.labels.get("result") == "scheduled"]
        assert scheduled and scheduled[0].value >= 1
        # Upstream's attempt metrics carry the profile: the scheduler's name.
        assert {x.labels.get("profile") for x in scheduled} == {"obs-scheduler"}
        durations = [x for x in fams["scheduler_scheduling_attempt_duration_seconds"].samples
                     if x.name.endswith("_count") and x.labels.get("result") == "scheduled"]
        assert durations and durations[0].labels["profile"] == "obs-scheduler"
        codes = {x.labels["code"] for x in fams["rest_client_requests"].samples}
        assert "200" in codes or "201" in codes, codes
        # OpenMetrics only when asked for.
        req = urllib.request.Request(s.metrics_url + "/metrics", headers={
            "Accept": "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
            text = r.read().decode()
        assert "# TYPE scheduler_schedule_attempts counter" in text and text.endswith("# EOF\n")
    finally:
        s.stop()


#: Seed 16.4.2 as written: the ServiceAccount and its one binding, to system:kube-scheduler;
#: the Deployment with upstream's "Configure Multiple Schedulers" command line (its
#: `--address=0.0.0.0` included).
SEED_16_4 = """\
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
          - --address=0.0.0.0
          - --leader-elect=false
          - --scheduler-name=custom-scheduler
"""


def scheduler_pod(b):
    items = b.kubectl_json("get", "pods", "-n", "kube-system", "-l", "app=custom-scheduler")["items"]
    running = [p for p in items if p["status"].get("phase") == "Running"
               and not p["metadata"].get("deletionTimestamp")]
    return running[0]["metadata"]["name"] if running else None


def logs(b, name):
    return b.kubectl("logs", "-n", "kube-system", name).stdout


def test_the_seeds_custom_scheduler_shows_why_in_its_log_then_schedules(berth_factory):
    b = berth_factory(nodes=2)
    b.kubectl("create", "-f", "-", stdin=SEED_16_4)
    name = eventually(lambda: scheduler_pod(b), what="the custom scheduler pod running")
    b.create_namespace("apps")
    b.kubectl("create", "-f", "-", stdin=pod("custom-scheduler-example", "apps",
                                             schedulerName="custom-scheduler"))
    forbidden = "*v1.StorageClass: storageclasses.storage.k8s.io is forbidden"
    eventually(lambda: forbidden in logs(b, name), what="the StorageClass 403 in kubectl logs")
    # The watch retries every second; the log says it once, in klog's shape, no debug dump.
    time.sleep(4)
    text = logs(b, name)
    assert "Flag --address has been deprecated, see --bind-address instead." in text
    assert text.count(forbidden) == 1, text
    assert "ErrorResponse" not in text and "Status {" not in text, text
    klog = [line for line in text.splitlines() if forbidden in line]
    assert KLOG.match(klog[0]), klog[0]
    assert klog[0].startswith("W")
    assert 'User \\"system:serviceaccount:kube-system:custom-scheduler\\"' in klog[0]
    # berth's own log does not carry the container's lines.
    assert forbidden not in b.log_path.read_text()
    # Bound to what the message says is missing, the scheduler lists and schedules.
    b.kubectl("create", "clusterrolebinding", "custom-scheduler-volumes",
              "--clusterrole=system:volume-scheduler",
              "--serviceaccount=kube-system:custom-scheduler")
    wait_bound(b, "apps", "custom-scheduler-example", timeout=90)
    assert "informers synced" in logs(b, name)
    # --timestamps prefixes each line of the program's too.
    stamped = b.kubectl("logs", "-n", "kube-system", name, "--timestamps").stdout
    assert any(re.match(r"^\d{4}-\d\d-\d\dT\S+Z W\d{4} ", line) for line in stamped.splitlines())


def test_a_fatal_error_is_logged_once_and_exits_1(berth_factory):
    b = berth_factory(nodes=1)
    b.kubectl("create", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "bad-scheduler", "namespace": "kube-system"},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "kube-scheduler", "image": "example/kube-scheduler:v1",
            "command": ["/usr/local/bin/kube-scheduler", "--leader-elect=false",
                        "--policy-configmap=missing-policy"]}]}})

    def terminated():
        p = b.kubectl_json("get", "pod", "bad-scheduler", "-n", "kube-system")
        for s in p["status"].get("containerStatuses") or []:
            if s["state"].get("terminated"):
                return s["state"]["terminated"]
        return None

    t = eventually(terminated, what="the scheduler's container to end")
    assert t["exitCode"] == 1
    assert "couldn't get policy config map kube-system/missing-policy" in t["message"]
    text = b.kubectl("logs", "-n", "kube-system", "bad-scheduler").stdout
    failed = [line for line in text.splitlines() if '"command failed"' in line]
    assert len(failed) == 1, text
    assert failed[0].startswith("E") and KLOG.match(failed[0]), failed[0]
    assert 'err="couldn\'t get policy config map kube-system/missing-policy' in failed[0]
    assert "Flag --policy-configmap has been deprecated" in text


def test_an_unknown_flag_prints_usage_and_exits_1(berth_factory):
    b = berth_factory(nodes=1)
    b.kubectl("create", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "typo-scheduler", "namespace": "kube-system"},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "kube-scheduler", "image": "example/kube-scheduler:v1",
            "command": ["/usr/local/bin/kube-scheduler", "--no-such-flag"]}]}})
    eventually(lambda: b.kubectl_json("get", "pod", "typo-scheduler", "-n", "kube-system")
               ["status"].get("phase") == "Failed", what="the pod to fail")
    text = b.kubectl("logs", "-n", "kube-system", "typo-scheduler").stdout
    assert "Error: unexpected argument '--no-such-flag' found" in text, text
    assert "error: error:" not in text


def test_the_access_log_shows_each_clients_user_agent(berth_factory, monkeypatch, tmp_path):
    monkeypatch.setenv("BERTH_LOG", "warn,berth::access=info")
    b = berth_factory(nodes=1)
    s = SchedulerProcess(b, "ua-scheduler", "--leader-elect=false",
                         log_path=tmp_path / "scheduler.log")
    try:
        pattern = re.compile(r'userAgent="kube-scheduler/v[\d.]+ \(linux/\w+\) berth"')
        eventually(lambda: pattern.search(b.log_path.read_text()),
                   what="the scheduler's requests in the access log")
        # The in-process kubelets and controllers, too.
        text = b.log_path.read_text()
        assert re.search(r'userAgent="kubelet/v[\d.]+ \(linux/\w+\) berth"', text)
        assert 'logger="berth::access"' in text
    finally:
        s.stop()


def test_json_logs_follow_upstreams_schema(berth_factory, monkeypatch):
    monkeypatch.setenv("BERTH_LOG", "warn,berth::access=info")
    b = berth_factory(nodes=1, args=("--logging-format=json",))
    b.kubectl("get", "pods")
    lines = [json.loads(line) for line in b.log_path.read_text().splitlines()
             if line.startswith("{")]
    access = [x for x in lines if x.get("logger") == "berth::access" and x.get("msg") == "HTTP"]
    assert access, lines[-5:]
    x = access[-1]
    assert isinstance(x["ts"], float) and x["v"] == 0 and ".rs:" in x["caller"]
    assert isinstance(x["resp"], int)


@pytest.mark.parametrize("flag", ["-v=2", "--v=4"])
def test_verbosity_flags_are_accepted(berth_factory, flag):
    b = berth_factory(nodes=1, args=(flag,))
    assert b.kubectl("get", "nodes").returncode == 0


def lists_of(b, resource):
    """How many LISTs of `resource` the API server answered (each informer lists once, then
    watches: the watch is counted only when it ends)."""
    fams = families(b.kubectl("get", "--raw", "/metrics").stdout)
    return sum(s.value for s in fams["apiserver_request"].samples
               if s.name == "apiserver_request_total" and s.labels.get("verb") == "LIST"
               and s.labels.get("resource") == resource)


def test_the_controllers_open_one_watch_per_kind(berth_factory):
    b = berth_factory(nodes=1)
    # Jobs were read by the job, CronJob and garbage collector controllers, ControllerRevisions
    # by the DaemonSet, StatefulSet and garbage collector ones: one list and watch each now.
    # (Claims are shared too, but the scheduler, another component, lists them as well.)
    kinds = ["jobs", "controllerrevisions", "cronjobs"]
    eventually(lambda: all(lists_of(b, k) >= 1 for k in kinds), what="the controllers' lists")
    time.sleep(3)
    assert {k: lists_of(b, k) for k in kinds} == {k: 1 for k in kinds}


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_per_pod_lines_are_upstreams_at_v2(berth_factory, fmt):
    """kube-scheduler's per-pod lines at -v=2 (`schedule_one.go`), and the kubelet's admission
    line, with upstream's messages and keys in klog text and in JSON (`pod` is klog's object
    reference: `ns/name` in text, `{"name","namespace"}` in JSON)."""
    b = berth_factory(nodes=3, args=("--v=2", f"--logging-format={fmt}"))
    b.create_namespace("per-pod")
    b.kubectl("create", "-f", "-", stdin=pod("fits", "per-pod"))
    b.kubectl("create", "-f", "-", stdin=pod("nofit", "per-pod", nodeSelector={"disk": "none"}))
    node = b.kubectl_json("get", "nodes")["items"][0]["metadata"]["name"]
    b.kubectl("create", "-f", "-", stdin=pod("denied", "per-pod", nodeName=node,
                                              nodeSelector={"disk": "none"}))
    wait_bound(b, "per-pod", "fits")

    def failed_scheduling():
        events = b.kubectl_json("get", "events", "-n", "per-pod",
                                "--field-selector=reason=FailedScheduling,"
                                "involvedObject.name=nofit")["items"]
        return events and events[0]["message"]

    message = eventually(failed_scheduling, what="the FailedScheduling event")
    bound_node = b.kubectl_json("get", "pod", "fits", "-n", "per-pod")["spec"]["nodeName"]

    if fmt == "text":
        def line(msg, **keys):
            text = b.log_path.read_text()
            want = f'"{msg}"' + "".join(f" {k}={v}" for k, v in keys.items())
            return next((l for l in text.splitlines() if want in l), None)

        bound = eventually(lambda: line("Successfully bound pod to node", pod='"per-pod/fits"',
                                        node=f'"{bound_node}"', evaluatedNodes=3,
                                        feasibleNodes=3),
                           what="the bound line")
        assert KLOG.match(bound), bound
        nofit = eventually(lambda: line("Unable to schedule pod; no fit; waiting",
                                        pod='"per-pod/nofit"'), what="the no-fit line")
        assert nofit.endswith(f' err="{message}"'), (nofit, message)
        # The default policy's words (1.11's: `didn't match node selector`).
        assert message.startswith("0/3 nodes are available: 3 node(s) didn't match"), message
        denied = eventually(lambda: line("Pod admission denied"), what="the admission line")
        assert 'pod="per-pod/denied" reason="NodeAffinity" message="' in denied, denied
        return

    def record(msg, pod_name):
        for l in b.log_path.read_text().splitlines():
            if not l.startswith("{"):
                continue
            x = json.loads(l)
            if x.get("msg") == msg and x.get("pod", {}).get("name") == pod_name:
                return x
        return None

    bound = eventually(lambda: record("Successfully bound pod to node", "fits"),
                       what="the bound record")
    assert bound["pod"] == {"name": "fits", "namespace": "per-pod"}, bound
    assert bound["v"] == 2 and bound["node"] == bound_node, bound
    assert bound["evaluatedNodes"] == 3 and bound["feasibleNodes"] == 3, bound
    nofit = eventually(lambda: record("Unable to schedule pod; no fit; waiting", "nofit"),
                       what="the no-fit record")
    assert nofit["v"] == 2 and nofit["err"] == message, nofit
    denied = eventually(lambda: record("Pod admission denied", "denied"),
                        what="the admission record")
    assert denied["reason"] == "NodeAffinity" and denied["message"], denied
    assert denied["pod"] == {"name": "denied", "namespace": "per-pod"}, denied
