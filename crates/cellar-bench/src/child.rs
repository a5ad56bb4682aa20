//! One child process per engine, so that peak RSS and `/proc/self/io` belong to that
//! engine alone.
//!
//! The one protocol of every suite: the parent runs `<this binary> <suite> --child
//! '<config as JSON>'` (the config names exactly one engine; [`run_child`]). The child
//! writes each measurement to stdout as one line, [`RESULT_PREFIX`] followed by its
//! [`Record`] in JSON, as soon as it is measured ([`emit`]); its progress and errors go to
//! stderr (inherited). Exit status 0 means every workload ran. Other stdout lines (a
//! library printing something) are passed through to stderr. The parent reads each record
//! back as the suite's typed measurement ([`Record::typed`]) for its tables.
//!
//! The Java peers print their measurements as bare JSON lines of the suite's typed shape
//! instead ([`collect_peer_lines`]); the parent's adapter turns them into records when it
//! writes its `--json` file.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{BenchError, Result};
use crate::record::{Record, Stamp};

pub const RESULT_PREFIX: &str = "@cellar-bench-result ";

/// Parent side of every suite's own children: runs `<exe> <suite> --child '<config as
/// JSON>'` (`config` names `engine` alone) and returns the measurements it sent, in order.
/// On failure the measurements that did arrive come back alongside the error.
pub fn run_child<T: DeserializeOwned>(
    suite: &str,
    engine: &str,
    config: &impl Serialize,
) -> (Vec<T>, Result<()>) {
    let json = match serde_json::to_string(config) {
        Ok(json) => json,
        Err(e) => {
            let why = format!("config could not be encoded: {e}");
            return (Vec::new(), Err(child_err(engine, why)));
        }
    };
    let mut cmd = match std::env::current_exe() {
        Ok(exe) => Command::new(exe),
        Err(e) => return (Vec::new(), Err(BenchError::io("current executable", e))),
    };
    crate::command::pass_to_child(&mut cmd).args([suite, "--child", &json]);
    collect_records(&mut cmd, suite, engine)
}

/// Parent side: runs `cmd`, a child of `suite` for `engine` that speaks this protocol, and
/// returns its records as the suite's typed measurements. A record of another suite or
/// engine, or one the suite cannot read, fails the run once the child has exited.
pub fn collect_records<T: DeserializeOwned>(
    cmd: &mut Command,
    suite: &str,
    engine: &str,
) -> (Vec<T>, Result<()>) {
    let mut got = Vec::new();
    let r = read_results(cmd, engine, &mut |line| {
        let json = line.strip_prefix(RESULT_PREFIX)?;
        Some(typed_record(json, suite, engine).map(|t| got.push(t)))
    });
    (got, r)
}

fn typed_record<T: DeserializeOwned>(
    json: &str,
    suite: &str,
    engine: &str,
) -> std::result::Result<T, String> {
    let r: Record =
        serde_json::from_str(json).map_err(|e| format!("sent a malformed record ({e}): {json}"))?;
    if r.suite != suite || r.engine != engine {
        return Err(format!("sent a record of {:?}/{:?}", r.suite, r.engine));
    }
    r.typed()
        .map_err(|e| format!("sent a record its suite cannot read ({e}): {json}"))
}

/// Parent side for a Java peer (`cmd`), which prints each measurement as a bare JSON line
/// (a line starting with `{`). `accept` names what is wrong with a well-formed line that
/// belongs elsewhere (another engine or workload); such a line or a malformed one fails the
/// run once the peer has exited. The lines that did arrive come back with the error.
pub fn collect_peer_lines<L: DeserializeOwned>(
    cmd: &mut Command,
    engine: &str,
    accept: impl Fn(&L) -> std::result::Result<(), String>,
) -> (Vec<L>, Result<()>) {
    let mut got = Vec::new();
    let r = read_results(cmd, engine, &mut |line| {
        if !line.starts_with('{') {
            return None;
        }
        let parsed = serde_json::from_str::<L>(line)
            .map_err(|e| format!("sent a malformed result ({e}): {line}"))
            .and_then(|l| accept(&l).map(|()| got.push(l)));
        Some(parsed)
    });
    (got, r)
}

pub fn child_err(engine: &str, what: impl Into<String>) -> BenchError {
    BenchError::Child {
        engine: engine.to_string(),
        what: what.into(),
    }
}

/// Spawns `cmd` and hands `result` each line of its stdout: `None` for a line that is not
/// a result (passed through to stderr), else whether the result was taken. The first
/// refusal fails the run after the child has exited, as does a failed exit status.
fn read_results(
    cmd: &mut Command,
    engine: &str,
    result: &mut dyn FnMut(&str) -> Option<std::result::Result<(), String>>,
) -> Result<()> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| BenchError::io(engine, e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| child_err(engine, "has no stdout pipe"))?;
    let mut protocol_error = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| BenchError::io(format!("{engine} stdout"), e))?;
        match result(&line) {
            None => eprintln!("[{engine} stdout] {line}"),
            Some(Ok(())) => {}
            Some(Err(why)) => {
                protocol_error.get_or_insert(why);
            }
        }
    }
    let status = child.wait().map_err(|e| BenchError::io(engine, e))?;
    if !status.success() {
        return Err(child_err(engine, format!("failed ({status})")));
    }
    match protocol_error {
        Some(what) => Err(child_err(engine, what)),
        None => Ok(()),
    }
}

/// Child side of every suite: `progress` to stderr, then `measurement` as a [`Record`] of
/// `suite` for the parent ([`emit`]).
pub fn emit_measurement<T: Serialize>(suite: &str, progress: &str, measurement: &T) -> Result<()> {
    eprintln!("{progress}");
    emit(&Record::of(suite, measurement, &Stamp::now())?)
}

/// Child side: `record` for the parent as one [`RESULT_PREFIX`] line on stdout, flushed at
/// once so the parent has it even if the child dies later.
pub fn emit(record: &Record) -> Result<()> {
    let line = serde_json::to_string(record)
        .map_err(|e| BenchError::io("stdout", std::io::Error::other(e)))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "{RESULT_PREFIX}{line}")
        .and_then(|_| out.flush())
        .map_err(|e| BenchError::io("stdout", e))
}
