//! `cellar shell` and `cellar load` as a user runs them: batch scripts from stdin, `-e`,
//! errors and exit codes, flags, the default database directory, and results printed as
//! each statement completes.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{stderr, stdout};

fn cellar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cellar"))
}

fn db_arg(dir: &Path) -> String {
    dir.join("db").to_str().expect("UTF-8 path").to_string()
}

/// `cellar shell --db <dir>/db <args>` with `script` on stdin.
fn shell_with_stdin(dir: &Path, args: &[&str], script: &str) -> Output {
    let mut child = cellar()
        .args(["shell", "--db", &db_arg(dir)])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cellar");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("write script");
    child.wait_with_output().expect("wait")
}

/// `cellar shell --db <dir>/db -e <statements>`.
fn shell_e(dir: &Path, statements: &str) -> Output {
    cellar()
        .args(["shell", "--db", &db_arg(dir), "-e", statements])
        .output()
        .expect("run cellar")
}

fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
}

const SCRIPT: &str = "\
CREATE TABLE t (f, g MAX_VERSIONS 2);
INSERT INTO t VALUES ('r1', 1, 'f', 'one'), ('r2', 2, 'g:q', 'two\\tTAB');
SELECT * FROM t;
SHOW TABLES;
SELECT g FROM t DISPLAY_TIMESTAMPS;
";

#[test]
fn batch_prints_each_result_in_order_and_exits_0() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = shell_with_stdin(tmp.path(), &["--batch"], SCRIPT);
    assert_exit(&o, 0);
    assert_eq!(
        stdout(&o),
        "r1\tf\tone\nr2\tg:q\ttwo\\tTAB\nt\n1970-01-01 00:00:00.000000002\tr2\tg:q\ttwo\\tTAB\n"
    );
    assert_eq!(stderr(&o), "");
}

#[test]
fn batch_stops_at_quit_and_a_last_statement_needs_no_semicolon() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = shell_with_stdin(tmp.path(), &["--batch"], "CREATE TABLE t (f);\nSHOW TABLES");
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "t\n");
    let o = shell_with_stdin(
        tmp.path(),
        &["--batch"],
        "SHOW TABLES; QUIT; SELECT * FROM nope;",
    );
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "t\n");
}

#[test]
fn batch_error_names_the_statements_line_and_stops() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = "CREATE TABLE t (f);\nINSERT INTO t VALUES ('r', 1, 'f', 'v');\n\n\
                  SELECT *\n  FROM nope;\nSELECT * FROM t;\n";
    let o = shell_with_stdin(tmp.path(), &["--batch"], script);
    assert_exit(&o, 1);
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "error (line 4): table \"nope\" does not exist (SHOW TABLES lists the tables)\n"
    );

    // --continue runs the rest, and still exits 1.
    let o = shell_with_stdin(tmp.path(), &["--batch", "--continue"], script);
    assert_exit(&o, 1);
    assert_eq!(stdout(&o), "r\tf\tv\n");
    assert!(stderr(&o).contains("error (line 1): table \"t\" already exists"));
    assert!(stderr(&o).contains("error (line 4): table \"nope\""));
}

#[test]
fn syntax_error_names_line_column_and_what_was_expected() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = "SHOW TABLES;\n-- a comment\nSELECT * FROM t\n  WHERE ROW = 1;\nSHOW TABLES;\n";
    let o = shell_with_stdin(tmp.path(), &["--batch"], script);
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o),
        "error: syntax error: line 4, column 15: expected a string row key, found '1'\n"
    );
    // The first SHOW TABLES ran; the one after the error did not.
    assert_eq!(stdout(&o), "");
    let o = shell_with_stdin(tmp.path(), &["--batch", "--continue"], script);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("line 4, column 15"), "{}", stderr(&o));

    let o = shell_e(tmp.path(), "CREATE TABLE t (f MAX_VERSIONS 0)");
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o),
        "error: syntax error: line 1, column 32: expected a number from 1 to 4294967295 \
         after MAX_VERSIONS, found '0'\n"
    );
}

#[test]
fn execute_runs_the_statements_given() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = shell_e(
        tmp.path(),
        "CREATE TABLE t (f); INSERT INTO t VALUES ('k', 5, 'f:q', 'v'); SELECT * FROM t",
    );
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "k\tf:q\tv\n");
    // The database keeps what the first run wrote.
    let o = shell_e(tmp.path(), "SELECT * FROM t DISPLAY_TIMESTAMPS;");
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "1970-01-01 00:00:00.000000005\tk\tf:q\tv\n");

    let o = shell_e(tmp.path(), "SELECT * FROM t; DROP TABLE nope; SHOW TABLES");
    assert_exit(&o, 1);
    assert_eq!(stdout(&o), "k\tf:q\tv\n");
    assert!(stderr(&o).starts_with("error (line 1): table \"nope\" does not exist"));
}

#[test]
fn durability_takes_sync_flush_or_buffered() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = db_arg(tmp.path());
    shell_e(tmp.path(), "CREATE TABLE t (f)");
    for (i, d) in ["sync", "flush", "buffered"].iter().enumerate() {
        let insert = format!("INSERT INTO t VALUES ('{d}', {i}, 'f', 'v')");
        let o = cellar()
            .args(["shell", "--db", &db, "--durability", d, "-e", &insert])
            .output()
            .expect("run");
        assert_exit(&o, 0);
    }
    let o = shell_e(tmp.path(), "SELECT * FROM t");
    assert_eq!(stdout(&o), "buffered\tf\tv\nflush\tf\tv\nsync\tf\tv\n");

    let o = cellar()
        .args([
            "shell",
            "--db",
            &db,
            "--durability",
            "fsync",
            "-e",
            "SHOW TABLES",
        ])
        .output()
        .expect("run");
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("possible values: buffered, flush, sync"));
}

#[test]
fn db_defaults_to_cellar_data_in_the_current_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = cellar()
        .current_dir(tmp.path())
        .args(["shell", "-e", "CREATE TABLE here (f)"])
        .output()
        .expect("run");
    assert_exit(&o, 0);
    assert!(tmp.path().join("cellar-data").join("CURRENT").is_file());
    let o = cellar()
        .current_dir(tmp.path())
        .args(["shell", "-e", "SHOW TABLES"])
        .output()
        .expect("run");
    assert_eq!(stdout(&o), "here\n");
}

#[test]
fn results_are_printed_as_each_statement_completes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut child = cellar()
        .args(["shell", "--db", &db_arg(tmp.path()), "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cellar");
    let mut stdin = child.stdin.take().expect("stdin");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    let (lines_tx, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in out.lines() {
            if lines_tx.send(line.expect("read stdout")).is_err() {
                return;
            }
        }
    });
    let next_line = || {
        lines
            .recv_timeout(Duration::from_secs(20))
            .expect("a line of output while stdin is still open")
    };
    writeln!(stdin, "CREATE TABLE t (f);").expect("write");
    writeln!(stdin, "INSERT INTO t VALUES ('a', 1, 'f', 'first');").expect("write");
    writeln!(stdin, "SELECT * FROM t;").expect("write");
    stdin.flush().expect("flush");
    assert_eq!(next_line(), "a\tf\tfirst");
    // A statement spread over lines runs once its ';' arrives.
    write!(
        stdin,
        "INSERT INTO t VALUES ('b', 1, 'f', 'second');\nSELECT *\n"
    )
    .expect("write");
    stdin.flush().expect("flush");
    writeln!(stdin, "FROM t WHERE ROW = 'b';").expect("write");
    stdin.flush().expect("flush");
    assert_eq!(next_line(), "b\tf\tsecond");
    writeln!(stdin, "SHOW TABLES;").expect("write");
    stdin.flush().expect("flush");
    assert_eq!(next_line(), "t");
    drop(stdin);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    reader.join().expect("reader");
    assert!(lines.try_recv().is_err(), "nothing more");
}

#[test]
fn load_puts_a_files_cells_into_a_table() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = db_arg(tmp.path());
    assert_exit(&shell_e(tmp.path(), "CREATE TABLE t (Query, ClickURL)"), 0);
    let file = tmp.path().join("a.tsv");
    std::fs::write(
        &file,
        "Query\tAnonID\tClickURL\nwhat\t17\thttp://a\nwho\t2\t\n",
    )
    .expect("write");
    let o = cellar()
        .args([
            "load",
            "--db",
            &db,
            "--table",
            "t",
            "--row-key-column",
            "AnonID",
        ])
        .arg("--no-progress")
        .arg(&file)
        .output()
        .expect("run");
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("Total inserts"), "{}", stdout(&o));
    let o = shell_e(tmp.path(), "SELECT * FROM t");
    assert_eq!(
        stdout(&o),
        "17\tQuery\twhat\n17\tClickURL\thttp://a\n2\tQuery\twho\n"
    );
}

#[test]
fn load_with_a_bad_line_names_it_and_leaves_the_table_unchanged() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = db_arg(tmp.path());
    let o = shell_e(
        tmp.path(),
        "CREATE TABLE t (Query); INSERT INTO t VALUES ('0', 1, 'Query', 'before')",
    );
    assert_exit(&o, 0);
    let file = tmp.path().join("bad.tsv");
    let mut text = String::from("AnonID\tQuery\n");
    for i in 1..=50 {
        text.push_str(&format!("{i}\tq{i}\n"));
    }
    // Line 52 of the file: one field too many.
    text.push_str("51\tq51\textra\n52\tq52\n");
    std::fs::write(&file, text).expect("write");
    let o = cellar()
        .args([
            "load",
            "--db",
            &db,
            "--table",
            "t",
            "--row-key-column",
            "AnonID",
        ])
        .arg("--no-progress")
        .arg(&file)
        .output()
        .expect("run");
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(err.contains(&format!("{}:52", file.display())), "{err}");
    let o = shell_e(tmp.path(), "SELECT * FROM t");
    assert_eq!(stdout(&o), "0\tQuery\tbefore\n");
}

#[test]
fn load_data_infile_with_a_bad_line_fails_the_statement_and_loads_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("bad.tsv");
    std::fs::write(&file, "AnonID\tQuery\n1\tq1\n2\tq2\textra\n3\tq3\n").expect("write");
    let script = format!(
        "CREATE TABLE t (Query);\n\
         LOAD DATA INFILE ROW_KEY_COLUMN=AnonID '{}' INTO TABLE t;\n\
         SELECT * FROM t;\n",
        file.display()
    );
    let o = shell_with_stdin(
        tmp.path(),
        &["--batch", "--continue", "--no-progress"],
        &script,
    );
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!(
            "error (line 2): load failed: {}:3: ",
            file.display()
        )),
        "{err}"
    );
    assert_eq!(stdout(&o), "");
}

#[test]
fn help_mentions_the_key_flags() {
    let o = cellar().args(["shell", "--help"]).output().expect("run");
    assert_exit(&o, 0);
    let help = stdout(&o);
    for flag in [
        "--db",
        "--batch",
        "--execute",
        "-e",
        "--durability",
        "--continue",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
    assert!(help.contains("[default: ./cellar-data]"), "{help}");
    assert!(help.contains("buffered") && help.contains("sync"), "{help}");
    let o = cellar().args(["load", "--help"]).output().expect("run");
    assert_exit(&o, 0);
    let help = stdout(&o);
    for flag in [
        "--db",
        "--table",
        "--row-key-column",
        "--timestamp-column",
        "--header-file",
        "--skip-bad-lines",
        "--ignore-unknown-columns",
    ] {
        assert!(help.contains(flag), "{flag}: {help}");
    }
}
