//! `cellar-bench gen aol`: the files' shape, the statistics of Hypertable's AOL test (avg
//! key ~7 B, avg value ~15 B, about half the lines with a click), and determinism.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_cellar-bench");
const HEADER: &str = "AnonID\tQuery\tQueryTime\tItemRank\tClickURL";
const LINES: u64 = 200_000;

fn gen(out: &Path, extra: &[&str]) -> Output {
    let lines = LINES.to_string();
    let mut args = vec!["gen", "aol", "--lines", &lines, "--out"];
    let out = out.to_str().expect("utf-8 temp path");
    args.push(out);
    args.extend_from_slice(extra);
    let output = Command::new(BIN)
        .args(&args)
        .output()
        .expect("run cellar-bench");
    assert!(
        output.status.success(),
        "gen aol failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).expect("piece is UTF-8 text")
}

fn is_time(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b' ',
            13 | 16 => c == b':',
            _ => c.is_ascii_digit(),
        })
}

#[test]
fn gen_aol_pieces_have_the_header_and_well_formed_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = gen(dir.path(), &["--pieces", "5", "--seed", "42"]);
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(summary.contains("200000 lines"), "{summary}");
    assert!(!dir.path().join("f.tsv").exists());

    let mut previous_time = String::new();
    let mut previous_id = 0u64;
    let mut descents = 0u64;
    let mut total = 0u64;
    for name in ["a.tsv", "b.tsv", "c.tsv", "d.tsv", "e.tsv"] {
        let text = read(dir.path(), name);
        assert!(text.ends_with('\n'));
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(HEADER), "{name}");
        let mut count = 0;
        for line in lines {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 5, "{name}: {line:?}");
            let id = fields[0];
            assert!(
                !id.is_empty() && !id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit()),
                "{line:?}"
            );
            assert!(!fields[1].is_empty(), "{line:?}");
            assert!(is_time(fields[2]), "{line:?}");
            assert!(
                fields[2] >= previous_time.as_str(),
                "time goes back: {line:?}"
            );
            previous_time = fields[2].to_string();
            match (fields[3], fields[4]) {
                ("", "") => {}
                (rank, url) => {
                    let rank: u32 = rank.parse().expect("ItemRank is a number");
                    assert!((1..=10).contains(&rank), "{line:?}");
                    assert!(
                        url.starts_with("http://www.") && url.ends_with(".com"),
                        "{line:?}"
                    );
                }
            }
            let id: u64 = id.parse().expect("AnonID is a number");
            descents += u64::from(id < previous_id);
            previous_id = id;
            count += 1;
        }
        assert_eq!(count, LINES / 5, "{name} gets its fifth of the lines");
        total += count;
    }
    assert_eq!(total, LINES);
    assert!(previous_time.starts_with("2006-03-"), "{previous_time}");
    // Lines are in time order, ids are not.
    assert!(descents > LINES / 3, "{descents} descents");
}

#[test]
fn gen_aol_matches_the_seed_statistics() {
    let dir = tempfile::tempdir().expect("tempdir");
    gen(dir.path(), &["--pieces", "2", "--seed", "7"]);
    let (mut id_bytes, mut query_bytes, mut value_bytes) = (0u64, 0u64, 0u64);
    let (mut lines, mut clicks, mut cells) = (0u64, 0u64, 0u64);
    let mut per_user: HashMap<String, u64> = HashMap::new();
    for name in ["a.tsv", "b.tsv"] {
        let text = read(dir.path(), name);
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            lines += 1;
            id_bytes += f[0].len() as u64;
            query_bytes += f[1].len() as u64;
            *per_user.entry(f[0].to_string()).or_default() += 1;
            for value in [f[1], f[3], f[4]] {
                if !value.is_empty() {
                    cells += 1;
                    value_bytes += value.len() as u64;
                }
            }
            clicks += u64::from(!f[4].is_empty());
        }
    }
    let avg = |n: u64, d: u64| n as f64 / d as f64;
    let (avg_id, avg_query) = (avg(id_bytes, lines), avg(query_bytes, lines));
    let (click_share, avg_value) = (avg(clicks, lines), avg(value_bytes, cells));
    eprintln!(
        "avg id {avg_id:.2}, avg query {avg_query:.2}, clicks {click_share:.3}, \
         avg value {avg_value:.2}, cells/line {:.3}",
        avg(cells, lines)
    );
    // The seed: avg key 7.03-7.11 bytes, avg value 15.20-15.26 bytes, 75.27M cells from
    // 36.39M lines.
    assert!((6.9..=7.2).contains(&avg_id), "avg AnonID {avg_id}");
    assert!((14.0..=16.5).contains(&avg_query), "avg Query {avg_query}");
    assert!(
        (0.48..=0.58).contains(&click_share),
        "click share {click_share}"
    );
    assert!((14.5..=16.0).contains(&avg_value), "avg value {avg_value}");
    assert_eq!(cells, lines + 2 * clicks);
    // Skewed activity: the busiest user issues far more than the average user.
    let busiest = per_user.values().copied().max().unwrap_or(0);
    let mean = avg(lines, per_user.len() as u64);
    assert!(
        busiest as f64 > 50.0 * mean,
        "busiest {busiest}, mean {mean:.2}"
    );
}

#[test]
fn gen_aol_is_deterministic_for_a_seed() {
    let (one, two, other) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    gen(one.path(), &["--pieces", "3", "--seed", "11"]);
    gen(two.path(), &["--pieces", "3", "--seed", "11"]);
    gen(other.path(), &["--pieces", "3", "--seed", "12"]);
    for name in ["a.tsv", "b.tsv", "c.tsv"] {
        assert_eq!(read(one.path(), name), read(two.path(), name), "{name}");
        assert_ne!(read(one.path(), name), read(other.path(), name), "{name}");
    }
}

#[test]
fn gen_aol_without_query_time_has_four_columns() {
    let dir = tempfile::tempdir().expect("tempdir");
    gen(dir.path(), &["--pieces", "1", "--no-query-time"]);
    let text = read(dir.path(), "a.tsv");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("AnonID\tQuery\tItemRank\tClickURL"));
    assert!(lines.all(|l| l.split('\t').count() == 4));
}

#[test]
fn gen_aol_rejects_too_many_pieces() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new(BIN)
        .args(["gen", "aol", "--lines", "10", "--pieces", "27", "--out"])
        .arg(dir.path())
        .output()
        .expect("run cellar-bench");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--pieces must be 1 to 26"));
}
