"""The API server's `/metrics` (issue 15, item 8): upstream's metric names, read with
`kubectl get --raw /metrics`, authorized by RBAC as upstream (the `system:monitoring` role,
bound to the group of that name; the admin passes), and the in-process components' metrics
(scheduler, node lifecycle, taint manager) in the same scrape.
"""

import re
import subprocess

import pytest

from conftest import BERTH_BIN, Berth, eventually, pod


@pytest.fixture(scope="module")
def mb(tmp_path_factory):
    d = tmp_path_factory.mktemp("berth-metrics")
    b = Berth.start(d / "data", nodes=2)
    users = {}
    for user, group in [("nobody", "dev"), ("prom", "system:monitoring")]:
        users[user] = d / f"{user}.kubeconfig"
        subprocess.run([str(BERTH_BIN), "kubeconfig", "--user", user, "--group", group,
                        "--data-dir", str(b.data_dir), "-o", str(users[user])],
                       check=True, capture_output=True, text=True)
    yield b, users
    b.stop()


def raw_metrics(b, kubeconfig=None):
    args = ["get", "--raw", "/metrics"]
    if kubeconfig:
        r = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args],
                           capture_output=True, text=True, timeout=60)
        return r
    return b.kubectl(*args)


def sample(text, metric, **labels):
    """The value of the series `metric` whose labels include `labels` (None if absent)."""
    for line in text.splitlines():
        if not line.startswith(metric + "{") and not line.startswith(metric + " "):
            continue
        m = re.match(r"^([^{ ]+)(?:\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != metric:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            return float(m.group(3))
    return None


def test_admin_reads_upstream_names_and_counters_move(mb):
    b, _ = mb
    # The node lifecycle controller reports its zones after its first pass (5 s).
    eventually(lambda: "node_collector_zone_size{" in raw_metrics(b).stdout,
               what="zone sizes reported")
    text = raw_metrics(b).stdout
    for name in ["apiserver_request_total", "apiserver_request_duration_seconds_bucket",
                 "apiserver_current_inflight_requests", "apiserver_storage_objects",
                 "process_resident_memory_bytes", "scheduler_schedule_attempts_total",
                 "node_collector_zone_size", "taint_eviction_controller_pod_deletions_total"]:
        assert name in text, name
    # Prometheus text 0.0.4 (OpenMetrics' `# EOF` only when asked for: test_observability.py).
    assert "# EOF" not in text
    assert "# TYPE apiserver_request_total counter" in text
    labels = dict(verb="LIST", resource="namespaces", scope="cluster", code="200")
    before = sample(text, "apiserver_request_total", **labels) or 0
    for _ in range(3):
        b.kubectl("get", "namespaces")
    after = sample(raw_metrics(b).stdout, "apiserver_request_total", **labels)
    assert after is not None and after >= before + 3
    # Stored objects: the namespaces that exist, counted from the store.
    ns = sample(text, "apiserver_storage_objects", resource="namespaces")
    assert ns is not None and ns >= 4
    # A 404 is counted with its code.
    b.kubectl("get", "pod", "no-such-pod", "-n", "default", check=False)
    text = raw_metrics(b).stdout
    assert sample(text, "apiserver_request_total", verb="GET", resource="pods",
                  code="404") >= 1


def test_the_scheduler_counts_in_the_same_scrape(mb):
    b, _ = mb
    b.create_namespace("metrics-sched")
    b.kubectl("apply", "-f", "-", stdin=pod("scheduled", namespace="metrics-sched", scheduler=None))
    eventually(lambda: sample(raw_metrics(b).stdout, "scheduler_schedule_attempts_total",
                              result="scheduled") >= 1, what="a scheduling attempt counted")


def test_a_user_without_the_role_gets_403_and_the_monitoring_group_reads(mb):
    b, users = mb
    r = raw_metrics(b, users["nobody"])
    assert r.returncode != 0
    assert "Forbidden" in r.stderr or "forbidden" in r.stderr, r.stderr
    r = raw_metrics(b, users["prom"])
    assert r.returncode == 0, r.stderr
    assert "apiserver_request_total" in r.stdout
    # The denial itself is counted, with its code.
    assert sample(raw_metrics(b).stdout, "apiserver_request_total", verb="GET",
                  code="403") >= 1


def test_the_store_latency_is_counted_per_operation_and_resource(mb):
    b, _ = mb
    b.create_namespace("metrics-store")
    b.kubectl("create", "configmap", "c", "-n", "metrics-store", "--from-literal=a=b")
    b.kubectl("get", "configmap", "c", "-n", "metrics-store")
    b.kubectl("get", "configmaps", "-n", "metrics-store")
    b.kubectl("label", "configmap", "c", "-n", "metrics-store", "checked=yes")
    b.kubectl("delete", "configmap", "c", "-n", "metrics-store")
    text = raw_metrics(b).stdout
    for operation in ("create", "get", "list", "update", "delete"):
        count = sample(text, "etcd_request_duration_seconds_count", operation=operation,
                       type="configmaps")
        assert count is not None and count >= 1, operation
    # Group resources are named as upstream's storage names them.
    assert sample(text, "etcd_request_duration_seconds_count", operation="create",
                  type="leases.coordination.k8s.io") >= 1


WORK_QUEUES = ["deployment", "replicaset", "replicationmanager", "job", "cronjob", "daemonset",
               "statefulset", "namespace", "horizontalpodautoscaler",
               "garbage_collector_attempt_to_delete", "garbage_collector_attempt_to_orphan",
               # Every other controller `berth serve` runs, under kube-controller-manager's
               # queue names.
               "endpoint", "endpoint_slice", "serviceaccount", "serviceaccount_tokens_service",
               "serviceaccount_tokens_secret", "resourcequota_primary",
               "resourcequota_priority", "node_lifecycle_controller",
               "node_lifecycle_controller_pods", "noexec_taint_node", "noexec_taint_pod",
               "ClusterRoleAggregator", "root_ca_cert_publisher", "certificate", "disruption",
               "orphaned_pods_nodes", "volumes", "claims", "ttl_jobs_to_delete"]


def test_the_controllers_work_queues_move_when_they_work(mb):
    """Issue 32: upstream's `workqueue_*` series, one `name` per controller queue; a Deployment
    rolled out is an add and a sync of the deployment and replicaset queues."""
    b, _ = mb
    text = raw_metrics(b).stdout
    for name in WORK_QUEUES:
        for series in ["workqueue_adds_total", "workqueue_depth", "workqueue_retries_total",
                       "workqueue_unfinished_work_seconds",
                       "workqueue_longest_running_processor_seconds",
                       "workqueue_queue_duration_seconds_count",
                       "workqueue_work_duration_seconds_count"]:
            assert sample(text, series, name=name) is not None, (series, name)
    assert "# TYPE workqueue_adds_total counter" in text
    assert "# TYPE workqueue_work_duration_seconds histogram" in text
    assert "# TYPE workqueue_depth gauge" in text
    # Upstream's buckets: ten powers of ten from 1µs to 1000s, then +Inf.
    buckets = [l for l in text.splitlines()
               if l.startswith("workqueue_work_duration_seconds_bucket{")
               and 'name="deployment"' in l]
    assert len(buckets) == 11 and 'le="+Inf"' in buckets[-1], buckets
    before = {q: (sample(text, "workqueue_adds_total", name=q),
                  sample(text, "workqueue_work_duration_seconds_count", name=q))
              for q in ["deployment", "replicaset"]}
    b.create_namespace("metrics-queues")
    b.kubectl("create", "deployment", "web", "-n", "metrics-queues", "--image=nginx",
              "--replicas=2")

    def moved():
        now = raw_metrics(b).stdout
        return all(sample(now, "workqueue_adds_total", name=q) > before[q][0]
                   and sample(now, "workqueue_work_duration_seconds_count", name=q) > before[q][1]
                   for q in before)

    eventually(moved, what="the deployment and replicaset queues counted the rollout")
    # Idle again: nothing waits in the queues once the rollout's passes are done.
    eventually(lambda: sample(raw_metrics(b).stdout, "workqueue_depth", name="deployment") == 0,
               what="the deployment queue drained")


def test_the_endpoints_service_account_and_quota_queues_count_their_keys(mb):
    """Issue 32: a Service is a key of the endpoint and endpoint_slice queues, a new namespace
    one of the serviceaccount queue, a new quota (no usage yet) one of resourcequota_priority."""
    b, _ = mb
    queues = ["endpoint", "endpoint_slice", "serviceaccount", "resourcequota_priority",
              "root_ca_cert_publisher", "noexec_taint_pod"]
    text = raw_metrics(b).stdout
    before = {q: sample(text, "workqueue_work_duration_seconds_count", name=q) for q in queues}
    b.create_namespace("metrics-more-queues")
    b.kubectl("create", "service", "clusterip", "web", "-n", "metrics-more-queues",
              "--tcp=80:80")
    b.kubectl("apply", "-f", "-", stdin=pod("p", namespace="metrics-more-queues"))
    b.kubectl("create", "quota", "q", "-n", "metrics-more-queues", "--hard=pods=5")

    def moved():
        now = raw_metrics(b).stdout
        late = [q for q in queues
                if not sample(now, "workqueue_work_duration_seconds_count", name=q) > before[q]]
        return not late

    eventually(moved, what="every queue counted its new keys")
    now = raw_metrics(b).stdout
    for q in queues:
        assert sample(now, "workqueue_adds_total", name=q) >= 1, q


def test_plugin_durations_are_sampled_in_one_cycle_of_ten(mb):
    """Issue 32: `scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}`,
    measured as upstream in a sample of the scheduling cycles (one in ten)."""
    b, _ = mb
    b.create_namespace("metrics-plugins")
    for i in range(12):
        b.kubectl("apply", "-f", "-",
                  stdin=pod(f"p{i}", namespace="metrics-plugins", scheduler=None))

    def sampled():
        text = raw_metrics(b).stdout
        return sample(text, "scheduler_plugin_execution_duration_seconds_count",
                      plugin="TaintToleration", extension_point="Filter",
                      status="Success") and text

    text = eventually(sampled, what="a sampled cycle's plugin durations")
    assert "# TYPE scheduler_plugin_execution_duration_seconds histogram" in text
    # Scores are sampled too (the requested-resources priorities are NodeResourcesFit's), and
    # upstream's buckets start at 10µs.
    assert sample(text, "scheduler_plugin_execution_duration_seconds_count",
                  plugin="NodeResourcesFit", extension_point="Score", status="Success") >= 1
    assert sample(text, "scheduler_plugin_execution_duration_seconds_bucket",
                  plugin="TaintToleration", extension_point="Filter", status="Success",
                  le="0.00001") is not None


def test_berth_controllers_serves_the_work_queues_of_the_controllers_it_runs(mb, tmp_path):
    """`berth controllers --metrics-bind-address` serves the same `workqueue_*` series for the
    controllers it runs, under kube-controller-manager's queue names."""
    import socket
    import urllib.request

    b, _ = mb
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path / "controllers.log", "wb")
    proc = subprocess.Popen(
        [str(BERTH_BIN), "controllers", "--kubeconfig", str(b.kubeconfig),
         "--leader-elect=false", f"--metrics-bind-address=127.0.0.1:{port}",
         "--controllers=endpoints-controller,serviceaccount-controller,"
         "resourcequota-controller,clusterrole-aggregation-controller"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        def scrape():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    return r.read().decode()
            except OSError:
                return None

        queues = ["endpoint", "endpoint_slice", "serviceaccount", "resourcequota_primary",
                  "resourcequota_priority", "ClusterRoleAggregator"]
        # Each has synced its first pass (every Service, namespace and aggregated role).
        text = eventually(lambda: (t := scrape()) and all(
            sample(t, "workqueue_adds_total", name=q) is not None for q in queues)
            and sample(t, "workqueue_adds_total", name="serviceaccount") >= 1
            and sample(t, "workqueue_adds_total", name="ClusterRoleAggregator") >= 1 and t,
            what="the controllers' work queues")
        assert sample(text, "workqueue_depth", name="endpoint") is not None
        assert "# HELP workqueue_adds_total [BETA] Total number of adds handled by workqueue\n" \
            in text
        # Only the controllers it runs.
        assert sample(text, "workqueue_adds_total", name="deployment") is None
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
