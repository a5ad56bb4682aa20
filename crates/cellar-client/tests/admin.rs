//! Table admin over gRPC, and the codes of its errors.

mod common;

use std::time::Duration;

use cellar_client::{Code, Compression, FamilySchema, TableSchema};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_list_describe_drop() {
    let server = common::start().await;
    let client = server.client().await;
    assert!(client.list_tables().await.expect("list").is_empty());
    let schema = TableSchema::new("users")
        .family(FamilySchema::new("info").max_versions(5).ttl(Duration::from_secs(86_400)))
        .family(FamilySchema::new("logs").compression(Compression::Zstd));
    client.create_table(&schema, false).await.expect("create");
    // Exists: an error unless if_not_exists.
    let e = client.create_table(&schema, false).await.expect_err("exists");
    assert_eq!(e.code(), Some(Code::AlreadyExists), "{e}");
    client.create_table(&schema, true).await.expect("if not exists");
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
