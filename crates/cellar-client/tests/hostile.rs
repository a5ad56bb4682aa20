//! Hostile bytes on the gRPC listener: random bytes, a truncated HTTP/2 preface, a frame
//! header announcing a huge frame, and a client that sends one byte and stalls. Each is
//! closed or ignored; the server keeps serving a well-behaved client meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use std::time::Duration;

use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Sends `bytes`, then reads until the server closes or 0.5 s pass; never hangs the test.
async fn send_and_drain(addr: &str, bytes: &[u8]) {
    let Ok(mut s) = TcpStream::connect(addr).await else {
        return;
    };
    let _ = s.write_all(bytes).await;
    let mut buf = vec![0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        while let Ok(n) = s.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bytes_on_the_grpc_port_leave_the_server_serving() {
    let server = common::start().await;
    let addr = server.endpoint.trim_start_matches("http://").to_string();
    let client = server.client().await;
    common::create_table(&client, "t").await;

    // A client that sends one byte and stalls, held open across everything below.
    let mut stalled = TcpStream::connect(&addr).await.expect("connect");
    stalled.write_all(b"P").await.expect("write");

    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for round in 0..6 {
        let mut junk = vec![0u8; rng.gen_range(1..4096)];
        rng.fill(&mut junk[..]);
        send_and_drain(&addr, &junk).await;
        // The preface cut short.
        send_and_drain(&addr, &PREFACE[..(round * 4) % PREFACE.len()]).await;
    }
    // A valid preface, then a DATA frame header announcing 16 MiB - 1 on stream 1 and
    // nothing behind it.
    let mut huge = PREFACE.to_vec();
    huge.extend_from_slice(&[0, 0, 0, 0x04, 0, 0, 0, 0, 0]); // empty SETTINGS
    huge.extend_from_slice(&[0xff, 0xff, 0xff, 0x00, 0x00, 0, 0, 0, 1]);
    send_and_drain(&addr, &huge).await;

    // A well-behaved client is served throughout.
    client
        .mutate(
            "t",
            [cellar_client::Mutation::Put(cellar_client::Put::new(
                "row", "f", "q", "v",
            ))],
            cellar_client::Durability::Flush,
        )
        .await
        .expect("mutate after hostile input");
    let row = client.get("t", "row").await.expect("get").expect("row");
    assert_eq!(row.value("f", b"q"), Some(&b"v"[..]));
    drop(stalled);
    server.stop().await;
}
