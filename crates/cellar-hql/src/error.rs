//! The one error HQL parsing reports: where, what was expected there, and what was found.

/// A script the parser cannot read.
///
/// `line` and `column` are 1-based; columns count characters, not bytes. `found` is a short
/// description of the offending input: a token in single quotes (`'FOO'`), `string '...'`,
/// or `end of input`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: expected {expected}, found {found}")]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub expected: String,
    pub found: String,
}

/// Longest token text quoted in `found` before it is cut with "...".
const FOUND_CHARS_MAX: usize = 40;

/// `text` in single quotes, cut to [`FOUND_CHARS_MAX`] characters.
pub(crate) fn quote_found(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(FOUND_CHARS_MAX * 4) + 5);
    out.push('\'');
    let mut chars = text.chars();
    for c in chars.by_ref().take(FOUND_CHARS_MAX) {
        // Keep the message on one line whatever the input holds.
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    if chars.next().is_some() {
        out.push_str("...");
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_found_cuts_long_text_and_stays_on_one_line() {
        assert_eq!(quote_found("FOO"), "'FOO'");
        assert_eq!(quote_found("a\nb"), "'a\\nb'");
        let long = "x".repeat(100);
        assert_eq!(quote_found(&long), format!("'{}...'", "x".repeat(40)));
    }
}
