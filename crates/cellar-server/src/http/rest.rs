//! REST in the spirit of HBase's REST server, in JSON (shapes and the binary-safe rule:
//! `json.rs`).
//!
//! | request | answer |
//! |---|---|
//! | `GET /tables` | `{"tables": ["name", ...]}` |
//! | `GET /{table}/schema` | `{"name", "enabled", "families": [{"name", "max_versions", "ttl_seconds", "compression", "block_size_bytes", "bloom_filter"}]}` |
//! | `GET /{table}/{row}?column=cf[:q]&v=N` | a row (`json.rs`); `404` when it has no cells |
//! | `PUT /{table}/{row}` body `{"cells": [{"column", "value", "timestamp"?}], "durability"?}` | `{"written": n, "timestamps": [...]}`, all cells in one atomic batch |
//! | `DELETE /{table}/{row}?column=cf[:q]` | `{"deleted": true}`; the whole row without `column` |
//! | `GET /{table}/scan?...` | newline-delimited rows (`scan.rs`) |
//!
//! `{table}` and `{row}` are percent-decoded to bytes, so any row key can be named
//! (`%FF` for byte 255). `column` may be repeated, and `column_b64` used instead. The rows
//! named `schema` and `scan` are reached with a scan (`/{table}/scan?start=scan&limit=1`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::Json;
use cellar_engine::Durability;
use cellar_table::{ColumnSelector, ScanSpec, WriterOptions};
use serde_json::json;

use super::error::body_error;
use super::json::{row_json, ColumnName, PutBody};
use super::query::{percent_decode, Query};
use super::ApiError;
use crate::metrics::Protocol;
use crate::state::ServerState;

/// `{table}` and (when present) `{row}` of the request's path, percent-decoded to bytes.
/// Read from the URI itself: axum's path extractors insist on UTF-8, row keys do not.
pub(super) fn path_parts(uri: &Uri) -> Result<(String, Vec<u8>), ApiError> {
    let path = uri.path().strip_prefix('/').unwrap_or(uri.path());
    let (table, row) = path.split_once('/').unwrap_or((path, ""));
    let table = String::from_utf8(percent_decode(table, false)?)
        .map_err(|_| ApiError::BadRequest("the table name in the path is not UTF-8".into()))?;
    if table.is_empty() {
        return Err(ApiError::BadRequest("the path names no table".into()));
    }
    Ok((table, percent_decode(row, false)?))
}

/// Column selectors from repeated `column=` parameters.
pub(super) fn column_selectors(query: &Query) -> Result<Vec<ColumnSelector>, ApiError> {
    query
        .all("column")?
        .iter()
        .map(|c| {
            let c = ColumnName::parse(c)?;
            Ok(match c.qualifier {
                Some(qualifier) => ColumnSelector::Column {
                    family: c.family,
                    qualifier,
                },
                None => ColumnSelector::Family(c.family),
            })
        })
        .collect()
}

pub(super) async fn list_tables(
    State(state): State<Arc<ServerState>>,
) -> Result<Response, ApiError> {
    let tables = state
        .run_blocking(Protocol::Http, "tables", |s| {
            Ok::<_, ApiError>(s.store.list_tables())
        })
        .await?;
    Ok(Json(json!({ "tables": tables })).into_response())
}

pub(super) async fn schema(
    State(state): State<Arc<ServerState>>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let (table, _) = path_parts(&uri)?;
    let body = state
        .run_blocking(Protocol::Http, "schema", move |s| {
            let schema = s.store.describe(&table)?;
            let enabled = s.is_enabled(&table)?;
            let families: Vec<_> = schema
                .families
                .iter()
                .map(|f| {
                    json!({
                        "name": f.name,
                        "max_versions": f.options.max_versions,
                        "ttl_seconds": f.options.ttl.map(|t| t.as_secs()),
                        "compression": f.options.compression,
                        "block_size_bytes": f.options.block_size_bytes,
                        "bloom_filter": f.options.bloom_filter,
                    })
                })
                .collect();
            Ok::<_, ApiError>(json!({
                "name": schema.name,
                "enabled": enabled,
                "families": families,
            }))
        })
        .await?;
    Ok(Json(body).into_response())
}

pub(super) async fn get_row(
    State(state): State<Arc<ServerState>>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let (table, row) = path_parts(&uri)?;
    let query = Query::parse(uri.query())?;
    let spec = ScanSpec {
        columns: column_selectors(&query)?,
        max_versions: query.number::<u32>("v")?,
        ..ScanSpec::row(&row)
    };
    let body = state
        .run_blocking(Protocol::Http, "get", move |s| {
            let cells = s
                .table(&table)?
                .scan(spec)?
                .collect::<cellar_table::Result<Vec<_>>>()?;
            if cells.is_empty() {
                return Err(ApiError::NotFound(format!(
                    "row {:?} of table {table:?} has no cells{}",
                    String::from_utf8_lossy(&row),
                    " (in the columns asked for)"
                )));
            }
            Ok(row_json(&row, &cells))
        })
        .await?;
    Ok(Json(body).into_response())
}

fn parse_durability(text: Option<&str>, default: Durability) -> Result<Durability, ApiError> {
    match text {
        None => Ok(default),
        Some("buffered") => Ok(Durability::Buffered),
        Some("flush") => Ok(Durability::Flush),
        Some("sync") => Ok(Durability::Sync),
        Some(other) => Err(ApiError::BadRequest(format!(
            "durability {other:?} is not one of buffered, flush, sync"
        ))),
    }
}

pub(super) async fn put_row(
    State(state): State<Arc<ServerState>>,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let (table, row) = path_parts(&uri)?;
    let body = body.map_err(|e| {
        let e = body_error(e, state.config.limits.max_request_bytes);
        if matches!(e, ApiError::TooLarge(_)) {
            state.metrics.limit_hit("request_bytes");
        }
        e
    })?;
    let put: PutBody = serde_json::from_slice(&body)
        .map_err(|e| ApiError::BadRequest(format!("the body is not a valid cell list: {e}")))?;
    if put.cells.is_empty() {
        return Err(ApiError::BadRequest("the body has no cells".into()));
    }
    let durability = parse_durability(put.durability.as_deref(), state.default_durability())?;
    let mut cells = Vec::with_capacity(put.cells.len());
    for c in &put.cells {
        cells.push((c.column()?, c.value()?, c.timestamp));
    }
    let timestamps = state
        .run_blocking(Protocol::Http, "put", move |s| {
            let table = s.table(&table)?;
            for (column, value, ts) in &cells {
                let q = column.qualifier.as_deref().unwrap_or_default();
                table.check_put(&row, &column.family, q, *ts, value)?;
            }
            // One batch, written once: the cells of one request land atomically.
            let mut writer = table.writer(WriterOptions {
                buffer_size_bytes: usize::MAX,
                durability,
            });
            let mut timestamps = Vec::with_capacity(cells.len());
            for (column, value, ts) in &cells {
                let q = column.qualifier.as_deref().unwrap_or_default();
                timestamps.push(writer.put(&row, &column.family, q, *ts, value)?);
            }
            writer.flush()?;
            Ok::<_, ApiError>(timestamps)
        })
        .await?;
    Ok(Json(json!({ "written": timestamps.len(), "timestamps": timestamps })).into_response())
}

pub(super) async fn delete_row(
    State(state): State<Arc<ServerState>>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let (table, row) = path_parts(&uri)?;
    let query = Query::parse(uri.query())?;
    let columns = query
        .all("column")?
        .iter()
        .map(|c| ColumnName::parse(c))
        .collect::<Result<Vec<_>, _>>()?;
    let durability = parse_durability(
        query.text("durability")?.as_deref(),
        state.default_durability(),
    )?;
    state
        .run_blocking(Protocol::Http, "delete", move |s| {
            let table = s.table(&table)?;
            let mut writer = table.writer(WriterOptions {
                buffer_size_bytes: usize::MAX,
                durability,
            });
            if columns.is_empty() {
                writer.delete_row(&row)?;
            }
            for c in &columns {
                match &c.qualifier {
                    Some(q) => writer.delete_column(&row, &c.family, q)?,
                    None => writer.delete_family(&row, &c.family)?,
                }
            }
            writer.flush()?;
            Ok::<_, ApiError>(())
        })
        .await?;
    Ok(Json(json!({ "deleted": true })).into_response())
}
