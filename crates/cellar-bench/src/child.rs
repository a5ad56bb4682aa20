//! One child process per engine, so that peak RSS and `/proc/self/io` belong to that
//! engine alone.
//!
//! The one protocol of every suite: the parent runs `<this binary> <suite> --child
//! '<config as JSON>'` (the config names exactly one engine; [`run_child`]). The child
//! writes each result to stdout as one line, [`RESULT_PREFIX`] followed by the suite's
//! measurement in JSON, as soon as it is measured ([`emit`]); its progress and errors go to
//! stderr (inherited). Exit status 0 means every workload ran. Other stdout lines (a
//! library printing something) are passed through to stderr. The Java peers print bare
//! JSON lines instead ([`Framing::Bare`]); the parent turns every measurement into a
//! [`crate::record::Record`] when it writes its `--json` file.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde::de::DeserializeOwned;

use crate::error::{BenchError, Result};

pub const RESULT_PREFIX: &str = "@cellar-bench-result ";

/// Parent side of every suite's own children: runs `<exe> <subcommand> --child
/// <config_json>` and collects the results its stdout announces with [`RESULT_PREFIX`].
/// On failure the results that did arrive come back alongside the error.
pub fn run_child<R: DeserializeOwned>(
    subcommand: &str,
    engine: &str,
    config_json: &str,
) -> (Vec<R>, Result<()>) {
    let mut cmd = match std::env::current_exe() {
        Ok(exe) => Command::new(exe),
        Err(e) => return (Vec::new(), Err(BenchError::io("current executable", e))),
    };
    crate::command::pass_to_child(&mut cmd).args([subcommand, "--child", config_json]);
    collect(&mut cmd, engine, Framing::Prefixed, |_: &R| Ok(()))
}

/// How a child marks a result line on its stdout; every other line is passed to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// [`RESULT_PREFIX`], then the result as JSON: this binary's children, whose engines'
    /// libraries may print anything else.
    Prefixed,
    /// A line that starts with `{` is a result: the Java peers print bare JSON lines.
    Bare,
}

/// Parent side: spawns `cmd` and collects the results on its stdout in order. `accept`
/// names what is wrong with a well-formed result that belongs elsewhere (another engine
/// or workload). A malformed or refused result fails the run once the child has exited;
/// the results that did arrive come back with the error.
pub fn collect<R: DeserializeOwned>(
    cmd: &mut Command,
    engine: &str,
    framing: Framing,
    accept: impl Fn(&R) -> std::result::Result<(), String>,
) -> (Vec<R>, Result<()>) {
    let mut records = Vec::new();
    let r = spawn_and_collect(cmd, engine, framing, &accept, &mut records);
    (records, r)
}

pub fn child_err(engine: &str, what: impl Into<String>) -> BenchError {
    BenchError::Child {
        engine: engine.to_string(),
        what: what.into(),
    }
}

fn spawn_and_collect<R: DeserializeOwned>(
    cmd: &mut Command,
    engine: &str,
    framing: Framing,
    accept: &dyn Fn(&R) -> std::result::Result<(), String>,
    records: &mut Vec<R>,
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
        let json = match framing {
            Framing::Prefixed => line.strip_prefix(RESULT_PREFIX),
            Framing::Bare => Some(line.as_str()).filter(|l| l.starts_with('{')),
        };
        let Some(json) = json else {
            eprintln!("[{engine} stdout] {line}");
            continue;
        };
        match serde_json::from_str::<R>(json)
            .map_err(|e| format!("sent a malformed result ({e}): {json}"))
        {
            Ok(r) => match accept(&r) {
                Ok(()) => records.push(r),
                Err(why) => {
                    protocol_error.get_or_insert(why);
                }
            },
            Err(why) => {
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

/// Child side of every suite: `progress` to stderr, then `r` for the parent as one
/// [`RESULT_PREFIX`] line on stdout, flushed at once so the parent has it even if the
/// child dies later.
pub fn emit<T: serde::Serialize>(progress: &str, r: &T) -> Result<()> {
    eprintln!("{progress}");
    let line =
        serde_json::to_string(r).map_err(|e| BenchError::io("stdout", std::io::Error::other(e)))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "{RESULT_PREFIX}{line}")
        .and_then(|_| out.flush())
        .map_err(|e| BenchError::io("stdout", e))
}
