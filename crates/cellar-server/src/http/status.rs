//! `GET /`: the status page. One self-contained HTML document (inline CSS and SVG, no
//! scripts, no external assets): version and uptime, listeners, tables with their
//! families, size on disk, cell estimate and LSM levels, requests of the last minutes per
//! method, engine activity (flushes, compactions, stalls) and slow requests. Every name
//! that comes from users (tables, families, methods) is HTML-escaped.
//!
//! The cell estimate: the engine counts entries (every version and tombstone) in all SST
//! files together, not per keyspace, so a table's estimate is that count times the
//! table's share of SST bytes; memtable contents are not counted.

use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use cellar_engine::Stats;
use cellar_table::schema::parse_family_keyspace_name;
use cellar_table::TableSchema;

use super::svg::{
    escape, grouped, human_bytes, human_duration, human_uptime, level_bars, meter, LevelBar,
};
use super::ApiError;
use crate::config::Listen;
use crate::state::ServerState;

/// The HTTP listener's bound address, for the page's list of listeners.
#[derive(Debug, Clone, Copy)]
pub struct HttpAddr(pub SocketAddr);

/// Slow requests listed (the newest).
const SLOW_SHOWN: usize = 15;

const STYLE: &str = include_str!("status.css");

/// What the page shows of one table.
struct TableView {
    schema: TableSchema,
    enabled: bool,
    /// Per family: bytes on disk.
    family_bytes: Vec<u64>,
    levels: Vec<LevelBar>,
}

impl TableView {
    fn bytes(&self) -> u64 {
        self.family_bytes.iter().sum()
    }
    fn files(&self) -> usize {
        self.levels.iter().map(|l| l.files).sum()
    }
}

pub(super) async fn page(
    State(state): State<Arc<ServerState>>,
    addr: Option<Extension<HttpAddr>>,
) -> Result<Response, ApiError> {
    let s = Arc::clone(&state);
    let (stats, tables) = tokio::task::spawn_blocking(move || {
        let stats = s.store.db().stats();
        let tables = table_views(&s, &stats);
        (stats, tables)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("reading the database's state failed: {e}")))?;
    let html = render(&state, &stats, &tables, addr.map(|a| a.0 .0));
    Ok((
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response())
}

fn table_views(state: &ServerState, stats: &Stats) -> Vec<TableView> {
    let mut views = Vec::new();
    for name in state.store.list_tables() {
        let Ok(schema) = state.store.describe(&name) else {
            continue;
        };
        let mut levels: Vec<LevelBar> = Vec::new();
        let mut family_bytes = vec![0u64; schema.families.len()];
        for ks in &stats.keyspaces {
            let Some((table, family)) = parse_family_keyspace_name(&ks.name) else {
                continue;
            };
            if table != name {
                continue;
            }
            let fi = schema.families.iter().position(|f| f.name == family);
            for l in &ks.levels {
                if levels.len() <= l.level {
                    levels.resize(l.level + 1, LevelBar::default());
                }
                levels[l.level].files += l.files;
                levels[l.level].bytes += l.bytes;
                if let Some(fi) = fi {
                    family_bytes[fi] += l.bytes;
                }
            }
        }
        views.push(TableView {
            enabled: state.is_enabled(&name).unwrap_or(true),
            schema,
            family_bytes,
            levels,
        });
    }
    views
}

fn render(
    state: &ServerState,
    stats: &Stats,
    tables: &[TableView],
    http: Option<SocketAddr>,
) -> String {
    let mut h = String::with_capacity(16 << 10);
    let version = env!("CARGO_PKG_VERSION");
    let _ = write!(
        h,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta http-equiv="refresh" content="15"><title>Cellar {version} — status</title><style>{STYLE}</style></head><body><header><h1><span class="logo">▦</span> Cellar <span class="ver">{version}</span></h1><div class="meta">up {uptime} · started {started} · database <code>{db}</code></div></header><main>"#,
        uptime = human_uptime(state.started.elapsed()),
        started = utc(state.started_at),
        db = escape(&state.config.db.display().to_string()),
    );
    summary_cards(&mut h, state, stats, tables);
    tables_section(&mut h, stats, tables);
    requests_section(&mut h, state);
    engine_section(&mut h, stats);
    slow_section(&mut h, state);
    listeners_section(&mut h, state, http);
    h.push_str("</main><footer>Metrics for Prometheus: <a href=\"/metrics\">/metrics</a> · health: <a href=\"/health\">/health</a> · tables as JSON: <a href=\"/tables\">/tables</a></footer></body></html>");
    h
}

fn card(h: &mut String, label: &str, value: &str, note: &str) {
    let _ = write!(
        h,
        r#"<div class="card"><div class="label">{label}</div><div class="value">{value}</div><div class="note">{note}</div></div>"#
    );
}

fn summary_cards(h: &mut String, state: &ServerState, stats: &Stats, tables: &[TableView]) {
    let recent = state.metrics.recent.summary();
    let requests: u64 = recent.iter().map(|m| m.requests).sum();
    let rate: f64 = recent.iter().map(|m| m.rate).sum();
    let lookups = stats.block_cache_hits + stats.block_cache_misses;
    let hit_ratio = if lookups == 0 {
        "—".to_string()
    } else {
        format!(
            "{:.1} %",
            100.0 * stats.block_cache_hits as f64 / lookups as f64
        )
    };
    h.push_str(r#"<section class="cards">"#);
    card(
        h,
        "Tables",
        &grouped(tables.len() as u64),
        &format!(
            "{} SST files",
            grouped(tables.iter().map(|t| t.files() as u64).sum())
        ),
    );
    card(
        h,
        "On disk",
        &human_bytes(stats.sst_bytes),
        &format!("≈ {} entries in SSTs", grouped(stats.sst_entries)),
    );
    card(
        h,
        "Memtables",
        &human_bytes(stats.memtable_bytes),
        &format!("{} waiting to flush", stats.immutable_memtables),
    );
    card(
        h,
        "Block cache",
        &human_bytes(stats.block_cache_bytes),
        &format!("hit ratio {hit_ratio}"),
    );
    card(
        h,
        "Requests (5 min)",
        &grouped(requests),
        &format!("{rate:.1} per second"),
    );
    h.push_str("</section>");
}

fn tables_section(h: &mut String, stats: &Stats, tables: &[TableView]) {
    h.push_str(r#"<section><h2>Tables</h2>"#);
    if tables.is_empty() {
        h.push_str(r#"<p class="empty">No tables yet. Create one with HQL, happybase or gRPC.</p></section>"#);
        return;
    }
    h.push_str(r#"<p class="hint">Cells are estimated: the engine's SST entry count (all versions and tombstones) times the table's share of bytes on disk; memtables are not counted.</p><div class="tables">"#);
    for t in tables {
        let estimate = if stats.sst_bytes == 0 {
            0
        } else {
            (stats.sst_entries as f64 * t.bytes() as f64 / stats.sst_bytes as f64).round() as u64
        };
        let _ = write!(
            h,
            r#"<article class="table"><h3 class="tname">{name}{disabled}</h3><div class="tstats"><span><b>{bytes}</b> on disk</span><span><b>≈ {cells}</b> cells</span><span><b>{files}</b> files</span></div><table class="fams"><tr><th>family</th><th>versions</th><th>TTL</th><th>on disk</th></tr>"#,
            name = escape(&t.schema.name),
            disabled = if t.enabled {
                ""
            } else {
                r#" <span class="badge">disabled</span>"#
            },
            bytes = human_bytes(t.bytes()),
            cells = grouped(estimate),
            files = t.files(),
        );
        for (f, bytes) in t.schema.families.iter().zip(&t.family_bytes) {
            let _ = write!(
                h,
                r#"<tr><td class="fam">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                escape(&f.name),
                if f.options.max_versions == 0 {
                    "all".to_string()
                } else {
                    f.options.max_versions.to_string()
                },
                f.options.ttl.map_or("—".to_string(), human_uptime),
                human_bytes(*bytes),
            );
        }
        h.push_str("</table>");
        h.push_str(&level_bars(&t.levels));
        h.push_str("</article>");
    }
    h.push_str("</div></section>");
}

fn requests_section(h: &mut String, state: &ServerState) {
    let recent = state.metrics.recent.summary();
    h.push_str(r#"<section><h2>Requests, last 5 minutes</h2>"#);
    if recent.is_empty() {
        h.push_str(r#"<p class="empty">No requests in the last 5 minutes.</p></section>"#);
        return;
    }
    let slowest = recent
        .iter()
        .map(|m| m.p99)
        .max()
        .unwrap_or_default()
        .as_secs_f64()
        .max(1e-9);
    h.push_str(r#"<table class="grid methods"><tr><th>protocol</th><th>method</th><th class="num">requests</th><th class="num">per second</th><th class="num">errors</th><th class="num">p50</th><th class="num">p99</th><th></th></tr>"#);
    for m in &recent {
        let _ = write!(
            h,
            r#"<tr class="method"><td><span class="proto {p}">{p}</span></td><td class="mname">{name}</td><td class="num">{n}</td><td class="num">{rate:.2}</td><td class="num{errcls}">{err}</td><td class="num">{p50}</td><td class="num">{p99}</td><td>{bar}</td></tr>"#,
            p = m.protocol.as_str(),
            name = escape(&m.method),
            n = grouped(m.requests),
            rate = m.rate,
            errcls = if m.errors > 0 { " bad" } else { "" },
            err = grouped(m.errors),
            p50 = human_duration(m.p50),
            p99 = human_duration(m.p99),
            bar = meter(m.p99.as_secs_f64() / slowest),
        );
    }
    h.push_str(r#"</table><p class="hint">Percentiles are upper bounds of ×1.4 latency buckets.</p></section>"#);
}

fn engine_section(h: &mut String, s: &Stats) {
    h.push_str(r#"<section><h2>Engine activity</h2><p class="hint">Totals since the database was opened, and the compactions running now; a flush queue above zero means memtables are waiting for the disk.</p><table class="grid kv">"#);
    let rows: [(&str, String); 9] = [
        (
            "Flushes",
            format!(
                "{} ({} written)",
                grouped(s.flushes),
                human_bytes(s.flush_bytes)
            ),
        ),
        ("Flush queue", grouped(s.immutable_memtables as u64)),
        ("Compactions running", grouped(s.compactions_running)),
        (
            "Compactions",
            format!(
                "{} (read {}, wrote {})",
                grouped(s.compactions),
                human_bytes(s.compaction_read_bytes),
                human_bytes(s.compaction_write_bytes)
            ),
        ),
        (
            "Writers stalled",
            human_duration(Duration::from_micros(s.stall_micros)),
        ),
        (
            "Writers slowed",
            human_duration(Duration::from_micros(s.slowdown_micros)),
        ),
        (
            "WAL",
            format!(
                "{} syncs, {} written",
                grouped(s.wal_syncs),
                human_bytes(s.wal_bytes)
            ),
        ),
        (
            "Device reads",
            format!(
                "{} ({}), {} from the page cache",
                grouped(s.device_reads),
                human_bytes(s.device_read_bytes),
                grouped(s.page_cache_reads)
            ),
        ),
        (
            "Block cache",
            format!(
                "{} hits, {} misses",
                grouped(s.block_cache_hits),
                grouped(s.block_cache_misses)
            ),
        ),
    ];
    for (k, v) in rows {
        let _ = write!(h, "<tr><th>{k}</th><td>{v}</td></tr>");
    }
    h.push_str("</table></section>");
}

fn slow_section(h: &mut String, state: &ServerState) {
    let slow = state.metrics.slow_requests();
    let _ = write!(
        h,
        r#"<section><h2>Slow requests <span class="sub">over {}, newest first</span></h2>"#,
        human_duration(state.config.slow)
    );
    if slow.is_empty() {
        h.push_str(r#"<p class="empty">None.</p></section>"#);
        return;
    }
    h.push_str(r#"<table class="grid slow"><tr><th>at (UTC)</th><th>protocol</th><th>method</th><th class="num">took</th></tr>"#);
    for r in slow.iter().rev().take(SLOW_SHOWN) {
        let _ = write!(
            h,
            r#"<tr><td>{}</td><td><span class="proto {p}">{p}</span></td><td class="mname">{}</td><td class="num">{}</td></tr>"#,
            utc(r.at),
            escape(&r.method),
            human_duration(r.took),
            p = r.protocol.as_str(),
        );
    }
    h.push_str("</table></section>");
}

fn listeners_section(h: &mut String, state: &ServerState, http: Option<SocketAddr>) {
    h.push_str(r#"<section><h2>Listeners</h2><table class="grid kv">"#);
    let describe = |l: &Listen| match l.addr() {
        None => "off".to_string(),
        Some(a) if a.port() == 0 => format!("{} (ephemeral port)", a.ip()),
        Some(a) => a.to_string(),
    };
    let http_text = http.map_or_else(|| describe(&state.config.http), |a| a.to_string());
    let security = format!(
        "{}{}",
        if state.config.token.is_some() {
            "bearer token required"
        } else {
            "no token"
        },
        if state.config.tls.is_some() {
            ", TLS"
        } else {
            ""
        }
    );
    for (name, addr) in [
        ("Thrift (HBase Thrift1)", describe(&state.config.thrift)),
        ("gRPC", describe(&state.config.grpc)),
        ("HTTP (this page)", http_text),
    ] {
        let _ = write!(
            h,
            "<tr><th>{name}</th><td><code>{}</code></td></tr>",
            escape(&addr)
        );
    }
    let _ = write!(
        h,
        "<tr><th>gRPC and HTTP access</th><td>{security}</td></tr></table></section>"
    );
}

/// `YYYY-MM-DD HH:MM:SS` in UTC.
fn utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    cellar_text::format_timestamp_short(secs.saturating_mul(1_000_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01 00:00:00");
        assert_eq!(
            utc(UNIX_EPOCH + Duration::from_secs(1_709_210_096)),
            "2024-02-29 12:34:56"
        );
    }
}
