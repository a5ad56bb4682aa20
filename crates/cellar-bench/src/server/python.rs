//! Running bench/python/import_happybase.py: table creation, the import by W writer
//! processes that start together, open-loop point gets, and the read-back check.
//!
//! The script prints one JSON object per run on stdout. Writer processes are started with
//! `--wait-go`: each reads its slice, connects, prints `{"ready": true}` and waits for a line
//! on stdin, so that process start-up (the interpreter, imports, the connection) is not
//! timed; the import's span runs from the earliest writer's start to the latest one's end
//! (wall-clock times the writers report). Exit status 3 with `{"skipped": WHY}` means the
//! asked-for client library is not installed.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use serde::Deserialize;

use crate::error::{BenchError, Result};
use crate::measure::Latency;

/// Exit status of the script when its client library is missing.
const EXIT_SKIPPED: i32 = 3;

/// The interpreter and the script.
#[derive(Debug, Clone)]
pub struct PyDriver {
    pub python: PathBuf,
    pub script: PathBuf,
}

/// Which Python client the script uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// happybase 1.3 over Thrift1 (buffered transport, binary protocol).
    Happybase,
    /// Cellar's Python gRPC client (clients/python).
    Grpc,
}

impl Api {
    fn flag(self) -> &'static str {
        match self {
            Api::Happybase => "happybase",
            Api::Grpc => "grpc",
        }
    }
}

/// What a run gave: a result, or why the client could not run.
pub enum Outcome<T> {
    Ran(T),
    Skipped(String),
}

/// The import of W writer processes together.
#[derive(Clone)]
pub struct Import {
    pub rows: u64,
    pub seconds: f64,
    /// Per batch sent (a mutateRows call of batch_size rows).
    pub sends: Latency,
}

/// One open-loop step of point gets.
#[derive(Debug, Clone, Deserialize)]
pub struct Gets {
    pub completed: u64,
    pub found: u64,
    pub unserved: u64,
    pub seconds: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub threads: usize,
}

#[derive(Deserialize)]
struct WriterLine {
    rows: u64,
    start: f64,
    end: f64,
    send_latency_us: Vec<f64>,
}

fn err(what: impl Into<String>) -> BenchError {
    BenchError::Child {
        engine: "python".to_string(),
        what: what.into(),
    }
}

/// The script's own folder: $CELLAR_BENCH_PYTHON_DIR, else the source tree's bench/python.
pub fn default_script() -> PathBuf {
    let dir = std::env::var_os("CELLAR_BENCH_PYTHON_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/python"),
        PathBuf::from,
    );
    dir.join("import_happybase.py")
}

/// `target/py-venv/bin/python` (scripts/test.sh's virtualenv) under the current directory or
/// the source tree, if there is one.
pub fn default_python() -> Option<PathBuf> {
    let rel = Path::new("target/py-venv/bin/python");
    let tree = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    [rel.to_path_buf(), tree].into_iter().find(|p| p.is_file())
}

impl PyDriver {
    /// Whether the interpreter runs and has happybase, or why not.
    pub fn check(&self) -> std::result::Result<(), String> {
        if !self.script.is_file() {
            return Err(format!("no driver script at {}", self.script.display()));
        }
        let out = Command::new(&self.python)
            .args(["-c", "import happybase"])
            .output()
            .map_err(|e| format!("{} could not run: {e}", self.python.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} has no happybase (scripts/test.sh sets up target/py-venv with it)",
                self.python.display()
            ))
        }
    }

    fn command(&self, mode: &str, addr: SocketAddr, table: &str) -> Command {
        let mut c = Command::new(&self.python);
        c.arg(&self.script)
            .arg(mode)
            .args(["--host", &addr.ip().to_string()])
            .args(["--port", &addr.port().to_string()])
            .args(["--table", table]);
        c
    }

    /// Runs a one-shot mode and parses its JSON line.
    fn one_shot<T: serde::de::DeserializeOwned>(&self, mut cmd: Command) -> Result<Outcome<T>> {
        let out = cmd
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| err(format!("{} could not run: {e}", self.python.display())))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or("");
        if out.status.code() == Some(EXIT_SKIPPED) {
            return Ok(Outcome::Skipped(skip_reason(line)));
        }
        if !out.status.success() {
            return Err(err(format!("driver failed ({})", out.status)));
        }
        serde_json::from_str(line)
            .map(Outcome::Ran)
            .map_err(|e| err(format!("driver printed {line:?}: {e}")))
    }

    /// Drops and creates `table` with family `d`.
    pub fn create_table(&self, addr: SocketAddr, table: &str, api: Api) -> Result<Outcome<()>> {
        let mut c = self.command("create", addr, table);
        c.args(["--api", api.flag()]);
        Ok(match self.one_shot::<serde_json::Value>(c)? {
            Outcome::Ran(_) => Outcome::Ran(()),
            Outcome::Skipped(why) => Outcome::Skipped(why),
        })
    }

    /// Reads back rows spread over the first `records` and checks their values.
    pub fn verify(&self, addr: SocketAddr, table: &str, input: &Path, records: u64) -> Result<()> {
        let mut c = self.command("verify", addr, table);
        c.arg("--input").arg(input);
        c.args(["--records", &records.to_string()]);
        match self.one_shot::<serde_json::Value>(c)? {
            Outcome::Ran(_) => Ok(()),
            Outcome::Skipped(why) => Err(err(why)),
        }
    }

    /// `writers` processes write their slices of the first `records` rows, all started at once.
    pub fn import(&self, job: &ImportJob) -> Result<Outcome<Import>> {
        let mut procs = Vec::new();
        for w in 0..job.writers {
            let mut c = self.command("import", job.addr, job.table);
            c.arg("--input").arg(job.input);
            c.args(["--records", &job.records.to_string()])
                .args(["--writer", &w.to_string()])
                .args(["--writers", &job.writers.to_string()])
                .args(["--batch-size", &job.batch_size.to_string()])
                .args(["--api", job.api.flag(), "--wait-go"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit());
            let child = c
                .spawn()
                .map_err(|e| err(format!("{} could not run: {e}", self.python.display())))?;
            procs.push(Writer::new(child)?);
        }
        // Everyone ready (or one skipped / failed) before anyone starts.
        for p in &mut procs {
            let line = p.line()?;
            if line.contains("\"ready\"") {
                continue;
            }
            if line.contains("\"skipped\"") {
                return Ok(Outcome::Skipped(skip_reason(&line)));
            }
            return Err(err(format!("writer said {line:?} instead of ready")));
        }
        for p in &mut procs {
            p.go()?;
        }
        let mut lines = Vec::new();
        for p in &mut procs {
            let line = p.line()?;
            p.finish()?;
            lines.push(
                serde_json::from_str::<WriterLine>(&line)
                    .map_err(|e| err(format!("writer printed {line:?}: {e}")))?,
            );
        }
        Ok(Outcome::Ran(combine(&lines)))
    }

    /// Open-loop point gets at `rate` per second for `seconds` from `threads` connections.
    pub fn gets(&self, job: &GetJob) -> Result<Outcome<Gets>> {
        let mut c = self.command("get", job.addr, job.table);
        c.arg("--input").arg(job.input);
        c.args(["--records", &job.records.to_string()])
            .args(["--rate", &job.rate.to_string()])
            .args(["--seconds", &job.seconds.to_string()])
            .args(["--threads", &job.threads.to_string()]);
        self.one_shot(c)
    }
}

pub struct ImportJob<'a> {
    pub addr: SocketAddr,
    pub table: &'a str,
    pub input: &'a Path,
    pub records: u64,
    pub writers: usize,
    pub batch_size: usize,
    pub api: Api,
}

pub struct GetJob<'a> {
    pub addr: SocketAddr,
    pub table: &'a str,
    pub input: &'a Path,
    pub records: u64,
    pub rate: f64,
    pub seconds: f64,
    pub threads: usize,
}

fn skip_reason(line: &str) -> String {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get("skipped")?.as_str().map(str::to_string))
        .unwrap_or_else(|| "the Python client is not installed".to_string())
}

/// All writers' rows over the span from the first start to the last end.
fn combine(lines: &[WriterLine]) -> Import {
    let start = lines.iter().map(|l| l.start).fold(f64::INFINITY, f64::min);
    let end = lines
        .iter()
        .map(|l| l.end)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut sends = Latency::default();
    for l in lines {
        for us in &l.send_latency_us {
            sends.record_ns((us * 1000.0).max(0.0) as u64);
        }
    }
    Import {
        rows: lines.iter().map(|l| l.rows).sum(),
        seconds: (end - start).max(0.0),
        sends,
    }
}

/// One writer process; killed if dropped before it finished.
struct Writer {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Writer {
    fn new(mut child: Child) -> Result<Writer> {
        let out = child
            .stdout
            .take()
            .ok_or_else(|| err("writer has no stdout pipe"))?;
        Ok(Writer {
            child,
            out: BufReader::new(out),
        })
    }

    /// The next JSON line (other lines go to stderr).
    fn line(&mut self) -> Result<String> {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .out
                .read_line(&mut line)
                .map_err(|e| err(format!("writer stdout: {e}")))?;
            if n == 0 {
                let status = self.child.wait().map_err(|e| err(e.to_string()))?;
                if status.code() == Some(EXIT_SKIPPED) {
                    return Ok("{\"skipped\": \"the Python client is not installed\"}".into());
                }
                return Err(err(format!("writer exited ({status}) without a result")));
            }
            if line.trim_start().starts_with('{') {
                return Ok(line.trim().to_string());
            }
            eprint!("[python stdout] {line}");
        }
    }

    fn go(&mut self) -> Result<()> {
        let stdin = self
            .child
            .stdin
            .as_mut()
            .ok_or_else(|| err("writer has no stdin pipe"))?;
        stdin
            .write_all(b"go\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| err(format!("writer stdin: {e}")))
    }

    fn finish(&mut self) -> Result<()> {
        drop(self.child.stdin.take());
        let status = self.child.wait().map_err(|e| err(e.to_string()))?;
        if status.success() {
            Ok(())
        } else {
            Err(err(format!("writer failed ({status})")))
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_combine_over_their_joint_span() {
        let l = |rows, start, end| WriterLine {
            rows,
            start,
            end,
            send_latency_us: vec![100.0, 300.0],
        };
        let c = combine(&[l(10, 5.0, 7.0), l(20, 4.5, 6.0)]);
        assert_eq!(c.rows, 30);
        assert!((c.seconds - 2.5).abs() < 1e-9);
        assert_eq!(c.sends.count(), 4);
    }

    #[test]
    fn skip_lines_give_their_reason() {
        assert_eq!(skip_reason(r#"{"skipped": "no cellar"}"#), "no cellar");
        assert!(skip_reason("garbage").contains("not installed"));
    }
}
