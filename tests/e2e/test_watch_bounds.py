"""Memory a tenant can pin (issue 30, item 5): a large ConfigMap patched over and over while one
watcher never reads. The store's history is bounded by bytes (`berth_store_history_bytes` stays
within `berth_store_history_limit_bytes`), the watcher that never reads is closed and counted
(`apiserver_terminated_watchers_total`), and a watch from a revision the history let go of answers
410 `too old resource version`, as upstream's watch cache does.
"""

import json
import re
import socket
import ssl
import urllib.parse


def sample(text, name, **labels):
    """The value of the series `name` whose labels include `labels` (None if absent)."""
    for line in text.splitlines():
        m = re.match(r"^([^{ ]+)(?:\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            return float(m.group(3))
    return None


def idle_watch(b, path):
    """A watch request on a socket that is never read (a small receive buffer fills at once)."""
    url = urllib.parse.urlparse(b.url)
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect((url.hostname, url.port))
    ctx = ssl.create_default_context(cafile=b.ca_file())
    sock = ctx.wrap_socket(raw, server_hostname=url.hostname)
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
                  f"Authorization: Bearer {b.token()}\r\n\r\n").encode())
    return sock


def test_an_idle_watcher_and_a_rewritten_large_object_leave_memory_bounded(berth_factory):
    b = berth_factory(nodes=1)
    b.kubectl("create", "namespace", "pin")
    big = "x" * (512 << 10)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "pin"},
          "data": {"a": big}}
    created = b.core.create_namespaced_config_map("pin", cm)
    first = created.metadata.resource_version
    sock = idle_watch(b, f"/api/v1/namespaces/pin/configmaps?watch=true&resourceVersion={first}")
    def rss_kib():
        with open(f"/proc/{b.proc.pid}/status") as status:
            return int(next(line.split()[1] for line in status if line.startswith("VmRSS:")))

    try:
        # Two rounds of 350 MB of writes: what the process holds levels off after the first
        # (the history's 256 MiB, the caches' bounds), where it grew with every write before.
        rounds = []
        for r in range(2):
            for i in range(500):
                b.core.patch_namespaced_config_map("big", "pin", {"data": {"a": f"{r}{i}{big}"}})
            rounds.append(rss_kib())
        print(f"RSS after each round: {[kib // 1024 for kib in rounds]} MiB")
        assert rounds[1] < rounds[0] * 1.15 + 32 * 1024, rounds
        text = b.kubectl("get", "--raw", "/metrics").stdout
        limit = sample(text, "berth_store_history_limit_bytes")
        assert limit, text
        assert sample(text, "berth_store_history_bytes") <= limit
        assert sample(text, "apiserver_terminated_watchers_total", resource="configmaps") >= 1
    finally:
        sock.close()
    # A watch from the first version, which the history has let go of: 410 inside a 200 stream.
    r = b.kubectl("get", "--raw",
                  f"/api/v1/namespaces/pin/configmaps?watch=true&resourceVersion={first}"
                  "&timeoutSeconds=5")
    event = json.loads(r.stdout.splitlines()[0])
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410
    assert event["object"]["message"].startswith("too old resource version")
