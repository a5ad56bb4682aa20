//! HTTPS: the listener with `--tls-cert`/`--tls-key` (a self-signed certificate made with
//! the `openssl` command; without it the test prints SKIP).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_common;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use cellar_server::config::TlsFiles;
use http_common::{parse_reply, start};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

fn self_signed(dir: &std::path::Path) -> Option<TlsFiles> {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .ok()?;
    made.status.success().then_some(TlsFiles { cert, key })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_serves_and_plain_http_on_the_tls_port_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(files) = self_signed(dir.path()) else {
        println!("SKIP https_serves_and_plain_http_on_the_tls_port_is_refused: no openssl command");
        return;
    };
    let cert = CertificateDer::from_pem_file(&files.cert).unwrap();
    let server = start(|c| c.tls = Some(files)).await;
    let addr = server.addr;

    let mut roots = RootCertStore::empty();
    roots.add(cert).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::IpAddress(addr.ip().into());
    let mut tls = connector.connect(name, tcp).await.unwrap();
    tls.write_all(b"GET /tables HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut raw))
        .await
        .unwrap();
    let reply = parse_reply(&raw);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json(), serde_json::json!({"tables": []}));

    // Plain HTTP on the TLS port: no HTTP answer; the server goes on.
    let mut plain = TcpStream::connect(addr).await.unwrap();
    plain
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), plain.read_to_end(&mut out)).await;
    assert!(!out.starts_with(b"HTTP/1.1 200"));
    let tcp = TcpStream::connect(addr).await.unwrap();
    assert!(connector
        .connect(ServerName::IpAddress(addr.ip().into()), tcp)
        .await
        .is_ok());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_certificate_stops_the_server_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let files = TlsFiles {
        cert: dir.path().join("missing-cert.pem"),
        key: dir.path().join("missing-key.pem"),
    };
    let server = start(|c| c.tls = Some(files)).await;
    let result = tokio::time::timeout(Duration::from_secs(30), server.handle.wait())
        .await
        .unwrap();
    let message = result.expect_err("TLS set-up fails").to_string();
    assert!(message.contains("missing-cert.pem"), "{message}");
}
