//! `Load`: the client streams a TSV file (a header message, then the bytes); the server
//! spools it to a temporary file, bounded only by disk, and bulk-loads it like `cellar
//! load`, atomically: a bad line (without `skip_bad_lines`) loads nothing.

use std::sync::Arc;
use std::time::Instant;

use cellar_load::{LoadError, LoadSpec, NoProgress};
use cellar_proto::v1 as pb;
use prost::Message;
use tokio::io::AsyncWriteExt;
use tonic::{Status, Streaming};

use super::auth;
use super::convert::{self, ApiError};
use crate::metrics::Protocol;
use crate::state::ServerState;

/// Parsed cells a load holds in memory before it spills sorted runs to disk: a server
/// shares its memory with everything else it serves.
const LOAD_MEMORY_BUDGET_BYTES: usize = 256 << 20;

pub async fn run(
    state: &Arc<ServerState>,
    mut stream: Streaming<pb::LoadRequest>,
) -> Result<pb::LoadResponse, Status> {
    let started = Instant::now();
    let result = receive_and_load(state, &mut stream).await;
    state.finish_request(Protocol::Grpc, "Load", started.elapsed(), result.is_ok());
    result
}

async fn receive_and_load(
    state: &Arc<ServerState>,
    stream: &mut Streaming<pb::LoadRequest>,
) -> Result<pb::LoadResponse, Status> {
    let header = match next_message(state, stream).await? {
        Some(pb::LoadRequest {
            part: Some(pb::load_request::Part::Header(h)),
        }) => h,
        _ => {
            return Err(convert::invalid(
                "a Load stream must start with a LoadHeader message (field `header`)",
            ))
        }
    };
    convert::require_table(&header.table)?;
    // Refuse an unknown table before receiving the data.
    let table = state.table(&header.table).map_err(convert::table_status)?;
    let suffix = if header.gzip { ".tsv.gz" } else { ".tsv" };
    let spool = tempfile::Builder::new()
        .prefix("cellar-grpc-load-")
        .suffix(suffix)
        .tempfile()
        .map_err(|e| {
            Status::internal(format!("cannot create a temporary file for the load: {e}"))
        })?;
    let file = spool
        .as_file()
        .try_clone()
        .map_err(|e| Status::internal(format!("cannot open the load's temporary file: {e}")))?;
    let mut file = tokio::fs::File::from_std(file);
    while let Some(message) = next_message(state, stream).await? {
        match message.part {
            Some(pb::load_request::Part::Data(bytes)) => {
                file.write_all(&bytes).await.map_err(|e| {
                    Status::resource_exhausted(format!(
                        "cannot spool the load to a temporary file (disk full?): {e}"
                    ))
                })?;
            }
            Some(pb::load_request::Part::Header(_)) => {
                return Err(convert::invalid(
                    "a Load stream has one LoadHeader, as its first message",
                ))
            }
            None => {
                return Err(convert::invalid(
                    "a Load message holds neither header nor data",
                ))
            }
        }
    }
    file.flush()
        .await
        .map_err(|e| Status::internal(format!("cannot write the load's temporary file: {e}")))?;
    drop(file);
    let path = spool.path().to_path_buf();
    let spec = LoadSpec {
        files: vec![path.clone()],
        row_key_column: non_empty(header.row_key_column),
        timestamp_column: non_empty(header.timestamp_column),
        ignore_unknown_columns: header.ignore_unknown_columns,
        skip_bad_lines: header.skip_bad_lines,
        memory_budget_bytes: LOAD_MEMORY_BUDGET_BYTES,
        ..LoadSpec::default()
    };
    let loaded = tokio::task::spawn_blocking(move || {
        let stats = cellar_load::load_into_table(&table, &spec, &NoProgress);
        drop(spool);
        stats
    })
    .await
    .map_err(|e| ApiError::from(crate::state::BlockingTaskFailed(e.to_string())))?;
    let stats = loaded.map_err(|e| load_status(e, &path.to_string_lossy()))?;
    Ok(pb::LoadResponse {
        lines: stats.lines,
        cells: stats.cells,
        bad_lines: stats.bad_lines_skipped,
        bytes: stats.input_bytes,
    })
}

async fn next_message(
    state: &ServerState,
    stream: &mut Streaming<pb::LoadRequest>,
) -> Result<Option<pb::LoadRequest>, Status> {
    match stream.message().await {
        Ok(Some(m)) => {
            state.metrics.received(Protocol::Grpc, m.encoded_len());
            Ok(Some(m))
        }
        Ok(None) => Ok(None),
        Err(s) if auth::is_oversized_status(&s) => {
            state.metrics.limit_hit("request_bytes");
            Err(auth::oversized(state.config.limits.max_request_bytes))
        }
        Err(s) => Err(s),
    }
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// The load's error, with the temporary file's name replaced by what the client sent.
fn load_status(e: LoadError, spool_path: &str) -> Status {
    let message = e.to_string().replace(spool_path, "the streamed data");
    match e {
        LoadError::BadLine { .. } | LoadError::BadHeader { .. } | LoadError::InvalidArgument(_) => {
            Status::invalid_argument(message)
        }
        LoadError::Io { .. } | LoadError::Engine(_) => Status::internal(message),
    }
}
