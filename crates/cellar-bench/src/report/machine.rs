//! The machine the report describes: CPU, cores, RAM and kernel from /proc, and the disk's
//! ceilings from a checked-in file of fio figures (`fio-ceilings.json`).
//!
//! `fio-ceilings.json` (written by hand from recorded fio runs, or by `report --fio`):
//!
//! ```json
//! { "source": "where the figures come from",
//!   "ceilings": [ { "test": "4 KiB random read, QD1", "result": "~19K IOPS", "notes": "p50 ~50 µs" } ] }
//! ```
//!
//! `result` is text on purpose: the recorded figures are approximate ("~19K", "1.2–1.8
//! GB/s") and the report copies them as they are rather than invent a precision.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::procfs;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Machine {
    pub cpu_model: Option<String>,
    /// Logical CPUs: `processor` entries of /proc/cpuinfo.
    pub cpus: Option<usize>,
    pub mem_total_bytes: Option<u64>,
    pub kernel: Option<String>,
    pub os: Option<String>,
}

impl Machine {
    /// Whatever of it Linux tells; a file that cannot be read leaves its fields `None`.
    pub fn read() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let (cpu_model, cpus) = read("/proc/cpuinfo")
            .map(|t| parse_cpuinfo(&t))
            .unwrap_or_default();
        Machine {
            cpu_model,
            cpus,
            mem_total_bytes: procfs::mem_total_bytes(),
            kernel: read("/proc/sys/kernel/osrelease")
                .map(|t| t.trim().to_string())
                .filter(|k| !k.is_empty()),
            os: read("/etc/os-release").and_then(|t| parse_os_release(&t)),
        }
    }
}

/// The first `model name` and the count of `processor` entries.
pub fn parse_cpuinfo(text: &str) -> (Option<String>, Option<usize>) {
    let mut model = None;
    let mut cpus = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "processor" => cpus += 1,
            "model name" if model.is_none() => {
                model = Some(value.split_whitespace().collect::<Vec<_>>().join(" "));
            }
            _ => {}
        }
    }
    (model.filter(|m| !m.is_empty()), (cpus > 0).then_some(cpus))
}

/// `MemTotal` in bytes.
fn parse_os_release(text: &str) -> Option<String> {
    let value = text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="))?;
    let name = value.trim().trim_matches('"');
    (!name.is_empty()).then(|| name.to_string())
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ceilings {
    /// Where the figures come from: the fio runs, when, on what.
    pub source: String,
    pub ceilings: Vec<Ceiling>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ceiling {
    pub test: String,
    pub result: String,
    #[serde(default)]
    pub notes: String,
}

/// `Ok(None)` if the file is not there; an error if it is there but unreadable or not
/// the format above (a checked-in file that is wrong should be fixed, not ignored).
pub fn load_ceilings(path: &Path) -> Result<Option<Ceilings>> {
    super::load_optional_json(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_parses_cpuinfo() {
        let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC  7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(
            parse_cpuinfo(cpuinfo),
            (Some("AMD EPYC 7B13".to_string()), Some(2))
        );
        assert_eq!(parse_cpuinfo(""), (None, None));
        assert_eq!(
            parse_os_release("ID=debian\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")
                .as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
    }

    #[test]
    fn machine_ceilings_missing_is_none_and_bad_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fio-ceilings.json");
        assert!(load_ceilings(&path).unwrap().is_none());
        std::fs::write(&path, "{\"source\": 1}").unwrap();
        assert!(load_ceilings(&path).is_err());
        std::fs::write(
            &path,
            r#"{"source":"s","ceilings":[{"test":"t","result":"~1K"}]}"#,
        )
        .unwrap();
        let c = load_ceilings(&path).unwrap().unwrap();
        assert_eq!(c.ceilings[0].notes, "");
    }
}
