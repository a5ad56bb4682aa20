"""Conversions between the happybase-style Python values and the protocol's messages."""

from __future__ import annotations

from typing import Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from ._proto import cellar_pb2 as pb

#: A row key, qualifier, value or ``b"family:qualifier"`` column; ``str`` is taken as UTF-8.
BytesLike = Union[bytes, str]
#: The cells of a put: ``{b"family:qualifier": value}`` (a Mapping's key type is invariant,
#: hence one alternative per key type).
ColumnData = Union[
    Mapping[bytes, BytesLike], Mapping[str, BytesLike], Mapping[BytesLike, BytesLike]
]
#: A durability mode of a write; ``None`` is the server's default (``cellar serve --durability``).
DurabilityName = Literal["buffered", "flush", "sync"]
#: ``(min, max)`` in nanoseconds since the epoch: ``min`` inclusive, ``max`` exclusive.
TimeRange = Tuple[int, int]
#: What a cell reads as: its value, or ``(value, timestamp)`` with ``include_timestamp``.
Cell = Union[bytes, Tuple[bytes, int]]
#: A row as a dict from ``b"family:qualifier"`` to a :data:`Cell` (or, when ``versions``
#: is given, to a list of them, newest first).
RowData = Dict[bytes, Union[Cell, List[Cell]]]

_U64_MAX = (1 << 64) - 1

_DURABILITY: Dict[Optional[str], "pb.Durability"] = {
    None: pb.DURABILITY_DEFAULT,
    "buffered": pb.DURABILITY_BUFFERED,
    "flush": pb.DURABILITY_FLUSH,
    "sync": pb.DURABILITY_SYNC,
}

_COMPRESSION: Dict[Optional[str], "pb.Compression"] = {
    None: pb.COMPRESSION_DEFAULT,
    "none": pb.COMPRESSION_NONE,
    "lz4": pb.COMPRESSION_LZ4,
    "zstd": pb.COMPRESSION_ZSTD,
}


def to_bytes(value: BytesLike, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"{what} must be bytes or str, not {type(value).__name__}")


def to_name(value: BytesLike, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{what} {value!r} is not UTF-8") from None
    raise TypeError(f"{what} must be str or bytes, not {type(value).__name__}")


def durability(name: Optional[str]) -> "pb.Durability":
    """The protocol's durability for ``'buffered'``, ``'flush'``, ``'sync'`` or ``None``."""
    key = name.lower() if isinstance(name, str) else name
    if key not in _DURABILITY:
        raise ValueError(f"durability must be 'buffered', 'flush', 'sync' or None, not {name!r}")
    return _DURABILITY[key]


def compression(name: Optional[str]) -> "pb.Compression":
    key = name.lower() if isinstance(name, str) else name
    if key not in _COMPRESSION:
        raise ValueError(f"compression must be 'none', 'lz4', 'zstd' or None, not {name!r}")
    return _COMPRESSION[key]


def compression_name(value: int) -> Optional[str]:
    for name, code in _COMPRESSION.items():
        if code == value:
            return name
    return None


def split_column(column: BytesLike) -> Tuple[str, Optional[bytes]]:
    """``b"f:q"`` -> ``("f", b"q")``; ``b"f"`` -> ``("f", None)``; ``b"f:"`` -> ``("f", b"")``.

    The family is cut at the first ``:``; the qualifier may itself hold ``:``.
    """
    raw = to_bytes(column, "a column")
    family, sep, qualifier = raw.partition(b":")
    if not family:
        raise ValueError(f"column {raw!r} has no family (write b'family:qualifier')")
    return to_name(family, "a family name"), (qualifier if sep else None)


def put_column(column: BytesLike) -> Tuple[str, bytes]:
    """The family and qualifier a put writes: ``b"f"`` and ``b"f:"`` are the empty qualifier."""
    family, qualifier = split_column(column)
    return family, qualifier if qualifier is not None else b""


def read_columns(columns: Optional[Iterable[BytesLike]]) -> List[pb.Column]:
    """Columns of a read: ``b"f"`` or ``b"f:"`` is the whole family, ``b"f:q"`` one column."""
    if columns is None:
        return []
    if isinstance(columns, (bytes, str)):
        raise TypeError("columns must be a list or tuple of columns, not one column")
    out = []
    for column in columns:
        family, qualifier = split_column(column)
        if qualifier:
            out.append(pb.Column(family=family, qualifier=qualifier))
        else:
            out.append(pb.Column(family=family))
    return out


def column_key(family: str, qualifier: bytes) -> bytes:
    return family.encode("utf-8") + b":" + qualifier


def _check_timestamp(ts: int, what: str) -> int:
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise TypeError(f"{what} must be an int (nanoseconds since the epoch)")
    if ts < 0 or ts > _U64_MAX:
        raise ValueError(f"{what} {ts} is outside 0..2**64-1 nanoseconds")
    return ts


def put_timestamp(ts: Optional[int]) -> Optional[int]:
    return None if ts is None else _check_timestamp(ts, "timestamp")


def time_range(timestamp: Optional[int], window: Optional[TimeRange]) -> Optional[pb.TimeRange]:
    """The range a read selects: ``timestamp`` is an exclusive upper bound (as in
    happybase), ``window`` a ``(min, max)`` pair; given both, their intersection.

    Returns ``None`` when nothing limits the range, and raises ``ValueError`` for an empty
    range (nothing could match), which the protocol cannot say (``max = 0`` is unbounded).
    """
    low, high = 0, 0
    if window is not None:
        if not isinstance(window, (tuple, list)) or len(window) != 2:
            raise TypeError("time_range must be a (min, max) pair of nanosecond timestamps")
        low = _check_timestamp(window[0], "time_range min")
        high = _check_timestamp(window[1], "time_range max")
        if high <= low:
            raise ValueError(f"time_range {tuple(window)} is empty: max must be above min")
    if timestamp is not None:
        ts = _check_timestamp(timestamp, "timestamp")
        if ts == 0:
            raise ValueError("timestamp 0 selects nothing: it is an exclusive upper bound")
        high = ts if high == 0 else min(high, ts)
        if high <= low:
            raise ValueError(f"timestamp {ts} is at or below the time_range min {low}")
    if low == 0 and high == 0:
        return None
    return pb.TimeRange(min=low, max=high)


def versions_arg(versions: Optional[int]) -> int:
    if versions is None:
        return 1
    if isinstance(versions, bool) or not isinstance(versions, int):
        raise TypeError("versions must be an int or None")
    if versions < 1 or versions > 0xFFFFFFFF:
        raise ValueError(f"versions must be at least 1 (or None), not {versions}")
    return versions


def row_dict(row: pb.Row, include_timestamp: bool, versions: Optional[int]) -> RowData:
    """A row as happybase shows it: one value per column (the newest), or with
    ``versions`` a list of values per column, newest first."""
    out: RowData = {}
    for cell in row.cells:
        key = column_key(cell.family, cell.qualifier)
        item: Cell = (cell.value, cell.timestamp) if include_timestamp else cell.value
        if versions is None:
            # Cells come newest first: keep the first version of each column.
            if key not in out:
                out[key] = item
        else:
            existing = out.setdefault(key, [])
            assert isinstance(existing, list)
            existing.append(item)
    return out


def rows_list(rows: Sequence[BytesLike]) -> List[bytes]:
    if isinstance(rows, (bytes, str)):
        raise TypeError("rows must be a list or tuple of row keys, not one row key")
    return [to_bytes(r, "a row key") for r in rows]
