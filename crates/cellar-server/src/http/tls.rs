//! TLS for the HTTP listener (`--tls-cert`, `--tls-key`): rustls with the ring provider,
//! HTTP/2 and HTTP/1.1 offered through ALPN.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

use crate::config::TlsFiles;
use crate::serve::ServeError;

/// Reads the certificate chain and key, and builds the acceptor every connection uses.
pub(super) fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, ServeError> {
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            ServeError::Tls(format!(
                "cannot read the certificate chain {}: {e}",
                files.cert.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(ServeError::Tls(format!(
            "{} holds no PEM certificate",
            files.cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        ServeError::Tls(format!(
            "cannot read the private key {}: {e}",
            files.key.display()
        ))
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| ServeError::Tls(format!("the certificate and key do not fit: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
