"""Starts and stops a real `cellar serve` process for the Python tests.

The binary is `$CELLAR_BIN`, or `target/release/cellar` in this repository (built by
scripts/test.sh). Every listener binds 127.0.0.1 on an ephemeral port; the server prints one
`listening PROTOCOL ADDR` line per listener on stdout once it accepts connections.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0



def cellar_bin() -> str:
    path = os.environ.get("CELLAR_BIN") or str(REPO / "target" / "release" / "cellar")
    if not os.access(path, os.X_OK):
        raise RuntimeError(
            f"no cellar binary at {path}: run `cargo build --release -p cellar-cli` "
            "(or set CELLAR_BIN)"
        )
    return path


Addr = Tuple[str, int]


class CellarServer:
    """One `cellar serve` process on a database directory."""

    def __init__(self, db_path: Path, extra_args: Sequence[str] = ()) -> None:
        self.db_path = Path(db_path)
        self.extra_args = list(extra_args)
        self.proc: Optional[subprocess.Popen] = None
        self.thrift: Optional[Addr] = None
        self.grpc: Optional[Addr] = None
        self.http: Optional[Addr] = None
        self.stderr_lines: list = []

    def start(self) -> "CellarServer":
        listeners = []
        for flag in ("--thrift", "--grpc", "--http"):
            if flag not in self.extra_args:
                listeners += [flag, "127.0.0.1:0"]
        args = [
            cellar_bin(),
            "serve",
            "--db",
            str(self.db_path),
            *listeners,
            *self.extra_args,
        ]
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
        )
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        want = {"thrift", "grpc", "http"} - {
            a.split()[0] for a in self._off_listeners()
        }
        deadline = time.monotonic() + START_TIMEOUT_S
        assert self.proc.stdout is not None
        while want:
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"cellar serve did not start: {self.stderr_lines[-5:]}")
            line = self.proc.stdout.readline()
            if not line:
                code = self.proc.wait(timeout=5)
                raise RuntimeError(
                    f"cellar serve exited with {code}: {''.join(self.stderr_lines[-10:])}"
                )
            parts = line.split()
            if len(parts) == 3 and parts[0] == "listening":
                host, port = parts[2].rsplit(":", 1)
                setattr(self, parts[1], (host, int(port)))
                want.discard(parts[1])
        return self

    def _off_listeners(self) -> list:
        off = []
        for i, a in enumerate(self.extra_args[:-1]):
            if a in ("--thrift", "--grpc", "--http") and self.extra_args[i + 1] == "none":
                off.append(a[2:] + " none")
        return off

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_bytes(self) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> int:
        """SIGTERM, then SIGKILL if it has not exited within the bound; its exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError("cellar serve did not stop within 30 s of SIGTERM")

    def kill(self) -> None:
        """SIGKILL: the process dies without flushing anything."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT_S)

    def __enter__(self) -> "CellarServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        finally:
            self.kill()
