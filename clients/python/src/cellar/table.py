"""A table of a Cellar server: reads, writes, scans, counters, bulk loads."""

from __future__ import annotations

import struct
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Generator,
    Iterable,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _convert as cv
from ._load import LoadResult, Source, load_requests
from ._proto import cellar_pb2 as pb
from .batch import DEFAULT_MAX_BYTES, Batch
from .errors import Error

if TYPE_CHECKING:
    import pyarrow

    from .connection import Connection

_I64 = struct.Struct(">q")
_U64_MAX = (1 << 64) - 1


class Table:
    """One table; made by :meth:`Connection.table`.

    Row keys, qualifiers and values are bytes (``str`` is accepted and encoded as UTF-8);
    columns are written ``b"family:qualifier"`` as in happybase, and rows come back as dicts
    from such columns to values. Timestamps are Cellar's: **nanoseconds** since the Unix
    epoch (not HBase's milliseconds). A read's ``timestamp`` is an exclusive upper bound
    (cells older than it), ``time_range=(min, max)`` selects ``min <= ts < max``.
    """

    def __init__(self, name: str, connection: "Connection") -> None:
        self.name = name
        self.connection = connection

    def __repr__(self) -> str:
        return f"<cellar.Table {self.name!r}>"

    # -- schema ---------------------------------------------------------------------------

    def families(self) -> Dict[str, Dict[str, Any]]:
        """The families in schema order, each with its ``max_versions`` (0: every version),
        ``time_to_live`` (seconds, 0: forever), ``compression`` (``None``: the database's
        default) and ``bloom_filter`` (bool)."""
        schema = self.connection._call("DescribeTable", pb.DescribeTableRequest(table=self.name))
        return {
            f.name: {
                "max_versions": f.max_versions,
                "time_to_live": f.ttl_seconds,
                "compression": cv.compression_name(f.compression),
                "bloom_filter": not f.no_bloom_filter,
            }
            for f in schema.families
        }

    def split_points(self, parts: int) -> List[bytes]:
        """Row keys, ascending, that cut the table into about ``parts`` pieces of similar
        size (at most ``parts - 1`` keys), e.g. for parallel scans from ``row_start=k[i]``
        to ``row_stop=k[i+1]``."""
        if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= 0xFFFFFFFF:
            raise ValueError(f"parts must be an int >= 1, not {parts!r}")
        reply = self.connection._call(
            "SplitPoints", pb.SplitPointsRequest(table=self.name, parts=parts)
        )
        return list(reply.rows)

    # -- reads ----------------------------------------------------------------------------

    def row(
        self,
        row: cv.BytesLike,
        columns: Optional[Sequence[cv.BytesLike]] = None,
        timestamp: Optional[int] = None,
        include_timestamp: bool = False,
        time_range: Optional[cv.TimeRange] = None,
        versions: Optional[int] = None,
    ) -> cv.RowData:
        """One row as ``{b"family:qualifier": value}`` (``{}`` when it has no cell).

        ``columns``: only these (``b"f"`` or ``b"f:"`` is a whole family, ``b"f:q"`` one
        column). ``timestamp``: only cells with a timestamp below it (nanoseconds,
        exclusive). ``time_range=(min, max)``: only cells with ``min <= ts < max``.
        ``include_timestamp``: values become ``(value, timestamp)`` tuples. ``versions``:
        each column maps to a list of up to that many versions, newest first (never more
        than the family's ``max_versions``); without it, to its newest value.
        """
        request = pb.GetRequest(
            table=self.name,
            row=cv.to_bytes(row, "row"),
            columns=cv.read_columns(columns),
            max_versions=cv.versions_arg(versions),
        )
        _set_range(request, timestamp, time_range)
        reply = self.connection._call("Get", request)
        if not reply.HasField("row"):
            return {}
        return cv.row_dict(reply.row, include_timestamp, versions)

    def rows(
        self,
        rows: Sequence[cv.BytesLike],
        columns: Optional[Sequence[cv.BytesLike]] = None,
        timestamp: Optional[int] = None,
        include_timestamp: bool = False,
        time_range: Optional[cv.TimeRange] = None,
        versions: Optional[int] = None,
    ) -> List[Tuple[bytes, cv.RowData]]:
        """Several rows as ``[(row_key, row_dict)]`` in the order asked, leaving out rows
        with no cell; the other arguments are those of :meth:`row`."""
        keys = cv.rows_list(rows)
        if not keys:
            return []
        request = pb.MultiGetRequest(
            table=self.name,
            rows=keys,
            columns=cv.read_columns(columns),
            max_versions=cv.versions_arg(versions),
        )
        _set_range(request, timestamp, time_range)
        reply = self.connection._call("MultiGet", request)
        return [(r.row, cv.row_dict(r, include_timestamp, versions)) for r in reply.rows]

    def cells(
        self,
        row: cv.BytesLike,
        column: cv.BytesLike,
        versions: Optional[int] = None,
        timestamp: Optional[int] = None,
        include_timestamp: bool = False,
        time_range: Optional[cv.TimeRange] = None,
    ) -> List[cv.Cell]:
        """The versions of one cell ``b"family:qualifier"``, newest first: at most
        ``versions`` of them (default: as many as the family keeps), as values or, with
        ``include_timestamp``, ``(value, timestamp)`` tuples (timestamps in nanoseconds).
        ``timestamp`` and ``time_range`` are those of :meth:`row`."""
        family, qualifier = cv.put_column(column)
        request = pb.GetRequest(
            table=self.name,
            row=cv.to_bytes(row, "row"),
            columns=[pb.Column(family=family, qualifier=qualifier)],
            max_versions=0 if versions is None else cv.versions_arg(versions),
        )
        _set_range(request, timestamp, time_range)
        reply = self.connection._call("Get", request)
        if not reply.HasField("row"):
            return []
        return [
            (c.value, c.timestamp) if include_timestamp else c.value
            for c in reply.row.cells
            if c.family == family and c.qualifier == qualifier
        ]

    def scan(
        self,
        row_start: Optional[cv.BytesLike] = None,
        row_stop: Optional[cv.BytesLike] = None,
        row_prefix: Optional[cv.BytesLike] = None,
        columns: Optional[Sequence[cv.BytesLike]] = None,
        filter: Optional[str] = None,
        timestamp: Optional[int] = None,
        time_range: Optional[cv.TimeRange] = None,
        include_timestamp: bool = False,
        batch_size: int = 1000,
        limit: Optional[int] = None,
        reverse: bool = False,
        versions: Optional[int] = None,
    ) -> Generator[Tuple[bytes, cv.RowData], None, None]:
        """Yields ``(row_key, row_dict)`` for the rows in ``[row_start, row_stop)``,
        ascending (or descending with ``reverse``; then ``row_start`` is the upper end,
        inclusive, and ``row_stop`` the lower end, exclusive, as in HBase).

        ``row_prefix``: only rows starting with it (may be combined with start/stop).
        ``filter``: HBase's filter language, e.g. ``"PrefixFilter('a') AND
        KeyOnlyFilter()"``. ``limit``: at most this many rows. ``batch_size``: rows per
        streamed message (the server may send fewer, to bound a message's bytes).
        ``columns``, ``timestamp``, ``time_range``, ``include_timestamp`` and ``versions``
        are those of :meth:`row`. Leaving the loop early cancels the scan on the server.
        """
        request = self._scan_request(
            row_start,
            row_stop,
            row_prefix,
            columns,
            filter,
            timestamp,
            time_range,
            batch_size,
            limit,
            reverse,
            versions,
        )
        messages = self.connection._stream("Scan", request)
        try:
            for message in messages:
                for r in message.rows:
                    yield r.row, cv.row_dict(r, include_timestamp, versions)
        finally:
            messages.close()  # cancels the call when the caller stopped early

    def scan_arrow(
        self,
        row_start: Optional[cv.BytesLike] = None,
        row_stop: Optional[cv.BytesLike] = None,
        row_prefix: Optional[cv.BytesLike] = None,
        columns: Optional[Sequence[cv.BytesLike]] = None,
        filter: Optional[str] = None,
        timestamp: Optional[int] = None,
        time_range: Optional[cv.TimeRange] = None,
        batch_size: int = 1000,
        limit: Optional[int] = None,
        reverse: bool = False,
        versions: Optional[int] = None,
    ) -> "pyarrow.Table":
        """The cells a :meth:`scan` with these arguments reads, as a ``pyarrow.Table`` with
        one line per cell (every version ``versions`` selects) and the columns ``row``,
        ``family``, ``qualifier``, ``value`` (binary) and ``timestamp`` (uint64, nanoseconds
        since the epoch), in scan order. Needs pyarrow (``pip install
        'cellar-client[arrow]'``)."""
        from ._arrow import cells_table

        request = self._scan_request(
            row_start,
            row_stop,
            row_prefix,
            columns,
            filter,
            timestamp,
            time_range,
            batch_size,
            limit,
            reverse,
            versions,
        )
        return cells_table(self.connection._stream("Scan", request))

    def _scan_request(
        self,
        row_start: Optional[cv.BytesLike],
        row_stop: Optional[cv.BytesLike],
        row_prefix: Optional[cv.BytesLike],
        columns: Optional[Sequence[cv.BytesLike]],
        filter: Optional[str],
        timestamp: Optional[int],
        time_range: Optional[cv.TimeRange],
        batch_size: int,
        limit: Optional[int],
        reverse: bool,
        versions: Optional[int],
    ) -> pb.ScanRequest:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("'batch_size' must be an int >= 1")
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ValueError("'limit' must be an int >= 1 (or None)")
        if filter is not None and not isinstance(filter, str):
            raise TypeError("'filter' must be a str")
        request = pb.ScanRequest(
            table=self.name,
            start_row=b"" if row_start is None else cv.to_bytes(row_start, "row_start"),
            stop_row=b"" if row_stop is None else cv.to_bytes(row_stop, "row_stop"),
            prefix=b"" if row_prefix is None else cv.to_bytes(row_prefix, "row_prefix"),
            columns=cv.read_columns(columns),
            max_versions=cv.versions_arg(versions),
            limit=limit or 0,
            reverse=bool(reverse),
            filter=filter or "",
            batch_rows=min(batch_size, 0xFFFFFFFF),
        )
        _set_range(request, timestamp, time_range)
        return request

    # -- writes ---------------------------------------------------------------------------

    def put(
        self,
        row: cv.BytesLike,
        data: cv.ColumnData,
        timestamp: Optional[int] = None,
        durability: Optional[cv.DurabilityName] = None,
    ) -> None:
        """Writes ``data`` (``{b"family:qualifier": value}``; ``b"family"`` is the empty
        qualifier) into ``row``, atomically. ``timestamp``: the cells' timestamp in
        nanoseconds since the epoch (default: the server's clock, strictly increasing).
        ``durability``: ``'buffered'``, ``'flush'``, ``'sync'`` or ``None`` (the server's
        default)."""
        with self.batch(timestamp=timestamp, durability=durability, max_bytes=None) as b:
            b.put(row, data)

    def delete(
        self,
        row: cv.BytesLike,
        columns: Optional[Sequence[cv.BytesLike]] = None,
        timestamp: Optional[int] = None,
        durability: Optional[cv.DurabilityName] = None,
    ) -> None:
        """Deletes ``row`` (every cell), or ``columns`` of it (``b"f"``/``b"f:"``: the whole
        family, ``b"f:q"``: every version of one column), atomically.

        With ``timestamp`` (nanoseconds) only the versions with exactly that timestamp are
        deleted, so an older version becomes visible again. A delete removes the versions
        that exist when it is applied: cells written later are visible whatever their
        timestamps (Cellar's rule; HBase's delete markers also hide later writes of older
        timestamps)."""
        with self.batch(durability=durability, max_bytes=None) as b:
            b.delete(row, columns, timestamp)

    def batch(
        self,
        timestamp: Optional[int] = None,
        batch_size: Optional[int] = None,
        transaction: bool = False,
        durability: Optional[cv.DurabilityName] = None,
        max_bytes: Optional[int] = DEFAULT_MAX_BYTES,
    ) -> Batch:
        """A :class:`Batch` of puts and deletes, sent when ``batch_size`` mutations or
        ``max_bytes`` bytes are buffered and when its ``with`` block ends (see
        :class:`Batch`), each send with ``durability``."""
        return Batch(self, timestamp, batch_size, transaction, durability, max_bytes)

    def _send_mutate(self, request: pb.MutateRequest) -> pb.MutateResponse:
        reply: pb.MutateResponse = self.connection._call("Mutate", request)
        return reply

    def _deletes(
        self, row: bytes, columns: Optional[Iterable[cv.BytesLike]], timestamp: Optional[int]
    ) -> List[pb.Delete]:
        """The Delete messages for a delete of ``columns`` of ``row``.

        The protocol deletes one version only of a named column; for a whole row or family
        with ``timestamp`` the row is read first (cells at exactly that timestamp) to name
        the columns.
        """
        if columns is not None and isinstance(columns, (bytes, str)):
            raise TypeError("columns must be a list or tuple of columns, not one column")
        targets: List[Tuple[str, Optional[bytes]]] = (
            [("", None)] if columns is None else [_delete_target(c) for c in columns]
        )
        if timestamp is None:
            return [_delete(row, family, qualifier, None) for family, qualifier in targets]
        out: List[pb.Delete] = []
        wide = [pb.Column(family=f) for f, q in targets if q is None and f]
        whole_row = any(not f for f, _ in targets)
        if whole_row or wide:
            out.extend(self._deletes_at(row, [] if whole_row else wide, timestamp))
        out.extend(_delete(row, f, q, timestamp) for f, q in targets if q is not None)
        return out

    def _deletes_at(self, row: bytes, columns: List[pb.Column], timestamp: int) -> List[pb.Delete]:
        upper = timestamp + 1 if timestamp < _U64_MAX else 0
        request = pb.GetRequest(
            table=self.name,
            row=row,
            columns=columns,
            time_range=pb.TimeRange(min=timestamp, max=upper),
        )
        reply = self.connection._call("Get", request)
        if not reply.HasField("row"):
            return []
        return [_delete(row, c.family, c.qualifier, timestamp) for c in reply.row.cells]

    # -- counters -------------------------------------------------------------------------

    def counter_inc(
        self,
        row: cv.BytesLike,
        column: cv.BytesLike,
        value: int = 1,
        durability: Optional[cv.DurabilityName] = None,
    ) -> int:
        """Adds ``value`` to the counter in ``column`` of ``row`` atomically (a missing
        counter counts from 0) and returns the new value. Counters are 8-byte big-endian
        signed integers, as in HBase."""
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not -(1 << 63) <= value < (1 << 63)
        ):
            raise ValueError(f"value must be a 64-bit int, not {value!r}")
        family, qualifier = cv.put_column(column)
        request = pb.IncrementRequest(
            table=self.name,
            row=cv.to_bytes(row, "row"),
            family=family,
            qualifier=qualifier,
            amount=value,
            durability=cv.durability(durability),
        )
        return int(self.connection._call("Increment", request).value)

    def counter_dec(
        self,
        row: cv.BytesLike,
        column: cv.BytesLike,
        value: int = 1,
        durability: Optional[cv.DurabilityName] = None,
    ) -> int:
        """Subtracts ``value`` from the counter atomically; returns the new value."""
        return self.counter_inc(row, column, -value, durability)

    def counter_get(self, row: cv.BytesLike, column: cv.BytesLike) -> int:
        """The counter's value, 0 when the cell does not exist. Raises ``ValueError`` when
        the cell is not an 8-byte counter."""
        values = self.cells(row, column, versions=1)
        if not values:
            return 0
        raw = values[0]
        assert isinstance(raw, bytes)
        if len(raw) != 8:
            raise ValueError(f"{column!r} of {row!r} holds {len(raw)} bytes, not an 8-byte counter")
        return int(_I64.unpack(raw)[0])

    def counter_set(
        self,
        row: cv.BytesLike,
        column: cv.BytesLike,
        value: int = 0,
        durability: Optional[cv.DurabilityName] = None,
    ) -> None:
        """Sets the counter to ``value`` (a put of 8 big-endian bytes)."""
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not -(1 << 63) <= value < (1 << 63)
        ):
            raise ValueError(f"value must be a 64-bit int, not {value!r}")
        self.put(row, {column: _I64.pack(value)}, durability=durability)

    # -- bulk load ------------------------------------------------------------------------

    def load(
        self,
        source: Source,
        *,
        row_key_column: Optional[str] = None,
        timestamp_column: Optional[str] = None,
        ignore_unknown_columns: bool = False,
        skip_bad_lines: bool = False,
        gzip: Optional[bool] = None,
        chunk_size: int = 1 << 20,
    ) -> LoadResult:
        """Bulk-loads a TSV file into the table through the Load RPC, like ``cellar load``:
        all of it becomes visible at once, or (on a malformed line, unless
        ``skip_bad_lines``) none of it, and :class:`cellar.InvalidArgument` names the line.

        ``source`` is a path or a binary file object. Its first line names the columns
        (``row``, then ``family`` or ``family:qualifier`` names; or the cell shape
        ``#row<TAB>column<TAB>value`` / ``#timestamp<TAB>row<TAB>column<TAB>value``, see
        docs/hql.md section 6). ``row_key_column`` names the row key's column (default: the
        first); ``timestamp_column`` a column holding every cell's timestamp (nanoseconds or
        ``YYYY-MM-DD HH:MM:SS`` UTC). ``gzip``: the data is gzip-compressed (default: when
        the path ends in ``.gz``); it is sent compressed and unpacked by the server.
        """
        requests = load_requests(
            self.name,
            source,
            row_key_column=row_key_column,
            timestamp_column=timestamp_column,
            ignore_unknown_columns=ignore_unknown_columns,
            skip_bad_lines=skip_bad_lines,
            gzip=gzip,
            chunk_size=chunk_size,
        )
        try:
            reply = self.connection._client_stream("Load", iter(requests))
        except Error:
            if requests.error is not None:
                # Reading the file failed: that, not the cancelled call, is the news.
                raise requests.error from None
            raise
        finally:
            requests.close()
        return LoadResult(
            lines=reply.lines, cells=reply.cells, bad_lines=reply.bad_lines, bytes=reply.bytes
        )


def _set_range(
    request: Union[pb.GetRequest, pb.MultiGetRequest, pb.ScanRequest],
    timestamp: Optional[int],
    time_range: Optional[cv.TimeRange],
) -> None:
    window = cv.time_range(timestamp, time_range)
    if window is not None:
        request.time_range.CopyFrom(window)


def _delete_target(column: cv.BytesLike) -> Tuple[str, Optional[bytes]]:
    family, qualifier = cv.split_column(column)
    return family, (qualifier if qualifier else None)


def _delete(
    row: bytes, family: str, qualifier: Optional[bytes], timestamp: Optional[int]
) -> pb.Delete:
    d = pb.Delete(row=row, family=family)
    if qualifier is not None:
        d.qualifier = qualifier
    if timestamp is not None:
        d.timestamp = timestamp
    return d
