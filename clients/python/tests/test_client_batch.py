"""Batches: happybase's Batch semantics (size-triggered sends, sends at exit even on an
exception unless transaction=True), plus byte-sized sends and durability."""

from __future__ import annotations

import pytest

import cellar

T = 1_700_000_000_000_000_000


class Boom(Exception):
    pass


def test_sent_at_exit(table: cellar.Table) -> None:
    with table.batch() as b:
        b.put(b"r1", {b"cf:a": b"1"})
        b.put(b"r2", {b"cf:a": b"2", b"other:x": b"3"})
        b.delete(b"r0")
        assert len(b) == 4
        assert table.row(b"r1") == {}  # nothing sent yet
    assert len(b) == 0
    assert table.rows([b"r1", b"r2"]) == [
        (b"r1", {b"cf:a": b"1"}),
        (b"r2", {b"cf:a": b"2", b"other:x": b"3"}),
    ]
    assert len(b.put_timestamps) == 3


def test_size_triggered_sends(table: cellar.Table) -> None:
    # batch_size counts mutations: one per column put or deleted
    with table.batch(batch_size=3) as b:
        b.put(b"r1", {b"cf:a": b"1", b"cf:b": b"1"})
        assert table.row(b"r1") == {}
        b.put(b"r2", {b"cf:a": b"2"})  # the third mutation: sent
        assert table.row(b"r1") == {b"cf:a": b"1", b"cf:b": b"1"}
        assert table.row(b"r2") == {b"cf:a": b"2"}
        assert len(b) == 0
        b.put(b"r3", {b"cf:a": b"3"})
        assert table.row(b"r3") == {}
    assert table.row(b"r3") == {b"cf:a": b"3"}


def test_byte_triggered_sends(table: cellar.Table) -> None:
    with table.batch(max_bytes=10_000) as b:
        b.put(b"r1", {b"cf:a": b"x" * 4000})
        assert table.row(b"r1") == {}
        b.put(b"r2", {b"cf:a": b"x" * 7000})  # over 10 000 bytes: sent
        assert table.row(b"r1") == {b"cf:a": b"x" * 4000}
        assert len(b) == 0


def test_exception_still_sends(table: cellar.Table) -> None:
    # happybase: a with-block that raises still sends what is buffered
    with pytest.raises(Boom):
        with table.batch() as b:
            b.put(b"r", {b"cf:a": b"v"})
            raise Boom()
    assert table.row(b"r") == {b"cf:a": b"v"}


def test_transaction_discards_on_exception(table: cellar.Table) -> None:
    with pytest.raises(Boom):
        with table.batch(transaction=True) as b:
            b.put(b"r", {b"cf:a": b"v"})
            raise Boom()
    assert table.row(b"r") == {}
    with table.batch(transaction=True) as b:
        b.put(b"r", {b"cf:a": b"v"})
    assert table.row(b"r") == {b"cf:a": b"v"}


def test_transaction_and_batch_size_conflict(table: cellar.Table) -> None:
    with pytest.raises(TypeError):
        table.batch(batch_size=10, transaction=True)
    with pytest.raises(ValueError):
        table.batch(batch_size=0)


def test_batch_timestamp_and_deletes(table: cellar.Table) -> None:
    table.put(b"r", {b"cf:a": b"old", b"cf:b": b"b", b"other:x": b"x"}, timestamp=T)
    with table.batch(timestamp=T + 5, durability="sync") as b:
        b.put(b"r", {b"cf:a": b"new"})
        b.delete(b"r", columns=[b"other"])  # every version: the batch's timestamp is for puts
        b.put(b"s", {b"cf:a": b"s"}, timestamp=T + 9)
        b.delete(b"r", columns=[b"cf:b"], timestamp=T + 1)  # no version at T+1: nothing
    assert b.put_timestamps == [T + 5, T + 9]
    assert table.row(b"r", include_timestamp=True) == {b"cf:a": (b"new", T + 5), b"cf:b": (b"b", T)}
    assert table.cells(b"r", b"cf:a") == [b"new", b"old"]
    assert table.cells(b"s", b"cf:a", include_timestamp=True) == [(b"s", T + 9)]


def test_many_rows_in_small_batches(table: cellar.Table) -> None:
    with table.batch(batch_size=7, durability="buffered") as b:
        for i in range(500):
            b.put(b"k%04d" % i, {b"cf:v": b"%d" % i})
    rows = list(table.scan())
    assert len(rows) == 500
    assert rows[123] == (b"k0123", {b"cf:v": b"123"})


def test_a_failed_send_raises(table: cellar.Table) -> None:
    with pytest.raises(cellar.Error):
        with table.batch() as b:
            b.put(b"r", {b"nofamily:a": b"v"})


def test_a_bad_value_buffers_nothing_of_the_put(table: cellar.Table) -> None:
    with table.batch() as b:
        with pytest.raises(TypeError):
            b.put(b"r", {b"cf:a": b"ok", b"cf:b": 5})  # type: ignore[arg-type]
        assert len(b) == 0
    assert table.row(b"r") == {}


def test_column_spellings(table: cellar.Table) -> None:
    with table.batch() as b:
        b.put(b"r", {b"cf:a": bytearray(b"1"), "cf:b": "2", b"cf:c": memoryview(b"3")})  # type: ignore[arg-type]
        b.put(b"s", {"cf:b": b"x"})
    assert table.row(b"r") == {b"cf:a": b"1", b"cf:b": b"2", b"cf:c": b"3"}
    assert table.row(b"s") == {b"cf:b": b"x"}
