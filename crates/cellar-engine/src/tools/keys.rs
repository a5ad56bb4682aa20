//! Internal keys: `user_key ++ (seq << 8 | kind)` as 8 little-endian bytes
//! (`docs/format/sstable.md`).

pub use crate::types::{make_internal_key, split_internal, unpack_trailer, SeqNo, ValueKind};
