//! Reading the result records of the workload subcommands into the report's [`Record`]s.
//!
//! Every line is a trust boundary: the files are written by several subcommands over
//! time, by hand sometimes, and may be cut short. A line must be one
//! [`crate::record::Record`] with a non-empty `suite`, `engine` and `workload`; a metric
//! that is missing or of the wrong type counts as missing. A line that fails this is *malformed*: it becomes
//! a [`SkippedLine`] naming the file and line, or, with `strict`, the error of the whole
//! report. Blank lines are ignored. A file that cannot be read at all is an error.

use std::path::{Component, Path, PathBuf};

use crate::error::{BenchError, Result};
use crate::record;

/// One input file, as the report names and links it.
#[derive(Debug, Clone)]
pub struct InputFile {
    /// Its path relative to the report's directory when that can be worked out (so the
    /// report reads the same wherever the repository is), else as given.
    pub display: String,
    /// `display` when it is relative to the report (a Markdown link works), else `None`.
    pub link: Option<String>,
    pub records: usize,
}

/// One measurement: one line of an input file.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// Index into [`Input::files`].
    pub file: usize,
    pub line: usize,
    /// The subcommand that measured it; it chooses the table's family and figure.
    pub suite: String,
    pub engine: String,
    pub engine_options: String,
    pub workload: String,
    pub variant: String,
    pub ops_per_sec: Option<f64>,
    pub rows_per_ms: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub latency_unit: String,
    pub seconds: Option<f64>,
    /// Hypertable's one-line remark (`note`); the `notes` arrays are left to the raw files.
    pub note: String,
    /// Why the engine did not run this variant (`skipped`).
    pub skipped: Option<String>,
    /// The command line that produced the record, if it carries one (`command`).
    pub command: Option<String>,
    /// The commit of the binary that produced the record (`commit`).
    pub commit: Option<String>,
    /// The day the record was measured (`date`, e.g. `2026-11-24`).
    pub date: Option<String>,
    /// dfsio: TestDFSIO's throughput, average IO rate and its deviation, the aggregate
    /// rate and fio's ceiling for the same pattern.
    pub mb_per_sec: Option<f64>,
    pub average_io_rate_mb_per_sec: Option<f64>,
    pub io_rate_std_dev: Option<f64>,
    pub aggregate_mb_per_sec: Option<f64>,
    pub fio_mb_per_sec: Option<f64>,
    /// server_targets: the measured value (`value`), its `unit`, the goal (`target`),
    /// whether it was met (`met`) and the figures it comes from (`inputs`).
    pub value: Option<f64>,
    pub unit: String,
    pub goal: String,
    pub met: Option<bool>,
    pub inputs: String,
    /// growth: the costs plotted against size.
    pub costs: Option<Costs>,
}

/// What a `growth` record says about the cost of its size (docs/benchmarks.md, "growth").
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Costs {
    /// Keys in the database (`num`).
    pub keys: f64,
    /// Device bytes written over the keys' and values' bytes (`write_amp`).
    pub write_amp: Option<f64>,
    /// Bytes on disk over the keys' and values' bytes (`db_bytes` ÷ keys × (key + value)).
    pub space_amp: Option<f64>,
    /// Index and filter memory per key (`resident_index_filter_bytes` ÷ keys).
    pub index_filter_bytes_per_key: Option<f64>,
    /// Peak resident memory per key (`peak_rss_bytes` ÷ keys).
    pub rss_bytes_per_key: Option<f64>,
    pub device_reads_per_op: Option<f64>,
}

impl Costs {
    fn of(m: &record::Metrics) -> Option<Costs> {
        let number = |key: &str| m.f64(key).filter(|v| v.is_finite() && *v >= 0.0);
        let keys = number("num").filter(|&k| k > 0.0)?;
        let user_bytes = keys * (number("key_size")? + number("value_size")?);
        let per = |v: Option<f64>, d: f64| v.map(|v| v / d).filter(|_| d > 0.0);
        Some(Costs {
            keys,
            write_amp: number("write_amp"),
            space_amp: per(number("db_bytes"), user_bytes),
            index_filter_bytes_per_key: per(number("resident_index_filter_bytes"), keys),
            rss_bytes_per_key: per(number("peak_rss_bytes"), keys),
            device_reads_per_op: number("device_reads_per_op"),
        })
    }

    /// The table's note: "write amp 2.91 · space 0.46 · index+filter 1.9 B/key · ...".
    pub fn note(&self) -> String {
        let mut parts = Vec::new();
        if let Some(v) = self.write_amp {
            parts.push(format!("write amp {v:.2}"));
        }
        if let Some(v) = self.space_amp {
            parts.push(format!("space amp {v:.2}"));
        }
        if let Some(v) = self.index_filter_bytes_per_key {
            parts.push(format!("index+filter {v:.2} B/key"));
        }
        if let Some(v) = self.rss_bytes_per_key {
            parts.push(format!("peak RSS {v:.1} B/key"));
        }
        if let Some(v) = self.device_reads_per_op {
            parts.push(format!("{v:.3} device reads/op"));
        }
        parts.join(" · ")
    }
}

/// A malformed line, reported and left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

#[derive(Debug, Default)]
pub struct Input {
    pub files: Vec<InputFile>,
    pub records: Vec<Record>,
    pub skipped: Vec<SkippedLine>,
}

/// Reads `paths` (deduplicated, in the order of their display names), naming them
/// relative to `report_dir`.
pub fn load(paths: &[PathBuf], report_dir: &Path, strict: bool) -> Result<Input> {
    let mut named: Vec<(String, Option<String>, &PathBuf)> = paths
        .iter()
        .map(|p| {
            let (display, link) = display_name(p, report_dir);
            (display, link, p)
        })
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    named.dedup_by(|a, b| a.0 == b.0);

    let mut input = Input::default();
    for (display, link, path) in named {
        let bytes = std::fs::read(path).map_err(|e| BenchError::io(path, e))?;
        let file = input.files.len();
        let mut records = 0;
        for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            let line = i + 1;
            match parse_line(raw) {
                Ok(None) => {}
                Ok(Some(mut r)) => {
                    r.file = file;
                    r.line = line;
                    input.records.push(r);
                    records += 1;
                }
                Err(reason) if strict => {
                    return Err(BenchError::Invalid(format!("{display}:{line}: {reason}")));
                }
                Err(reason) => input.skipped.push(SkippedLine {
                    file: display.clone(),
                    line,
                    reason,
                }),
            }
        }
        input.files.push(InputFile {
            display,
            link,
            records,
        });
    }
    Ok(input)
}

/// `Ok(None)` for a blank line; `Err(reason)` for a malformed one.
fn parse_line(raw: &[u8]) -> std::result::Result<Option<Record>, String> {
    let text = std::str::from_utf8(raw).map_err(|e| format!("not UTF-8: {e}"))?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if !value.is_object() {
        return Err("not a JSON object".to_string());
    }
    let r: record::Record =
        serde_json::from_value(value).map_err(|e| format!("not a result record: {e}"))?;
    for (key, value) in [
        ("suite", &r.suite),
        ("engine", &r.engine),
        ("workload", &r.workload),
    ] {
        if value.trim().is_empty() {
            return Err(format!("\"{key}\" is empty"));
        }
    }
    let m = &r.metrics;
    let number = |key: &str| m.f64(key).filter(|v| v.is_finite());
    let text = |key: &str| m.str(key).map(one_line).unwrap_or_default();
    let stamp = |s: &str| Some(one_line(s)).filter(|s| !s.is_empty());
    let mut rec = Record {
        suite: one_line(&r.suite),
        engine: one_line(&r.engine),
        workload: one_line(&r.workload),
        variant: one_line(&r.variant),
        engine_options: text("engine_options"),
        ops_per_sec: number("ops_per_sec"),
        rows_per_ms: number("rows_per_ms"),
        p50_us: number("p50_us"),
        p99_us: number("p99_us"),
        latency_unit: text("latency_unit"),
        seconds: number("seconds"),
        note: text("note"),
        skipped: m.str("skipped").map(one_line),
        command: stamp(&r.command),
        commit: stamp(&r.commit),
        date: stamp(&r.date),
        mb_per_sec: number("mb_per_sec"),
        average_io_rate_mb_per_sec: number("average_io_rate_mb_per_sec"),
        io_rate_std_dev: number("io_rate_std_dev"),
        aggregate_mb_per_sec: number("aggregate_mb_per_sec"),
        fio_mb_per_sec: number("fio_mb_per_sec"),
        value: number("value"),
        unit: text("unit"),
        goal: text("target"),
        met: m.bool("met"),
        inputs: text("inputs"),
        costs: (r.suite == "growth").then(|| Costs::of(m)).flatten(),
        ..Record::default()
    };
    if let (Some(c), true) = (rec.costs, rec.note.is_empty()) {
        rec.note = c.note();
    }
    Ok(Some(rec))
}

/// Markdown table cells and headings hold one line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The name the report gives `path`: relative to `report_dir` if both resolve, else as given.
fn display_name(path: &Path, report_dir: &Path) -> (String, Option<String>) {
    let given = path.display().to_string();
    let (Ok(file), Ok(dir)) = (path.canonicalize(), report_dir.canonicalize()) else {
        return (given, None);
    };
    match relative_path(&dir, &file) {
        Some(rel) => (rel.clone(), Some(rel)),
        None => (given, None),
    }
}

/// `to` as seen from the directory `from`, both absolute: `a/b` from `a` is `b`, `a/c`
/// from `a/b` is `../c`. Components are joined with `/` (Markdown links).
pub fn relative_path(from: &Path, to: &Path) -> Option<String> {
    let is_normal = |c: &Component| matches!(c, Component::Normal(_));
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    if common == 0 || !from[common..].iter().all(is_normal) || !to[common..].iter().all(is_normal) {
        return None;
    }
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    for c in &to[common..] {
        parts.push(c.as_os_str().to_str()?.to_string());
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"suite":"db","workload":"w","engine":"cellar","variant":"t4","metrics":{"ops_per_sec":"fast","p50_us":null,"p99_us":2.5,"skipped":"no peer","latency_unit":"op"},"command":"cellar-bench  db","commit":"","date":"2026-11-26","machine":"m"}"#;

    #[test]
    fn load_line_needs_a_record() {
        assert!(parse_line(b"   ").unwrap().is_none());
        assert!(parse_line(LINE.replace("\"suite\":\"db\",", "").as_bytes())
            .unwrap_err()
            .contains("missing field `suite`"));
        assert_eq!(
            parse_line(LINE.replace("\"cellar\"", "\" \"").as_bytes()).unwrap_err(),
            "\"engine\" is empty"
        );
        assert!(parse_line(LINE.replace("\"t4\"", "4").as_bytes())
            .unwrap_err()
            .starts_with("not a result record"));
        assert_eq!(parse_line(b"[1,2]").unwrap_err(), "not a JSON object");
        assert!(parse_line(b"{\"suite\":")
            .unwrap_err()
            .starts_with("not JSON"));
        assert!(parse_line(b"\xff\xfe")
            .unwrap_err()
            .starts_with("not UTF-8"));
    }

    #[test]
    fn load_line_reads_wrong_types_as_missing() {
        let r = parse_line(LINE.as_bytes()).unwrap().unwrap();
        assert_eq!((r.suite.as_str(), r.variant.as_str()), ("db", "t4"));
        assert_eq!(r.ops_per_sec, None);
        assert_eq!(r.p50_us, None);
        assert_eq!(r.p99_us, Some(2.5));
        assert_eq!(r.latency_unit, "op");
        assert_eq!(r.skipped.as_deref(), Some("no peer"));
        assert_eq!(r.command.as_deref(), Some("cellar-bench db"));
        assert_eq!(r.commit, None);
        assert_eq!(r.date.as_deref(), Some("2026-11-26"));
    }

    #[test]
    fn load_relative_path_walks_up_and_down() {
        let rel = |a: &str, b: &str| relative_path(Path::new(a), Path::new(b));
        assert_eq!(
            rel("/r/docs", "/r/docs/x.jsonl").as_deref(),
            Some("x.jsonl")
        );
        assert_eq!(
            rel("/r/out", "/r/in/x.jsonl").as_deref(),
            Some("../in/x.jsonl")
        );
        assert_eq!(rel("/r/out", "/r/out"), None);
    }
}
