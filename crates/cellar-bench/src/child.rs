//! One child process per engine, so that peak RSS and `/proc/self/io` belong to that
//! engine alone.
//!
//! Protocol: the parent runs `<this binary> db --child '<Config as JSON>'` (the config
//! names exactly one engine). The child writes each result to stdout as one line,
//! [`RESULT_PREFIX`] followed by a [`Record`] in JSON, as soon as the workload ends; its
//! progress and errors go to stderr (inherited). Exit status 0 means every workload ran.
//! Other stdout lines (a library printing something) are passed through to stderr.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde::de::DeserializeOwned;

use crate::config::Config;
use crate::error::{BenchError, Result};
use crate::report::Record;
use crate::runner::Runner;

pub const RESULT_PREFIX: &str = "@cellar-bench-result ";

/// Parent side: runs `engine`'s child, returning its records in order. On failure the
/// records that did arrive come back alongside the error.
pub fn run_engine(cfg: &Config, engine: &str) -> (Vec<Record>, Result<()>) {
    match serde_json::to_string(&cfg.for_engine(engine)) {
        Ok(json) => run_child("db", engine, &json),
        Err(e) => (
            Vec::new(),
            Err(child_err(
                engine,
                format!("config could not be encoded: {e}"),
            )),
        ),
    }
}

/// Parent side of every workload: runs `<exe> <subcommand> --child <config_json>` and
/// collects the records its stdout announces with [`RESULT_PREFIX`]. On failure the records
/// that did arrive come back alongside the error.
pub fn run_child<R: DeserializeOwned>(
    subcommand: &str,
    engine: &str,
    config_json: &str,
) -> (Vec<R>, Result<()>) {
    let mut records = Vec::new();
    let r = spawn_and_collect(subcommand, engine, config_json, &mut records);
    (records, r)
}

pub fn child_err(engine: &str, what: impl Into<String>) -> BenchError {
    BenchError::Child {
        engine: engine.to_string(),
        what: what.into(),
    }
}

fn spawn_and_collect<R: DeserializeOwned>(
    subcommand: &str,
    engine: &str,
    config_json: &str,
    records: &mut Vec<R>,
) -> Result<()> {
    let exe = std::env::current_exe().map_err(|e| BenchError::io("current executable", e))?;
    let mut child = crate::command::pass_to_child(&mut Command::new(&exe))
        .args([subcommand, "--child", config_json])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| BenchError::io(&exe, e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| child_err(engine, "has no stdout pipe"))?;
    let mut protocol_error = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| BenchError::io("child stdout", e))?;
        match line.strip_prefix(RESULT_PREFIX) {
            Some(j) => match serde_json::from_str::<R>(j) {
                Ok(r) => records.push(r),
                Err(e) => {
                    protocol_error.get_or_insert(format!("sent a malformed result ({e}): {j}"));
                }
            },
            None => eprintln!("[{engine} stdout] {line}"),
        }
    }
    let status = child.wait().map_err(|e| BenchError::io(&exe, e))?;
    if !status.success() {
        return Err(child_err(engine, format!("failed ({status})")));
    }
    match protocol_error {
        Some(what) => Err(child_err(engine, what)),
        None => Ok(()),
    }
}

/// Child side of any workload: prints `r` for the parent as one protocol line.
pub fn emit_line<T: serde::Serialize>(r: &T) -> Result<()> {
    let line =
        serde_json::to_string(r).map_err(|e| BenchError::io("stdout", std::io::Error::other(e)))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "{RESULT_PREFIX}{line}")
        .and_then(|_| out.flush())
        .map_err(|e| BenchError::io("stdout", e))
}

/// Child side: runs every workload of the config's one engine, streaming the records.
pub fn child_main(config_json: &str) -> Result<()> {
    let cfg: Config = serde_json::from_str(config_json)
        .map_err(|e| BenchError::Invalid(format!("--child config: {e}")))?;
    let [engine] = cfg.engines.as_slice() else {
        return Err(BenchError::Invalid(
            "--child config must name exactly one engine".into(),
        ));
    };
    let engine = engine.clone();
    let stdout = std::io::stdout();
    let mut emit = |r: Record| -> Result<()> {
        eprintln!("{}", r.progress_line());
        let line = serde_json::to_string(&r)
            .map_err(|e| BenchError::io("stdout", std::io::Error::other(e)))?;
        let mut out = stdout.lock();
        writeln!(out, "{RESULT_PREFIX}{line}")
            .and_then(|_| out.flush())
            .map_err(|e| BenchError::io("stdout", e))
    };
    Runner::new(&cfg, &engine).run_all(&mut emit)
}
