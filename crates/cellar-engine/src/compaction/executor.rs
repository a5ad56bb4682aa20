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
    /// User-key ranges (smallest, largest) of the files in the level under the output level
    /// that the output overlaps, in key order. Past half its target size, an output file is
    /// cut where the keys cross from one of these files to the next, so that pushing it down
    /// later rewrites whole files of that level rather than also the part-covered ones at its
    /// two ends (docs/design/grandparent-cuts.md). Empty: cut by size only.
    pub grandparents: &'a [(Vec<u8>, Vec<u8>)],
    pub alloc_file_number: &'a dyn Fn() -> u64,
}

/// Where the output's keys stand among the grandparent files: in the gap before file `i`
/// (position 2i) or inside it (2i + 1). Keys arrive in order, so the cursor only moves on.
struct GrandparentCursor<'a> {
    files: &'a [(Vec<u8>, Vec<u8>)],
    index: usize,
    position: usize,
}

impl<'a> GrandparentCursor<'a> {
    fn new(files: &'a [(Vec<u8>, Vec<u8>)]) -> Self {
        GrandparentCursor {
            files,
            index: 0,
            position: 0,
        }
    }

    /// Moves to `ukey` (not below the last key given); true if it left the gap or the file
    /// the previous key was in.
    fn crossed(&mut self, ukey: &[u8]) -> bool {
        while self
            .files
            .get(self.index)
            .is_some_and(|(_, largest)| largest.as_slice() < ukey)
        {
            self.index += 1;
        }
        let inside = self
            .files
            .get(self.index)
            .is_some_and(|(smallest, _)| smallest.as_slice() <= ukey);
        let position = 2 * self.index + usize::from(inside);
        let moved = position != self.position;
        self.position = position;
        moved
    }
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
    let mut grandparents = GrandparentCursor::new(out.grandparents);
    let mut crossed = false;
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
            // Remembered until the next written key: a dropped key between two written ones
            // may be the one that crossed.
            crossed |= grandparents.crossed(ukey);
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
                    .is_some_and(|o| cut_before(o, out, crossed))
            {
                if let Some(o) = current.take() {
                    done.push(finish(o)?);
                }
            }
            if new_key {
                crossed = false;
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

/// Whether the output file ends before the next user key: at its target size, or at half
/// of it where the keys cross a grandparent file's boundary.
fn cut_before(o: &Output, out: &OutputSpec<'_>, crossed_grandparent: bool) -> bool {
    let size = o.builder.estimated_file_size();
    size >= out.target_file_size_bytes
        || (crossed_grandparent && size >= out.target_file_size_bytes / 2)
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::iter::VecIterator;
    use crate::options::Compression;
    use crate::types::make_internal_key;
    use crate::vfs::MemVfs;

    fn key(i: u32) -> Vec<u8> {
        format!("k{i:04}").into_bytes()
    }

    /// Writes keys k0000..k0999 (about 110 bytes each, uncompressed) with a 20 000-byte
    /// target; returns each output file's first and last key index.
    fn cut(grandparents: &[(Vec<u8>, Vec<u8>)]) -> Vec<(u32, u32)> {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        vfs.create_dir_all(Path::new("/o")).expect("dir");
        let entries = (0..1000)
            .map(|i| {
                (
                    make_internal_key(&key(i), 1, ValueKind::Put as u8),
                    vec![b'v'; 100],
                )
            })
            .collect();
        let next = AtomicU64::new(1);
        let out = OutputSpec {
            vfs: &vfs,
            dir: Path::new("/o"),
            sst: SstOptions {
                compression: Compression::None,
                bloom_bits_per_key: 0,
                ..SstOptions::default()
            },
            target_file_size_bytes: 20_000,
            grandparents,
            alloc_file_number: &|| next.fetch_add(1, Ordering::Relaxed),
        };
        let filter = RunFilter {
            oldest_snapshot: 100,
            bottommost: false,
            range_tombstones: Vec::new(),
            user: None,
            newest_snapshot: 0,
        };
        let index = |ikey: &[u8]| -> u32 {
            let (ukey, _) = split_internal(ikey).expect("internal key");
            std::str::from_utf8(&ukey[1..])
                .expect("utf8")
                .parse()
                .expect("number")
        };
        write_sorted_run(&mut VecIterator::new(entries), &out, &filter)
            .expect("write")
            .iter()
            .map(|f| (index(&f.smallest), index(&f.largest)))
            .collect()
    }

    #[test]
    fn output_is_cut_at_grandparent_boundaries_past_half_its_target() {
        // By size alone a file ends after ~180 keys, inside whatever lies below.
        let by_size = cut(&[]);
        assert!(by_size.len() < 8, "{by_size:?}");
        assert!(
            by_size.iter().any(|(first, _)| first % 50 != 0),
            "{by_size:?}"
        );
        // Grandparent files of 50 keys each: a file ends where one of them does, once it
        // holds ~90 keys (half its target), so each covers two of them whole.
        let below: Vec<_> = (0..20).map(|g| (key(g * 50), key(g * 50 + 49))).collect();
        let aligned = cut(&below);
        let expected: Vec<_> = (0..10).map(|f| (f * 100, f * 100 + 99)).collect();
        assert_eq!(aligned, expected);
        // Entering a grandparent file from a gap is a boundary too: files of 30 keys with
        // 20-key gaps between them.
        let gapped: Vec<_> = (0..20)
            .map(|g| (key(g * 50 + 20), key(g * 50 + 49)))
            .collect();
        for (first, _) in cut(&gapped).iter().skip(1) {
            assert!(first % 50 == 0 || first % 50 == 20, "{first}");
        }
    }
}
