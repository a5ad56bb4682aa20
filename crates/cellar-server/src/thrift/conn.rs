//! One connection: detect its transport and protocol, then read a whole message, run it
//! on the blocking pool, write the reply; repeat until the client leaves, a message is
//! malformed or too large, or the server shuts down (between requests).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::handler::{self, CallContext, Method};
use super::idl::{self, Fields, ThriftError};
use super::protocol::{self, DecodeError, Message, MessageEnd, Proto, Writer};
use super::transport::{self, Detected, Framing};
use crate::metrics::Protocol;
use crate::state::ServerState;

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 64 << 10;

/// Why a connection ends.
#[derive(Debug)]
enum End {
    /// The client closed, or the server is shutting down: nothing to log.
    Quiet,
    /// Logged as a warning, with the peer.
    Warn(String),
}

/// Everything a connection uses.
pub struct Conn {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub state: Arc<ServerState>,
    pub ctx: CallContext,
    pub shutdown: CancellationToken,
}

impl Conn {
    /// Serves the connection to its end; its scanners are closed afterwards.
    pub async fn run(mut self) {
        let end = self.serve().await;
        self.ctx
            .scanners
            .close_connection(self.ctx.conn, &self.state.metrics);
        if let End::Warn(why) = end {
            tracing::warn!(peer = %self.peer, "thrift connection closed: {why}");
        }
    }

    async fn serve(&mut self) -> End {
        let mut buf = Vec::new();
        let wire = loop {
            match transport::detect(&buf) {
                Detected::Wire(w) => break w,
                Detected::Garbage(why) => return End::Warn(format!("not a Thrift client: {why}")),
                Detected::NeedMore => {
                    if let Err(end) = self.read_more(&mut buf).await {
                        return end;
                    }
                }
            }
        };
        tracing::debug!(peer = %self.peer, %wire, "thrift connection");
        loop {
            let message = match wire.framing {
                Framing::Framed => self.read_frame(&mut buf).await,
                Framing::Buffered => self.read_unframed(&mut buf, wire.proto).await,
            };
            let bytes = match message {
                Ok(b) => b,
                Err(end) => return end,
            };
            // A large request's buffer is not kept for the connection's lifetime.
            if buf.capacity() > 4 * READ_CHUNK && buf.len() < READ_CHUNK {
                buf.shrink_to(READ_CHUNK);
            }
            self.state.metrics.received(Protocol::Thrift, bytes.len());
            let msg = match protocol::decode_message(&bytes, wire.proto) {
                Ok(m) => m,
                Err(e) => return self.refuse(&e),
            };
            if let Some(reply) = self.answer(msg, wire.proto).await {
                let out = transport::frame(wire, reply);
                self.state.metrics.sent(Protocol::Thrift, out.len());
                if let Err(e) = self.stream.write_all(&out).await {
                    return End::Warn(format!("writing a reply failed: {e}"));
                }
            }
        }
    }

    fn refuse(&self, e: &DecodeError) -> End {
        if matches!(e, DecodeError::TooDeep | DecodeError::TooManyValues) {
            self.state.metrics.limit_hit("message_shape");
        }
        End::Warn(format!("bad message: {e}"))
    }

    /// Reads at least one more byte into `buf`. Ends on EOF, error, idle timeout or
    /// shutdown.
    async fn read_more(&mut self, buf: &mut Vec<u8>) -> Result<(), End> {
        buf.reserve(READ_CHUNK);
        let idle = self.state.config.limits.idle_timeout;
        let read = self.stream.read_buf(buf);
        let result = tokio::select! {
            biased;
            _ = self.shutdown.cancelled() => return Err(End::Quiet),
            r = async {
                match idle {
                    Some(w) => tokio::time::timeout(w, read).await.ok(),
                    None => Some(read.await),
                }
            } => r,
        };
        match result {
            None => {
                self.state.metrics.limit_hit("idle_timeout");
                Err(End::Warn("idle for longer than --idle-timeout".to_string()))
            }
            Some(Ok(0)) if buf.is_empty() => Err(End::Quiet),
            Some(Ok(0)) => Err(End::Warn(format!(
                "the client closed the connection in the middle of a message ({} bytes \
                 received)",
                buf.len()
            ))),
            Some(Ok(_)) => Ok(()),
            Some(Err(e)) => Err(End::Warn(format!("reading failed: {e}"))),
        }
    }

    fn too_large(&self, announced: u64) -> End {
        self.state.metrics.limit_hit("request_bytes");
        End::Warn(format!(
            "message of {announced} bytes refused: larger than --max-request-bytes ({})",
            self.state.config.limits.max_request_bytes
        ))
    }

    /// One frame's payload: the 4-byte length is checked before the payload is read,
    /// and the buffer grows only as bytes arrive.
    async fn read_frame(&mut self, buf: &mut Vec<u8>) -> Result<Vec<u8>, End> {
        while buf.len() < 4 {
            self.read_more(buf).await?;
        }
        let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        if len > self.state.config.limits.max_request_bytes || len > i32::MAX as usize {
            return Err(self.too_large(len as u64));
        }
        while buf.len() < 4 + len {
            self.read_more(buf).await?;
        }
        let payload = buf[4..4 + len].to_vec();
        buf.drain(..4 + len);
        Ok(payload)
    }

    /// One unframed message: its walk resumes as each read adds bytes, so the message is
    /// taken the moment its last byte arrives and each byte is walked once.
    async fn read_unframed(&mut self, buf: &mut Vec<u8>, proto: Proto) -> Result<Vec<u8>, End> {
        let max = self.state.config.limits.max_request_bytes;
        let mut end = MessageEnd::new(proto);
        loop {
            // Bytes of this message may already be here, read with the last one.
            if !buf.is_empty() {
                match end.advance(buf) {
                    Ok(Some(n)) => {
                        if n > max {
                            return Err(self.too_large(n as u64));
                        }
                        let msg = buf[..n].to_vec();
                        buf.drain(..n);
                        return Ok(msg);
                    }
                    Ok(None) => {}
                    Err(e) => return Err(self.refuse(&e)),
                }
            }
            if buf.len() > max {
                return Err(self.too_large(buf.len() as u64));
            }
            self.read_more(buf).await?;
        }
    }

    /// The reply to one call (none for a oneway call).
    async fn answer(&self, msg: Message, proto: Proto) -> Option<Vec<u8>> {
        let Message {
            name,
            kind,
            seqid,
            body,
        } = msg;
        let oneway = kind == protocol::ONEWAY;
        let Some(method) = handler::lookup(&name) else {
            tracing::debug!(peer = %self.peer, method = %name, "unknown thrift method");
            self.state
                .finish_request(Protocol::Thrift, "unknown", Duration::ZERO, false);
            let text =
                format!("Invalid method name: '{name}' (the Cellar gateway does not implement it)");
            return (!oneway)
                .then(|| app_exception(proto, &name, seqid, idl::UNKNOWN_METHOD, &text));
        };
        if kind != protocol::CALL && !oneway {
            let text = format!("message type {kind} is not a call");
            return Some(app_exception(
                proto,
                &name,
                seqid,
                idl::PROTOCOL_ERROR,
                &text,
            ));
        }
        let ctx = self.ctx.clone();
        let result = self
            .state
            .run_blocking(Protocol::Thrift, method.name, move |st| {
                let success = handler::call(&ctx, st, method.name, Fields(&body))?;
                let mut w = Writer::new(proto);
                w.message_begin(method.name, protocol::REPLY, seqid);
                w.struct_begin();
                success.encode(&mut w);
                w.struct_end();
                Ok::<_, ThriftError>(w.into_bytes())
            })
            .await;
        if oneway {
            return None;
        }
        Some(match result {
            Ok(bytes) => bytes,
            Err(e) => error_reply(proto, method, seqid, e),
        })
    }
}

/// A declared exception as the method's result; one the method does not declare is
/// sent as an `IOError`.
fn error_reply(proto: Proto, method: Method, seqid: i32, e: ThriftError) -> Vec<u8> {
    let e = match e {
        ThriftError::IllegalArgument(m) if !method.throws_illegal_argument => ThriftError::Io(m),
        ThriftError::AlreadyExists(m) if !method.throws_already_exists => ThriftError::Io(m),
        e => e,
    };
    let mut w = Writer::new(proto);
    w.message_begin(method.name, protocol::REPLY, seqid);
    w.struct_begin();
    e.encode(&mut w);
    w.struct_end();
    w.into_bytes()
}

/// A `TApplicationException` message.
pub fn app_exception(proto: Proto, name: &str, seqid: i32, kind: i32, text: &str) -> Vec<u8> {
    let mut w = Writer::new(proto);
    w.message_begin(name, protocol::EXCEPTION, seqid);
    idl::encode_application_exception(&mut w, kind, text);
    w.into_bytes()
}

/// Tells a connection over `--max-connections` why it is refused, in its own protocol
/// when its first bytes arrive soon, then closes it.
pub async fn reject(mut stream: TcpStream, peer: SocketAddr, why: String) {
    let mut buf = Vec::with_capacity(64);
    let first = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            match transport::detect(&buf) {
                Detected::Wire(w) => return Some(w),
                Detected::Garbage(_) => return None,
                Detected::NeedMore => {}
            }
            let mut chunk = [0u8; 64];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    tracing::warn!(%peer, "thrift connection refused: {why}");
    if let Ok(Some(wire)) = first {
        let reply = app_exception(wire.proto, "", 0, idl::INTERNAL_ERROR, &why);
        let _ = stream.write_all(&transport::frame(wire, reply)).await;
    }
    let _ = stream.shutdown().await;
}
