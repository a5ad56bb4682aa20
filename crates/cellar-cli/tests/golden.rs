//! Golden-output tests: `cellar inspect` on a deterministic database, compared with
//! `tests/golden/*.txt`. Run with `UPDATE_GOLDEN=1` to rewrite the golden files.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use cellar_engine::tools::sst::SstFile;
use cellar_engine::vfs::RealVfs;

use common::{
    build_db, build_db_with, cellar, files_with_ext, partitioned_options, stderr, stdout,
};

fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"))
}

/// Replaces what differs between runs: the temporary directory and SST creation times.
fn normalize(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "<DB>");
    text.lines()
        .map(|l| match l.find("creation time: ") {
            Some(i) => format!("{}creation time: <TIME>", &l[..i]),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn assert_golden(name: &str, args: &[&str], dir: &Path) {
    let out = cellar(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "cellar {args:?} failed: {}",
        stderr(&out)
    );
    let got = normalize(&stdout(&out), dir);
    let path = golden_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, &got).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_GOLDEN=1 to create it)",
            path.display()
        )
    });
    if got != want {
        let first = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "output of cellar {args:?} differs from {} at line {}:\n--- got ---\n{got}\n\
             (run with UPDATE_GOLDEN=1 to accept)",
            path.display(),
            first + 1
        );
    }
}

fn deletions(sst: &Path) -> u64 {
    let f = SstFile::read(&RealVfs, sst).expect("read sst");
    let footer = f.footer().expect("footer");
    f.properties(&footer).expect("properties").num_deletions
}

#[test]
fn inspect_outputs_match_golden_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build_db(&dir);
    let d = dir.to_str().expect("utf-8 path");

    let ssts = files_with_ext(&dir, "sst");
    assert!(!ssts.is_empty(), "the flush wrote no SST");
    // Every entry of the file holding deletes, the binary key and the long value; the
    // first entries of the first file.
    let with_deletes = ssts
        .iter()
        .find(|p| deletions(p) > 0)
        .expect("an SST with deletions");
    assert_golden(
        "inspect_sst",
        &[
            "inspect",
            "sst",
            with_deletes.to_str().expect("utf-8"),
            "--entries",
        ],
        &dir,
    );
    assert_golden(
        "inspect_sst_limit",
        &[
            "inspect",
            "sst",
            ssts[0].to_str().expect("utf-8"),
            "--limit",
            "3",
        ],
        &dir,
    );

    let wals = files_with_ext(&dir, "wal");
    assert_eq!(wals.len(), 1, "expected one live WAL: {wals:?}");
    let wal = wals[0].to_str().expect("utf-8");
    assert_golden("inspect_wal", &["inspect", "wal", wal], &dir);

    assert_golden(
        "inspect_manifest",
        &["inspect", "manifest", "--db", d],
        &dir,
    );
    assert_golden("inspect_lsm", &["inspect", "lsm", "--db", d], &dir);
    assert_golden("check", &["check", "--db", d], &dir);
}

#[test]
fn building_the_database_is_deterministic() {
    let list = |dir: &Path| -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
            .expect("list")
            .map(|e| {
                let e = e.expect("entry");
                let len = e.metadata().expect("metadata").len();
                (e.file_name().to_string_lossy().into_owned(), len)
            })
            .collect();
        v.sort();
        v
    };
    let a = tempfile::tempdir().expect("tempdir");
    let b = tempfile::tempdir().expect("tempdir");
    build_db(a.path());
    build_db(b.path());
    assert_eq!(list(a.path()), list(b.path()));
}

/// A partitioned (version 2) file: top level, partitions with their filters, then the
/// data blocks as for any file.
#[test]
fn inspect_partitioned_sst_matches_golden_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build_db_with(&dir, partitioned_options());
    let ssts = files_with_ext(&dir, "sst");
    let with_deletes = ssts
        .iter()
        .find(|p| deletions(p) > 0)
        .expect("an SST with deletions");
    assert_golden(
        "inspect_sst_partitioned",
        &[
            "inspect",
            "sst",
            with_deletes.to_str().expect("utf-8"),
            "--limit",
            "3",
        ],
        &dir,
    );
}
