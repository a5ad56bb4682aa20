//! The structs of HBase's Thrift1 IDL (`Hbase.thrift`) that the gateway reads and writes,
//! with their field ids. Arguments arrive as generic [`Value`]s; a field of the wrong type
//! is ignored, as generated Thrift code does, and a missing required one is an
//! `IllegalArgument` naming it.

use super::protocol::{TType, Value, Writer};

/// An error the IDL declares: `IOError`, `IllegalArgument` or `AlreadyExists`, or an
/// application exception (an unknown method, an internal failure).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThriftError {
    #[error("IOError: {0}")]
    Io(String),
    #[error("IllegalArgument: {0}")]
    IllegalArgument(String),
    #[error("AlreadyExists: {0}")]
    AlreadyExists(String),
}

impl From<crate::state::BlockingTaskFailed> for ThriftError {
    fn from(e: crate::state::BlockingTaskFailed) -> Self {
        ThriftError::Io(e.to_string())
    }
}

/// Typed access to a struct's fields.
#[derive(Clone, Copy)]
pub struct Fields<'a>(pub &'a [(i16, Value)]);

fn missing(name: &str, id: i16) -> ThriftError {
    ThriftError::IllegalArgument(format!("missing argument {name} (field {id})"))
}

impl<'a> Fields<'a> {
    fn get(&self, id: i16) -> Option<&'a Value> {
        self.0.iter().rev().find(|(i, _)| *i == id).map(|(_, v)| v)
    }

    pub fn binary(&self, id: i16) -> Option<&'a [u8]> {
        match self.get(id) {
            Some(Value::Binary(b)) => Some(b),
            _ => None,
        }
    }

    pub fn req_binary(&self, id: i16, name: &str) -> Result<&'a [u8], ThriftError> {
        self.binary(id).ok_or_else(|| missing(name, id))
    }

    /// A required string argument (table names).
    pub fn req_str(&self, id: i16, name: &str) -> Result<&'a str, ThriftError> {
        let b = self.req_binary(id, name)?;
        std::str::from_utf8(b)
            .map_err(|_| ThriftError::IllegalArgument(format!("{name} is not valid UTF-8")))
    }

    pub fn i32(&self, id: i16) -> Option<i32> {
        match self.get(id) {
            Some(Value::I32(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn i64(&self, id: i16) -> Option<i64> {
        match self.get(id) {
            Some(Value::I64(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn req_i32(&self, id: i16, name: &str) -> Result<i32, ThriftError> {
        self.i32(id).ok_or_else(|| missing(name, id))
    }

    pub fn req_i64(&self, id: i16, name: &str) -> Result<i64, ThriftError> {
        self.i64(id).ok_or_else(|| missing(name, id))
    }

    pub fn bool(&self, id: i16) -> Option<bool> {
        match self.get(id) {
            Some(Value::Bool(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn list(&self, id: i16) -> Option<&'a [Value]> {
        match self.get(id) {
            Some(Value::List(v)) => Some(v),
            _ => None,
        }
    }

    pub fn strukt(&self, id: i16) -> Option<Fields<'a>> {
        match self.get(id) {
            Some(Value::Struct(f)) => Some(Fields(f)),
            _ => None,
        }
    }

    /// A `list<Text>`; absent is empty (happybase omits `columns=None`).
    pub fn binary_list(&self, id: i16) -> Vec<&'a [u8]> {
        self.list(id)
            .unwrap_or_default()
            .iter()
            .filter_map(|v| match v {
                Value::Binary(b) => Some(b.as_slice()),
                _ => None,
            })
            .collect()
    }

    pub fn struct_list(&self, id: i16) -> Vec<Fields<'a>> {
        self.list(id)
            .unwrap_or_default()
            .iter()
            .filter_map(|v| match v {
                Value::Struct(f) => Some(Fields(f)),
                _ => None,
            })
            .collect()
    }
}

/// `struct ColumnDescriptor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDescriptor {
    pub name: Vec<u8>,
    pub max_versions: i32,
    pub compression: String,
    pub in_memory: bool,
    pub bloom_filter_type: String,
    pub block_cache_enabled: bool,
    pub time_to_live: i32,
}

impl ColumnDescriptor {
    /// From the wire, with the IDL's defaults for absent fields.
    pub fn decode(f: Fields<'_>) -> ColumnDescriptor {
        let text = |id| {
            f.binary(id)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_else(|| "NONE".to_string())
        };
        ColumnDescriptor {
            name: f.binary(1).unwrap_or_default().to_vec(),
            max_versions: f.i32(2).unwrap_or(3),
            compression: text(3),
            in_memory: f.bool(4).unwrap_or(false),
            bloom_filter_type: text(5),
            block_cache_enabled: f.bool(8).unwrap_or(false),
            time_to_live: f.i32(9).unwrap_or(-1),
        }
    }

    pub fn encode(&self, w: &mut Writer) {
        w.struct_begin();
        w.field(TType::Binary, 1);
        w.binary(&self.name);
        w.field(TType::I32, 2);
        w.i32(self.max_versions);
        w.field(TType::Binary, 3);
        w.binary(self.compression.as_bytes());
        w.field_bool(4, self.in_memory);
        w.field(TType::Binary, 5);
        w.binary(self.bloom_filter_type.as_bytes());
        w.field(TType::I32, 6);
        w.i32(0);
        w.field(TType::I32, 7);
        w.i32(0);
        w.field_bool(8, self.block_cache_enabled);
        w.field(TType::I32, 9);
        w.i32(self.time_to_live);
        w.struct_end();
    }
}

/// `struct TRegionInfo`.
#[derive(Debug, Clone)]
pub struct RegionInfo {
    pub start_key: Vec<u8>,
    pub end_key: Vec<u8>,
    pub id: i64,
    pub name: Vec<u8>,
    pub version: i8,
    pub server_name: Vec<u8>,
    pub port: i32,
}

impl RegionInfo {
    pub fn encode(&self, w: &mut Writer) {
        w.struct_begin();
        w.field(TType::Binary, 1);
        w.binary(&self.start_key);
        w.field(TType::Binary, 2);
        w.binary(&self.end_key);
        w.field(TType::I64, 3);
        w.i64(self.id);
        w.field(TType::Binary, 4);
        w.binary(&self.name);
        w.field(TType::Byte, 5);
        w.byte(self.version);
        w.field(TType::Binary, 6);
        w.binary(&self.server_name);
        w.field(TType::I32, 7);
        w.i32(self.port);
        w.struct_end();
    }
}

/// `struct Mutation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutation {
    pub is_delete: bool,
    pub column: Vec<u8>,
    pub value: Vec<u8>,
    pub write_to_wal: bool,
}

impl Mutation {
    pub fn decode(f: Fields<'_>) -> Mutation {
        Mutation {
            is_delete: f.bool(1).unwrap_or(false),
            column: f.binary(2).unwrap_or_default().to_vec(),
            value: f.binary(3).unwrap_or_default().to_vec(),
            write_to_wal: f.bool(4).unwrap_or(true),
        }
    }
}

/// `struct BatchMutation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchMutation {
    pub row: Vec<u8>,
    pub mutations: Vec<Mutation>,
}

impl BatchMutation {
    pub fn decode(f: Fields<'_>) -> BatchMutation {
        BatchMutation {
            row: f.binary(1).unwrap_or_default().to_vec(),
            mutations: f.struct_list(2).into_iter().map(Mutation::decode).collect(),
        }
    }
}

/// `struct TScan`: every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TScan {
    pub start_row: Option<Vec<u8>>,
    pub stop_row: Option<Vec<u8>>,
    pub timestamp: Option<i64>,
    pub columns: Vec<Vec<u8>>,
    pub caching: Option<i32>,
    pub filter_string: Option<Vec<u8>>,
    pub batch_size: Option<i32>,
    pub sort_columns: bool,
    pub reversed: bool,
}

impl TScan {
    /// Field 10 (`cacheBlocks`, upstream only) is ignored: there is no block cache hint.
    pub fn decode(f: Fields<'_>) -> TScan {
        TScan {
            start_row: f.binary(1).map(<[u8]>::to_vec),
            stop_row: f.binary(2).map(<[u8]>::to_vec),
            timestamp: f.i64(3),
            columns: f.binary_list(4).into_iter().map(<[u8]>::to_vec).collect(),
            caching: f.i32(5),
            filter_string: f.binary(6).map(<[u8]>::to_vec),
            batch_size: f.i32(7),
            sort_columns: f.bool(8).unwrap_or(false),
            reversed: f.bool(9).unwrap_or(false),
        }
    }
}

/// One cell as `TCell` carries it: value and timestamp in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TCell {
    pub value: Vec<u8>,
    pub timestamp: i64,
}

impl TCell {
    pub fn encode(&self, w: &mut Writer) {
        w.struct_begin();
        w.field(TType::Binary, 1);
        w.binary(&self.value);
        w.field(TType::I64, 2);
        w.i64(self.timestamp);
        w.struct_end();
    }
}

/// `struct TRowResult`: `columns` keyed "family:qualifier", sorted; `sortedColumns` only
/// when the scan asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TRowResult {
    pub row: Vec<u8>,
    /// (column name, cell), sorted by (family, qualifier).
    pub columns: Vec<(Vec<u8>, TCell)>,
    pub sorted: bool,
}

impl TRowResult {
    pub fn encode(&self, w: &mut Writer) {
        w.struct_begin();
        w.field(TType::Binary, 1);
        w.binary(&self.row);
        if self.sorted {
            w.field(TType::List, 3);
            w.list_begin(TType::Struct, self.columns.len());
            for (name, cell) in &self.columns {
                w.struct_begin();
                w.field(TType::Binary, 1);
                w.binary(name);
                w.field(TType::Struct, 2);
                cell.encode(w);
                w.struct_end();
            }
        } else {
            w.field(TType::Map, 2);
            w.map_begin(TType::Binary, TType::Struct, self.columns.len());
            for (name, cell) in &self.columns {
                w.binary(name);
                cell.encode(w);
            }
        }
        w.struct_end();
    }
}

/// The `success` value of a reply.
#[derive(Debug, Clone)]
pub enum Success {
    Void,
    Bool(bool),
    I32(i32),
    I64(i64),
    Names(Vec<Vec<u8>>),
    Descriptors(Vec<ColumnDescriptor>),
    Regions(Vec<RegionInfo>),
    Rows(Vec<TRowResult>),
    Cells(Vec<TCell>),
}

impl Success {
    /// Writes field 0 (nothing for void): always present, even when the list is empty,
    /// since a client reads a missing `success` as an error.
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Success::Void => {}
            Success::Bool(b) => w.field_bool(0, *b),
            Success::I32(v) => {
                w.field(TType::I32, 0);
                w.i32(*v);
            }
            Success::I64(v) => {
                w.field(TType::I64, 0);
                w.i64(*v);
            }
            Success::Names(names) => {
                w.field(TType::List, 0);
                w.list_begin(TType::Binary, names.len());
                for n in names {
                    w.binary(n);
                }
            }
            Success::Descriptors(ds) => {
                w.field(TType::Map, 0);
                w.map_begin(TType::Binary, TType::Struct, ds.len());
                for d in ds {
                    w.binary(&d.name);
                    d.encode(w);
                }
            }
            Success::Regions(rs) => {
                w.field(TType::List, 0);
                w.list_begin(TType::Struct, rs.len());
                for r in rs {
                    r.encode(w);
                }
            }
            Success::Rows(rows) => {
                w.field(TType::List, 0);
                w.list_begin(TType::Struct, rows.len());
                for r in rows {
                    r.encode(w);
                }
            }
            Success::Cells(cells) => {
                w.field(TType::List, 0);
                w.list_begin(TType::Struct, cells.len());
                for c in cells {
                    c.encode(w);
                }
            }
        }
    }
}

impl ThriftError {
    /// Writes the exception's field of the result struct: IOError is field 1,
    /// IllegalArgument 2, AlreadyExists 3 in every method that declares them.
    pub fn encode(&self, w: &mut Writer) {
        let (id, message) = match self {
            ThriftError::Io(m) => (1, m),
            ThriftError::IllegalArgument(m) => (2, m),
            ThriftError::AlreadyExists(m) => (3, m),
        };
        w.field(TType::Struct, id);
        w.struct_begin();
        w.field(TType::Binary, 1);
        w.binary(message.as_bytes());
        w.struct_end();
    }
}

/// `TApplicationException` types.
pub const UNKNOWN_METHOD: i32 = 1;
pub const INTERNAL_ERROR: i32 = 6;
pub const PROTOCOL_ERROR: i32 = 7;

/// The body of a `TApplicationException` message.
pub fn encode_application_exception(w: &mut Writer, kind: i32, message: &str) {
    w.struct_begin();
    w.field(TType::Binary, 1);
    w.binary(message.as_bytes());
    w.field(TType::I32, 2);
    w.i32(kind);
    w.struct_end();
}
