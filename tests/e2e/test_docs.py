"""The README and every page of docs/ run as written: their ```sh blocks, in order, in a fresh
directory, as a reader would type them, so the documents and the program cannot drift apart.

How a page is run:

- each ```sh block runs in one `bash -euo pipefail`, in the page's own temporary directory (with
  `examples/` and `deploy/` of the repository linked in), with `berth` on `PATH`; what a block
  `export`s is seen by the blocks after it;
- a line that starts a server (`berth serve ...`, or `scripts/serve ...`, which builds berth and then
  runs `berth serve` with the same flags) is what a reader runs in a second terminal: it runs in the
  background and the page goes on once the server answers `/readyz`; the next such line stops it
  first (SIGTERM), as the reader's Ctrl-C would, unless the line ends in `&` (a server that runs
  next to the others, as the replicas of docs/ha-etcd.md);
- what a block starts in the background (`cmd &`) is stopped when the page ends;
- a line written `! command` must fail (the documents show the error below it);
- a block whose info string says `skip-test` is not run: only the first screen's `scripts/test`
  (which is CI itself) may say so.

Pages run one at a time (a file lock): the documents use berth's default port, 6443.
"""

import fcntl
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BERTH_BIN, REPO

#: Pages whose blocks are not commands to run (the design and the specifications).
NOT_RUN = {"design.md"}
PAGES = [REPO / "README.md"] + sorted(
    p for p in (REPO / "docs").glob("*.md") if p.name not in NOT_RUN
)
#: A block that runs longer than this has hung (a watch without a timeout, a wait that never ends).
BLOCK_TIMEOUT = 300
#: How long a server may take to answer /readyz.
SERVE_TIMEOUT = 60
#: The only blocks allowed to say skip-test: the ones that are the test run itself.
SKIPPABLE = {"scripts/test"}
LOCK = Path("/tmp/berth-docs-port-6443.lock")

FENCE = re.compile(r"^```(\S*)(.*)$")
SERVER_LINE = re.compile(r"^\s*(scripts/serve|berth serve)(\s|$)")


def blocks(page):
    """The page's fenced blocks as (line number, info words, text)."""
    out, cur, start, info = [], None, 0, []
    for n, line in enumerate(page.read_text().splitlines(), 1):
        m = FENCE.match(line)
        if cur is None and m:
            cur, start, info = [], n, [m.group(1)] + m.group(2).split()
        elif cur is not None and line.startswith("```"):
            out.append((start, info, "\n".join(cur)))
            cur = None
        elif cur is not None:
            cur.append(line)
    assert cur is None, f"{page.name}: the block at line {start} is never closed"
    return out


def runnable(page):
    """The page's shell blocks, checking that only the allowed ones are skipped."""
    out = []
    for start, info, text in blocks(page):
        if info[0] not in ("sh", "bash"):
            continue
        if "skip-test" in info:
            assert text.strip() in SKIPPABLE, (
                f"{page.name}:{start}: only {sorted(SKIPPABLE)} may skip the test"
            )
            continue
        out.append((start, text))
    return out


def expect_failures(lines):
    """`! cmd` must fail: bash's own `!` would not stop a `set -e` script when cmd succeeds. The
    `then` goes on a line of its own (the command may end in a comment), after the command's
    here-document if it has one."""
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)!\s+(.*)$", lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        out.append(f"{m.group(1)}if {m.group(2)}")
        i += 1
        heredoc = re.search(r"<<-?\s*'?\"?(\w+)", m.group(2))
        if heredoc:
            while i < len(lines) and lines[i].strip() != heredoc.group(1):
                out.append(lines[i])
                i += 1
            out.append(lines[i] if i < len(lines) else heredoc.group(1))
            i += 1
        what = m.group(2).replace("'", "")
        out.append(f"then echo 'expected to fail: {what}' >&2; exit 1; fi")
    return out


class Page:
    """One page being run: its directory, its environment and its current server."""

    def __init__(self, page, tmp):
        self.page, self.dir = page, tmp
        for name in ("examples", "deploy"):
            (tmp / name).symlink_to(REPO / name)
        (tmp / "scripts").mkdir()
        # `scripts/serve` in a document builds berth first; here berth is built.
        serve = tmp / "scripts" / "serve"
        serve.write_text('#!/bin/sh\nexec berth serve "$@"\n')
        serve.chmod(0o755)
        self.env_file = tmp / ".env"
        self.env_file.write_text("")
        self.env = dict(os.environ)
        self.env["PATH"] = f"{BERTH_BIN.parent}:{self.env['PATH']}"
        self.env["HOME"] = str(tmp)  # kubectl's discovery cache, fresh per page
        self.env.pop("KUBECONFIG", None)
        self.servers = []
        self.groups = []
        self.server_log = tmp / "server.log"

    def start_server(self, line, where):
        args = shlex.split(line, comments=True)
        if args[-1] == "&":
            args.pop()
        else:
            self.stop_servers()
        if args[0] == "scripts/serve":
            args = ["berth", "serve", *args[1:]]
        data = Path(self.dir, "berth-data")
        if "--data-dir" in args:
            data = Path(self.dir, args[args.index("--data-dir") + 1])
        kubeconfig = data / "kubeconfig"
        kubeconfig.unlink(missing_ok=True)
        log = open(self.server_log, "ab")
        server = subprocess.Popen(
            args, cwd=self.dir, env=self.env, stdout=log, stderr=log,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        self.servers.append(server)
        deadline = time.monotonic() + SERVE_TIMEOUT
        while time.monotonic() < deadline:
            if server.poll() is not None:
                pytest.fail(f"{where}: `{line}` exited {server.returncode}:\n{self.tail()}")
            if kubeconfig.exists():
                ready = subprocess.run(
                    ["kubectl", "--kubeconfig", str(kubeconfig), "get", "--raw", "/readyz"],
                    capture_output=True, env=self.env,
                )
                if ready.returncode == 0:
                    return
            time.sleep(0.2)
        pytest.fail(f"{where}: `{line}` did not become ready:\n{self.tail()}")

    def stop_servers(self):
        for server in self.servers:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)
        for server in self.servers:
            try:
                server.wait(70)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        self.servers = []

    def stop_all(self):
        """The servers, then what the blocks left running in the background (`cmd &`)."""
        self.stop_servers()
        for group in self.groups:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def tail(self):
        text = self.server_log.read_text(errors="replace") if self.server_log.exists() else ""
        return "\n".join(text.splitlines()[-30:])

    def run(self, text, where):
        script = "\n".join(
            ["set -euo pipefail", f"source {self.env_file}"]
            + expect_failures(text.splitlines())
            + [f"export -p > {self.env_file}"]
        )
        try:
            # A session of its own: what the block leaves in the background is killed with it.
            # Output to files, not pipes, which a background command would hold open.
            out, err = self.dir / ".stdout", self.dir / ".stderr"
            with open(out, "w") as o, open(err, "w") as e:
                block = subprocess.Popen(
                    ["bash", "-c", script], cwd=self.dir, env=self.env,
                    stdout=o, stderr=e, stdin=subprocess.DEVNULL, start_new_session=True,
                )
            self.groups.append(block.pid)
            block.wait(timeout=BLOCK_TIMEOUT)
            done = subprocess.CompletedProcess(
                block.args, block.returncode, out.read_text(errors="replace"),
                err.read_text(errors="replace"),
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{where}: the block did not end within {BLOCK_TIMEOUT} s:\n{text}\n"
                        f"--- output:\n{(self.dir / '.stdout').read_text(errors='replace')}\n"
                        f"{(self.dir / '.stderr').read_text(errors='replace')}")
        if done.returncode != 0:
            pytest.fail(
                f"{where}: the block failed (exit {done.returncode}):\n{text}\n"
                f"--- stdout:\n{done.stdout[-4000:]}\n--- stderr:\n{done.stderr[-4000:]}\n"
                f"--- server log:\n{self.tail()}"
            )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_runs_as_written(page, tmp_path):
    steps = runnable(page)
    assert steps, f"{page.name} has no ```sh blocks"
    LOCK.touch(exist_ok=True)
    with open(LOCK) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        p = Page(page, tmp_path)
        try:
            for start, text in steps:
                where = f"{page.name}:{start}"
                pending = []
                for line in text.splitlines():
                    if SERVER_LINE.match(line):
                        if pending:
                            p.run("\n".join(pending), where)
                            pending = []
                        p.start_server(line, where)
                    else:
                        pending.append(line)
                if any(line.strip() for line in pending):
                    p.run("\n".join(pending), where)
        finally:
            p.stop_all()
