//! HBase's Thrift1 gateway: happybase (and other Thrift1 clients) work unchanged.
//!
//! One port serves buffered and framed transports with the binary and compact protocols,
//! told apart from each connection's first bytes (`transport.rs`); replies use the same.
//! The protocol handling is written here rather than taken from a crate: the Apache
//! `thrift` crate is synchronous with one thread per connection and needs the C++ code
//! generator, and none of the async ones auto-detects all four combinations on one tokio
//! listener with the size checks this server needs before allocating.
//!
//! - `protocol.rs`, `writer.rs`: binary and compact reading (bounded) and writing;
//! - `message_end.rs`: where an unframed message ends, walked as its bytes arrive;
//! - `transport.rs`: framing detection;
//! - `idl.rs`: the `Hbase.thrift` structs used;
//! - `handler.rs` (admin), `data.rs` (reads), `write.rs`, `scan.rs`: the methods over the
//!   table layer, with HBase's semantics;
//! - `scanners.rs`: open scanners, their limits and idle expiry;
//! - `conn.rs`: one connection's loop.

pub mod conn;
pub mod data;
pub mod handler;
pub mod idl;
pub mod message_end;
pub mod protocol;
pub mod scan;
pub mod scanners;
pub mod transport;
pub mod write;
pub mod writer;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::metrics::Protocol;
use crate::serve::ServeError;
use crate::state::ServerState;

use self::handler::CallContext;
use self::scanners::ScannerRegistry;

/// Refused connections told why at once (each waits up to 2 s for the client's first
/// bytes, to answer in its protocol).
const MAX_REFUSALS_EXPLAINED: usize = 32;

/// Serves connections from `listener` until `shutdown` is cancelled, then waits for each
/// connection to finish its request in flight.
pub async fn serve(
    listener: TcpListener,
    state: Arc<ServerState>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let limits = &state.config.limits;
    let scanners = Arc::new(ScannerRegistry::new(
        limits.max_scanners_per_connection,
        limits.max_scanners,
        limits.scanner_idle_timeout,
    ));
    let local = listener.local_addr().map_err(|e| ServeError::Listener {
        listener: "the Thrift gateway",
        message: e.to_string(),
    })?;
    let tracker = TaskTracker::new();
    tracker.spawn(sweep_scanners(
        Arc::clone(&scanners),
        Arc::clone(&state),
        shutdown.clone(),
    ));
    let explainers = Arc::new(Semaphore::new(MAX_REFUSALS_EXPLAINED));
    let mut next_conn: u64 = 0;
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: wait rather than spin.
                tracing::warn!(error = %e, "thrift: accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let slot = match state.admit(Protocol::Thrift) {
            Ok(slot) => slot,
            Err(e) => {
                // Explaining takes a moment per refused socket; in a flood, just close.
                match Arc::clone(&explainers).try_acquire_owned() {
                    Ok(permit) => {
                        tracker.spawn(async move {
                            conn::reject(stream, peer, e.to_string()).await;
                            drop(permit);
                        });
                    }
                    Err(_) => tracing::warn!(%peer, "thrift connection refused: {e}"),
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let _ = socket2::SockRef::from(&stream).set_keepalive(true);
        next_conn += 1;
        let c = conn::Conn {
            stream,
            peer,
            state: Arc::clone(&state),
            ctx: CallContext {
                scanners: Arc::clone(&scanners),
                conn: next_conn,
                local,
            },
            shutdown: shutdown.clone(),
        };
        tracker.spawn(async move {
            c.run().await;
            drop(slot);
        });
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
    Ok(())
}

/// Closes scanners idle past `--scanner-idle-timeout`, checking a few times per timeout.
async fn sweep_scanners(
    scanners: Arc<ScannerRegistry>,
    state: Arc<ServerState>,
    shutdown: CancellationToken,
) {
    let every =
        (scanners.idle_timeout() / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let n = scanners.sweep(&state.metrics);
        if n > 0 {
            tracing::info!(
                expired = n,
                "thrift: closed scanners idle past --scanner-idle-timeout"
            );
        }
    }
}
