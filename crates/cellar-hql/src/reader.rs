//! Cutting a stream of input into statements, for an interactive shell or a batch read from
//! stdin: a statement is complete at a `;` outside strings, quoted names and comments.
//!
//! The reader only finds the boundaries; it does not lex. Its idea of strings and comments
//! matches the lexer's: `'...'` and `"..."` with `\` escaping the next character, `--` and
//! `#` to the end of the line.

use crate::ast::{Located, Statement};
use crate::error::ParseError;
use crate::parser::Parser;

/// The text of one complete statement and where it starts in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatementText {
    /// The statement up to and including its `;` (the text before it since the previous
    /// statement, comments included).
    pub text: String,
    /// 1-based line and column of `text`'s first character in the whole input.
    pub line: usize,
    pub column: usize,
}

impl StatementText {
    /// Parses the text; lines and columns of statements and errors are those of the input.
    pub fn parse(&self) -> Result<Vec<Located<Statement>>, ParseError> {
        Parser::new_at(&self.text, self.line, self.column).script()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    Code,
    /// After a '-' in code: a second one starts a comment.
    Dash,
    Quoted {
        quote: char,
        escaped: bool,
    },
    Comment,
}

/// Collects input and hands out each statement once its `;` has arrived.
///
/// ```
/// use cellar_hql::StatementReader;
/// let mut reader = StatementReader::new();
/// reader.push("SELECT * FROM t\n");
/// assert!(reader.next_statement().is_none());
/// assert!(reader.needs_more()); // the shell prints its continuation prompt
/// reader.push("  LIMIT 1; SHOW TABLES\n");
/// let first = reader.next_statement().expect("complete");
/// assert_eq!(first.text, "SELECT * FROM t\n  LIMIT 1;");
/// assert!(reader.next_statement().is_none());
/// assert_eq!(reader.finish().expect("rest").text, " SHOW TABLES\n");
/// ```
#[derive(Debug, Clone)]
pub struct StatementReader {
    buf: String,
    /// Bytes of `buf` already scanned; `state`, `has_code` and `at` describe that point.
    scanned: usize,
    state: Scan,
    /// Whether the scanned text holds anything but blanks, comments and ';'.
    has_code: bool,
    /// Line and column of `buf[0]` and of `buf[scanned]`.
    start: (usize, usize),
    at: (usize, usize),
}

impl Default for StatementReader {
    fn default() -> Self {
        Self::new()
    }
}

impl StatementReader {
    pub fn new() -> Self {
        StatementReader {
            buf: String::new(),
            scanned: 0,
            state: Scan::Code,
            has_code: false,
            start: (1, 1),
            at: (1, 1),
        }
    }

    /// Appends input (a line should keep its '\n': it ends a `--` comment).
    pub fn push(&mut self, input: &str) {
        self.buf.push_str(input);
    }

    /// The next complete statement, removed from the buffer; `None` until a `;` ends one.
    /// Empty statements (only blanks and comments before the `;`) are skipped.
    pub fn next_statement(&mut self) -> Option<StatementText> {
        loop {
            let (mut state, mut has_code, mut at) = (self.state, self.has_code, self.at);
            let mut end = None;
            for (i, c) in self.buf[self.scanned..].char_indices() {
                let (next, code, ends) = step(state, c);
                state = next;
                has_code |= code;
                at = if c == '\n' {
                    (at.0 + 1, 1)
                } else {
                    (at.0, at.1 + 1)
                };
                if ends {
                    end = Some(self.scanned + i + c.len_utf8());
                    break;
                }
            }
            (self.state, self.at) = (state, at);
            let Some(end) = end else {
                self.has_code = has_code;
                self.scanned = self.buf.len();
                return None;
            };
            let text: String = self.buf.drain(..end).collect();
            let (line, column) = std::mem::replace(&mut self.start, at);
            self.scanned = 0;
            self.has_code = false;
            if has_code {
                return Some(StatementText { text, line, column });
            }
        }
    }

    /// Whether a statement has begun and not ended: an interactive shell asks for another
    /// line. Call after [`Self::next_statement`] returned `None`.
    pub fn needs_more(&self) -> bool {
        self.has_code || self.state != Scan::Code && self.state != Scan::Comment
    }

    /// At the end of input: what is left if it holds more than blanks and comments (a last
    /// statement without ';', or an unterminated one the parser will report).
    pub fn finish(&mut self) -> Option<StatementText> {
        let pending = self.next_statement();
        if pending.is_some() {
            return pending;
        }
        let rest = std::mem::take(&mut self.buf);
        let (line, column) = self.start;
        let needs_more = self.needs_more();
        *self = StatementReader::new();
        needs_more.then_some(StatementText {
            text: rest,
            line,
            column,
        })
    }
}

/// One character of scanning: the next state, whether `c` is part of a statement (not blank,
/// comment or ';'), and whether it ends one.
fn step(state: Scan, c: char) -> (Scan, bool, bool) {
    match state {
        Scan::Comment => (
            if c == '\n' { Scan::Code } else { Scan::Comment },
            false,
            false,
        ),
        Scan::Quoted { quote, escaped } => {
            let next = if escaped {
                Scan::Quoted {
                    quote,
                    escaped: false,
                }
            } else if c == '\\' {
                Scan::Quoted {
                    quote,
                    escaped: true,
                }
            } else if c == quote {
                Scan::Code
            } else {
                state
            };
            (next, true, false)
        }
        Scan::Dash if c == '-' => (Scan::Comment, false, false),
        // The pending '-' was code after all.
        Scan::Dash => {
            let (next, _, ends) = step(Scan::Code, c);
            (next, true, ends)
        }
        Scan::Code => match c {
            ';' => (Scan::Code, false, true),
            '-' => (Scan::Dash, false, false),
            '#' => (Scan::Comment, false, false),
            '\'' | '"' => (
                Scan::Quoted {
                    quote: c,
                    escaped: false,
                },
                true,
                false,
            ),
            c if c.is_whitespace() => (Scan::Code, false, false),
            _ => (Scan::Code, true, false),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &str) -> Vec<String> {
        let mut r = StatementReader::new();
        r.push(input);
        let mut out = Vec::new();
        while let Some(s) = r.next_statement() {
            out.push(s.text);
        }
        out
    }

    #[test]
    fn reader_ignores_semicolons_in_strings_names_and_comments() {
        assert_eq!(
            all("INSERT INTO t VALUES ('a;', 'f', '\\';'); -- x;\n# y;\nSELECT \"a;b\" FROM t;"),
            vec![
                "INSERT INTO t VALUES ('a;', 'f', '\\';');".to_string(),
                " -- x;\n# y;\nSELECT \"a;b\" FROM t;".to_string()
            ]
        );
    }

    #[test]
    fn reader_skips_empty_statements() {
        assert_eq!(all(";; -- c\n ;QUIT;"), vec!["QUIT;".to_string()]);
    }

    #[test]
    fn reader_handles_a_dash_pair_split_across_pushes() {
        let mut r = StatementReader::new();
        r.push("SHOW TABLES -");
        assert!(r.next_statement().is_none());
        assert!(r.needs_more());
        r.push("- ;\n;");
        let s = r.next_statement().expect("statement");
        assert_eq!(s.text, "SHOW TABLES -- ;\n;");
        assert!(!r.needs_more());
    }

    #[test]
    fn reader_needs_more_inside_a_string() {
        let mut r = StatementReader::new();
        r.push("  \n-- only a comment\n");
        assert!(r.next_statement().is_none());
        assert!(!r.needs_more());
        r.push("SELECT * FROM t WHERE ROW = 'a\n");
        assert!(r.next_statement().is_none());
        assert!(r.needs_more());
        r.push("b';");
        let s = r.next_statement().expect("complete");
        assert_eq!((s.line, s.column), (1, 1));
    }

    #[test]
    fn reader_positions_are_those_of_the_input() {
        let mut r = StatementReader::new();
        r.push("SHOW TABLES; SELECT\n* FROM t WHERE ROW = 1;");
        r.next_statement().expect("first");
        let second = r.next_statement().expect("second");
        assert_eq!((second.line, second.column), (1, 13));
        let err = second.parse().expect_err("a number is no row key");
        assert_eq!((err.line, err.column), (2, 22));
    }
}
