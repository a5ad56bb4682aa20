//! Bearer tokens, TLS, and the blocking client.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

use cellar_client::{blocking, Client, Code, Delete, Durability, Put, ReadOptions, Scan};
use cellar_server::config::TlsFiles;
use cellar_server::ServerHandle;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_missing_token_is_unauthenticated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = common::config(&dir);
    config.token = Some("s3cret".to_string());
    let server = common::start_with(dir, config).await;

    let anonymous = server.client().await;
    let e = anonymous.list_tables().await.expect_err("no token");
    assert_eq!(e.code(), Some(Code::Unauthenticated), "{e}");
    assert!(e.to_string().contains("authorization: Bearer"), "{e}");

    let wrong = Client::builder(server.endpoint.clone())
        .token("guess")
        .connect()
        .await
        .expect("connect");
    let e = wrong.list_tables().await.expect_err("wrong token");
    assert_eq!(e.code(), Some(Code::Unauthenticated), "{e}");
    let e = wrong
        .scan("t", &Scan::new())
        .await
        .expect_err("wrong token");
    assert_eq!(e.code(), Some(Code::Unauthenticated), "{e}");

    let right = Client::builder(server.endpoint.clone())
        .token("s3cret")
        .connect()
        .await
        .expect("connect");
    assert!(right.list_tables().await.expect("authorized").is_empty());
    server.stop().await;
}

#[test]
fn blocking_client_round_trip() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let server = runtime.block_on(common::start());
    let client = blocking::Client::connect(server.endpoint.clone()).expect("connect");
    runtime.block_on(common::create_table(client.as_async(), "t"));
    let ts = client
        .put("t", Put::new("r1", "f", "q", "v1").at(7), Durability::Sync)
        .expect("put");
    assert_eq!(ts, 7);
    let row = client.get("t", "r1").expect("get").expect("row");
    assert_eq!(row.cells[0].timestamp, 7);
    assert_eq!(row.value("f", b"q"), Some(&b"v1"[..]));
    assert_eq!(
        client
            .increment("t", "c", "g", "n", 5, Durability::Default)
            .expect("increment"),
        5
    );
    {
        let mut m = client.buffered_mutator("t").with_buffer_bytes(1 << 20);
        for i in 0..100 {
            m.put(Put::new(common::row_key(i), "f", "q", "x"))
                .expect("put");
        }
        m.flush().expect("flush");
        m.delete(Delete::row(common::row_key(0))).expect("delete");
        // Dropping flushes the delete.
    }
    let rows: Vec<_> = client
        .scan("t", &Scan::new().prefix("row").batch_rows(10))
        .expect("scan")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(rows.len(), 99);
    let got = client
        .multi_get("t", ["r1", "c"], &ReadOptions::default())
        .expect("multi_get");
    assert_eq!(got.len(), 2);
    let out = client
        .hql("SHOW TABLES;", Durability::Default, false)
        .expect("hql");
    assert_eq!(out.output, "t\n");
    let stats = client
        .load_bytes("t", &Default::default(), b"key\tg\nl1\tv\n".to_vec())
        .expect("load");
    assert_eq!(stats.cells, 1);
    drop(client);
    runtime.block_on(server.stop());
}

fn openssl(args: &[&str], dir: &Path) -> bool {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A CA and a certificate for localhost/127.0.0.1 signed by it; `None` without openssl.
fn make_certificates(dir: &Path) -> Option<()> {
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .ok()?;
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let steps: Vec<Vec<&str>> = vec![
        [
            &["req", "-x509"][..],
            &ec,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=test-ca",
            ],
        ]
        .concat(),
        [
            &["req"][..],
            &ec,
            &[
                "-keyout",
                "key.pem",
                "-out",
                "leaf.csr",
                "-subj",
                "/CN=localhost",
            ],
        ]
        .concat(),
        vec![
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "cert.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    ];
    steps.iter().all(|s| openssl(s, dir)).then_some(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_round_trip_and_bad_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).expect("mkdir");

    // A file that is not PEM: the start fails naming it.
    std::fs::write(certs.join("junk.pem"), "not a certificate").expect("write");
    let mut config = common::config(&dir);
    config.tls = Some(TlsFiles {
        cert: certs.join("junk.pem"),
        key: certs.join("junk.pem"),
    });
    let handle = ServerHandle::start(config).await.expect("binds");
    let e = tokio::time::timeout(std::time::Duration::from_secs(10), handle.wait())
        .await
        .expect("stops")
        .expect_err("bad TLS files");
    assert!(e.to_string().contains("junk.pem"), "{e}");

    if make_certificates(&certs).is_none() {
        eprintln!("openssl is not available: TLS round trip not tested");
        return;
    }
    let mut config = common::config(&dir);
    config.tls = Some(TlsFiles {
        cert: certs.join("cert.pem"),
        key: certs.join("key.pem"),
    });
    let server = common::start_with(tempfile::tempdir().expect("tempdir"), config).await;
    let addr = server.handle.grpc_addr.expect("addr");
    let ca = std::fs::read(certs.join("ca.pem")).expect("ca");
    let client = Client::builder(format!("https://localhost:{}", addr.port()))
        .tls_ca_pem(ca)
        .connect()
        .await
        .expect("TLS connect");
    assert!(client.list_tables().await.expect("over TLS").is_empty());
    // Plain HTTP/2 to a TLS port does not get through.
    let plain = Client::builder(format!("http://{addr}"))
        .max_retries(0)
        .connect()
        .await;
    if let Ok(plain) = plain {
        assert!(plain.list_tables().await.is_err());
    }
    server.stop().await;
}
