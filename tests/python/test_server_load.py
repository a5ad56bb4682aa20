"""Load: 16 concurrent clients of mixed protocols (happybase over Thrift with each
transport/protocol, the Python gRPC client, REST) run a bounded mix of reads, writes and
scans against one server. No request fails, every write is readable afterwards, no scanner
is left open, and the server's memory stays bounded.
"""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.request

import cellar
import happybase

CLIENTS = 16
RUN_SECONDS = 8.0
RSS_LIMIT_BYTES = 1 << 30
TABLE = "load"


def value_of(row: bytes) -> bytes:
    return b"value-of-" + row


def table_client(server, i: int, kind: str, stop, written: list, errors: list) -> None:
    """Batched puts, point reads and short scans through a happybase-like API: happybase
    over Thrift (each transport/protocol in turn) or the Python gRPC client."""
    rng = random.Random(i)
    if kind == "thrift":
        transport, protocol = [("buffered", "binary"), ("framed", "compact"),
                               ("buffered", "compact"), ("framed", "binary")][i % 4]
        label = f"thrift client {i} ({transport}/{protocol})"
    else:
        label = f"grpc client {i}"
    try:
        if kind == "thrift":
            conn = happybase.Connection(*server.thrift, transport=transport, protocol=protocol)
        else:
            conn = cellar.Connection(*server.grpc)
        table = conn.table(TABLE)
        prefix = f"{kind[0]}{i}-"
        n = 0
        while not stop.is_set():
            op = rng.random()
            if op < 0.5:
                with table.batch(batch_size=50) as b:
                    for _ in range(20):
                        row = f"{prefix}{n:06d}".encode()
                        b.put(row, {b"d:v": value_of(row)})
                        written.append(row)
                        n += 1
            elif op < 0.8 and n:
                row = f"{prefix}{rng.randrange(n):06d}".encode()
                assert table.row(row) == {b"d:v": value_of(row)}, row
            else:
                rows = list(table.scan(row_prefix=prefix.encode(), limit=50, batch_size=7))
                assert all(d == {b"d:v": value_of(r)} for r, d in rows)
        conn.close()
    except Exception as e:  # noqa: BLE001 - every failure is reported by the test
        errors.append(f"{label}: {e!r}")


def thrift_client(server, i, stop, written, errors) -> None:
    table_client(server, i, "thrift", stop, written, errors)


def grpc_client(server, i, stop, written, errors) -> None:
    table_client(server, i, "grpc", stop, written, errors)


def rest_client(server, i: int, stop: threading.Event, written: list, errors: list) -> None:
    base = f"http://{server.http[0]}:{server.http[1]}/{TABLE}"
    rng = random.Random(i)
    try:
        n = 0
        while not stop.is_set():
            op = rng.random()
            if op < 0.5:
                row = f"r{i}-{n:06d}"
                body = json.dumps({"cells": [{"column": "d:v",
                                              "value": value_of(row.encode()).decode()}]})
                req = urllib.request.Request(f"{base}/{row}", data=body.encode(), method="PUT")
                req.add_header("content-type", "application/json")
                urllib.request.urlopen(req, timeout=30).read()
                written.append(row.encode())
                n += 1
            elif op < 0.8 and n:
                row = f"r{i}-{rng.randrange(n):06d}"
                got = json.loads(urllib.request.urlopen(f"{base}/{row}", timeout=30).read())
                assert got["cells"][0]["value"] == value_of(row.encode()).decode(), row
            else:
                body = urllib.request.urlopen(f"{base}/scan?prefix=r{i}-&limit=50", timeout=30)
                for line in body.read().splitlines():
                    r = json.loads(line)
                    assert r["cells"][0]["value"] == "value-of-" + r["row"]
    except Exception as e:  # noqa: BLE001 - every failure is reported by the test
        errors.append(f"rest client {i}: {e!r}")


def metric(server, name: str) -> float:
    text = urllib.request.urlopen(
        f"http://{server.http[0]}:{server.http[1]}/metrics", timeout=30
    ).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def test_sixteen_mixed_clients(cellar_server):
    happybase.Connection(*cellar_server.thrift).create_table(TABLE, {"d": {}})
    kinds = [thrift_client] * 8 + [grpc_client] * 4 + [rest_client] * 4
    assert len(kinds) == CLIENTS
    stop = threading.Event()
    written: list = []
    errors: list = []
    threads = [
        threading.Thread(target=kind, args=(cellar_server, i, stop, written, errors))
        for i, kind in enumerate(kinds)
    ]
    for t in threads:
        t.start()
    peak_rss = 0
    deadline = time.monotonic() + RUN_SECONDS
    while time.monotonic() < deadline:
        peak_rss = max(peak_rss, cellar_server.rss_bytes())
        time.sleep(0.25)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a client did not finish"
    assert not errors, errors
    assert len(written) > 1000, f"only {len(written)} rows written"

    # Every acknowledged write is there.
    table = happybase.Connection(*cellar_server.thrift).table(TABLE)
    for start in range(0, len(written), 1000):
        chunk = written[start : start + 1000]
        found = dict(table.rows(chunk))
        assert all(found.get(r) == {b"d:v": value_of(r)} for r in chunk)

    assert metric(cellar_server, "cellar_open_scanners") == 0, "a scanner was leaked"
    assert peak_rss < RSS_LIMIT_BYTES, f"server RSS reached {peak_rss} bytes"
