"""A real `cellar serve` process (gRPC only) on 127.0.0.1:0 for the tests, and their fixtures
(re-exported by conftest.py; a module of its own so that its name is unique beside
tests/python/conftest.py when both suites run in one pytest)."""

from __future__ import annotations

import itertools
import os
import queue
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

import cellar

REPO = Path(__file__).resolve().parents[3]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0
# Deadline of every call the tests make, so that a stuck server fails a test instead of
# hanging the suite.
CALL_TIMEOUT = 30.0

_LISTENING = re.compile(r"^listening grpc (\S+):(\d+)\s*$")


def cellar_bin() -> Path:
    path = Path(os.environ.get("CELLAR_BIN", REPO / "target" / "release" / "cellar"))
    if not path.is_file():
        pytest.fail(
            f"the server binary {path} is missing: run `cargo build --release -p cellar-cli` "
            "(or point CELLAR_BIN at a `cellar` binary)",
            pytrace=False,
        )
    return path


class Server:
    """A running `cellar serve` with its gRPC address."""

    def __init__(self, db: Path, extra_args: Optional[List[str]] = None) -> None:
        self.db = db
        args = [
            str(cellar_bin()),
            "serve",
            "--db",
            str(db),
            "--thrift",
            "none",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "none",
            *(extra_args or []),
        ]
        self.log = open(db.parent / f"{db.name}.stderr.log", "ab")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log)
        self.host, self.port = self._wait_listening()

    def _wait_listening(self) -> "tuple[str, int]":
        # stdout is read on a thread so that the wait is bounded even if the server
        # prints nothing.
        lines: "queue.Queue[Optional[bytes]]" = queue.Queue()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        try:
            while True:
                line = lines.get(timeout=START_TIMEOUT)
                if line is None:
                    break
                found = _LISTENING.match(line.decode("utf-8", "replace"))
                if found:
                    return found.group(1), int(found.group(2))
        except queue.Empty:
            pass
        self.stop()
        log = (self.db.parent / f"{self.db.name}.stderr.log").read_text(errors="replace")
        pytest.fail(
            f"`cellar serve` printed no `listening grpc` line; its stderr:\n{log}", pytrace=False
        )

    def connect(self, token: Optional[str] = None) -> cellar.Connection:
        return cellar.Connection(self.host, self.port, token=token, timeout=CALL_TIMEOUT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT)
        self.log.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("cellar") / "db")
    yield srv
    srv.stop()


@pytest.fixture
def conn(server: Server) -> Iterator[cellar.Connection]:
    with server.connect() as c:
        yield c


_names = itertools.count()


@pytest.fixture
def table(conn: cellar.Connection, request: pytest.FixtureRequest) -> Iterator[cellar.Table]:
    """A fresh table `t_<test>_<n>` with families `cf` (3 versions) and `other` (1)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", f"t_{request.node.name}")[:60] + f"_{next(_names)}"
    conn.create_table(name, {"cf": {"max_versions": 3}, "other": {}})
    yield conn.table(name)
    conn.delete_table(name, if_exists=True)
