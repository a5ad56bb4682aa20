//! Property: no input makes the parser or the statement reader panic; errors always point
//! into the input; whatever parses prints back as HQL that parses the same.

use cellar_hql::{parse, StatementReader};
use proptest::collection::vec;
use proptest::prelude::*;

/// Pieces that reach deep into the grammar when strung together at random.
const PIECES: &[&str] = &[
    "CREATE",
    "TABLE",
    "IF",
    "NOT",
    "EXISTS",
    "DROP",
    "SHOW",
    "TABLES",
    "DESCRIBE",
    "ALTER",
    "ADD",
    "INSERT",
    "INTO",
    "VALUES",
    "SELECT",
    "FROM",
    "WHERE",
    "AND",
    "ROW",
    "TIMESTAMP",
    "MAX_VERSIONS",
    "LIMIT",
    "REVERSE",
    "DISPLAY_TIMESTAMPS",
    "DELETE",
    "VERSION",
    "LOAD",
    "DATA",
    "INFILE",
    "ROW_KEY_COLUMN",
    "TIMESTAMP_COLUMN",
    "HEADER_FILE",
    "IGNORE_UNKNOWN_COLUMNS",
    "SKIP_BAD_LINES",
    "DUMP",
    "FILE",
    "QUIT",
    "EXIT",
    "HELP",
    "TTL",
    "DAYS",
    "COMPRESSION",
    "lz4",
    "BLOCKSIZE",
    "BLOOMFILTER",
    "rows",
    "(",
    ")",
    ",",
    ";",
    "*",
    ":",
    "=",
    "=^",
    "<",
    "<=",
    ">",
    ">=",
    "'a'",
    "'k\\x00'",
    "''",
    "'\\x4'",
    "'\\q'",
    "'",
    "\"",
    "\"query-log\"",
    "\"\"",
    "Query",
    "f",
    "0",
    "1",
    "4294967296",
    "99999999999999999999",
    "'2006-03-01 07:17:12'",
    "'2024-02-30 00:00:00'",
    "'1969-12-31 23:59:59'",
    "-- c\n",
    "#",
    "\n",
    "-",
    "é",
    "\\",
    "@",
];

/// Valid beginnings, so that the soup after them is read by every statement's parser.
const STARTS: &[&str] = &[
    "",
    "CREATE TABLE t (a",
    "CREATE TABLE IF NOT EXISTS t (a TTL",
    "ALTER TABLE t ADD (",
    "ALTER TABLE t DROP (a",
    "INSERT INTO t VALUES ('r', ",
    "SELECT * FROM t WHERE",
    "SELECT a, b:c FROM t WHERE ROW",
    "SELECT * FROM t WHERE 'a' <=",
    "SELECT * FROM t LIMIT 1",
    "DELETE * FROM t WHERE ROW = 'k'",
    "LOAD DATA INFILE",
    "DUMP TABLE t",
];

fn token_soup() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(STARTS),
        vec(proptest::sample::select(PIECES), 0..40),
    )
        .prop_map(|(start, v)| format!("{start} {}", v.join(" ")))
}

fn check_input(input: &str) -> Result<(), TestCaseError> {
    match parse(input) {
        Ok(statements) => {
            for s in statements {
                let text = s.node.to_string();
                let again = parse(&text)
                    .map_err(|e| TestCaseError::fail(format!("{input:?} → {text}\n{e}")))?;
                prop_assert_eq!(again.len(), 1);
                prop_assert_eq!(&again[0].node, &s.node);
            }
        }
        Err(e) => {
            let lines = input.split('\n').count();
            prop_assert!(e.line >= 1 && e.line <= lines, "{:?}: {}", input, e);
            prop_assert!(e.column >= 1, "{:?}: {}", input, e);
            prop_assert!(!e.expected.is_empty() && !e.found.is_empty());
        }
    }
    let mut reader = StatementReader::new();
    for line in input.split_inclusive('\n') {
        reader.push(line);
        while let Some(s) = reader.next_statement() {
            let _ = s.parse();
        }
        let _ = reader.needs_more();
    }
    if let Some(rest) = reader.finish() {
        let _ = rest.parse();
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20000))]

    #[test]
    fn parse_never_panics_on_any_string(input in any::<String>()) {
        check_input(&input)?;
    }

    #[test]
    fn parse_never_panics_on_token_soup(input in token_soup()) {
        check_input(&input)?;
    }

    #[test]
    fn parse_never_panics_on_cut_statements(
        input in token_soup(),
        cut in any::<proptest::sample::Index>(),
    ) {
        let script = format!("SELECT * FROM t WHERE ROW >= 'a' AND TIMESTAMP < 5 LIMIT 3; {input}");
        let mut end = cut.index(script.len() + 1);
        while !script.is_char_boundary(end) {
            end -= 1;
        }
        check_input(&script[..end])?;
    }
}
