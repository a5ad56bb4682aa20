//! LOAD DATA INFILE run from several sessions at once into one table: every load succeeds
//! and every cell arrives, the same rows from different loads as different versions.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use cellar_load::NoProgress;
use cellar_shell::exec::{Flow, Session};
use common::session::TestShell;

const LOADS: usize = 4;
const LINES: usize = 3000;

#[test]
fn concurrent_loads_into_one_table_all_succeed() {
    let sh = TestShell::new();
    sh.ok("CREATE TABLE \"query-log\" (Query MAX_VERSIONS 4, ClickURL MAX_VERSIONS 4);");
    let files: Vec<String> = (0..LOADS)
        .map(|i| {
            let path = sh.dir.path().join(format!("piece-{i}.tsv"));
            let mut text = String::from("AnonID\tQuery\tClickURL\n");
            for n in 0..LINES {
                // Every load has the same rows; a click on every other line.
                let click = if n % 2 == 0 {
                    format!("http://{i}/{n}")
                } else {
                    String::new()
                };
                text.push_str(&format!("{n:05}\tquery {i} {n}\t{click}\n"));
            }
            std::fs::write(&path, text).expect("write piece");
            path.to_str().expect("UTF-8 path").to_string()
        })
        .collect();
    std::thread::scope(|s| {
        let loads: Vec<_> = files
            .iter()
            .map(|file| {
                let sh = &sh;
                s.spawn(move || {
                    let session = Session {
                        store: sh.store(),
                        durability: sh.durability,
                        progress: &NoProgress,
                    };
                    let text = format!(
                        "LOAD DATA INFILE ROW_KEY_COLUMN=AnonID '{file}' INTO TABLE \"query-log\""
                    );
                    let statement = cellar_hql::parse_statement(&text).expect("parse");
                    let mut out = Vec::new();
                    let flow = session
                        .execute(&statement, &mut out)
                        .unwrap_or_else(|e| panic!("{file}: {e}"));
                    assert_eq!(flow, Flow::Continue);
                    String::from_utf8(out).expect("UTF-8")
                })
            })
            .collect();
        for load in loads {
            let summary = load.join().expect("load thread");
            assert!(summary.contains("Total inserts"), "{summary}");
        }
    });
    let cells_per_load = LINES + LINES / 2;
    let all = sh.ok("SELECT * FROM \"query-log\" DISPLAY_TIMESTAMPS;");
    assert_eq!(all.lines().count(), LOADS * cells_per_load);
    let one_row = sh.ok("SELECT Query FROM \"query-log\" WHERE ROW = '00042';");
    let mut queries: Vec<&str> = one_row
        .lines()
        .map(|l| l.rsplit('\t').next().expect("value"))
        .collect();
    queries.sort_unstable();
    let expected: Vec<String> = (0..LOADS).map(|i| format!("query {i} 42")).collect();
    assert_eq!(queries, expected);
}
