"""The request stream of a bulk load: a header message, then the file's bytes in chunks."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Optional, Union

from ._proto import cellar_pb2 as pb

#: A TSV file to load: a path, or a binary file object read to its end.
Source = Union[str, "os.PathLike[str]", BinaryIO]


@dataclass(frozen=True)
class LoadResult:
    """What the server loaded: data ``lines``, ``cells`` written, malformed lines skipped
    (``bad_lines``, with ``skip_bad_lines``) and ``bytes`` of data received."""

    lines: int
    cells: int
    bad_lines: int
    bytes: int


def load_requests(
    table: str,
    source: Source,
    *,
    row_key_column: Optional[str],
    timestamp_column: Optional[str],
    ignore_unknown_columns: bool,
    skip_bad_lines: bool,
    gzip: Optional[bool],
    chunk_size: int,
) -> "LoadStream":
    """The LoadRequest stream for ``source``, read lazily in ``chunk_size`` pieces (so a
    file of any size is streamed with bounded memory). The file is opened here, so a
    missing file raises ``FileNotFoundError`` before the call starts."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be > 0")
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if gzip is None:
            gzip = path.endswith(".gz")
        stream: BinaryIO = open(path, "rb")
        owned = True
    elif isinstance(source, io.TextIOBase):
        raise TypeError("the load source must be opened in binary mode ('rb'), not text mode")
    elif hasattr(source, "read"):
        stream, owned = source, False
    else:
        raise TypeError("source must be a path or a binary file object")
    header = pb.LoadHeader(
        table=table,
        row_key_column=row_key_column or "",
        timestamp_column=timestamp_column or "",
        ignore_unknown_columns=ignore_unknown_columns,
        skip_bad_lines=skip_bad_lines,
        gzip=bool(gzip),
    )
    return LoadStream(header, stream, owned, chunk_size)


class LoadStream:
    """The messages of one Load call. gRPC reports an exception raised while it pulls the
    messages only as a cancelled call, so the exception is kept in ``error`` for the caller
    to raise instead."""

    def __init__(
        self, header: pb.LoadHeader, stream: BinaryIO, owned: bool, chunk_size: int
    ) -> None:
        self._header = header
        self._stream = stream
        self._owned = owned
        self._chunk_size = chunk_size
        self.error: Optional[BaseException] = None

    def __iter__(self) -> Iterator[pb.LoadRequest]:
        try:
            yield pb.LoadRequest(header=self._header)
            while True:
                chunk = self._stream.read(self._chunk_size)
                if not chunk:
                    return
                if not isinstance(chunk, (bytes, bytearray, memoryview)):
                    raise TypeError("the load source must be opened in binary mode ('rb')")
                yield pb.LoadRequest(data=bytes(chunk))
        except BaseException as err:
            self.error = err
            raise
        finally:
            self.close()

    def close(self) -> None:
        if self._owned:
            self._stream.close()
