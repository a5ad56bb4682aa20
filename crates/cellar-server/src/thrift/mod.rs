//! Placeholder: the thrift listener.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::serve::ServeError;
use crate::state::ServerState;

/// Serves connections from `listener` until `shutdown` is cancelled.
pub async fn serve(
    listener: TcpListener,
    state: Arc<ServerState>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let _ = (listener, state);
    shutdown.cancelled().await;
    Ok(())
}
