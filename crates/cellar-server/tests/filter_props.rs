//! Properties of the filter language: no input makes `Filter::parse` or `FilterRun::apply`
//! panic, returned rows are made of the row's own cells, and row-level filters combined
//! with AND/OR/SKIP agree with plain boolean logic.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use cellar_server::filter::{Filter, RowVerdict};
use cellar_table::Cell;
use proptest::prelude::*;

/// Pieces of filter strings, valid and not.
const TOKENS: &[&str] = &[
    "PrefixFilter",
    "KeyOnlyFilter",
    "FirstKeyOnlyFilter",
    "ColumnPrefixFilter",
    "MultipleColumnPrefixFilter",
    "SingleColumnValueFilter",
    "PageFilter",
    "RowFilter",
    "QualifierFilter",
    "ValueFilter",
    "ColumnRangeFilter",
    "prefixfilter",
    "(",
    ")",
    ",",
    "(",
    ")",
    "AND",
    "OR",
    "SKIP",
    "WHILE",
    "and",
    "=",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "!",
    "==",
    "0",
    "1",
    "-1",
    "3",
    "99999999999999999999",
    "true",
    "false",
    "TRUE",
    "'a'",
    "'f'",
    "'q'",
    "''",
    "''''",
    "'",
    "'binary:a'",
    "'binaryprefix:b'",
    "'substring:A'",
    "'regexstring:^a.*'",
    "'regexstring:('",
    "'binary'",
    "'x:y'",
    "'é'",
    "é",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(TOKENS),
            prop::sample::select(&["", " ", "  ", "\t"][..]),
        ),
        0..40,
    )
    .prop_map(|parts| {
        parts
            .into_iter()
            .map(|(t, ws)| format!("{t}{ws}"))
            .collect()
    })
}

/// Rows of a few cells over two families, with repeated columns (versions).
fn rows() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<Cell>)>> {
    let cell = (
        prop::sample::select(&["f", "g"][..]),
        prop::collection::vec(prop::sample::select(&[b'a', b'b', b'q', 0xff][..]), 0..3),
        prop::collection::vec(any::<u8>(), 0..4),
    );
    let row = (
        prop::collection::vec(prop::sample::select(&[b'a', b'b', b'c'][..]), 0..3),
        prop::collection::vec(cell, 0..5),
    );
    prop::collection::vec(row, 0..12).prop_map(|rows| {
        let mut rows: Vec<_> = rows
            .into_iter()
            .map(|(key, cells)| {
                let cells = cells
                    .into_iter()
                    .enumerate()
                    .map(|(i, (family, qualifier, value))| Cell {
                        row: key.clone(),
                        family: Arc::from(family),
                        qualifier,
                        timestamp: 100 - i as u64,
                        value,
                    })
                    .collect();
                (key, cells)
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows.dedup_by(|a, b| a.0 == b.0);
        rows
    })
}

/// Runs a scan's worth of rows through `filter`, checking what every verdict promises.
fn run_checked(filter: &Filter, rows: &[(Vec<u8>, Vec<Cell>)]) -> Vec<Vec<u8>> {
    let mut run = filter.start();
    let mut returned = Vec::new();
    for (key, original) in rows {
        let mut cells = original.clone();
        let verdict = run.apply(key, &mut cells);
        if matches!(verdict, RowVerdict::Include | RowVerdict::IncludeThenStop) {
            assert!(!cells.is_empty(), "a returned row has a cell");
            // The cells kept are the row's own, in order (values may be emptied).
            let mut rest = original.iter();
            for c in &cells {
                assert!(
                    rest.any(|o| o.family == c.family
                        && o.qualifier == c.qualifier
                        && o.timestamp == c.timestamp),
                    "cell not from the row, or out of order"
                );
            }
            returned.push(key.clone());
        }
        if matches!(verdict, RowVerdict::Stop | RowVerdict::IncludeThenStop) {
            // A stopped run stays stopped.
            let mut again = original.clone();
            assert_eq!(run.apply(key, &mut again), RowVerdict::Stop);
            break;
        }
    }
    returned
}

/// A row-level expression and its meaning as a plain predicate.
#[derive(Debug, Clone)]
enum RowExpr {
    Prefix(Vec<u8>),
    RowLess(Vec<u8>),
    And(Vec<RowExpr>),
    Or(Vec<RowExpr>),
    Skip(Box<RowExpr>),
}

impl RowExpr {
    fn text(&self) -> String {
        let quote = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        match self {
            RowExpr::Prefix(p) => format!("PrefixFilter('{}')", quote(p)),
            RowExpr::RowLess(p) => format!("RowFilter(<, 'binary:{}')", quote(p)),
            RowExpr::And(xs) => {
                let parts: Vec<_> = xs.iter().map(|x| format!("({})", x.text())).collect();
                parts.join(" AND ")
            }
            RowExpr::Or(xs) => {
                let parts: Vec<_> = xs.iter().map(|x| format!("({})", x.text())).collect();
                parts.join(" OR ")
            }
            RowExpr::Skip(x) => format!("SKIP ({})", x.text()),
        }
    }

    fn holds(&self, key: &[u8]) -> bool {
        match self {
            RowExpr::Prefix(p) => key.starts_with(p),
            RowExpr::RowLess(p) => key < p.as_slice(),
            RowExpr::And(xs) => xs.iter().all(|x| x.holds(key)),
            RowExpr::Or(xs) => xs.iter().any(|x| x.holds(key)),
            RowExpr::Skip(x) => x.holds(key),
        }
    }
}

fn row_expr() -> impl Strategy<Value = RowExpr> {
    let key = prop::collection::vec(prop::sample::select(&[b'a', b'b', b'c'][..]), 0..3);
    let leaf = prop_oneof![
        key.clone().prop_map(RowExpr::Prefix),
        key.prop_map(RowExpr::RowLess)
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(RowExpr::And),
            prop::collection::vec(inner.clone(), 1..4).prop_map(RowExpr::Or),
            inner.prop_map(|x| RowExpr::Skip(Box::new(x))),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn filter_parse_takes_any_string(text in ".{0,200}") {
        let _ = Filter::parse(&text);
    }

    #[test]
    fn filter_parse_bytes_takes_any_bytes(text in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Filter::parse_bytes(&text);
    }

    #[test]
    fn filter_parse_takes_any_bytes_of_the_language(
        text in prop::collection::vec(
            prop::sample::select(&b"()',=!<> \tANDORSKIPWHILEaz019:"[..]), 0..120)
    ) {
        let _ = Filter::parse(&String::from_utf8(text).unwrap());
    }

    #[test]
    fn filter_token_sequences_parse_or_err_and_apply_never_panics(
        text in token_soup(),
        rows in rows(),
    ) {
        if let Ok(filter) = Filter::parse(&text) {
            run_checked(&filter, &rows);
        }
    }

    #[test]
    fn row_filters_follow_boolean_logic(expr in row_expr(), rows in rows()) {
        let filter = Filter::parse(&expr.text()).unwrap();
        let want: Vec<Vec<u8>> = rows
            .iter()
            .filter(|(key, cells)| !cells.is_empty() && expr.holds(key))
            .map(|(key, _)| key.clone())
            .collect();
        prop_assert_eq!(run_checked(&filter, &rows), want);
    }

    #[test]
    fn page_filter_returns_at_most_n_rows(n in 0u64..6, expr in row_expr(), rows in rows()) {
        let filter = Filter::parse(&format!("({}) AND PageFilter({n})", expr.text())).unwrap();
        let all = run_checked(&Filter::parse(&expr.text()).unwrap(), &rows);
        let paged = run_checked(&filter, &rows);
        let n = usize::try_from(n).unwrap();
        prop_assert_eq!(&paged[..], &all[..all.len().min(n)]);
    }
}
