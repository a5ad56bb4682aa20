"""Buffered writes: :class:`Batch` collects puts and deletes and sends them with Mutate."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple, Type

from . import _convert as cv
from ._proto import cellar_pb2 as pb

if TYPE_CHECKING:
    from .table import Table

#: Bytes of mutations a batch buffers before it sends them (like HBase's 12 MiB
#: BufferedMutator buffer); well under the server's 64 MiB request limit.
DEFAULT_MAX_BYTES = 12 << 20

# Bytes a mutation costs on the wire beyond its row, qualifier and value (tags, lengths,
# the timestamp): a rough figure, only used to decide when a batch is full.
_OVERHEAD = 24
# Columns whose parsed (family, qualifier) a batch remembers.
_COLUMN_CACHE_SIZE = 4096


class Batch:
    """Puts and deletes on one table, sent as Mutate requests.

    Made by :meth:`Table.batch`. Mutations are buffered and sent when ``batch_size``
    mutations (one per column put or deleted; a whole-row delete counts one) or
    ``max_bytes`` bytes are buffered, on :meth:`send`, and when a ``with`` block ends.
    Each Mutate is applied atomically by the server. As in happybase, the ``with`` block
    sends what is buffered even when it raises, unless ``transaction=True``: then an
    exception discards the buffer, and everything is sent at the end as one atomic Mutate
    (so ``transaction`` cannot be combined with ``batch_size``).

    ``timestamp`` (nanoseconds since the epoch) is given to every put that does not name
    one. Deletes are not stamped by it: a delete removes every version of what it names,
    or, given its own ``timestamp``, exactly that version (Cellar deletes versions by
    exact timestamp, not "this one and older" as HBase does). ``durability``
    (``'buffered'``, ``'flush'``, ``'sync'`` or ``None`` for the server's default) applies
    to every Mutate the batch sends.
    """

    def __init__(
        self,
        table: "Table",
        timestamp: Optional[int] = None,
        batch_size: Optional[int] = None,
        transaction: bool = False,
        durability: Optional[cv.DurabilityName] = None,
        max_bytes: Optional[int] = DEFAULT_MAX_BYTES,
    ) -> None:
        if batch_size is not None:
            if transaction:
                raise TypeError("'transaction' cannot be used when 'batch_size' is specified")
            if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
                raise ValueError("'batch_size' must be an int > 0")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError("'max_bytes' must be > 0 (or None)")
        self._table = table
        self._timestamp = cv.put_timestamp(timestamp)
        self._batch_size = batch_size
        self._transaction = transaction
        self._durability = cv.durability(durability)
        # A transaction is one Mutate, so it is never cut by size.
        self._max_bytes = None if transaction else max_bytes
        # Mutations are added to the request message in place: building each Put apart and
        # copying it in costs about three times as much CPU as the whole send.
        self._request = self._new_request()
        self._count = 0
        self._bytes = 0
        self._columns: Dict[cv.BytesLike, Tuple[str, bytes]] = {}
        #: Timestamps the server gave the puts of every Mutate sent so far, in order.
        self.put_timestamps: List[int] = []

    def put(self, row: cv.BytesLike, data: cv.ColumnData, timestamp: Optional[int] = None) -> None:
        """Buffers a put of ``data`` (``{b"family:qualifier": value}``) into ``row``; see
        :meth:`Table.put`."""
        key = cv.to_bytes(row, "row")
        ts = cv.put_timestamp(timestamp) if timestamp is not None else self._timestamp
        # Every cell is converted before any is buffered: a bad one buffers nothing of the put.
        cells = [
            (self._column(column), value if type(value) is bytes else cv.to_bytes(value, "a value"))
            for column, value in data.items()
        ]
        add = self._request.mutations.add
        size = 0
        for (family, qualifier), value in cells:
            put = add().put
            put.row = key
            put.family = family
            put.qualifier = qualifier
            put.value = value
            if ts is not None:
                put.timestamp = ts
            size += len(key) + len(family) + len(qualifier) + len(value) + _OVERHEAD
        self._added(len(cells), size)

    def _column(self, column: cv.BytesLike) -> Tuple[str, bytes]:
        """``cv.put_column``, remembered: a batch writes the same few columns many times."""
        if not isinstance(column, (bytes, str)):  # e.g. a bytearray: not hashable
            return cv.put_column(column)
        found = self._columns.get(column)
        if found is None:
            found = cv.put_column(column)
            if len(self._columns) < _COLUMN_CACHE_SIZE:
                self._columns[column] = found
        return found

    def delete(
        self,
        row: cv.BytesLike,
        columns: Optional[Iterable[cv.BytesLike]] = None,
        timestamp: Optional[int] = None,
    ) -> None:
        """Buffers a delete of ``row`` (every cell), or of ``columns`` of it (``b"f"``: the
        whole family, ``b"f:q"``: every version of one column); see :meth:`Table.delete`.
        The batch's ``timestamp`` does not apply to deletes."""
        ts = cv.put_timestamp(timestamp)
        deletes = self._table._deletes(cv.to_bytes(row, "row"), columns, ts)
        size = 0
        for d in deletes:
            self._request.mutations.add().delete.CopyFrom(d)
            size += len(d.row) + len(d.family) + len(d.qualifier) + _OVERHEAD
        self._added(len(deletes), size)

    def _added(self, count: int, size: int) -> None:
        self._count += count
        self._bytes += size
        if self._batch_size is not None and self._count >= self._batch_size:
            self.send()
        elif self._max_bytes is not None and self._bytes >= self._max_bytes:
            self.send()

    def send(self) -> None:
        """Sends the buffered mutations as one Mutate (nothing when the buffer is empty)."""
        if not self._request.mutations:
            return
        request = self._request
        self._discard()
        reply = self._table._send_mutate(request)
        self.put_timestamps.extend(reply.put_timestamps)

    def _new_request(self) -> pb.MutateRequest:
        return pb.MutateRequest(table=self._table.name, durability=self._durability)

    def _discard(self) -> None:
        self._request, self._count, self._bytes = self._new_request(), 0, 0

    def __len__(self) -> int:
        """Mutations buffered and not yet sent."""
        return self._count

    def __enter__(self) -> "Batch":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._transaction and exc_type is not None:
            self._discard()
            return
        self.send()
