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

/// Sends `body` as a `Mutate` request's message, as it is.
async fn raw_mutate(endpoint: &str, body: Vec<u8>) -> Result<(), tonic::Status> {
    use tonic::codec::{Codec, EncodeBuf, Encoder};
    struct Raw;
    struct RawEncoder;
    impl Encoder for RawEncoder {
        type Item = Vec<u8>;
        type Error = tonic::Status;
        fn encode(&mut self, item: Vec<u8>, buf: &mut EncodeBuf<'_>) -> Result<(), Self::Error> {
            use prost::bytes::BufMut;
            buf.put_slice(&item);
            Ok(())
        }
    }
    impl Codec for Raw {
        type Encode = Vec<u8>;
        type Decode = cellar_proto::v1::MutateResponse;
        type Encoder = RawEncoder;
        type Decoder = tonic_prost::ProstDecoder<cellar_proto::v1::MutateResponse>;
        fn encoder(&mut self) -> RawEncoder {
            RawEncoder
        }
        fn decoder(&mut self) -> Self::Decoder {
            tonic_prost::ProstDecoder::default()
        }
    }
    let channel = tonic::transport::Channel::from_shared(endpoint.to_string())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/cellar.v1.Cellar/Mutate");
    grpc.unary(tonic::Request::new(body), path, Raw)
        .await
        .map(drop)
}

fn put_entry(buf: &mut Vec<u8>, row: &[u8], family: &str) {
    use cellar_proto::wire::{MutationRef, PutRef};
    MutationRef::Put(PutRef {
        row,
        family,
        qualifier: b"q",
        timestamp: None,
        value: b"v",
    })
    .encode_entry(buf);
}

/// Malformed `Mutate` messages inside well-formed gRPC calls: each is refused with
/// INVALID_ARGUMENT naming what is wrong, writes nothing, and the server keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_mutate_messages_are_refused_and_write_nothing() {
    use cellar_proto::wire::encode_request_header;
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    let request = |rows: &[&[u8]]| {
        let mut buf = Vec::new();
        encode_request_header("t", 0, &mut buf);
        for r in rows {
            put_entry(&mut buf, r, "f");
        }
        buf
    };

    // The last mutation cut short.
    let mut cut = request(&[b"a", b"b", b"c"]);
    cut.pop();
    // The second mutation holds a put and a delete.
    let mut both = request(&[b"a"]);
    both.extend_from_slice(&[0x12, 0x04, 0x0a, 0x00, 0x12, 0x00]);
    put_entry(&mut both, b"c", "f");
    // A family that is not UTF-8.
    let mut bad_utf8 = request(&[b"a"]);
    put_entry(&mut bad_utf8, b"b", "\u{e9}");
    let at = bad_utf8.len() - 8;
    bad_utf8[at] = 0xff;
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("cut", cut, "runs past the end"),
        (
            "both kinds",
            both,
            "mutation 1: it holds more than one put or delete",
        ),
        ("bad UTF-8", bad_utf8, "mutation 1: the family is not UTF-8"),
        ("a group", vec![0x0a, 0x01, b't', 0x23], "groups"),
    ];
    for (name, body, says) in cases {
        let e = raw_mutate(&server.endpoint, body).await.expect_err(name);
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{name}: {e}");
        assert!(e.message().contains(says), "{name}: {e}");
    }
    // Random bytes: refused (or, when they read as an empty request, a missing table).
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for _ in 0..50 {
        let mut junk = vec![0u8; rng.gen_range(1..300)];
        rng.fill(&mut junk[..]);
        let e = raw_mutate(&server.endpoint, junk).await.expect_err("junk");
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}");
    }
    for row in ["a", "b", "c"] {
        assert!(client.get("t", row).await.expect("get").is_none(), "{row}");
    }
    // Unknown fields are skipped, and a whole request is written.
    let mut ok = vec![0x78, 0x05];
    ok.extend_from_slice(&request(&[b"a", b"b"]));
    raw_mutate(&server.endpoint, ok)
        .await
        .expect("unknown fields");
    assert!(client.get("t", "b").await.expect("get").is_some());
    server.stop().await;
}
