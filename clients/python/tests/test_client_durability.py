"""Writes acknowledged with durability 'sync' or 'flush' survive a kill -9 of the server;
oversized requests get a clear error; a missing server binary fails with the build hint."""

from __future__ import annotations

from pathlib import Path

import pytest

import cellar
from cellar_testserver import Server, cellar_bin


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    db = tmp_path / "db"
    srv = Server(db)
    try:
        with srv.connect() as conn:
            conn.create_table("durable", {"f": {}})
            t = conn.table("durable")
            for i in range(50):
                t.put(b"sync%02d" % i, {b"f:v": b"%d" % i}, durability="sync")
            with t.batch(batch_size=10, durability="flush") as b:
                for i in range(50):
                    b.put(b"flush%02d" % i, {b"f:v": b"%d" % i})
            t.counter_inc(b"c", b"f:n", 7, durability="sync")
        srv.proc.kill()  # SIGKILL: no shutdown, no final flush
        srv.proc.wait(timeout=30)
    finally:
        srv.stop()
    again = Server(db)
    try:
        with again.connect() as conn:
            t = conn.table("durable")
            rows = dict(t.scan())
            assert len(rows) == 101
            assert all(rows[b"sync%02d" % i] == {b"f:v": b"%d" % i} for i in range(50))
            assert all(rows[b"flush%02d" % i] == {b"f:v": b"%d" % i} for i in range(50))
            assert t.counter_get(b"c", b"f:n") == 7
    finally:
        again.stop()


def test_oversized_request_is_resource_exhausted(table: cellar.Table) -> None:
    # the server's default --max-request-bytes is 64 MiB
    with pytest.raises(cellar.ResourceExhausted):
        table.put(b"r", {b"cf:a": b"x" * (65 << 20)})
    table.put(b"r", {b"cf:a": b"ok"})  # and the server keeps serving
    assert table.row(b"r") == {b"cf:a": b"ok"}


def test_missing_binary_names_the_build_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CELLAR_BIN", str(tmp_path / "no-cellar"))
    with pytest.raises(pytest.fail.Exception, match=r"cargo build --release -p cellar-cli"):
        cellar_bin()
