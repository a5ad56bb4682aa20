//! The key of one cell inside its family's keyspace (`docs/format/cells.md`).
//!
//! ```text
//! key        := esc(row) esc(qualifier) inverted_ts
//! esc(x)     := x with every 0x00 written as 0x00 0xFF, then the terminator 0x00 0x01
//! inverted_ts:= u64::MAX - timestamp, 8 bytes big-endian
//! ```
//!
//! Why this sorts by (row asc, qualifier asc, timestamp desc) under plain byte order:
//! bytes other than 0x00 are copied and compare as themselves; a 0x00 of the data becomes
//! 0x00 0xFF, which sorts after the terminator 0x00 0x01, so a string sorts before every
//! longer string it is a prefix of; and the terminator is the only place 0x00 is followed
//! by 0x01, so the row part of a key is found without knowing its length. The inverted
//! timestamp puts the newest version of a column first.
//!
//! Ranges: every cell of a row lies in `[esc(row), esc(row)[..-1] ++ 0x02)`, i.e. the row's
//! escaped bytes followed by 0x00 0x01 up to the same bytes followed by 0x00 0x02; no other
//! row's key falls in between (a longer row continues with a non-zero byte or 0x00 0xFF, both
//! above 0x00 0x02). The same holds for a column inside its row.

/// Written after a string's escaped bytes: ends the string.
pub const TERMINATOR: [u8; 2] = [0x00, 0x01];
/// Exclusive end of "every key that starts with this escaped string".
pub const RANGE_END: [u8; 2] = [0x00, 0x02];
/// How a 0x00 data byte is written.
pub const ESCAPED_ZERO: [u8; 2] = [0x00, 0xFF];
/// Bytes of the inverted timestamp at the end of every key.
pub const TIMESTAMP_LEN: usize = 8;

/// Why a byte string is not a cell key. `offset` is where in the key decoding stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed cell key at byte {offset}: {reason}")]
pub struct CellKeyError {
    pub offset: usize,
    pub reason: &'static str,
}

/// Appends `x` escaped and terminated.
fn put_escaped(x: &[u8], out: &mut Vec<u8>) {
    put_escaped_unterminated(x, out);
    out.extend_from_slice(&TERMINATOR);
}

fn put_escaped_unterminated(x: &[u8], out: &mut Vec<u8>) {
    let mut rest = x;
    while let Some(i) = rest.iter().position(|&b| b == 0) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(&ESCAPED_ZERO);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
}

/// The exact encoded length of a cell key, for size checks before encoding.
pub fn encoded_cell_key_len(row: &[u8], qualifier: &[u8]) -> usize {
    let zeros = row.iter().chain(qualifier).filter(|&&b| b == 0).count();
    row.len() + qualifier.len() + zeros + 2 * TERMINATOR.len() + TIMESTAMP_LEN
}

/// Appends the key of cell (`row`, `qualifier`, `timestamp`) to `out`.
pub fn encode_cell_key(row: &[u8], qualifier: &[u8], timestamp: u64, out: &mut Vec<u8>) {
    out.reserve(encoded_cell_key_len(row, qualifier));
    put_escaped(row, out);
    put_escaped(qualifier, out);
    out.extend_from_slice(&(u64::MAX - timestamp).to_be_bytes());
}

/// Reads one escaped, terminated string starting at `pos` into `out`; returns the position
/// after its terminator.
fn read_escaped(key: &[u8], mut pos: usize, out: &mut Vec<u8>) -> Result<usize, CellKeyError> {
    loop {
        let rest = key.get(pos..).unwrap_or_default();
        let Some(i) = rest.iter().position(|&b| b == 0) else {
            return Err(CellKeyError {
                offset: key.len(),
                reason: "string has no terminator",
            });
        };
        out.extend_from_slice(&rest[..i]);
        pos += i;
        match key.get(pos + 1) {
            Some(0xFF) => out.push(0),
            Some(0x01) => return Ok(pos + 2),
            Some(_) => {
                return Err(CellKeyError {
                    offset: pos,
                    reason: "0x00 followed by neither 0xFF (escaped zero) nor 0x01 (terminator)",
                })
            }
            None => {
                return Err(CellKeyError {
                    offset: pos,
                    reason: "key ends in the middle of an escape",
                })
            }
        }
        pos += 2;
    }
}

/// The timestamp of the key whose inverted timestamp starts at `pos`.
fn read_timestamp(key: &[u8], pos: usize) -> Result<u64, CellKeyError> {
    let ts: [u8; TIMESTAMP_LEN] =
        key.get(pos..)
            .and_then(|t| t.try_into().ok())
            .ok_or(CellKeyError {
                offset: pos,
                reason: "timestamp is not exactly 8 bytes",
            })?;
    Ok(u64::MAX - u64::from_be_bytes(ts))
}

/// The decoded key of a scan's current cell. Consecutive keys of one column (or one row)
/// share its escaped bytes, so decoding the next key compares those bytes instead of
/// unescaping the row and qualifier again.
#[derive(Debug, Default)]
pub struct DecodedCellKey {
    pub row: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub timestamp: u64,
    /// `esc(row) esc(qualifier)`, terminators included, as the last decoded key began;
    /// empty when unknown.
    column_key: Vec<u8>,
    /// How many bytes of `column_key` are `esc(row)`.
    row_key_len: usize,
}

impl DecodedCellKey {
    /// Decodes `key`; returns whether its row differs from the previous key's. A key that
    /// starts with the previous escaped, terminated row has that row: the terminator is the
    /// only 0x00 0x01 in it, and a row's part of a key ends at its first 0x00 0x01. The same
    /// holds for the column: a key that starts with the previous escaped row and qualifier
    /// has them, and only its timestamp is left to read.
    pub fn decode(&mut self, key: &[u8]) -> Result<bool, CellKeyError> {
        let known = !self.column_key.is_empty();
        if known && key.starts_with(&self.column_key) {
            return self.decode_timestamp(key, self.column_key.len(), false);
        }
        let same_row = known && key.starts_with(&self.column_key[..self.row_key_len]);
        let decoded = if same_row {
            self.qualifier.clear();
            read_escaped(key, self.row_key_len, &mut self.qualifier)
        } else {
            self.row.clear();
            self.qualifier.clear();
            read_escaped(key, 0, &mut self.row).and_then(|pos| {
                self.row_key_len = pos;
                read_escaped(key, pos, &mut self.qualifier)
            })
        };
        match decoded {
            Ok(pos) => {
                self.column_key.clear();
                self.column_key.extend_from_slice(&key[..pos]);
                self.decode_timestamp(key, pos, !same_row)
            }
            Err(e) => {
                self.column_key.clear();
                Err(e)
            }
        }
    }

    /// Reads the timestamp at `pos` and returns `row_changed`.
    fn decode_timestamp(
        &mut self,
        key: &[u8],
        pos: usize,
        row_changed: bool,
    ) -> Result<bool, CellKeyError> {
        match read_timestamp(key, pos) {
            Ok(ts) => {
                self.timestamp = ts;
                Ok(row_changed)
            }
            Err(e) => {
                self.column_key.clear();
                Err(e)
            }
        }
    }
}

/// Decodes a cell key into (row, qualifier, timestamp). Never panics, whatever the input.
pub fn decode_cell_key(key: &[u8]) -> Result<(Vec<u8>, Vec<u8>, u64), CellKeyError> {
    let mut d = DecodedCellKey::default();
    d.decode(key)?;
    Ok((d.row, d.qualifier, d.timestamp))
}

/// Appends the first key any cell of `row` can have (the start of [`row_range`]).
pub(crate) fn put_row_start(row: &[u8], out: &mut Vec<u8>) {
    put_escaped(row, out);
}

/// `[start, end)` holding every cell of `row` and nothing else.
pub fn row_range(row: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut start = Vec::with_capacity(row.len() + 2);
    put_row_start(row, &mut start);
    let end = range_end_of(&start);
    (start, end)
}

/// `[start, end)` holding every version of column `qualifier` of `row` and nothing else.
pub fn column_range(row: &[u8], qualifier: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut start = Vec::with_capacity(row.len() + qualifier.len() + 4);
    put_escaped(row, &mut start);
    put_escaped(qualifier, &mut start);
    let end = range_end_of(&start);
    (start, end)
}

/// `[start, end)` holding the versions of column `qualifier` of `row` whose timestamp is
/// at most `max_ts` (versions sort newest first, so they are the column's tail).
pub fn column_range_up_to(row: &[u8], qualifier: &[u8], max_ts: u64) -> (Vec<u8>, Vec<u8>) {
    let (mut start, end) = column_range(row, qualifier);
    start.extend_from_slice(&(u64::MAX - max_ts).to_be_bytes());
    (start, end)
}

/// `esc(prefix)` without its terminator: the key of every cell of every row that starts
/// with `prefix` starts with these bytes, and no other key does.
pub fn row_prefix_start(prefix: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + 2);
    put_escaped_unterminated(prefix, &mut out);
    out
}

/// A terminated escaped string with its terminator replaced by `RANGE_END`.
fn range_end_of(terminated: &[u8]) -> Vec<u8> {
    let mut end = terminated.to_vec();
    if let Some(last) = end.last_mut() {
        *last = RANGE_END[1];
    }
    end
}

/// The row bytes a possibly cut key starts with (for split points taken from index
/// separators, which may end anywhere): unescaped up to the row's terminator or the end.
/// Any byte string is a valid row boundary, so a cut row still splits correctly.
pub fn row_prefix_of(key: &[u8]) -> Vec<u8> {
    let mut row = Vec::with_capacity(key.len());
    let mut i = 0;
    while i < key.len() {
        match (key[i], key.get(i + 1)) {
            (0x00, Some(0xFF)) => {
                row.push(0);
                i += 2;
            }
            (0x00, _) => break,
            (b, _) => {
                row.push(b);
                i += 1;
            }
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_key_layout_is_as_documented() {
        let mut k = Vec::new();
        encode_cell_key(b"a\x00", b"", 1, &mut k);
        let mut want = vec![b'a', 0x00, 0xFF, 0x00, 0x01, 0x00, 0x01];
        want.extend_from_slice(&(u64::MAX - 1).to_be_bytes());
        assert_eq!(k, want);
        assert_eq!(k.len(), encoded_cell_key_len(b"a\x00", b""));
        let (s, e) = row_range(b"a\x00");
        assert_eq!(s, [b'a', 0x00, 0xFF, 0x00, 0x01]);
        assert_eq!(e, [b'a', 0x00, 0xFF, 0x00, 0x02]);
        assert_eq!(row_prefix_start(b"a\x00"), [b'a', 0x00, 0xFF]);
    }

    #[test]
    fn column_range_up_to_holds_exactly_the_older_versions() {
        let (start, end) = column_range_up_to(b"r", b"q", 100);
        let key = |ts| {
            let mut k = Vec::new();
            encode_cell_key(b"r", b"q", ts, &mut k);
            k
        };
        let inside = |k: &Vec<u8>| *k >= start && *k < end;
        assert!(inside(&key(100)) && inside(&key(99)) && inside(&key(0)));
        assert!(!inside(&key(101)) && !inside(&key(u64::MAX - 1)));
        let mut other = Vec::new();
        encode_cell_key(b"r", b"q\x00", 5, &mut other);
        assert!(!inside(&other));
    }

    #[test]
    fn cell_key_truncated_inputs_are_errors() {
        let mut k = Vec::new();
        encode_cell_key(b"row", b"q\x00", 7, &mut k);
        for n in 0..k.len() {
            assert!(decode_cell_key(&k[..n]).is_err(), "prefix of {n} bytes");
        }
        assert_eq!(
            decode_cell_key(&k),
            Ok((b"row".to_vec(), b"q\x00".to_vec(), 7))
        );
    }

    /// Decoding keys in scan order, reusing the row and column, gives what decoding each key
    /// alone gives, and reports exactly the row changes; a malformed key forgets the row.
    #[test]
    fn decoding_in_scan_order_matches_decoding_alone() {
        let cells: [(&[u8], &[u8], u64); 13] = [
            (b"a", b"q", 9),
            (b"a", b"q", 3),
            (b"a", b"q", 2),
            (b"a", b"r\x00", 1),
            (b"a", b"r\x00", 0),
            (b"a", b"r\x00\x01", 0),
            (b"a", b"r\x00\x01", u64::MAX),
            (b"a\x00", b"q", 1),
            (b"a\x00b", b"", 1),
            (b"ab", b"q", 1),
            (b"ab", b"r", 1),
            (b"ab", b"r", 0),
            (b"", b"q", 1),
        ];
        let mut d = DecodedCellKey::default();
        let mut last_row: Option<Vec<u8>> = None;
        for (row, q, ts) in cells {
            let mut k = Vec::new();
            encode_cell_key(row, q, ts, &mut k);
            let changed = d.decode(&k).expect("decode");
            assert_eq!(
                (d.row.clone(), d.qualifier.clone(), d.timestamp),
                decode_cell_key(&k).expect("alone")
            );
            assert_eq!(changed, last_row.as_deref() != Some(row), "row {row:?}");
            last_row = Some(row.to_vec());
        }
        let mut k = Vec::new();
        encode_cell_key(b"", b"q", 1, &mut k);
        assert!(d.decode(&k[..k.len() - 1]).is_err());
        assert_eq!(
            d.decode(&k),
            Ok(true),
            "after an error the row is decoded again"
        );
    }
}
