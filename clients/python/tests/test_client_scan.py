"""Scans and scan_arrow against a real server."""

from __future__ import annotations

import sys
from typing import Iterable, List, Tuple

import pytest

import cellar

T = 1_700_000_000_000_000_000


def keys(rows: Iterable[Tuple[bytes, cellar.RowData]]) -> List[bytes]:
    return [k for k, _ in rows]


@pytest.fixture
def filled(table: cellar.Table) -> cellar.Table:
    """Rows a00..a09 and b00..b09, each with cf:v = its key, cf:w, other:x (at T + i)."""
    with table.batch() as b:
        for prefix in (b"a", b"b"):
            for i in range(10):
                key = prefix + b"%02d" % i
                b.put(key, {b"cf:v": key, b"cf:w": b"w", b"other:x": b"x"}, timestamp=T + i)
    return table


ALL = [b"a%02d" % i for i in range(10)] + [b"b%02d" % i for i in range(10)]


def test_full_scan_in_order(filled: cellar.Table) -> None:
    rows = list(filled.scan())
    assert keys(rows) == ALL
    assert rows[0] == (b"a00", {b"cf:v": b"a00", b"cf:w": b"w", b"other:x": b"x"})


def test_start_stop_prefix(filled: cellar.Table) -> None:
    assert keys(filled.scan(row_start=b"a05", row_stop=b"b02")) == ALL[5:12]
    assert keys(filled.scan(row_start=b"a055")) == ALL[6:]
    assert keys(filled.scan(row_stop=b"a03")) == ALL[:3]
    assert keys(filled.scan(row_prefix=b"b")) == ALL[10:]
    assert keys(filled.scan(row_prefix=b"a0")) == ALL[:10]
    assert keys(filled.scan(row_prefix=b"c")) == []
    # prefix combined with a range
    assert keys(filled.scan(row_prefix=b"b", row_start=b"b07")) == ALL[17:]


def test_reverse(filled: cellar.Table) -> None:
    assert keys(filled.scan(reverse=True)) == ALL[::-1]
    # reversed, row_start is the upper end (inclusive) and row_stop the lower (exclusive)
    assert keys(filled.scan(row_start=b"a05", row_stop=b"a02", reverse=True)) == [
        b"a05",
        b"a04",
        b"a03",
    ]
    assert keys(filled.scan(row_prefix=b"a", reverse=True, limit=2)) == [b"a09", b"a08"]


def test_limit_and_batch_sizes(filled: cellar.Table) -> None:
    assert keys(filled.scan(limit=3)) == ALL[:3]
    assert keys(filled.scan(limit=100)) == ALL
    for batch_size in (1, 5, 499):
        assert keys(filled.scan(batch_size=batch_size)) == ALL
        assert keys(filled.scan(batch_size=batch_size, limit=7)) == ALL[:7]


def test_columns_and_timestamps(filled: cellar.Table) -> None:
    assert list(filled.scan(row_prefix=b"a0", columns=[b"other"], limit=1)) == [
        (b"a00", {b"other:x": b"x"})
    ]
    assert list(filled.scan(columns=[b"cf:v"], limit=2)) == [
        (b"a00", {b"cf:v": b"a00"}),
        (b"a01", {b"cf:v": b"a01"}),
    ]
    got = list(filled.scan(row_prefix=b"b", columns=[b"cf:w"], include_timestamp=True, limit=2))
    assert got == [(b"b00", {b"cf:w": (b"w", T)}), (b"b01", {b"cf:w": (b"w", T + 1)})]
    # rows whose cells all fall outside the range are left out
    assert keys(filled.scan(timestamp=T + 2)) == [b"a00", b"a01", b"b00", b"b01"]
    assert keys(filled.scan(time_range=(T + 8, T + 100))) == [b"a08", b"a09", b"b08", b"b09"]


def test_versions(table: cellar.Table) -> None:
    for i in range(1, 5):
        table.put(b"r", {b"cf:a": b"v%d" % i}, timestamp=T + i)
    assert list(table.scan()) == [(b"r", {b"cf:a": b"v4"})]
    assert list(table.scan(versions=2)) == [(b"r", {b"cf:a": [b"v4", b"v3"]})]


def test_filters(filled: cellar.Table) -> None:
    assert keys(filled.scan(filter="PrefixFilter('b0')")) == ALL[10:]
    rows = list(filled.scan(filter="KeyOnlyFilter()", limit=1))
    assert rows == [(b"a00", {b"cf:v": b"", b"cf:w": b"", b"other:x": b""})]
    assert keys(filled.scan(filter="RowFilter(=, 'binary:a03') OR RowFilter(=, 'binary:b04')")) == [
        b"a03",
        b"b04",
    ]


def test_leaving_a_scan_early(filled: cellar.Table) -> None:
    scanner = filled.scan(batch_size=2)
    assert next(scanner)[0] == b"a00"
    scanner.close()
    for i, _row in enumerate(filled.scan(batch_size=1)):
        if i == 3:
            break
    assert keys(filled.scan(limit=1)) == [b"a00"]


def test_large_rows_are_streamed(table: cellar.Table) -> None:
    # 40 rows of 1 MiB: more than one message's bytes whatever the batch size
    big = b"z" * (1 << 20)
    with table.batch(batch_size=5) as b:
        for i in range(40):
            b.put(b"big%02d" % i, {b"cf:v": big})
    count = 0
    for _key, data in table.scan(batch_size=1000):
        assert data == {b"cf:v": big}
        count += 1
    assert count == 40


def test_scan_arrow(filled: cellar.Table) -> None:
    import pyarrow as pa  # in tests/python/requirements.txt: missing is a failure

    t = filled.scan_arrow(row_prefix=b"a", columns=[b"cf"])
    assert t.schema == pa.schema(
        [
            ("row", pa.binary()),
            ("family", pa.binary()),
            ("qualifier", pa.binary()),
            ("timestamp", pa.uint64()),
            ("value", pa.binary()),
        ]
    )
    assert t.num_rows == 20  # 10 rows x 2 cells
    assert t.column("row").to_pylist()[:4] == [b"a00", b"a00", b"a01", b"a01"]
    assert t.column("family").to_pylist()[:2] == [b"cf", b"cf"]
    assert t.column("qualifier").to_pylist()[:2] == [b"v", b"w"]
    assert t.column("value").to_pylist()[:2] == [b"a00", b"w"]
    assert t.column("timestamp").to_pylist()[:4] == [T, T, T + 1, T + 1]
    empty = filled.scan_arrow(row_prefix=b"zz")
    assert empty.num_rows == 0 and empty.schema == t.schema
    assert filled.scan_arrow(limit=1, reverse=True).column("row").to_pylist() == [b"b09"] * 3


def test_scan_arrow_without_pyarrow(filled: cellar.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install 'cellar-client\[arrow\]'"):
        filled.scan_arrow()
