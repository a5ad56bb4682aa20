//! Accepted connections, each admitted against `--max-connections` (shared by every
//! listener): a connection over the limit is closed at once, and counted in
//! `cellar_rejected_connections` and `cellar_limit_hits{limit="connections"}`. An
//! admitted connection holds its slot until it closes.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::{Connected, TcpConnectInfo, TcpIncoming};

use crate::metrics::Protocol;
use crate::state::{ConnectionSlot, ServerState};

/// The admitted connections of `incoming`.
pub fn admitted(
    incoming: TcpIncoming,
    state: Arc<ServerState>,
) -> impl Stream<Item = io::Result<AdmittedStream>> {
    incoming.filter_map(move |accepted| match accepted {
        Ok(stream) => match state.admit(Protocol::Grpc) {
            Ok(slot) => Some(Ok(AdmittedStream {
                stream,
                _slot: slot,
            })),
            Err(e) => {
                tracing::warn!(peer = ?stream.peer_addr().ok(), "gRPC connection refused: {e}");
                None
            }
        },
        Err(e) => Some(Err(e)),
    })
}

/// A TCP connection and its slot among `--max-connections`.
pub struct AdmittedStream {
    stream: TcpStream,
    _slot: ConnectionSlot,
}

impl Connected for AdmittedStream {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for AdmittedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for AdmittedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
