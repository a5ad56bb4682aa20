//! One HTTP connection: TLS (when configured), hyper's HTTP/1.1 and HTTP/2 with a header
//! deadline, byte counting for the metrics, the idle limit, and a graceful end on shutdown.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::{HEADER_READ_TIMEOUT, TLS_HANDSHAKE_TIMEOUT};
use crate::metrics::Protocol;
use crate::state::{ConnectionSlot, ServerState};

/// Bytes counted locally before they are added to the shared counters.
const COUNT_FLUSH_BYTES: u64 = 64 << 10;

/// An admitted connection, ready to serve.
pub(super) struct Connection {
    pub state: Arc<ServerState>,
    pub app: Router,
    pub tls: Option<TlsAcceptor>,
    pub shutdown: CancellationToken,
    pub slot: ConnectionSlot,
}

impl Connection {
    pub async fn run(self, stream: TcpStream) {
        if self.shutdown.is_cancelled() {
            // Accepted in the instant the shutdown began (the accept and the cancellation
            // were ready together). hyper's graceful end would close it unanswered, which a
            // client reads as an empty reply; it gets the draining listener's 503 instead.
            let reason = super::ApiError::ShuttingDown.to_string();
            return refuse(stream, self.tls.clone(), reason).await;
        }
        let idle = self.state.config.limits.idle_timeout;
        match self.tls.clone() {
            None => {
                let io = MeteredIo::new(stream, Arc::clone(&self.state), idle);
                self.serve_io(io).await
            }
            Some(acceptor) => {
                match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => {
                        let io = MeteredIo::new(tls, Arc::clone(&self.state), idle);
                        self.serve_io(io).await
                    }
                    Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake failed"),
                    Err(_) => tracing::debug!("TLS handshake timed out"),
                }
            }
        }
    }

    async fn serve_io<T>(self, io: MeteredIo<T>)
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let mut builder = Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .max_buf_size(64 << 10);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_header_list_size(64 << 10);
        let service = TowerToHyperService::new(self.app);
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
        tokio::pin!(conn);
        let result = tokio::select! {
            r = conn.as_mut() => r,
            _ = self.shutdown.cancelled() => {
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        };
        if let Err(e) = result {
            tracing::debug!(error = %e, "HTTP connection ended with an error");
        }
        drop(self.slot);
    }
}

/// Answers a connection that will not be served (`--max-connections`, shutdown) with a
/// `503` naming `reason`, over TLS when the listener has it, and closes it.
pub(super) async fn refuse(stream: TcpStream, tls: Option<TlsAcceptor>, reason: String) {
    match tls {
        None => refuse_io(stream, &reason).await,
        Some(acceptor) => {
            if let Ok(Ok(s)) =
                tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
            {
                refuse_io(s, &reason).await
            }
        }
    }
}

async fn refuse_io<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, reason: &str) {
    // The same body and retry-after as a handler's 503 (`ApiError::ShuttingDown`).
    let body = super::error::json_body(reason);
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: {}\r\nconnection: close\r\n\r\n{body}",
        body.len(),
        super::error::RETRY_AFTER_SECS
    );
    // Closing a socket whose received bytes were not read sends a reset, and a client that
    // gets it before reading the answer sees only "connection reset". So the request's head
    // is read first (it may come late, or in pieces, from a loaded client), and after the
    // answer whatever else the client sends until it closes (a lingering close, as HTTP
    // servers do), each within a bound.
    let _ = tokio::time::timeout(REFUSE_READ_TIMEOUT, read_head(&mut stream)).await;
    let answered = tokio::time::timeout(Duration::from_secs(5), async {
        stream.write_all(reply.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
    if matches!(answered, Ok(Ok(()))) {
        let _ = tokio::time::timeout(REFUSE_READ_TIMEOUT, discard_until_closed(&mut stream)).await;
    }
}

/// How long a refused connection waits for its request, and then for the client to close.
const REFUSE_READ_TIMEOUT: Duration = Duration::from_secs(1);

/// Reads until the end of a request head (a blank line), the end of the stream, or 16 KiB.
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while head.len() < 16 << 10 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
}

/// Reads and drops bytes until the client closes (or the stream fails).
async fn discard_until_closed<S: AsyncRead + Unpin>(stream: &mut S) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            return;
        }
    }
}

/// A connection's byte stream, counted into `cellar_received_bytes`/`cellar_sent_bytes`
/// and cut after `--idle-timeout` without any traffic.
pub(super) struct MeteredIo<T> {
    inner: T,
    state: Arc<ServerState>,
    read: u64,
    written: u64,
    idle: Option<Duration>,
    idle_deadline: Option<Pin<Box<Sleep>>>,
}

impl<T> MeteredIo<T> {
    fn new(inner: T, state: Arc<ServerState>, idle: Option<Duration>) -> Self {
        MeteredIo {
            inner,
            state,
            read: 0,
            written: 0,
            idle,
            idle_deadline: idle.map(|d| Box::pin(tokio::time::sleep(d))),
        }
    }

    fn activity(&mut self) {
        if let (Some(d), Some(sleep)) = (self.idle, self.idle_deadline.as_mut()) {
            sleep.as_mut().reset(tokio::time::Instant::now() + d);
        }
        if self.read >= COUNT_FLUSH_BYTES || self.written >= COUNT_FLUSH_BYTES {
            self.flush_counts();
        }
    }

    fn flush_counts(&mut self) {
        if self.read > 0 {
            self.state
                .metrics
                .received(Protocol::Http, self.read as usize);
        }
        if self.written > 0 {
            self.state
                .metrics
                .sent(Protocol::Http, self.written as usize);
        }
        self.read = 0;
        self.written = 0;
    }
}

impl<T> Drop for MeteredIo<T> {
    fn drop(&mut self) {
        self.flush_counts();
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for MeteredIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                self.read += (buf.filled().len() - before) as u64;
                self.activity();
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                if let Some(sleep) = self.idle_deadline.as_mut() {
                    if sleep.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "connection idle longer than --idle-timeout",
                        )));
                    }
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for MeteredIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.written += n as u64;
            self.activity();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServeConfig;
    use cellar_table::CellStore;
    use tokio::net::TcpListener;

    /// Regression: a connection accepted in the instant the shutdown began was closed
    /// unanswered by hyper's graceful end (an empty reply), where a client must read the 503.
    #[tokio::test]
    async fn a_connection_accepted_as_the_shutdown_begins_reads_the_503() {
        let dir = tempfile::tempdir().unwrap();
        let config = ServeConfig::local(dir.path().join("db"));
        let store = CellStore::open(&config.db, config.store.options()).unwrap();
        let state = ServerState::new(store, config);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        let connection = Connection {
            slot: state.admit(Protocol::Http).unwrap(),
            app: super::super::router(Arc::clone(&state)),
            state,
            tls: None,
            shutdown,
        };
        let served = tokio::spawn(connection.run(stream));
        client
            .write_all(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let mut reply = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), client.read_to_end(&mut reply))
            .await
            .unwrap()
            .unwrap();
        let reply = String::from_utf8_lossy(&reply);
        assert!(reply.starts_with("HTTP/1.1 503"), "{reply:?}");
        assert!(reply.contains("shutting down"), "{reply:?}");
        served.await.unwrap();
    }
}
