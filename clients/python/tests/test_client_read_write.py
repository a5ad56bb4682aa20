"""put, row, rows, cells, delete and counters against a real server.

Expected values follow the documented semantics (proto comments, docs/hql.md): timestamps
in nanoseconds, a read's `timestamp` an exclusive upper bound, time ranges [min, max),
families keeping `max_versions` versions, newest first.
"""

from __future__ import annotations

import struct
import threading
import time

import pytest

import cellar

T = 1_700_000_000_000_000_000  # 2023-11-14 in nanoseconds


def test_put_then_row(table: cellar.Table) -> None:
    table.put(b"r1", {b"cf:a": b"1", b"cf:b": b"2", b"other:x": b"3"})
    assert table.row(b"r1") == {b"cf:a": b"1", b"cf:b": b"2", b"other:x": b"3"}
    assert table.row(b"missing") == {}


def test_str_keys_are_utf8(table: cellar.Table) -> None:
    table.put("caf\u00e9", {"cf:q": "v\u00e9"})
    assert table.row("caf\u00e9".encode()) == {b"cf:q": "v\u00e9".encode()}


def test_binary_safe(table: cellar.Table) -> None:
    key, qual, value = b"\x00\xff\n\t", b"q:\x00\x01", bytes(range(256))
    table.put(key, {b"cf:" + qual: value})
    assert table.row(key) == {b"cf:" + qual: value}


def test_family_without_qualifier_is_the_empty_qualifier(table: cellar.Table) -> None:
    table.put(b"r", {b"other": b"v"})
    assert table.row(b"r") == {b"other:": b"v"}


def test_columns_select_families_and_qualifiers(table: cellar.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"2", b"other:x": b"3"})
    assert table.row(b"r", columns=[b"cf"]) == {b"cf:a": b"1", b"cf:b": b"2"}
    assert table.row(b"r", columns=[b"cf:"]) == {b"cf:a": b"1", b"cf:b": b"2"}
    assert table.row(b"r", columns=[b"cf:b", b"other:x"]) == {b"cf:b": b"2", b"other:x": b"3"}
    assert table.row(b"r", columns=[b"cf:zzz"]) == {}


def test_timestamps_and_time_ranges(table: cellar.Table) -> None:
    for i, v in enumerate([b"v1", b"v2", b"v3"], start=1):
        table.put(b"r", {b"cf:a": v}, timestamp=T + i * 100)
    # newest
    assert table.row(b"r") == {b"cf:a": b"v3"}
    assert table.row(b"r", include_timestamp=True) == {b"cf:a": (b"v3", T + 300)}
    # timestamp: exclusive upper bound
    assert table.row(b"r", timestamp=T + 300) == {b"cf:a": b"v2"}
    assert table.row(b"r", timestamp=T + 301) == {b"cf:a": b"v3"}
    assert table.row(b"r", timestamp=T + 100) == {}
    # [min, max)
    assert table.row(b"r", time_range=(T + 100, T + 300)) == {b"cf:a": b"v2"}
    assert table.row(b"r", time_range=(T + 100, T + 300), versions=3) == {b"cf:a": [b"v2", b"v1"]}
    assert table.row(b"r", time_range=(T + 301, T + 1000)) == {}
    # both: their intersection
    assert table.row(b"r", timestamp=T + 200, time_range=(T, T + 1000)) == {b"cf:a": b"v1"}
    # versions, newest first
    assert table.row(b"r", versions=2, include_timestamp=True) == {
        b"cf:a": [(b"v3", T + 300), (b"v2", T + 200)]
    }


def test_cells(table: cellar.Table) -> None:
    for i in range(1, 5):
        table.put(b"r", {b"cf:a": b"v%d" % i}, timestamp=T + i)
    # the family keeps 3 versions
    assert table.cells(b"r", b"cf:a") == [b"v4", b"v3", b"v2"]
    assert table.cells(b"r", b"cf:a", versions=2) == [b"v4", b"v3"]
    assert table.cells(b"r", b"cf:a", versions=2, include_timestamp=True) == [
        (b"v4", T + 4),
        (b"v3", T + 3),
    ]
    assert table.cells(b"r", b"cf:a", timestamp=T + 4) == [b"v3", b"v2", b"v1"]
    assert table.cells(b"r", b"cf:a", time_range=(T + 2, T + 4)) == [b"v3", b"v2"]
    assert table.cells(b"r", b"cf:nope") == []
    assert table.cells(b"nope", b"cf:a") == []
    # `other` keeps one version
    table.put(b"r", {b"other:x": b"old"}, timestamp=T + 1)
    table.put(b"r", {b"other:x": b"new"}, timestamp=T + 2)
    assert table.cells(b"r", b"other:x") == [b"new"]


def test_server_timestamps_are_now_and_increasing(table: cellar.Table) -> None:
    before = time.time_ns()
    table.put(b"r", {b"cf:a": b"1"})
    table.put(b"r", {b"cf:a": b"2"})
    after = time.time_ns()
    cells = table.cells(b"r", b"cf:a", include_timestamp=True)
    assert [v for v, _ in cells] == [b"2", b"1"]
    (_, t2), (_, t1) = cells
    assert t1 < t2
    # the server's clock, give or take a minute of skew
    assert before - 60_000_000_000 <= t1 <= after + 60_000_000_000


def test_rows(table: cellar.Table) -> None:
    table.put(b"a", {b"cf:x": b"1"})
    table.put(b"b", {b"cf:x": b"2", b"other:y": b"3"})
    table.put(b"c", {b"cf:x": b"4"})
    got = table.rows([b"c", b"missing", b"a", b"b"])
    assert got == [
        (b"c", {b"cf:x": b"4"}),
        (b"a", {b"cf:x": b"1"}),
        (b"b", {b"cf:x": b"2", b"other:y": b"3"}),
    ]
    assert table.rows([b"b"], columns=[b"other"]) == [(b"b", {b"other:y": b"3"})]
    assert table.rows([]) == []


def test_rows_with_timestamps(table: cellar.Table) -> None:
    table.put(b"a", {b"cf:x": b"old"}, timestamp=T + 1)
    table.put(b"a", {b"cf:x": b"new"}, timestamp=T + 2)
    table.put(b"b", {b"cf:x": b"late"}, timestamp=T + 5)
    assert table.rows([b"a", b"b"], timestamp=T + 2) == [(b"a", {b"cf:x": b"old"})]
    assert table.rows([b"a", b"b"], time_range=(T + 2, T + 6), include_timestamp=True) == [
        (b"a", {b"cf:x": (b"new", T + 2)}),
        (b"b", {b"cf:x": (b"late", T + 5)}),
    ]


def test_durability_modes(table: cellar.Table) -> None:
    for mode in ("buffered", "flush", "sync", None):
        table.put(b"r-%s" % str(mode).encode(), {b"cf:a": b"v"}, durability=mode)
    assert len(table.rows([b"r-buffered", b"r-flush", b"r-sync", b"r-None"])) == 4


def test_delete_row_columns_and_families(table: cellar.Table) -> None:
    data = {b"cf:a": b"1", b"cf:b": b"2", b"other:x": b"3"}
    for r in (b"r1", b"r2", b"r3"):
        table.put(r, data)
    table.delete(b"r1")
    table.delete(b"r2", columns=[b"cf:a"])
    table.delete(b"r3", columns=[b"cf"])
    assert table.row(b"r1") == {}
    assert table.row(b"r2") == {b"cf:b": b"2", b"other:x": b"3"}
    assert table.row(b"r3") == {b"other:x": b"3"}


def test_delete_removes_every_version(table: cellar.Table) -> None:
    table.put(b"r", {b"cf:a": b"1"}, timestamp=T + 1)
    table.put(b"r", {b"cf:a": b"2"}, timestamp=T + 2)
    table.delete(b"r", columns=[b"cf:a"])
    assert table.cells(b"r", b"cf:a") == []
    # Cellar's rule: a later write is visible whatever its timestamp
    table.put(b"r", {b"cf:a": b"older"}, timestamp=T)
    assert table.row(b"r") == {b"cf:a": b"older"}


def test_delete_one_version(table: cellar.Table) -> None:
    for i in (1, 2, 3):
        table.put(b"r", {b"cf:a": b"a%d" % i, b"cf:b": b"b%d" % i}, timestamp=T + i)
    table.delete(b"r", columns=[b"cf:a"], timestamp=T + 3)
    # the next older version shows again
    assert table.row(b"r") == {b"cf:a": b"a2", b"cf:b": b"b3"}
    # a whole row at one timestamp: every column's version at exactly T+2
    table.delete(b"r", timestamp=T + 2)
    assert table.cells(b"r", b"cf:a") == [b"a1"]
    assert table.cells(b"r", b"cf:b") == [b"b3", b"b1"]
    # a family at one timestamp
    table.delete(b"r", columns=[b"cf"], timestamp=T + 1)
    assert table.row(b"r") == {b"cf:b": b"b3"}


def test_counters(table: cellar.Table) -> None:
    assert table.counter_get(b"r", b"cf:n") == 0
    assert table.counter_inc(b"r", b"cf:n") == 1
    assert table.counter_inc(b"r", b"cf:n", 5) == 6
    assert table.counter_dec(b"r", b"cf:n", 2) == 4
    assert table.counter_get(b"r", b"cf:n") == 4
    # 8-byte big-endian, as in HBase
    assert table.row(b"r") == {b"cf:n": struct.pack(">q", 4)}
    table.counter_set(b"r", b"cf:n", 42)
    assert table.counter_get(b"r", b"cf:n") == 42
    assert table.counter_inc(b"r", b"cf:n", -50) == -8
    assert table.counter_inc(b"r", b"cf:n", 0) == -8


def test_concurrent_increments_sum_exactly(table: cellar.Table) -> None:
    threads, per_thread = 8, 100
    errors: "list[BaseException]" = []

    def work() -> None:
        try:
            for _ in range(per_thread):
                table.counter_inc(b"hits", b"cf:n")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not errors
    assert table.counter_get(b"hits", b"cf:n") == threads * per_thread


def test_counter_get_of_a_non_counter(table: cellar.Table) -> None:
    table.put(b"r", {b"cf:s": b"abc"})
    with pytest.raises(ValueError):
        table.counter_get(b"r", b"cf:s")


def test_unknown_table_is_not_found(conn: cellar.Connection) -> None:
    t = conn.table("no_such_table")
    with pytest.raises(cellar.NotFound):
        t.row(b"r")
    with pytest.raises(cellar.NotFound):
        t.put(b"r", {b"cf:a": b"v"})
    with pytest.raises(cellar.NotFound):
        list(t.scan())
    with pytest.raises(cellar.NotFound):
        t.counter_inc(b"r", b"cf:a")
    with pytest.raises(cellar.NotFound):
        t.families()


def test_unknown_family_is_an_error(table: cellar.Table) -> None:
    with pytest.raises(cellar.Error, match="nofamily"):
        table.put(b"r", {b"nofamily:a": b"v"})
    assert table.row(b"r") == {}


def test_a_failed_put_writes_nothing(table: cellar.Table) -> None:
    # one Mutate is atomic: the good cell is not written either
    with pytest.raises(cellar.Error):
        table.put(b"r", {b"cf:a": b"v", b"nofamily:a": b"v"})
    assert table.row(b"r") == {}
