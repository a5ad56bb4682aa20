//! LOAD DATA INFILE and DUMP TABLE: files in and out.

use super::{error_at, Parser, Result};
use crate::ast::{DumpTable, LoadData, Statement};
use crate::lexer::TokenKind;

const LOAD_OPTION: &str = "a LOAD DATA INFILE option (ROW_KEY_COLUMN, TIMESTAMP_COLUMN, \
                           HEADER_FILE, IGNORE_UNKNOWN_COLUMNS, SKIP_BAD_LINES) or the file \
                           name as a string";

impl Parser<'_> {
    /// After LOAD.
    pub(super) fn load_data(&mut self) -> Result<Statement> {
        self.expect_keyword("DATA", "DATA after LOAD")?;
        self.expect_keyword("INFILE", "INFILE after LOAD DATA")?;
        let mut load = LoadData {
            row_key_column: None,
            timestamp_column: None,
            header_file: None,
            ignore_unknown_columns: false,
            skip_bad_lines: false,
            file: String::new(),
            table: String::new(),
        };
        loop {
            let tok = self.next()?;
            if let TokenKind::Str(bytes) = &tok.kind {
                load.file = String::from_utf8(bytes.clone())
                    .map_err(|_| error_at(&tok, "a file name of valid UTF-8"))?;
                break;
            }
            let word = match &tok.kind {
                TokenKind::Ident(w) => w.to_ascii_uppercase(),
                _ => return Err(error_at(&tok, LOAD_OPTION)),
            };
            let already_set = match word.as_str() {
                "ROW_KEY_COLUMN" => load.row_key_column.is_some(),
                "TIMESTAMP_COLUMN" => load.timestamp_column.is_some(),
                "HEADER_FILE" => load.header_file.is_some(),
                "IGNORE_UNKNOWN_COLUMNS" => load.ignore_unknown_columns,
                "SKIP_BAD_LINES" => load.skip_bad_lines,
                _ => return Err(error_at(&tok, LOAD_OPTION)),
            };
            if already_set {
                return Err(error_at(&tok, "each LOAD DATA INFILE option at most once"));
            }
            match word.as_str() {
                "ROW_KEY_COLUMN" => {
                    self.eat(&TokenKind::Eq)?;
                    load.row_key_column = Some(self.name("a column name after ROW_KEY_COLUMN")?);
                }
                "TIMESTAMP_COLUMN" => {
                    self.eat(&TokenKind::Eq)?;
                    load.timestamp_column =
                        Some(self.name("a column name after TIMESTAMP_COLUMN")?);
                }
                "HEADER_FILE" => {
                    self.eat(&TokenKind::Eq)?;
                    load.header_file = Some(self.text_string("a file name string")?);
                }
                "IGNORE_UNKNOWN_COLUMNS" => load.ignore_unknown_columns = true,
                _ => load.skip_bad_lines = true,
            }
        }
        self.expect_keyword("INTO", "INTO after the file name")?;
        self.expect_keyword("TABLE", "TABLE after INTO")?;
        load.table = self.name("a table name")?;
        Ok(Statement::LoadData(load))
    }

    /// After DUMP.
    pub(super) fn dump_table(&mut self) -> Result<Statement> {
        self.expect_keyword("TABLE", "TABLE after DUMP")?;
        let table = self.name("a table name")?;
        self.expect_keyword("INTO", "INTO after the table name")?;
        self.expect_keyword("FILE", "FILE after INTO")?;
        let file = self.text_string("a file name string")?;
        Ok(Statement::DumpTable(DumpTable { table, file }))
    }
}
