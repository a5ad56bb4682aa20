"""The request stream of a bulk load: a header message, then the file's bytes in chunks."""

from __future__ import annotations

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
) -> Iterator[pb.LoadRequest]:
    """The LoadRequest stream for ``source``, read lazily in ``chunk_size`` pieces (so a
    file of any size is streamed with bounded memory). The file is opened before the first
    message, so a missing file raises ``FileNotFoundError`` before the call starts."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be > 0")
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if gzip is None:
            gzip = path.endswith(".gz")
        stream: BinaryIO = open(path, "rb")
        owned = True
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
    return _messages(header, stream, owned, chunk_size)


def _messages(header: pb.LoadHeader, stream: BinaryIO, owned: bool, chunk_size: int) -> Iterator[pb.LoadRequest]:
    try:
        yield pb.LoadRequest(header=header)
        while True:
            chunk = stream.read(chunk_size)
            if not chunk:
                return
            if not isinstance(chunk, bytes):
                raise TypeError("the load source must be opened in binary mode ('rb')")
            yield pb.LoadRequest(data=chunk)
    finally:
        if owned:
            stream.close()
