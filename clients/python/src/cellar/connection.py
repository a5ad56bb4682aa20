"""The connection to a Cellar server: one gRPC channel, table admin and HQL."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Generator, Iterator, List, Mapping, Optional, Tuple, Type

import grpc

from . import _convert as cv
from ._proto import cellar_pb2 as pb
from ._proto import cellar_pb2_grpc as pb_grpc
from .errors import Error, from_rpc_error, hql_error
from .table import Table

#: Largest message the client accepts: a scan message holds whole rows, and one row may be
#: larger than gRPC's default 4 MiB (a value may be up to 64 MiB).
MAX_MESSAGE_BYTES = 256 << 20

# happybase family options that tune HBase internals Cellar does not have; accepted (so
# that happybase programs run unchanged) and ignored.
_IGNORED_FAMILY_OPTIONS = frozenset(
    {"in_memory", "block_cache_enabled", "bloom_filter_vector_size", "bloom_filter_nb_hashes"}
)


class Connection:
    """A connection to a Cellar server's gRPC API (``cellar serve --grpc HOST:PORT``).

    ``token`` is sent as ``authorization: Bearer TOKEN`` on every call (servers started with
    ``--token-file`` require it). ``timeout`` is the deadline of each call in seconds (for a
    streamed call, of the whole stream); ``None`` waits as long as the server allows.
    ``tls=True`` connects with TLS, checking the server against ``root_certificates`` (PEM
    bytes) or the system's roots.

    The connection is safe to share between threads. Use it as a context manager, or call
    :meth:`close` when done.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 50051,
        token: Optional[str] = None,
        timeout: Optional[float] = None,
        *,
        tls: bool = False,
        root_certificates: Optional[bytes] = None,
    ) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        options = [
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ]
        if tls:
            creds = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(target, creds, options=options)
        else:
            self._channel = grpc.insecure_channel(target, options=options)
        self._stub: Any = pb_grpc.CellarStub(self._channel)  # type: ignore[no-untyped-call]
        self._metadata: Tuple[Tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token is not None else ()
        )
        self._closed = False

    # -- plumbing shared with Table ------------------------------------------------------

    def _call(self, method: str, request: Any) -> Any:
        """Calls a unary RPC, turning a gRPC failure into the client's exception."""
        self._check_open()
        fn = getattr(self._stub, method)
        try:
            return fn(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None

    def _stream(self, method: str, request: Any) -> Generator[Any, None, None]:
        """Calls a server-streaming RPC; the call is cancelled when the iterator is closed
        early (a ``break`` out of a scan)."""
        self._check_open()
        call = getattr(self._stub, method)(request, timeout=self.timeout, metadata=self._metadata)
        try:
            for message in call:
                yield message
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None
        finally:
            call.cancel()

    def _client_stream(self, method: str, requests: Iterator[Any]) -> Any:
        self._check_open()
        try:
            return getattr(self._stub, method)(
                requests, timeout=self.timeout, metadata=self._metadata
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from None

    def _check_open(self) -> None:
        if self._closed:
            raise Error("the connection is closed")

    # -- tables ---------------------------------------------------------------------------

    def table(self, name: cv.BytesLike) -> Table:
        """The table ``name`` (no call is made: an unknown table fails at its first use
        with :class:`cellar.NotFound`)."""
        return Table(cv.to_name(name, "a table name"), self)

    def tables(self) -> List[str]:
        """The names of the tables, sorted."""
        return list(self._call("ListTables", pb.ListTablesRequest()).tables)

    def create_table(
        self,
        name: cv.BytesLike,
        families: Mapping[cv.BytesLike, Mapping[str, Any]],
        *,
        if_not_exists: bool = False,
    ) -> None:
        """Creates table ``name`` with ``families``, in the order given.

        ``families`` maps each family name to a dict of options, as happybase's
        ``create_table`` does: ``max_versions`` (versions a read returns; default 1, as
        in HBase and HQL; 0 = every version), ``time_to_live`` (seconds; cells older are
        invisible), ``compression`` (``'none'``, ``'lz4'`` or ``'zstd'``, any case;
        default: the database's),
        ``bloom_filter_type`` (``'NONE'`` turns off the family's bloom filter). happybase's
        ``in_memory``, ``block_cache_enabled``, ``bloom_filter_vector_size`` and
        ``bloom_filter_nb_hashes`` are accepted and ignored. Raises
        :class:`cellar.AlreadyExists` when the table exists (unless ``if_not_exists``).
        """
        if not isinstance(families, Mapping) or not families:
            raise ValueError("families must be a non-empty dict of family name -> options dict")
        schema = pb.TableSchema(name=cv.to_name(name, "a table name"))
        for family, options in families.items():
            # happybase programs may write a family as "cf:"
            family_name = cv.to_name(family, "a family name").rstrip(":")
            schema.families.append(_family_schema(family_name, options or {}))
        self._call("CreateTable", pb.CreateTableRequest(schema=schema, if_not_exists=if_not_exists))

    def delete_table(
        self, name: cv.BytesLike, disable: bool = False, *, if_exists: bool = False
    ) -> None:
        """Drops table ``name`` and all its cells. ``disable`` is accepted for happybase
        compatibility (Cellar drops enabled tables). Raises :class:`cellar.NotFound` when
        the table does not exist (unless ``if_exists``)."""
        del disable
        request = pb.DropTableRequest(table=cv.to_name(name, "a table name"), if_exists=if_exists)
        self._call("DropTable", request)

    # -- HQL ------------------------------------------------------------------------------

    def hql(
        self,
        statements: str,
        *,
        durability: Optional[cv.DurabilityName] = None,
        keep_going: bool = False,
    ) -> str:
        """Runs HQL statements (each ended by ``;``, see docs/hql.md) on the server and
        returns their output, as the Cellar shell prints it.

        A failed statement raises :class:`cellar.HqlError` (with the statement's ``line``
        and the ``output`` of those before it); with ``keep_going`` the statements after it
        run too and the error, naming every failure, is raised at the end.
        """
        if not isinstance(statements, str):
            raise TypeError("statements must be a str")
        request = pb.HqlRequest(
            statements=statements, durability=cv.durability(durability), keep_going=keep_going
        )
        output: List[str] = []
        errors: List[str] = []
        for message in self._stream("Hql", request):
            if message.output:
                output.append(message.output)
            if message.error:
                errors.append(message.error)
        text = "".join(output)
        if errors:
            raise hql_error("\n".join(errors), text)
        return text

    # -- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the channel; calls made afterwards fail."""
        if not self._closed:
            self._closed = True
            self._channel.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<cellar.Connection {self.host}:{self.port}>"


def _family_schema(name: str, options: Mapping[str, Any]) -> pb.FamilySchema:
    # HBase's and HQL's default; the protocol's 0 would mean every version.
    schema = pb.FamilySchema(name=name, max_versions=1)
    for key, value in options.items():
        if key == "max_versions":
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 0 <= value <= 0xFFFFFFFF
            ):
                raise ValueError(f"family {name}: max_versions must be an int >= 0, not {value!r}")
            schema.max_versions = value
        elif key == "time_to_live":
            if value is None or value == -1:  # happybase/HBase: -1 means forever
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"family {name}: time_to_live must be seconds >= 0, not {value!r}")
            schema.ttl_seconds = value
        elif key == "compression":
            schema.compression = cv.compression(value)
        elif key == "bloom_filter_type":
            kind = str(value).upper()
            if kind not in ("NONE", "ROW", "ROWS", "TRUE", "FALSE"):
                raise ValueError(
                    f"family {name}: bloom_filter_type must be 'NONE' or 'ROW', not {value!r}"
                )
            schema.no_bloom_filter = kind in ("NONE", "FALSE")
        elif key in _IGNORED_FAMILY_OPTIONS:
            continue
        else:
            raise ValueError(
                f"family {name}: unknown option {key!r} (known: max_versions, time_to_live, "
                "compression, bloom_filter_type)"
            )
    return schema
