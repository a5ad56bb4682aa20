"""Python client for Cellar's gRPC API (``cellar serve``), with a happybase-like interface.

    import cellar

    with cellar.Connection("127.0.0.1", 50051) as conn:
        conn.create_table("t", {"cf": {"max_versions": 3}})
        table = conn.table("t")
        table.put(b"row1", {b"cf:a": b"1"}, durability="sync")
        print(table.row(b"row1"))            # {b'cf:a': b'1'}
        for key, data in table.scan(row_prefix=b"row"):
            ...

Timestamps are nanoseconds since the Unix epoch.
"""

from ._convert import BytesLike, Cell, ColumnData, DurabilityName, RowData, TimeRange
from ._load import LoadResult
from .batch import Batch
from .connection import Connection
from .errors import (
    AlreadyExists,
    DeadlineExceeded,
    Error,
    FailedPrecondition,
    HqlError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from .table import Table

__version__ = "0.1.0"

__all__ = [
    "AlreadyExists",
    "Batch",
    "BytesLike",
    "Cell",
    "ColumnData",
    "Connection",
    "DeadlineExceeded",
    "DurabilityName",
    "Error",
    "FailedPrecondition",
    "HqlError",
    "InvalidArgument",
    "LoadResult",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "RowData",
    "Table",
    "TimeRange",
    "Unauthenticated",
    "Unavailable",
]
