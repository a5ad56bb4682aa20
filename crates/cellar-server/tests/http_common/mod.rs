//! Shared by the HTTP tests: a server on an ephemeral port, and a minimal HTTP/1.1 client
//! (one request per connection, chunked bodies decoded) so that tests see the raw wire.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use cellar_server::{ServeConfig, ServerHandle};
use cellar_table::{FamilyOptions, TableSchema};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct Server {
    pub handle: ServerHandle,
    pub addr: SocketAddr,
    pub _dir: tempfile::TempDir,
}

/// Starts a server with only the HTTP listener, after `tweak` adjusts its configuration.
pub async fn start(tweak: impl FnOnce(&mut ServeConfig)) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServeConfig::local(dir.path().join("db"));
    config.thrift = cellar_server::Listen::Off;
    config.grpc = cellar_server::Listen::Off;
    tweak(&mut config);
    let handle = ServerHandle::start(config).await.unwrap();
    let addr = handle.http_addr.unwrap();
    Server {
        handle,
        addr,
        _dir: dir,
    }
}

impl Server {
    pub fn create_table(&self, name: &str, families: &[&str]) {
        let mut schema = TableSchema::new(name);
        for f in families {
            schema = schema.family(*f, FamilyOptions::default());
        }
        self.handle.state.store.create_table(schema).unwrap();
    }

    pub async fn stop(self) {
        self.handle.shutdown();
        tokio::time::timeout(Duration::from_secs(30), self.handle.wait())
            .await
            .expect("server stops in time")
            .expect("server stops cleanly");
    }
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// Sends one request (`extra_headers` as written, e.g. "Authorization: Bearer x\r\n").
pub async fn request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    extra_headers: &str,
    body: &[u8],
) -> Reply {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n{extra_headers}Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    read_reply(&mut s, Duration::from_secs(60)).await
}

/// Reads the reply on `s` until the server closes, within `limit`.
pub async fn read_reply(s: &mut TcpStream, limit: Duration) -> Reply {
    let mut raw = Vec::new();
    tokio::time::timeout(limit, s.read_to_end(&mut raw))
        .await
        .expect("reply in time")
        .unwrap();
    parse_reply(&raw)
}

pub async fn get(addr: SocketAddr, target: &str) -> Reply {
    request(addr, "GET", target, "", b"").await
}

pub fn parse_reply(raw: &[u8]) -> Reply {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = std::str::from_utf8(&raw[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size_text = std::str::from_utf8(&rest[..line_end]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        rest = &rest[line_end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}
