"""The end-to-end harness: one `berth serve` per session, driven by kubectl and the Python client.

It builds nothing: it runs the binary named by `BERTH_BIN` (default `target/release/berth` in the
repository), on a free port with a fresh data directory and 3 simulated nodes, and gives tests

- `berth.kubectl(*args, check=True, stdin=None)`: the real kubectl with the server's kubeconfig and
  a fresh `--cache-dir` (kubectl caches discovery and `/version`);
- `berth.core` / `berth.scheduling`: the official Python client, configured from the kubeconfig;
- `ns`: a namespace of the test's own, deleted afterwards.

`berth_factory` (or `Berth.start(data_dir, nodes, args)`) starts servers of a test's own, with
further `berth serve` flags, for tests that need their own cluster, or restart or kill it.
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

REPO = Path(__file__).resolve().parents[2]
BERTH_BIN = Path(os.environ.get("BERTH_BIN", REPO / "target" / "release" / "berth"))
if not BERTH_BIN.is_absolute():
    BERTH_BIN = REPO / BERTH_BIN

#: How long to wait for the server to come up, or for kubectl to answer, before failing.
START_TIMEOUT = 60
KUBECTL_TIMEOUT = 120


class KubectlError(AssertionError):
    """kubectl exited non-zero where the test expected success."""


class Berth:
    """One running `berth serve` and the clients pointed at it."""

    def __init__(self, data_dir, nodes=3, args=()):
        self.data_dir = Path(data_dir)
        self.nodes = nodes
        #: Further `berth serve` flags, e.g. `("--policy-config-file", path)`.
        self.args = [str(a) for a in args]
        self.proc = None
        self.url = None
        self.kubeconfig = self.data_dir / "kubeconfig"
        self.cache_dir = None
        self.log_path = self.data_dir / "berth.log"
        self._api_client = None

    @classmethod
    def start(cls, data_dir, nodes=3, args=()):
        b = cls(data_dir, nodes, args)
        b.launch()
        return b

    def launch(self):
        """Starts the server on a free port and waits until it says where it serves."""
        assert BERTH_BIN.exists(), (
            f"{BERTH_BIN} does not exist: run `cargo build --release -p berth` "
            "or set BERTH_BIN"
        )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # A restart writes a new kubeconfig (new port); never read the previous one.
        self.kubeconfig.unlink(missing_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [str(BERTH_BIN), "serve", "--port", "0", "--data-dir", str(self.data_dir),
             "--nodes", str(self.nodes), *self.args],
            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
        )
        log.close()
        lines = queue.Queue()

        def pump():
            for line in self.proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.stop()
                raise RuntimeError(
                    f"berth serve did not come up; log:\n{self.log_path.read_text()[-4000:]}"
                )
            if "serving the Kubernetes API at" in line:
                self.url = line.strip().rsplit(" ", 1)[-1]
            if line.startswith("kubeconfig:"):
                break
        assert self.kubeconfig.exists(), "berth serve printed no kubeconfig"
        # A fresh kubectl cache per server instance: kubectl caches discovery and /version.
        self.cache_dir = tempfile.mkdtemp(prefix="kubectl-cache-")
        self._api_client = None

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL):
        """Ends the server abruptly (`kill -9` by default) and waits for it."""
        if self.running:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def stop(self):
        if self.running:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._api_client is not None:
            self._api_client.close()
            self._api_client = None
        if self.cache_dir:
            shutil.rmtree(self.cache_dir, ignore_errors=True)

    # kubectl -----------------------------------------------------------------------------

    def kubectl_cmd(self, *args):
        return ["kubectl", "--kubeconfig", str(self.kubeconfig), "--cache-dir", self.cache_dir,
                *map(str, args)]

    def kubectl(self, *args, check=True, stdin=None, timeout=KUBECTL_TIMEOUT):
        """Runs kubectl; returns the CompletedProcess (stdout/stderr as text).

        With `check`, a non-zero exit fails the test showing what kubectl printed.
        `stdin` may be text, or a dict/list which is sent as YAML documents.
        """
        if stdin is not None and not isinstance(stdin, str):
            stdin = to_yaml(stdin)
        r = subprocess.run(self.kubectl_cmd(*args), input=stdin, capture_output=True,
                           text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise KubectlError(
                f"kubectl {' '.join(map(str, args))} exited {r.returncode}\n"
                f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
            )
        return r

    def kubectl_json(self, *args):
        """`kubectl <args> -o json`, parsed."""
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def kubectl_bg(self, *args):
        """Starts kubectl in the background (e.g. `get -w`); the caller ends it."""
        return subprocess.Popen(self.kubectl_cmd(*args), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def create_namespace(self, name):
        """Creates a namespace from a manifest (the JSON path every client takes)."""
        self.kubectl("create", "-f", "-", stdin={"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": name}})

    # Python client ---------------------------------------------------------------------

    @property
    def api_client(self):
        if self._api_client is None:
            self._api_client = k8s_config.new_client_from_config(
                config_file=str(self.kubeconfig))
        return self._api_client

    @property
    def core(self):
        return k8s.CoreV1Api(self.api_client)

    @property
    def scheduling(self):
        return k8s.SchedulingV1Api(self.api_client)

    def token(self):
        return (self.data_dir / "token").read_text().strip()

    def ca_file(self):
        return str(self.data_dir / "ca.crt")


def to_yaml(docs):
    """A dict, or a list of dicts as a multi-document stream, as YAML text."""
    if isinstance(docs, dict):
        docs = [docs]
    return yaml.safe_dump_all(docs, sort_keys=False)


#: The scheduler the test pods name by default: none runs, so a pod stays unbound (Pending)
#: until the test binds it, whether or not `berth serve` runs the default scheduler.
MANUAL = "e2e-manual"


def pod(name, namespace=None, node=None, labels=None, image="nginx:1.27", scheduler=MANUAL,
        **spec):
    """A minimal pod manifest; `node` sets spec.nodeName (binds it: the simulated node runs it).

    `scheduler=None` leaves spec.schedulerName to the server's default (`default-scheduler`).
    """
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    body = {"containers": [{"name": "c", "image": image}], **spec}
    if scheduler:
        body["schedulerName"] = scheduler
    if node:
        body["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def eventually(check, timeout=60, interval=0.2, what="condition"):
    """Polls `check()` until it returns a truthy value, which it returns; fails after `timeout`.

    The timeout only keeps a broken server from hanging the suite; nothing asserts on durations.
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = check()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - the last error is reported on timeout
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last: {last!r}")
        time.sleep(interval)


@pytest.fixture(scope="session")
def berth(tmp_path_factory):
    """The shared server: 3 simulated nodes, fresh data dir, for the whole session."""
    b = Berth.start(tmp_path_factory.mktemp("berth-data"), nodes=3)
    yield b
    b.stop()


@pytest.fixture
def berth_factory(tmp_path):
    """Starts servers of the test's own (for restarts and crashes); stops them afterwards."""
    started = []

    def start(data_dir=None, nodes=3, args=()):
        b = Berth.start(data_dir or tmp_path / f"data-{len(started)}", nodes=nodes, args=args)
        started.append(b)
        return b

    yield start
    for b in started:
        b.stop()


@pytest.fixture
def ns(berth, request):
    """A namespace of this test's own; deleted (without waiting) afterwards."""
    base = request.node.name.lower().replace("_", "-")
    name = "".join(ch for ch in base if ch.isalnum() or ch == "-")[:40].strip("-")
    name = f"{name}-{uuid.uuid4().hex[:5]}"
    berth.create_namespace(name)
    yield name
    berth.kubectl("delete", "namespace", name, "--wait=false", check=False)
