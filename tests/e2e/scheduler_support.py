"""Helpers for the scheduler walkthroughs: servers with extra flags, `berth scheduler` processes,
and reading where pods went. Built on conftest's `Berth` harness."""

import json
import os
import queue
import signal
import stat
import subprocess
import threading
import time
import urllib.request

import conftest
from conftest import Berth, eventually

#: Walkthrough images are not pulled by the simulated nodes; any name works.
IMAGE = "docker.io/ocpqe/hello-pod"


def start_serve(tmp_path, *extra_args, nodes=3, monkeypatch):
    """`berth serve` with extra flags (e.g. `--policy-config-file F`), through a wrapper script
    that conftest's harness runs as its binary."""
    wrapper = tmp_path / "berth-serve-with-flags"
    real = str(conftest.BERTH_BIN)
    quoted = " ".join(f"'{a}'" for a in map(str, extra_args))
    wrapper.write_text(f'#!/bin/sh\nexec \'{real}\' "$@" {quoted}\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(conftest, "BERTH_BIN", wrapper)
    return Berth.start(tmp_path / "data", nodes=nodes)


def node_of(berth, ns, name):
    """spec.nodeName of a pod, or '' while it is not bound."""
    r = berth.kubectl("get", "pod", name, "-n", ns, "-o", "jsonpath={.spec.nodeName}")
    return r.stdout.strip()


def wait_bound(berth, ns, name, timeout=60):
    return eventually(lambda: node_of(berth, ns, name), timeout=timeout,
                      what=f"pod {ns}/{name} to be bound")


def wait_failed_scheduling(berth, ns, name, timeout=60):
    """Waits until `kubectl describe pod` shows a FailedScheduling event; returns the output."""
    def check():
        out = berth.kubectl("describe", "pod", name, "-n", ns).stdout
        return out if "FailedScheduling" in out else None
    return eventually(check, timeout=timeout, what=f"FailedScheduling for {ns}/{name}")


def label_node(berth, node, *labels):
    berth.kubectl("label", "node", node, "--overwrite", *labels)


def pod(name, ns, labels=None, **spec):
    meta = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    body = {"containers": [{"name": "c", "image": IMAGE}], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


class SchedulerProcess:
    """A `berth scheduler` against a running server; stdout lines are collected as they come."""

    def __init__(self, berth, name, *extra, log_path):
        self.lines = []
        self._q = queue.Queue()
        env = dict(os.environ, BERTH_LOG=os.environ.get("BERTH_LOG", "info"))
        self.log_path = log_path
        log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [str(conftest.BERTH_BIN), "scheduler", "--kubeconfig", str(berth.kubeconfig),
             "--scheduler-name", name, "--metrics-bind-address", "127.0.0.1:0", *map(str, extra)],
            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True, env=env)
        log.close()
        threading.Thread(target=self._pump, daemon=True).start()
        self.metrics_url = eventually(self._metrics_url, timeout=60,
                                      what="berth scheduler to serve /metrics")

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def _metrics_url(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"berth scheduler exited: {self.log()}")
        for line in self.lines:
            if line.startswith("serving /metrics"):
                return line.split(" at ", 1)[1].split(" ", 1)[0]
        return None

    def identity(self):
        for line in self.lines:
            if line.startswith("leader election:"):
                return line.rsplit("identity ", 1)[1].strip()
        return None

    def became_leader(self):
        return any(line.startswith("became the leader") for line in self.lines)

    def get(self, path):
        with urllib.request.urlopen(self.metrics_url + path, timeout=10) as r:
            return r.status, r.read().decode()

    def log(self):
        return self.log_path.read_text() if self.log_path.exists() else ""

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def stop(self):
        self.kill(signal.SIGTERM)


def events_for(berth, ns, name, reason):
    evs = berth.kubectl_json("get", "events", "-n", ns,
                             "--field-selector", f"involvedObject.name={name}")
    return [e for e in evs["items"] if e.get("reason") == reason]


def metric_value(text, name, **labels):
    """The value of one sample in Prometheus text (None if absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    prefix = f"{name}{{{want}}} " if labels else f"{name} "
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix):].split()[0])
    return None


def explain(berth, ns, name, *extra):
    return subprocess.run(
        [str(conftest.BERTH_BIN), "explain", "pod", f"{ns}/{name}", "--kubeconfig",
         str(berth.kubeconfig), *extra], capture_output=True, text=True, timeout=120)


def explain_json(berth, ns, name):
    r = explain(berth, ns, name, "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def lease_holder(berth, name, namespace="kube-system"):
    r = berth.kubectl("get", "lease", name, "-n", namespace, "-o",
                      "jsonpath={.spec.holderIdentity}", check=False)
    return r.stdout.strip() if r.returncode == 0 else None


def pause():
    time.sleep(0.2)
