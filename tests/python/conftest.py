"""Shared fixtures: a real `cellar serve` process on ephemeral loopback ports.

`cellar_server` (module scope) starts one server for a test module; `start_cellar_server`
starts one with extra flags (e.g. small limits). Both stop the server with SIGTERM, then
SIGKILL if it has not exited within a bound. The binary is `$CELLAR_BIN`, by default
`<repo>/target/release/cellar` (build it with `cargo build --release -p cellar-cli`).
"""

import os
import pathlib
import queue
import signal
import subprocess
import tempfile
import threading
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 15


def cellar_bin():
    return os.environ.get("CELLAR_BIN", str(REPO / "target" / "release" / "cellar"))


class CellarServer:
    """A running `cellar serve`: `thrift`, `grpc`, `http` are (host, port) tuples (None
    for a listener turned off), `db_path` the database directory."""

    def __init__(self, db_path, extra_args=()):
        self.db_path = str(db_path)
        self.thrift = self.grpc = self.http = None
        self.output = []
        args = [
            cellar_bin(), "serve", "--db", self.db_path,
            "--thrift", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0",
            *extra_args,
        ]
        if not os.path.exists(args[0]):
            raise RuntimeError(
                f"{args[0]} not found: build it with `cargo build --release -p cellar-cli` "
                "or set CELLAR_BIN")
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self._lines = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._wait_listening(extra_args)

    def _read(self):
        for line in self.proc.stdout:
            self.output.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _wait_listening(self, extra_args):
        wanted = {"thrift", "grpc", "http"}
        for flag in ("--thrift", "--grpc", "--http"):
            if flag in extra_args and extra_args[list(extra_args).index(flag) + 1] == "none":
                wanted.discard(flag[2:])
        deadline = time.monotonic() + START_TIMEOUT_S
        while wanted:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                raise RuntimeError("cellar serve did not start:\n" + "".join(self.output))
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                self.stop()
                raise RuntimeError("cellar serve exited:\n" + "".join(self.output))
            parts = line.split()
            if len(parts) == 3 and parts[0] == "listening" and parts[1] in wanted:
                host, _, port = parts[2].rpartition(":")
                setattr(self, parts[1], (host.strip("[]"), int(port)))
                wanted.discard(parts[1])

    def stop(self):
        """SIGTERM, then SIGKILL after STOP_TIMEOUT_S; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        return self.proc.returncode


@pytest.fixture(scope="module")
def cellar_server():
    with tempfile.TemporaryDirectory(prefix="cellar-test-") as d:
        server = CellarServer(pathlib.Path(d) / "db")
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def start_cellar_server():
    """Starts servers with extra flags: `start_cellar_server("--max-scanners", "2")`."""
    started = []
    dirs = []

    def start(*extra_args):
        d = tempfile.TemporaryDirectory(prefix="cellar-test-")
        dirs.append(d)
        server = CellarServer(pathlib.Path(d.name) / "db", extra_args)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for s in started:
            s.stop()
        for d in dirs:
            d.cleanup()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "filter_language: scans with HBase filter strings (filterString)")
