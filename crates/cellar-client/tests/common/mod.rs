//! A server started in-process on 127.0.0.1 (gRPC only), stopped by each test.
#![allow(dead_code)]

use cellar_client::{Client, Durability, FamilySchema, Put, TableSchema};
use cellar_server::{Listen, ServeConfig, ServerHandle};

pub struct TestServer {
    pub handle: ServerHandle,
    pub endpoint: String,
    pub dir: tempfile::TempDir,
}

pub fn config(dir: &tempfile::TempDir) -> ServeConfig {
    let mut config = ServeConfig::local(dir.path().join("db"));
    config.thrift = Listen::Off;
    config.http = Listen::Off;
    config
}

pub async fn start_with(dir: tempfile::TempDir, config: ServeConfig) -> TestServer {
    let handle = ServerHandle::start(config).await.expect("server starts");
    let addr = handle.grpc_addr.expect("grpc listens");
    TestServer {
        handle,
        endpoint: format!("http://{addr}"),
        dir,
    }
}

pub async fn start() -> TestServer {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(&dir);
    start_with(dir, config).await
}

impl TestServer {
    pub async fn client(&self) -> Client {
        Client::connect(self.endpoint.clone())
            .await
            .expect("connect")
    }

    pub async fn stop(self) {
        self.handle.shutdown();
        tokio::time::timeout(std::time::Duration::from_secs(30), self.handle.wait())
            .await
            .expect("server stops in time")
            .expect("server stops cleanly");
    }
}

/// A table `name` with families `f` (3 versions) and `g` (1 version).
pub async fn create_table(client: &Client, name: &str) {
    let schema = TableSchema::new(name)
        .family(FamilySchema::new("f").max_versions(3))
        .family(FamilySchema::new("g"));
    client
        .create_table(&schema, false)
        .await
        .expect("create table");
}

/// Rows `row00000`.. with one cell `f:q` = `value-N`, written in batches.
pub async fn fill(client: &Client, table: &str, rows: usize, value_bytes: usize) {
    for chunk in (0..rows).collect::<Vec<_>>().chunks(1000) {
        let puts = chunk.iter().map(|i| {
            let mut value = format!("value-{i}").into_bytes();
            value.resize(value_bytes.max(value.len()), b'.');
            Put::new(row_key(*i), "f", "q", value).into()
        });
        client
            .mutate(table, puts, Durability::Buffered)
            .await
            .expect("fill");
    }
}

pub fn row_key(i: usize) -> String {
    format!("row{i:05}")
}
