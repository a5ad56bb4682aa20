//! The server-streaming `Scan`: whole rows in chunks of at most `batch_rows` rows and about
//! `--max-reply-bytes` bytes.
//!
//! Flow control: a task owns the `RowScanner` and produces the next chunk (on the blocking
//! pool) only after it has reserved a slot in a channel of capacity 1 that the response
//! stream drains as HTTP/2 flow control lets it. A client that reads slowly therefore holds
//! at most a chunk in the channel plus what HTTP/2's windows carry, never the table. The
//! task stops when the client goes away, when it reads nothing for `--request-timeout`,
//! and when the server shuts down (the stream then ends with UNAVAILABLE, so the client
//! knows the scan is incomplete).

use std::sync::Arc;
use std::time::Instant;

use cellar_proto::v1 as pb;
use cellar_table::ScanSpec;
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::convert::{self, ApiError};
use crate::filter::Filter;
use crate::metrics::Protocol;
use crate::rows::RowScanner;
use crate::state::ServerState;

/// Rows per message when the request leaves it to the server.
const DEFAULT_BATCH_ROWS: usize = 1000;

pub type ScanStream = ReceiverStream<Result<pb::ScanResponse, Status>>;

/// Checks the request, opens the scan, and starts the task that feeds the stream.
pub async fn start(
    state: &Arc<ServerState>,
    shutdown: &CancellationToken,
    req: pb::ScanRequest,
) -> Result<ScanStream, Status> {
    let started = Instant::now();
    let opened = open(state, req).await;
    let (scanner, batch_rows) = match opened {
        Ok(o) => o,
        Err(e) => {
            state.finish_request(Protocol::Grpc, "Scan", started.elapsed(), false);
            return Err(e);
        }
    };
    let (tx, rx) = mpsc::channel(1);
    let task = ScanTask {
        state: Arc::clone(state),
        shutdown: shutdown.clone(),
        tx,
        batch_rows,
        started,
    };
    tokio::spawn(task.run(scanner));
    Ok(ReceiverStream::new(rx))
}

async fn open(
    state: &Arc<ServerState>,
    req: pb::ScanRequest,
) -> Result<(RowScanner, usize), Status> {
    convert::require_table(&req.table)?;
    let limits = &state.config.limits;
    if state.metrics.open_scanners.get() >= limits.max_scanners as i64 {
        state.metrics.limit_hit("scanners");
        return Err(Status::resource_exhausted(format!(
            "the server has {} open scans (--max-scanners); retry later",
            limits.max_scanners
        )));
    }
    let filter = if req.filter.trim().is_empty() {
        None
    } else {
        Some(
            Filter::parse(&req.filter)
                .map_err(|e| convert::invalid(format!("filter {:?}: {e}", req.filter)))?,
        )
    };
    let spec = ScanSpec {
        rows: convert::row_selection(req.start_row, req.stop_row, req.prefix, req.reverse),
        columns: convert::columns(req.columns)?,
        time_range: convert::time_range(req.time_range)?,
        max_versions: convert::max_versions(req.max_versions),
        limit: None,
        reverse: req.reverse,
        snapshot: None,
    };
    let limit = (req.limit > 0).then_some(req.limit);
    let batch_rows = match req.batch_rows {
        0 => DEFAULT_BATCH_ROWS,
        n => n as usize,
    };
    let table = req.table;
    let st = Arc::clone(state);
    let opened = tokio::task::spawn_blocking(move || -> Result<RowScanner, ApiError> {
        let t = st.table(&table)?;
        Ok(RowScanner::new(&t, spec, filter.as_ref(), limit)?)
    })
    .await
    .map_err(|e| Status::internal(format!("opening the scan failed: {e}")))?;
    Ok((opened?, batch_rows))
}

/// Feeds one scan's stream.
struct ScanTask {
    state: Arc<ServerState>,
    shutdown: CancellationToken,
    tx: mpsc::Sender<Result<pb::ScanResponse, Status>>,
    batch_rows: usize,
    started: Instant,
}

/// How a scan's task ended.
enum End {
    Done,
    ClientGone,
    Failed(Status),
}

impl ScanTask {
    async fn run(self, scanner: RowScanner) {
        self.state.metrics.open_scanners.inc();
        let end = self.pump(scanner).await;
        self.state.metrics.open_scanners.dec();
        let ok = matches!(end, End::Done);
        if let End::Failed(status) = end {
            // Best effort: the client may be gone, or not reading.
            let send = self.tx.send(Err(status));
            let _ = tokio::time::timeout(self.state.config.limits.request_timeout, send).await;
        }
        self.state
            .finish_request(Protocol::Grpc, "Scan", self.started.elapsed(), ok);
    }

    async fn pump(&self, mut scanner: RowScanner) -> End {
        let max_bytes = self.state.config.limits.max_reply_bytes;
        let idle = self.state.config.limits.request_timeout;
        loop {
            // Wait for room before reading more: this is the flow control.
            let permit = tokio::select! {
                p = tokio::time::timeout(idle, self.tx.reserve()) => match p {
                    Ok(Ok(p)) => p,
                    Ok(Err(_)) => return End::ClientGone,
                    Err(_) => {
                        return End::Failed(Status::deadline_exceeded(format!(
                            "the client read nothing for {} s (--request-timeout); scan closed",
                            idle.as_secs()
                        )))
                    }
                },
                _ = self.shutdown.cancelled() => return End::Failed(shutting_down()),
            };
            let batch_rows = self.batch_rows;
            let step = tokio::task::spawn_blocking(move || {
                let batch = scanner.next_batch(batch_rows, max_bytes);
                (scanner, batch)
            });
            let (s, batch) = match step.await {
                Ok(done) => done,
                Err(e) => {
                    return End::Failed(Status::internal(format!("the scan's task failed: {e}")))
                }
            };
            scanner = s;
            let rows = match batch {
                Ok(rows) => rows,
                Err(e) => return End::Failed(convert::table_status(e)),
            };
            if rows.is_empty() {
                return End::Done;
            }
            let message = pb::ScanResponse {
                rows: rows.into_iter().map(convert::row_to_proto).collect(),
            };
            self.state
                .metrics
                .sent(Protocol::Grpc, message.encoded_len());
            permit.send(Ok(message));
            if scanner.is_done() {
                return End::Done;
            }
            if self.shutdown.is_cancelled() {
                return End::Failed(shutting_down());
            }
        }
    }
}

fn shutting_down() -> Status {
    Status::unavailable(
        "the server is shutting down; the scan stopped early (resume after the last row received)",
    )
}
