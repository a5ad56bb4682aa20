//! Table admin over gRPC, and the codes of its errors.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use cellar_client::{Code, Compression, FamilySchema, TableSchema};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_list_describe_drop() {
    let server = common::start().await;
    let client = server.client().await;
    assert!(client.list_tables().await.expect("list").is_empty());
    let schema = TableSchema::new("users")
        .family(
            FamilySchema::new("info")
                .max_versions(5)
                .ttl(Duration::from_secs(86_400)),
        )
        .family(FamilySchema::new("logs").compression(Compression::Zstd));
    client.create_table(&schema, false).await.expect("create");
    // Exists: an error unless if_not_exists.
    let e = client
        .create_table(&schema, false)
        .await
        .expect_err("exists");
    assert_eq!(e.code(), Some(Code::AlreadyExists), "{e}");
    client
        .create_table(&schema, true)
        .await
        .expect("if not exists");
    assert_eq!(client.list_tables().await.expect("list"), vec!["users"]);

    let described = client.describe_table("users").await.expect("describe");
    assert_eq!(described, schema);

    client.drop_table("users", false).await.expect("drop");
    assert!(client.list_tables().await.expect("list").is_empty());
    let e = client.drop_table("users", false).await.expect_err("gone");
    assert_eq!(e.code(), Some(Code::NotFound), "{e}");
    client.drop_table("users", true).await.expect("if exists");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tables_and_families_are_not_found() {
    let server = common::start().await;
    let client = server.client().await;
    let e = client.describe_table("nope").await.expect_err("unknown");
    assert_eq!(e.code(), Some(Code::NotFound), "{e}");
    assert!(e.to_string().contains("nope"), "{e}");
    let e = client.get("nope", "r").await.expect_err("unknown");
    assert_eq!(e.code(), Some(Code::NotFound), "{e}");
    let e = client
        .scan("nope", &cellar_client::Scan::new())
        .await
        .expect_err("unknown");
    assert_eq!(e.code(), Some(Code::NotFound), "{e}");

    common::create_table(&client, "t").await;
    let put = cellar_client::Put::new("r", "nofamily", "q", "v");
    let e = client
        .mutate("t", [put.into()], cellar_client::Durability::Default)
        .await
        .expect_err("unknown family");
    assert_eq!(e.code(), Some(Code::NotFound), "{e}");
    assert!(e.to_string().contains("nofamily"), "{e}");

    // A table without families, an empty name: refused with INVALID_ARGUMENT.
    let e = client
        .create_table(&TableSchema::new("empty"), false)
        .await
        .expect_err("no families");
    assert_eq!(e.code(), Some(Code::InvalidArgument), "{e}");
    let e = client.describe_table("").await.expect_err("no name");
    assert_eq!(e.code(), Some(Code::InvalidArgument), "{e}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_max_connections_are_refused_and_others_go_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = common::config(&dir);
    config.limits.max_connections = 1;
    let server = common::start_with(dir, config).await;
    let first = server.client().await;
    assert!(first
        .list_tables()
        .await
        .expect("first connection")
        .is_empty());
    // A second connection (its own channel) is closed at once.
    let second = cellar_client::Client::builder(server.endpoint.clone())
        .max_retries(0)
        .connect()
        .await;
    if let Ok(second) = second {
        let e = second.list_tables().await.expect_err("over the limit");
        assert_eq!(e.code(), Some(Code::Unavailable), "{e}");
    }
    assert!(first
        .list_tables()
        .await
        .expect("first still served")
        .is_empty());
    let limits = server
        .handle
        .state
        .metrics
        .limit_hits
        .get_or_create(&cellar_server::metrics::LimitLabels {
            limit: "connections",
        })
        .get();
    assert!(limits >= 1, "{limits}");
    // Once the first closes, a new connection gets its slot.
    drop(first);
    let mut served = false;
    for _ in 0..100 {
        if let Ok(c) = cellar_client::Client::builder(server.endpoint.clone())
            .max_retries(0)
            .connect()
            .await
        {
            if c.list_tables().await.is_ok() {
                served = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(served, "a slot frees when its connection closes");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_calls_are_retried_while_the_server_is_unavailable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = common::config(&dir);
    config.limits.max_connections = 1;
    let server = common::start_with(dir, config).await;
    let first = server.client().await;
    first.list_tables().await.expect("first connection");
    let patient = cellar_client::Client::builder(server.endpoint.clone())
        .max_retries(8)
        .retry_backoff(Duration::from_millis(50))
        .connect()
        .await;
    // The slot frees 200 ms from now; the retries (50 ms, 100 ms, ...) outlast that.
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(first);
    });
    if let Ok(patient) = patient {
        assert!(patient.list_tables().await.expect("retried").is_empty());
    }
    server.stop().await;
}
