"""Protobuf answers: a client that accepts only `application/vnd.kubernetes.protobuf` (client-go
configured for protobuf without a JSON fallback) gets objects, lists, watch events and errors in
Kubernetes' protobuf encoding, read here byte by byte as client-go reads them."""

import json
import shutil
import ssl
import struct
import subprocess
import urllib.error
import urllib.request

from conftest import pod
from protobuf_wire import pb_all, pb_get, unknown

PROTOBUF = "application/vnd.kubernetes.protobuf"


# Reading the answers (see protobuf_wire.py) --------------------------------------------------

def name_of(raw):
    """metadata.name of an object message (ObjectMeta is field 1, its name field 1)."""
    return pb_get(pb_get(raw, 1), 1).decode()


# Requests ---------------------------------------------------------------------------------

def request(b, path, accept=PROTOBUF):
    """(status, Content-Type, body) of a GET of `path` with `accept`."""
    ctx = ssl.create_default_context(cafile=b.ca_file())
    req = urllib.request.Request(f"{b.url}{path}", headers={
        "Accept": accept, "Authorization": f"Bearer {b.token()}"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, r.headers["Content-Type"], r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read()


def decode_raw(body):
    """`protoc --decode_raw` of the object's raw bytes, when protoc is installed: a second,
    independent reader of the same bytes."""
    if shutil.which("protoc") is None:
        return None
    r = subprocess.run(["protoc", "--decode_raw"], input=body, capture_output=True, check=True)
    return r.stdout.decode()


def test_get_list_of_pods_and_nodes_in_protobuf(berth, ns):
    berth.kubectl("create", "-f", "-", stdin=pod("web", namespace=ns, labels={"app": "web"}))

    code, content_type, body = request(berth, f"/api/v1/namespaces/{ns}/pods/web")
    assert code == 200 and content_type == PROTOBUF, (code, content_type, body[:200])
    api_version, kind, raw = unknown(body)
    assert (api_version, kind) == ("v1", "Pod")
    meta = pb_get(raw, 1)
    assert pb_get(meta, 1) == b"web" and pb_get(meta, 3) == ns.encode()
    labels = [(pb_get(e, 1), pb_get(e, 2)) for e in pb_all(meta, 11)]
    assert labels == [(b"app", b"web")]
    container = pb_get(pb_get(raw, 2), 2)  # PodSpec.containers
    assert (pb_get(container, 1), pb_get(container, 2)) == (b"c", b"nginx:1.27")
    text = decode_raw(raw)
    if text is not None:
        assert '"web"' in text and '"nginx:1.27"' in text

    code, content_type, body = request(berth, f"/api/v1/namespaces/{ns}/pods")
    assert code == 200 and content_type == PROTOBUF
    api_version, kind, raw = unknown(body)
    assert (api_version, kind) == ("v1", "PodList")
    assert int(pb_get(pb_get(raw, 1), 2).decode()) > 0  # ListMeta.resourceVersion
    assert [name_of(item) for item in pb_all(raw, 2)] == ["web"]

    code, content_type, body = request(berth, "/api/v1/nodes")
    assert code == 200 and content_type == PROTOBUF
    api_version, kind, raw = unknown(body)
    assert kind == "NodeList"
    nodes = pb_all(raw, 2)
    assert len(nodes) == 3
    expected = sorted(n["metadata"]["name"] for n in berth.kubectl_json("get", "nodes")["items"])
    assert sorted(name_of(n) for n in nodes) == expected
    # NodeStatus.capacity: map entries {key, Quantity{string}}.
    capacity = {pb_get(e, 1).decode(): pb_get(pb_get(e, 2), 1).decode()
                for e in pb_all(pb_get(nodes[0], 3), 1)}
    assert "cpu" in capacity and "pods" in capacity, capacity


def test_a_protobuf_only_watch_reads_length_prefixed_watch_events(berth, ns):
    code, _, body = request(berth, f"/api/v1/namespaces/{ns}/pods")
    rv = pb_get(pb_get(unknown(body)[2], 1), 2).decode()
    ctx = ssl.create_default_context(cafile=berth.ca_file())
    req = urllib.request.Request(
        f"{berth.url}/api/v1/namespaces/{ns}/pods?watch=1&resourceVersion={rv}"
        "&timeoutSeconds=30",
        headers={"Accept": PROTOBUF, "Authorization": f"Bearer {berth.token()}"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
        assert r.headers["Content-Type"] == f"{PROTOBUF};stream=watch"
        berth.kubectl("create", "-f", "-", stdin=pod("watched", namespace=ns))
        berth.kubectl("delete", "pod", "watched", "-n", ns, "--grace-period=0", "--force")
        events = []
        while len(events) < 2:
            (size,) = struct.unpack(">I", r.read(4))
            frame = r.read(size)
            event_type = pb_get(frame, 1).decode()
            api_version, kind, raw = unknown(pb_get(pb_get(frame, 2), 1))
            events.append((event_type, api_version, kind, name_of(raw)))
    assert events[0] == ("ADDED", "v1", "Pod", "watched")
    assert events[-1] == ("DELETED", "v1", "Pod", "watched")


def test_errors_are_protobuf_statuses(berth, ns):
    code, content_type, body = request(berth, f"/api/v1/namespaces/{ns}/pods/missing")
    assert code == 404 and content_type == PROTOBUF
    api_version, kind, raw = unknown(body)
    assert (api_version, kind) == ("v1", "Status")
    assert pb_get(raw, 2) == b"Failure"
    assert pb_get(raw, 3) == b'pods "missing" not found'
    assert pb_get(raw, 4) == b"NotFound"
    assert pb_get(raw, 6, 0) == 404
    details = pb_get(raw, 5)
    assert (pb_get(details, 1), pb_get(details, 3)) == (b"missing", b"pods")


def test_what_has_no_protobuf_form_is_406_or_json(berth):
    # Discovery is JSON only here: protobuf only is upstream's 406, with a JSON fallback JSON.
    code, content_type, body = request(berth, "/apis")
    assert code == 406, (code, body[:200])
    status = json.loads(body)
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "NotAcceptable", 406)
    code, content_type, body = request(berth, "/apis", f"{PROTOBUF}, application/json")
    assert code == 200 and content_type.startswith("application/json")
    assert json.loads(body)["kind"] == "APIGroupList"


def test_json_clients_are_unchanged(berth, ns):
    berth.kubectl("create", "-f", "-", stdin=pod("plain", namespace=ns))
    out = berth.kubectl("get", "pods", "-n", ns, "-o", "yaml").stdout
    assert "name: plain" in out and "kind: List" in out
    code, content_type, body = request(berth, f"/api/v1/namespaces/{ns}/pods/plain",
                                       "application/json")
    assert code == 200 and content_type == "application/json"
    assert json.loads(body)["metadata"]["name"] == "plain"
    # client-go configured for protobuf, with its JSON fallback, gets protobuf.
    code, content_type, body = request(berth, f"/api/v1/namespaces/{ns}/pods/plain",
                                       f"{PROTOBUF}, application/json")
    assert content_type == PROTOBUF and unknown(body)[1] == "Pod"
