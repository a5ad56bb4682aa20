//! Writes a sorted stream of internal entries into new SST files, dropping what no reader
//! can see any more. Used by compactions and by memtable flushes.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::manifest::{sst_file_name, FileMeta, RangeTombstone};
use crate::sst::{SstBuilder, SstOptions};
use crate::types::{split_internal, unpack_trailer, SeqNo, ValueKind};
use crate::vfs::Vfs;

/// Where and how output files are written.
pub struct OutputSpec<'a> {
    pub vfs: &'a Arc<dyn Vfs>,
    pub dir: &'a Path,
    pub sst: SstOptions,
    /// Output is cut into files of about this size, at user-key boundaries (the versions of
    /// one key never straddle two files, which keeps sorted levels disjoint by user key).
    pub target_file_size_bytes: u64,
    pub alloc_file_number: &'a dyn Fn() -> u64,
}

/// A layer above the engine deciding, during compactions, which entries its own rules hide
/// for good (the table layer: versions beyond a family's MAX_VERSIONS, cells past their TTL),
/// so that their space is reclaimed. Registered per keyspace with
/// `Db::set_compaction_filter`; not persisted.
pub trait CompactionFilter: Send + Sync {
    /// A decider for one compaction; it sees that compaction's entries in key order.
    fn start(&self) -> Box<dyn CompactionFilterRun>;
}

/// The decisions of a [`CompactionFilter`] for one compaction.
pub trait CompactionFilterRun {
    /// Called with the newest version of every user key that is a put (in key order).
    /// `droppable`: no live snapshot sees this version and nothing older of the key lies
    /// below the compaction's output, so dropping it is safe (a snapshot keeps its view,
    /// and no older version resurfaces). Returns `true` to drop it; a
    /// decider that counts versions must count non-droppable ones too.
    fn decide(&mut self, user_key: &[u8], value: &[u8], droppable: bool) -> bool;
}

/// What may be dropped.
pub struct RunFilter {
    /// No reader can ask for a sequence number below this one.
    pub oldest_snapshot: SeqNo,
    /// No older data for these keys exists below the output: tombstones can go.
    pub bottommost: bool,
    /// Range tombstones visible to every reader (seq ≤ `oldest_snapshot`).
    pub range_tombstones: Vec<RangeTombstone>,
    /// The keyspace's compaction filter, if one is registered (compactions only).
    pub user: Option<std::cell::RefCell<Box<dyn CompactionFilterRun>>>,
    /// The newest live snapshot (0 if none): what it sees is never given up to `user`.
    pub newest_snapshot: SeqNo,
}

impl RunFilter {
    fn covered(&self, ukey: &[u8], seq: SeqNo) -> bool {
        self.range_tombstones
            .iter()
            .any(|t| seq < t.seq && t.start.as_slice() <= ukey && ukey < t.end.as_slice())
    }
}

struct Output {
    builder: SstBuilder,
    number: u64,
}

/// Drains `iter` (from its first entry) into new files; returns their metadata in key order.
/// On error the files written so far are removed.
pub fn write_sorted_run(
    iter: &mut dyn InternalIterator,
    out: &OutputSpec<'_>,
    filter: &RunFilter,
) -> Result<Vec<FileMeta>> {
    let mut done = Vec::new();
    let r = write_inner(iter, out, filter, &mut done);
    if r.is_err() {
        for f in &done {
            let _ = out.vfs.remove(&out.dir.join(sst_file_name(f.number)));
        }
    }
    r.map(|()| done)
}

fn write_inner(
    iter: &mut dyn InternalIterator,
    out: &OutputSpec<'_>,
    filter: &RunFilter,
    done: &mut Vec<FileMeta>,
) -> Result<()> {
    let mut current: Option<Output> = None;
    let mut current_ukey: Vec<u8> = Vec::new();
    let mut have_key = false;
    let mut last_seq_for_key = u64::MAX;
    iter.seek_to_first();
    while iter.valid() {
        let ikey = iter.key();
        let Some((ukey, trailer)) = split_internal(ikey) else {
            return Err(Error::corruption(
                out.dir,
                0,
                "compaction input key without trailer",
            ));
        };
        let (seq, kind) = unpack_trailer(trailer);
        let new_key = !have_key || ukey != current_ukey.as_slice();
        if new_key {
            current_ukey.clear();
            current_ukey.extend_from_slice(ukey);
            have_key = true;
            last_seq_for_key = u64::MAX;
        }
        // A newer version of this key is visible to every reader: this one is hidden.
        let shadowed = last_seq_for_key <= filter.oldest_snapshot;
        let dead_tombstone =
            kind == ValueKind::Delete as u8 && seq <= filter.oldest_snapshot && filter.bottommost;
        let mut drop = shadowed || dead_tombstone || filter.covered(ukey, seq);
        if !drop && new_key && kind == ValueKind::Put as u8 {
            if let Some(user) = &filter.user {
                let droppable = seq > filter.newest_snapshot && filter.bottommost;
                drop = user.borrow_mut().decide(ukey, iter.value(), droppable) && droppable;
            }
        }
        last_seq_for_key = seq;
        if !drop {
            if new_key
                && current
                    .as_ref()
                    .is_some_and(|o| o.builder.estimated_file_size() >= out.target_file_size_bytes)
            {
                if let Some(o) = current.take() {
                    done.push(finish(o)?);
                }
            }
            if current.is_none() {
                let number = (out.alloc_file_number)();
                let path = out.dir.join(sst_file_name(number));
                let file = out.vfs.create(&path)?;
                current = Some(Output {
                    builder: SstBuilder::new(file, out.sst.clone()),
                    number,
                });
            }
            if let Some(o) = current.as_mut() {
                o.builder.add(iter.key(), iter.value())?;
            }
        }
        iter.next();
    }
    iter.status()?;
    if let Some(o) = current.take() {
        done.push(finish(o)?);
    }
    Ok(())
}

fn finish(o: Output) -> Result<FileMeta> {
    let s = o.builder.finish()?;
    Ok(FileMeta {
        number: o.number,
        size: s.file_size,
        smallest: s.smallest,
        largest: s.largest,
        min_seq: s.min_seq,
        max_seq: s.max_seq,
        num_entries: s.num_entries,
        num_deletions: s.num_deletions,
        global_seq: None,
    })
}
