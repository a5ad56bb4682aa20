//! Internal keys: how a user key, its sequence number and its kind are ordered.
//!
//! An internal key is `user_key ++ trailer`, where `trailer` is a little-endian u64 holding
//! `(sequence << 8) | kind`. Internal keys sort by user key ascending, then by trailer
//! *descending*, so the newest version of a key comes first. Plain byte order is not enough
//! (user keys differ in length), so every sorted structure uses [`compare_internal`].

use std::cmp::Ordering;

/// Sequence numbers are 56 bits: the low byte of the trailer is the kind.
pub type SeqNo = u64;
pub const MAX_SEQ: SeqNo = (1 << 56) - 1;
pub const TRAILER_LEN: usize = 8;

/// Largest user key and value the engine accepts (see `docs/durability.md`).
pub const MAX_KEY_LEN: usize = 64 * 1024;
/// Largest value the engine accepts.
pub const MAX_VALUE_LEN: usize = 64 * 1024 * 1024;

/// What an entry is: the low byte of its trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A point tombstone.
    Delete = 0,
    /// A value.
    Put = 1,
}

impl ValueKind {
    /// The kind of a stored byte, or `None` for an unknown one.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            _ => None,
        }
    }
}

/// The kind byte used in lookup keys: sorts before (is "newer" than) every real entry with
/// the same sequence number, so a seek lands on the first entry visible at that sequence.
pub const KIND_FOR_SEEK: u8 = 0xff;

pub fn pack_trailer(seq: SeqNo, kind: u8) -> u64 {
    debug_assert!(seq <= MAX_SEQ);
    (seq << 8) | u64::from(kind)
}

/// Splits a trailer into its sequence number and kind byte.
pub fn unpack_trailer(t: u64) -> (SeqNo, u8) {
    (t >> 8, (t & 0xff) as u8)
}

/// `user_key` followed by the trailer of `seq` and `kind`.
pub fn make_internal_key(user_key: &[u8], seq: SeqNo, kind: u8) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    k.extend_from_slice(user_key);
    k.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
    k
}

/// The internal key a seek to `user_key` at snapshot `seq` uses.
pub fn lookup_key(user_key: &[u8], seq: SeqNo) -> Vec<u8> {
    make_internal_key(user_key, seq, KIND_FOR_SEEK)
}

/// Splits an internal key; `None` when it is shorter than a trailer (corrupt input).
pub fn split_internal(ikey: &[u8]) -> Option<(&[u8], u64)> {
    let cut = ikey.len().checked_sub(TRAILER_LEN)?;
    let (user, t) = ikey.split_at(cut);
    let mut b = [0u8; 8];
    b.copy_from_slice(t);
    Some((user, u64::from_le_bytes(b)))
}

/// User key of a well-formed internal key (callers validated the length when decoding).
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

/// Trailer of a well-formed internal key; 0 for a malformed one.
pub fn trailer(ikey: &[u8]) -> u64 {
    split_internal(ikey).map(|(_, t)| t).unwrap_or(0)
}

pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    let (ua, ta) = split_internal(a).unwrap_or((a, 0));
    let (ub, tb) = split_internal(b).unwrap_or((b, 0));
    ua.cmp(ub).then_with(|| tb.cmp(&ta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn internal_order_is_user_key_then_newest_first(
            a in proptest::collection::vec(any::<u8>(), 0..6), sa in 0..MAX_SEQ,
            b in proptest::collection::vec(any::<u8>(), 0..6), sb in 0..MAX_SEQ,
        ) {
            let ka = make_internal_key(&a, sa, 1);
            let kb = make_internal_key(&b, sb, 1);
            let expected = a.cmp(&b).then(sb.cmp(&sa));
            prop_assert_eq!(compare_internal(&ka, &kb), expected);
        }
    }
}
