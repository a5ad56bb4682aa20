//! Bytes as text, both ways: the escaped fields of SELECT/DUMP output and LOAD DATA input
//! (docs/hql.md, "Output").
//!
//! Output escaping: printable characters of valid UTF-8 stay as they are; `\` becomes `\\`,
//! TAB `\t`, LF `\n`, NUL `\0`; every other byte of a control character (C0, DEL, C1) and
//! every byte that is not part of valid UTF-8 becomes `\xHH` (lowercase hex). An escaped field
//! never holds a TAB or a newline, so one cell is one line of TSV, and `unescape_output`
//! gives the exact bytes back.

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `bytes` escaped for one TSV field of output (see the module doc).
pub fn escape_output(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    escape_output_into(bytes, &mut out);
    out
}

/// [`escape_output`] appending to `out`, so that a printing loop can reuse one buffer.
pub fn escape_output_into(bytes: &[u8], out: &mut String) {
    // Fast path for the common case, printable ASCII: copied as is (a scan prints millions
    // of fields, and decoding them as UTF-8 character by character took a sixth of it).
    let plain = bytes
        .iter()
        .position(|&b| !(0x20..0x7f).contains(&b) || b == b'\\')
        .unwrap_or(bytes.len());
    if let Ok(ascii) = std::str::from_utf8(&bytes[..plain]) {
        out.push_str(ascii);
    }
    let bytes = &bytes[plain..];
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\0' => out.push_str("\\0"),
                c if c.is_control() => push_char_hex(c, out),
                c => out.push(c),
            }
        }
        for &b in chunk.invalid() {
            push_hex_escape(b, out);
        }
    }
}

/// The bytes an [`escape_output`] field stands for. Lenient, for files written by other
/// tools: a backslash that does not start `\\`, `\t`, `\n`, `\0` or `\xHH` is kept as is.
pub fn unescape_output(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let b = field[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let (decoded, used) = match field.get(i + 1) {
            Some(b'\\') => (Some(b'\\'), 2),
            Some(b't') => (Some(b'\t'), 2),
            Some(b'n') => (Some(b'\n'), 2),
            Some(b'0') => (Some(0), 2),
            Some(b'x') => match (
                field.get(i + 2).and_then(|&h| hex_value(h)),
                field.get(i + 3).and_then(|&l| hex_value(l)),
            ) {
                (Some(h), Some(l)) => (Some(h << 4 | l), 4),
                _ => (None, 1),
            },
            _ => (None, 1),
        };
        out.push(decoded.unwrap_or(b'\\'));
        i += used;
    }
    out
}

/// The value of one hexadecimal digit (either case).
pub fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn push_char_hex(c: char, out: &mut String) {
    let mut utf8 = [0u8; 4];
    for &b in c.encode_utf8(&mut utf8).as_bytes() {
        push_hex_escape(b, out);
    }
}

/// Appends `\xHH` (lowercase hex) for `b`.
pub fn push_hex_escape(b: u8, out: &mut String) {
    out.push('\\');
    out.push('x');
    out.push(char::from(HEX[usize::from(b >> 4)]));
    out.push(char::from(HEX[usize::from(b & 0xf)]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_output_keeps_printable_text() {
        assert_eq!(escape_output(b"zip codes"), "zip codes");
        assert_eq!(escape_output("café".as_bytes()), "café");
    }

    #[test]
    fn escape_output_escapes_separators_controls_and_bad_utf8() {
        assert_eq!(escape_output(b"a\tb\nc\\d\0"), "a\\tb\\nc\\\\d\\0");
        assert_eq!(escape_output(b"\x01\x7f\r"), "\\x01\\x7f\\x0d");
        assert_eq!(escape_output(b"\xff\xc3"), "\\xff\\xc3");
        // U+0085 (NEL) is a C1 control: both its bytes are escaped.
        assert_eq!(escape_output("\u{85}".as_bytes()), "\\xc2\\x85");
    }

    #[test]
    fn unescape_output_inverts_escape_output() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(unescape_output(escape_output(&all).as_bytes()), all);
    }

    #[test]
    fn unescape_output_keeps_unknown_escapes() {
        assert_eq!(unescape_output(b"a\\qb\\x4"), b"a\\qb\\x4");
        assert_eq!(unescape_output(b"\\x41\\"), b"A\\");
    }
}
