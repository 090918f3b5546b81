"""Local etcd clusters on loopback for the etcd tests and `scripts/ha-demo`.

`EtcdCluster.start(n, dir)` starts `n` members on free ports and waits until they answer;
`leader()` names the member raft elected (from etcd's JSON gateway, no etcdctl needed).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ETCD_BIN = os.environ.get("ETCD_BIN", "etcd")


def etcd_installed():
    return shutil.which(ETCD_BIN) is not None or Path(ETCD_BIN).exists()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Member:
    def __init__(self, name, data_dir):
        self.name = name
        self.data_dir = Path(data_dir)
        self.client_port = free_port()
        self.peer_port = free_port()
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self):
        return f"http://127.0.0.1:{self.peer_port}"

    def start(self, initial_cluster):
        log = open(self.data_dir.parent / f"{self.name}.log", "ab")
        self.proc = subprocess.Popen(
            [ETCD_BIN, "--name", self.name, "--data-dir", str(self.data_dir),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", self.peer_url, "--initial-advertise-peer-urls", self.peer_url,
             "--initial-cluster", initial_cluster, "--initial-cluster-state", "new",
             "--initial-cluster-token", "berth-test"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()

    def status(self):
        request = urllib.request.Request(f"{self.url}/v3/maintenance/status", data=b"{}",
                                         method="POST")
        with urllib.request.urlopen(request, timeout=2) as response:
            return json.load(response)

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.running:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)


class EtcdCluster:
    def __init__(self, size, base_dir):
        base = Path(base_dir)
        base.mkdir(parents=True, exist_ok=True)
        self.members = [Member(f"m{i}", base / f"m{i}") for i in range(size)]

    @classmethod
    def start(cls, size, base_dir, timeout=30):
        cluster = cls(size, base_dir)
        initial = ",".join(f"{m.name}={m.peer_url}" for m in cluster.members)
        for m in cluster.members:
            m.start(initial)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if cluster.leader() is not None:
                    return cluster
            except OSError:
                pass
            time.sleep(0.2)
        cluster.stop()
        raise RuntimeError(f"etcd cluster of {size} did not elect a leader within {timeout}s")

    @property
    def urls(self):
        return ",".join(m.url for m in self.members)

    def leader(self):
        """The member raft elected, asked of any running member."""
        for m in self.members:
            if not m.running:
                continue
            try:
                status = m.status()
            except OSError:
                continue
            leader = status.get("leader")
            for candidate in self.members:
                try:
                    if candidate.running and candidate.status()["header"]["member_id"] == leader:
                        return candidate
                except OSError:
                    continue
        return None

    def stop(self):
        for m in self.members:
            m.kill()
