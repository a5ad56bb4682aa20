from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Durability(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DURABILITY_DEFAULT: _ClassVar[Durability]
    DURABILITY_BUFFERED: _ClassVar[Durability]
    DURABILITY_FLUSH: _ClassVar[Durability]
    DURABILITY_SYNC: _ClassVar[Durability]

class Compression(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMPRESSION_DEFAULT: _ClassVar[Compression]
    COMPRESSION_NONE: _ClassVar[Compression]
    COMPRESSION_LZ4: _ClassVar[Compression]
    COMPRESSION_ZSTD: _ClassVar[Compression]
DURABILITY_DEFAULT: Durability
DURABILITY_BUFFERED: Durability
DURABILITY_FLUSH: Durability
DURABILITY_SYNC: Durability
COMPRESSION_DEFAULT: Compression
COMPRESSION_NONE: Compression
COMPRESSION_LZ4: Compression
COMPRESSION_ZSTD: Compression

class FamilySchema(_message.Message):
    __slots__ = ("name", "max_versions", "ttl_seconds", "compression", "no_bloom_filter")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    COMPRESSION_FIELD_NUMBER: _ClassVar[int]
    NO_BLOOM_FILTER_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_versions: int
    ttl_seconds: int
    compression: Compression
    no_bloom_filter: bool
    def __init__(self, name: _Optional[str] = ..., max_versions: _Optional[int] = ..., ttl_seconds: _Optional[int] = ..., compression: _Optional[_Union[Compression, str]] = ..., no_bloom_filter: _Optional[bool] = ...) -> None: ...

class TableSchema(_message.Message):
    __slots__ = ("name", "families")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FAMILIES_FIELD_NUMBER: _ClassVar[int]
    name: str
    families: _containers.RepeatedCompositeFieldContainer[FamilySchema]
    def __init__(self, name: _Optional[str] = ..., families: _Optional[_Iterable[_Union[FamilySchema, _Mapping]]] = ...) -> None: ...

class ListTablesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTablesResponse(_message.Message):
    __slots__ = ("tables",)
    TABLES_FIELD_NUMBER: _ClassVar[int]
    tables: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tables: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateTableRequest(_message.Message):
    __slots__ = ("schema", "if_not_exists")
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    IF_NOT_EXISTS_FIELD_NUMBER: _ClassVar[int]
    schema: TableSchema
    if_not_exists: bool
    def __init__(self, schema: _Optional[_Union[TableSchema, _Mapping]] = ..., if_not_exists: _Optional[bool] = ...) -> None: ...

class CreateTableResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DropTableRequest(_message.Message):
    __slots__ = ("table", "if_exists")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    IF_EXISTS_FIELD_NUMBER: _ClassVar[int]
    table: str
    if_exists: bool
    def __init__(self, table: _Optional[str] = ..., if_exists: _Optional[bool] = ...) -> None: ...

class DropTableResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeTableRequest(_message.Message):
    __slots__ = ("table",)
    TABLE_FIELD_NUMBER: _ClassVar[int]
    table: str
    def __init__(self, table: _Optional[str] = ...) -> None: ...

class Put(_message.Message):
    __slots__ = ("row", "family", "qualifier", "timestamp", "value")
    ROW_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    QUALIFIER_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    row: bytes
    family: str
    qualifier: bytes
    timestamp: int
    value: bytes
    def __init__(self, row: _Optional[bytes] = ..., family: _Optional[str] = ..., qualifier: _Optional[bytes] = ..., timestamp: _Optional[int] = ..., value: _Optional[bytes] = ...) -> None: ...

class Delete(_message.Message):
    __slots__ = ("row", "family", "qualifier", "timestamp")
    ROW_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    QUALIFIER_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    row: bytes
    family: str
    qualifier: bytes
    timestamp: int
    def __init__(self, row: _Optional[bytes] = ..., family: _Optional[str] = ..., qualifier: _Optional[bytes] = ..., timestamp: _Optional[int] = ...) -> None: ...

class Mutation(_message.Message):
    __slots__ = ("put", "delete")
    PUT_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    put: Put
    delete: Delete
    def __init__(self, put: _Optional[_Union[Put, _Mapping]] = ..., delete: _Optional[_Union[Delete, _Mapping]] = ...) -> None: ...

class MutateRequest(_message.Message):
    __slots__ = ("table", "mutations", "durability")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    MUTATIONS_FIELD_NUMBER: _ClassVar[int]
    DURABILITY_FIELD_NUMBER: _ClassVar[int]
    table: str
    mutations: _containers.RepeatedCompositeFieldContainer[Mutation]
    durability: Durability
    def __init__(self, table: _Optional[str] = ..., mutations: _Optional[_Iterable[_Union[Mutation, _Mapping]]] = ..., durability: _Optional[_Union[Durability, str]] = ...) -> None: ...

class MutateResponse(_message.Message):
    __slots__ = ("put_timestamps",)
    PUT_TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    put_timestamps: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, put_timestamps: _Optional[_Iterable[int]] = ...) -> None: ...

class IncrementRequest(_message.Message):
    __slots__ = ("table", "row", "family", "qualifier", "amount", "durability")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    ROW_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    QUALIFIER_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    DURABILITY_FIELD_NUMBER: _ClassVar[int]
    table: str
    row: bytes
    family: str
    qualifier: bytes
    amount: int
    durability: Durability
    def __init__(self, table: _Optional[str] = ..., row: _Optional[bytes] = ..., family: _Optional[str] = ..., qualifier: _Optional[bytes] = ..., amount: _Optional[int] = ..., durability: _Optional[_Union[Durability, str]] = ...) -> None: ...

class IncrementResponse(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: int
    def __init__(self, value: _Optional[int] = ...) -> None: ...

class Column(_message.Message):
    __slots__ = ("family", "qualifier")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    QUALIFIER_FIELD_NUMBER: _ClassVar[int]
    family: str
    qualifier: bytes
    def __init__(self, family: _Optional[str] = ..., qualifier: _Optional[bytes] = ...) -> None: ...

class TimeRange(_message.Message):
    __slots__ = ("min", "max")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    min: int
    max: int
    def __init__(self, min: _Optional[int] = ..., max: _Optional[int] = ...) -> None: ...

class Cell(_message.Message):
    __slots__ = ("family", "qualifier", "timestamp", "value")
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    QUALIFIER_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    family: str
    qualifier: bytes
    timestamp: int
    value: bytes
    def __init__(self, family: _Optional[str] = ..., qualifier: _Optional[bytes] = ..., timestamp: _Optional[int] = ..., value: _Optional[bytes] = ...) -> None: ...

class Row(_message.Message):
    __slots__ = ("row", "cells")
    ROW_FIELD_NUMBER: _ClassVar[int]
    CELLS_FIELD_NUMBER: _ClassVar[int]
    row: bytes
    cells: _containers.RepeatedCompositeFieldContainer[Cell]
    def __init__(self, row: _Optional[bytes] = ..., cells: _Optional[_Iterable[_Union[Cell, _Mapping]]] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("table", "row", "columns", "time_range", "max_versions")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    ROW_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    MAX_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    table: str
    row: bytes
    columns: _containers.RepeatedCompositeFieldContainer[Column]
    time_range: TimeRange
    max_versions: int
    def __init__(self, table: _Optional[str] = ..., row: _Optional[bytes] = ..., columns: _Optional[_Iterable[_Union[Column, _Mapping]]] = ..., time_range: _Optional[_Union[TimeRange, _Mapping]] = ..., max_versions: _Optional[int] = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ("row",)
    ROW_FIELD_NUMBER: _ClassVar[int]
    row: Row
    def __init__(self, row: _Optional[_Union[Row, _Mapping]] = ...) -> None: ...

class MultiGetRequest(_message.Message):
    __slots__ = ("table", "rows", "columns", "time_range", "max_versions")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    MAX_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    table: str
    rows: _containers.RepeatedScalarFieldContainer[bytes]
    columns: _containers.RepeatedCompositeFieldContainer[Column]
    time_range: TimeRange
    max_versions: int
    def __init__(self, table: _Optional[str] = ..., rows: _Optional[_Iterable[bytes]] = ..., columns: _Optional[_Iterable[_Union[Column, _Mapping]]] = ..., time_range: _Optional[_Union[TimeRange, _Mapping]] = ..., max_versions: _Optional[int] = ...) -> None: ...

class MultiGetResponse(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[Row]
    def __init__(self, rows: _Optional[_Iterable[_Union[Row, _Mapping]]] = ...) -> None: ...

class ScanRequest(_message.Message):
    __slots__ = ("table", "start_row", "stop_row", "prefix", "columns", "time_range", "max_versions", "limit", "reverse", "filter", "batch_rows")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    START_ROW_FIELD_NUMBER: _ClassVar[int]
    STOP_ROW_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    MAX_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    REVERSE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    BATCH_ROWS_FIELD_NUMBER: _ClassVar[int]
    table: str
    start_row: bytes
    stop_row: bytes
    prefix: bytes
    columns: _containers.RepeatedCompositeFieldContainer[Column]
    time_range: TimeRange
    max_versions: int
    limit: int
    reverse: bool
    filter: str
    batch_rows: int
    def __init__(self, table: _Optional[str] = ..., start_row: _Optional[bytes] = ..., stop_row: _Optional[bytes] = ..., prefix: _Optional[bytes] = ..., columns: _Optional[_Iterable[_Union[Column, _Mapping]]] = ..., time_range: _Optional[_Union[TimeRange, _Mapping]] = ..., max_versions: _Optional[int] = ..., limit: _Optional[int] = ..., reverse: _Optional[bool] = ..., filter: _Optional[str] = ..., batch_rows: _Optional[int] = ...) -> None: ...

class ScanResponse(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[Row]
    def __init__(self, rows: _Optional[_Iterable[_Union[Row, _Mapping]]] = ...) -> None: ...

class SplitPointsRequest(_message.Message):
    __slots__ = ("table", "parts")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    table: str
    parts: int
    def __init__(self, table: _Optional[str] = ..., parts: _Optional[int] = ...) -> None: ...

class SplitPointsResponse(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, rows: _Optional[_Iterable[bytes]] = ...) -> None: ...

class HqlRequest(_message.Message):
    __slots__ = ("statements", "durability", "keep_going")
    STATEMENTS_FIELD_NUMBER: _ClassVar[int]
    DURABILITY_FIELD_NUMBER: _ClassVar[int]
    KEEP_GOING_FIELD_NUMBER: _ClassVar[int]
    statements: str
    durability: Durability
    keep_going: bool
    def __init__(self, statements: _Optional[str] = ..., durability: _Optional[_Union[Durability, str]] = ..., keep_going: _Optional[bool] = ...) -> None: ...

class HqlResponse(_message.Message):
    __slots__ = ("output", "error")
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    output: str
    error: str
    def __init__(self, output: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class LoadHeader(_message.Message):
    __slots__ = ("table", "row_key_column", "timestamp_column", "ignore_unknown_columns", "skip_bad_lines", "gzip")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    ROW_KEY_COLUMN_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_COLUMN_FIELD_NUMBER: _ClassVar[int]
    IGNORE_UNKNOWN_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    SKIP_BAD_LINES_FIELD_NUMBER: _ClassVar[int]
    GZIP_FIELD_NUMBER: _ClassVar[int]
    table: str
    row_key_column: str
    timestamp_column: str
    ignore_unknown_columns: bool
    skip_bad_lines: bool
    gzip: bool
    def __init__(self, table: _Optional[str] = ..., row_key_column: _Optional[str] = ..., timestamp_column: _Optional[str] = ..., ignore_unknown_columns: _Optional[bool] = ..., skip_bad_lines: _Optional[bool] = ..., gzip: _Optional[bool] = ...) -> None: ...

class LoadRequest(_message.Message):
    __slots__ = ("header", "data")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    header: LoadHeader
    data: bytes
    def __init__(self, header: _Optional[_Union[LoadHeader, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class LoadResponse(_message.Message):
    __slots__ = ("lines", "cells", "bad_lines", "bytes")
    LINES_FIELD_NUMBER: _ClassVar[int]
    CELLS_FIELD_NUMBER: _ClassVar[int]
    BAD_LINES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    lines: int
    cells: int
    bad_lines: int
    bytes: int
    def __init__(self, lines: _Optional[int] = ..., cells: _Optional[int] = ..., bad_lines: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...
