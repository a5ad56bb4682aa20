//! Comparison operators and comparators of HBase's filter language
//! (`RowFilter(>=, 'binary:row5')`): an operator says how a cell's bytes must relate to the
//! comparator's operand, `cell OP operand`.

use std::cmp::Ordering;

use regex::bytes::{Regex, RegexBuilder};

/// Most bytes one compiled regex (a `regexstring` or `substring` comparator) may take, and
/// the most its lazy DFA caches; a short hostile pattern (`a{1000}{1000}`) is refused at
/// parse time instead of taking the server's memory.
const REGEX_SIZE_LIMIT: usize = 2 << 20;

/// `<`, `<=`, `=`, `!=`, `>=`, `>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Less,
    LessOrEqual,
    Equal,
    NotEqual,
    GreaterOrEqual,
    Greater,
}

impl CompareOp {
    /// The operator spelled `text`, as the language writes it.
    pub fn from_symbol(text: &str) -> Option<CompareOp> {
        Some(match text {
            "<" => CompareOp::Less,
            "<=" => CompareOp::LessOrEqual,
            "=" => CompareOp::Equal,
            "!=" => CompareOp::NotEqual,
            ">=" => CompareOp::GreaterOrEqual,
            ">" => CompareOp::Greater,
            _ => return None,
        })
    }

    /// [`CompareOp::from_symbol`] for bytes.
    pub fn from_symbol_bytes(text: &[u8]) -> Option<CompareOp> {
        CompareOp::from_symbol(std::str::from_utf8(text).ok()?)
    }

    /// Whether `cell OP operand` holds, given `cell.cmp(operand)`.
    pub fn holds(self, cell_vs_operand: Ordering) -> bool {
        match self {
            CompareOp::Less => cell_vs_operand == Ordering::Less,
            CompareOp::LessOrEqual => cell_vs_operand != Ordering::Greater,
            CompareOp::Equal => cell_vs_operand == Ordering::Equal,
            CompareOp::NotEqual => cell_vs_operand != Ordering::Equal,
            CompareOp::GreaterOrEqual => cell_vs_operand != Ordering::Less,
            CompareOp::Greater => cell_vs_operand == Ordering::Greater,
        }
    }
}

/// What a cell's bytes are compared with.
#[derive(Debug, Clone)]
pub enum Comparator {
    /// `binary:bytes`: byte-wise (lexicographic, unsigned) comparison.
    Binary(Vec<u8>),
    /// `binaryprefix:bytes`: byte-wise comparison of the cell's first `len(bytes)` bytes.
    BinaryPrefix(Vec<u8>),
    /// `substring:text`: whether the cell contains `text`, ignoring case (only `=`, `!=`).
    Substring(Regex),
    /// `regexstring:re`: whether `re` matches anywhere in the cell, `.` matching newlines
    /// as in HBase's default flags (only `=`, `!=`).
    Regex(Regex),
}

/// `OP` and a comparator: the test of RowFilter, QualifierFilter, ValueFilter and
/// SingleColumnValueFilter.
#[derive(Debug, Clone)]
pub struct Compare {
    pub op: CompareOp,
    pub comparator: Comparator,
}

impl Compare {
    /// `text` is the comparator argument (`type:operand`). The error says what is wrong,
    /// without the filter's name (the caller adds it).
    pub fn new(op: CompareOp, text: &[u8]) -> Result<Compare, String> {
        let colon = text
            .iter()
            .position(|&b| b == b':')
            .ok_or("the comparator must be 'type:operand' with type binary, binaryprefix, substring or regexstring")?;
        let (kind, operand) = (&text[..colon], &text[colon + 1..]);
        let comparator = match kind {
            b"binary" => Comparator::Binary(operand.to_vec()),
            b"binaryprefix" => Comparator::BinaryPrefix(operand.to_vec()),
            b"substring" | b"regexstring" => {
                if !matches!(op, CompareOp::Equal | CompareOp::NotEqual) {
                    return Err(format!(
                        "a {} comparator takes only = or !=",
                        String::from_utf8_lossy(kind)
                    ));
                }
                let operand = std::str::from_utf8(operand)
                    .map_err(|_| "the comparator's operand is not UTF-8".to_string())?;
                if kind == b"substring" {
                    Comparator::Substring(compile(&regex::escape(operand), true)?)
                } else {
                    Comparator::Regex(compile(operand, false)?)
                }
            }
            other => {
                return Err(format!(
                    "unknown comparator type {:?} (binary, binaryprefix, substring or regexstring; case-sensitive)",
                    String::from_utf8_lossy(other)
                ))
            }
        };
        Ok(Compare { op, comparator })
    }

    /// Whether `cell OP operand` holds for these bytes.
    pub fn matches(&self, cell: &[u8]) -> bool {
        match &self.comparator {
            Comparator::Binary(operand) => self.op.holds(cell.cmp(operand.as_slice())),
            Comparator::BinaryPrefix(operand) => {
                let head = &cell[..cell.len().min(operand.len())];
                self.op.holds(head.cmp(operand.as_slice()))
            }
            Comparator::Substring(re) | Comparator::Regex(re) => {
                re.is_match(cell) == (self.op == CompareOp::Equal)
            }
        }
    }
}

fn compile(pattern: &str, case_insensitive: bool) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .dot_matches_new_line(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => {
                format!("the pattern compiles to more than {limit} bytes")
            }
            other => format!("bad pattern: {other}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(op: &str, text: &str) -> Compare {
        Compare::new(CompareOp::from_symbol(op).unwrap(), text.as_bytes()).unwrap()
    }

    #[test]
    fn operators_read_cell_op_operand() {
        let ops = ["<", "<=", "=", "!=", ">=", ">"];
        // For cell "b" against operand "a", "b", "c": which operators hold.
        let expect = [
            ("binary:a", [false, false, false, true, true, true]),
            ("binary:b", [false, true, true, false, true, false]),
            ("binary:c", [true, true, false, true, false, false]),
        ];
        for (operand, holds) in expect {
            for (op, want) in ops.iter().zip(holds) {
                assert_eq!(cmp(op, operand).matches(b"b"), want, "b {op} {operand}");
            }
        }
    }

    #[test]
    fn binary_is_unsigned_bytewise_and_shorter_is_less() {
        assert!(cmp("<", "binary:ab").matches(b"a"));
        assert!(cmp(">", "binary:\x7f").matches(&[0x80]));
        assert!(cmp("=", "binary:").matches(b""));
        assert!(cmp(">", "binary:").matches(b"x"));
        // The operand is everything after the first colon.
        assert!(cmp("=", "binary:a:b").matches(b"a:b"));
    }

    #[test]
    fn binaryprefix_compares_only_the_operand_length() {
        assert!(cmp("=", "binaryprefix:row").matches(b"row42"));
        assert!(cmp("=", "binaryprefix:row").matches(b"row"));
        assert!(!cmp("=", "binaryprefix:row").matches(b"ro"));
        // A cell shorter than the operand compares whole: "ro" < "row".
        assert!(cmp("<", "binaryprefix:row").matches(b"ro"));
        assert!(cmp(">", "binaryprefix:row").matches(b"rpa"));
        assert!(cmp("<", "binaryprefix:row").matches(b"roa999"));
        assert!(cmp(">", "binaryprefix:row").matches(b"rox"));
        assert!(cmp("=", "binaryprefix:").matches(b"anything"));
    }

    #[test]
    fn substring_ignores_case() {
        assert!(cmp("=", "substring:Val").matches(b"my value"));
        assert!(cmp("=", "substring:VAL").matches(b"xxvAlxx"));
        assert!(!cmp("=", "substring:val").matches(b"va l"));
        assert!(cmp("!=", "substring:val").matches(b"va l"));
        // Regex metacharacters are literal.
        assert!(cmp("=", "substring:a.b").matches(b"A.B"));
        assert!(!cmp("=", "substring:a.b").matches(b"axb"));
        assert!(cmp("=", "substring:").matches(b""));
    }

    #[test]
    fn regexstring_finds_anywhere() {
        assert!(cmp("=", "regexstring:v[0-9]+").matches(b"xx v12 yy"));
        assert!(!cmp("=", "regexstring:^v[0-9]+$").matches(b"xx v12 yy"));
        assert!(cmp("=", "regexstring:a.b").matches(b"a\nb"));
        assert!(cmp("!=", "regexstring:^z").matches(b"abc"));
        assert!(cmp("=", "regexstring:.*").matches(&[0xff, 0x00]));
        // Unicode classes of a practical size compile.
        assert!(cmp("=", r"regexstring:^\w{20}$").matches("é".repeat(20).as_bytes()));
        assert!(cmp("=", r"regexstring:\d{4}-\d{2}").matches(b"on 2024-05-01"));
    }

    #[test]
    fn bad_comparators_say_why() {
        let err = |op: &str, text: &str| {
            Compare::new(CompareOp::from_symbol(op).unwrap(), text.as_bytes()).unwrap_err()
        };
        assert!(err("=", "binary").contains("type:operand"));
        assert!(err("=", "Binary:x").contains("unknown comparator type \"Binary\""));
        assert!(err("=", "long:5").contains("unknown comparator"));
        assert!(err("<", "substring:x").contains("only = or !="));
        assert!(err(">=", "regexstring:x").contains("only = or !="));
        assert!(err("=", "regexstring:(").contains("bad pattern"));
        assert!(err("=", "regexstring:a{1000}{1000}").contains("compiles to more than"));
        assert!(err("=", r"regexstring:\w{100}").contains("compiles to more than 2097152 bytes"));
    }

    #[test]
    fn symbols() {
        assert_eq!(CompareOp::from_symbol("!="), Some(CompareOp::NotEqual));
        assert_eq!(CompareOp::from_symbol("=="), None);
        assert_eq!(CompareOp::from_symbol("<>"), None);
    }
}
