//! `WriteBatch`: writes applied atomically, possibly across keyspaces.
//!
//! The batch is kept in its WAL encoding from the start (see `docs/format/write_batch.md`), so
//! committing it costs one copy into the log buffer:
//!
//! ```text
//! record  := seq:u64le count:u32le op*
//! op      := 0x01 keyspace:varint key:bytes value:bytes      (put)
//!          | 0x00 keyspace:varint key:bytes                  (delete)
//!          | 0x02 keyspace:varint start:bytes end:bytes      (delete_range, end exclusive)
//!          | 0x03                                            (ingested: the sequence number
//!                                                             went to ingested files)
//! bytes   := len:varint byte*
//! ```
//! The i-th op gets sequence number `seq + i`.

use std::path::Path;

use crate::coding::{put_bytes, put_u32, put_u64, put_varint, Decoder};
use crate::error::{Error, Result};
use crate::types::{SeqNo, MAX_KEY_LEN, MAX_VALUE_LEN};

/// A handle on one keyspace (an independent sorted tree). Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Keyspace {
    pub(crate) id: u32,
    pub(crate) name: std::sync::Arc<str>,
}

impl Keyspace {
    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The keyspace's number, as stored in WAL records and the manifest.
    pub fn id(&self) -> u32 {
        self.id
    }
}

pub const OP_DELETE: u8 = 0;
pub const OP_PUT: u8 = 1;
pub const OP_DELETE_RANGE: u8 = 2;
pub const OP_INGESTED: u8 = 3;
pub const BATCH_HEADER_LEN: usize = 12;

/// Writes to apply atomically with [`Db::write`](crate::Db::write): puts, deletes and range
/// deletes, over any keyspaces, in order.
#[derive(Debug, Clone)]
pub struct WriteBatch {
    /// Header (sequence filled in at commit) followed by the ops.
    rep: Vec<u8>,
    count: u32,
    /// The first invalid argument met while building; `Db::write` reports it.
    invalid: Option<String>,
    /// Keyspaces the ops touch (checked against the live ones at commit).
    keyspace_ids: Vec<u32>,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        let mut rep = Vec::with_capacity(64);
        rep.resize(BATCH_HEADER_LEN, 0);
        WriteBatch {
            rep,
            count: 0,
            invalid: None,
            keyspace_ids: Vec::new(),
        }
    }

    /// An empty batch with room for `bytes` of encoded operations.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut b = WriteBatch::new();
        b.rep.reserve(bytes);
        b
    }

    fn note_keyspace(&mut self, ks: &Keyspace) {
        if !self.keyspace_ids.contains(&ks.id) {
            self.keyspace_ids.push(ks.id);
        }
    }

    pub(crate) fn keyspace_ids(&self) -> &[u32] {
        &self.keyspace_ids
    }

    fn check_key(&mut self, key: &[u8]) {
        if key.len() > MAX_KEY_LEN && self.invalid.is_none() {
            self.invalid = Some(format!(
                "key of {} bytes exceeds the limit of {MAX_KEY_LEN} bytes",
                key.len()
            ));
        }
    }

    /// Sets `key` to `value` in `ks`. An oversized key or value makes the whole batch fail at
    /// [`Db::write`](crate::Db::write) with `InvalidArgument`.
    pub fn put(&mut self, ks: &Keyspace, key: &[u8], value: &[u8]) {
        self.check_key(key);
        if value.len() > MAX_VALUE_LEN && self.invalid.is_none() {
            self.invalid = Some(format!(
                "value of {} bytes exceeds the limit of {MAX_VALUE_LEN} bytes",
                value.len()
            ));
        }
        self.note_keyspace(ks);
        self.rep.push(OP_PUT);
        put_varint(&mut self.rep, u64::from(ks.id));
        put_bytes(&mut self.rep, key);
        put_bytes(&mut self.rep, value);
        self.count += 1;
    }

    /// Deletes `key` from `ks`.
    pub fn delete(&mut self, ks: &Keyspace, key: &[u8]) {
        self.check_key(key);
        self.note_keyspace(ks);
        self.rep.push(OP_DELETE);
        put_varint(&mut self.rep, u64::from(ks.id));
        put_bytes(&mut self.rep, key);
        self.count += 1;
    }

    /// Deletes every key in `[start, end)`.
    pub fn delete_range(&mut self, ks: &Keyspace, start: &[u8], end: &[u8]) {
        self.check_key(start);
        self.check_key(end);
        if start > end && self.invalid.is_none() {
            self.invalid = Some("delete_range start is greater than end".to_string());
        }
        self.note_keyspace(ks);
        self.rep.push(OP_DELETE_RANGE);
        put_varint(&mut self.rep, u64::from(ks.id));
        put_bytes(&mut self.rep, start);
        put_bytes(&mut self.rep, end);
        self.count += 1;
    }

    /// The number of operations.
    pub fn len(&self) -> usize {
        self.count as usize
    }
    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Encoded size in bytes (what the WAL will hold).
    pub fn size_bytes(&self) -> usize {
        self.rep.len()
    }
    /// Removes every operation, keeping the allocation.
    pub fn clear(&mut self) {
        self.rep.truncate(BATCH_HEADER_LEN);
        self.count = 0;
        self.invalid = None;
        self.keyspace_ids.clear();
    }

    pub(crate) fn validate(&self) -> Result<()> {
        match &self.invalid {
            Some(msg) => Err(Error::InvalidArgument(msg.clone())),
            None => Ok(()),
        }
    }

    /// Appends the ops of `other` (group commit merges batches into one record).
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// Stamps the first sequence number and returns the encoded record.
    pub(crate) fn encode_with_seq(&mut self, seq: SeqNo) -> &[u8] {
        let mut header = Vec::with_capacity(BATCH_HEADER_LEN);
        put_u64(&mut header, seq);
        put_u32(&mut header, self.count);
        self.rep[..BATCH_HEADER_LEN].copy_from_slice(&header);
        &self.rep
    }

    /// The WAL record of an ingestion: one `Ingested` op taking one sequence number.
    pub(crate) fn ingested_marker() -> Self {
        let mut b = WriteBatch::new();
        b.rep.push(OP_INGESTED);
        b.count = 1;
        b
    }

    /// The synced-predecessors record (`db::wal`): no ops, so it takes no sequence number.
    pub(crate) fn synced_predecessors() -> Self {
        WriteBatch::new()
    }

    pub(crate) fn ops(&self) -> BatchOps<'_> {
        BatchOps {
            d: Decoder::new(&self.rep[BATCH_HEADER_LEN..]),
        }
    }
}

/// One decoded operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Sets `key` to `value`.
    Put {
        /// The keyspace's number.
        ks: u32,
        /// The user key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
    },
    /// Deletes `key`.
    Delete {
        /// The keyspace's number.
        ks: u32,
        /// The user key.
        key: &'a [u8],
    },
    /// Deletes every key in `[start, end)`.
    DeleteRange {
        /// The keyspace's number.
        ks: u32,
        /// First key deleted.
        start: &'a [u8],
        /// End of the range (exclusive).
        end: &'a [u8],
    },
    /// Holds the place of a sequence number given to ingested files, so that the WAL's
    /// sequence numbers stay contiguous (recovery treats a gap as a lost WAL).
    Ingested,
}

pub struct BatchOps<'a> {
    d: Decoder<'a>,
}

impl<'a> BatchOps<'a> {
    /// `None` at the end; `Some(Err(()))` on malformed bytes.
    fn next_op(&mut self) -> Option<std::result::Result<BatchOp<'a>, ()>> {
        if self.d.is_empty() {
            return None;
        }
        let op = (|| {
            let tag = self.d.u8()?;
            if tag == OP_INGESTED {
                return Some(BatchOp::Ingested);
            }
            let ks = u32::try_from(self.d.varint()?).ok()?;
            let a = self.d.bytes()?;
            match tag {
                OP_PUT => Some(BatchOp::Put {
                    ks,
                    key: a,
                    value: self.d.bytes()?,
                }),
                OP_DELETE => Some(BatchOp::Delete { ks, key: a }),
                OP_DELETE_RANGE => Some(BatchOp::DeleteRange {
                    ks,
                    start: a,
                    end: self.d.bytes()?,
                }),
                _ => None,
            }
        })();
        Some(op.ok_or(()))
    }
}

impl<'a> Iterator for BatchOps<'a> {
    type Item = std::result::Result<BatchOp<'a>, ()>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_op()
    }
}

/// A batch read back from the WAL.
pub struct DecodedBatch<'a> {
    /// Sequence number of the first operation; the others follow it.
    pub seq: SeqNo,
    /// The number of operations, as the header says.
    pub count: u32,
    /// The operations, in order.
    pub ops: Vec<BatchOp<'a>>,
}

impl DecodedBatch<'_> {
    /// Whether this is the synced-predecessors record a WAL gets at its first sync: every
    /// older WAL was synced whole before it (docs/format/write_batch.md).
    pub fn is_synced_predecessors(&self) -> bool {
        self.count == 0 && self.ops.is_empty()
    }
}

/// Decodes a WAL record; `offset` locates it in `path` for the error message.
pub fn decode_batch<'a>(rec: &'a [u8], path: &Path, offset: u64) -> Result<DecodedBatch<'a>> {
    let bad = |why: &str| Error::corruption(path, offset, format!("write batch: {why}"));
    if rec.len() < BATCH_HEADER_LEN {
        return Err(bad("shorter than its header"));
    }
    let mut d = Decoder::new(rec);
    let seq = d.u64().ok_or_else(|| bad("truncated header"))?;
    let count = d.u32().ok_or_else(|| bad("truncated header"))?;
    let mut ops = Vec::with_capacity(count.min(1 << 16) as usize);
    let mut it = BatchOps {
        d: Decoder::new(&rec[BATCH_HEADER_LEN..]),
    };
    for op in &mut it {
        ops.push(op.map_err(|()| bad("malformed op"))?);
    }
    if ops.len() != count as usize {
        return Err(bad(&format!(
            "header says {count} ops, record holds {}",
            ops.len()
        )));
    }
    Ok(DecodedBatch { seq, count, ops })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ks(id: u32) -> Keyspace {
        Keyspace {
            id,
            name: "t".into(),
        }
    }

    #[test]
    fn batch_round_trips_through_its_encoding() {
        let mut b = WriteBatch::new();
        b.put(&ks(0), b"a", b"1");
        b.delete(&ks(3), b"b");
        b.delete_range(&ks(7), b"c", b"d");
        let rec = b.encode_with_seq(42).to_vec();
        let d = decode_batch(&rec, Path::new("x.wal"), 0).expect("decodes");
        assert_eq!(d.seq, 42);
        assert_eq!(
            d.ops,
            vec![
                BatchOp::Put {
                    ks: 0,
                    key: b"a",
                    value: b"1"
                },
                BatchOp::Delete { ks: 3, key: b"b" },
                BatchOp::DeleteRange {
                    ks: 7,
                    start: b"c",
                    end: b"d"
                },
            ]
        );
    }

    #[test]
    fn batch_with_oversized_key_is_invalid() {
        let mut b = WriteBatch::new();
        b.put(&ks(0), &vec![0u8; MAX_KEY_LEN + 1], b"v");
        assert!(matches!(b.validate(), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn truncated_batch_is_corruption_not_panic() {
        let mut b = WriteBatch::new();
        b.put(&ks(0), b"key", b"value");
        let rec = b.encode_with_seq(1).to_vec();
        for cut in 0..rec.len() {
            assert!(decode_batch(&rec[..cut], Path::new("w"), 0).is_err());
        }
    }
}
