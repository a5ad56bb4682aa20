//! Model-based test of HQL statements: random INSERT (explicit and automatic timestamps),
//! DELETE and SELECT statements written as HQL text, with rows, qualifiers and values full of
//! bytes that need escaping, cut by a `StatementReader`, parsed and run through `Session` on
//! a store in a temporary directory, with engine flushes and reopens in between. Every
//! SELECT's output is compared with the text rendered from a model of the cells
//! (docs/hql.md, sections 3 to 5).
//!
//! The model learns automatic timestamps from the store: the cells an INSERT stamped are
//! the only ones with timestamps between two oracle readings taken around it (explicit
//! timestamps are from 1970, 2006 or 2500, or automatic ones learned earlier), so a SELECT
//! of that TIMESTAMP range with DISPLAY_TIMESTAMPS prints them all: an INSERT here never
//! stamps one column twice, so each is the newest version in the range. The stamps must
//! increase in statement order.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Bound;
use std::time::{SystemTime, UNIX_EPOCH};

use cellar_engine::Durability;
use cellar_hql::{escape_output, format_timestamp, parse_timestamp, unescape_output};
use cellar_load::NoProgress;
use cellar_shell::exec::{ExecError, Session};
use cellar_table::{next_timestamp, TableError};
use common::session::TestShell;
use proptest::prelude::*;

struct Family {
    name: &'static str,
    max_versions: usize,
    ttl_seconds: Option<u64>,
}

/// In schema order, which is not name order.
const FAMILIES: [Family; 3] = [
    Family {
        name: "info",
        max_versions: 2,
        ttl_seconds: None,
    },
    Family {
        name: "data",
        max_versions: 1,
        ttl_seconds: None,
    },
    Family {
        name: "recent",
        max_versions: 3,
        ttl_seconds: Some(30 * 86_400),
    },
];
const CREATE: &str = "CREATE TABLE \"cell-model\" (info MAX_VERSIONS 2, data, \
                      recent TTL = 30 DAYS MAX_VERSIONS = 3);";
const TABLE: &str = "\"cell-model\"";

/// Rows: quotes, backslashes, TAB, LF, ';', comment starters, NUL, invalid and valid UTF-8.
const ROWS: [&[u8]; 8] = [
    b"a",
    b"a'",
    b"ab",
    b"\\x",
    b"\t\n;",
    b"\0\xff",
    b"-- #\"",
    b"\xc3\xa9",
];
const QUALIFIERS: [&[u8]; 6] = [b"", b"q", b"q:x", b"'", b"\\n", b"\x01\xc3"];

/// Explicit timestamps: 1970, 2006 and 2500 (older and newer than any automatic one; the
/// old ones are past the `recent` family's TTL).
fn explicit_timestamps() -> [u64; 6] {
    let at = |text: &str| parse_timestamp(text).expect("timestamp");
    [
        1,
        2,
        3,
        at("2006-03-01 07:17:12"),
        at("2006-03-01 07:17:12.25"),
        at("2500-01-01 00:00:00"),
    ]
}

/// (row, family index, qualifier, newest first) → value.
type Model = BTreeMap<(Vec<u8>, usize, Vec<u8>, Reverse<u64>), Vec<u8>>;

/// A timestamp: an explicit one, or (when the model knows some) an automatic one.
#[derive(Debug, Clone, Copy)]
struct TsPick(u8);

#[derive(Debug, Clone)]
struct CellGen {
    row: usize,
    family: usize,
    qualifier: usize,
    /// `None`: stamped by the table layer.
    ts: Option<TsPick>,
    value: Vec<u8>,
}

#[derive(Debug, Clone)]
enum ColumnsGen {
    All,
    /// (family, qualifier or the whole family).
    List(Vec<(usize, Option<usize>)>),
}

#[derive(Debug, Clone)]
enum RowsGen {
    All,
    Exact(usize),
    Prefix(Vec<u8>),
    /// (bound, inclusive) for each end; at least one.
    Range(Option<(Vec<u8>, bool)>, Option<(Vec<u8>, bool)>),
}

#[derive(Debug, Clone)]
enum TimeGen {
    All,
    Exact(TsPick),
    Range(Option<(TsPick, bool)>, Option<(TsPick, bool)>),
}

#[derive(Debug, Clone)]
struct SelectGen {
    columns: ColumnsGen,
    rows: RowsGen,
    time: TimeGen,
    max_versions: Option<u32>,
    limit: Option<u64>,
    reverse: bool,
    display_timestamps: bool,
    /// Spelling choices: condition and option order, literal style, keyword case.
    style: u8,
}

#[derive(Debug, Clone)]
enum Op {
    Insert {
        cells: Vec<CellGen>,
        /// Raw TAB, LF and UTF-8 in literals instead of escapes.
        raw: bool,
        /// A cell of a family the table does not have, at this position: nothing is written.
        bad_family_at: Option<usize>,
    },
    Delete {
        row: usize,
        columns: ColumnsGen,
        version: Option<TsPick>,
        raw: bool,
    },
    Select(SelectGen),
    FlushEngine,
    Reopen,
}

fn ts_pick() -> impl Strategy<Value = TsPick> {
    (0u8..10).prop_map(TsPick)
}

fn bound_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![
            b'a', b'b', b'\'', b'\\', b'\t', 0x00, 0xff, b'-', 0xc3,
        ]),
        0..=2,
    )
}

fn columns() -> impl Strategy<Value = ColumnsGen> {
    prop_oneof![
        1 => Just(ColumnsGen::All),
        2 => prop::collection::vec(
            (0..FAMILIES.len(), prop::option::of(0..QUALIFIERS.len())),
            1..4
        )
        .prop_map(ColumnsGen::List),
    ]
}

fn cell() -> impl Strategy<Value = CellGen> {
    (
        0..ROWS.len(),
        0..FAMILIES.len(),
        0..QUALIFIERS.len(),
        prop_oneof![2 => ts_pick().prop_map(Some), 1 => Just(None)],
        prop::collection::vec(any::<u8>(), 0..5),
    )
        .prop_map(|(row, family, qualifier, ts, value)| CellGen {
            row,
            family,
            qualifier,
            ts,
            value,
        })
}

fn select() -> impl Strategy<Value = SelectGen> {
    let end = || prop::option::of((bound_bytes(), any::<bool>()));
    let rows = prop_oneof![
        2 => Just(RowsGen::All),
        2 => (0..ROWS.len()).prop_map(RowsGen::Exact),
        1 => bound_bytes().prop_map(RowsGen::Prefix),
        2 => (end(), end()).prop_map(|(lo, hi)| match (lo, hi) {
            (None, None) => RowsGen::All,
            (lo, hi) => RowsGen::Range(lo, hi),
        }),
    ];
    let ts_end = || prop::option::of((ts_pick(), any::<bool>()));
    let time = prop_oneof![
        3 => Just(TimeGen::All),
        1 => ts_pick().prop_map(TimeGen::Exact),
        2 => (ts_end(), ts_end()).prop_map(|(lo, hi)| match (lo, hi) {
            (None, None) => TimeGen::All,
            (lo, hi) => TimeGen::Range(lo, hi),
        }),
    ];
    (
        columns(),
        rows,
        time,
        prop::option::of(1u32..4),
        prop::option::of(0u64..8),
        any::<bool>(),
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(
            |(columns, rows, time, max_versions, limit, reverse, display_timestamps, style)| {
                SelectGen {
                    columns,
                    rows,
                    time,
                    max_versions,
                    limit,
                    reverse,
                    display_timestamps,
                    style,
                }
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (
            prop::collection::vec(cell(), 1..5),
            any::<bool>(),
            prop_oneof![9 => Just(None), 1 => (0usize..5).prop_map(Some)],
        )
            .prop_map(|(cells, raw, bad_family_at)| Op::Insert { cells, raw, bad_family_at }),
        3 => (0..ROWS.len(), columns(), prop::option::of(ts_pick()), any::<bool>())
            .prop_map(|(row, columns, version, raw)| Op::Delete { row, columns, version, raw }),
        8 => select().prop_map(Op::Select),
        1 => Just(Op::FlushEngine),
        1 => Just(Op::Reopen),
    ]
}

/// An HQL string literal of `bytes`. `raw`: printable UTF-8, TAB and LF as they are;
/// otherwise everything but printable ASCII escaped (named escapes, `\xHH` in upper case).
fn literal(bytes: &[u8], raw: bool) -> String {
    let mut s = String::from("'");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\'' => s.push_str("\\'"),
                '\\' => s.push_str("\\\\"),
                '\0' => s.push_str("\\0"),
                '\t' | '\n' if raw => s.push(c),
                '\t' => s.push_str("\\t"),
                '\n' => s.push_str("\\n"),
                c if !c.is_control() && (raw || c.is_ascii()) => s.push(c),
                c => {
                    for b in c.to_string().bytes() {
                        let _ = write!(s, "\\x{b:02X}");
                    }
                }
            }
        }
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    s.push('\'');
    s
}

fn timestamp_literal(ts: u64, as_date: bool) -> String {
    if as_date {
        format!("'{}'", format_timestamp(ts))
    } else {
        ts.to_string()
    }
}

fn now_nanos() -> u64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    u64::try_from(since_epoch.as_nanos()).expect("before 2554")
}

/// What a test case knows: the cells, and the automatic timestamps learned so far.
struct World {
    sh: TestShell,
    model: Model,
    explicit: [u64; 6],
    learned: Vec<u64>,
}

impl World {
    fn timestamp(&self, pick: TsPick) -> u64 {
        let i = usize::from(pick.0);
        let n = self.explicit.len();
        if i < n || self.learned.is_empty() {
            self.explicit[i % n]
        } else {
            self.learned[(i - n) % self.learned.len()]
        }
    }

    /// Cuts `text` into its one statement with a `StatementReader`, parses and runs it.
    fn run(&self, text: &str) -> Result<String, ExecError> {
        let mut reader = cellar_hql::StatementReader::new();
        reader.push(text);
        let st = reader
            .next_statement()
            .unwrap_or_else(|| panic!("no complete statement in {text:?}"));
        assert!(
            reader.finish().is_none(),
            "more than one statement: {text:?}"
        );
        let mut statements = st.parse().unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(statements.len(), 1, "{text:?}");
        let session = Session {
            store: self.sh.store(),
            durability: self.sh.durability,
            progress: &NoProgress,
        };
        let mut out = Vec::new();
        session.execute(&statements.remove(0).node, &mut out)?;
        Ok(String::from_utf8(out).expect("output is UTF-8"))
    }

    fn ok(&self, text: &str) -> String {
        self.run(text)
            .unwrap_or_else(|e| panic!("{text:?} failed: {e}"))
    }

    fn insert(&mut self, cells: &[CellGen], raw: bool, bad_family_at: Option<usize>) {
        // Each column stamped at most once (see the module doc).
        let mut cells = cells.to_vec();
        for i in 0..cells.len() {
            let column = (cells[i].row, cells[i].family, cells[i].qualifier);
            let stamped_before = cells[..i]
                .iter()
                .any(|c| c.ts.is_none() && (c.row, c.family, c.qualifier) == column);
            if cells[i].ts.is_none() && stamped_before {
                cells[i].ts = Some(TsPick(0));
            }
        }
        let mut tuples: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut column = FAMILIES[c.family].name.as_bytes().to_vec();
                if !QUALIFIERS[c.qualifier].is_empty() || i % 2 == 1 {
                    column.push(b':');
                    column.extend_from_slice(QUALIFIERS[c.qualifier]);
                }
                let ts = match c.ts {
                    Some(p) => format!("{}, ", timestamp_literal(self.timestamp(p), i % 2 == 0)),
                    None => String::new(),
                };
                format!(
                    "({}, {ts}{}, {})",
                    literal(ROWS[c.row], raw),
                    literal(&column, raw),
                    literal(&c.value, raw)
                )
            })
            .collect();
        if let Some(at) = bad_family_at {
            tuples.insert(at.min(tuples.len()), "('a', 'nope:q', 'v')".to_string());
        }
        let text = format!("INSERT INTO {TABLE} VALUES {};\n", tuples.join(",\n  "));
        let before = next_timestamp();
        let result = self.run(&text);
        let after = next_timestamp();
        if bad_family_at.is_some() {
            match result {
                Err(ExecError::Table(TableError::FamilyNotFound { family, .. })) => {
                    assert_eq!(family, "nope");
                }
                r => panic!("{text:?}: expected an unknown family, got {r:?}"),
            }
            return;
        }
        assert_eq!(result.expect("insert"), "", "{text:?}");
        let mut stamped = Vec::new();
        for c in &cells {
            let key = (
                ROWS[c.row].to_vec(),
                c.family,
                QUALIFIERS[c.qualifier].to_vec(),
            );
            match c.ts {
                Some(p) => {
                    let ts = self.timestamp(p);
                    self.model
                        .insert((key.0, key.1, key.2, Reverse(ts)), c.value.clone());
                }
                None => stamped.push((key, c.value.clone())),
            }
        }
        if stamped.is_empty() {
            return;
        }
        let learn = format!(
            "SELECT * FROM {TABLE} WHERE {before} < TIMESTAMP < {after} DISPLAY_TIMESTAMPS;"
        );
        let mut timestamps = vec![None; stamped.len()];
        let printed = self.ok(&learn);
        for line in printed.lines() {
            let (ts, key, value) = parse_line(line);
            let i = stamped
                .iter()
                .position(|(k, _)| *k == key)
                .unwrap_or_else(|| panic!("{line:?} was not stamped by {text:?}"));
            assert_eq!(value, stamped[i].1, "{line:?}");
            assert!(timestamps[i].replace(ts).is_none(), "{line:?} twice");
        }
        let timestamps: Vec<u64> = timestamps
            .into_iter()
            .map(|t| t.unwrap_or_else(|| panic!("{text:?}: a stamped cell is missing: {printed}")))
            .collect();
        assert!(
            timestamps.windows(2).all(|w| w[0] < w[1]),
            "cells stamped out of statement order: {timestamps:?}"
        );
        for ((key, value), ts) in stamped.into_iter().zip(timestamps) {
            self.model.insert((key.0, key.1, key.2, Reverse(ts)), value);
            self.learned.push(ts);
        }
    }

    fn delete(&mut self, row: usize, columns: &ColumnsGen, version: Option<TsPick>, raw: bool) {
        let version = version.map(|p| self.timestamp(p));
        let text = format!(
            "DELETE {} FROM {TABLE} WHERE ROW = {}{};\n",
            columns_text(columns, raw),
            literal(ROWS[row], raw),
            version.map_or(String::new(), |v| format!(
                " VERSION {}",
                timestamp_literal(v, raw)
            ))
        );
        assert_eq!(self.ok(&text), "", "{text:?}");
        self.model.retain(|(r, f, q, Reverse(ts)), _| {
            !(r.as_slice() == ROWS[row]
                && column_selected(columns, *f, q)
                && version.is_none_or(|v| v == *ts))
        });
    }

    fn select(&self, sel: &SelectGen) -> Result<(), TestCaseError> {
        let q = self.resolve(sel);
        let text = select_text(sel, &q);
        let now = now_nanos();
        let got = self.ok(&text);
        let expected = render(&self.model, &q, now);
        prop_assert_eq!(got, expected, "{:?}", text);
        Ok(())
    }

    fn resolve(&self, sel: &SelectGen) -> Query {
        let ts_bound = |end: &Option<(TsPick, bool)>| match end {
            None => Bound::Unbounded,
            Some((p, true)) => Bound::Included(self.timestamp(*p)),
            Some((p, false)) => Bound::Excluded(self.timestamp(*p)),
        };
        let time = match &sel.time {
            TimeGen::All => (Bound::Unbounded, Bound::Unbounded),
            TimeGen::Exact(p) => {
                let t = self.timestamp(*p);
                (Bound::Included(t), Bound::Included(t))
            }
            TimeGen::Range(lo, hi) => (ts_bound(lo), ts_bound(hi)),
        };
        Query {
            columns: sel.columns.clone(),
            rows: sel.rows.clone(),
            time,
            max_versions: sel.max_versions,
            limit: sel.limit,
            reverse: sel.reverse,
            display_timestamps: sel.display_timestamps,
        }
    }

    fn check_everything(&self) -> Result<(), TestCaseError> {
        self.select(&SelectGen {
            columns: ColumnsGen::All,
            rows: RowsGen::All,
            time: TimeGen::All,
            max_versions: None,
            limit: None,
            reverse: false,
            display_timestamps: true,
            style: 0,
        })
    }
}

/// A SELECT with its timestamps resolved.
struct Query {
    columns: ColumnsGen,
    rows: RowsGen,
    time: (Bound<u64>, Bound<u64>),
    max_versions: Option<u32>,
    limit: Option<u64>,
    reverse: bool,
    display_timestamps: bool,
}

fn column_selected(columns: &ColumnsGen, family: usize, qualifier: &[u8]) -> bool {
    match columns {
        ColumnsGen::All => true,
        ColumnsGen::List(l) => l
            .iter()
            .any(|(f, q)| *f == family && q.is_none_or(|q| QUALIFIERS[q] == qualifier)),
    }
}

fn in_bounds<T: Ord + ?Sized>(value: &T, lo: Bound<&T>, hi: Bound<&T>) -> bool {
    let above = match lo {
        Bound::Included(b) => value >= b,
        Bound::Excluded(b) => value > b,
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => value <= b,
        Bound::Excluded(b) => value < b,
        Bound::Unbounded => true,
    };
    above && below
}

fn row_end(e: &Option<(Vec<u8>, bool)>) -> Bound<&[u8]> {
    match e {
        None => Bound::Unbounded,
        Some((b, true)) => Bound::Included(b.as_slice()),
        Some((b, false)) => Bound::Excluded(b.as_slice()),
    }
}

fn row_selected(rows: &RowsGen, row: &[u8]) -> bool {
    let end = row_end;
    match rows {
        RowsGen::All => true,
        RowsGen::Exact(i) => row == ROWS[*i],
        RowsGen::Prefix(p) => row.starts_with(p),
        RowsGen::Range(lo, hi) => in_bounds(row, end(lo), end(hi)),
    }
}

/// What the SELECT should print (docs/hql.md, sections 4 and 5).
fn render(model: &Model, q: &Query, now: u64) -> String {
    let mut rows: Vec<&Vec<u8>> = model.keys().map(|k| &k.0).collect();
    rows.dedup();
    if q.reverse {
        rows.reverse();
    }
    let (lo, hi) = (q.time.0.as_ref(), q.time.1.as_ref());
    let mut lines = Vec::new();
    for row in rows.into_iter().filter(|r| row_selected(&q.rows, r)) {
        let mut column: Option<(usize, &[u8])> = None;
        let mut versions = 0;
        let start = (row.clone(), 0, Vec::new(), Reverse(u64::MAX));
        for ((r, f, qualifier, Reverse(ts)), value) in model.range(start..) {
            if r != row {
                break;
            }
            let family = &FAMILIES[*f];
            let expired = family
                .ttl_seconds
                .is_some_and(|ttl| *ts < now.saturating_sub(ttl * 1_000_000_000));
            if !column_selected(&q.columns, *f, qualifier) || expired || !in_bounds(ts, lo, hi) {
                continue;
            }
            if column != Some((*f, qualifier.as_slice())) {
                column = Some((*f, qualifier.as_slice()));
                versions = 0;
            }
            let max = q
                .max_versions
                .map_or(family.max_versions, |n| family.max_versions.min(n as usize));
            if versions == max {
                continue;
            }
            versions += 1;
            let mut line = String::new();
            if q.display_timestamps {
                line.push_str(&format_timestamp(*ts));
                line.push('\t');
            }
            line.push_str(&escape_output(row));
            line.push('\t');
            line.push_str(family.name);
            if !qualifier.is_empty() {
                line.push(':');
                line.push_str(&escape_output(qualifier));
            }
            line.push('\t');
            line.push_str(&escape_output(value));
            line.push('\n');
            lines.push(line);
        }
    }
    lines.truncate(q.limit.map_or(usize::MAX, |l| l as usize));
    lines.concat()
}

type CellKey = (Vec<u8>, usize, Vec<u8>);

/// A DISPLAY_TIMESTAMPS line back into (timestamp, (row, family, qualifier), value).
fn parse_line(line: &str) -> (u64, CellKey, Vec<u8>) {
    let fields: Vec<&str> = line.split('\t').collect();
    let [ts, row, column, value] = fields[..] else {
        panic!("not 4 fields: {line:?}");
    };
    let (family, qualifier) = column.split_once(':').unwrap_or((column, ""));
    let family = FAMILIES
        .iter()
        .position(|f| f.name == family)
        .unwrap_or_else(|| panic!("unknown family in {line:?}"));
    (
        parse_timestamp(ts).expect("printed timestamp"),
        (
            unescape_output(row.as_bytes()),
            family,
            unescape_output(qualifier.as_bytes()),
        ),
        unescape_output(value.as_bytes()),
    )
}

fn columns_text(columns: &ColumnsGen, raw: bool) -> String {
    match columns {
        ColumnsGen::All => "*".to_string(),
        ColumnsGen::List(l) => l
            .iter()
            .map(|(f, q)| {
                let name = FAMILIES[*f].name;
                match q {
                    None => name.to_string(),
                    // A plain qualifier may be written as a name.
                    Some(1) if raw => format!("{name}:q"),
                    Some(q) => format!("{name}:{}", literal(QUALIFIERS[*q], raw)),
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The SELECT's text; `style` picks among the spellings the grammar allows.
fn select_text(sel: &SelectGen, q: &Query) -> String {
    let bit = |n: u8| sel.style & (1 << n) != 0;
    let raw = bit(0);
    let kw = |k: &str| {
        if bit(1) {
            k.to_ascii_lowercase()
        } else {
            k.to_string()
        }
    };
    let op = |lower_end: bool, inclusive: bool| match (lower_end, inclusive) {
        (true, true) => ">=",
        (true, false) => ">",
        (false, true) => "<=",
        (false, false) => "<",
    };
    let less = |inclusive: bool| if inclusive { "<=" } else { "<" };
    let mut conditions = Vec::new();
    let subject = kw("ROW");
    match &sel.rows {
        RowsGen::All => {}
        RowsGen::Exact(i) => conditions.push(format!("{subject} = {}", literal(ROWS[*i], raw))),
        RowsGen::Prefix(p) => conditions.push(format!("{subject} =^ {}", literal(p, raw))),
        // `'a' <= ROW < 'b'`
        RowsGen::Range(Some((lo, lo_incl)), hi) if bit(2) => {
            let mut c = format!("{} {} {subject}", literal(lo, raw), less(*lo_incl));
            if let Some((hi, hi_incl)) = hi {
                let _ = write!(c, " {} {}", less(*hi_incl), literal(hi, raw));
            }
            conditions.push(c);
        }
        RowsGen::Range(lo, hi) => {
            for (end, lower_end) in [(lo, true), (hi, false)] {
                if let Some((b, incl)) = end {
                    let o = op(lower_end, *incl);
                    conditions.push(format!("{subject} {o} {}", literal(b, raw)));
                }
            }
        }
    }
    let subject = kw("TIMESTAMP");
    let ts = |t: u64| timestamp_literal(t, bit(3));
    match (&sel.time, q.time) {
        (TimeGen::All, _) => {}
        (TimeGen::Exact(_), (Bound::Included(t), _)) => {
            conditions.push(format!("{subject} = {}", ts(t)));
        }
        (_, (lo, hi)) => {
            let end = |b: Bound<u64>| match b {
                Bound::Included(t) => Some((t, true)),
                Bound::Excluded(t) => Some((t, false)),
                Bound::Unbounded => None,
            };
            match (end(lo), end(hi)) {
                (Some((lo, lo_incl)), hi) if bit(4) => {
                    let mut c = format!("{} {} {subject}", ts(lo), less(lo_incl));
                    if let Some((hi, hi_incl)) = hi {
                        let _ = write!(c, " {} {}", less(hi_incl), ts(hi));
                    }
                    conditions.push(c);
                }
                (lo, hi) => {
                    for (end, lower_end) in [(lo, true), (hi, false)] {
                        if let Some((t, incl)) = end {
                            conditions.push(format!("{subject} {} {}", op(lower_end, incl), ts(t)));
                        }
                    }
                }
            }
        }
    }
    if bit(5) {
        conditions.reverse();
    }
    let mut options = Vec::new();
    if let Some(n) = sel.max_versions {
        let eq = if bit(6) { " = " } else { " " };
        options.push(format!("{}{eq}{n}", kw("MAX_VERSIONS")));
    }
    if let Some(n) = sel.limit {
        options.push(format!("{} {n}", kw("LIMIT")));
    }
    if sel.reverse {
        options.push(kw("REVERSE"));
    }
    if sel.display_timestamps {
        options.push(kw("DISPLAY_TIMESTAMPS"));
    }
    if !options.is_empty() {
        let turn = usize::from(sel.style >> 6) % options.len();
        options.rotate_left(turn);
    }
    let mut text = format!(
        "{} {} {} {TABLE}",
        kw("SELECT"),
        columns_text(&sel.columns, raw),
        kw("FROM")
    );
    if !conditions.is_empty() {
        let and = format!(" {} ", kw("AND"));
        let _ = write!(text, " {} {}", kw("WHERE"), conditions.join(&and));
    }
    for o in options {
        text.push(' ');
        text.push_str(&o);
    }
    text.push_str(";\n");
    text
}

fn run(ops: Vec<Op>, durability: Durability) -> Result<(), TestCaseError> {
    let mut sh = TestShell::new();
    sh.durability = durability;
    let mut w = World {
        sh,
        model: Model::new(),
        explicit: explicit_timestamps(),
        learned: Vec::new(),
    };
    w.ok(CREATE);
    for op in &ops {
        match op {
            Op::Insert {
                cells,
                raw,
                bad_family_at,
            } => w.insert(cells, *raw, *bad_family_at),
            Op::Delete {
                row,
                columns,
                version,
                raw,
            } => w.delete(*row, columns, *version, *raw),
            Op::Select(sel) => w.select(sel)?,
            Op::FlushEngine => w.sh.store().db().flush().expect("flush"),
            Op::Reopen => w.sh.reopen(),
        }
    }
    w.check_everything()?;
    w.sh.reopen();
    w.check_everything()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn hql_statements_match_model(
        ops in prop::collection::vec(op(), 1..80),
        flush in any::<bool>(),
    ) {
        let durability = if flush { Durability::Flush } else { Durability::Buffered };
        run(ops, durability)?;
    }
}
