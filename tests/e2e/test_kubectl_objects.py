"""Creating, reading, changing and deleting objects with kubectl, as a user does."""

import json
import queue
import threading

import pytest
from conftest import eventually, pod, to_yaml


def phase(berth, ns, name):
    return berth.kubectl_json("get", "pod", name, "-n", ns)["status"].get("phase")


def names(berth, *args):
    out = berth.kubectl("get", *args, "-o", "name").stdout
    return sorted(line.split("/", 1)[1] for line in out.split())


# create / apply ------------------------------------------------------------------------------


def test_create_single_pod_from_a_file(berth, ns, tmp_path):
    f = tmp_path / "pod.yaml"
    f.write_text(to_yaml(pod("web", labels={"app": "web"}, scheduler=None)))
    out = berth.kubectl("create", "-f", f, "-n", ns).stdout
    assert out.strip() == "pod/web created"
    p = berth.kubectl_json("get", "pod", "web", "-n", ns)
    assert p["metadata"]["labels"] == {"app": "web"}
    assert p["metadata"]["uid"] and p["metadata"]["resourceVersion"]
    assert p["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert p["spec"]["schedulerName"] == "default-scheduler"
    assert p["spec"]["priority"] == 0 and p["status"]["qosClass"] == "BestEffort"


def test_create_multi_document_file(berth, ns):
    docs = to_yaml([pod("a"), pod("b"), pod("c")])
    assert docs.count("---") == 2
    out = berth.kubectl("create", "-f", "-", "-n", ns, stdin=docs).stdout
    assert out.split("\n")[:3] == ["pod/a created", "pod/b created", "pod/c created"]
    assert names(berth, "pods", "-n", ns) == ["a", "b", "c"]


def test_create_kind_list(berth, ns):
    lst = {"apiVersion": "v1", "kind": "List", "items": [pod("item-1"), pod("item-2")]}
    out = berth.kubectl("create", "-f", "-", "-n", ns, stdin=lst).stdout
    assert "pod/item-1 created" in out and "pod/item-2 created" in out
    assert names(berth, "pods", "-n", ns) == ["item-1", "item-2"]


def test_create_existing_pod_is_already_exists(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("dup"))
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("dup"), check=False)
    assert r.returncode != 0
    assert 'Error from server (AlreadyExists)' in r.stderr
    assert 'pods "dup" already exists' in r.stderr


def test_apply_creates_then_is_unchanged_then_configures(berth, ns):
    manifest = pod("app", labels={"tier": "web"})
    assert berth.kubectl("apply", "-f", "-", "-n", ns, stdin=manifest).stdout.strip() \
        == "pod/app created"
    assert berth.kubectl("apply", "-f", "-", "-n", ns, stdin=manifest).stdout.strip() \
        == "pod/app unchanged"
    manifest["metadata"]["labels"]["tier"] = "backend"
    manifest["metadata"]["labels"]["owner"] = "me"
    manifest["spec"]["containers"][0]["image"] = "nginx:1.28"
    assert berth.kubectl("apply", "-f", "-", "-n", ns, stdin=manifest).stdout.strip() \
        == "pod/app configured"
    p = berth.kubectl_json("get", "pod", "app", "-n", ns)
    assert p["metadata"]["labels"] == {"tier": "backend", "owner": "me"}
    assert p["spec"]["containers"][0]["image"] == "nginx:1.28"
    last = json.loads(
        p["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["metadata"]["labels"]["owner"] == "me"


def test_apply_removes_a_label_dropped_from_the_file(berth, ns):
    manifest = pod("app", labels={"a": "1", "b": "2"})
    berth.kubectl("apply", "-f", "-", "-n", ns, stdin=manifest)
    del manifest["metadata"]["labels"]["b"]
    berth.kubectl("apply", "-f", "-", "-n", ns, stdin=manifest)
    assert berth.kubectl_json("get", "pod", "app", "-n", ns)["metadata"]["labels"] == {"a": "1"}


def test_apply_multi_document_and_list(berth, ns):
    out = berth.kubectl("apply", "-f", "-", "-n", ns, stdin=[pod("m1"), pod("m2")]).stdout
    assert "pod/m1 created" in out and "pod/m2 created" in out
    lst = {"apiVersion": "v1", "kind": "List",
           "items": [pod("m2", labels={"v": "2"}), pod("l1")]}
    out = berth.kubectl("apply", "-f", "-", "-n", ns, stdin=lst).stdout
    assert "pod/m2 configured" in out and "pod/l1 created" in out
    assert names(berth, "pods", "-n", ns) == ["l1", "m1", "m2"]
    assert berth.kubectl_json("get", "pod", "m2", "-n", ns)["metadata"]["labels"] == {"v": "2"}


def test_apply_server_side(berth, ns):
    manifest = pod("ssa", labels={"a": "1"})
    out = berth.kubectl("apply", "--server-side", "-f", "-", "-n", ns, stdin=manifest).stdout
    assert out.strip() == "pod/ssa serverside-applied"
    manifest["metadata"]["labels"]["b"] = "2"
    berth.kubectl("apply", "--server-side", "-f", "-", "-n", ns, stdin=manifest)
    p = berth.kubectl_json("get", "pod", "ssa", "-n", ns)
    assert p["metadata"]["labels"] == {"a": "1", "b": "2"}


# get ------------------------------------------------------------------------------------------


def test_bound_pod_runs_on_its_node_and_get_wide_shows_it(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("bound", node="node-2"))
    eventually(lambda: phase(berth, ns, "bound") == "Running", what="pod Running")
    out = berth.kubectl("get", "pods", "-o", "wide", "-n", ns).stdout
    header, row = out.splitlines()[0].split(), out.splitlines()[1].split()
    assert header[:8] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                          "NOMINATED"]
    assert row[0] == "bound" and row[1] == "1/1" and row[2] == "Running"
    assert row[5].startswith("10.244.") and row[6] == "node-2"
    p = berth.kubectl_json("get", "pod", "bound", "-n", ns)
    assert p["status"]["hostIP"] == "10.0.0.3"
    assert {c["type"]: c["status"] for c in p["status"]["conditions"]}["Ready"] == "True"


def test_pod_bound_through_a_binding_object_runs(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("tobind"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "tobind"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-3"}}
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=binding)
    eventually(lambda: phase(berth, ns, "tobind") == "Running", what="pod Running")
    p = berth.kubectl_json("get", "pod", "tobind", "-n", ns)
    assert p["spec"]["nodeName"] == "node-3"
    assert {c["type"]: c["status"] for c in p["status"]["conditions"]}["PodScheduled"] == "True"


def test_get_output_formats(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("fmt", labels={"app": "fmt"}))
    as_yaml = berth.kubectl("get", "pod", "fmt", "-n", ns, "-o", "yaml").stdout
    assert "kind: Pod" in as_yaml and "name: fmt" in as_yaml and "app: fmt" in as_yaml
    as_json = json.loads(berth.kubectl("get", "pod", "fmt", "-n", ns, "-o", "json").stdout)
    assert as_json["kind"] == "Pod" and as_json["metadata"]["namespace"] == ns
    lst = json.loads(berth.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)
    assert lst["kind"] == "List" and [i["metadata"]["name"] for i in lst["items"]] == ["fmt"]
    jp = berth.kubectl("get", "pod", "fmt", "-n", ns, "-o",
                       "jsonpath={.metadata.labels.app}/{.spec.containers[0].image}").stdout
    assert jp == "fmt/nginx:1.27"
    jp_all = berth.kubectl("get", "nodes", "-o",
                           "jsonpath={range .items[*]}{.metadata.name} {end}").stdout
    assert jp_all.split() == ["node-1", "node-2", "node-3"]


def test_get_missing_pod_is_not_found(berth, ns):
    r = berth.kubectl("get", "pod", "nope", "-n", ns, check=False)
    assert r.returncode != 0
    assert 'Error from server (NotFound): pods "nope" not found' in r.stderr


def read_lines(proc):
    """Lines of a background process, through a queue (so reads can time out)."""
    q = queue.Queue()

    def pump():
        for line in proc.stdout:
            q.put(line)
        q.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return q


def wait_for_line(q, predicate, seen, timeout=60):
    def check():
        while True:
            try:
                line = q.get_nowait()
            except queue.Empty:
                return False
            if line is None:
                raise AssertionError(f"watch ended; saw: {seen}")
            seen.append(line)
            if predicate(line):
                return line
    return eventually(check, timeout=timeout, interval=0.1, what=f"a watch line; saw {seen}")


def test_get_watch_sees_a_label_change(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("watched", labels={"color": "red"}))
    proc = berth.kubectl_bg("get", "pods", "-w", "-n", ns, "-L", "color")
    try:
        lines, seen = read_lines(proc), []
        wait_for_line(lines, lambda line: line.startswith("watched") and "red" in line, seen)
        berth.kubectl("label", "pod", "watched", "-n", ns, "color=blue", "--overwrite")
        row = wait_for_line(lines, lambda line: line.startswith("watched") and "blue" in line,
                            seen)
        assert row.split()[-1] == "blue"
        assert seen[0].split()[0] == "NAME" and seen[0].split()[-1] == "COLOR"
    finally:
        proc.kill()
        proc.wait()


def test_describe_pod_lists_its_events(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("described", node="node-1"))
    eventually(lambda: phase(berth, ns, "described") == "Running", what="pod Running")
    uid = berth.kubectl_json("get", "pod", "described", "-n", ns)["metadata"]["uid"]
    event = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "described.1", "namespace": ns},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "described",
                           "namespace": ns, "uid": uid},
        "reason": "Scheduled", "message": "Successfully assigned to node-1",
        "type": "Normal", "source": {"component": "default-scheduler"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
        "count": 1,
    }
    berth.kubectl("create", "-f", "-", stdin=event)
    other = dict(event, metadata={"name": "other.1", "namespace": ns},
                 involvedObject=dict(event["involvedObject"], uid="another-uid"),
                 message="not about this pod")
    berth.kubectl("create", "-f", "-", stdin=other)
    out = berth.kubectl("describe", "pod", "described", "-n", ns).stdout
    assert "Name:" in out and "described" in out
    assert "Node:" in out and "node-1/10.0.0.2" in out
    events = out.split("Events:", 1)[1]
    assert "Scheduled" in events and "default-scheduler" in events
    assert "Successfully assigned to node-1" in events
    assert "not about this pod" not in events
    out = berth.kubectl("get", "events", "-n", ns).stdout
    assert "Scheduled" in out and "pod/described" in out


# label / annotate / patch -------------------------------------------------------------------


def test_label_and_annotate(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("tagged", labels={"a": "1"}))
    assert berth.kubectl("label", "pod", "tagged", "-n", ns, "b=2").stdout.strip() \
        == "pod/tagged labeled"
    r = berth.kubectl("label", "pod", "tagged", "-n", ns, "a=3", check=False)
    assert r.returncode != 0 and "already has a value (1)" in r.stderr
    berth.kubectl("label", "pod", "tagged", "-n", ns, "a=3", "--overwrite")
    berth.kubectl("label", "pod", "tagged", "-n", ns, "b-")
    assert berth.kubectl("annotate", "pod", "tagged", "-n", ns, "note=hello world").stdout \
        .strip() == "pod/tagged annotated"
    meta = berth.kubectl_json("get", "pod", "tagged", "-n", ns)["metadata"]
    assert meta["labels"] == {"a": "3"}
    assert meta["annotations"]["note"] == "hello world"
    berth.kubectl("annotate", "pod", "tagged", "-n", ns, "note-")
    meta = berth.kubectl_json("get", "pod", "tagged", "-n", ns)["metadata"]
    assert "note" not in (meta.get("annotations") or {})


def test_patch_merge_json_and_strategic(berth, ns):
    manifest = pod("patched", labels={"a": "1"})
    manifest["spec"]["containers"].append({"name": "side", "image": "busybox:1"})
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=manifest)

    out = berth.kubectl("patch", "pod", "patched", "-n", ns, "--type", "merge",
                        "-p", '{"metadata":{"labels":{"b":"2","a":null}}}').stdout
    assert out.strip() == "pod/patched patched"
    assert berth.kubectl_json("get", "pod", "patched", "-n", ns)["metadata"]["labels"] \
        == {"b": "2"}

    berth.kubectl("patch", "pod", "patched", "-n", ns, "--type", "json", "-p",
                  '[{"op":"add","path":"/metadata/labels/c","value":"3"},'
                  '{"op":"replace","path":"/spec/containers/1/image","value":"busybox:2"}]')
    p = berth.kubectl_json("get", "pod", "patched", "-n", ns)
    assert p["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert p["spec"]["containers"][1]["image"] == "busybox:2"

    # Strategic merge: containers merge by name, so only "side" changes.
    berth.kubectl("patch", "pod", "patched", "-n", ns, "--type", "strategic", "-p",
                  '{"spec":{"containers":[{"name":"side","image":"busybox:3"}]}}')
    p = berth.kubectl_json("get", "pod", "patched", "-n", ns)
    assert [(c["name"], c["image"]) for c in p["spec"]["containers"]] \
        == [("c", "nginx:1.27"), ("side", "busybox:3")]


def test_patch_with_no_change_is_reported_as_such(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("same", labels={"a": "1"}))
    rv = berth.kubectl_json("get", "pod", "same", "-n", ns)["metadata"]["resourceVersion"]
    out = berth.kubectl("patch", "pod", "same", "-n", ns, "--type", "merge",
                        "-p", '{"metadata":{"labels":{"a":"1"}}}').stdout
    assert out.strip() == "pod/same patched (no change)"
    assert berth.kubectl_json("get", "pod", "same", "-n", ns)["metadata"]["resourceVersion"] \
        == rv


# dry run -------------------------------------------------------------------------------------


def test_dry_run_server_writes_nothing(berth, ns):
    out = berth.kubectl("create", "-f", "-", "-n", ns, "--dry-run=server",
                        stdin=pod("dry")).stdout
    assert out.strip() == "pod/dry created (server dry run)"
    assert names(berth, "pods", "-n", ns) == []

    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("real", labels={"a": "1"}))
    before = berth.kubectl_json("get", "pod", "real", "-n", ns)
    berth.kubectl("label", "pod", "real", "-n", ns, "b=2", "--dry-run=server")
    berth.kubectl("patch", "pod", "real", "-n", ns, "--type", "merge", "--dry-run=server",
                  "-p", '{"metadata":{"labels":{"a":"9"}}}')
    changed = pod("real", labels={"a": "changed"})
    berth.kubectl("apply", "-f", "-", "-n", ns, "--dry-run=server", stdin=changed)
    out = berth.kubectl("delete", "pod", "real", "-n", ns, "--dry-run=server").stdout
    assert "deleted (server dry run)" in out
    after = berth.kubectl_json("get", "pod", "real", "-n", ns)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["metadata"]["labels"] == {"a": "1"}


# selectors and paging ------------------------------------------------------------------------


def test_field_selector_on_node_name(berth, ns):
    docs = [pod("on1", node="node-1"), pod("on2", node="node-2"), pod("unbound")]
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=docs)
    assert names(berth, "pods", "-n", ns, "--field-selector", "spec.nodeName=node-1") == ["on1"]
    assert names(berth, "pods", "-n", ns, "--field-selector", "spec.nodeName=") == ["unbound"]
    assert names(berth, "pods", "-n", ns, "--field-selector", "spec.nodeName!=node-1") \
        == ["on2", "unbound"]
    assert names(berth, "pods", "-n", ns,
                 "--field-selector", "spec.nodeName!=,metadata.name!=on2") == ["on1"]
    # A field no pod index serves is refused with the server's message.
    r = berth.kubectl("get", "pods", "-n", ns, "--field-selector", "spec.bogus=x", check=False)
    assert r.returncode != 0 and "field label not supported" in r.stderr


LABELLED = {
    "p-web-prod": {"app": "web", "env": "prod"},
    "p-web-dev": {"app": "web", "env": "dev"},
    "p-db-prod": {"app": "db", "env": "prod", "tier": "data"},
    "p-none": {},
}


@pytest.mark.parametrize("selector,expected", [
    ("app=web", ["p-web-dev", "p-web-prod"]),
    ("app==web", ["p-web-dev", "p-web-prod"]),
    ("app!=web", ["p-db-prod", "p-none"]),
    ("env in (prod,staging)", ["p-db-prod", "p-web-prod"]),
    ("env notin (prod)", ["p-none", "p-web-dev"]),
    ("tier", ["p-db-prod"]),
    ("!tier", ["p-none", "p-web-dev", "p-web-prod"]),
    ("app=web,env=prod", ["p-web-prod"]),
    ("app in (web,db),!tier", ["p-web-dev", "p-web-prod"]),
])
def test_label_selector_operators(berth, labelled_ns, selector, expected):
    assert names(berth, "pods", "-n", labelled_ns, "-l", selector) == expected


@pytest.fixture(scope="module")
def labelled_ns(berth):
    name = "label-selectors"
    berth.create_namespace(name)
    berth.kubectl("create", "-f", "-", "-n", name,
                  stdin=[pod(n, labels=labels or None) for n, labels in LABELLED.items()])
    yield name
    berth.kubectl("delete", "namespace", name, "--wait=false", check=False)


def test_chunked_list_pages_through_everything(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=[pod(f"page-{i}") for i in range(5)])
    r = berth.kubectl("get", "pods", "-n", ns, "--chunk-size=1", "-v=6")
    rows = [line.split()[0] for line in r.stdout.splitlines()[1:]]
    assert rows == [f"page-{i}" for i in range(5)]
    # One request per pod, each but the first continuing the previous page.
    requests = [line for line in r.stderr.splitlines() if f"/namespaces/{ns}/pods?" in line]
    assert sum("limit=1" in line for line in requests) == 5
    assert sum("continue=" in line for line in requests) == 4
    assert names(berth, "pods", "-n", ns, "--chunk-size=2") == [f"page-{i}" for i in range(5)]


# delete --------------------------------------------------------------------------------------


def test_delete_unbound_pod_is_immediate(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("gone"))
    assert berth.kubectl("delete", "pod", "gone", "-n", ns).stdout.strip() \
        == 'pod "gone" deleted'
    assert names(berth, "pods", "-n", ns) == []


def test_delete_bound_pod_is_graceful_and_the_kubelet_finishes_it(berth, ns):
    slow = pod("slow", node="node-1")
    # The simulated container takes 5 s to stop after SIGTERM.
    slow["metadata"]["annotations"] = {"berth.io/termination-seconds": "5"}
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=slow)
    eventually(lambda: phase(berth, ns, "slow") == "Running", what="pod Running")

    berth.kubectl("delete", "pod", "slow", "-n", ns, "--wait=false")
    terminating = berth.kubectl_json("get", "pod", "slow", "-n", ns)
    assert terminating["metadata"]["deletionTimestamp"]
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30
    assert "Terminating" in berth.kubectl("get", "pod", "slow", "-n", ns).stdout

    # kubectl waits until the kubelet has finished the deletion.
    out = berth.kubectl("delete", "pod", "slow", "-n", ns).stdout
    assert out.strip() == 'pod "slow" deleted'
    r = berth.kubectl("get", "pod", "slow", "-n", ns, check=False)
    assert "NotFound" in r.stderr


def test_delete_namespace_removes_its_contents(berth):
    name = "doomed"
    berth.create_namespace(name)
    berth.kubectl("create", "-f", "-", "-n", name,
                  stdin=[pod("a"), pod("b", node="node-3")])
    out = berth.kubectl("delete", "namespace", name).stdout
    assert out.strip() == 'namespace "doomed" deleted'
    r = berth.kubectl("get", "namespace", name, check=False)
    assert 'namespaces "doomed" not found' in r.stderr
    everywhere = berth.kubectl_json("get", "pods", "-A")["items"]
    assert [p for p in everywhere if p["metadata"]["namespace"] == name] == []
    # The name can be used again, and starts empty.
    berth.create_namespace(name)
    assert names(berth, "pods", "-n", name) == []
    berth.kubectl("delete", "namespace", name)


# imperative commands ---------------------------------------------------------------------------


def test_kubectl_run_creates_a_pod(berth, ns):
    out = berth.kubectl("run", "web", "--image=nginx", "--labels=app=web", "-n", ns).stdout
    assert out.strip() == "pod/web created"
    p = berth.kubectl_json("get", "pod", "web", "-n", ns)
    assert p["metadata"]["labels"] == {"app": "web"}

