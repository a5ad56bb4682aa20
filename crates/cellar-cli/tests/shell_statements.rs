//! What statements print and change, in process through `Session` (docs/hql.md, section 4),
//! and the regression tests of executor bugs.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use cellar_shell::exec::ExecError;
use cellar_table::{FamilyOptions, TableError, TableSchema};
use common::session::TestShell;

const TWO_FAMILIES: &str = "CREATE TABLE t (one, three MAX_VERSIONS 3);";

/// Every cell of `t` with its timestamp (every family's own MAX_VERSIONS applied).
fn all_cells(sh: &TestShell) -> String {
    sh.ok("SELECT * FROM t DISPLAY_TIMESTAMPS;")
}

#[test]
fn describe_prints_each_option_as_create_table_would_take_it() {
    let sh = TestShell::new();
    sh.ok(
        "CREATE TABLE t (Query MAX_VERSIONS 3 TTL 2 DAYS COMPRESSION zstd BLOCKSIZE 4096 \
         BLOOMFILTER none, Click);",
    );
    assert_eq!(
        sh.ok("DESCRIBE TABLE t;"),
        "Query\tMAX_VERSIONS=3\tTTL=172800\tCOMPRESSION=zstd\tBLOCKSIZE=4096\tBLOOMFILTER=false\n\
         Click\tMAX_VERSIONS=1\tTTL=none\tCOMPRESSION=default\tBLOCKSIZE=default\tBLOOMFILTER=true\n"
    );
}

#[test]
fn show_create_table_prints_a_statement_that_recreates_the_schema() {
    let sh = TestShell::new();
    let create = "CREATE TABLE \"query-log\" (Query MAX_VERSIONS 3 TTL 2 DAYS COMPRESSION zstd \
                  BLOCKSIZE 4096 BLOOMFILTER none, \"from\", Click COMPRESSION none);";
    sh.ok(create);
    let shown = sh.ok("SHOW CREATE TABLE \"query-log\";");
    assert_eq!(
        shown,
        "CREATE TABLE \"query-log\" (Query MAX_VERSIONS = 3 TTL = 172800 SECONDS \
         COMPRESSION = zstd BLOCKSIZE = 4096 BLOOMFILTER = false, \"from\", \
         Click COMPRESSION = none);\n"
    );
    let before = sh.store().describe("query-log").expect("describe");
    sh.ok("DROP TABLE \"query-log\";");
    sh.ok(&shown);
    assert_eq!(sh.store().describe("query-log").expect("describe"), before);
}

#[test]
fn show_create_table_of_a_family_keeping_every_version() {
    // MAX_VERSIONS 0 (every version) can only be set through the library.
    let sh = TestShell::new();
    let all = FamilyOptions {
        max_versions: 0,
        ..FamilyOptions::default()
    };
    sh.store()
        .create_table(TableSchema::new("t").family("f", all))
        .expect("create");
    assert_eq!(
        sh.ok("SHOW CREATE TABLE t;"),
        "CREATE TABLE t (f MAX_VERSIONS = 4294967295);\n"
    );
    assert_eq!(
        sh.ok("DESCRIBE TABLE t;"),
        "f\tMAX_VERSIONS=0\tTTL=none\tCOMPRESSION=default\tBLOCKSIZE=default\tBLOOMFILTER=true\n"
    );
}

#[test]
fn show_tables_prints_names_sorted_and_escaped() {
    let sh = TestShell::new();
    sh.ok("CREATE TABLE b (f); CREATE TABLE \"a\\tb\" (f); CREATE TABLE \"Z\" (f);");
    assert_eq!(sh.ok("SHOW TABLES;"), "Z\na\\tb\nb\n");
}

#[test]
fn create_if_not_exists_and_drop_if_exists() {
    let sh = TestShell::new();
    sh.ok(TWO_FAMILIES);
    sh.ok("CREATE TABLE IF NOT EXISTS t (other);");
    assert!(sh.ok("DESCRIBE TABLE t;").starts_with("one\t"));
    assert!(matches!(
        sh.run(TWO_FAMILIES),
        Err(ExecError::Table(TableError::TableExists(_)))
    ));
    sh.ok("DROP TABLE t; DROP TABLE IF EXISTS t;");
    assert!(matches!(
        sh.run("DROP TABLE t;"),
        Err(ExecError::Table(TableError::TableNotFound(_)))
    ));
}

#[test]
fn insert_with_an_unknown_family_writes_nothing() {
    let sh = TestShell::new();
    sh.ok(TWO_FAMILIES);
    let err = sh
        .run(
            "INSERT INTO t VALUES ('r', 1, 'one', 'a'), ('r', 'three:q', 'b'), ('r', 'nope', 'c');",
        )
        .expect_err("unknown family");
    assert!(
        matches!(&err, ExecError::Table(TableError::FamilyNotFound { family, .. }) if family == "nope"),
        "{err}"
    );
    assert_eq!(all_cells(&sh), "");
}

#[test]
fn insert_with_a_reserved_timestamp_writes_nothing() {
    let sh = TestShell::new();
    sh.ok(TWO_FAMILIES);
    let err = sh
        .run("INSERT INTO t VALUES ('r', 1, 'one', 'a'), ('r', 18446744073709551615, 'one', 'b');")
        .expect_err("reserved timestamp");
    assert!(err.to_string().contains("reserved"), "{err}");
    assert_eq!(all_cells(&sh), "");
}

#[test]
fn delete_with_an_unknown_family_deletes_nothing() {
    let sh = TestShell::new();
    sh.ok(TWO_FAMILIES);
    sh.ok("INSERT INTO t VALUES ('r', 1, 'one', 'a'), ('r', 2, 'three:q', 'b');");
    let before = all_cells(&sh);
    for delete in [
        "DELETE one, nope FROM t WHERE ROW = 'r';",
        "DELETE three:q, nope:q FROM t WHERE ROW = 'r';",
        "DELETE one, nope FROM t WHERE ROW = 'r' VERSION 1;",
    ] {
        assert!(
            matches!(
                sh.run(delete),
                Err(ExecError::Table(TableError::FamilyNotFound { .. }))
            ),
            "{delete}"
        );
        assert_eq!(all_cells(&sh), before, "{delete}");
    }
}

#[test]
fn select_max_versions_never_exceeds_the_familys() {
    let sh = TestShell::new();
    sh.ok(TWO_FAMILIES);
    for ts in 1..=5 {
        sh.ok(&format!(
            "INSERT INTO t VALUES ('r', {ts}, 'one', 'v{ts}'), ('r', {ts}, 'three', 'v{ts}');"
        ));
    }
    let versions = |select: &str| -> Vec<String> {
        sh.ok(select)
            .lines()
            .map(|l| l.split('\t').collect::<Vec<_>>()[1..].join(" "))
            .collect()
    };
    // `one` keeps 1 version, `three` 3: a SELECT may ask for fewer, never for more.
    assert_eq!(
        versions("SELECT * FROM t MAX_VERSIONS 2;"),
        ["one v5", "three v5", "three v4"]
    );
    assert_eq!(
        versions("SELECT * FROM t MAX_VERSIONS 5;"),
        ["one v5", "three v5", "three v4", "three v3"]
    );
    assert_eq!(
        versions("SELECT three FROM t MAX_VERSIONS 2;"),
        ["three v5", "three v4"]
    );
    // Versions are counted among those in the timestamp range.
    assert_eq!(
        versions("SELECT * FROM t WHERE TIMESTAMP < 5 MAX_VERSIONS 2;"),
        ["one v4", "three v4", "three v3"]
    );
    // LIMIT counts the lines printed, after versions are cut.
    assert_eq!(
        versions("SELECT * FROM t MAX_VERSIONS 2 LIMIT 2;"),
        ["one v5", "three v5"]
    );
    assert_eq!(
        versions("SELECT * FROM t MAX_VERSIONS 1 LIMIT 1;"),
        ["one v5"]
    );
}

#[test]
fn delete_removes_what_exists_and_later_inserts_are_visible_whatever_their_timestamp() {
    let sh = TestShell::new();
    sh.ok(TWO_FAMILIES);
    sh.ok("INSERT INTO t VALUES ('r', 'three:q', 'auto'), ('r', 5, 'three:q', 'five');");
    sh.ok("DELETE three FROM t WHERE ROW = 'r';");
    assert_eq!(all_cells(&sh), "");
    sh.ok("INSERT INTO t VALUES ('r', 1, 'three:q', 'old');");
    assert_eq!(
        all_cells(&sh),
        "1970-01-01 00:00:00.000000001\tr\tthree:q\told\n"
    );
}

#[test]
fn delete_version_removes_one_version_and_an_older_one_shows_again() {
    let sh = TestShell::new();
    sh.ok(TWO_FAMILIES);
    sh.ok(
        "INSERT INTO t VALUES ('r', 1, 'one', 'a'), ('r', 2, 'one', 'b'), ('r', 2, 'three', 'c');",
    );
    sh.ok("DELETE * FROM t WHERE ROW = 'r' VERSION 2;");
    assert_eq!(all_cells(&sh), "1970-01-01 00:00:00.000000001\tr\tone\ta\n");
}

#[test]
fn alter_add_with_an_existing_family_adds_none() {
    let sh = TestShell::new();
    sh.ok(TWO_FAMILIES);
    assert!(matches!(
        sh.run("ALTER TABLE t ADD (new, three);"),
        Err(ExecError::Table(TableError::FamilyExists { .. }))
    ));
    let families = sh.store().describe("t").expect("describe").families;
    assert_eq!(families.len(), 2);
    sh.ok("ALTER TABLE t ADD (new MAX_VERSIONS 2);");
    assert!(sh.ok("DESCRIBE TABLE t;").contains("new\tMAX_VERSIONS=2\t"));
}

#[test]
fn alter_drop_with_a_missing_family_or_of_every_family_drops_none() {
    let sh = TestShell::new();
    sh.ok(TWO_FAMILIES);
    sh.ok("INSERT INTO t VALUES ('r', 1, 'one', 'a');");
    assert!(matches!(
        sh.run("ALTER TABLE t DROP (one, nope);"),
        Err(ExecError::Table(TableError::FamilyNotFound { .. }))
    ));
    let err = sh
        .run("ALTER TABLE t DROP (one, three);")
        .expect_err("every family");
    assert!(err.to_string().contains("drop the table"), "{err}");
    assert_eq!(sh.store().describe("t").expect("t").families.len(), 2);
    assert_eq!(all_cells(&sh), "1970-01-01 00:00:00.000000001\tr\tone\ta\n");
    sh.ok("ALTER TABLE t DROP (one);");
    assert_eq!(all_cells(&sh), "");
}

#[test]
fn select_order_families_in_schema_order_and_reverse_rows_only() {
    let sh = TestShell::new();
    sh.ok("CREATE TABLE t (z, a MAX_VERSIONS 2);");
    sh.ok(
        "INSERT INTO t VALUES ('r1', 1, 'a:y', '1'), ('r1', 2, 'a:y', '2'), ('r1', 1, 'a:x', '3'), \
         ('r1', 1, 'z', '4'), ('r2', 1, 'z:q', '5');",
    );
    assert_eq!(
        sh.ok("SELECT * FROM t REVERSE;"),
        "r2\tz:q\t5\nr1\tz\t4\nr1\ta:x\t3\nr1\ta:y\t2\nr1\ta:y\t1\n"
    );
    assert_eq!(sh.ok("SELECT * FROM t LIMIT 0;"), "");
}

#[test]
fn help_lists_every_statement() {
    let sh = TestShell::new();
    let help = sh.ok("HELP;");
    for word in [
        "CREATE TABLE",
        "DROP TABLE",
        "SHOW TABLES",
        "DESCRIBE TABLE",
        "SHOW CREATE TABLE",
        "ALTER TABLE",
        "INSERT INTO",
        "SELECT",
        "DELETE",
        "LOAD DATA INFILE",
        "DUMP TABLE",
        "QUIT",
    ] {
        assert!(help.contains(word), "{word}: {help}");
    }
}

#[test]
fn delete_of_a_family_and_a_column_of_it_in_one_statement() {
    // Found by hql_model (while the engine's range deletions were being reworked): two
    // overlapping range deletions in one batch, then a reversed scan.
    let sh = TestShell::new();
    sh.ok("CREATE TABLE t (info MAX_VERSIONS 2, recent TTL = 30 DAYS MAX_VERSIONS = 3);");
    sh.ok("INSERT INTO t VALUES ('a\\'', 'recent:\\'', ''), ('\\xC3\\xA9', 1, 'recent:', '');");
    sh.ok("DELETE recent, recent:q FROM t WHERE ROW = 'a\\'';");
    assert_eq!(sh.ok("SELECT * FROM t;"), "");
    assert_eq!(sh.ok("SELECT * FROM t REVERSE;"), "");
}
