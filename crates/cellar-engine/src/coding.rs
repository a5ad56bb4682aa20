//! Little-endian fixed-width and LEB128 varint encoding shared by every on-disk format.
//! Decoders never panic: they return `None` on truncated or overlong input and the caller
//! turns that into a `Corruption` error naming its file.

pub fn put_u32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

pub fn put_varint(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Varint length followed by the bytes.
pub fn put_bytes(dst: &mut Vec<u8>, b: &[u8]) {
    put_varint(dst, b.len() as u64);
    dst.extend_from_slice(b);
}

pub fn get_u32(src: &[u8], at: usize) -> Option<u32> {
    let b = src.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The first 8 bytes of `b` as a big-endian number, zero-padded: where two heads differ
/// they order the slices as their bytes do (a shorter slice's padding is 0, and a slice
/// that is a prefix of another sorts first); equal heads decide nothing. Searches compare
/// these before the bytes (memtable keys, index separators).
pub fn head8(b: &[u8]) -> u64 {
    // The common case, 8 bytes or more, is one load; only a short slice is padded.
    if let Some(h) = b.first_chunk::<8>() {
        return u64::from_be_bytes(*h);
    }
    let mut a = [0u8; 8];
    let n = b.len().min(8);
    a[..n].copy_from_slice(&b[..n]);
    u64::from_be_bytes(a)
}

pub fn get_u64(src: &[u8], at: usize) -> Option<u64> {
    let b = src.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// A cursor over a byte slice for decoding; every getter returns `None` past the end.
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }
    pub fn position(&self) -> usize {
        self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos.min(self.buf.len())..]
    }
    pub fn u8(&mut self) -> Option<u8> {
        let v = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }
    pub fn u32(&mut self) -> Option<u32> {
        let v = get_u32(self.buf, self.pos)?;
        self.pos += 4;
        Some(v)
    }
    pub fn u64(&mut self) -> Option<u64> {
        let v = get_u64(self.buf, self.pos)?;
        self.pos += 8;
        Some(v)
    }
    pub fn varint(&mut self) -> Option<u64> {
        let mut result: u64 = 0;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            result |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                if shift == 63 && byte > 1 {
                    return None;
                }
                return Some(result);
            }
        }
        None
    }
    pub fn varint_usize(&mut self) -> Option<usize> {
        usize::try_from(self.varint()?).ok()
    }
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.varint_usize()?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Both paths of `head8` (8 bytes or more, and a short slice padded with zeros) give the
    /// slice's first bytes as a big-endian number.
    #[test]
    fn head8_reads_the_first_eight_bytes_big_endian() {
        assert_eq!(head8(b""), 0);
        assert_eq!(head8(b"ab"), 0x6162 << 48);
        assert_eq!(head8(b"abcdefgh"), 0x6162_6364_6566_6768);
        assert_eq!(head8(b"abcdefghij"), head8(b"abcdefgh"));
        // Where heads differ they order as the bytes do, a prefix first.
        assert!(head8(b"ab") < head8(b"ab\x01"));
        assert!(head8(b"abcdefgg\xff") < head8(b"abcdefgh"));
    }

    proptest! {
        #[test]
        fn varint_round_trips(v in any::<u64>()) {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            let mut d = Decoder::new(&buf);
            prop_assert_eq!(d.varint(), Some(v));
            prop_assert!(d.is_empty());
        }

        #[test]
        fn decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            let mut d = Decoder::new(&bytes);
            while d.varint().is_some() {}
            let mut d = Decoder::new(&bytes);
            let _ = d.bytes();
        }
    }
}
