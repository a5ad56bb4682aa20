"""table.load: a TSV streamed through the Load RPC, loaded atomically."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

import cellar

WIDE = "row\tcf:a\tcf:b\tother\nr1\t1\t2\tx\nr2\t3\t\ty\nr3\t5\n"


def test_load_wide_tsv(table: cellar.Table, tmp_path: Path) -> None:
    path = tmp_path / "data.tsv"
    path.write_text(WIDE)
    result = table.load(path)
    # each non-empty field is one cell; short lines have empty trailing fields
    assert (result.lines, result.cells, result.bad_lines) == (3, 6, 0)
    assert list(table.scan()) == [
        (b"r1", {b"cf:a": b"1", b"cf:b": b"2", b"other:": b"x"}),
        (b"r2", {b"cf:a": b"3", b"other:": b"y"}),
        (b"r3", {b"cf:a": b"5"}),
    ]


def test_load_gzip_and_file_objects(table: cellar.Table, tmp_path: Path) -> None:
    path = tmp_path / "data.tsv.gz"
    with gzip.open(path, "wt") as f:
        f.write(WIDE)
    assert table.load(path, chunk_size=7).cells == 6
    raw = io.BytesIO(b"#row\tcolumn\tvalue\nz1\tcf:q\tv1\nz2\tother\tv2\n")
    assert table.load(raw).cells == 2
    assert table.row(b"z1") == {b"cf:q": b"v1"}
    assert table.row(b"z2") == {b"other:": b"v2"}
    assert table.row(b"r1")[b"cf:a"] == b"1"


def test_load_with_timestamps_and_options(table: cellar.Table, tmp_path: Path) -> None:
    path = tmp_path / "ts.tsv"
    path.write_text("cf:a\tkey\tts\tjunk\nv1\tk1\t1000\tj\nv2\tk2\t2000\tj\n")
    result = table.load(
        path, row_key_column="key", timestamp_column="ts", ignore_unknown_columns=True
    )
    assert result.cells == 2
    assert table.row(b"k1", include_timestamp=True) == {b"cf:a": (b"v1", 1000)}
    assert table.row(b"k2", include_timestamp=True) == {b"cf:a": (b"v2", 2000)}


def test_malformed_load_is_atomic(table: cellar.Table, tmp_path: Path) -> None:
    path = tmp_path / "bad.tsv"
    good = "".join(f"r{i:03d}\tv{i}\n" for i in range(100))
    path.write_text("row\tcf:a\n" + good + "bad\tline\twith too many fields\n" + good)
    with pytest.raises(cellar.InvalidArgument, match="102"):  # the bad line's number
        table.load(path)
    assert list(table.scan()) == []  # nothing of it is visible
    result = table.load(path, skip_bad_lines=True)
    assert (result.bad_lines, result.cells) == (1, 200)
    assert len(list(table.scan())) == 100


def test_unknown_column_fails_before_loading(table: cellar.Table, tmp_path: Path) -> None:
    path = tmp_path / "cols.tsv"
    path.write_text("row\tnofamily:a\nr1\tv\n")
    with pytest.raises(cellar.Error, match="nofamily"):
        table.load(path)
    assert table.row(b"r1") == {}


def test_load_into_unknown_table(conn: cellar.Connection, tmp_path: Path) -> None:
    path = tmp_path / "d.tsv"
    path.write_text(WIDE)
    with pytest.raises(cellar.NotFound):
        conn.table("no_such_table").load(path)


def test_missing_file(table: cellar.Table, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        table.load(tmp_path / "absent.tsv")


def test_text_mode_source_is_refused(table: cellar.Table) -> None:
    with pytest.raises(TypeError, match="binary mode"):
        table.load(io.StringIO(WIDE))  # type: ignore[arg-type]


class FailingReader(io.RawIOBase):
    """Gives the header and one line, then fails as a broken disk would."""

    def __init__(self) -> None:
        self.calls = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        self.calls += 1
        if self.calls == 1:
            return b"row\tcf:a\nr1\tv\n"
        raise OSError("disk on fire")


def test_a_read_error_is_raised_and_nothing_is_loaded(table: cellar.Table) -> None:
    with pytest.raises(OSError, match="disk on fire"):
        table.load(FailingReader())  # type: ignore[arg-type]
    assert table.row(b"r1") == {}
