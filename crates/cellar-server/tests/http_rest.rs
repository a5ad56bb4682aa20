//! REST over a real HTTP listener: round trips, binary keys, scans, and error statuses.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_common;

use base64::Engine;
use http_common::{get, request, start};
use serde_json::json;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_get_delete_round_trip() {
    let server = start(|_| {}).await;
    server.create_table("users", &["info", "stats"]);
    let addr = server.addr;

    let tables = get(addr, "/tables").await;
    assert_eq!(tables.status, 200);
    assert_eq!(tables.json(), json!({"tables": ["users"]}));

    let schema = get(addr, "/users/schema").await.json();
    assert_eq!(schema["name"], "users");
    assert_eq!(schema["enabled"], true);
    let fams: Vec<&str> = schema["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(fams, ["info", "stats"]);

    let body = json!({"cells": [
        {"column": "info:email", "value": "a@example.com", "timestamp": 1_000},
        {"column": "info:email", "value": "old@example.com", "timestamp": 500},
        {"column": "stats:visits", "value_b64": b64(&[0xff, 0, 7])},
    ]});
    let put = request(addr, "PUT", "/users/alice", "", body.to_string().as_bytes()).await;
    assert_eq!(put.status, 200, "{}", put.text());
    let put = put.json();
    assert_eq!(put["written"], 3);
    assert_eq!(put["timestamps"][0], 1_000);

    // MAX_VERSIONS is 1: only the newest version of info:email.
    let row = get(addr, "/users/alice").await;
    assert_eq!(row.status, 200);
    let row = row.json();
    assert_eq!(row["row"], "alice");
    let cells = row["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    assert_eq!(
        cells[0],
        json!({"column": "info:email", "timestamp": 1000, "value": "a@example.com"})
    );
    assert_eq!(cells[1]["column"], "stats:visits");
    assert_eq!(
        cells[1]["value_b64"],
        b64(&[0xff, 0, 7]),
        "binary values are base64"
    );
    assert!(cells[1].get("value").is_none());

    // Versions and column selection.
    let two = get(addr, "/users/alice?column=info:email&v=2").await.json();
    let versions: Vec<&str> = two["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["value"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["a@example.com", "old@example.com"]);
    let family = get(addr, "/users/alice?column=stats").await.json();
    assert_eq!(family["cells"].as_array().unwrap().len(), 1);

    // Delete one column, then the row.
    let del = request(addr, "DELETE", "/users/alice?column=info:email", "", b"").await;
    assert_eq!(del.status, 200, "{}", del.text());
    let left = get(addr, "/users/alice").await.json();
    assert_eq!(left["cells"].as_array().unwrap().len(), 1);
    assert_eq!(
        request(addr, "DELETE", "/users/alice", "", b"")
            .await
            .status,
        200
    );
    let gone = get(addr, "/users/alice").await;
    assert_eq!(gone.status, 404);
    assert!(gone.json()["error"].as_str().unwrap().contains("no cells"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_rows_by_percent_encoding_and_base64() {
    let server = start(|_| {}).await;
    server.create_table("bin", &["cf"]);
    let addr = server.addr;
    let row: &[u8] = b"k\xff\x00/\n";
    let body = json!({"cells": [{"column_b64": b64(b"cf:q\xfe"), "value": "v"}]});
    // Any byte can be named in the path with %XX.
    let put = request(
        addr,
        "PUT",
        "/bin/k%FF%00%2F%0A",
        "",
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.text());
    let got = get(addr, "/bin/k%FF%00%2F%0A").await.json();
    assert_eq!(got["row_b64"], b64(row));
    assert!(got.get("row").is_none());
    assert_eq!(got["cells"][0]["column_b64"], b64(b"cf:q\xfe"));
    assert_eq!(got["cells"][0]["value"], "v");
    // The scan finds it by a base64 prefix, and reports the key in base64.
    let scan = get(
        addr,
        &format!("/bin/scan?prefix_b64={}", urlencode(&b64(b"k\xff"))),
    )
    .await;
    assert_eq!(scan.status, 200);
    let lines: Vec<serde_json::Value> = ndjson(&scan.body);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["row_b64"], b64(row));
    server.stop().await;
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

fn ndjson(body: &[u8]) -> Vec<serde_json::Value> {
    body.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_stream_many_rows_with_range_prefix_limit_and_reverse() {
    let server = start(|_| {}).await;
    server.create_table("t", &["cf"]);
    let table = server.handle.state.store.table("t").unwrap();
    const ROWS: usize = 5000;
    for i in 0..ROWS {
        let row = format!("row{i:05}");
        table
            .put(
                row.as_bytes(),
                "cf",
                b"q",
                None,
                format!("value-{i}").as_bytes(),
                cellar_engine::Durability::Buffered,
            )
            .unwrap();
    }
    let addr = server.addr;

    let all = get(addr, "/t/scan").await;
    assert_eq!(all.status, 200);
    assert_eq!(all.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(
        all.header("transfer-encoding"),
        Some("chunked"),
        "the scan is streamed"
    );
    let rows = ndjson(&all.body);
    assert_eq!(rows.len(), ROWS);
    assert_eq!(rows[0]["row"], "row00000");
    assert_eq!(rows[ROWS - 1]["row"], format!("row{:05}", ROWS - 1));
    assert_eq!(rows[1234]["cells"][0]["value"], "value-1234");

    let limited = ndjson(
        &get(addr, "/t/scan?start=row00100&stop=row00200&limit=10")
            .await
            .body,
    );
    let keys: Vec<&str> = limited.iter().map(|r| r["row"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 10);
    assert_eq!(keys[0], "row00100");
    assert_eq!(keys[9], "row00109");

    let range = ndjson(&get(addr, "/t/scan?start=row00100&stop=row00200").await.body);
    assert_eq!(range.len(), 100, "stop is exclusive");

    let prefix = ndjson(&get(addr, "/t/scan?prefix=row012").await.body);
    assert_eq!(prefix.len(), 100);
    assert!(prefix
        .iter()
        .all(|r| r["row"].as_str().unwrap().starts_with("row012")));

    let reverse = ndjson(&get(addr, "/t/scan?prefix=row0000&reverse=true").await.body);
    let keys: Vec<&str> = reverse.iter().map(|r| r["row"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        (0..10)
            .rev()
            .map(|i| format!("row0000{i}"))
            .collect::<Vec<_>>()
    );

    let bad = get(addr, "/t/scan?prefix=a&start=b").await;
    assert_eq!(bad.status, 400);
    let unknown_filter = get(addr, "/t/scan?filter=NoSuchFilter()").await;
    assert_eq!(unknown_filter.status, 400);
    assert!(unknown_filter.json()["error"]
        .as_str()
        .unwrap()
        .contains("NoSuchFilter"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_json_errors() {
    let server = start(|c| c.limits.max_request_bytes = 1024).await;
    server.create_table("t", &["cf"]);
    let addr = server.addr;

    let missing = get(addr, "/nosuch/row1").await;
    assert_eq!(missing.status, 404);
    assert!(missing.json()["error"].as_str().unwrap().contains("nosuch"));
    assert_eq!(get(addr, "/nosuch/schema").await.status, 404);
    assert_eq!(get(addr, "/nosuch/scan").await.status, 404);
    let put_missing = request(
        addr,
        "PUT",
        "/nosuch/r",
        "",
        br#"{"cells":[{"column":"cf:q","value":"v"}]}"#,
    )
    .await;
    assert_eq!(put_missing.status, 404);

    let malformed = request(addr, "PUT", "/t/r", "", b"{\"cells\": [").await;
    assert_eq!(malformed.status, 400);
    assert!(malformed.json()["error"].is_string());
    let wrong_shape = request(addr, "PUT", "/t/r", "", br#"{"cells":[{"column":"cf:q"}]}"#).await;
    assert_eq!(wrong_shape.status, 400);
    assert!(wrong_shape.json()["error"]
        .as_str()
        .unwrap()
        .contains("value"));
    let bad_b64 = request(
        addr,
        "PUT",
        "/t/r",
        "",
        br#"{"cells":[{"column":"cf:q","value_b64":"!!"}]}"#,
    )
    .await;
    assert_eq!(bad_b64.status, 400);
    let no_family = request(
        addr,
        "PUT",
        "/t/r",
        "",
        br#"{"cells":[{"column":"nofam:q","value":"v"}]}"#,
    )
    .await;
    assert_eq!(no_family.status, 404);
    assert_eq!(get(addr, "/t/r?v=abc").await.status, 400);
    assert_eq!(get(addr, "/t/r%ZZ").await.status, 400);

    let big = format!(
        r#"{{"cells":[{{"column":"cf:q","value":"{}"}}]}}"#,
        "x".repeat(4096)
    );
    let too_large = request(addr, "PUT", "/t/r", "", big.as_bytes()).await;
    assert_eq!(too_large.status, 413);
    assert!(too_large.json()["error"]
        .as_str()
        .unwrap()
        .contains("max-request-bytes"));

    // The same body chunked (no Content-Length announcing it) is cut at the limit too.
    let mut chunked =
        b"PUT /t/r HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    for piece in big.as_bytes().chunks(500) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut s, &chunked)
        .await
        .unwrap();
    let mut raw = Vec::new();
    let _ = tokio::io::AsyncReadExt::read_to_end(&mut s, &mut raw).await;
    assert_eq!(http_common::parse_reply(&raw).status, 413);

    let nothing = get(addr, "/").await;
    assert_eq!(nothing.status, 200);
    assert_eq!(get(addr, "/a/b/c").await.status, 404);
    // The server still serves after all of that.
    let ok = request(
        addr,
        "PUT",
        "/t/r",
        "",
        br#"{"cells":[{"column":"cf:q","value":"v"}]}"#,
    )
    .await;
    assert_eq!(ok.status, 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_whose_reader_stalls_is_cut_and_not_terminated_like_a_complete_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start(|c| c.limits.request_timeout = std::time::Duration::from_secs(1)).await;
    server.create_table("t", &["cf"]);
    let table = server.handle.state.store.table("t").unwrap();
    let value = vec![b'v'; 16 << 10];
    for i in 0..2000 {
        table
            .put(
                format!("r{i:05}").as_bytes(),
                "cf",
                b"q",
                None,
                &value,
                cellar_engine::Durability::Buffered,
            )
            .unwrap();
    }
    let addr = server.addr;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /t/scan HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 1024];
    let n = s.read(&mut head).await.unwrap();
    assert!(head[..n].starts_with(b"HTTP/1.1 200"));
    // Stop reading for longer than --request-timeout.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(
        get(addr, "/tables").await.status,
        200,
        "others are served meanwhile"
    );
    let mut rest = Vec::new();
    let _ =
        tokio::time::timeout(std::time::Duration::from_secs(20), s.read_to_end(&mut rest)).await;
    let total = n + rest.len();
    assert!(
        total < 2000 * (16 << 10),
        "the scan was cut ({total} bytes)"
    );
    assert!(
        !rest.ends_with(b"0\r\n\r\n"),
        "a cut scan does not end like a complete one"
    );
    let metrics = get(addr, "/metrics").await.text();
    assert!(
        metrics.contains(r#"cellar_limit_hits_total{limit="request_timeout"} 1"#),
        "{metrics}"
    );
    server.stop().await;
}
