"""Scan results as a ``pyarrow.Table`` (only imported when pyarrow is wanted)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, List

if TYPE_CHECKING:
    import pyarrow

    from ._proto import cellar_pb2 as pb


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError as err:
        raise ImportError(
            "Table.scan_arrow needs pyarrow, which is not installed: "
            "pip install 'cellar-client[arrow]' (or pip install pyarrow)"
        ) from err
    return pyarrow


def cells_table(messages: Iterable["pb.ScanResponse"]) -> "pyarrow.Table":
    """One line per cell of the streamed rows, in the order they came."""
    pa = _pyarrow()
    rows: List[bytes] = []
    families: List[bytes] = []
    qualifiers: List[bytes] = []
    timestamps: List[int] = []
    values: List[bytes] = []
    for message in messages:
        for row in message.rows:
            key = row.row
            for cell in row.cells:
                rows.append(key)
                families.append(cell.family.encode("utf-8"))
                qualifiers.append(cell.qualifier)
                timestamps.append(cell.timestamp)
                values.append(cell.value)
    schema = pa.schema(
        [
            ("row", pa.binary()),
            ("family", pa.binary()),
            ("qualifier", pa.binary()),
            ("timestamp", pa.uint64()),
            ("value", pa.binary()),
        ]
    )
    return pa.table(
        [
            pa.array(rows, pa.binary()),
            pa.array(families, pa.binary()),
            pa.array(qualifiers, pa.binary()),
            pa.array(timestamps, pa.uint64()),
            pa.array(values, pa.binary()),
        ],
        schema=schema,
    )
