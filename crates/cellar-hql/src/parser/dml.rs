//! INSERT, SELECT, DELETE: cells.

use std::ops::Bound;

use super::{error_at, timestamp_of, Parser, Result};
use crate::ast::{ColumnRef, Columns, Delete, Insert, InsertCell, RowPredicate, Select, Statement};
use crate::lexer::{Token, TokenKind};

const CELL_SHAPE: &str = "a cell is (row, [timestamp,] 'family:qualifier', value)";
const SELECT_TAIL: &str =
    "WHERE, MAX_VERSIONS, LIMIT, REVERSE, DISPLAY_TIMESTAMPS, ';' or end of input";
const SELECT_OPTION_TAIL: &str =
    "MAX_VERSIONS, LIMIT, REVERSE, DISPLAY_TIMESTAMPS, AND, ';' or end of input";

impl<'a> Parser<'a> {
    /// After INSERT.
    pub(super) fn insert(&mut self) -> Result<Statement> {
        self.expect_keyword("INTO", "INTO after INSERT")?;
        let table = self.name("a table name")?;
        self.expect_keyword("VALUES", "VALUES after the table name")?;
        let mut cells = vec![self.insert_cell()?];
        while self.eat(&TokenKind::Comma)? {
            cells.push(self.insert_cell()?);
        }
        Ok(Statement::Insert(Insert { table, cells }))
    }

    /// `(row, [timestamp,] column, value)`.
    fn insert_cell(&mut self) -> Result<InsertCell> {
        self.expect(&TokenKind::LParen, &format!("'(' and a cell: {CELL_SHAPE}"))?;
        let mut items: Vec<Token<'a>> = Vec::with_capacity(4);
        loop {
            let tok = self.next()?;
            if !matches!(tok.kind, TokenKind::Str(_) | TokenKind::Number(_)) {
                return Err(error_at(&tok, &format!("a string: {CELL_SHAPE}")));
            }
            items.push(tok);
            let sep = self.next()?;
            match sep.kind {
                TokenKind::RParen if items.len() >= 3 => break,
                TokenKind::Comma if items.len() < 4 => {}
                _ if items.len() < 3 => {
                    return Err(error_at(&sep, &format!("',' and more: {CELL_SHAPE}")))
                }
                _ if items.len() == 3 => {
                    return Err(error_at(&sep, &format!("',' or ')': {CELL_SHAPE}")))
                }
                _ => return Err(error_at(&sep, &format!("')': {CELL_SHAPE}"))),
            }
        }
        let (row_tok, timestamp, column_tok, value_tok) = match items.as_slice() {
            [row, column, value] => (row, None, column, value),
            [row, ts, column, value] => (row, Some(timestamp_of(ts)?), column, value),
            _ => return Err(error_at(&items[0], CELL_SHAPE)),
        };
        let row = match &row_tok.kind {
            TokenKind::Str(row) if !row.is_empty() => row.clone(),
            _ => return Err(error_at(row_tok, "a non-empty string row key")),
        };
        let (family, qualifier) = cell_column(column_tok)?;
        let value = match &value_tok.kind {
            TokenKind::Str(v) => v.clone(),
            _ => return Err(error_at(value_tok, "a string value")),
        };
        Ok(InsertCell {
            row,
            timestamp,
            family,
            qualifier,
            value,
        })
    }

    /// After SELECT.
    pub(super) fn select(&mut self) -> Result<Statement> {
        let columns = self.columns()?;
        let table = self.name("a table name")?;
        let mut select = Select {
            columns,
            table,
            row: RowPredicate::All,
            timestamp: (Bound::Unbounded, Bound::Unbounded),
            max_versions: None,
            limit: None,
            reverse: false,
            display_timestamps: false,
        };
        let mut tail = SELECT_TAIL;
        if self.eat_keyword("WHERE")? {
            self.conditions(&mut select)?;
            tail = SELECT_OPTION_TAIL;
        }
        loop {
            let tok = self.peek()?;
            let word = match &tok.kind {
                TokenKind::Ident(w) => w.to_ascii_uppercase(),
                _ => break,
            };
            let already_set = match word.as_str() {
                "MAX_VERSIONS" => select.max_versions.is_some(),
                "LIMIT" => select.limit.is_some(),
                "REVERSE" => select.reverse,
                "DISPLAY_TIMESTAMPS" => select.display_timestamps,
                _ => break,
            };
            if already_set {
                return Err(error_at(tok, "each SELECT option at most once"));
            }
            self.next()?;
            match word.as_str() {
                "MAX_VERSIONS" => {
                    self.eat(&TokenKind::Eq)?;
                    let n = self.number_in(
                        1,
                        u64::from(u32::MAX),
                        "a number from 1 to 4294967295 after MAX_VERSIONS",
                    )?;
                    select.max_versions = u32::try_from(n).ok();
                }
                "LIMIT" => {
                    select.limit = Some(self.number_in(0, u64::MAX, "a number after LIMIT")?);
                }
                "REVERSE" => select.reverse = true,
                _ => select.display_timestamps = true,
            }
            tail = "MAX_VERSIONS, LIMIT, REVERSE, DISPLAY_TIMESTAMPS, ';' or end of input";
        }
        self.expect_statement_end(tail)?;
        Ok(Statement::Select(select))
    }

    /// After DELETE.
    pub(super) fn delete(&mut self) -> Result<Statement> {
        let columns = self.columns()?;
        let table = self.name("a table name")?;
        self.expect_keyword("WHERE", "WHERE after the table name")?;
        self.expect_keyword("ROW", "ROW after WHERE")?;
        self.expect(&TokenKind::Eq, "'=' after ROW")?;
        let (row, tok) = self.string("a string row key")?;
        if row.is_empty() {
            return Err(error_at(&tok, "a non-empty row key"));
        }
        let version = if self.eat_keyword("VERSION")? {
            Some(self.timestamp()?)
        } else {
            None
        };
        self.expect_statement_end("VERSION, ';' or end of input")?;
        Ok(Statement::Delete(Delete {
            columns,
            table,
            row,
            version,
        }))
    }

    /// `* FROM` or `column, ... FROM`; consumes the FROM.
    fn columns(&mut self) -> Result<Columns> {
        if self.eat(&TokenKind::Star)? {
            self.expect_keyword("FROM", "FROM after '*'")?;
            return Ok(Columns::All);
        }
        let mut list = Vec::new();
        loop {
            let column_expected = "'*' or a column (family or family:qualifier)";
            if self.peek()?.is_keyword("FROM") {
                let tok = self.next()?;
                return Err(error_at(&tok, column_expected));
            }
            let (family, _) = self.family_name(column_expected)?;
            let qualifier = if self.eat(&TokenKind::Colon)? {
                let tok = self.next()?;
                match tok.kind {
                    TokenKind::Str(q) => Some(q),
                    TokenKind::Ident(q) | TokenKind::QuotedIdent(q) => Some(q.into_bytes()),
                    TokenKind::Number(_) => Some(tok.text.as_bytes().to_vec()),
                    _ => {
                        return Err(error_at(
                            &tok,
                            "a qualifier after ':' (a name, or a string such as '')",
                        ))
                    }
                }
            } else {
                None
            };
            list.push(ColumnRef { family, qualifier });
            if !self.eat(&TokenKind::Comma)? {
                self.expect_keyword("FROM", "',' or FROM after the column")?;
                return Ok(Columns::List(list));
            }
        }
    }

    /// `condition [AND condition]...` after WHERE.
    fn conditions(&mut self, select: &mut Select) -> Result<()> {
        let mut row = RowConditions::default();
        loop {
            let first = self.peek()?.clone();
            let condition = self.condition()?;
            match condition {
                Condition::Row(c) => row.add(c).map_err(|e| error_at(&first, e))?,
                Condition::Timestamp { start, end } => {
                    let ts = &mut select.timestamp;
                    if start.is_some() && ts.0 != Bound::Unbounded {
                        return Err(error_at(&first, "at most one lower bound on TIMESTAMP"));
                    }
                    if end.is_some() && ts.1 != Bound::Unbounded {
                        return Err(error_at(&first, "at most one upper bound on TIMESTAMP"));
                    }
                    ts.0 = start.unwrap_or(ts.0);
                    ts.1 = end.unwrap_or(ts.1);
                }
            }
            if !self.eat_keyword("AND")? {
                select.row = row.finish();
                return Ok(());
            }
        }
    }

    // Long by design: one branch per WHERE form (ROW op, ROW range, TIMESTAMP op, TIMESTAMP
    // range), each mirroring its line of the grammar in docs/hql.md.
    fn condition(&mut self) -> Result<Condition> {
        let tok = self.next()?;
        if tok.is_keyword("ROW") {
            let op = self.next()?;
            if !matches!(
                op.kind,
                TokenKind::Eq
                    | TokenKind::PrefixEq
                    | TokenKind::Lt
                    | TokenKind::Le
                    | TokenKind::Gt
                    | TokenKind::Ge
            ) {
                return Err(error_at(&op, "=, =^, <, <=, > or >= after ROW"));
            }
            let (key, _) = self.string("a string row key")?;
            let condition = match op.kind {
                TokenKind::Eq => RowCondition::Exact(key),
                TokenKind::PrefixEq => RowCondition::Prefix(key),
                _ => {
                    let (start, end) = comparison(&op.kind, key);
                    RowCondition::Range { start, end }
                }
            };
            return Ok(Condition::Row(condition));
        }
        if tok.is_keyword("TIMESTAMP") {
            let op = self.next()?;
            if !matches!(
                op.kind,
                TokenKind::Eq | TokenKind::Lt | TokenKind::Le | TokenKind::Gt | TokenKind::Ge
            ) {
                return Err(error_at(&op, "=, <, <=, > or >= after TIMESTAMP"));
            }
            let ts = self.timestamp()?;
            let (start, end) = match op.kind {
                TokenKind::Eq => (Some(Bound::Included(ts)), Some(Bound::Included(ts))),
                _ => comparison(&op.kind, ts),
            };
            return Ok(Condition::Timestamp { start, end });
        }
        if !matches!(tok.kind, TokenKind::Str(_) | TokenKind::Number(_)) {
            return Err(error_at(
                &tok,
                "a condition: ROW ..., TIMESTAMP ... or 'low' <= ROW",
            ));
        }
        // `low < ROW [< high]` or `low <= TIMESTAMP [<= high]`.
        let op = self.next()?;
        let low_inclusive = match op.kind {
            TokenKind::Lt => false,
            TokenKind::Le => true,
            _ => return Err(error_at(&op, "'<' or '<=' after the range's low end")),
        };
        let subject = self.next()?;
        let is_row = subject.is_keyword("ROW");
        if !is_row && !subject.is_keyword("TIMESTAMP") {
            return Err(error_at(&subject, "ROW or TIMESTAMP after '<' or '<='"));
        }
        let high_inclusive = match self.peek()?.kind {
            TokenKind::Lt => Some(false),
            TokenKind::Le => Some(true),
            _ => None,
        };
        let high = match high_inclusive {
            Some(inclusive) => {
                self.next()?;
                Some((inclusive, self.next()?))
            }
            None => None,
        };
        if is_row {
            let start = Some(bound(low_inclusive, row_key_of(&tok)?));
            let end = match high {
                Some((inclusive, t)) => Some(bound(inclusive, row_key_of(&t)?)),
                None => None,
            };
            Ok(Condition::Row(RowCondition::Range { start, end }))
        } else {
            let start = Some(bound(low_inclusive, timestamp_of(&tok)?));
            let end = match high {
                Some((inclusive, t)) => Some(bound(inclusive, timestamp_of(&t)?)),
                None => None,
            };
            Ok(Condition::Timestamp { start, end })
        }
    }
}

fn row_key_of(tok: &Token<'_>) -> Result<Vec<u8>> {
    match &tok.kind {
        TokenKind::Str(k) => Ok(k.clone()),
        _ => Err(error_at(tok, "a string row key")),
    }
}

fn bound<T>(inclusive: bool, value: T) -> Bound<T> {
    if inclusive {
        Bound::Included(value)
    } else {
        Bound::Excluded(value)
    }
}

/// A column string of INSERT: `family` or `family:qualifier` (split at the first ':').
fn cell_column(tok: &Token<'_>) -> Result<(String, Vec<u8>)> {
    let TokenKind::Str(bytes) = &tok.kind else {
        return Err(error_at(tok, "a column string 'family:qualifier'"));
    };
    let (family, qualifier) = match bytes.iter().position(|&b| b == b':') {
        Some(i) => (&bytes[..i], bytes[i + 1..].to_vec()),
        None => (&bytes[..], Vec::new()),
    };
    match std::str::from_utf8(family) {
        Ok(f) if !f.is_empty() => Ok((f.to_string(), qualifier)),
        _ => Err(error_at(
            tok,
            "a column 'family' or 'family:qualifier' with a non-empty UTF-8 family name",
        )),
    }
}

/// `subject op value` as (start, end) bounds on the subject; `op` is one of < <= > >=.
type HalfRange<T> = (Option<Bound<T>>, Option<Bound<T>>);

fn comparison<T>(op: &TokenKind, value: T) -> HalfRange<T> {
    match op {
        TokenKind::Gt => (Some(Bound::Excluded(value)), None),
        TokenKind::Ge => (Some(Bound::Included(value)), None),
        TokenKind::Lt => (None, Some(Bound::Excluded(value))),
        _ => (None, Some(Bound::Included(value))),
    }
}

enum Condition {
    Row(RowCondition),
    /// Each `Some` sets that end of the range.
    Timestamp {
        start: Option<Bound<u64>>,
        end: Option<Bound<u64>>,
    },
}

enum RowCondition {
    Exact(Vec<u8>),
    Prefix(Vec<u8>),
    /// Each `Some` sets that end of the range.
    Range {
        start: Option<Bound<Vec<u8>>>,
        end: Option<Bound<Vec<u8>>>,
    },
}

/// The ROW conditions of a WHERE so far.
#[derive(Default)]
struct RowConditions {
    /// Set by `ROW =` or `ROW =^`, which allow no other ROW condition.
    single: Option<RowPredicate>,
    start: Option<Bound<Vec<u8>>>,
    end: Option<Bound<Vec<u8>>>,
}

impl RowConditions {
    /// Adds a condition; the error says what was expected instead.
    fn add(&mut self, c: RowCondition) -> std::result::Result<(), &'static str> {
        let any = self.single.is_some() || self.start.is_some() || self.end.is_some();
        const ALONE: &str = "no other ROW condition next to ROW = or ROW =^";
        match c {
            RowCondition::Exact(_) | RowCondition::Prefix(_) if any => Err(ALONE),
            RowCondition::Exact(k) => {
                self.single = Some(RowPredicate::Exact(k));
                Ok(())
            }
            RowCondition::Prefix(p) => {
                self.single = Some(RowPredicate::Prefix(p));
                Ok(())
            }
            RowCondition::Range { .. } if self.single.is_some() => Err(ALONE),
            RowCondition::Range { start, end } => {
                if start.is_some() && self.start.is_some() {
                    return Err("at most one lower bound on ROW");
                }
                if end.is_some() && self.end.is_some() {
                    return Err("at most one upper bound on ROW");
                }
                self.start = start.or(self.start.take());
                self.end = end.or(self.end.take());
                Ok(())
            }
        }
    }

    fn finish(self) -> RowPredicate {
        if let Some(single) = self.single {
            return single;
        }
        match (self.start, self.end) {
            (None, None) => RowPredicate::All,
            (start, end) => RowPredicate::Range {
                start: start.unwrap_or(Bound::Unbounded),
                end: end.unwrap_or(Bound::Unbounded),
            },
        }
    }
}
