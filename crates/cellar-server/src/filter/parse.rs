//! Filter strings to [`Node`] trees: a lexer into tokens with their byte offsets, then a
//! recursive-descent parser of
//!
//! ```text
//! expr    := and ("OR" and)*
//! and     := unary ("AND" unary)*
//! unary   := ("SKIP" | "WHILE") unary | primary
//! primary := "(" expr ")" | NAME "(" [arg ("," arg)*] ")"
//! arg     := 'quoted string' | op | word            (op: < <= = != >= >; word: 12, true)
//! ```
//!
//! Nesting (parentheses and SKIP/WHILE) is bounded, so the recursion is too.

use super::build::{build_leaf, Arg, ArgValue};
use super::compare::CompareOp;
use super::eval::Node;
use super::{FilterError, MAX_DEPTH, MAX_PATTERNS};

#[derive(Debug, Clone, PartialEq)]
enum Token<'a> {
    Open,
    Close,
    Comma,
    Quoted(Vec<u8>),
    Op(CompareOp),
    /// A filter name, keyword, number or boolean.
    Word(&'a str),
}

impl Token<'_> {
    fn describe(&self) -> String {
        match self {
            Token::Open => "'('".into(),
            Token::Close => "')'".into(),
            Token::Comma => "','".into(),
            Token::Quoted(_) => "a quoted string".into(),
            Token::Op(_) => "a comparison operator".into(),
            Token::Word(w) => format!("{w:?}"),
        }
    }
}

fn syntax(at: usize, reason: impl Into<String>) -> FilterError {
    FilterError::Syntax {
        at,
        reason: reason.into(),
    }
}

/// Bytes that end a word.
fn is_delimiter(b: u8) -> bool {
    b.is_ascii_whitespace() || matches!(b, b'(' | b')' | b',' | b'\'' | b'=' | b'!' | b'<' | b'>')
}

fn lex(bytes: &[u8]) -> Result<Vec<(usize, Token<'_>)>, FilterError> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let token = match bytes[i] {
            b if b.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'(' => Token::Open,
            b')' => Token::Close,
            b',' => Token::Comma,
            b'\'' => {
                let (value, end) = quoted(bytes, i)?;
                i = end;
                tokens.push((start, Token::Quoted(value)));
                continue;
            }
            b'=' | b'!' | b'<' | b'>' => {
                let two = bytes[i] != b'=' && bytes.get(i + 1) == Some(&b'=');
                let len = if two { 2 } else { 1 };
                let op = CompareOp::from_symbol_bytes(&bytes[i..i + len]).ok_or_else(|| {
                    syntax(start, "'!' must be followed by '=' (the operator is !=)")
                })?;
                i += len;
                tokens.push((start, Token::Op(op)));
                continue;
            }
            _ => {
                while i < bytes.len() && !is_delimiter(bytes[i]) {
                    i += 1;
                }
                let word = std::str::from_utf8(&bytes[start..i]).map_err(|_| {
                    syntax(
                        start,
                        "bytes that are not UTF-8 outside quotes (only quoted strings may hold any bytes)",
                    )
                })?;
                tokens.push((start, Token::Word(word)));
                continue;
            }
        };
        tokens.push((start, token));
        i += 1;
    }
    Ok(tokens)
}

/// The string quoted at `bytes[open]` (`''` inside stands for one quote), and the offset
/// after its closing quote.
fn quoted(bytes: &[u8], open: usize) -> Result<(Vec<u8>, usize), FilterError> {
    let mut value = Vec::new();
    let mut i = open + 1;
    loop {
        match bytes.get(i) {
            None => return Err(syntax(open, "unterminated quoted string")),
            Some(b'\'') if bytes.get(i + 1) == Some(&b'\'') => {
                value.push(b'\'');
                i += 2;
            }
            Some(b'\'') => return Ok((value, i + 1)),
            Some(&b) => {
                value.push(b);
                i += 1;
            }
        }
    }
}

struct Parser<'a> {
    tokens: Vec<(usize, Token<'a>)>,
    next: usize,
    end: usize,
    depth: usize,
    patterns_left: usize,
}

/// Parses a whole filter string. Quoted strings may hold any bytes.
pub fn parse(text: &[u8]) -> Result<Node, FilterError> {
    let tokens = lex(text)?;
    if tokens.is_empty() {
        return Err(syntax(0, "empty filter string"));
    }
    let mut parser = Parser {
        tokens,
        next: 0,
        end: text.len(),
        depth: 0,
        patterns_left: MAX_PATTERNS,
    };
    let node = parser.expr()?;
    match parser.peek() {
        None => Ok(node),
        Some((at, Token::Word(w))) if is_keyword_in_wrong_case(w) => Err(upper_case_hint(at, w)),
        Some((at, token)) => Err(syntax(
            at,
            format!(
                "unexpected {}; expected AND, OR or the end",
                token.describe()
            ),
        )),
    }
}

fn is_keyword_in_wrong_case(word: &str) -> bool {
    ["AND", "OR", "SKIP", "WHILE"]
        .iter()
        .any(|k| word.eq_ignore_ascii_case(k) && word != *k)
}

fn upper_case_hint(at: usize, word: &str) -> FilterError {
    syntax(
        at,
        format!(
            "{word:?}: operators are upper case (AND, OR, SKIP, WHILE): write {}",
            word.to_ascii_uppercase()
        ),
    )
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<(usize, &Token<'a>)> {
        self.tokens.get(self.next).map(|(at, t)| (*at, t))
    }

    fn advance(&mut self) -> Option<(usize, Token<'a>)> {
        let token = self.tokens.get(self.next).cloned();
        self.next += 1;
        token
    }

    fn at_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some((_, Token::Word(w))) if *w == keyword)
    }

    fn expr(&mut self) -> Result<Node, FilterError> {
        let mut terms = vec![self.and()?];
        while self.at_keyword("OR") {
            self.next += 1;
            terms.push(self.and()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Node::Or(terms)
        })
    }

    fn and(&mut self) -> Result<Node, FilterError> {
        let mut terms = vec![self.unary()?];
        while self.at_keyword("AND") {
            self.next += 1;
            terms.push(self.unary()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Node::And(terms)
        })
    }

    fn unary(&mut self) -> Result<Node, FilterError> {
        let Some((at, Token::Word(word))) = self.peek() else {
            return self.primary();
        };
        let skip = match *word {
            "SKIP" => true,
            "WHILE" => false,
            _ => return self.primary(),
        };
        self.next += 1;
        self.nest(at, |p| p.unary()).map(|inner| {
            let inner = Box::new(inner);
            if skip {
                Node::Skip(inner)
            } else {
                Node::While {
                    inner,
                    failed: false,
                }
            }
        })
    }

    fn nest(
        &mut self,
        at: usize,
        inner: impl FnOnce(&mut Self) -> Result<Node, FilterError>,
    ) -> Result<Node, FilterError> {
        if self.depth >= MAX_DEPTH {
            return Err(FilterError::TooDeep { at, max: MAX_DEPTH });
        }
        self.depth += 1;
        let node = inner(self);
        self.depth -= 1;
        node
    }

    fn primary(&mut self) -> Result<Node, FilterError> {
        match self.advance() {
            Some((at, Token::Open)) => {
                let node = self.nest(at, |p| p.expr())?;
                self.expect_close(at, "to close the '(' at byte")?;
                Ok(node)
            }
            Some((at, Token::Word(w))) if is_keyword_in_wrong_case(w) => {
                Err(upper_case_hint(at, w))
            }
            Some((at, Token::Word(w))) if matches!(w, "AND" | "OR") => Err(syntax(
                at,
                format!("{w} needs a filter on each side"),
            )),
            Some((at, Token::Word(name))) => self.filter_call(at, name),
            Some((at, token)) => Err(syntax(
                at,
                format!(
                    "unexpected {}; expected a filter such as PrefixFilter('row'), '(', SKIP or WHILE",
                    token.describe()
                ),
            )),
            None => Err(syntax(
                self.end,
                "the filter string ends where a filter was expected",
            )),
        }
    }

    fn expect_close(&mut self, open: usize, what: &str) -> Result<(), FilterError> {
        match self.advance() {
            Some((_, Token::Close)) => Ok(()),
            Some((at, token)) => Err(syntax(
                at,
                format!("expected ')' {what} {open}, found {}", token.describe()),
            )),
            None => Err(syntax(self.end, format!("missing ')' {what} {open}"))),
        }
    }

    fn filter_call(&mut self, at: usize, name: &str) -> Result<Node, FilterError> {
        match self.advance() {
            Some((_, Token::Open)) => {}
            Some((found_at, token)) => {
                return Err(syntax(
                    found_at,
                    format!(
                        "expected '(' after the filter name {name:?}, found {}",
                        token.describe()
                    ),
                ))
            }
            None => {
                return Err(syntax(
                    self.end,
                    format!("expected '(' after the filter name {name:?}"),
                ))
            }
        }
        let args = self.arguments(name)?;
        build_leaf(at, name, args, &mut self.patterns_left).map(Node::Leaf)
    }

    /// The arguments after a filter's '(' through its ')'.
    fn arguments(&mut self, name: &str) -> Result<Vec<Arg>, FilterError> {
        let mut args = Vec::new();
        if let Some((_, Token::Close)) = self.peek() {
            self.next += 1;
            return Ok(args);
        }
        loop {
            let (at, value) = match self.advance() {
                Some((at, Token::Quoted(bytes))) => (at, ArgValue::Quoted(bytes)),
                Some((at, Token::Op(op))) => (at, ArgValue::Op(op)),
                Some((at, Token::Word(w))) => (at, ArgValue::Word(w.to_string())),
                Some((at, token)) => {
                    return Err(syntax(
                        at,
                        format!("{name}: expected an argument, found {}", token.describe()),
                    ))
                }
                None => {
                    return Err(syntax(
                        self.end,
                        format!("{name}: the arguments are not closed with ')'"),
                    ))
                }
            };
            args.push(Arg { at, value });
            match self.advance() {
                Some((_, Token::Comma)) => {}
                Some((_, Token::Close)) => return Ok(args),
                Some((at, token)) => {
                    return Err(syntax(
                        at,
                        format!(
                            "{name}: expected ',' or ')' after an argument, found {}",
                            token.describe()
                        ),
                    ))
                }
                None => {
                    return Err(syntax(
                        self.end,
                        format!("{name}: the arguments are not closed with ')'"),
                    ))
                }
            }
        }
    }
}
