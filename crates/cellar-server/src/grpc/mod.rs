//! The gRPC listener: Cellar's own API (`proto/cellar/v1/cellar.proto`) on tonic.
//!
//! - [`service`]: the `Cellar` methods; [`convert`]: proto <-> table layer and error codes;
//!   [`mutate`]: `Mutate`, read from the request's bytes in place;
//!   [`scan`], [`hql`], [`load`]: the streaming methods; [`auth`]: the token and shutdown
//!   check every request passes, and the RESOURCE_EXHAUSTED answer to oversized requests.
//! - [`incoming`]: connections admitted against `--max-connections`.
//! - Limits: messages up to `--max-request-bytes` each way, `--request-timeout` per request
//!   (for a streaming scan: until it starts, and then per message the client reads).
//! - Optional TLS (`--tls-cert`/`--tls-key`, PEM, rustls).

pub mod auth;
pub mod convert;
pub mod hql;
pub mod incoming;
pub mod load;
pub mod mutate;
pub mod scan;
pub mod service;

use std::path::Path;
use std::sync::Arc;

use cellar_proto::v1::cellar_server::CellarServer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};

use crate::config::TlsFiles;
use crate::serve::ServeError;
use crate::state::ServerState;

/// Serves connections from `listener` until `shutdown` is cancelled; requests in flight
/// then finish (open scans end with UNAVAILABLE).
pub async fn serve(
    listener: TcpListener,
    state: Arc<ServerState>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let limits = &state.config.limits;
    let mut builder = Server::builder().timeout(limits.request_timeout);
    if let Some(tls) = &state.config.tls {
        builder = builder.tls_config(tls_config(tls)?).map_err(|e| {
            ServeError::Tls(format!(
                "the certificate {} or key {} is not usable: {e}",
                tls.cert.display(),
                tls.key.display()
            ))
        })?;
    }
    let service = service::CellarService::new(Arc::clone(&state), shutdown.clone());
    let server = CellarServer::new(service)
        .max_decoding_message_size(limits.max_request_bytes)
        .max_encoding_message_size(limits.max_request_bytes.max(limits.max_reply_bytes * 2));
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let incoming = incoming::admitted(incoming, Arc::clone(&state));
    builder
        .add_service(auth::Guard::new(server, Arc::clone(&state)))
        .serve_with_incoming_shutdown(incoming, shutdown.cancelled())
        .await
        .map_err(|e| ServeError::Listener {
            listener: "gRPC",
            message: e.to_string(),
        })
}

fn tls_config(files: &TlsFiles) -> Result<ServerTlsConfig, ServeError> {
    let read = |what: &str, path: &Path| {
        std::fs::read(path).map_err(|e| {
            ServeError::Tls(format!(
                "cannot read the TLS {what} {}: {e}",
                path.display()
            ))
        })
    };
    let cert = read("certificate", &files.cert)?;
    let key = read("key", &files.key)?;
    for (what, path, pem) in [
        ("certificate", &files.cert, &cert),
        ("key", &files.key, &key),
    ] {
        if !pem.windows(11).any(|w| w == b"-----BEGIN ") {
            return Err(ServeError::Tls(format!(
                "the TLS {what} {} is not PEM (no -----BEGIN line)",
                path.display()
            )));
        }
    }
    // tonic's TLS takes rustls's process-wide crypto provider. A binary that also links
    // object_store (whose S3 client brings rustls's aws-lc-rs provider) has two, and rustls
    // then refuses to choose: install ring, the one tonic's `tls-ring` names. A provider
    // installed already (by the embedding program) is kept.
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    Ok(ServerTlsConfig::new().identity(Identity::from_pem(cert, key)))
}
