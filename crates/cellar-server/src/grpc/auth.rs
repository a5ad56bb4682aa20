//! What every gRPC request passes before its handler: the server is not shutting down,
//! and it carries the bearer token when `--token-file` is set. A [`Guard`] wraps the
//! generated service, so the check covers every method, present and future; it also turns
//! tonic's answer to an oversized request into `RESOURCE_EXHAUSTED` naming the flag, and
//! hands `Mutate` to [`super::mutate`], which reads the request's bytes itself.

use std::convert::Infallible;
use std::sync::Arc;

use tonic::body::Body;
use tonic::codegen::{http, BoxFuture, Context, Poll, Service};
use tonic::server::NamedService;
use tonic::Status;

use crate::state::ServerState;

/// Wraps the generated `CellarServer`.
#[derive(Clone)]
pub struct Guard<S> {
    inner: S,
    state: Arc<ServerState>,
}

impl<S> Guard<S> {
    pub fn new(inner: S, state: Arc<ServerState>) -> Self {
        Guard { inner, state }
    }
}

impl<S: NamedService> NamedService for Guard<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<Body>> for Guard<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        if let Err(status) = admit(&self.state, req.headers()) {
            return Box::pin(std::future::ready(Ok(status.into_http())));
        }
        let call: Self::Future = if req.uri().path() == super::mutate::PATH {
            super::mutate::serve(Arc::clone(&self.state), req)
        } else {
            Box::pin(self.inner.call(req))
        };
        let state = Arc::clone(&self.state);
        Box::pin(async move {
            let mut response = call.await?;
            if is_oversized(response.headers()) {
                state.metrics.limit_hit("request_bytes");
                *response.headers_mut() = oversized(state.config.limits.max_request_bytes)
                    .into_http::<Body>()
                    .headers()
                    .clone();
            }
            Ok(response)
        })
    }
}

/// Refuses requests while shutting down, and requests without the right token.
pub fn admit(state: &ServerState, headers: &http::HeaderMap) -> Result<(), Status> {
    if state.is_shutting_down() {
        return Err(Status::unavailable(
            "the server is shutting down; retry on another server or after it restarts",
        ));
    }
    let Some(expected) = state.config.token.as_deref() else {
        return Ok(());
    };
    let given = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        None => Err(Status::unauthenticated(
            "this server requires a token: send the metadata `authorization: Bearer TOKEN` \
             (the token is in the server's --token-file)",
        )),
        Some(t) if constant_time_eq(t.trim().as_bytes(), expected.as_bytes()) => Ok(()),
        Some(_) => Err(Status::unauthenticated(
            "wrong token in `authorization: Bearer TOKEN` (compare with the server's --token-file)",
        )),
    }
}

/// Equality whose time depends only on the lengths, so a client cannot find the token a
/// byte at a time by timing refusals.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// tonic answers a request over the decoding limit with OUT_OF_RANGE and this message
/// (a reply over the encoding limit says "encoded" and keeps its code).
fn is_oversized(headers: &http::HeaderMap) -> bool {
    headers.get("grpc-status").is_some_and(|s| s == "11")
        && headers
            .get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .is_some_and(|m| {
                m.contains("decoded%20message%20length%20too%20large")
                    || m.contains("decoded message length too large")
            })
}

/// The status of a request (or a streamed message) over `--max-request-bytes`.
pub fn oversized(limit: usize) -> Status {
    Status::resource_exhausted(format!(
        "the request is larger than the server accepts (--max-request-bytes = {limit} bytes): \
         send smaller batches"
    ))
}

/// Whether a status is tonic's own refusal of an oversized message.
pub fn is_oversized_status(status: &Status) -> bool {
    status.code() == tonic::Code::OutOfRange
        && status
            .message()
            .contains("decoded message length too large")
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn constant_time_eq_compares_bytes() {
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        assert!(!constant_time_eq(b"s3cret", b"s3creT"));
        assert!(!constant_time_eq(b"s3cret", b"s3cre"));
        assert!(constant_time_eq(b"", b""));
    }
}
