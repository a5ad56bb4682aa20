//! What the suites' tests share: reading a `--json` file's lines as `Record`s.

use cellar_bench::record::Record;

/// One line of a `--json` file: a `Record` of `suite`, stamped with a command and a
/// day, as JSON for the checks.
#[allow(clippy::unwrap_used)] // a test helper: a panic fails the test
pub fn record(line: &str, suite: &str) -> serde_json::Value {
    let r: Record =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not a Record ({e}): {line}"));
    assert_eq!(r.suite, suite, "{line}");
    assert!(!r.command.is_empty() && r.date.len() == 10, "{line}");
    serde_json::to_value(r).unwrap()
}
