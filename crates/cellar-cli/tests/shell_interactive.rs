//! The interactive shell on a pseudo-terminal (util-linux `script` provides one): prompts,
//! continuation lines, results, and the history file. Skipped where `script` is missing.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn interactive_shell_prompts_continues_lines_and_keeps_history() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` command for a pseudo-terminal");
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let db = home.path().join("db");
    let cmd = format!(
        "{} shell --db {}",
        env!("CARGO_BIN_EXE_cellar"),
        db.display()
    );
    let mut child = Command::new("script")
        .args(["-q", "-c", &cmd, "/dev/null"])
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script");
    let mut stdin = child.stdin.take().expect("stdin");
    // Lines are typed one at a time, as a person would: the editor reads a line per prompt.
    for line in [
        "CREATE TABLE t (f);",
        "INSERT INTO t VALUES ('r', 'f:q', 'v');",
        "SELECT *",
        "FROM t;",
        "QUIT;",
    ] {
        std::thread::sleep(Duration::from_millis(300));
        stdin.write_all(line.as_bytes()).expect("type");
        stdin.write_all(b"\n").expect("type");
        stdin.flush().expect("flush");
    }
    std::thread::sleep(Duration::from_millis(300));
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(text.contains("cellar> "), "{text}");
    assert!(text.contains("    -> "), "a continuation prompt: {text}");
    assert!(text.contains("r\tf:q\tv"), "{text}");
    let history = std::fs::read_to_string(home.path().join(".cellar_history")).expect("history");
    assert!(history.contains("INSERT INTO t VALUES"), "{history}");
}
