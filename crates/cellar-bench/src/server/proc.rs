//! The servers `cellar-bench server` starts, each owned by a [`ServerProcess`] guard that
//! stops it when dropped (on success, on error, on panic unwinding): `cellar serve` and the
//! HBase Thrift gateway JVM (bench/java `HBaseThriftGateway`).
//!
//! Both announce their listeners on stdout as `listening PROTOCOL ADDR` lines (the format of
//! `cellar serve`); a reader thread forwards every stdout line to a channel, so the parent
//! can wait for them with a deadline and later read the gateway's answers to commands.
//! Stopping: stdin is closed (the gateway's signal to stop), then `cellar serve` gets
//! SIGTERM; whoever has not exited within the grace period gets SIGKILL. Should this
//! process die without unwinding, the kernel sends each server SIGTERM (PR_SET_PDEATHSIG).

// Unsafe code here: `prctl(PR_SET_PDEATHSIG)` in the child and `kill` of our own child.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::error::{BenchError, Result};

/// How a server is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopBy {
    /// SIGTERM (after stdin closes): `cellar serve`.
    Sigterm,
    /// Closing stdin only: the gateway JVM shuts its cluster down and exits.
    StdinClose,
}

/// A running server child process; stopped when dropped.
pub struct ServerProcess {
    name: String,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stop_by: StopBy,
    grace: Duration,
    /// Protocol → address from the `listening` lines.
    pub listeners: BTreeMap<String, SocketAddr>,
}

fn failed(name: &str, what: impl Into<String>) -> BenchError {
    BenchError::Child {
        engine: name.to_string(),
        what: what.into(),
    }
}

/// `listening thrift 127.0.0.1:9090` → ("thrift", addr).
pub fn parse_listening(line: &str) -> Option<(String, SocketAddr)> {
    let mut words = line.split_whitespace();
    if words.next()? != "listening" {
        return None;
    }
    let protocol = words.next()?.to_string();
    let addr = words.next()?.parse().ok()?;
    words.next().is_none().then_some((protocol, addr))
}

impl ServerProcess {
    /// Spawns `cmd` (stdin and stdout piped, stderr inherited) and waits up to `timeout` for
    /// a `listening` line of each protocol in `want`.
    pub fn start(
        name: &str,
        mut cmd: Command,
        want: &[&str],
        timeout: Duration,
        stop_by: StopBy,
        grace: Duration,
    ) -> Result<ServerProcess> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // If this process dies without running the guards (SIGKILL), the server gets
        // SIGTERM from the kernel rather than living on as an orphan holding its ports.
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| failed(name, format!("could not be started: {e}")))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (tx, lines) = mpsc::channel();
        if let Some(out) = stdout {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut server = ServerProcess {
            name: name.to_string(),
            child: Some(child),
            stdin,
            lines,
            stop_by,
            grace,
            listeners: BTreeMap::new(),
        };
        let deadline = Instant::now() + timeout;
        while !want.iter().all(|p| server.listeners.contains_key(*p)) {
            let line = server.next_line(deadline)?;
            match parse_listening(&line) {
                Some((protocol, addr)) => {
                    eprintln!("[{name}] {protocol} on {addr}");
                    server.listeners.insert(protocol, addr);
                }
                None => eprintln!("[{name} stdout] {line}"),
            }
        }
        Ok(server)
    }

    pub fn addr(&self, protocol: &str) -> Result<SocketAddr> {
        self.listeners
            .get(protocol)
            .copied()
            .ok_or_else(|| failed(&self.name, format!("has no {protocol} listener")))
    }

    /// The next stdout line, or an error when the process ended or `deadline` passed.
    pub fn next_line(&mut self, deadline: Instant) -> Result<String> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(failed(
                &self.name,
                "did not answer in time (its stderr above says why)",
            )),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self
                    .child
                    .as_mut()
                    .and_then(|c| c.wait().ok())
                    .map_or_else(|| "?".to_string(), |s| s.to_string());
                Err(failed(
                    &self.name,
                    format!("exited ({status}) before answering; its stderr above says why"),
                ))
            }
        }
    }

    /// Writes one command line to the server's stdin.
    pub fn send_line(&mut self, line: &str) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| failed(&self.name, "stdin is closed"))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| failed(&self.name, format!("stdin: {e}")))
    }

    /// Stops the server and waits for it; an error if it had to be killed or failed.
    pub fn stop(mut self) -> Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        drop(self.stdin.take());
        if self.stop_by == StopBy::Sigterm {
            // SAFETY: kill only reads its arguments; the pid is our own child's, still
            // unreaped, so it cannot name another process.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + self.grace;
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(failed(&self.name, format!("exited with {status} on stop")))
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) | Err(_) => break,
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(failed(
            &self.name,
            format!("did not stop within {:?}; killed", self.grace),
        ))
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if self.child.is_some() {
            eprintln!("[{}] stopping", self.name);
            if let Err(e) = self.stop_inner() {
                eprintln!("[{}] {e}", self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_lines_parse() {
        assert_eq!(
            parse_listening("listening thrift 127.0.0.1:9090"),
            Some(("thrift".to_string(), "127.0.0.1:9090".parse().unwrap()))
        );
        assert_eq!(parse_listening("listening grpc nowhere"), None);
        assert_eq!(parse_listening("started"), None);
        assert_eq!(parse_listening("listening http 127.0.0.1:1 extra"), None);
    }

    #[test]
    fn a_server_is_waited_for_and_stopped_by_its_guard() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo hello; echo listening thrift 127.0.0.1:4242; cat",
        ]);
        let s = ServerProcess::start(
            "sh",
            cmd,
            &["thrift"],
            Duration::from_secs(10),
            StopBy::StdinClose,
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(s.addr("thrift").unwrap().port(), 4242);
        assert!(s.addr("grpc").is_err());
        s.stop().unwrap();

        // Exits before announcing: a clear error, not a hang.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 3"]);
        let e = ServerProcess::start(
            "sh",
            cmd,
            &["thrift"],
            Duration::from_secs(10),
            StopBy::Sigterm,
            Duration::from_secs(1),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("exited"), "{e}");
    }
}
