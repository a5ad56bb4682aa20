//! HQL: the statements of the Cellar shell, in the spirit of Hypertable's HQL.
//!
//! [`parse`] turns a script into [`Statement`]s; `Display` prints each back as canonical HQL
//! (`parse(&s.to_string())` gives `s` again); [`StatementReader`] tells a shell when the
//! input holds a complete statement. [`escape_output`] and [`format_timestamp`] make the
//! text SELECT prints. The grammar, each statement's meaning and the output format are in
//! `docs/hql.md`.
//!
//! This crate knows nothing of the engine: it is a pure function from text to syntax tree,
//! and never panics on any input.
#![warn(missing_debug_implementations)]

mod ast;
mod display;
mod error;
mod escape;
mod lexer;
mod parser;
mod reader;

pub use ast::{
    AlterAction, AlterTable, ColumnRef, Columns, Compression, CreateTable, Delete, DropTable,
    DumpTable, FamilySpec, Insert, InsertCell, LoadData, Located, RowPredicate, Select, Statement,
    TableRef,
};
pub use error::ParseError;
pub use reader::{StatementReader, StatementText};
// The text forms of cells live below this crate, where bulk loads read them too.
pub use cellar_text::{
    escape_output, escape_output_into, format_timestamp, parse_timestamp, unescape_output,
};

/// Parses a script: statements separated by `;` (the last one may omit it), with `--` and
/// `#` comments. Each statement comes with the line and column where it starts.
///
/// ```
/// use cellar_hql::{parse, Statement};
/// let script = "CREATE TABLE \"query-log\" (Query, ItemRank, ClickURL);\nSHOW TABLES;";
/// let statements = parse(script).expect("valid HQL");
/// assert_eq!(statements[1].line, 2);
/// assert_eq!(statements[1].node, Statement::ShowTables);
/// ```
pub fn parse(script: &str) -> Result<Vec<Located<Statement>>, ParseError> {
    parser::Parser::new(script).script()
}

/// Parses text that must hold exactly one statement (a trailing `;` is allowed).
pub fn parse_statement(text: &str) -> Result<Statement, ParseError> {
    let mut statements = parse(text)?;
    match statements.len() {
        1 => Ok(statements.remove(0).node),
        0 => Err(ParseError {
            line: 1,
            column: 1,
            expected: "a statement".to_string(),
            found: "end of input".to_string(),
        }),
        _ => {
            let second = &statements[1];
            Err(ParseError {
                line: second.line,
                column: second.column,
                expected: "end of input after the statement".to_string(),
                found: "another statement".to_string(),
            })
        }
    }
}
