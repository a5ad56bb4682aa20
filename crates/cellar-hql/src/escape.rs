//! HQL string literals (for canonical `Display`). The escaped fields of SELECT/DUMP output
//! are `cellar_text`'s (docs/hql.md, "Output").

use std::fmt::{self, Write};

use cellar_text::push_hex_escape;

/// Writes `bytes` as an HQL literal between `quote`s (`'` for strings, `"` for names):
/// printable characters as they are, `\\`, `\<quote>`, `\n`, `\t`, `\0`, and `\xHH` for
/// every other control character and every byte of invalid UTF-8.
pub(crate) fn write_literal(f: &mut impl Write, bytes: &[u8], quote: char) -> fmt::Result {
    let mut text = String::with_capacity(bytes.len() + 2);
    text.push(quote);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => text.push_str("\\\\"),
                '\n' => text.push_str("\\n"),
                '\t' => text.push_str("\\t"),
                '\0' => text.push_str("\\0"),
                c if c == quote => {
                    text.push('\\');
                    text.push(c);
                }
                c if c.is_control() => push_char_hex(c, &mut text),
                c => text.push(c),
            }
        }
        for &b in chunk.invalid() {
            push_hex_escape(b, &mut text);
        }
    }
    text.push(quote);
    f.write_str(&text)
}

fn push_char_hex(c: char, out: &mut String) {
    let mut utf8 = [0u8; 4];
    for &b in c.encode_utf8(&mut utf8).as_bytes() {
        push_hex_escape(b, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_literal_escapes_its_quote() {
        let mut s = String::new();
        write_literal(&mut s, b"it's \"x\"\\", '\'').expect("write to String");
        assert_eq!(s, r#"'it\'s "x"\\'"#);
        s.clear();
        write_literal(&mut s, b"a\"b", '"').expect("write to String");
        assert_eq!(s, r#""a\"b""#);
    }
}
