//! How bytes, keys and values are printed.

use cellar_engine::tools::keys::{split_internal, unpack_trailer, ValueKind};
use cellar_engine::Compression;

/// Values (and long keys in tables) are cut to this many bytes.
pub const VALUE_PREVIEW: usize = 64;

/// Printable ASCII as is, every other byte as `\xNN`, and `\` itself as `\\` so the output
/// is unambiguous. An empty string prints as `<empty>`.
pub fn escape(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "<empty>".to_string();
    }
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

/// [`escape`] of at most `max` bytes, with the number of bytes left out.
pub fn escape_truncated(bytes: &[u8], max: usize) -> String {
    if bytes.len() <= max {
        return escape(bytes);
    }
    format!("{}...(+{} bytes)", escape(&bytes[..max]), bytes.len() - max)
}

pub fn kind_name(kind: u8) -> String {
    match ValueKind::from_u8(kind) {
        Some(ValueKind::Put) => "PUT".to_string(),
        Some(ValueKind::Delete) => "DEL".to_string(),
        None => format!("KIND(0x{kind:02x})"),
    }
}

/// `user_key @seq KIND`, or the raw bytes when the key is too short to hold a trailer.
pub fn internal_key(ikey: &[u8]) -> String {
    match split_internal(ikey) {
        Some((user, trailer)) => {
            let (seq, kind) = unpack_trailer(trailer);
            format!("{} @{seq} {}", escape(user), kind_name(kind))
        }
        None if ikey.is_empty() => "<none>".to_string(),
        None => format!("<malformed internal key {}>", escape(ikey)),
    }
}

/// The user key of an internal key (the whole input when it is malformed).
pub fn user_key(ikey: &[u8]) -> &[u8] {
    split_internal(ikey).map_or(ikey, |(u, _)| u)
}

pub fn compression_name(c: Compression) -> &'static str {
    match c {
        Compression::None => "none",
        Compression::Lz4 => "lz4",
        Compression::Zstd => "zstd",
    }
}

/// `1 entry`, `2 entries`: `n` and the noun, with `plural` unless `n` is 1.
pub fn count(n: impl Into<u64>, singular: &str, plural: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// `min..=max`, or `none` for an empty range.
pub fn seq_range(count: u64, min: u64, max: u64) -> String {
    if count == 0 {
        "none".to_string()
    } else {
        format!("{min}..={max}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellar_engine::tools::keys::make_internal_key;

    #[test]
    fn escaping() {
        assert_eq!(escape(b"abc XYZ~"), "abc XYZ~");
        assert_eq!(escape(b"\x00a\xff\n"), "\\x00a\\xff\\x0a");
        assert_eq!(escape(b"a\\b"), "a\\\\b");
        assert_eq!(escape(b""), "<empty>");
        assert_eq!(escape_truncated(b"abcdef", 4), "abcd...(+2 bytes)");
        assert_eq!(escape_truncated(b"abcd", 4), "abcd");
    }

    #[test]
    fn internal_keys() {
        assert_eq!(internal_key(&make_internal_key(b"k1", 42, 1)), "k1 @42 PUT");
        assert_eq!(internal_key(&make_internal_key(b"k", 7, 0)), "k @7 DEL");
        assert_eq!(
            internal_key(&make_internal_key(b"k", 7, 9)),
            "k @7 KIND(0x09)"
        );
        assert_eq!(internal_key(b"abc"), "<malformed internal key abc>");
        assert_eq!(internal_key(b""), "<none>");
    }
}
