//! `GET /{table}/scan`: rows streamed as newline-delimited JSON (`application/x-ndjson`),
//! one row per line in the shape of `json.rs`, sent as the scan reads them.
//!
//! Parameters: `start` (inclusive) and `stop` (exclusive) bound the rows in byte order,
//! or `prefix` selects the rows starting with it; `limit` (most rows), `column` (repeated,
//! `cf` or `cf:q`), `v` (versions per column), `reverse` (rows from the top of the range
//! down), `filter` (HBase's filter language, docs/server.md "Filters"). Byte parameters
//! take `NAME_b64` as well. An error found once rows have been sent ends the stream with
//! a line `{"error": "..."}`.
//!
//! The scan runs on the blocking pool and hands batches to the response through a small
//! channel, so a slow reader slows the scan instead of filling memory.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, Uri};
use axum::response::{IntoResponse, Response};
use cellar_table::{RowSelection, ScanSpec};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;

use super::json::row_json;
use super::query::Query;
use super::rest::{column_selectors, path_parts};
use super::ApiError;
use crate::filter::Filter;
use crate::metrics::Protocol;
use crate::rows::RowScanner;
use crate::state::ServerState;

/// Rows per chunk handed to the response (fewer when they pass `--max-reply-bytes`).
const ROWS_PER_CHUNK: usize = 512;
/// Chunks waiting for the client at most.
const CHUNKS_IN_FLIGHT: usize = 4;

struct ScanRequest {
    table: String,
    spec: ScanSpec,
    filter: Option<Filter>,
    limit: Option<u64>,
}

fn parse_request(uri: &Uri) -> Result<ScanRequest, ApiError> {
    let (table, _) = path_parts(uri)?;
    let query = Query::parse(uri.query())?;
    let start = query.bytes("start")?;
    let stop = query.bytes("stop")?;
    let rows = match (query.bytes("prefix")?, start, stop) {
        (Some(p), None, None) => RowSelection::Prefix(p),
        (Some(_), _, _) => {
            return Err(ApiError::BadRequest(
                "give either prefix or start/stop, not both".into(),
            ))
        }
        (None, None, None) => RowSelection::All,
        (None, start, stop) => RowSelection::Range {
            start: start.map_or(Bound::Unbounded, Bound::Included),
            end: stop.map_or(Bound::Unbounded, Bound::Excluded),
        },
    };
    let filter = match query.text("filter")? {
        Some(text) if !text.is_empty() => Some(Filter::parse(&text)?),
        _ => None,
    };
    Ok(ScanRequest {
        table,
        spec: ScanSpec {
            rows,
            columns: column_selectors(&query)?,
            max_versions: query.number::<u32>("v")?,
            reverse: query.flag("reverse")?,
            ..ScanSpec::default()
        },
        filter,
        limit: query.number::<u64>("limit")?,
    })
}

pub(super) async fn scan(
    State(state): State<Arc<ServerState>>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let request = parse_request(&uri)?;
    let (opened_tx, opened_rx) = oneshot::channel();
    let (chunks_tx, chunks_rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(CHUNKS_IN_FLIGHT);
    let worker_state = Arc::clone(&state);
    let finished = Arc::new(AtomicBool::new(false));
    let worker_finished = Arc::clone(&finished);
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let sink = ChunkSink {
            runtime,
            chunks: chunks_tx,
            deadline: worker_state.config.limits.request_timeout,
        };
        if run_scan(&worker_state, request, opened_tx, &sink) {
            worker_finished.store(true, Ordering::Release);
        }
    });
    match opened_rx.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(ApiError::Internal("the scan's task ended early".into())),
    }
    // A scan that stopped before its end (a client that stopped reading, a failed task)
    // ends the body with an error, so hyper aborts the response instead of terminating it
    // like a complete one.
    let unfinished = tokio_stream::once(()).filter_map(move |()| {
        (!finished.load(Ordering::Acquire))
            .then(|| Err(std::io::Error::other("the scan stopped before its end")))
    });
    let body = Body::from_stream(ReceiverStream::new(chunks_rx).chain(unfinished));
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response())
}

/// Where a scan's chunks go: the response's channel, each send bounded by
/// `--request-timeout` (a client that stops reading ends the scan).
struct ChunkSink {
    runtime: tokio::runtime::Handle,
    chunks: mpsc::Sender<Result<Bytes, std::io::Error>>,
    deadline: Duration,
}

impl ChunkSink {
    /// False when the client went away or did not take the chunk in time.
    fn send(&self, state: &ServerState, chunk: Vec<u8>) -> bool {
        let send = self.chunks.send(Ok(Bytes::from(chunk)));
        match self
            .runtime
            .block_on(tokio::time::timeout(self.deadline, send))
        {
            Ok(Ok(())) => true,
            Ok(Err(_)) => false,
            Err(_) => {
                state.metrics.limit_hit("request_timeout");
                false
            }
        }
    }
}

/// Opens the scan (reporting the outcome on `opened`), then sends its rows in chunks until
/// the end, an error, or the client going away. True when the response is complete (every
/// row, or the rows up to an error and the error's line).
fn run_scan(
    state: &ServerState,
    request: ScanRequest,
    opened: oneshot::Sender<Result<(), ApiError>>,
    sink: &ChunkSink,
) -> bool {
    let started = Instant::now();
    let scanner = state
        .table(&request.table)
        .and_then(|t| RowScanner::new(&t, request.spec, request.filter.as_ref(), request.limit));
    let mut scanner = match scanner {
        Ok(s) => s,
        Err(e) => {
            state.finish_request(Protocol::Http, "scan", started.elapsed(), false);
            let _ = opened.send(Err(e.into()));
            return true;
        }
    };
    if opened.send(Ok(())).is_err() {
        return true;
    }
    let max_bytes = state.config.limits.max_reply_bytes;
    let (ok, complete) = loop {
        match scanner.next_batch(ROWS_PER_CHUNK, max_bytes) {
            Ok(rows) if rows.is_empty() => break (true, true),
            Ok(rows) => {
                let mut chunk = Vec::new();
                for row in &rows {
                    // Serialising a `Value` into a Vec cannot fail.
                    let _ = serde_json::to_writer(&mut chunk, &row_json(&row.key, &row.cells));
                    chunk.push(b'\n');
                }
                if !sink.send(state, chunk) {
                    break (false, false);
                }
            }
            Err(e) => {
                let line = serde_json::json!({ "error": e.to_string() }).to_string() + "\n";
                let sent = sink.send(state, line.into_bytes());
                break (false, sent);
            }
        }
    };
    state.finish_request(Protocol::Http, "scan", started.elapsed(), ok);
    complete
}
