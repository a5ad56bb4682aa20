//! `VersionEdit`: one change to the set of live files, encoded as one manifest record.
//!
//! Encoding (see `docs/format/manifest.md`): a sequence of fields, each a varint tag followed
//! by that tag's fields. Tags may come in any order; scalar tags appear at most once. An
//! unknown tag is corruption rather than something to skip: a field this build does not
//! understand could change which files are live, and guessing would lose data.

use std::path::Path;

use crate::coding::{put_bytes, put_varint, Decoder};
use crate::error::{Error, Result};
use crate::options::{Compression, KeyspaceOptions};

/// One SST file of one level of one keyspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// The file's number: its name is `NNNNNN.sst`.
    pub number: u64,
    /// Size in bytes.
    pub size: u64,
    /// Smallest and largest internal keys in the file.
    pub smallest: Vec<u8>,
    /// Largest internal key in the file.
    pub largest: Vec<u8>,
    /// Smallest sequence number in the file.
    pub min_seq: u64,
    /// Largest sequence number in the file.
    pub max_seq: u64,
    /// Entries, tombstones included.
    pub num_entries: u64,
    /// Point tombstones among the entries.
    pub num_deletions: u64,
    /// Set for an ingested file (see `db/ingest.rs`): every entry in it is stored with
    /// sequence number 0 and is read as if written with this one.
    pub global_seq: Option<u64>,
}

/// Deletes every user key in `[start, end)` written with a sequence number below `seq`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RangeTombstone {
    /// First key deleted.
    pub start: Vec<u8>,
    /// Exclusive.
    pub end: Vec<u8>,
    /// Sequence number of the delete: it hides older writes only.
    pub seq: u64,
}

/// One manifest record: changes to the tree's metadata, applied atomically. `None` and
/// empty fields change nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WAL files with a number below this are obsolete (their contents are in SSTs).
    pub log_number: Option<u64>,
    /// The next number to give a new file.
    pub next_file_number: Option<u64>,
    /// The last sequence number given to a write when the edit was made.
    pub last_sequence: Option<u64>,
    /// The next number to give a new keyspace.
    pub next_keyspace_id: Option<u32>,
    /// The epoch of the writer that wrote the edit: only in the snapshots of a database in
    /// an object store, where each writer's open bumps it (docs/object-storage.md).
    pub writer_epoch: Option<u64>,
    /// Where the writer that wrote the edit keeps its WAL (object store only): 0 on its local
    /// disk (`wal=local`), 1 in the bucket (`wal=object`).
    pub wal_placement: Option<u64>,
    /// Keyspaces created: (number, name).
    pub created_keyspaces: Vec<(u32, String)>,
    /// How a keyspace's files are written; recorded with its creation.
    pub keyspace_options: Vec<(u32, KeyspaceOptions)>,
    /// Keyspaces dropped, by number.
    pub dropped_keyspaces: Vec<u32>,
    /// (keyspace, level, file).
    pub added_files: Vec<(u32, u32, FileMeta)>,
    /// (keyspace, level, file number).
    pub deleted_files: Vec<(u32, u32, u64)>,
    /// Range tombstones added: (keyspace, tombstone).
    pub added_range_tombstones: Vec<(u32, RangeTombstone)>,
    /// Range tombstones removed (compacted away): (keyspace, tombstone).
    pub deleted_range_tombstones: Vec<(u32, RangeTombstone)>,
}

/// Field tags. Numbers are part of the on-disk format: never reuse or renumber one.
mod tag {
    pub const LOG_NUMBER: u64 = 1;
    pub const NEXT_FILE_NUMBER: u64 = 2;
    pub const LAST_SEQUENCE: u64 = 3;
    pub const NEXT_KEYSPACE_ID: u64 = 4;
    pub const CREATED_KEYSPACE: u64 = 5;
    pub const DROPPED_KEYSPACE: u64 = 6;
    pub const ADDED_FILE: u64 = 7;
    pub const DELETED_FILE: u64 = 8;
    pub const ADDED_RANGE_TOMBSTONE: u64 = 9;
    pub const DELETED_RANGE_TOMBSTONE: u64 = 10;
    pub const KEYSPACE_OPTIONS: u64 = 11;
    /// An added file with a global sequence number (an ingested file).
    pub const ADDED_INGESTED_FILE: u64 = 12;
    pub const WRITER_EPOCH: u64 = 13;
    pub const WAL_PLACEMENT: u64 = 14;
}

/// Presence bits of a `KEYSPACE_OPTIONS` field.
const KS_OPT_COMPRESSION: u64 = 1;
const KS_OPT_BLOCK_SIZE: u64 = 2;
const KS_OPT_BLOOM: u64 = 4;

fn put_tombstone(dst: &mut Vec<u8>, keyspace: u32, t: &RangeTombstone) {
    put_varint(dst, u64::from(keyspace));
    put_bytes(dst, &t.start);
    put_bytes(dst, &t.end);
    put_varint(dst, t.seq);
}

impl VersionEdit {
    // Long by design: one short block per field tag, in tag order, read side by side with
    // `decode` and the table in docs/format/manifest.md.
    /// The record's payload (docs/format/manifest.md).
    pub fn encode(&self) -> Vec<u8> {
        let mut dst = Vec::new();
        let scalars = [
            (tag::LOG_NUMBER, self.log_number),
            (tag::NEXT_FILE_NUMBER, self.next_file_number),
            (tag::LAST_SEQUENCE, self.last_sequence),
            (tag::NEXT_KEYSPACE_ID, self.next_keyspace_id.map(u64::from)),
        ];
        for (t, v) in scalars {
            if let Some(v) = v {
                put_varint(&mut dst, t);
                put_varint(&mut dst, v);
            }
        }
        for (id, name) in &self.created_keyspaces {
            put_varint(&mut dst, tag::CREATED_KEYSPACE);
            put_varint(&mut dst, u64::from(*id));
            put_bytes(&mut dst, name.as_bytes());
        }
        for (id, o) in &self.keyspace_options {
            put_varint(&mut dst, tag::KEYSPACE_OPTIONS);
            put_varint(&mut dst, u64::from(*id));
            let mut present = 0;
            present |= if o.compression.is_some() {
                KS_OPT_COMPRESSION
            } else {
                0
            };
            present |= if o.block_size_bytes.is_some() {
                KS_OPT_BLOCK_SIZE
            } else {
                0
            };
            present |= if o.bloom_bits_per_key.is_some() {
                KS_OPT_BLOOM
            } else {
                0
            };
            put_varint(&mut dst, present);
            if let Some(c) = o.compression {
                put_varint(&mut dst, c as u64);
            }
            if let Some(b) = o.block_size_bytes {
                put_varint(&mut dst, b as u64);
            }
            if let Some(b) = o.bloom_bits_per_key {
                put_varint(&mut dst, u64::from(b));
            }
        }
        for id in &self.dropped_keyspaces {
            put_varint(&mut dst, tag::DROPPED_KEYSPACE);
            put_varint(&mut dst, u64::from(*id));
        }
        for (ks, level, f) in &self.added_files {
            let t = match f.global_seq {
                Some(_) => tag::ADDED_INGESTED_FILE,
                None => tag::ADDED_FILE,
            };
            put_varint(&mut dst, t);
            put_varint(&mut dst, u64::from(*ks));
            put_varint(&mut dst, u64::from(*level));
            put_varint(&mut dst, f.number);
            put_varint(&mut dst, f.size);
            put_bytes(&mut dst, &f.smallest);
            put_bytes(&mut dst, &f.largest);
            put_varint(&mut dst, f.min_seq);
            put_varint(&mut dst, f.max_seq);
            put_varint(&mut dst, f.num_entries);
            put_varint(&mut dst, f.num_deletions);
            if let Some(g) = f.global_seq {
                put_varint(&mut dst, g);
            }
        }
        for (ks, level, number) in &self.deleted_files {
            put_varint(&mut dst, tag::DELETED_FILE);
            put_varint(&mut dst, u64::from(*ks));
            put_varint(&mut dst, u64::from(*level));
            put_varint(&mut dst, *number);
        }
        for (ks, t) in &self.added_range_tombstones {
            put_varint(&mut dst, tag::ADDED_RANGE_TOMBSTONE);
            put_tombstone(&mut dst, *ks, t);
        }
        for (ks, t) in &self.deleted_range_tombstones {
            put_varint(&mut dst, tag::DELETED_RANGE_TOMBSTONE);
            put_tombstone(&mut dst, *ks, t);
        }
        if let Some(epoch) = self.writer_epoch {
            put_varint(&mut dst, tag::WRITER_EPOCH);
            put_varint(&mut dst, epoch);
        }
        if let Some(placement) = self.wal_placement {
            put_varint(&mut dst, tag::WAL_PLACEMENT);
            put_varint(&mut dst, placement);
        }
        dst
    }

    /// Decodes an edit. `offset` is where `bytes` starts in `path`, so errors point at the
    /// bad field's file offset.
    // Long by design: one match arm per field tag, in tag order (see `encode` and
    // docs/format/manifest.md); every arm checks its own field.
    pub fn decode(bytes: &[u8], path: &Path, offset: u64) -> Result<VersionEdit> {
        let mut r = EditReader {
            d: Decoder::new(bytes),
            path,
            base: offset,
        };
        let mut e = VersionEdit::default();
        while !r.d.is_empty() {
            let at = r.d.position();
            let t = r.varint("tag")?;
            match t {
                tag::LOG_NUMBER => set_once(&mut e.log_number, r.varint("log number")?, &r, at)?,
                tag::NEXT_FILE_NUMBER => set_once(
                    &mut e.next_file_number,
                    r.varint("next file number")?,
                    &r,
                    at,
                )?,
                tag::LAST_SEQUENCE => {
                    set_once(&mut e.last_sequence, r.varint("last sequence")?, &r, at)?
                }
                tag::NEXT_KEYSPACE_ID => {
                    set_once(&mut e.next_keyspace_id, r.u32("next keyspace id")?, &r, at)?
                }
                tag::WRITER_EPOCH => {
                    set_once(&mut e.writer_epoch, r.varint("writer epoch")?, &r, at)?
                }
                tag::WAL_PLACEMENT => {
                    set_once(&mut e.wal_placement, r.varint("wal placement")?, &r, at)?
                }
                tag::CREATED_KEYSPACE => {
                    let id = r.u32("keyspace id")?;
                    let name_at = r.d.position();
                    let name = r.bytes("keyspace name")?;
                    let name = String::from_utf8(name.to_vec())
                        .map_err(|_| r.error_at(name_at, "keyspace name is not UTF-8"))?;
                    e.created_keyspaces.push((id, name));
                }
                tag::DROPPED_KEYSPACE => e.dropped_keyspaces.push(r.u32("keyspace id")?),
                tag::KEYSPACE_OPTIONS => {
                    let id = r.u32("keyspace id")?;
                    let present_at = r.d.position();
                    let present = r.varint("keyspace option bits")?;
                    if present & !(KS_OPT_COMPRESSION | KS_OPT_BLOCK_SIZE | KS_OPT_BLOOM) != 0 {
                        return Err(r.error_at(present_at, "unknown keyspace option bits"));
                    }
                    let mut o = KeyspaceOptions::default();
                    if present & KS_OPT_COMPRESSION != 0 {
                        let at = r.d.position();
                        let c = r.varint("compression")?;
                        o.compression = Some(
                            u8::try_from(c)
                                .ok()
                                .and_then(Compression::from_u8)
                                .ok_or_else(|| r.error_at(at, "unknown compression"))?,
                        );
                    }
                    if present & KS_OPT_BLOCK_SIZE != 0 {
                        let at = r.d.position();
                        let b = r.varint("block size")?;
                        o.block_size_bytes = Some(
                            usize::try_from(b)
                                .ok()
                                .filter(|b| *b > 0)
                                .ok_or_else(|| r.error_at(at, "block size out of range"))?,
                        );
                    }
                    if present & KS_OPT_BLOOM != 0 {
                        o.bloom_bits_per_key = Some(r.u32("bloom bits per key")?);
                    }
                    e.keyspace_options.push((id, o));
                }
                tag::ADDED_FILE | tag::ADDED_INGESTED_FILE => {
                    let ks = r.u32("keyspace id")?;
                    let level = r.u32("level")?;
                    let mut f = FileMeta {
                        number: r.varint("file number")?,
                        size: r.varint("file size")?,
                        smallest: r.bytes("smallest key")?.to_vec(),
                        largest: r.bytes("largest key")?.to_vec(),
                        min_seq: r.varint("min sequence")?,
                        max_seq: r.varint("max sequence")?,
                        num_entries: r.varint("entry count")?,
                        num_deletions: r.varint("deletion count")?,
                        global_seq: None,
                    };
                    if t == tag::ADDED_INGESTED_FILE {
                        f.global_seq = Some(r.varint("global sequence")?);
                    }
                    e.added_files.push((ks, level, f));
                }
                tag::DELETED_FILE => {
                    let ks = r.u32("keyspace id")?;
                    let level = r.u32("level")?;
                    let number = r.varint("file number")?;
                    e.deleted_files.push((ks, level, number));
                }
                tag::ADDED_RANGE_TOMBSTONE => {
                    let t = r.tombstone()?;
                    e.added_range_tombstones.push(t);
                }
                tag::DELETED_RANGE_TOMBSTONE => {
                    let t = r.tombstone()?;
                    e.deleted_range_tombstones.push(t);
                }
                other => return Err(r.error_at(at, &format!("unknown version edit tag {other}"))),
            }
        }
        Ok(e)
    }
}

/// A scalar field written twice means the record is not one this engine wrote.
fn set_once<T>(slot: &mut Option<T>, v: T, r: &EditReader<'_, '_>, at: usize) -> Result<()> {
    if slot.is_some() {
        return Err(r.error_at(at, "version edit field appears twice"));
    }
    *slot = Some(v);
    Ok(())
}

/// A `Decoder` that turns running out of bytes into a `Corruption` naming the field.
struct EditReader<'a, 'p> {
    d: Decoder<'a>,
    path: &'p Path,
    base: u64,
}

impl<'a> EditReader<'a, '_> {
    fn error_at(&self, pos: usize, reason: &str) -> Error {
        Error::corruption(
            self.path,
            self.base.saturating_add(pos as u64),
            format!("version edit: {reason}"),
        )
    }

    fn varint(&mut self, what: &str) -> Result<u64> {
        let at = self.d.position();
        self.d
            .varint()
            .ok_or_else(|| self.error_at(at, &format!("bad or truncated {what}")))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let at = self.d.position();
        let v = self.varint(what)?;
        u32::try_from(v).map_err(|_| self.error_at(at, &format!("{what} {v} out of range")))
    }

    fn bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        let at = self.d.position();
        self.d
            .bytes()
            .ok_or_else(|| self.error_at(at, &format!("bad or truncated {what}")))
    }

    fn tombstone(&mut self) -> Result<(u32, RangeTombstone)> {
        let ks = self.u32("keyspace id")?;
        let t = RangeTombstone {
            start: self.bytes("tombstone start")?.to_vec(),
            end: self.bytes("tombstone end")?.to_vec(),
            seq: self.varint("tombstone sequence")?,
        };
        Ok((ks, t))
    }
}
