//! The Thrift1 methods: which exist, their arguments, and the table-admin ones. Reads
//! are in `data.rs`, writes in `write.rs`, scanners in `scan.rs`. Every call runs on the
//! blocking pool.
//!
//! Conventions shared by every method (HBase's, see docs/server.md "Thrift gateway"):
//! - column strings: `"cf"` is the whole family, `"cf:q"` one column, and `"cf:"` the
//!   column of `cf` with the **empty qualifier** (HBase 2.x's `CellUtil.parseColumn`, so a
//!   put to `b"cf:"` and a read of `b"cf:"` name the same column);
//! - timestamps are milliseconds on the wire and nanoseconds in Cellar; every `ts`
//!   argument of a read is an exclusive upper bound (`[0, ts)`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cellar_table::schema::family_keyspace_name;
use cellar_table::timestamp::MAX_TIMESTAMP;
use cellar_table::{FamilyCompression, FamilyOptions, Table, TableError, TableSchema};

use super::idl::{ColumnDescriptor, Fields, RegionInfo, Success, ThriftError};
use super::scanners::ScannerRegistry;
use crate::state::ServerState;

/// What a connection passes to every call.
#[derive(Clone)]
pub struct CallContext {
    pub scanners: Arc<ScannerRegistry>,
    pub conn: u64,
    pub local: SocketAddr,
}

/// A method the gateway serves, and the exceptions its IDL declares (an exception a
/// method does not declare would reach the client as an unknown field, so it is sent as
/// an `IOError` instead).
#[derive(Debug, Clone, Copy)]
pub struct Method {
    pub name: &'static str,
    pub throws_illegal_argument: bool,
    pub throws_already_exists: bool,
}

const METHODS: &[(&str, bool, bool)] = &[
    ("getTableNames", false, false),
    ("createTable", true, true),
    ("deleteTable", false, false),
    ("enableTable", false, false),
    ("disableTable", false, false),
    ("isTableEnabled", false, false),
    ("compact", false, false),
    ("majorCompact", false, false),
    ("getColumnDescriptors", false, false),
    ("getTableRegions", false, false),
    ("get", false, false),
    ("getVer", false, false),
    ("getVerTs", false, false),
    ("getRow", false, false),
    ("getRowTs", false, false),
    ("getRowWithColumns", false, false),
    ("getRowWithColumnsTs", false, false),
    ("getRows", false, false),
    ("getRowsTs", false, false),
    ("getRowsWithColumns", false, false),
    ("getRowsWithColumnsTs", false, false),
    ("mutateRow", true, false),
    ("mutateRowTs", true, false),
    ("mutateRows", true, false),
    ("mutateRowsTs", true, false),
    ("deleteAll", false, false),
    ("deleteAllTs", false, false),
    ("deleteAllRow", false, false),
    ("deleteAllRowTs", false, false),
    ("atomicIncrement", true, false),
    ("scannerOpenWithScan", false, false),
    ("scannerOpen", false, false),
    ("scannerOpenWithStop", false, false),
    ("scannerOpenWithPrefix", false, false),
    ("scannerOpenTs", false, false),
    ("scannerOpenWithStopTs", false, false),
    ("scannerGet", true, false),
    ("scannerGetList", true, false),
    ("scannerClose", true, false),
];

/// The method called `name`, if the gateway serves it.
pub fn lookup(name: &str) -> Option<Method> {
    METHODS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(name, ia, exist)| Method {
            name,
            throws_illegal_argument: ia,
            throws_already_exists: exist,
        })
}

/// Runs one call.
pub fn call(
    ctx: &CallContext,
    st: &ServerState,
    method: &'static str,
    a: Fields<'_>,
) -> Result<Success, ThriftError> {
    use super::{data, scan, write};
    match method {
        "getTableNames" => Ok(Success::Names(
            st.store
                .list_tables()
                .into_iter()
                .map(String::into_bytes)
                .collect(),
        )),
        "createTable" => create_table(st, a.req_str(1, "tableName")?, a),
        "deleteTable" => delete_table(st, a.req_str(1, "tableName")?),
        "enableTable" | "disableTable" => {
            let name = a.req_str(1, "tableName")?;
            st.set_enabled(name, method == "enableTable").map_err(io)?;
            Ok(Success::Void)
        }
        "isTableEnabled" => Ok(Success::Bool(
            st.is_enabled(a.req_str(1, "tableName")?).map_err(io)?,
        )),
        "compact" | "majorCompact" => compact(st, a.req_str(1, "tableNameOrRegionName")?),
        "getColumnDescriptors" => column_descriptors(st, a.req_str(1, "tableName")?),
        "getTableRegions" => regions(ctx, st, a.req_str(1, "tableName")?),
        "scannerOpenWithScan"
        | "scannerOpen"
        | "scannerOpenWithStop"
        | "scannerOpenWithPrefix"
        | "scannerOpenTs"
        | "scannerOpenWithStopTs" => scan::scanner_open(ctx, st, method, a),
        "scannerGet" => scan::scanner_get(ctx, st, a.req_i32(1, "id")?, 1),
        "scannerGetList" => {
            scan::scanner_get(ctx, st, a.req_i32(1, "id")?, a.req_i32(2, "nbRows")?)
        }
        "scannerClose" => {
            ctx.scanners
                .close(a.req_i32(1, "id")?, &st.metrics)
                .map_err(|e| ThriftError::IllegalArgument(e.to_string()))?;
            Ok(Success::Void)
        }
        "atomicIncrement" => write::atomic_increment(st, a),
        m if m.starts_with("mutate") || m.starts_with("deleteAll") => write::mutate(st, m, a),
        m => data::read(st, m, a),
    }
}

/// A table-layer error as HBase reports it: bad arguments are `IllegalArgument`, the
/// rest `IOError`, with the table layer's message.
pub fn table_error(e: TableError) -> ThriftError {
    match e {
        TableError::InvalidArgument(_) => ThriftError::IllegalArgument(e.to_string()),
        e => ThriftError::Io(e.to_string()),
    }
}

fn io(e: TableError) -> ThriftError {
    ThriftError::Io(e.to_string())
}

/// A handle on an enabled table; a disabled one is an `IOError` (HBase's
/// TableNotEnabledException).
pub fn open_table(st: &ServerState, name: &str) -> Result<Table, ThriftError> {
    st.table(name).map_err(|e| match st.is_enabled(name) {
        Ok(false) => io(e),
        _ => table_error(e),
    })
}

/// Milliseconds from the wire to Cellar's nanoseconds; negative or too large is refused.
pub fn ts_to_nanos(ms: i64) -> Result<u64, ThriftError> {
    u64::try_from(ms)
        .ok()
        .and_then(|ms| ms.checked_mul(1_000_000))
        .filter(|&ns| ns <= MAX_TIMESTAMP)
        .ok_or_else(|| {
            ThriftError::IllegalArgument(format!(
                "timestamp {ms} is out of range: timestamps are milliseconds since the epoch, \
                 from 0 to {}",
                MAX_TIMESTAMP / 1_000_000
            ))
        })
}

/// Cellar's nanoseconds as the wire's milliseconds.
pub fn nanos_to_ts(ns: u64) -> i64 {
    (ns / 1_000_000) as i64
}

/// HBase's "forever" TTL (`HConstants.FOREVER`).
const TTL_FOREVER: i32 = i32::MAX;

fn family_options(d: &ColumnDescriptor) -> Result<FamilyOptions, ThriftError> {
    if d.max_versions < 1 {
        return Err(ThriftError::IllegalArgument(format!(
            "maxVersions of family {:?} must be at least 1, got {}",
            String::from_utf8_lossy(&d.name),
            d.max_versions
        )));
    }
    let ttl = match d.time_to_live {
        t if t <= 0 || t == TTL_FOREVER => None,
        t => Some(Duration::from_secs(t as u64)),
    };
    // HBase codecs Cellar lacks map to the nearest one it has: the fast ones to LZ4,
    // GZ to Zstd. "NONE", happybase's default, takes the database's default.
    let compression = match d.compression.to_ascii_uppercase().as_str() {
        "NONE" | "" => None,
        "LZ4" | "SNAPPY" | "LZO" => Some(FamilyCompression::Lz4),
        "ZSTD" | "GZ" | "GZIP" | "BZIP2" | "XZ" => Some(FamilyCompression::Zstd),
        other => {
            return Err(ThriftError::IllegalArgument(format!(
                "unknown compression {other:?} (NONE, LZ4, SNAPPY, LZO, GZ, ZSTD)"
            )))
        }
    };
    // Bloom filters stay on unless asked off explicitly: "NONE" is what happybase sends
    // for every family whether or not the user chose it.
    Ok(FamilyOptions {
        max_versions: d.max_versions as u32,
        ttl,
        compression,
        ..FamilyOptions::default()
    })
}

fn create_table(st: &ServerState, name: &str, a: Fields<'_>) -> Result<Success, ThriftError> {
    let mut schema = TableSchema::new(name);
    for f in a.struct_list(2) {
        let d = ColumnDescriptor::decode(f);
        let fam = d.name.strip_suffix(b":").unwrap_or(&d.name);
        let fam = std::str::from_utf8(fam).map_err(|_| {
            ThriftError::IllegalArgument("a column family name is not UTF-8".to_string())
        })?;
        schema = schema.family(fam, family_options(&d)?);
    }
    match st.store.create_table(schema) {
        Ok(()) => {
            // A table made again under a dropped one's name starts enabled.
            st.forget_table(name);
            Ok(Success::Void)
        }
        Err(TableError::TableExists(_)) => Err(ThriftError::AlreadyExists(format!(
            "table name already in use: {name:?}"
        ))),
        Err(e) => Err(table_error(e)),
    }
}

fn delete_table(st: &ServerState, name: &str) -> Result<Success, ThriftError> {
    if st.is_enabled(name).map_err(io)? {
        return Err(ThriftError::Io(format!(
            "table {name:?} is enabled: disable it first (disableTable), as HBase requires"
        )));
    }
    st.store.drop_table(name).map_err(io)?;
    st.forget_table(name);
    Ok(Success::Void)
}

fn compact(st: &ServerState, name: &str) -> Result<Success, ThriftError> {
    let schema = st.store.describe(name).map_err(io)?;
    let db = st.store.db();
    for f in &schema.families {
        let ks = db
            .keyspace(&family_keyspace_name(name, &f.name))
            .map_err(|e| ThriftError::Io(e.to_string()))?;
        db.compact_range(&ks, None, None)
            .map_err(|e| ThriftError::Io(format!("compacting {name:?}: {e}")))?;
    }
    Ok(Success::Void)
}

fn column_descriptors(st: &ServerState, name: &str) -> Result<Success, ThriftError> {
    let schema = st.store.describe(name).map_err(io)?;
    let ds = schema
        .families
        .iter()
        .map(|f| {
            let o = &f.options;
            ColumnDescriptor {
                name: format!("{}:", f.name).into_bytes(),
                max_versions: i32::try_from(o.max_versions).unwrap_or(i32::MAX),
                compression: match o.compression {
                    None | Some(FamilyCompression::None) => "NONE",
                    Some(FamilyCompression::Lz4) => "LZ4",
                    Some(FamilyCompression::Zstd) => "ZSTD",
                }
                .to_string(),
                in_memory: false,
                bloom_filter_type: if o.bloom_filter { "ROW" } else { "NONE" }.to_string(),
                block_cache_enabled: true,
                time_to_live: o.ttl.map_or(TTL_FOREVER, |t| {
                    i32::try_from(t.as_secs()).unwrap_or(TTL_FOREVER)
                }),
            }
        })
        .collect();
    Ok(Success::Descriptors(ds))
}

fn regions(ctx: &CallContext, st: &ServerState, name: &str) -> Result<Success, ThriftError> {
    st.store.describe(name).map_err(io)?;
    Ok(Success::Regions(vec![RegionInfo {
        start_key: Vec::new(),
        end_key: Vec::new(),
        id: 0,
        name: format!("{name},,0").into_bytes(),
        version: 1,
        server_name: ctx.local.ip().to_string().into_bytes(),
        port: i32::from(ctx.local.port()),
    }]))
}
