//! Mutate, Get, MultiGet (timestamps, time ranges, versions), Increment, BufferedMutator,
//! and the size limit of a request.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use cellar_client::{Code, Column, Delete, Durability, Put, ReadOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_get_multi_get_with_timestamps_and_ranges() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    // Three versions of f:q at 10, 20, 30 ns, and g:x on the same row, in one batch.
    let ts = client
        .mutate(
            "t",
            [
                Put::new("r1", "f", "q", "v10").at(10).into(),
                Put::new("r1", "f", "q", "v20").at(20).into(),
                Put::new("r1", "f", "q", "v30").at(30).into(),
                Put::new("r1", "g", "x", "gx").into(),
                Put::new("r2", "f", "q", "r2v").into(),
            ],
            Durability::Sync,
        )
        .await
        .expect("mutate");
    assert_eq!(&ts[..3], &[10, 20, 30]);
    assert!(
        ts[3] > 30 && ts[4] > 30,
        "server timestamps are now-ish: {ts:?}"
    );

    // Default read: f keeps 3 versions, newest first, then g.
    let row = client.get("t", "r1").await.expect("get").expect("row");
    let got: Vec<(&str, u64, &[u8])> = row
        .cells
        .iter()
        .map(|c| (c.family.as_str(), c.timestamp, c.value.as_slice()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("f", 30, &b"v30"[..]),
            ("f", 20, &b"v20"[..]),
            ("f", 10, &b"v10"[..]),
            ("g", ts[3], &b"gx"[..]),
        ]
    );
    assert_eq!(row.value("f", b"q"), Some(&b"v30"[..]));

    // [15, 30): only the version at 20; max 0 = unbounded: 20 and 30.
    let only_f = ReadOptions::default().columns([Column::family("f")]);
    let r = client
        .get_with("t", "r1", &only_f.clone().time_range(15, 30))
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        r.cells.iter().map(|c| c.timestamp).collect::<Vec<_>>(),
        vec![20]
    );
    let r = client
        .get_with("t", "r1", &only_f.clone().time_range(15, 0))
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        r.cells.iter().map(|c| c.timestamp).collect::<Vec<_>>(),
        vec![30, 20]
    );
    // max_versions 1 and one column.
    let r = client
        .get_with(
            "t",
            "r1",
            &ReadOptions::default()
                .columns([Column::new("f", "q")])
                .max_versions(1),
        )
        .await
        .expect("get")
        .expect("row");
    assert_eq!(r.cells.len(), 1);
    assert_eq!(r.cells[0].value, b"v30");
    // A time range with nothing in it: the row is absent.
    assert!(client
        .get_with("t", "r1", &only_f.time_range(1, 5))
        .await
        .expect("get")
        .is_none());
    // An empty range is a bad argument.
    let e = client
        .get_with("t", "r1", &ReadOptions::default().time_range(5, 5))
        .await
        .expect_err("empty range");
    assert_eq!(e.code(), Some(Code::InvalidArgument), "{e}");

    // MultiGet: request order, missing rows omitted.
    let rows = client
        .multi_get("t", ["r2", "missing", "r1"], &ReadOptions::default())
        .await
        .expect("multi_get");
    let keys: Vec<&[u8]> = rows.iter().map(|r| r.row.as_slice()).collect();
    assert_eq!(keys, vec![&b"r2"[..], &b"r1"[..]]);

    // Deletes: one version, one column, a family, a row.
    client
        .mutate(
            "t",
            [Delete::version("r1", "f", "q", 30).into()],
            Durability::Default,
        )
        .await
        .expect("delete version");
    let r = client.get("t", "r1").await.expect("get").expect("row");
    assert_eq!(r.value("f", b"q"), Some(&b"v20"[..]));
    client
        .mutate("t", [Delete::family("r1", "g").into()], Durability::Default)
        .await
        .expect("delete family");
    let r = client.get("t", "r1").await.expect("get").expect("row");
    assert!(r.cells.iter().all(|c| c.family == "f"));
    client
        .mutate(
            "t",
            [
                Delete::column("r1", "f", "q").into(),
                Delete::row("r2").into(),
            ],
            Durability::Default,
        )
        .await
        .expect("delete column and row");
    assert!(client.get("t", "r1").await.expect("get").is_none());
    assert!(client.get("t", "r2").await.expect("get").is_none());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_one_bad_mutation_writes_nothing() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    let e = client
        .mutate(
            "t",
            [
                Put::new("a", "f", "q", "1").into(),
                Put::new("b", "nofamily", "q", "2").into(),
            ],
            Durability::Default,
        )
        .await
        .expect_err("bad family");
    assert_eq!(e.code(), Some(Code::NotFound), "{e}");
    assert!(client.get("t", "a").await.expect("get").is_none());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_increments_sum_exactly() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..100 {
                c.increment("t", "counter", "g", "n", 1, Durability::Default)
                    .await
                    .expect("increment");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let v = client
        .increment("t", "counter", "g", "n", 0, Durability::Default)
        .await
        .expect("read");
    assert_eq!(v, 800);
    let row = client.get("t", "counter").await.expect("get").expect("row");
    assert_eq!(row.value("g", b"n"), Some(&800i64.to_be_bytes()[..]));
    // A negative amount, and a cell that is not a counter.
    assert_eq!(
        client
            .increment("t", "counter", "g", "n", -801, Durability::Default)
            .await
            .expect("decrement"),
        -1
    );
    client
        .mutate(
            "t",
            [Put::new("text", "g", "n", "abc").into()],
            Durability::Default,
        )
        .await
        .expect("put");
    let e = client
        .increment("t", "text", "g", "n", 1, Durability::Default)
        .await
        .expect_err("not a counter");
    assert_eq!(e.code(), Some(Code::FailedPrecondition), "{e}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_mutator_flushes_by_size_and_on_flush() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    let mut m = client
        .buffered_mutator("t")
        .with_buffer_bytes(4096)
        .with_durability(Durability::Flush);
    for i in 0..1000 {
        m.put(Put::new(common::row_key(i), "f", "q", "0123456789"))
            .await
            .expect("put");
        assert!(
            m.buffered_bytes() < 4096 + 100,
            "the buffer is sent when full"
        );
    }
    // Sent by size: the first rows are visible before the flush.
    assert!(client
        .get("t", common::row_key(0))
        .await
        .expect("get")
        .is_some());
    assert!(m.buffered_mutations() > 0, "the tail waits for flush");
    m.delete(Delete::row(common::row_key(1)))
        .await
        .expect("delete");
    m.flush().await.expect("flush");
    assert_eq!(m.buffered_mutations(), 0);
    let rows = client
        .scan("t", &cellar_client::Scan::new())
        .await
        .expect("scan")
        .collect_rows()
        .await
        .expect("rows");
    assert_eq!(rows.len(), 999);
    assert!(client
        .get("t", common::row_key(1))
        .await
        .expect("get")
        .is_none());
    server.stop().await;
}

/// A buffer size far beyond memory is a limit, not an allocation: a put is buffered and
/// `flush` sends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_buffer_size_is_not_reserved_up_front() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    let mut m = client.buffered_mutator("t").with_buffer_bytes(1 << 40);
    m.put(Put::new("r", "f", "q", "v")).await.expect("put");
    assert_eq!(m.buffered_mutations(), 1);
    m.flush().await.expect("flush");
    assert!(client.get("t", "r").await.expect("get").is_some());
    server.stop().await;
}

/// Every kind of mutation through a small buffer (many batches) leaves what `mutate` of
/// the same mutations leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_mutator_writes_every_kind_of_mutation_as_mutate_does() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "by_mutate").await;
    common::create_table(&client, "buffered").await;
    let mut ops: Vec<cellar_client::Mutation> = Vec::new();
    for i in 0..300 {
        let row = common::row_key(i % 60);
        ops.push(match i % 6 {
            0 | 1 => Put::new(row, "f", format!("q{}", i % 3), format!("v{i}")).into(),
            2 => Put::new(row, "g", "", vec![0u8; i % 7])
                .at(1000 + i as u64)
                .into(),
            3 => Delete::column(row, "f", "q1").into(),
            4 => Delete::version(row, "g", "", 1000 + i as u64 - 2).into(),
            _ => Delete::row(common::row_key((i * 7) % 60)).into(),
        });
    }
    client
        .mutate("by_mutate", ops.clone(), Durability::Buffered)
        .await
        .expect("mutate");
    let mut m = client.buffered_mutator("buffered").with_buffer_bytes(256);
    for (i, op) in ops.into_iter().enumerate() {
        match op {
            // A put of the server's timestamp also goes in as borrowed bytes.
            cellar_client::Mutation::Put(p) if p.timestamp.is_none() && i % 2 == 0 => m
                .put_cell(&p.row, &p.family, &p.qualifier, &p.value)
                .await
                .expect("put_cell"),
            op => m.mutate(op).await.expect("mutate"),
        }
    }
    m.put_cell(b"zz", "f", b"q", b"value")
        .await
        .expect("put_cell");
    m.flush().await.expect("flush");
    let zz = client
        .get("buffered", "zz")
        .await
        .expect("get")
        .expect("zz");
    assert_eq!(zz.value("f", b"q"), Some(&b"value"[..]));
    let read = |table: &'static str| {
        let client = client.clone();
        async move {
            let rows = client
                .scan(table, &cellar_client::Scan::new())
                .await
                .expect("scan")
                .collect_rows()
                .await
                .expect("rows");
            // Server timestamps differ between the tables: compare everything else.
            rows.into_iter()
                .map(|r| {
                    let cells: Vec<_> = r
                        .cells
                        .into_iter()
                        .map(|c| {
                            let ts = (c.family == "g").then_some(c.timestamp);
                            (c.family, c.qualifier, ts, c.value)
                        })
                        .collect();
                    (r.row, cells)
                })
                .collect::<Vec<_>>()
        }
    };
    let expected = read("by_mutate").await;
    assert!(!expected.is_empty());
    let mut got = read("buffered").await;
    assert_eq!(got.pop().map(|(row, _)| row), Some(b"zz".to_vec()));
    assert_eq!(got, expected);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_mutator_reports_a_background_batch_failure_at_the_next_send_or_flush() {
    let server = common::start().await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    let mut m = client.buffered_mutator("t").with_buffer_bytes(1);
    // Each put fills the buffer, so each is sent in the background; this one fails on the
    // server (no such family), and its put call cannot know yet.
    m.put(Put::new(common::row_key(0), "no_such_family", "q", "v"))
        .await
        .expect("sent in the background");
    let err = m.flush().await.expect_err("the failed batch is reported");
    assert_eq!(err.code(), Some(tonic::Code::NotFound), "{err}");
    // The mutator goes on: later batches are applied, and flush waits for them.
    for i in 1..50 {
        m.put(Put::new(common::row_key(i), "f", "q", "v"))
            .await
            .expect("put");
    }
    m.flush().await.expect("flush");
    for i in 1..50 {
        assert!(client
            .get("t", common::row_key(i))
            .await
            .expect("get")
            .is_some());
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_request_is_resource_exhausted_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = common::config(&dir);
    config.limits.max_request_bytes = 64 << 10;
    let server = common::start_with(dir, config).await;
    let client = server.client().await;
    common::create_table(&client, "t").await;
    let big = vec![b'x'; 100 << 10];
    let e = client
        .mutate(
            "t",
            [Put::new("r", "f", "q", big).into()],
            Durability::Default,
        )
        .await
        .expect_err("too big");
    assert_eq!(e.code(), Some(Code::ResourceExhausted), "{e}");
    assert!(e.to_string().contains("--max-request-bytes"), "{e}");
    // The same connection still serves.
    client
        .mutate(
            "t",
            [Put::new("r", "f", "q", "small").into()],
            Durability::Default,
        )
        .await
        .expect("small put");
    assert!(client.get("t", "r").await.expect("get").is_some());
    // A streamed load message over the limit too.
    let mut tsv = b"key\tf\n".to_vec();
    while tsv.len() < 100 << 10 {
        tsv.extend_from_slice(b"some-row\tsome-value\n");
    }
    let e = client
        .load("t", &Default::default(), std::io::Cursor::new(tsv))
        .await
        .expect_err("too big");
    assert_eq!(e.code(), Some(Code::ResourceExhausted), "{e}");
    server.stop().await;
}
