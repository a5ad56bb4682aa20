//! Each filter, the combinators and the error shapes, with expectations taken from HBase's
//! documented behaviour.

use std::sync::Arc;

use cellar_table::Cell;

use super::*;

/// `row`, then `family:qualifier=value` cells (`@ts` optional; default timestamps descend
/// in the order written so that versions of one column are newest first).
fn row(key: &str, cells: &[&str]) -> (Vec<u8>, Vec<Cell>) {
    let cells = cells
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let (column, value) = spec.split_once('=').unwrap();
            let (family, qualifier) = column.split_once(':').unwrap();
            Cell {
                row: key.as_bytes().to_vec(),
                family: Arc::from(family),
                qualifier: qualifier.as_bytes().to_vec(),
                timestamp: 1000 - i as u64,
                value: value.as_bytes().to_vec(),
            }
        })
        .collect();
    (key.as_bytes().to_vec(), cells)
}

/// A small table: five rows over two families.
fn table() -> Vec<(Vec<u8>, Vec<Cell>)> {
    vec![
        row("a1", &["cf1:qual1=val1", "cf1:qual2=xyz", "cf2:b=1"]),
        row("a2", &["cf1:qual1=val2", "cf2:a=Hello World"]),
        row("b1", &["cf1:other=val1", "cf2:b=22"]),
        row("b2", &["cf1:qual1=val1", "cf1:qual1=old", "cf2:c="]),
        row("c1", &["cf2:a=apple", "cf2:ab=banana", "cf2:b=cherry"]),
    ]
}

/// Runs `filter` over `rows` as a scan does: the rows returned, each as `key` followed by
/// its `family:qualifier=value` cells, and how many rows were read.
fn scan_rows(filter: &str, rows: Vec<(Vec<u8>, Vec<Cell>)>) -> (Vec<String>, usize) {
    let filter = Filter::parse(filter).unwrap_or_else(|e| panic!("{filter}: {e}"));
    let mut run = filter.start();
    let mut out = Vec::new();
    let mut read = 0;
    for (key, mut cells) in rows {
        read += 1;
        let verdict = run.apply(&key, &mut cells);
        let include = matches!(verdict, RowVerdict::Include | RowVerdict::IncludeThenStop);
        if include {
            assert!(!cells.is_empty(), "a returned row keeps a cell");
            let mut line = String::from_utf8(key).unwrap();
            for c in &cells {
                let value = String::from_utf8_lossy(&c.value);
                let q = String::from_utf8_lossy(&c.qualifier);
                line.push_str(&format!(" {}:{q}={value}", c.family));
            }
            out.push(line);
        }
        if matches!(verdict, RowVerdict::Stop | RowVerdict::IncludeThenStop) {
            break;
        }
    }
    (out, read)
}

fn scan(filter: &str) -> Vec<String> {
    scan_rows(filter, table()).0
}

fn keys(filter: &str) -> Vec<String> {
    scan(filter)
        .into_iter()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

fn error(filter: &str) -> String {
    Filter::parse(filter)
        .map(|_| ())
        .expect_err(filter)
        .to_string()
}

#[test]
fn prefix_filter_keeps_rows_with_the_prefix() {
    assert_eq!(keys("PrefixFilter('a')"), ["a1", "a2"]);
    assert_eq!(keys("PrefixFilter('b2')"), ["b2"]);
    assert_eq!(keys("PrefixFilter('')").len(), 5);
    assert!(keys("PrefixFilter('z')").is_empty());
}

#[test]
fn key_only_filter_empties_values() {
    assert_eq!(
        scan("KeyOnlyFilter()")[0],
        "a1 cf1:qual1= cf1:qual2= cf2:b="
    );
    // lenAsVal: the value's length as a 4-byte big-endian integer.
    let filter = Filter::parse("KeyOnlyFilter(true)").unwrap();
    let (key, mut cells) = row("r", &["f:q=hello", "f:e="]);
    assert_eq!(filter.start().apply(&key, &mut cells), RowVerdict::Include);
    assert_eq!(cells[0].value, vec![0, 0, 0, 5]);
    assert_eq!(cells[1].value, vec![0, 0, 0, 0]);
    assert_eq!(scan("KeyOnlyFilter(FALSE)").len(), 5);
}

#[test]
fn first_key_only_filter_keeps_the_first_cell() {
    assert_eq!(
        scan("FirstKeyOnlyFilter()"),
        [
            "a1 cf1:qual1=val1",
            "a2 cf1:qual1=val2",
            "b1 cf1:other=val1",
            "b2 cf1:qual1=val1",
            "c1 cf2:a=apple"
        ]
    );
}

#[test]
fn first_key_only_and_key_only_as_happybase_users_count_rows() {
    // happybase#185: row keys only, cheaply.
    assert_eq!(
        scan("FirstKeyOnlyFilter() AND KeyOnlyFilter()"),
        [
            "a1 cf1:qual1=",
            "a2 cf1:qual1=",
            "b1 cf1:other=",
            "b2 cf1:qual1=",
            "c1 cf2:a="
        ]
    );
}

#[test]
fn column_prefix_filters_keep_matching_qualifiers() {
    assert_eq!(
        scan("ColumnPrefixFilter('qual')"),
        [
            "a1 cf1:qual1=val1 cf1:qual2=xyz",
            "a2 cf1:qual1=val2",
            "b2 cf1:qual1=val1 cf1:qual1=old"
        ]
    );
    assert_eq!(
        scan("MultipleColumnPrefixFilter('a', 'oth')"),
        [
            "a2 cf2:a=Hello World",
            "b1 cf1:other=val1",
            "c1 cf2:a=apple cf2:ab=banana"
        ]
    );
    assert_eq!(keys("ColumnPrefixFilter('')").len(), 5);
}

#[test]
fn single_column_value_filter_as_in_happybase_tests() {
    // happybase's tests/test_api.py sends this exact string (note the space before '(').
    assert_eq!(
        keys("SingleColumnValueFilter ('cf1','qual1',=,'binary:val1')"),
        // b1 and c1 lack cf1:qual1 and pass, as filterIfColumnMissing defaults to false.
        ["a1", "b1", "b2", "c1"]
    );
    // The whole row is returned, not only the tested column.
    assert_eq!(
        scan("SingleColumnValueFilter('cf1','qual1',=,'binary:val2')")[0],
        "a2 cf1:qual1=val2 cf2:a=Hello World"
    );
}

#[test]
fn single_column_value_filter_if_missing_and_versions() {
    let f = |s: &str| keys(&format!("SingleColumnValueFilter('cf1','qual1',{s})"));
    assert_eq!(f("=,'binary:val1',true,true"), ["a1", "b2"]);
    assert_eq!(f("=,'binary:val1',false,true"), ["a1", "b1", "b2", "c1"]);
    // b2's newest version is val1; an older one is "old".
    assert_eq!(f("=,'binary:old',true,true"), Vec::<String>::new());
    assert_eq!(f("=,'binary:old',true,false"), ["b2"]);
    assert_eq!(f("!=,'binary:val1',true,true"), ["a2"]);
    assert_eq!(f(">,'binary:val1',TRUE,True"), ["a2"]);
    // The family is compared too.
    assert_eq!(
        keys("SingleColumnValueFilter('cf2','qual1',=,'binary:val1',true,true)"),
        Vec::<String>::new()
    );
}

#[test]
fn page_filter_returns_n_rows_then_stops() {
    let (rows, read) = scan_rows("PageFilter(2)", table());
    assert_eq!(rows.len(), 2);
    assert_eq!(read, 2, "the scan ends with the second row");
    let (rows, read) = scan_rows("PageFilter(0)", table());
    assert!(rows.is_empty());
    assert_eq!(read, 1);
    assert_eq!(keys("PageFilter(100)").len(), 5);
}

#[test]
fn page_filter_counts_rows_returned() {
    assert_eq!(keys("PrefixFilter('b') AND PageFilter(1)"), ["b1"]);
    assert_eq!(keys("PageFilter(1) AND PrefixFilter('b')"), ["b1"]);
    // HBase's documented example.
    assert_eq!(
        scan("PrefixFilter ('a') AND PageFilter (1) AND FirstKeyOnlyFilter ()"),
        ["a1 cf1:qual1=val1"]
    );
    let (rows, read) = scan_rows("ValueFilter(=,'binary:val1') AND PageFilter(2)", table());
    assert_eq!(rows, ["a1 cf1:qual1=val1", "b1 cf1:other=val1"]);
    assert_eq!(read, 3);
}

#[test]
fn row_filter_compares_keys() {
    assert_eq!(keys("RowFilter(=,'binary:b1')"), ["b1"]);
    assert_eq!(keys("RowFilter(<,'binary:b1')"), ["a1", "a2"]);
    assert_eq!(keys("RowFilter(<=,'binary:b1')"), ["a1", "a2", "b1"]);
    assert_eq!(keys("RowFilter(>,'binary:b1')"), ["b2", "c1"]);
    assert_eq!(keys("RowFilter(>=,'binary:b1')"), ["b1", "b2", "c1"]);
    assert_eq!(keys("RowFilter(!=,'binary:b1')").len(), 4);
    assert_eq!(keys("RowFilter(=,'binaryprefix:a')"), ["a1", "a2"]);
    assert_eq!(keys("RowFilter(=,'substring:B')"), ["b1", "b2"]);
    assert_eq!(keys("RowFilter(=,'regexstring:[ac]1')"), ["a1", "c1"]);
    assert_eq!(keys("RowFilter(!=,'regexstring:^a')"), ["b1", "b2", "c1"]);
}

#[test]
fn qualifier_and_value_filters_drop_cells() {
    assert_eq!(
        scan("QualifierFilter(=,'binary:b')"),
        ["a1 cf2:b=1", "b1 cf2:b=22", "c1 cf2:b=cherry"]
    );
    assert_eq!(
        scan("QualifierFilter(>=,'binary:qual2')"),
        ["a1 cf1:qual2=xyz"]
    );
    assert_eq!(
        scan("ValueFilter(=,'substring:WORLD')"),
        ["a2 cf2:a=Hello World"]
    );
    assert_eq!(
        scan("ValueFilter(=,'binaryprefix:val')"),
        [
            "a1 cf1:qual1=val1",
            "a2 cf1:qual1=val2",
            "b1 cf1:other=val1",
            "b2 cf1:qual1=val1"
        ]
    );
    // An empty value is less than any non-empty operand.
    assert_eq!(scan("ValueFilter(<,'binary:0')"), ["b2 cf2:c="]);
}

#[test]
fn and_binds_tighter_than_or() {
    // (PrefixFilter('c') AND RowFilter(=,'binary:zz')) OR RowFilter(=,'binary:a1')
    assert_eq!(
        keys("PrefixFilter('c') AND RowFilter(=,'binary:zz') OR RowFilter(=,'binary:a1')"),
        ["a1"]
    );
    // RowFilter(=,'binary:a1') OR (PrefixFilter('c') AND RowFilter(=,'binary:zz'))
    assert_eq!(
        keys("RowFilter(=,'binary:a1') OR PrefixFilter('c') AND RowFilter(=,'binary:zz')"),
        ["a1"]
    );
    // Parentheses override.
    assert!(
        keys("PrefixFilter('c') AND (RowFilter(=,'binary:zz') OR RowFilter(=,'binary:a1'))")
            .is_empty()
    );
    assert_eq!(
        keys("(PrefixFilter('a') OR PrefixFilter('c')) AND RowFilter(!=,'binary:a2')"),
        ["a1", "c1"]
    );
}

#[test]
fn skip_and_while_bind_tighter_than_and() {
    // (PrefixFilter('b') AND (SKIP ValueFilter(...))) OR PrefixFilter('c')
    assert_eq!(
        keys("PrefixFilter('b') AND SKIP ValueFilter(!=,'binary:') OR PrefixFilter('c')"),
        ["b1", "c1"]
    );
}

#[test]
fn cell_filters_combine_cell_by_cell() {
    assert_eq!(
        scan("QualifierFilter(=,'binary:a') OR ValueFilter(=,'binary:cherry')"),
        ["a2 cf2:a=Hello World", "c1 cf2:a=apple cf2:b=cherry"]
    );
    assert_eq!(
        scan("ColumnPrefixFilter('a') AND ValueFilter(=,'substring:an')"),
        ["c1 cf2:ab=banana"]
    );
    // A side that rejects the row contributes no cells.
    assert_eq!(
        scan("PrefixFilter('c') OR QualifierFilter(=,'binary:qual2')"),
        [
            "a1 cf1:qual2=xyz",
            "c1 cf2:a=apple cf2:ab=banana cf2:b=cherry"
        ]
    );
    // KeyOnlyFilter changes only the cells of a side it is on.
    assert_eq!(
        scan(
            "(PrefixFilter('a') AND KeyOnlyFilter()) OR PrefixFilter('c') AND FirstKeyOnlyFilter()"
        ),
        [
            "a1 cf1:qual1= cf1:qual2= cf2:b=",
            "a2 cf1:qual1= cf2:a=",
            "c1 cf2:a=apple"
        ]
    );
}

#[test]
fn skip_drops_rows_with_any_failing_cell() {
    // HBase's example: SKIP ValueFilter(0) omits rows in which any value is not 0.
    assert_eq!(keys("SKIP ValueFilter(!=,'binary:val1')"), ["a2", "c1"]);
    assert_eq!(keys("SKIP QualifierFilter(<,'binary:z')").len(), 5);
    assert_eq!(scan("SKIP ColumnPrefixFilter('a')"), Vec::<String>::new());
    assert_eq!(keys("SKIP(PrefixFilter('b'))"), ["b1", "b2"]);
    assert_eq!(keys("SKIP SKIP PrefixFilter('b')"), ["b1", "b2"]);
}

#[test]
fn while_stops_at_the_first_failing_row() {
    let (rows, read) = scan_rows("WHILE RowFilter(<,'binary:b2')", table());
    assert_eq!(rows.len(), 3);
    assert_eq!(read, 4, "the scan ends at b2 without returning it");
    let (rows, read) = scan_rows("WHILE ValueFilter(!=,'binary:xyz')", table());
    assert!(rows.is_empty());
    assert_eq!(read, 1);
    // Under OR, the other side carries on after the WHILE has stopped.
    assert_eq!(
        keys("WHILE PrefixFilter('a') OR PrefixFilter('c')"),
        ["a1", "a2", "c1"]
    );
    assert_eq!(
        keys("PrefixFilter('b') AND WHILE RowFilter(<,'binary:b2')"),
        ["b1"]
    );
}

#[test]
fn nesting_and_whitespace() {
    assert_eq!(keys("((((PrefixFilter('a')))))"), ["a1", "a2"]);
    assert_eq!(
        keys(" \t\nPrefixFilter\n(\t'a' )AND(RowFilter ( = , 'binary:a2' ) ) "),
        ["a2"]
    );
    assert_eq!(
        keys("RowFilter(=,'binary:b1')OR(RowFilter(=,'binary:c1'))"),
        ["b1", "c1"]
    );
}

#[test]
fn quoted_strings_escape_quotes() {
    let rows = vec![row("it's", &["f:q=v"]), row("its", &["f:q=v"])];
    assert_eq!(
        scan_rows("PrefixFilter('it''s')", rows.clone()).0,
        ["it's f:q=v"]
    );
    assert_eq!(
        scan_rows("RowFilter(=,'binary:it''s')", rows.clone()).0,
        ["it's f:q=v"]
    );
    assert_eq!(scan_rows("PrefixFilter('''')", rows).0.len(), 0);
    assert_eq!(
        scan_rows(
            "PrefixFilter('(a) AND b,')",
            vec![row("(a) AND b,x", &["f:q=v"])]
        )
        .0
        .len(),
        1
    );
}

#[test]
fn row_prefix_hint() {
    let hint = |s: &str| Filter::parse(s).unwrap().row_prefix_hint();
    assert_eq!(hint("PrefixFilter('ab')"), Some(b"ab".to_vec()));
    assert_eq!(
        hint("KeyOnlyFilter() AND (PrefixFilter('a') AND PrefixFilter('abc'))"),
        Some(b"abc".to_vec())
    );
    assert_eq!(hint("PrefixFilter('a') OR PrefixFilter('b')"), None);
    assert_eq!(hint("SKIP PrefixFilter('a')"), None);
    assert_eq!(
        hint("PrefixFilter('a') AND WHILE RowFilter(<,'binary:b')"),
        None
    );
    assert_eq!(hint("PageFilter(1)"), None);
}

#[test]
fn each_run_starts_afresh() {
    let filter = Filter::parse("PageFilter(1)").unwrap();
    for _ in 0..2 {
        let mut run = filter.start();
        let (key, mut cells) = row("r", &["f:q=v"]);
        assert_eq!(run.apply(&key, &mut cells), RowVerdict::IncludeThenStop);
        assert_eq!(run.apply(&key, &mut cells), RowVerdict::Stop);
    }
}

#[test]
fn rows_without_cells_are_skipped() {
    let mut run = Filter::parse("KeyOnlyFilter()").unwrap().start();
    assert_eq!(run.apply(b"r", &mut Vec::new()), RowVerdict::Skip);
}

#[test]
fn unknown_and_unsupported_filters_are_named() {
    let e = error("ColumnRangeFilter('a',true,'b',false)");
    assert!(e.contains("\"ColumnRangeFilter\" is not supported"), "{e}");
    assert!(e.contains("PrefixFilter, KeyOnlyFilter"), "{e}");
    assert!(error("NoSuchFilter()").contains("\"NoSuchFilter\""));
    let e = error("prefixfilter('a')");
    assert!(e.contains("did you mean PrefixFilter?"), "{e}");
    assert!(error("PREFIXFILTER('a')").contains("did you mean PrefixFilter?"));
}

#[test]
fn wrong_arguments_name_the_filter() {
    let cases = [
        (
            "PrefixFilter()",
            "PrefixFilter at byte 0: takes 1 argument, got 0",
        ),
        (
            "PrefixFilter('a','b')",
            "PrefixFilter at byte 0: takes 1 argument, got 2",
        ),
        (
            "PrefixFilter(a)",
            "argument 1: the row prefix must be a quoted string",
        ),
        (
            "KeyOnlyFilter('true')",
            "KeyOnlyFilter at byte 14: argument 1: lenAsVal must be true or false",
        ),
        ("KeyOnlyFilter(true, true)", "takes 0 to 1 arguments, got 2"),
        (
            "FirstKeyOnlyFilter(1)",
            "FirstKeyOnlyFilter at byte 0: takes no arguments, got 1",
        ),
        (
            "ColumnPrefixFilter(=)",
            "ColumnPrefixFilter at byte 19: argument 1",
        ),
        (
            "MultipleColumnPrefixFilter()",
            "takes at least 1 argument, got 0",
        ),
        (
            "MultipleColumnPrefixFilter('a', 2)",
            "argument 2: a qualifier prefix must be a quoted string",
        ),
        (
            "PageFilter('1')",
            "PageFilter at byte 11: argument 1: the page size must be a whole number",
        ),
        ("PageFilter(-1)", "the page size must be a whole number"),
        ("PageFilter(1.5)", "the page size must be a whole number"),
        (
            "PageFilter(99999999999999999999)",
            "the page size must be a whole number",
        ),
        (
            "PageFilter()",
            "PageFilter at byte 0: takes 1 argument, got 0",
        ),
        (
            "RowFilter('binary:a')",
            "RowFilter at byte 0: takes 2 arguments, got 1",
        ),
        (
            "RowFilter('binary:a', =)",
            "argument 1: expected a comparison operator",
        ),
        (
            "RowFilter(=, binary)",
            "argument 2: the comparator ('type:operand') must be a quoted string",
        ),
        (
            "RowFilter(=, 'binary')",
            "RowFilter at byte 13: argument 2: the comparator must be 'type:operand'",
        ),
        (
            "QualifierFilter(=, 'bin:a')",
            "QualifierFilter at byte 19: argument 2: unknown comparator type \"bin\"",
        ),
        (
            "ValueFilter(<, 'substring:a')",
            "ValueFilter at byte 15: argument 2: a substring comparator takes only = or !=",
        ),
        (
            "ValueFilter(>=, 'regexstring:a')",
            "a regexstring comparator takes only = or !=",
        ),
        (
            "ValueFilter(=, 'regexstring:(')",
            "ValueFilter at byte 15: argument 2: bad pattern",
        ),
        (
            "SingleColumnValueFilter('f','q',=)",
            "SingleColumnValueFilter at byte 0: takes 4 or 6 arguments",
        ),
        (
            "SingleColumnValueFilter('f','q',=,'binary:v',true)",
            "takes 4 or 6 arguments",
        ),
        (
            "SingleColumnValueFilter(f,'q',=,'binary:v')",
            "argument 1: the family must be a quoted string",
        ),
        (
            "SingleColumnValueFilter('f','q','=','binary:v')",
            "argument 3: expected a comparison operator",
        ),
        (
            "SingleColumnValueFilter('f','q',=,'binary:v',yes,true)",
            "argument 5: filterIfColumnMissing must be true or false",
        ),
        (
            "SingleColumnValueFilter('f','q',=,'binary:v',true,1)",
            "argument 6: latestVersionOnly must be true or false",
        ),
    ];
    for (filter, want) in cases {
        let e = error(filter);
        assert!(e.contains(want), "{filter}: {e:?} lacks {want:?}");
    }
}

#[test]
fn malformed_shapes_give_the_byte() {
    let cases = [
        ("", "at byte 0: empty filter string"),
        ("   ", "at byte 0: empty filter string"),
        (
            "PrefixFilter",
            "at byte 12: expected '(' after the filter name \"PrefixFilter\"",
        ),
        (
            "PrefixFilter 'a'",
            "at byte 13: expected '(' after the filter name",
        ),
        (
            "PrefixFilter('a'",
            "at byte 16: PrefixFilter: the arguments are not closed",
        ),
        ("PrefixFilter('a", "at byte 13: unterminated quoted string"),
        (
            "PrefixFilter('a' 'b')",
            "at byte 17: PrefixFilter: expected ',' or ')'",
        ),
        (
            "PrefixFilter('a',)",
            "at byte 17: PrefixFilter: expected an argument, found ')'",
        ),
        (
            "PrefixFilter(,'a')",
            "at byte 13: PrefixFilter: expected an argument, found ','",
        ),
        (
            "PrefixFilter(('a'))",
            "at byte 13: PrefixFilter: expected an argument, found '('",
        ),
        (
            "PrefixFilter('a'))",
            "at byte 17: unexpected ')'; expected AND, OR or the end",
        ),
        (
            "(PrefixFilter('a')",
            "at byte 18: missing ')' to close the '(' at byte 0",
        ),
        (
            "(PrefixFilter('a') 'x'",
            "at byte 19: expected ')' to close the '(' at byte 0, found a quoted string",
        ),
        ("()", "at byte 1: unexpected ')'; expected a filter"),
        (
            "PrefixFilter('a') AND",
            "at byte 21: the filter string ends where a filter was expected",
        ),
        (
            "AND PrefixFilter('a')",
            "at byte 0: AND needs a filter on each side",
        ),
        (
            "PrefixFilter('a') OR OR PrefixFilter('b')",
            "at byte 21: OR needs a filter on each side",
        ),
        (
            "PrefixFilter('a') PrefixFilter('b')",
            "at byte 18: unexpected \"PrefixFilter\"; expected AND, OR",
        ),
        (
            "PrefixFilter('a') and PrefixFilter('b')",
            "at byte 18: \"and\": operators are upper case",
        ),
        ("PrefixFilter('a') Or PrefixFilter('b')", "write OR"),
        (
            "skip PrefixFilter('a')",
            "at byte 0: \"skip\": operators are upper case",
        ),
        (
            "SKIP",
            "at byte 4: the filter string ends where a filter was expected",
        ),
        (
            "WHILE AND PrefixFilter('a')",
            "at byte 6: AND needs a filter",
        ),
        (
            "RowFilter(!, 'binary:a')",
            "at byte 10: '!' must be followed by '='",
        ),
        (
            "RowFilter(==, 'binary:a')",
            "at byte 11: RowFilter: expected ',' or ')'",
        ),
        (
            "'a'",
            "at byte 0: unexpected a quoted string; expected a filter",
        ),
        ("=", "at byte 0: unexpected a comparison operator"),
        (",", "at byte 0: unexpected ','"),
    ];
    for (filter, want) in cases {
        let e = error(filter);
        assert!(e.contains(want), "{filter:?}: {e:?} lacks {want:?}");
    }
}

#[test]
fn input_is_bounded() {
    let long = format!("PrefixFilter('{}')", "a".repeat(MAX_FILTER_BYTES));
    assert!(error(&long).contains("longer than the 65536 bytes"));
    let fits = format!("PrefixFilter('{}')", "a".repeat(MAX_FILTER_BYTES - 16));
    assert!(Filter::parse(&fits).is_ok());

    let nested = |n: usize| format!("{}PrefixFilter('a'){}", "(".repeat(n), ")".repeat(n));
    assert!(Filter::parse(&nested(MAX_DEPTH)).is_ok());
    assert!(error(&nested(MAX_DEPTH + 1)).contains("nests deeper than 64 levels at byte 64"));
    // Deeper than any stack would take, all within the byte limit.
    assert!(error(&"(".repeat(MAX_FILTER_BYTES)).contains("nests deeper"));
    assert!(error(&"SKIP ".repeat(10_000)).contains("nests deeper"));
    assert!(error(&"WHILE(".repeat(5_000)).contains("nests deeper"));

    // Long flat chains are fine: AND/OR lists do not nest.
    let chain = vec!["PrefixFilter('a')"; 2000].join(" AND ");
    assert_eq!(scan_rows(&chain, table()).0.len(), 2);

    let patterns = |n: usize| vec!["RowFilter(=,'regexstring:a')"; n].join(" OR ");
    assert!(Filter::parse(&patterns(MAX_PATTERNS)).is_ok());
    assert!(error(&patterns(MAX_PATTERNS + 1)).contains("more than 8 regexstring/substring"));
}

#[test]
fn filter_strings_as_bytes_quote_any_bytes() {
    let filter =
        Filter::parse_bytes(b"PrefixFilter('\x00\xff') AND RowFilter(<,'binary:\x00\xff\x10')")
            .unwrap();
    let rows = vec![
        row("a", &["f:q=v"]),
        (vec![0, 0xff, 1], row("x", &["f:q=v"]).1),
        (vec![0, 0xff, 0x20], row("x", &["f:q=v"]).1),
    ];
    let mut run = filter.start();
    let verdicts: Vec<_> = rows
        .into_iter()
        .map(|(key, mut cells)| run.apply(&key, &mut cells))
        .collect();
    assert_eq!(
        verdicts,
        [RowVerdict::Skip, RowVerdict::Include, RowVerdict::Skip]
    );
    assert_eq!(
        Filter::parse_bytes(b"PrefixFilter('\x00\xff')")
            .unwrap()
            .row_prefix_hint(),
        Some(vec![0, 0xff])
    );
    let e = Filter::parse_bytes(b"PrefixFilter('a') \xff")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("at byte 18: bytes that are not UTF-8 outside quotes"),
        "{e}"
    );
    let e = Filter::parse_bytes(b"ValueFilter(=,'regexstring:\xff')")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ValueFilter at byte 14: argument 2: the comparator's operand is not UTF-8"),
        "{e}"
    );
}
