"""berth on etcd: several `berth serve` replicas over one etcd serve one cluster.

Needs the `etcd` binary (Debian's etcd-server; `scripts/test` installs it). Skipped with a
message only when etcd is absent and `CI` is unset; in CI these always run.
"""

import json
import os
import signal
import ssl
import struct
import threading
import urllib.request
import time
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from conftest import Berth, eventually, pod
from etcd_support import EtcdCluster, etcd_installed
from protobuf_wire import pb_get, unknown

if not etcd_installed() and not os.environ.get("CI"):
    pytest.skip("etcd is not installed (apt-get install etcd-server); CI runs these",
                allow_module_level=True)

LEASE = "berth-control-plane"
# Short election timings keep the failover test quick; nothing asserts on durations.
ELECTION = ("--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "5s",
            "--leader-elect-retry-period", "1s")


def replica(data_dir, cluster, nodes=0, extra=()):
    return Berth.start(data_dir, nodes=nodes,
                       args=("--etcd-servers", cluster.urls, *ELECTION, *extra))


class Recorder:
    """A watch through one replica, recording every event in a thread."""

    def __init__(self, list_call, namespace, resource_version, until=None):
        self.events = []
        self.error = None
        self._watch = k8s_watch.Watch()
        self._args = (list_call, namespace, resource_version)
        self._until = until
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        list_call, namespace, rv = self._args
        try:
            for event in self._watch.stream(list_call, namespace=namespace, resource_version=rv,
                                            timeout_seconds=90):
                self.events.append(event)
                if self._until and self._until(self.events):
                    break
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def join(self, timeout):
        self._thread.join(timeout)
        self._watch.stop()


@pytest.fixture
def cleanup():
    things = []
    yield things.append
    for thing in reversed(things):
        thing.stop()


def fresh_namespace(b, ns):
    """Creates `ns` through `b` and waits for the root CA publisher's `kube-root-ca.crt`, as
    upstream's e2e framework does, so the writes a test watches are the only ones after it."""
    b.create_namespace(ns)
    deadline = time.monotonic() + 30
    while True:
        names = [c.metadata.name for c in b.core.list_namespaced_config_map(ns).items]
        if "kube-root-ca.crt" in names:
            return
        assert time.monotonic() < deadline, f"no kube-root-ca.crt in {ns}"
        time.sleep(0.1)


def test_a_watch_on_one_replica_sees_writes_through_another_in_revision_order(tmp_path, cleanup):
    cluster = EtcdCluster.start(1, tmp_path / "etcd")
    cleanup(cluster)
    a = replica(tmp_path / "a", cluster)
    cleanup(a)
    b = replica(tmp_path / "b", cluster)
    cleanup(b)
    ns = f"cross-{uuid.uuid4().hex[:6]}"
    fresh_namespace(b, ns)
    start = a.core.list_namespaced_config_map(ns).metadata.resource_version
    count = 30
    recorder = Recorder(a.core.list_namespaced_config_map, ns, start,
                        until=lambda events: len(events) >= count + 5)
    written = []
    for i in range(count):
        body = {"metadata": {"name": f"cm-{i:02}"}, "data": {"i": str(i)}}
        created = b.core.create_namespaced_config_map(ns, body)
        written.append(("ADDED", created.metadata.name, created.metadata.resource_version))
        if i % 6 == 0:
            created.data["i"] = f"{i}-changed"
            updated = b.core.replace_namespaced_config_map(created.metadata.name, ns, created)
            written.append(("MODIFIED", updated.metadata.name, updated.metadata.resource_version))
    recorder.join(timeout=30)
    assert recorder.error is None, recorder.error
    seen = [(e["type"], e["object"].metadata.name, e["object"].metadata.resource_version)
            for e in recorder.events]
    assert seen == written
    revisions = [int(rv) for _, _, rv in seen]
    assert revisions == sorted(revisions) and len(set(revisions)) == len(revisions)
    # And a read through A of what B wrote, at B's revision.
    assert len(a.core.list_namespaced_config_map(ns).items) == count + 1  # and kube-root-ca.crt


def lease_holder(b):
    lease = k8s.CoordinationV1Api(b.api_client).read_namespaced_lease(LEASE, "kube-system")
    return lease.spec.holder_identity


def test_ha_kill_the_etcd_leader_then_the_leading_replica(tmp_path, cleanup):
    cluster = EtcdCluster.start(3, tmp_path / "etcd")
    cleanup(cluster)
    a = replica(tmp_path / "a", cluster, nodes=3)
    cleanup(a)
    first = eventually(lambda: lease_holder(a), timeout=30, what="a replica leads")
    b = replica(tmp_path / "b", cluster, nodes=3)
    cleanup(b)
    assert lease_holder(b) == first, "the first replica keeps the lease"
    ns = f"ha-{uuid.uuid4().hex[:6]}"
    b.create_namespace(ns)
    start = b.core.list_namespaced_pod(ns).metadata.resource_version
    recorder = Recorder(b.core.list_namespaced_pod, ns, start)

    acknowledged = []
    total = 45

    def create(server, i):
        body = pod(f"p-{i:03}", scheduler=None,
                   resources={"requests": {"cpu": "10m", "memory": "16Mi"}})
        try:
            server.core.create_namespaced_pod(ns, body)
            acknowledged.append(body["metadata"]["name"])
        except Exception as e:  # noqa: BLE001 - an unacknowledged create may be lost
            print(f"create p-{i:03} failed (not acknowledged): {e}")

    killed_replica_at = None
    for i in range(total):
        if i == 15:
            leader = cluster.leader()
            print(f"killing the etcd leader {leader.name}")
            leader.kill()
        if i == 30:
            print("killing the leading berth replica (kill -9)")
            a.kill()
            killed_replica_at = time.monotonic()
        create(a if (i % 2 and a.running) else b, i)

    def all_bound():
        pods = b.core.list_namespaced_pod(ns).items
        names = {p.metadata.name for p in pods}
        missing = [n for n in acknowledged if n not in names]
        assert not missing, f"acknowledged creates missing: {missing}"
        unbound = [p.metadata.name for p in pods if not p.spec.node_name]
        return not unbound

    eventually(all_bound, timeout=60, what="every pod bound")
    print(f"every pod bound {time.monotonic() - killed_replica_at:.1f}s after the leading "
          f"replica died (lease duration 6s)")
    # Each component has its Lease now: the pods may have been bound by a scheduler that led
    # on the survivor all along, while the kubelets' Lease moves once its 6s have run out.
    eventually(lambda: lease_holder(b) != first, timeout=30,
               what="the surviving replica took the lease over")
    recorder.join(timeout=2)
    nodes_seen = {}
    for event in recorder.events:
        p = event["object"]
        if p.spec.node_name:
            nodes_seen.setdefault(p.metadata.name, set()).add(p.spec.node_name)
    twice = {name: nodes for name, nodes in nodes_seen.items() if len(nodes) > 1}
    assert not twice, f"pods bound twice: {twice}"
    assert len(acknowledged) >= total - 5, "most creates were acknowledged"


def holders(b):
    """Every control-plane Lease in kube-system and the replica identity holding it."""
    leases = k8s.CoordinationV1Api(b.api_client).list_namespaced_lease("kube-system").items
    return {lease.metadata.name: lease.spec.holder_identity for lease in leases}


def test_each_group_of_loops_is_elected_through_its_own_lease(tmp_path, cleanup):
    cluster = EtcdCluster.start(1, tmp_path / "etcd")
    cleanup(cluster)
    # A never campaigns for the scheduler's Lease, so B leads the scheduler while A leads the
    # controllers and the simulated nodes: a replica may lead some loops and not others.
    a = replica(tmp_path / "a", cluster, nodes=2, extra=("--disable-scheduler",))
    cleanup(a)
    eventually(lambda: {"kube-controller-manager", LEASE} <= holders(a).keys(), timeout=30,
               what="A leads the controllers and the simulated nodes")
    b = replica(tmp_path / "b", cluster, nodes=2)
    cleanup(b)
    eventually(lambda: "kube-scheduler" in holders(b), timeout=30, what="B leads the scheduler")
    held = holders(b)
    print(f"Lease holders: {held}")
    assert held["kube-controller-manager"] == held[LEASE], "one identity per replica"
    assert held["kube-scheduler"] != held["kube-controller-manager"], \
        "the scheduler is led by the other replica"

    # The loops still meet through the API: B's scheduler binds, A's kubelets run the pods.
    ns = f"split-{uuid.uuid4().hex[:6]}"
    a.create_namespace(ns)
    for i in range(4):
        a.core.create_namespaced_pod(ns, pod(f"p-{i}", scheduler=None, resources={
            "requests": {"cpu": "10m", "memory": "16Mi"}}))

    def running():
        pods = b.core.list_namespaced_pod(ns).items
        return len(pods) == 4 and all(p.status.phase == "Running" for p in pods)

    eventually(running, timeout=60, what="every pod bound by B and running on A's nodes")
    ready = [n for n in b.core.list_node().items
             if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)]
    assert len(ready) == 2


def test_a_replica_that_cannot_renew_stops_its_loops_keeps_serving_and_leads_again(
        tmp_path, cleanup):
    cluster = EtcdCluster.start(1, tmp_path / "etcd")
    cleanup(cluster)
    a = replica(tmp_path / "a", cluster, nodes=2)
    cleanup(a)
    leases = {"kube-scheduler", "kube-controller-manager", LEASE}
    eventually(lambda: leases <= holders(a).keys(), timeout=30, what="A leads every loop")
    a_identity = holders(a)["kube-controller-manager"]
    b = replica(tmp_path / "b", cluster, nodes=2)
    cleanup(b)
    ns = f"renew-{uuid.uuid4().hex[:6]}"
    a.create_namespace(ns)

    # etcd stops answering for longer than the renew deadline (5s): A cannot renew any Lease.
    member = cluster.members[0]
    member.proc.send_signal(signal.SIGSTOP)
    try:
        paused_until = time.monotonic() + 8
        answered = 0
        while time.monotonic() < paused_until:
            # Served from A's mirror of etcd all along: A's API server did not go away.
            assert a.running, "the replica exited"
            assert a.core.read_namespace(ns).metadata.name == ns
            answered += 1
            time.sleep(0.5)
    finally:
        member.proc.send_signal(signal.SIGCONT)
    assert answered > 0
    eventually(lambda: "leaderelection lost" in a.log_path.read_text(), timeout=30,
               what="A logs the lost leadership")
    assert a.running, "the replica exited on a lost lease"
    assert a.core.read_namespace(ns).metadata.name == ns

    # Whoever leads now, once B is gone A campaigns, wins and starts its loops fresh: its
    # scheduler binds a new pod and its kubelets run it.
    b.kill()
    eventually(lambda: {holders(a)[name] for name in leases} == {a_identity},
               timeout=60, what="A leads every loop again")
    a.core.create_namespaced_pod(ns, pod("after", scheduler=None, resources={
        "requests": {"cpu": "10m", "memory": "16Mi"}}))
    eventually(lambda: a.core.read_namespaced_pod("after", ns).status.phase == "Running",
               timeout=60, what="the pod bound and running through A's restarted loops")
    assert a.running


def watch_once(b, ns, rv):
    """Opens a watch from `rv` and returns its first event, or the 410 it is refused with."""
    try:
        for event in k8s_watch.Watch().stream(b.core.list_namespaced_config_map, namespace=ns,
                                              resource_version=rv, timeout_seconds=5):
            if event["type"] == "ERROR":
                return event["raw_object"].get("code")
            return event
    except k8s.ApiException as e:
        return e.status
    return None


def test_a_compacted_resource_version_gets_410_on_every_replica_and_clients_relist(
        tmp_path, cleanup):
    cluster = EtcdCluster.start(1, tmp_path / "etcd")
    cleanup(cluster)
    compaction = ("--etcd-compaction-interval", "1s")
    a = replica(tmp_path / "a", cluster, extra=compaction)
    cleanup(a)
    b = replica(tmp_path / "b", cluster, extra=compaction)
    cleanup(b)
    ns = f"compact-{uuid.uuid4().hex[:6]}"
    a.create_namespace(ns)
    old = a.core.list_namespaced_config_map(ns).metadata.resource_version
    a.core.create_namespaced_config_map(ns, {"metadata": {"name": "first"}})
    # A resourceVersion seen on A resumes a watch on B.
    first = watch_once(b, ns, old)
    assert isinstance(first, dict), f"watch on B from A's resourceVersion: {first}"
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "first")

    # Writes move the revision on; after a few rounds etcd and both mirrors have compacted
    # past `old`, and a watch from it is refused with 410 Gone on either replica.
    def compacted_everywhere():
        a.core.create_namespaced_config_map(
            ns, {"metadata": {"generateName": "filler-"}})
        return watch_once(a, ns, old) == 410 and watch_once(b, ns, old) == 410

    eventually(compacted_everywhere, timeout=60, interval=1,
               what="410 Gone for a compacted resourceVersion on both replicas")

    # As a client does after 410: list again, then watch from the list's resourceVersion.
    relisted = b.core.list_namespaced_config_map(ns)
    assert any(cm.metadata.name == "first" for cm in relisted.items)
    recorder = Recorder(b.core.list_namespaced_config_map, ns,
                        relisted.metadata.resource_version,
                        until=lambda events: any(e["object"].metadata.name == "after"
                                                 for e in events))
    a.core.create_namespaced_config_map(ns, {"metadata": {"name": "after"}})
    recorder.join(timeout=30)
    assert recorder.error is None, recorder.error
    assert [e["object"].metadata.name for e in recorder.events] == ["after"]


# Protobuf watch across replicas ------------------------------------------------------------------

PROTOBUF_WATCH = "application/vnd.kubernetes.protobuf;stream=watch"


def watch_event(frame):
    """A metav1.WatchEvent frame: (type, kind, name, resourceVersion) of its object, which is a
    RawExtension holding `k8s\\0` + runtime.Unknown{typeMeta, raw}."""
    kind_of = pb_get(frame, 1).decode()
    _, kind, raw = unknown(pb_get(pb_get(frame, 2), 1))
    meta = pb_get(raw, 1)
    return kind_of, kind, pb_get(meta, 1).decode(), pb_get(meta, 6).decode()


def protobuf_watch(b, ns, rv, count, accept=PROTOBUF_WATCH):
    """The first `count` events of a watch on `b` from `rv` asked for with `accept`, read as
    client-go reads what it is answered with: the raw length-prefixed frames (4-byte big-endian
    size, then a WatchEvent) of a protobuf answer, or newline-delimited JSON."""
    ctx = ssl.create_default_context(cafile=b.ca_file())
    req = urllib.request.Request(
        f"{b.url}/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={rv}"
        "&timeoutSeconds=30",
        headers={"Accept": accept, "Authorization": f"Bearer {b.token()}"})
    events = []
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        if r.headers["Content-Type"].startswith("application/json"):
            return read_json_events(r, count)
        assert r.headers["Content-Type"] == PROTOBUF_WATCH, r.headers["Content-Type"]
        while len(events) < count:
            head = r.read(4)
            if len(head) < 4:
                break
            (size,) = struct.unpack(">I", head)
            events.append(watch_event(r.read(size)))
    return events


def write_through(b, ns):
    """Creates (and updates some of) ten ConfigMaps through `b` after a first one; returns the
    first's resourceVersion (B's answer) and the events a watch from it must show, in order."""
    fresh_namespace(b, ns)
    written = []
    first = b.core.create_namespaced_config_map(ns, {"metadata": {"name": "cm-00"}})
    rv = first.metadata.resource_version
    for i in range(1, 11):
        created = b.core.create_namespaced_config_map(ns, {"metadata": {"name": f"cm-{i:02}"}})
        written.append(("ADDED", "ConfigMap", created.metadata.name,
                         created.metadata.resource_version))
        if i % 4 == 0:
            created.data = {"changed": "yes"}
            updated = b.core.replace_namespaced_config_map(created.metadata.name, ns, created)
            written.append(("MODIFIED", "ConfigMap", updated.metadata.name,
                            updated.metadata.resource_version))
    return rv, written


@pytest.fixture
def pair(tmp_path, cleanup):
    cluster = EtcdCluster.start(1, tmp_path / "etcd")
    cleanup(cluster)
    a = replica(tmp_path / "a", cluster)
    cleanup(a)
    b = replica(tmp_path / "b", cluster)
    cleanup(b)
    return a, b


def json_watch(b, ns, rv, count, accept):
    """The first `count` events of a watch on `b` from `rv` asked for with `accept`, read as
    the newline-delimited JSON the server answers."""
    ctx = ssl.create_default_context(cafile=b.ca_file())
    req = urllib.request.Request(
        f"{b.url}/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={rv}"
        "&timeoutSeconds=30",
        headers={"Accept": accept, "Authorization": f"Bearer {b.token()}"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        assert r.headers["Content-Type"].startswith("application/json"), r.headers["Content-Type"]
        return read_json_events(r, count)


def read_json_events(r, count):
    events = []
    for line in r:
        e = json.loads(line)
        meta = e["object"]["metadata"]
        events.append((e["type"], e["object"]["kind"], meta["name"], meta["resourceVersion"]))
        if len(events) == count:
            break
    return events


def test_a_client_go_protobuf_watch_on_one_replica_resumes_from_another_replicas_version(pair):
    a, b = pair
    ns = f"pbwatch-{uuid.uuid4().hex[:6]}"
    rv, written = write_through(b, ns)
    # client-go configured for protobuf accepts JSON as well, and decodes what it is answered
    # with (protobuf): resumed on A from B's revision, every event after it, in order, none
    # missing.
    seen = protobuf_watch(a, ns, rv, len(written), f"{PROTOBUF_WATCH}, application/json")
    assert seen == written
    # A JSON client resumes the same way.
    assert json_watch(a, ns, rv, len(written), "application/json") == written


def test_a_protobuf_only_watch_on_one_replica_resumes_from_another_replicas_version(pair):
    a, b = pair
    ns = f"pbwatch-{uuid.uuid4().hex[:6]}"
    rv, written = write_through(b, ns)
    seen = protobuf_watch(a, ns, rv, len(written))
    assert seen == written
