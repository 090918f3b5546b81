"""An acknowledged write survives `kill -9`: the embedded store's durability, end to end."""

import queue
import threading
from concurrent.futures import ThreadPoolExecutor

import requests
from conftest import eventually, pod
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.client.rest import ApiException

NS = "durable"
FIRST_BATCH = 1000
SECOND_BATCH = 3000
WORKERS = 16


def create_pods(core, names, acknowledged, stop=None):
    """Creates the pods named, recording (name, resourceVersion) of each acknowledged create."""

    def one(name):
        if stop is not None and stop.is_set():
            return
        try:
            manifest = pod(name, labels={"batch": name.split("-")[0]})
            created = core.create_namespaced_pod(NS, manifest)
        except Exception as e:  # noqa: BLE001
            # An answer with an error code is a bug; no answer (the client says status 0) means
            # the server is being killed, and the create is unacknowledged.
            answered = isinstance(e, ApiException) and e.status
            if answered or stop is None:
                raise
            stop.set()
            return
        acknowledged.put((name, int(created.metadata.resource_version)))

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(one, names))


def drain(q):
    out = []
    while not q.empty():
        out.append(q.get_nowait())
    return out


def client_for(berth):
    """A Python client that gives up at once when the server is gone (no retries)."""
    api = berth.api_client
    api.configuration.retries = False
    api.rest_client.pool_manager.connection_pool_kw["retries"] = False
    api.rest_client.pool_manager.connection_pool_kw["maxsize"] = WORKERS
    return k8s.CoreV1Api(api)


def test_acknowledged_pods_survive_kill_9(berth_factory, tmp_path):
    data_dir = tmp_path / "data"
    b = berth_factory(data_dir)
    b.create_namespace(NS)
    core = client_for(b)

    # 1,000 pods created concurrently, all acknowledged.
    first = queue.Queue()
    create_pods(core, [f"a-{i}" for i in range(FIRST_BATCH)], first)
    first = drain(first)
    assert len(first) == FIRST_BATCH

    # A second batch is under way when the server is killed.
    second = queue.Queue()
    stop = threading.Event()
    errors = []

    def write_second_batch():
        try:
            create_pods(core, [f"b-{i}" for i in range(SECOND_BATCH)], second, stop)
        except Exception as e:  # noqa: BLE001 - reported below, in the test's thread
            errors.append(e)

    writer = threading.Thread(target=write_second_batch, daemon=True)
    writer.start()
    eventually(lambda: second.qsize() >= 200, what="200 acknowledged creates in the 2nd batch")
    b.kill()
    stop.set()
    writer.join(timeout=120)
    assert not writer.is_alive()
    assert errors == [], "the server refused a create of the second batch"
    second = drain(second)
    acknowledged = first + second
    highest_seen = max(rv for _, rv in acknowledged)
    assert len(second) < SECOND_BATCH, "the kill came too late to interrupt the batch"

    # Restart on the same data dir (a new port, a new kubeconfig).
    b.launch()
    core = b.core
    listed = core.list_namespaced_pod(NS)  # every object decodes as a Pod
    present = {p.metadata.name: p for p in listed.items}
    missing = [name for name, _ in acknowledged if name not in present]
    assert missing == [], f"{len(missing)} acknowledged pods lost, e.g. {missing[:5]}"
    for name, rv in acknowledged:
        assert int(present[name].metadata.resource_version) >= rv
        assert present[name].spec.containers[0].image == "nginx:1.27"
    assert int(listed.metadata.resource_version) >= highest_seen

    # The raw JSON parses too, and kubectl pages through all of it.
    raw = requests.get(f"{b.url}/api/v1/namespaces/{NS}/pods", verify=b.ca_file(), timeout=60,
                       headers={"Authorization": f"Bearer {b.token()}"}).json()
    assert len(raw["items"]) == len(present)
    out = b.kubectl("get", "pods", "-n", NS, "--chunk-size=250", "-o", "name").stdout
    assert len(out.split()) == len(present)

    # The next write gets a higher resourceVersion than anything seen before the crash.
    after = core.create_namespaced_pod(NS, pod("after-restart"))
    assert int(after.metadata.resource_version) > highest_seen

    # A watch from the last resourceVersion seen before the crash works (or says 410 and the
    # client relists, as informers do).
    seen = watch_until(core, str(highest_seen), "after-restart-2")
    assert "after-restart-2" in seen


def watch_until(core, resource_version, name):
    """Watches pods from `resource_version`, creates pod `name`, and returns the names seen
    up to its ADDED event. A 410 (history compacted) is answered as informers do: relist."""
    events = queue.Queue()

    def run():
        w = watch.Watch()
        try:
            for ev in w.stream(core.list_namespaced_pod, NS, resource_version=resource_version,
                               timeout_seconds=60):
                events.put(("event", ev["type"], ev["object"].metadata.name))
        except ApiException as e:
            events.put(("error", e.status, None))
        events.put(("end", None, None))

    threading.Thread(target=run, daemon=True).start()
    # Everything after resource_version is delivered, so the pod may be created right away.
    core.create_namespaced_pod(NS, pod(name))
    seen = []
    while True:
        kind, a, b = events.get(timeout=90)
        if kind == "error":
            assert a == 410, f"watch failed with {a}"
            relisted = core.list_namespaced_pod(NS).items
            return [p.metadata.name for p in relisted]
        assert kind != "end", f"watch ended before {name} was added; saw {len(seen)} events"
        seen.append(b)
        if b == name and a == "ADDED":
            return seen
