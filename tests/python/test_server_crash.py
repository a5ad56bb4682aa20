"""Crash: writers with `sync` durability are killed together with the server (`kill -9`)
mid-stream, several cycles; after each restart every acknowledged row is there, with its
value. The gateway's default durability is `--durability sync`, so a happybase put
(writeToWAL=true) is acknowledged only once fdatasync has returned (docs/durability.md).
"""

from __future__ import annotations

import random
import threading
import time

import happybase

from cellar_proc import CellarServer

CYCLES = 4
WRITERS = 4
TABLE = "crash"


def value_of(row: bytes) -> bytes:
    return b"v-" + row[::-1]


def writer(addr, cycle: int, w: int, acked: list, stop: threading.Event) -> None:
    try:
        conn = happybase.Connection(host=addr[0], port=addr[1], timeout=10_000)
        table = conn.table(TABLE)
        i = 0
        while not stop.is_set():
            row = f"c{cycle}-w{w}-{i:06d}".encode()
            table.put(row, {b"d:v": value_of(row)})
            acked.append(row)  # only after the put returned: acknowledged
            i += 1
    except Exception:
        # The server was killed under this writer: what it acknowledged is in `acked`.
        pass


def check_all_present(addr, acked: list) -> None:
    conn = happybase.Connection(host=addr[0], port=addr[1], timeout=30_000)
    table = conn.table(TABLE)
    missing = []
    for start in range(0, len(acked), 500):
        chunk = acked[start : start + 500]
        found = dict(table.rows(chunk, columns=[b"d:v"]))
        for row in chunk:
            if found.get(row, {}).get(b"d:v") != value_of(row):
                missing.append(row)
    conn.close()
    assert not missing, f"{len(missing)} acknowledged rows lost, e.g. {missing[:5]}"


def test_acknowledged_sync_writes_survive_kill_9_of_the_server(tmp_path):
    db = tmp_path / "db"
    rng = random.Random(17)
    acked: list = []
    for cycle in range(CYCLES):
        server = CellarServer(db, ["--durability", "sync", "--grpc", "none", "--http", "none"])
        server.start()
        try:
            if cycle == 0:
                conn = happybase.Connection(host=server.thrift[0], port=server.thrift[1])
                conn.create_table(TABLE, {"d": {}})
                conn.close()
            else:
                check_all_present(server.thrift, acked)
            stop = threading.Event()
            threads = [
                threading.Thread(target=writer, args=(server.thrift, cycle, w, acked, stop))
                for w in range(WRITERS)
            ]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(0.5, 1.5))
            server.kill()  # mid-stream, without any chance to flush
            stop.set()
            for t in threads:
                t.join(timeout=30)
        finally:
            server.kill()
        assert acked, "no write was acknowledged before the kill"
    with CellarServer(db, ["--grpc", "none", "--http", "none"]) as server:
        check_all_present(server.thrift, acked)
