//! The `cellar` binary on a database in a real SeaweedFS (`--db s3://...`): the shell and
//! `cellar load`; two writer processes, where the newer fences the older; a writer killed
//! with SIGKILL whose disk is lost, with the WAL in the bucket; and a follower.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

use cellar_testkit::SeaweedFs;

fn seaweed() -> &'static SeaweedFs {
    SeaweedFs::shared().unwrap()
}

fn cellar(s: &SeaweedFs) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cellar"));
    c.envs(s.env());
    c
}

/// `cellar shell -e` on `url` with the cache in `cache` and the extra flags.
fn shell(s: &SeaweedFs, url: &str, cache: &Path, extra: &[&str], script: &str) -> Output {
    cellar(s)
        .args(["shell", "--db", url, "--cache-dir"])
        .arg(cache)
        .args(extra)
        .args(["-e", script])
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn shell_and_load_work_on_a_database_in_the_bucket() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("cli-load"));
    let cache = tempfile::tempdir().unwrap();
    let o = shell(
        s,
        &url,
        cache.path(),
        &[],
        "CREATE TABLE t (f); INSERT INTO t VALUES ('r0', 'f:q', 'v0');",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let tsv = cache.path().join("in.tsv");
    let mut lines = String::from("row\tf:a\n");
    for i in 1..=500 {
        lines.push_str(&format!("r{i:03}\tvalue{i}\n"));
    }
    std::fs::write(&tsv, lines).unwrap();
    // The same machine: the shell's writes are in its local WAL, which this open replays
    // into the bucket.
    let o = cellar(s)
        .args(["load", "--db", &url, "--cache-dir"])
        .arg(cache.path())
        .args(["--table", "t"])
        .arg(&tsv)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Another machine (an empty cache directory) reads it all from the bucket.
    let other = tempfile::tempdir().unwrap();
    let o = shell(
        s,
        &url,
        other.path(),
        &[],
        "SELECT * FROM t WHERE ROW = 'r500'; SELECT * FROM t WHERE ROW = 'r0';",
    );
    let out = text(&o.stdout);
    assert!(
        out.contains("value500") && out.contains("v0"),
        "{out}\n{}",
        text(&o.stderr)
    );
}

/// A `cellar shell --batch` process fed one statement at a time.
struct Writer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Writer {
    fn start(s: &SeaweedFs, url: &str, cache: &Path) -> Writer {
        let mut child = cellar(s)
            .args([
                "shell",
                "--batch",
                "--durability",
                "sync",
                "--wal",
                "object",
                "--db",
                url,
                "--cache-dir",
            ])
            .arg(cache)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Writer {
            child,
            stdin,
            stdout,
        }
    }

    /// Runs one INSERT and a marker SELECT; true once the marker came back (the INSERT was
    /// acknowledged durable), false if the process stopped first.
    fn insert(&mut self, row: &str) -> bool {
        let script = format!("INSERT INTO t VALUES ('{row}', 'f', 'x'); SHOW TABLES;\n");
        if self.stdin.write_all(script.as_bytes()).is_err() {
            return false;
        }
        let _ = self.stdin.flush();
        let mut line = String::new();
        loop {
            line.clear();
            match self.stdout.read_line(&mut line) {
                Ok(0) | Err(_) => return false,
                Ok(_) if line.trim() == "t" => return true,
                Ok(_) => {}
            }
        }
    }

    fn stderr(self) -> String {
        drop(self.stdin);
        let out = self.child.wait_with_output().unwrap();
        text(&out.stderr)
    }
}

#[test]
fn a_newer_writer_process_fences_the_older_one_every_time() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("cli-fence"));
    let caches: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let o = shell(
        s,
        &url,
        caches[0].path(),
        &["--wal", "object"],
        "CREATE TABLE t (f);",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut acked = Vec::new();
    for round in 0..3 {
        let mut a = Writer::start(s, &url, caches[round % 2].path());
        assert!(a.insert(&format!("a{round}")));
        acked.push(format!("a{round}"));
        let mut b = Writer::start(s, &url, caches[(round + 1) % 2].path());
        assert!(b.insert(&format!("b{round}")));
        acked.push(format!("b{round}"));
        assert!(
            !a.insert(&format!("late{round}")),
            "the fenced writer acknowledged a write"
        );
        let err = a.stderr();
        assert!(err.contains("fenced"), "{err}");
        drop(b.stdin);
        assert!(b.child.wait().unwrap().success());
    }
    let fresh = tempfile::tempdir().unwrap();
    let o = shell(
        s,
        &url,
        fresh.path(),
        &["--wal", "object"],
        "SELECT * FROM t;",
    );
    let out = text(&o.stdout);
    for row in &acked {
        assert!(out.contains(row.as_str()), "{row} missing from {out}");
    }
    assert!(!out.contains("late"), "{out}");
}

#[test]
fn a_killed_writer_whose_disk_is_lost_keeps_every_acknowledged_write() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("cli-kill"));
    let cache = tempfile::tempdir().unwrap();
    let o = shell(
        s,
        &url,
        cache.path(),
        &["--wal", "object"],
        "CREATE TABLE t (f);",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut w = Writer::start(s, &url, cache.path());
    let mut acked = Vec::new();
    for i in 0..40 {
        let row = format!("k{i:03}");
        assert!(w.insert(&row));
        acked.push(row);
    }
    w.child.kill().unwrap();
    w.child.wait().unwrap();
    drop(cache);
    let fresh = tempfile::tempdir().unwrap();
    let o = shell(
        s,
        &url,
        fresh.path(),
        &["--wal", "object"],
        "SELECT * FROM t;",
    );
    let out = text(&o.stdout);
    for row in &acked {
        assert!(out.contains(row.as_str()), "{row} missing from {out}");
    }
}

/// A `cellar serve` process with only its HTTP listener.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(s: &SeaweedFs, url: &str, cache: &Path, extra: &[&str]) -> Server {
        let mut child = cellar(s)
            .args(["serve", "--db", url, "--thrift", "none", "--grpc", "none"])
            .args(["--http", "127.0.0.1:0", "--cache-dir"])
            .arg(cache)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = line
            .split_whitespace()
            .last()
            .unwrap_or_default()
            .to_string();
        assert!(line.starts_with("listening"), "{line}");
        Server { child, addr }
    }

    /// One HTTP/1.0 request; the response's status line and body.
    fn request(&self, method: &str, path: &str, body: &str) -> (String, String) {
        use std::io::Read;
        let mut c = std::net::TcpStream::connect(&self.addr).unwrap();
        let req = format!(
            "{method} {path} HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        c.write_all(req.as_bytes()).unwrap();
        let mut resp = String::new();
        c.read_to_string(&mut resp).unwrap();
        let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
        (
            head.lines().next().unwrap_or_default().to_string(),
            body.to_string(),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_and_a_follower_serve_a_database_in_the_bucket() {
    let s = seaweed();
    let url = s.url(&s.fresh_prefix("cli-serve"));
    let (cw, cf) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = shell(
        s,
        &url,
        cw.path(),
        &["--wal", "object"],
        "CREATE TABLE t (f);",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let writer = Server::start(s, &url, cw.path(), &["--wal", "object"]);
    let body = r#"{"cells": [{"column": "f:q", "value": "hello"}], "durability": "sync"}"#;
    let (status, reply) = writer.request("PUT", "/t/row1", body);
    assert!(status.contains("200"), "{status} {reply}");
    let (_, row) = writer.request("GET", "/t/row1", "");
    assert!(row.contains("hello"), "{row}");
    let (_, metrics) = writer.request("GET", "/metrics", "");
    assert!(
        metrics.contains("cellar_object_requests_total{op=\"put\",kind=\"wal\"}"),
        "{metrics}"
    );

    let follower = Server::start(s, &url, cf.path(), &["--wal", "object", "--follow"]);
    let (_, row) = follower.request("GET", "/t/row1", "");
    assert!(row.contains("hello"), "{row}");
    let (status, _) = follower.request("PUT", "/t/row2", body);
    assert!(!status.contains("200"), "a follower took a write: {status}");
    // A write to the writer reaches the follower within its polling interval.
    let (status, _) = writer.request("PUT", "/t/row3", body);
    assert!(status.contains("200"), "{status}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, _) = follower.request("GET", "/t/row3", "");
        if status.contains("200") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the follower never saw row3"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
