//! Tokens of HQL, produced on demand so that the first error in the text is the one reported.
//!
//! - bare identifier `[A-Za-z_][A-Za-z0-9_-]*`; keywords are bare identifiers matched
//!   case-insensitively by the parser; `--` ends an identifier (it starts a comment)
//! - quoted identifier `"..."` and string `'...'`, with the escapes `\\ \' \" \n \t \0 \xHH`;
//!   a quoted identifier must be non-empty UTF-8 after unescaping, a string may be any bytes
//! - number `[0-9]+` (a `u64`)
//! - punctuation `( ) , ; * : = =^ < <= > >=`
//! - comments: `--` or `#` to the end of the line
//!
//! Lines and columns are 1-based; columns count characters.

use crate::error::{quote_found, ParseError};
use cellar_text::hex_value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Ident(String),
    QuotedIdent(String),
    Str(Vec<u8>),
    Number(u64),
    LParen,
    RParen,
    Comma,
    Semicolon,
    Star,
    Colon,
    Eq,
    PrefixEq,
    Lt,
    Le,
    Gt,
    Ge,
    Eof,
}

#[derive(Debug, Clone)]
pub(crate) struct Token<'a> {
    pub kind: TokenKind,
    pub line: usize,
    pub column: usize,
    /// The token's text in the script (empty at the end of input).
    pub text: &'a str,
}

impl Token<'_> {
    /// How an error message names this token after "found".
    pub fn describe(&self) -> String {
        match self.kind {
            TokenKind::Eof => "end of input".to_string(),
            TokenKind::Str(_) => format!("string {}", quote_found(self.text)),
            _ => quote_found(self.text),
        }
    }

    /// Whether this is the bare keyword `word` (given in upper case).
    pub fn is_keyword(&self, word: &str) -> bool {
        matches!(&self.kind, TokenKind::Ident(s) if s.eq_ignore_ascii_case(word))
    }
}

pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: usize,
    column: usize,
}

impl<'a> Lexer<'a> {
    /// A lexer whose first character is at `line`, `column` (1-based) of a larger input.
    pub fn new_at(src: &'a str, line: usize, column: usize) -> Self {
        Lexer {
            src,
            pos: 0,
            line,
            column,
        }
    }

    #[cfg(test)]
    pub fn new(src: &'a str) -> Self {
        Self::new_at(src, 1, 1)
    }

    fn peek_char(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        self.src[self.pos..].chars().nth(1)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn skip_blanks_and_comments(&mut self) {
        while let Some(c) = self.peek_char() {
            let comment = c == '#' || (c == '-' && self.peek_second() == Some('-'));
            if comment {
                while self.peek_char().is_some_and(|c| c != '\n') {
                    self.bump();
                }
            } else if c.is_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }

    // Long by design: one match arm per token shape, in the order the grammar (docs/hql.md)
    // lists them; each arm is a few lines, and splitting it would scatter the token table.
    pub fn next_token(&mut self) -> Result<Token<'a>, ParseError> {
        self.skip_blanks_and_comments();
        let (start, line, column) = (self.pos, self.line, self.column);
        let error = |expected: &str, found: String| ParseError {
            line,
            column,
            expected: expected.to_string(),
            found,
        };
        let Some(c) = self.bump() else {
            return Ok(Token {
                kind: TokenKind::Eof,
                line,
                column,
                text: "",
            });
        };
        let kind = match c {
            '(' => TokenKind::LParen,
            ')' => TokenKind::RParen,
            ',' => TokenKind::Comma,
            ';' => TokenKind::Semicolon,
            '*' => TokenKind::Star,
            ':' => TokenKind::Colon,
            '=' if self.peek_char() == Some('^') => {
                self.bump();
                TokenKind::PrefixEq
            }
            '=' => TokenKind::Eq,
            '<' | '>' => {
                let or_equal = self.peek_char() == Some('=');
                if or_equal {
                    self.bump();
                }
                match (c, or_equal) {
                    ('<', false) => TokenKind::Lt,
                    ('<', true) => TokenKind::Le,
                    (_, false) => TokenKind::Gt,
                    (_, true) => TokenKind::Ge,
                }
            }
            '\'' => TokenKind::Str(self.quoted_body('\'', line, column)?),
            '"' => {
                let bytes = self.quoted_body('"', line, column)?;
                let text = &self.src[start..self.pos];
                match String::from_utf8(bytes) {
                    Ok(name) if !name.is_empty() => TokenKind::QuotedIdent(name),
                    Ok(_) => return Err(error("a non-empty name between '\"'", quote_found(text))),
                    Err(_) => return Err(error("a name of valid UTF-8", quote_found(text))),
                }
            }
            c if c.is_ascii_digit() => {
                while self
                    .peek_char()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.bump();
                }
                let text = &self.src[start..self.pos];
                if !text.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(error("a number (digits only)", quote_found(text)));
                }
                match text.parse::<u64>() {
                    Ok(n) => TokenKind::Number(n),
                    Err(_) => {
                        return Err(error(
                            "a number up to 18446744073709551615",
                            quote_found(text),
                        ))
                    }
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                loop {
                    match self.peek_char() {
                        Some(c) if c.is_ascii_alphanumeric() || c == '_' => {}
                        Some('-') if self.peek_second() != Some('-') => {}
                        _ => break,
                    }
                    self.bump();
                }
                TokenKind::Ident(self.src[start..self.pos].to_string())
            }
            other => {
                return Err(error(
                    "a name, string, number, or one of ( ) , ; * : = =^ < <= > >=",
                    quote_found(&other.to_string()),
                ))
            }
        };
        Ok(Token {
            kind,
            line,
            column,
            text: &self.src[start..self.pos],
        })
    }

    /// The unescaped bytes of a literal whose opening `quote` (at `line`, `column`) has been
    /// consumed; consumes the closing quote.
    fn quoted_body(
        &mut self,
        quote: char,
        line: usize,
        column: usize,
    ) -> Result<Vec<u8>, ParseError> {
        let mut bytes = Vec::new();
        loop {
            let (esc_line, esc_column) = (self.line, self.column);
            let Some(c) = self.bump() else {
                return Err(ParseError {
                    line,
                    column,
                    expected: format!(
                        "closing {quote} of the {} that starts here",
                        if quote == '\'' {
                            "string"
                        } else {
                            "quoted name"
                        }
                    ),
                    found: "end of input".to_string(),
                });
            };
            if c == quote {
                return Ok(bytes);
            }
            if c != '\\' {
                let mut utf8 = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                continue;
            }
            let escape_start = self.pos - 1;
            let decoded = match self.bump() {
                Some('\\') => Some(b'\\'),
                Some('\'') => Some(b'\''),
                Some('"') => Some(b'"'),
                Some('n') => Some(b'\n'),
                Some('t') => Some(b'\t'),
                Some('0') => Some(0),
                Some('x') => {
                    let high = self.peek_char().and_then(hex_digit);
                    if high.is_some() {
                        self.bump();
                    }
                    let low = self.peek_char().and_then(hex_digit);
                    if low.is_some() {
                        self.bump();
                    }
                    match (high, low) {
                        (Some(h), Some(l)) => Some(h << 4 | l),
                        _ => None,
                    }
                }
                _ => None,
            };
            match decoded {
                Some(b) => bytes.push(b),
                None => {
                    return Err(ParseError {
                        line: esc_line,
                        column: esc_column,
                        expected: "an escape \\\\, \\', \\\", \\n, \\t, \\0 or \\xHH (two hex \
                                   digits)"
                            .to_string(),
                        found: quote_found(&self.src[escape_start..self.pos]),
                    })
                }
            }
        }
    }
}

fn hex_digit(c: char) -> Option<u8> {
    u8::try_from(c).ok().and_then(hex_value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        let mut lexer = Lexer::new(src);
        let mut out = Vec::new();
        loop {
            let t = lexer.next_token().expect("lexes");
            if t.kind == TokenKind::Eof {
                return out;
            }
            out.push(t.kind);
        }
    }

    #[test]
    fn lexer_reads_every_token_kind() {
        use TokenKind::*;
        assert_eq!(
            kinds("query-log \"q l\" 'a\\x00\\'' 42 ( ) , ; * : = =^ < <= > >="),
            vec![
                Ident("query-log".into()),
                QuotedIdent("q l".into()),
                Str(vec![b'a', 0, b'\'']),
                Number(42),
                LParen,
                RParen,
                Comma,
                Semicolon,
                Star,
                Colon,
                Eq,
                PrefixEq,
                Lt,
                Le,
                Gt,
                Ge
            ]
        );
    }

    #[test]
    fn lexer_skips_comments_and_double_dash_ends_identifiers() {
        use TokenKind::*;
        assert_eq!(
            kinds("a-b--comment\n# another\nc -- tail"),
            vec![Ident("a-b".into()), Ident("c".into())]
        );
    }

    #[test]
    fn lexer_counts_lines_and_character_columns() {
        let mut lexer = Lexer::new("é\n  x");
        let t = lexer.next_token();
        assert!(t.is_err(), "é is not a token");
        let mut lexer = Lexer::new("'é' x");
        lexer.next_token().expect("string");
        let x = lexer.next_token().expect("ident");
        assert_eq!((x.line, x.column), (1, 5));
    }

    #[test]
    fn lexer_reports_bad_escape_where_it_starts() {
        let err = Lexer::new("  'ab\\q'")
            .next_token()
            .expect_err("bad escape");
        assert_eq!((err.line, err.column), (1, 6));
        assert_eq!(err.found, "'\\q'");
        let err = Lexer::new("'\\x4g'").next_token().expect_err("bad hex");
        assert_eq!(err.found, "'\\x4'");
    }
}
