//! Streaming scans: ranges, prefix, reverse, limit, columns, versions, chunking by rows and
//! bytes, flow control, split points, and shutdown while a scan is open.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use cellar_client::{Code, Column, Durability, Put, Scan};
use cellar_server::metrics::ProtocolLabels;

fn keys(rows: &[cellar_client::RowResult]) -> Vec<String> {
    rows.iter()
        .map(|r| String::from_utf8_lossy(&r.row).into_owned())
        .collect()
}

async fn scan_keys(client: &cellar_client::Client, scan: Scan) -> Vec<String> {
    let rows = client
        .scan("t", &scan)
        .await
        .expect("scan")
        .collect_rows()
        .await
        .expect("rows");
    keys(&rows)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_prefix_reverse_limit_columns() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    let rows = ["a", "ab", "abc", "b", "ba", "c"];
    let puts = rows.iter().flat_map(|r| {
        [
            Put::new(*r, "f", "q", format!("{r}-old")).at(1).into(),
            Put::new(*r, "f", "q", format!("{r}-new")).at(2).into(),
            Put::new(*r, "g", "x", "gx").at(2).into(),
        ]
    });
    client
        .mutate("t", puts, Durability::Default)
        .await
        .expect("fill");

    assert_eq!(scan_keys(&client, Scan::new()).await, rows);
    assert_eq!(
        scan_keys(&client, Scan::new().prefix("a")).await,
        ["a", "ab", "abc"]
    );
    assert_eq!(
        scan_keys(&client, Scan::new().start("ab").stop("ba")).await,
        ["ab", "abc", "b"]
    );
    // Prefix and range together: their intersection.
    assert_eq!(
        scan_keys(&client, Scan::new().prefix("a").start("ab")).await,
        ["ab", "abc"]
    );
    // Reversed: start is the inclusive upper end, stop the exclusive lower one.
    assert_eq!(
        scan_keys(&client, Scan::new().reverse()).await,
        ["c", "ba", "b", "abc", "ab", "a"]
    );
    assert_eq!(
        scan_keys(&client, Scan::new().reverse().start("ba").stop("ab")).await,
        ["ba", "b", "abc"]
    );
    assert_eq!(
        scan_keys(&client, Scan::new().reverse().prefix("a")).await,
        ["abc", "ab", "a"]
    );
    assert_eq!(scan_keys(&client, Scan::new().limit(2)).await, ["a", "ab"]);
    assert_eq!(
        scan_keys(&client, Scan::new().reverse().limit(1)).await,
        ["c"]
    );

    // Columns, versions, time range.
    let all = client
        .scan(
            "t",
            &Scan::new()
                .prefix("c")
                .columns([Column::family("f")])
                .max_versions(5),
        )
        .await
        .expect("scan")
        .collect_rows()
        .await
        .expect("rows");
    let values: Vec<&[u8]> = all[0].cells.iter().map(|c| c.value.as_slice()).collect();
    assert_eq!(values, vec![&b"c-new"[..], &b"c-old"[..]]);
    let old = client
        .scan(
            "t",
            &Scan::new().prefix("c").time_range(0, 2).max_versions(5),
        )
        .await
        .expect("scan")
        .collect_rows()
        .await
        .expect("rows");
    assert_eq!(old[0].cells.len(), 1);
    assert_eq!(old[0].cells[0].value, b"c-old");
    let only_g = client
        .scan("t", &Scan::new().columns([Column::new("g", "x")]))
        .await
        .expect("scan")
        .collect_rows()
        .await
        .expect("rows");
    assert_eq!(only_g.len(), rows.len());
    assert!(only_g
        .iter()
        .all(|r| r.cells.len() == 1 && r.cells[0].family == "g"));

    // batch_rows: whole rows, that many per message.
    let mut s = client
        .scan("t", &Scan::new().batch_rows(4))
        .await
        .expect("scan");
    let mut n = 0;
    while let Some(r) = s.next_row().await {
        r.expect("row");
        n += 1;
    }
    assert_eq!(n, 6);
    assert_eq!(s.messages_received(), 2);

    // A filter the server cannot parse: INVALID_ARGUMENT naming it.
    let e = client
        .scan("t", &Scan::new().filter("NoSuchFilter('x')"))
        .await
        .expect_err("bad filter");
    assert_eq!(e.code(), Some(Code::InvalidArgument), "{e}");
    assert!(e.to_string().contains("NoSuchFilter"), "{e}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_scan_streams_in_chunks_bounded_by_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = common::config(&dir);
    config.limits.max_reply_bytes = 64 << 10;
    let server = common::start_with(dir, config).await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    common::fill(&client, "t", 20_000, 100).await;
    let mut s = client.scan("t", &Scan::new()).await.expect("scan");
    let mut i = 0;
    while let Some(r) = s.next_row().await {
        let r = r.expect("row");
        assert_eq!(r.row, common::row_key(i).into_bytes());
        i += 1;
    }
    assert_eq!(i, 20_000);
    // ~130 bytes a row, 64 KiB a message: about 40 messages, far more than 20 of 1000 rows.
    let m = s.messages_received();
    assert!((30..=60).contains(&m), "{m} messages");
    // split points of the loaded table cut it in ascending order.
    let splits = client.split_points("t", 4).await.expect("split points");
    assert!(splits.len() <= 3, "{splits:?}");
    assert!(splits.windows(2).all(|w| w[0] < w[1]), "{splits:?}");
    server.stop().await;
}

fn grpc_bytes_sent(server: &common::TestServer) -> u64 {
    server
        .handle
        .state
        .metrics
        .bytes_out
        .get_or_create(&ProtocolLabels { protocol: "grpc" })
        .get()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_does_not_make_the_server_read_the_whole_table() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    // 20,000 rows of ~1 KiB: ~20 MiB.
    common::fill(&client, "t", 20_000, 1000).await;
    let before = grpc_bytes_sent(&server);
    let mut s = client
        .scan("t", &Scan::new().batch_rows(100))
        .await
        .expect("scan");
    s.next_row().await.expect("a row").expect("ok");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let produced = grpc_bytes_sent(&server) - before;
    // HTTP/2 windows and the one-message channel hold a few MiB at most.
    assert!(
        produced < 8 << 20,
        "the server produced {produced} bytes ahead of the reader"
    );
    assert_eq!(server.handle.state.metrics.open_scanners.get(), 1);
    // Dropping the stream ends the scan on the server.
    drop(s);
    let mut closed = false;
    for _ in 0..100 {
        if server.handle.state.metrics.open_scanners.get() == 0 {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        closed,
        "the server's scan task ends when the client goes away"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_an_open_scan_with_unavailable() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    common::fill(&client, "t", 20_000, 1000).await;
    let mut s = client
        .scan("t", &Scan::new().batch_rows(100))
        .await
        .expect("scan");
    s.next_row().await.expect("a row").expect("ok");
    server.handle.shutdown();
    // The stream ends (bounded: 20,000 rows) with an error saying the scan is incomplete.
    let mut rows = 1;
    let end = loop {
        match tokio::time::timeout(Duration::from_secs(10), s.next_row()).await {
            Ok(Some(Ok(_))) => rows += 1,
            Ok(Some(Err(e))) => break Some(e),
            Ok(None) => break None,
            Err(_) => panic!("the stream hangs after shutdown"),
        }
    };
    let e = end.expect("an incomplete scan ends with an error, not a clean end");
    assert_eq!(e.code(), Some(Code::Unavailable), "{e}");
    assert!(rows < 20_000, "{rows}");
    // New requests are refused.
    let e = client.list_tables().await.expect_err("shutting down");
    assert_eq!(e.code(), Some(Code::Unavailable), "{e}");
    tokio::time::timeout(Duration::from_secs(30), server.handle.wait())
        .await
        .expect("stops in time")
        .expect("stops cleanly");
}
