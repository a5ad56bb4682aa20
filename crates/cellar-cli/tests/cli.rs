//! Help text, usage errors and exit codes.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{cellar, stderr, stdout};

#[test]
fn help_works_for_every_command() {
    let commands: &[&[&str]] = &[
        &[],
        &["check"],
        &["inspect"],
        &["inspect", "sst"],
        &["inspect", "wal"],
        &["inspect", "manifest"],
        &["inspect", "lsm"],
        &["backup"],
        &["restore"],
    ];
    for cmd in commands {
        let mut args = cmd.to_vec();
        args.push("--help");
        let o = cellar(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(text.contains("Usage: cellar"), "{args:?}: {text}");
        assert!(text.contains("Exit codes:"), "{args:?}: {text}");
    }
    let o = cellar(&["help", "inspect", "sst"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("--entries"));
    assert!(stdout(&cellar(&["check", "--help"])).contains("--db <PATH|URL>"));
    assert!(stdout(&cellar(&["inspect", "lsm", "--help"])).contains("[default: ./cellar-data]"));
}

#[test]
fn usage_errors_exit_2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("nope");
    let m = missing.to_str().expect("utf-8");
    let d = tmp.path().to_str().expect("utf-8");
    let cases: &[&[&str]] = &[
        &[],
        &["frobnicate"],
        &["inspect", "sst"],
        &["inspect", "sst", "x.sst", "--limit", "many"],
        &["inspect", "sst", m],
        &["inspect", "wal", m],
        &["inspect", "manifest", "--db", m],
        &["inspect", "lsm", "--db", m],
        &["check", "--db", m],
        // An empty directory is not a database.
        &["check", "--db", d],
        &["inspect", "lsm", "--db", d],
        &["backup", "--db", m],
        &["backup", "--db", m, "--to", d],
        &["restore", "--from", m, "--db", d],
        &["check", "--db", "s3://"],
    ];
    for args in cases {
        let o = cellar(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty(), "{args:?}");
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn garbage_files_are_errors_not_panics() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = tmp.path().join("000001.sst");
    for content in [&b""[..], b"short", &[0xabu8; 200][..]] {
        std::fs::write(&f, content).expect("write");
        let p = f.to_str().expect("utf-8");
        for cmd in ["sst", "wal"] {
            let o = cellar(&["inspect", cmd, p]);
            let err = stderr(&o);
            assert!(!err.contains("panicked"), "{cmd} {content:?}: {err}");
            // An empty file is an empty WAL; everything else here is damage.
            if !(cmd == "wal" && content.is_empty()) {
                assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
                assert!(err.contains("corruption in"), "{cmd}: {err}");
            }
        }
    }
}
