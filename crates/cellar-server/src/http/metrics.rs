//! `GET /metrics`: Prometheus text format. The server's own metrics (`crate::metrics`) and
//! the engine's statistics, read from `Db::stats()` at each scrape into a registry built
//! for that scrape. Names keep HBase's stems (RegionServer and Thrift metrics) with the
//! `cellar_` prefix; counters carry Prometheus' `_total` suffix.
//!
//! | metric | type | labels | HBase stem | what |
//! |---|---|---|---|---|
//! | `cellar_requests_total` | counter | protocol, method | `totalRequestCount`, `<Op>_num_ops` | requests served |
//! | `cellar_request_errors_total` | counter | protocol, method | `exceptions` | requests answered with an error |
//! | `cellar_request_seconds` | histogram | protocol, method | `<Op>_*_percentile`, `thriftCall` | request latency |
//! | `cellar_received_bytes_total` | counter | protocol | | bytes received |
//! | `cellar_sent_bytes_total` | counter | protocol | | bytes sent |
//! | `cellar_open_connections` | gauge | protocol | `numOpenConnections` | open client connections |
//! | `cellar_rejected_connections_total` | counter | protocol | | connections refused by `--max-connections` |
//! | `cellar_open_scanners` | gauge | | | open scanners (Thrift scanners and gRPC scan streams) |
//! | `cellar_expired_scanners_total` | counter | | | scanners closed for idleness |
//! | `cellar_limit_hits_total` | counter | limit | `CallQueueTooBig` | requests refused or cut by a limit |
//! | `cellar_mutations_without_wal_total` | counter | | `mutationsWithoutWALCount` | buffered (`writeToWAL=false`) mutations |
//! | `cellar_block_cache_hit_count_total` | counter | | `blockCacheHitCount` | block cache hits |
//! | `cellar_block_cache_miss_count_total` | counter | | `blockCacheMissCount` | block cache misses |
//! | `cellar_block_cache_size_bytes` | gauge | | `blockCacheSize` | bytes held by the block cache |
//! | `cellar_mem_store_size_bytes` | gauge | | `memStoreSize` | bytes in memtables (active and immutable) |
//! | `cellar_flush_queue_length` | gauge | | `flushQueueLength` | immutable memtables waiting to be flushed |
//! | `cellar_store_file_count` | gauge | table, family, level | `storeFileCount` | SST files per level |
//! | `cellar_store_file_size_bytes` | gauge | table, family, level | `storeFileSize` | SST bytes per level |
//! | `cellar_store_file_entries` | gauge | | | entries (all versions and tombstones) in SSTs |
//! | `cellar_store_file_index_size_bytes` | gauge | | `storeFileIndexSize` | index and bloom bytes held in memory |
//! | `cellar_range_tombstones` | gauge | table, family | | range tombstones per keyspace |
//! | `cellar_compactions_total` | counter | | `compactionsCompletedCount` | compactions run |
//! | `cellar_compactions_running` | gauge | | `compactionQueueLength` | compactions in progress |
//! | `cellar_compacted_input_bytes_total` | counter | | `compactedInputBytes` | bytes read by compactions |
//! | `cellar_compacted_output_bytes_total` | counter | | `compactedOutputBytes` | bytes written by compactions |
//! | `cellar_updates_blocked_seconds_total` | counter | | `updatesBlockedTime` | writers stopped by a write stall |
//! | `cellar_updates_slowed_seconds_total` | counter | | | writers delayed by the slowdown before a stall |
//! | `cellar_flushes_total` | counter | | `flushedMemstoreCount` | memtable flushes |
//! | `cellar_flushed_bytes_total` | counter | | `flushedMemstoreBytes` | bytes written by flushes |
//! | `cellar_wal_syncs_total` | counter | | `SyncTime_num_ops` | WAL fsyncs |
//! | `cellar_wal_written_bytes_total` | counter | | `appendSize` | bytes appended to the WAL |
//! | `cellar_grouped_writes_total` | counter | | | writes committed by another writer's WAL write |
//! | `cellar_device_reads_total` | counter | | | SST reads that missed the block cache |
//! | `cellar_device_read_bytes_total` | counter | | | bytes of those reads |
//! | `cellar_page_cache_reads_total` | counter | | | of those, point reads the OS page cache served |
//! | `cellar_mapped_reads_total` | counter | | | SST block reads served in place through the file's memory map |
//! | `cellar_bloom_negatives_total` | counter | | `bloomFilterRequestsCount` | lookups a bloom filter answered |
//! | `cellar_bloom_false_positives_total` | counter | | | bloom "maybe"s that were wrong |
//! | `cellar_engine_gets_total` | counter | | `readRequestCount` | engine point reads |
//! | `cellar_engine_writes_total` | counter | | `writeRequestCount` | engine write batches |
//! | `cellar_engine_written_bytes_total` | counter | | | bytes of those batches |
//! | `cellar_uptime_seconds` | gauge | | | seconds since the server started |
//! | `cellar_object_requests_total` | counter | `op` (get, put, head, list, delete, copy), `kind` (sst, manifest, wal, other; get and put only) | | requests to the object store (`--db s3://...`) |
//! | `cellar_object_bytes_total` | counter | `op` (get, put), `kind` | | bytes those GETs and PUTs moved |
//! | `cellar_object_cache_hits_total`, `_misses_total` | counter | | | reads the local disk cache served or missed |
//! | `cellar_object_cache_size_bytes` | gauge | | | bytes the disk cache holds |
//! | `cellar_writer_epoch` | gauge | | | the writer epoch of a database in an object store |
//!
//! Engine keyspaces that are not table families (the catalog) appear with the keyspace's
//! name as `table` and an empty `family`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use cellar_engine::Stats;
use cellar_table::schema::parse_family_keyspace_name;
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use super::ApiError;
use crate::state::ServerState;

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LevelLabels {
    table: String,
    family: String,
    level: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ObjectLabels {
    op: String,
    kind: String,
}

/// The object store's counters (`Stats::storage`, named `object_<op>_<what>[_<kind>]`) as
/// labelled metrics; nothing for a database in a directory.
fn register_object_store(r: &mut Registry, s: &Stats) {
    if s.storage.is_empty() {
        return;
    }
    let requests = Family::<ObjectLabels, Counter>::default();
    let bytes = Family::<ObjectLabels, Counter>::default();
    let labels = |op: &str, kind: &str| ObjectLabels {
        op: op.to_string(),
        kind: kind.to_string(),
    };
    for (name, value) in &s.storage {
        let Some(rest) = name.strip_prefix("object_") else {
            continue;
        };
        let parts: Vec<&str> = rest.split('_').collect();
        match parts.as_slice() {
            [op, "requests", kind] => {
                requests.get_or_create(&labels(op, kind)).inc_by(*value);
            }
            [op, "requests"] => {
                requests.get_or_create(&labels(op, "")).inc_by(*value);
            }
            [op, "bytes", kind] => {
                bytes.get_or_create(&labels(op, kind)).inc_by(*value);
            }
            ["cache", "hits"] => counter(r, "object_cache_hits", "Disk cache hits", *value),
            ["cache", "misses"] => counter(r, "object_cache_misses", "Disk cache misses", *value),
            ["cache", "bytes"] => gauge(r, "object_cache_size_bytes", "Disk cache bytes", *value),
            _ => {}
        }
    }
    r.register("object_requests", "Requests to the object store", requests);
    r.register(
        "object_bytes",
        "Bytes moved by object-store GETs and PUTs",
        bytes,
    );
    gauge(
        r,
        "writer_epoch",
        "Writer epoch in the object store",
        s.writer_epoch,
    );
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StoreLabels {
    table: String,
    family: String,
}

pub(super) async fn scrape(State(state): State<Arc<ServerState>>) -> Result<Response, ApiError> {
    let stats = {
        let s = Arc::clone(&state);
        tokio::task::spawn_blocking(move || s.store.db().stats())
            .await
            .map_err(|e| ApiError::Internal(format!("reading engine statistics failed: {e}")))?
    };
    let engine = engine_registry(&stats, state.started.elapsed().as_secs_f64());
    let mut text = String::new();
    encode_registry(&mut text, &state.metrics.registry)
        .and_then(|_| encode_registry(&mut text, &engine))
        .and_then(|_| encode_eof(&mut text))
        .map_err(|e| ApiError::Internal(format!("encoding the metrics failed: {e}")))?;
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response())
}

fn counter(r: &mut Registry, name: &str, help: &str, value: u64) {
    r.register(name, help, ConstCounter::new(value));
}

fn gauge(r: &mut Registry, name: &str, help: &str, value: u64) {
    r.register(name, help, ConstGauge::new(value as i64));
}

/// The engine's statistics as metrics (one registry per scrape).
fn engine_registry(s: &Stats, uptime_seconds: f64) -> Registry {
    let mut r = Registry::with_prefix("cellar");
    counter(
        &mut r,
        "block_cache_hit_count",
        "Block cache hits",
        s.block_cache_hits,
    );
    counter(
        &mut r,
        "block_cache_miss_count",
        "Block cache misses",
        s.block_cache_misses,
    );
    gauge(
        &mut r,
        "block_cache_size_bytes",
        "Bytes held by the block cache",
        s.block_cache_bytes,
    );
    gauge(
        &mut r,
        "mem_store_size_bytes",
        "Bytes in memtables",
        s.memtable_bytes,
    );
    gauge(
        &mut r,
        "flush_queue_length",
        "Immutable memtables waiting to be flushed",
        s.immutable_memtables as u64,
    );
    gauge(
        &mut r,
        "store_file_entries",
        "Entries in SST files",
        s.sst_entries,
    );
    gauge(
        &mut r,
        "store_file_index_size_bytes",
        "SST index and bloom filter bytes held in memory",
        s.resident_index_filter_bytes,
    );
    counter(&mut r, "compactions", "Compactions run", s.compactions);
    gauge(
        &mut r,
        "compactions_running",
        "Compactions in progress",
        s.compactions_running,
    );
    counter(
        &mut r,
        "compacted_input_bytes",
        "Bytes read by compactions",
        s.compaction_read_bytes,
    );
    counter(
        &mut r,
        "compacted_output_bytes",
        "Bytes written by compactions",
        s.compaction_write_bytes,
    );
    r.register(
        "updates_blocked_seconds",
        "Time writers were stopped by a write stall",
        ConstCounter::new(s.stall_micros as f64 / 1e6),
    );
    r.register(
        "updates_slowed_seconds",
        "Time writers were delayed before a stall",
        ConstCounter::new(s.slowdown_micros as f64 / 1e6),
    );
    counter(&mut r, "flushes", "Memtable flushes", s.flushes);
    counter(
        &mut r,
        "flushed_bytes",
        "Bytes written by memtable flushes",
        s.flush_bytes,
    );
    counter(&mut r, "wal_syncs", "WAL fsyncs", s.wal_syncs);
    register_object_store(&mut r, s);
    counter(
        &mut r,
        "wal_written_bytes",
        "Bytes appended to the WAL",
        s.wal_bytes,
    );
    counter(
        &mut r,
        "grouped_writes",
        "Writes committed by another writer's WAL write",
        s.grouped_writes,
    );
    counter(
        &mut r,
        "device_reads",
        "SST reads that missed the block cache",
        s.device_reads,
    );
    counter(
        &mut r,
        "device_read_bytes",
        "Bytes read from SST files",
        s.device_read_bytes,
    );
    counter(
        &mut r,
        "page_cache_reads",
        "Point reads served by the OS page cache",
        s.page_cache_reads,
    );
    counter(
        &mut r,
        "mapped_reads",
        "SST block reads served in place through the file's memory map",
        s.mapped_reads,
    );
    counter(
        &mut r,
        "bloom_negatives",
        "Lookups a bloom filter answered",
        s.bloom_negatives,
    );
    counter(
        &mut r,
        "bloom_false_positives",
        "Bloom filter false positives",
        s.bloom_false_positives,
    );
    counter(&mut r, "engine_gets", "Engine point reads", s.gets);
    counter(&mut r, "engine_writes", "Engine write batches", s.writes);
    counter(
        &mut r,
        "engine_written_bytes",
        "Bytes of engine write batches",
        s.write_bytes,
    );
    r.register(
        "uptime_seconds",
        "Seconds since the server started",
        ConstGauge::new(uptime_seconds),
    );
    register_levels(&mut r, s);
    r
}

fn register_levels(r: &mut Registry, s: &Stats) {
    let files = Family::<LevelLabels, Gauge>::default();
    let bytes = Family::<LevelLabels, Gauge>::default();
    let tombstones = Family::<StoreLabels, Gauge>::default();
    for ks in &s.keyspaces {
        let (table, family) = parse_family_keyspace_name(&ks.name).unwrap_or((&ks.name, ""));
        for level in &ks.levels {
            let labels = LevelLabels {
                table: table.to_string(),
                family: family.to_string(),
                level: level.level.to_string(),
            };
            files.get_or_create(&labels).set(level.files as i64);
            bytes.get_or_create(&labels).set(level.bytes as i64);
        }
        tombstones
            .get_or_create(&StoreLabels {
                table: table.to_string(),
                family: family.to_string(),
            })
            .set(ks.range_tombstones as i64);
    }
    r.register(
        "store_file_count",
        "SST files per table, family and level",
        files,
    );
    r.register(
        "store_file_size_bytes",
        "SST bytes per table, family and level",
        bytes,
    );
    r.register(
        "range_tombstones",
        "Range tombstones per table and family",
        tombstones,
    );
}
