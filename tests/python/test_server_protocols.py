"""The same data seen through every door of one server: happybase (Thrift1), the Python
gRPC client, REST and HQL (the gRPC `Hql` call). Each protocol writes one row; every
protocol must read all of them, with the same values and the same instants (Thrift in
milliseconds, the others in nanoseconds).
"""

from __future__ import annotations

import json
import urllib.request

import cellar
import happybase

MS = 1_000_000  # nanoseconds per millisecond


def rest(server, method: str, path: str, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://{server.http[0]}:{server.http[1]}{path}", data=data, method=method
    )
    if data is not None:
        req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def test_one_table_four_protocols(cellar_server):
    grpc_conn = cellar.Connection(*cellar_server.grpc)
    hb = happybase.Connection(*cellar_server.thrift)

    # A table made with HQL is a table for happybase, and the reverse.
    grpc_conn.hql("CREATE TABLE people (info MAX_VERSIONS 3);")
    assert b"people" in hb.tables()
    hb.create_table("made_by_happybase", {"d": {}})
    assert "made_by_happybase" in grpc_conn.hql("SHOW TABLES;")

    # One row written by each protocol, each at a known instant.
    hb.table("people").put(b"thrift-row", {b"info:name": b"ada"}, timestamp=1_700_000_000_001)
    grpc_conn.table("people").put(
        b"grpc-row", {b"info:name": b"grace"}, timestamp=1_700_000_000_002 * MS
    )
    rest(
        cellar_server,
        "PUT",
        "/people/rest-row",
        {"cells": [{"column": "info:name", "value": "edsger", "timestamp": 1_700_000_000_003 * MS}]},
    )
    grpc_conn.hql(
        "INSERT INTO people VALUES ('hql-row', '2023-11-14 22:13:20', 'info:name', 'barbara');"
    )
    expected = {
        b"thrift-row": (b"ada", 1_700_000_000_001),
        b"grpc-row": (b"grace", 1_700_000_000_002),
        b"rest-row": (b"edsger", 1_700_000_000_003),
        b"hql-row": (b"barbara", 1_700_000_000_000),  # 2023-11-14 22:13:20 UTC
    }

    # happybase: milliseconds.
    got = dict(hb.table("people").rows(list(expected), include_timestamp=True))
    assert got == {r: {b"info:name": v} for r, v in expected.items()}

    # gRPC: nanoseconds.
    got = dict(grpc_conn.table("people").rows(list(expected), include_timestamp=True))
    assert got == {r: {b"info:name": (v, ms * MS)} for r, (v, ms) in expected.items()}

    # REST: one row, and a scan of them all.
    row = rest(cellar_server, "GET", "/people/thrift-row")
    assert row == {
        "row": "thrift-row",
        "cells": [{"column": "info:name", "timestamp": 1_700_000_000_001 * MS, "value": "ada"}],
    }
    with urllib.request.urlopen(
        f"http://{cellar_server.http[0]}:{cellar_server.http[1]}/people/scan", timeout=30
    ) as resp:
        scanned = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    assert sorted(r["row"].encode() for r in scanned) == sorted(expected)

    # HQL: every value, in row order.
    out = grpc_conn.hql("SELECT * FROM people;")
    for name in (b"ada", b"grace", b"edsger", b"barbara"):
        assert name.decode() in out

    # A delete through one protocol is seen by all.
    hb.table("people").delete(b"grpc-row")
    assert grpc_conn.table("people").row(b"grpc-row") == {}
    assert "grace" not in grpc_conn.hql("SELECT * FROM people;")

    hb.close()
    grpc_conn.close()
