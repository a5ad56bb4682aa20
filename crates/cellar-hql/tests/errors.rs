//! Parse errors name the line, the column, what was expected and what was found.

use cellar_hql::{parse, ParseError};

fn error(script: &str) -> ParseError {
    match parse(script) {
        Ok(s) => panic!("{script:?} parsed: {s:?}"),
        Err(e) => e,
    }
}

fn message(script: &str) -> String {
    error(script).to_string()
}

#[test]
fn error_unknown_family_option_exact_text() {
    assert_eq!(
        message("CREATE TABLE t (a FOO)"),
        "line 1, column 19: expected a family option (MAX_VERSIONS, TTL, COMPRESSION, \
         BLOCKSIZE, BLOOMFILTER), ',' or ')' after the family name, found 'FOO'"
    );
}

#[test]
fn error_unknown_statement_exact_text() {
    assert_eq!(
        message("SELCT * FROM t"),
        "line 1, column 1: expected a statement (CREATE, DROP, SHOW, DESCRIBE, ALTER, INSERT, \
         SELECT, DELETE, LOAD, DUMP, QUIT, EXIT or HELP), found 'SELCT'"
    );
}

#[test]
fn error_unterminated_string_points_at_its_start() {
    assert_eq!(
        message("SHOW TABLES;\nINSERT INTO t VALUES ('k', 'f', 'no end)\n;\n"),
        "line 2, column 33: expected closing ' of the string that starts here, found end of input"
    );
}

#[test]
fn error_bad_escape_exact_text() {
    assert_eq!(
        message("INSERT INTO t VALUES ('k', 'f', 'a\\qb')"),
        "line 1, column 35: expected an escape \\\\, \\', \\\", \\n, \\t, \\0 or \\xHH (two hex \
         digits), found '\\q'"
    );
}

#[test]
fn error_bad_timestamps_name_the_problem() {
    assert_eq!(
        message("SELECT * FROM t WHERE TIMESTAMP > '2024-02-30 00:00:00'"),
        "line 1, column 35: expected a day from 01 to 29 in the timestamp's month, found \
         string ''2024-02-30 00:00:00''"
    );
    let e = error("INSERT INTO t VALUES ('k', '2024-01-01', 'f', 'v')");
    assert_eq!((e.line, e.column), (1, 28));
    assert!(
        e.expected.starts_with("a timestamp 'YYYY-MM-DD HH:MM:SS"),
        "{e}"
    );
    let e = error("DELETE * FROM t WHERE ROW = 'k' VERSION '1969-12-31 23:59:59'");
    assert_eq!(e.expected, "a timestamp from 1970-01-01 00:00:00 on");
}

#[test]
fn error_numbers_out_of_range() {
    assert_eq!(
        message("SELECT * FROM t LIMIT 18446744073709551616"),
        "line 1, column 23: expected a number up to 18446744073709551615, found \
         '18446744073709551616'"
    );
    assert_eq!(
        message("CREATE TABLE t (a MAX_VERSIONS 4294967296)"),
        "line 1, column 32: expected a number from 1 to 4294967295 after MAX_VERSIONS, found \
         '4294967296'"
    );
    assert_eq!(error("CREATE TABLE t (a MAX_VERSIONS 0)").found, "'0'");
    assert_eq!(
        message("CREATE TABLE t (a TTL 18446744073709551615 DAYS)"),
        "line 1, column 23: expected a TTL of at most 18446744073709551615 seconds, found \
         '18446744073709551615'"
    );
}

#[test]
fn error_line_and_column_on_a_multi_line_script() {
    let script = "CREATE TABLE t (\n  a,\n  b MAX_VERSIONS 2\n  c\n);";
    let e = error(script);
    assert_eq!((e.line, e.column), (4, 3));
    assert_eq!(e.found, "'c'");
    // Columns count characters, not bytes.
    let e = error("INSERT INTO t VALUES ('é', 'f', 'v') x");
    assert_eq!((e.line, e.column), (1, 38));
    // The first error in the text wins, even when the lexer finds it.
    let e = error("SHOW TABLES;\n\n  SHOW foo 'x\\z'");
    assert_eq!((e.line, e.column), (3, 8));
    assert_eq!(e.expected, "TABLES or CREATE TABLE after SHOW");
}

#[test]
fn error_end_of_input_is_named() {
    assert_eq!(
        message("SELECT * FROM"),
        "line 1, column 14: expected a table name, found end of input"
    );
    assert_eq!(
        message("CREATE TABLE t (a,"),
        "line 1, column 19: expected a family name, found end of input"
    );
}

#[test]
fn error_cell_tuples_must_have_three_or_four_items() {
    assert_eq!(
        message("INSERT INTO t VALUES ('k', 'v')"),
        "line 1, column 31: expected ',' and more: a cell is (row, [timestamp,] \
         'family:qualifier', value), found ')'"
    );
    assert_eq!(
        error("INSERT INTO t VALUES ('k', 1, 'f', 'v', 'x')").found,
        "','"
    );
    assert_eq!(
        error("INSERT INTO t VALUES ('', 'f', 'v')").expected,
        "a non-empty string row key"
    );
    assert_eq!(
        error("INSERT INTO t VALUES ('k', ':q', 'v')").expected,
        "a column 'family' or 'family:qualifier' with a non-empty UTF-8 family name"
    );
}

#[test]
fn error_conflicting_and_repeated_conditions_and_options() {
    assert_eq!(
        message("SELECT * FROM t WHERE ROW = 'a' AND ROW > 'b'"),
        "line 1, column 37: expected no other ROW condition next to ROW = or ROW =^, found 'ROW'"
    );
    assert_eq!(
        error("SELECT * FROM t WHERE ROW > 'a' AND 'b' <= ROW").expected,
        "at most one lower bound on ROW"
    );
    assert_eq!(
        error("SELECT * FROM t WHERE TIMESTAMP < 1 AND TIMESTAMP <= 2").expected,
        "at most one upper bound on TIMESTAMP"
    );
    assert_eq!(
        error("SELECT * FROM t LIMIT 1 LIMIT 2").expected,
        "each SELECT option at most once"
    );
    assert_eq!(
        error("CREATE TABLE t (a TTL 1 TTL 2)").expected,
        "each family option at most once per family"
    );
    assert_eq!(
        error("CREATE TABLE t (a, b, a)").expected,
        "a family not listed before"
    );
    assert_eq!(
        error("LOAD DATA INFILE SKIP_BAD_LINES SKIP_BAD_LINES 'f' INTO TABLE t").expected,
        "each LOAD DATA INFILE option at most once"
    );
}

#[test]
fn error_select_tail_lists_what_may_follow() {
    assert_eq!(
        message("SELECT * FROM t LIMTI 5"),
        "line 1, column 17: expected WHERE, MAX_VERSIONS, LIMIT, REVERSE, DISPLAY_TIMESTAMPS, \
         ';' or end of input, found 'LIMTI'"
    );
    assert_eq!(
        message("SELECT a, FROM t"),
        "line 1, column 11: expected '*' or a column (family or family:qualifier), found 'FROM'"
    );
    assert_eq!(
        message("SELECT * FROM t WHERE ROW IS 'x'"),
        "line 1, column 27: expected =, =^, <, <=, > or >= after ROW, found 'IS'"
    );
}

#[test]
fn error_found_text_is_cut_and_kept_on_one_line() {
    let long = "x".repeat(60);
    let e = error(&format!("SHOW {long}"));
    assert_eq!(e.found, format!("'{}...'", "x".repeat(40)));
    let e = error("SELECT * FROM t WHERE ROW = 'k' LIMIT 'a\nb'");
    assert_eq!(e.found, "string ''a\\nb''");
}

#[test]
fn error_names_must_be_non_empty_utf8() {
    assert_eq!(
        error("DROP TABLE \"\"").expected,
        "a non-empty name between '\"'"
    );
    assert_eq!(
        error("DROP TABLE \"\\xff\"").expected,
        "a name of valid UTF-8"
    );
    assert_eq!(
        error("CREATE TABLE t (\"a:b\")").expected,
        "a family name without ':'"
    );
}
