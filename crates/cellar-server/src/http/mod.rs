//! The HTTP listener: REST (`rest.rs`, `scan.rs`), Prometheus metrics (`metrics.rs`),
//! `/health` and the status page (`status.rs`), on axum.
//!
//! Each accepted connection is admitted against `--max-connections` (a refused one gets a
//! `503` and is closed), optionally wrapped in TLS (`tls.rs`), and served by hyper
//! (`conn.rs`) with a deadline on reading request headers, so slow clients cannot hold a
//! connection without sending a request, and `--idle-timeout` when set. Every request
//! except `/health` must carry `Authorization: Bearer <token>` when the server has a
//! token. Bodies are capped at `--max-request-bytes` (`413`), and a handler at
//! `--request-timeout` (`504`); a streamed scan's client must take each chunk within that
//! time. Errors are JSON: `{"error": "..."}`.
//!
//! Shutdown: the listener stops serving new requests, lets those in flight finish, and
//! meanwhile answers new connections with a `503` (so `/health` probes fail).

mod conn;
mod error;
mod json;
mod metrics;
mod query;
mod rest;
mod scan;
mod status;
mod svg;
mod tls;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::metrics::Protocol;
use crate::serve::ServeError;
use crate::state::ServerState;

pub use error::ApiError;

/// How long a TLS handshake may take.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for a request's headers once a connection is open or a response sent.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves connections from `listener` until `shutdown` is cancelled, then lets requests in
/// flight finish (the server's `--shutdown-timeout` bounds the wait).
pub async fn serve(
    listener: TcpListener,
    state: Arc<ServerState>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let tls = match &state.config.tls {
        Some(files) => Some(tls::acceptor(files)?),
        None => None,
    };
    let mut app = router(Arc::clone(&state));
    if let Ok(addr) = listener.local_addr() {
        app = app.layer(axum::Extension(status::HttpAddr(addr)));
    }
    let connections = TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: pause instead of spinning.
                    tracing::warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let slot = match state.admit(Protocol::Http) {
            Ok(slot) => slot,
            Err(full) => {
                connections.spawn(conn::refuse(stream, tls.clone(), full.to_string()));
                continue;
            }
        };
        let connection = conn::Connection {
            state: Arc::clone(&state),
            app: app.clone(),
            tls: tls.clone(),
            shutdown: shutdown.clone(),
            slot,
        };
        tracing::trace!(%peer, "HTTP connection");
        connections.spawn(connection.run(stream));
    }
    drain(listener, connections, tls).await;
    Ok(())
}

/// Waits for the requests in flight; meanwhile new connections are told why they are not
/// served (a 503, which also fails `/health` probes) instead of being refused unseen.
async fn drain(listener: TcpListener, connections: TaskTracker, tls: Option<TlsAcceptor>) {
    connections.close();
    let drained = connections.wait();
    tokio::pin!(drained);
    loop {
        tokio::select! {
            _ = &mut drained => return,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(conn::refuse(stream, tls.clone(), ApiError::ShuttingDown.to_string()));
                }
            }
        }
    }
}

/// Every route, with the token check, body limit and request deadline.
pub fn router(state: Arc<ServerState>) -> Router {
    let limit = state.config.limits.max_request_bytes;
    let api = Router::new()
        .route("/", get(status::page))
        .route("/metrics", get(metrics::scrape))
        .route("/tables", get(rest::list_tables))
        .route("/{table}/schema", get(rest::schema))
        .route("/{table}/scan", get(scan::scan))
        .route(
            "/{table}/{row}",
            get(rest::get_row)
                .put(rest::put_row)
                .delete(rest::delete_row),
        )
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            request_deadline,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            require_token,
        ));
    Router::new()
        .route("/health", get(health))
        .merge(api)
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            refuse_announced_oversize,
        ))
        .with_state(state)
}

/// `200 ok` while serving; while shutting down the same JSON 503 that a connection refused
/// by the draining listener gets, since a probe may land on either side of that switch.
async fn health(State(state): State<Arc<ServerState>>) -> Response {
    if state.is_shutting_down() {
        ApiError::ShuttingDown.into_response()
    } else {
        (StatusCode::OK, "ok\n").into_response()
    }
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint (see docs/server.md, \"REST\")".into())
}

/// Answers `413` at once when `Content-Length` announces more than the limit, instead of
/// reading up to the limit first (the body limit itself catches chunked bodies).
async fn refuse_announced_oversize(
    State(state): State<Arc<ServerState>>,
    req: Request,
    next: Next,
) -> Response {
    let limit = state.config.limits.max_request_bytes;
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        state.metrics.limit_hit("request_bytes");
        return ApiError::TooLarge(limit).into_response();
    }
    next.run(req).await
}

/// Refuses a request without the server's bearer token.
async fn require_token(
    State(state): State<Arc<ServerState>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(token) = &state.config.token else {
        return next.run(req).await;
    };
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(g) if constant_time_eq(g.trim().as_bytes(), token.as_bytes()) => next.run(req).await,
        Some(_) => ApiError::Unauthorized("the bearer token is wrong".into()).into_response(),
        None => ApiError::Unauthorized(
            "this server requires a token: send `Authorization: Bearer <token>`".into(),
        )
        .into_response(),
    }
}

/// Compares without stopping at the first difference, so timing does not leak a prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Answers `504` when a handler takes longer than `--request-timeout`.
async fn request_deadline(
    State(state): State<Arc<ServerState>>,
    req: Request,
    next: Next,
) -> Response {
    let limit = state.config.limits.request_timeout;
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => {
            state.metrics.limit_hit("request_timeout");
            ApiError::Timeout(limit).into_response()
        }
    }
}
