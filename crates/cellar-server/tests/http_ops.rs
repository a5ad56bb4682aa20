//! The HTTP listener as an operator and an attacker see it: /metrics, /health through a
//! shutdown, tokens, connection limits and hostile clients.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_common;

use std::time::Duration;

use http_common::{get, read_reply, request, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Checks the Prometheus/OpenMetrics text syntax line by line; returns the sample names.
fn parse_exposition(text: &str) -> Vec<String> {
    assert!(text.ends_with("# EOF\n"), "ends with # EOF");
    let name_re = regex::Regex::new(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$").unwrap();
    let label_re = regex::Regex::new(r#"^[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"$"#).unwrap();
    let mut names = Vec::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            let kind = comment.split(' ').next().unwrap();
            assert!(
                ["HELP", "TYPE", "UNIT", "EOF"].contains(&kind),
                "bad comment {line:?}"
            );
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value: {line:?}"));
        assert!(
            value.parse::<f64>().is_ok() || value == "+Inf",
            "bad value in {line:?}"
        );
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (
                n,
                Some(l.strip_suffix('}').unwrap_or_else(|| panic!("{line:?}"))),
            ),
            None => (series, None),
        };
        assert!(name_re.is_match(name), "bad name in {line:?}");
        if let Some(labels) = labels {
            // Label values in these tests hold no commas.
            for l in labels.split(',') {
                assert!(label_re.is_match(l), "bad label {l:?} in {line:?}");
            }
        }
        names.push(series.to_string());
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_prometheus_text_with_the_engine_statistics() {
    let server = start(|_| {}).await;
    server.create_table("t", &["cf"]);
    let addr = server.addr;
    for i in 0..20 {
        let body =
            format!(r#"{{"cells":[{{"column":"cf:q","value":"v{i}"}}],"durability":"sync"}}"#);
        assert_eq!(
            request(addr, "PUT", &format!("/t/r{i}"), "", body.as_bytes())
                .await
                .status,
            200
        );
    }
    server.handle.state.store.db().flush().unwrap();
    assert_eq!(get(addr, "/t/r3").await.status, 200);
    assert_eq!(get(addr, "/nosuch/r3").await.status, 404);
    let reply = get(addr, "/metrics").await;
    assert_eq!(reply.status, 200);
    assert!(reply
        .header("content-type")
        .unwrap()
        .starts_with("application/openmetrics-text"));
    let text = reply.text();
    let series = parse_exposition(&text);
    let has = |prefix: &str| series.iter().any(|s| s.starts_with(prefix));
    for name in [
        r#"cellar_requests_total{protocol="http",method="put"}"#,
        r#"cellar_request_errors_total{protocol="http",method="get"}"#,
        r#"cellar_request_seconds_bucket{le="#,
        r#"cellar_received_bytes_total{protocol="http"}"#,
        r#"cellar_sent_bytes_total{protocol="http"}"#,
        r#"cellar_open_connections{protocol="http"}"#,
        "cellar_open_scanners",
        "cellar_block_cache_hit_count_total",
        "cellar_block_cache_miss_count_total",
        "cellar_block_cache_size_bytes",
        "cellar_mem_store_size_bytes",
        "cellar_flush_queue_length",
        r#"cellar_store_file_count{table="t",family="cf",level="0"}"#,
        r#"cellar_store_file_size_bytes{table="t",family="cf",level="0"}"#,
        "cellar_compactions_total",
        "cellar_updates_blocked_seconds_total",
        "cellar_wal_syncs_total",
        "cellar_flushes_total",
        "cellar_device_reads_total",
        "cellar_uptime_seconds",
    ] {
        assert!(has(name), "{name} missing from /metrics:\n{text}");
    }
    let value = |series_name: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(series_name) && l[series_name.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("{series_name}"))
            .rsplit_once(' ')
            .unwrap()
            .1
            .parse()
            .unwrap()
    };
    assert_eq!(
        value(r#"cellar_requests_total{protocol="http",method="put"}"#),
        20.0
    );
    assert!(
        value("cellar_wal_syncs_total") >= 1.0,
        "sync puts sync the WAL"
    );
    assert!(value("cellar_flushes_total") >= 1.0);
    assert!(value(r#"cellar_store_file_count{table="t",family="cf",level="0"}"#) >= 1.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_503_while_shutting_down() {
    let server = start(|_| {}).await;
    server.create_table("t", &["cf"]);
    let addr = server.addr;
    let health = get(addr, "/health").await;
    assert_eq!((health.status, health.text().as_str()), (200, "ok\n"));

    // A request in flight (its body half sent) keeps the server draining.
    let body = br#"{"cells":[{"column":"cf:q","value":"late"}]}"#;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "PUT /t/late HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&body[..10]).await.unwrap();
    // A probe admitted before the shutdown whose request reaches the handler after it.
    let mut early = TcpStream::connect(addr).await.unwrap();
    early.write_all(b"GET /health HTTP/1.1\r\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let state = std::sync::Arc::clone(&server.handle.state);
    server.handle.shutdown();
    assert!(state.is_shutting_down());
    let during = get(addr, "/health").await;
    assert_eq!(during.status, 503, "{}", during.text());
    assert!(during.json()["error"]
        .as_str()
        .unwrap()
        .contains("shutting down"));
    // A client that sends its request well after connecting, in two pieces, still reads
    // the 503 (the server waits for the request before answering and closing).
    let mut late = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    late.write_all(b"GET /health HTTP/1.1\r\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    late.write_all(b"Host: t\r\n\r\n").await.unwrap();
    let reply = read_reply(&mut late, Duration::from_secs(10)).await;
    assert_eq!(reply.status, 503);
    // The handler's 503 reads as the refused connection's: same JSON, same retry-after.
    early.write_all(b"Host: t\r\n\r\n").await.unwrap();
    let reply = read_reply(&mut early, Duration::from_secs(10)).await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.json()["error"], during.json()["error"]);
    assert_eq!(reply.header("retry-after"), during.header("retry-after"));

    // The request in flight still completes.
    slow.write_all(&body[10..]).await.unwrap();
    let reply = read_reply(&mut slow, Duration::from_secs(10)).await;
    assert_eq!(reply.status, 200);
    tokio::time::timeout(Duration::from_secs(30), server.handle.wait())
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_required_except_for_health() {
    let server = start(|c| c.token = Some("s3cret".into())).await;
    let addr = server.addr;
    assert_eq!(get(addr, "/health").await.status, 200);
    for path in ["/tables", "/metrics", "/", "/t/row", "/t/scan"] {
        let r = get(addr, path).await;
        assert_eq!(r.status, 401, "{path}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        assert!(
            r.json()["error"].as_str().unwrap().contains("Bearer"),
            "{path}"
        );
    }
    let wrong = request(
        addr,
        "GET",
        "/tables",
        "Authorization: Bearer nope\r\n",
        b"",
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.json()["error"].as_str().unwrap().contains("wrong"));
    let right = request(
        addr,
        "GET",
        "/tables",
        "Authorization: Bearer s3cret\r\n",
        b"",
    )
    .await;
    assert_eq!(right.status, 200);
    let page = request(addr, "GET", "/", "Authorization: Bearer s3cret\r\n", b"").await;
    assert_eq!(page.status, 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_limit_get_a_clear_503() {
    let server = start(|c| c.limits.max_connections = 2).await;
    let addr = server.addr;
    let a = TcpStream::connect(addr).await.unwrap();
    let b = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let third = get(addr, "/health").await;
    assert_eq!(third.status, 503);
    assert!(third.json()["error"]
        .as_str()
        .unwrap()
        .contains("--max-connections"));
    drop((a, b));
    let mut ok = false;
    for _ in 0..50 {
        if get(addr, "/health").await.status == 200 {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "slots are given back when connections close");
    server.stop().await;
}

async fn raw_exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(bytes).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_clients_do_not_stop_the_server() {
    use rand::{Rng, SeedableRng};
    let server = start(|_| {}).await;
    let addr = server.addr;
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);

    // Random bytes: a 400 or a closed connection, never a stuck one.
    for _ in 0..10 {
        let junk: Vec<u8> = (0..rng.gen_range(1..4096)).map(|_| rng.gen()).collect();
        let out = raw_exchange(addr, &[&junk[..], b"\r\n\r\n"].concat()).await;
        assert!(
            out.is_empty() || out.starts_with(b"HTTP/1.1 4"),
            "{:?}",
            String::from_utf8_lossy(&out)
        );
    }

    // A header flood: refused (431 or closed) once past the header buffer.
    let mut flood = b"GET /health HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..20_000 {
        flood.extend_from_slice(format!("X-Flood-{i}: {}\r\n", "y".repeat(20)).as_bytes());
    }
    flood.extend_from_slice(b"\r\n");
    let out = raw_exchange(addr, &flood).await;
    assert!(
        out.is_empty() || out.starts_with(b"HTTP/1.1 4"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );

    // A body announcing far more than it sends, and a 2 GiB Content-Length.
    let huge = raw_exchange(
        addr,
        b"PUT /t/r HTTP/1.1\r\nHost: x\r\nContent-Length: 2147483648\r\n\r\n{",
    )
    .await;
    assert!(
        huge.starts_with(b"HTTP/1.1 413") || huge.starts_with(b"HTTP/1.1 404"),
        "{:?}",
        String::from_utf8_lossy(&huge)
    );

    // Slow-loris clients trickling a header byte at a time.
    let mut lorises = Vec::new();
    for _ in 0..5 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .unwrap();
        lorises.push(s);
    }
    for round in 0..10 {
        for s in &mut lorises {
            let _ = s.write_all(b"a").await;
        }
        // Everyone else is served meanwhile.
        let r = get(addr, "/health").await;
        assert_eq!(r.status, 200, "round {round}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(get(addr, "/tables").await.status, 200);
    drop(lorises);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_after_the_idle_timeout() {
    let server = start(|c| c.limits.idle_timeout = Some(Duration::from_millis(500))).await;
    let addr = server.addr;
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(10), idle.read(&mut buf))
        .await
        .expect("the server closes the idle connection")
        .unwrap_or(0);
    assert_eq!(n, 0, "closed without a reply");
    // A keep-alive connection in use is not cut while requests keep coming.
    let mut busy = TcpStream::connect(addr).await.unwrap();
    for _ in 0..4 {
        busy.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut reply = [0u8; 256];
        let n = busy.read(&mut reply).await.unwrap();
        assert!(reply[..n].starts_with(b"HTTP/1.1 200"));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    server.stop().await;
}
