//! Recursive-descent parser: one function per statement, over a lexer read on demand.
//!
//! Keywords are contextual: a bare word is a keyword where the grammar expects one and a name
//! elsewhere (`CREATE TABLE data (ttl)` is a table `data` with a family `ttl`). The one
//! exception is `FROM`, never a column name when bare. Canonical `Display` quotes every
//! name that is spelled like a keyword, so printed statements never lean on this.

mod ddl;
mod dml;
mod load;

use std::collections::VecDeque;

use crate::ast::{Located, Statement};
use crate::error::ParseError;
use crate::lexer::{Lexer, Token, TokenKind};
use cellar_text::parse_timestamp;

pub(crate) type Result<T> = std::result::Result<T, ParseError>;

const STATEMENT_EXPECTED: &str = "a statement (CREATE, DROP, SHOW, DESCRIBE, ALTER, INSERT, \
                                  SELECT, DELETE, LOAD, DUMP, QUIT, EXIT or HELP)";

pub(crate) struct Parser<'a> {
    lexer: Lexer<'a>,
    /// Tokens peeked at and not yet consumed; never more than two.
    lookahead: VecDeque<Token<'a>>,
}

impl<'a> Parser<'a> {
    pub fn new(src: &'a str) -> Self {
        Self::new_at(src, 1, 1)
    }

    /// A parser of `src` that starts at `line`, `column` of a larger input.
    pub fn new_at(src: &'a str, line: usize, column: usize) -> Self {
        Parser {
            lexer: Lexer::new_at(src, line, column),
            lookahead: VecDeque::with_capacity(2),
        }
    }

    /// Every statement of the script, in order; empty statements (`;;`) are skipped.
    pub fn script(&mut self) -> Result<Vec<Located<Statement>>> {
        let mut out = Vec::new();
        loop {
            while self.eat(&TokenKind::Semicolon)? {}
            let first = self.peek()?;
            if first.kind == TokenKind::Eof {
                return Ok(out);
            }
            let (line, column) = (first.line, first.column);
            let node = self.statement()?;
            self.expect_statement_end("';' or end of input after the statement")?;
            out.push(Located { line, column, node });
        }
    }

    fn statement(&mut self) -> Result<Statement> {
        let tok = self.next()?;
        let word = match &tok.kind {
            TokenKind::Ident(w) => w.to_ascii_uppercase(),
            _ => return Err(error_at(&tok, STATEMENT_EXPECTED)),
        };
        match word.as_str() {
            "CREATE" => self.create_table(),
            "DROP" => self.drop_table(),
            "SHOW" => self.show(),
            "DESCRIBE" => self.describe(),
            "ALTER" => self.alter_table(),
            "INSERT" => self.insert(),
            "SELECT" => self.select(),
            "DELETE" => self.delete(),
            "LOAD" => self.load_data(),
            "DUMP" => self.dump_table(),
            "QUIT" | "EXIT" => Ok(Statement::Quit),
            "HELP" => Ok(Statement::Help),
            _ => Err(error_at(&tok, STATEMENT_EXPECTED)),
        }
    }

    // ---- token access ----

    fn fill(&mut self, count: usize) -> Result<()> {
        while self.lookahead.len() < count {
            let tok = self.lexer.next_token()?;
            self.lookahead.push_back(tok);
        }
        Ok(())
    }

    fn peek(&mut self) -> Result<&Token<'a>> {
        self.peek_nth(0)
    }

    /// The token `n` places ahead (0: the next one). REQUIRES: n <= 1.
    fn peek_nth(&mut self, n: usize) -> Result<&Token<'a>> {
        self.fill(n + 1)?;
        self.lookahead.get(n).ok_or_else(|| internal("lookahead"))
    }

    fn next(&mut self) -> Result<Token<'a>> {
        self.fill(1)?;
        self.lookahead.pop_front().ok_or_else(|| internal("next"))
    }

    /// Consumes the next token if it is `kind`.
    fn eat(&mut self, kind: &TokenKind) -> Result<bool> {
        let hit = &self.peek()?.kind == kind;
        if hit {
            self.next()?;
        }
        Ok(hit)
    }

    /// Consumes the next token if it is the bare keyword `word`.
    fn eat_keyword(&mut self, word: &str) -> Result<bool> {
        let hit = self.peek()?.is_keyword(word);
        if hit {
            self.next()?;
        }
        Ok(hit)
    }

    fn expect(&mut self, kind: &TokenKind, expected: &str) -> Result<Token<'a>> {
        let tok = self.next()?;
        if &tok.kind == kind {
            Ok(tok)
        } else {
            Err(error_at(&tok, expected))
        }
    }

    fn expect_keyword(&mut self, word: &str, expected: &str) -> Result<Token<'a>> {
        let tok = self.next()?;
        if tok.is_keyword(word) {
            Ok(tok)
        } else {
            Err(error_at(&tok, expected))
        }
    }

    /// Checks, without consuming, that the statement ends here.
    fn expect_statement_end(&mut self, expected: &str) -> Result<()> {
        let tok = self.peek()?;
        match tok.kind {
            TokenKind::Semicolon | TokenKind::Eof => Ok(()),
            _ => Err(error_at(tok, expected)),
        }
    }

    // ---- values ----

    /// A bare or double-quoted name.
    fn name(&mut self, expected: &str) -> Result<String> {
        let tok = self.next()?;
        match tok.kind {
            TokenKind::Ident(s) | TokenKind::QuotedIdent(s) => Ok(s),
            _ => Err(error_at(&tok, expected)),
        }
    }

    /// A family name: a name without ':'.
    fn family_name(&mut self, expected: &str) -> Result<(String, Token<'a>)> {
        let tok = self.next()?;
        match &tok.kind {
            TokenKind::Ident(s) | TokenKind::QuotedIdent(s) if !s.contains(':') => {
                Ok((s.clone(), tok))
            }
            TokenKind::QuotedIdent(_) => Err(error_at(&tok, "a family name without ':'")),
            _ => Err(error_at(&tok, expected)),
        }
    }

    fn string(&mut self, expected: &str) -> Result<(Vec<u8>, Token<'a>)> {
        let tok = self.next()?;
        match &tok.kind {
            TokenKind::Str(bytes) => Ok((bytes.clone(), tok)),
            _ => Err(error_at(&tok, expected)),
        }
    }

    /// A string that must be valid UTF-8 (file names).
    fn text_string(&mut self, expected: &str) -> Result<String> {
        let (bytes, tok) = self.string(expected)?;
        String::from_utf8(bytes).map_err(|_| error_at(&tok, "a string of valid UTF-8"))
    }

    /// A number in `min..=max`.
    fn number_in(&mut self, min: u64, max: u64, expected: &str) -> Result<u64> {
        let tok = self.next()?;
        match tok.kind {
            TokenKind::Number(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(error_at(&tok, expected)),
        }
    }

    /// A timestamp: `'YYYY-MM-DD HH:MM:SS[.fraction]'` or an integer of nanoseconds.
    fn timestamp(&mut self) -> Result<u64> {
        let tok = self.next()?;
        timestamp_of(&tok)
    }
}

/// The timestamp a string or number token stands for.
fn timestamp_of(tok: &Token<'_>) -> Result<u64> {
    match &tok.kind {
        TokenKind::Number(n) => Ok(*n),
        TokenKind::Str(bytes) => std::str::from_utf8(bytes)
            .map_err(|_| "a timestamp of ASCII digits and separators".to_string())
            .and_then(parse_timestamp)
            .map_err(|expected| error_at(tok, &expected)),
        _ => Err(error_at(
            tok,
            "a timestamp ('YYYY-MM-DD HH:MM:SS[.fraction]' or nanoseconds since 1970)",
        )),
    }
}

fn error_at(tok: &Token<'_>, expected: &str) -> ParseError {
    ParseError {
        line: tok.line,
        column: tok.column,
        expected: expected.to_string(),
        found: tok.describe(),
    }
}

/// A broken parser invariant, reported instead of panicking.
fn internal(what: &str) -> ParseError {
    ParseError {
        line: 0,
        column: 0,
        expected: format!("a token (internal error in the HQL parser: {what})"),
        found: "nothing".to_string(),
    }
}
