//! Canonical HQL: every statement printed so that `parse` gives the same value back.
//!
//! Canonical form: keywords in upper case, single spaces, options in the order of the
//! grammar with `=` where the grammar allows one, no trailing ';'. Names are bare when the
//! lexer would read them back as the same bare word and they are spelled unlike any keyword,
//! double-quoted otherwise. Strings escape as `escape::write_literal` says; timestamps print
//! as `'YYYY-MM-DD HH:MM:SS[.fraction]'`.

use std::fmt::{self, Display, Formatter, Write};
use std::ops::Bound;

use crate::ast::{
    AlterAction, AlterTable, ColumnRef, Columns, Compression, CreateTable, Delete, DropTable,
    DumpTable, FamilySpec, Insert, InsertCell, LoadData, RowPredicate, Select, Statement,
};
use crate::escape::write_literal;
use cellar_text::format_timestamp_short;

/// Every word the grammar gives a meaning to; a name spelled like one is printed quoted.
const KEYWORDS: &[&str] = &[
    "ADD",
    "ALTER",
    "AND",
    "BLOCKSIZE",
    "BLOOMFILTER",
    "COMPRESSION",
    "CREATE",
    "DATA",
    "DAY",
    "DAYS",
    "DELETE",
    "DESCRIBE",
    "DISPLAY_TIMESTAMPS",
    "DROP",
    "DUMP",
    "EXISTS",
    "EXIT",
    "FALSE",
    "FILE",
    "FROM",
    "HEADER_FILE",
    "HELP",
    "HOUR",
    "HOURS",
    "IF",
    "IGNORE_UNKNOWN_COLUMNS",
    "INFILE",
    "INSERT",
    "INTO",
    "LIMIT",
    "LOAD",
    "LZ4",
    "MAX_VERSIONS",
    "MINUTE",
    "MINUTES",
    "NONE",
    "NOT",
    "QUIT",
    "REVERSE",
    "ROW",
    "ROWS",
    "ROW_KEY_COLUMN",
    "SECOND",
    "SECONDS",
    "SELECT",
    "SHOW",
    "SKIP_BAD_LINES",
    "TABLE",
    "TABLES",
    "TIMESTAMP",
    "TIMESTAMP_COLUMN",
    "TRUE",
    "TTL",
    "VALUES",
    "VERSION",
    "WHERE",
    "ZSTD",
];

/// Whether `text` prints bare: `[A-Za-z_][A-Za-z0-9_]*` and no keyword. Names with '-' are
/// legal bare but print quoted, as other HQL dialects expect (`"query-log"`).
fn is_plain_name(text: &str) -> bool {
    let mut chars = text.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(text))
}

/// A table, family or column name as HQL.
struct Name<'a>(&'a str);

impl Display for Name<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if is_plain_name(self.0) {
            f.write_str(self.0)
        } else {
            write_literal(f, self.0.as_bytes(), '"')
        }
    }
}

/// Bytes as a single-quoted HQL string.
struct Literal<'a>(&'a [u8]);

impl Display for Literal<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_literal(f, self.0, '\'')
    }
}

struct Timestamp(u64);

impl Display for Timestamp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "'{}'", format_timestamp_short(self.0))
    }
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Statement::CreateTable(s) => s.fmt(f),
            Statement::DropTable(s) => s.fmt(f),
            Statement::ShowTables => f.write_str("SHOW TABLES"),
            Statement::DescribeTable(t) => write!(f, "DESCRIBE TABLE {}", Name(&t.table)),
            Statement::ShowCreateTable(t) => write!(f, "SHOW CREATE TABLE {}", Name(&t.table)),
            Statement::AlterTable(s) => s.fmt(f),
            Statement::Insert(s) => s.fmt(f),
            Statement::Select(s) => s.fmt(f),
            Statement::Delete(s) => s.fmt(f),
            Statement::LoadData(s) => s.fmt(f),
            Statement::DumpTable(s) => s.fmt(f),
            Statement::Quit => f.write_str("QUIT"),
            Statement::Help => f.write_str("HELP"),
        }
    }
}

/// `items` separated by ", ".
fn write_list<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        item.fmt(f)?;
    }
    Ok(())
}

impl Display for CreateTable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("CREATE TABLE ")?;
        if self.if_not_exists {
            f.write_str("IF NOT EXISTS ")?;
        }
        write!(f, "{} (", Name(&self.name))?;
        write_list(f, &self.families)?;
        f.write_char(')')
    }
}

impl Display for FamilySpec {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        Name(&self.name).fmt(f)?;
        if let Some(n) = self.max_versions {
            write!(f, " MAX_VERSIONS = {n}")?;
        }
        if let Some(s) = self.ttl_seconds {
            write!(f, " TTL = {s} SECONDS")?;
        }
        if let Some(c) = self.compression {
            write!(f, " COMPRESSION = {c}")?;
        }
        if let Some(n) = self.block_size_bytes {
            write!(f, " BLOCKSIZE = {n}")?;
        }
        if let Some(b) = self.bloom {
            write!(f, " BLOOMFILTER = {b}")?;
        }
        Ok(())
    }
}

impl Display for Compression {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        })
    }
}

impl Display for DropTable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let if_exists = if self.if_exists { "IF EXISTS " } else { "" };
        write!(f, "DROP TABLE {if_exists}{}", Name(&self.name))
    }
}

impl Display for AlterTable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "ALTER TABLE {} ", Name(&self.name))?;
        match &self.action {
            AlterAction::Add(families) => {
                f.write_str("ADD (")?;
                write_list(f, families)?;
            }
            AlterAction::Drop(names) => {
                f.write_str("DROP (")?;
                let names: Vec<Name<'_>> = names.iter().map(|n| Name(n)).collect();
                write_list(f, &names)?;
            }
        }
        f.write_char(')')
    }
}

impl Display for Insert {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "INSERT INTO {} VALUES ", Name(&self.table))?;
        write_list(f, &self.cells)
    }
}

impl Display for InsertCell {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "({}, ", Literal(&self.row))?;
        if let Some(ts) = self.timestamp {
            write!(f, "{}, ", Timestamp(ts))?;
        }
        let mut column = Vec::with_capacity(self.family.len() + 1 + self.qualifier.len());
        column.extend_from_slice(self.family.as_bytes());
        if !self.qualifier.is_empty() {
            column.push(b':');
            column.extend_from_slice(&self.qualifier);
        }
        write!(f, "{}, {})", Literal(&column), Literal(&self.value))
    }
}

impl Display for ColumnRef {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        Name(&self.family).fmt(f)?;
        match &self.qualifier {
            None => Ok(()),
            Some(q) => match std::str::from_utf8(q) {
                Ok(text) if is_plain_name(text) => write!(f, ":{text}"),
                _ => write!(f, ":{}", Literal(q)),
            },
        }
    }
}

impl Display for Columns {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Columns::All => f.write_char('*'),
            Columns::List(list) => write_list(f, list),
        }
    }
}

impl Display for Select {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "SELECT {} FROM {}", self.columns, Name(&self.table))?;
        let mut conditions: Vec<String> = Vec::new();
        match &self.row {
            RowPredicate::All => {}
            RowPredicate::Exact(k) => conditions.push(format!("ROW = {}", Literal(k))),
            RowPredicate::Prefix(p) => conditions.push(format!("ROW =^ {}", Literal(p))),
            RowPredicate::Range { start, end } => {
                push_bounds(&mut conditions, "ROW", start, end, |k| {
                    Literal(k).to_string()
                });
            }
        }
        let (start, end) = &self.timestamp;
        push_bounds(&mut conditions, "TIMESTAMP", start, end, |ts| {
            Timestamp(*ts).to_string()
        });
        if !conditions.is_empty() {
            write!(f, " WHERE {}", conditions.join(" AND "))?;
        }
        if let Some(n) = self.max_versions {
            write!(f, " MAX_VERSIONS {n}")?;
        }
        if let Some(n) = self.limit {
            write!(f, " LIMIT {n}")?;
        }
        if self.reverse {
            f.write_str(" REVERSE")?;
        }
        if self.display_timestamps {
            f.write_str(" DISPLAY_TIMESTAMPS")?;
        }
        Ok(())
    }
}

/// `subject >= start` and `subject < end` (or their strict/inclusive variants).
fn push_bounds<T>(
    out: &mut Vec<String>,
    subject: &str,
    start: &Bound<T>,
    end: &Bound<T>,
    show: impl Fn(&T) -> String,
) {
    match start {
        Bound::Included(v) => out.push(format!("{subject} >= {}", show(v))),
        Bound::Excluded(v) => out.push(format!("{subject} > {}", show(v))),
        Bound::Unbounded => {}
    }
    match end {
        Bound::Included(v) => out.push(format!("{subject} <= {}", show(v))),
        Bound::Excluded(v) => out.push(format!("{subject} < {}", show(v))),
        Bound::Unbounded => {}
    }
}

impl Display for Delete {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DELETE {} FROM {} WHERE ROW = {}",
            self.columns,
            Name(&self.table),
            Literal(&self.row)
        )?;
        if let Some(ts) = self.version {
            write!(f, " VERSION {}", Timestamp(ts))?;
        }
        Ok(())
    }
}

impl Display for LoadData {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("LOAD DATA INFILE")?;
        if let Some(c) = &self.row_key_column {
            write!(f, " ROW_KEY_COLUMN = {}", Name(c))?;
        }
        if let Some(c) = &self.timestamp_column {
            write!(f, " TIMESTAMP_COLUMN = {}", Name(c))?;
        }
        if let Some(h) = &self.header_file {
            write!(f, " HEADER_FILE = {}", Literal(h.as_bytes()))?;
        }
        if self.ignore_unknown_columns {
            f.write_str(" IGNORE_UNKNOWN_COLUMNS")?;
        }
        if self.skip_bad_lines {
            f.write_str(" SKIP_BAD_LINES")?;
        }
        write!(
            f,
            " {} INTO TABLE {}",
            Literal(self.file.as_bytes()),
            Name(&self.table)
        )
    }
}

impl Display for DumpTable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DUMP TABLE {} INTO FILE {}",
            Name(&self.table),
            Literal(self.file.as_bytes())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_when_not_plain() {
        assert_eq!(Name("Query").to_string(), "Query");
        assert_eq!(Name("query-log").to_string(), "\"query-log\"");
        assert_eq!(Name("row").to_string(), "\"row\"");
        assert_eq!(Name("a--b").to_string(), "\"a--b\"");
        assert_eq!(Name("1st").to_string(), "\"1st\"");
        assert_eq!(Name("a b\"").to_string(), "\"a b\\\"\"");
    }
}
