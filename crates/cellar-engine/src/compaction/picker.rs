//! Chooses the next compaction. A pure function of the version and the options: no I/O, no
//! clocks, no hidden state, so it can be tested (and simulated) on hand-made versions.
//!
//! Scores: level 0 by file count over `l0_compaction_trigger` (each L0 file overlaps the
//! others, so their number is what costs reads); level n ≥ 1 by bytes over its target, which
//! grows by `level_size_ratio` per level from `level1_size_bytes`, but is never more than
//! 1/`level_size_ratio` of the next non-empty level below (and never below
//! `level1_size_bytes / level_size_ratio²`, so that tiny levels do not churn). That second
//! bound keeps sorted runs of similar size from staying apart: bulk loads stack one run per
//! level above the data they overlap, and with static targets alone none of them would ever
//! be over its target, so every read would merge them all. Level 1, with data below it, is
//! sized instead to rewrite the fewest bytes between L0 and the level below, but at most a
//! third of that level (`level1_target_bytes`). The highest score ≥ 1 wins; ties go to
//! the deeper level, so stacked runs merge from the bottom up (each byte rewritten about
//! once). Why, and what it costs: docs/design/level-target-cap.md.
//! From a sorted level the file with the least overlap in the next level (per byte of its
//! own) is chosen: it rewrites the fewest bytes for the bytes it pushes down. A level with
//! nothing below it moves down whole, as one edit: the next L0 batches then merge into an
//! empty level 1 rather than into the files a one-file move would leave there.

use std::sync::Arc;

use crate::options::Options;
use crate::version::{FileHandle, KeyspaceVersion, Version};

#[derive(Clone)]
pub struct CompactionSpec {
    pub ks: u32,
    pub level: usize,
    pub output_level: usize,
    /// Inputs from `level`.
    pub inputs: Vec<Arc<FileHandle>>,
    /// Inputs from `output_level` that overlap them.
    pub next_inputs: Vec<Arc<FileHandle>>,
}

impl CompactionSpec {
    /// Files with nothing under them move down without being rewritten: files of a sorted
    /// level (disjoint by construction), or every level-0 file when no two overlap (keys
    /// that arrive in order flush to disjoint files, which a merge would only decompress,
    /// copy and recompress; docs/design/level0-trivial-move.md).
    pub fn is_trivial_move(&self) -> bool {
        if self.level == self.output_level || !self.next_inputs.is_empty() {
            return false;
        }
        match self.level {
            0 => !self.inputs.is_empty() && pairwise_disjoint(&self.inputs),
            _ => !self.inputs.is_empty(),
        }
    }

    pub fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileHandle>> {
        self.inputs.iter().chain(self.next_inputs.iter())
    }

    /// Smallest and largest user key over all inputs.
    pub fn key_range(&self) -> (Vec<u8>, Vec<u8>) {
        key_range(self.all_inputs())
    }
}

fn key_range<'a>(files: impl Iterator<Item = &'a Arc<FileHandle>>) -> (Vec<u8>, Vec<u8>) {
    let mut lo: Option<&[u8]> = None;
    let mut hi: Option<&[u8]> = None;
    for f in files {
        let (s, l) = (f.smallest_user_key(), f.largest_user_key());
        lo = Some(lo.map_or(s, |x| x.min(s)));
        hi = Some(hi.map_or(l, |x| x.max(l)));
    }
    (
        lo.unwrap_or_default().to_vec(),
        hi.unwrap_or_default().to_vec(),
    )
}

pub fn level_target_bytes(level: usize, o: &Options) -> u64 {
    let mut t = o.level1_size_bytes;
    for _ in 1..level {
        t = t.saturating_mul(o.level_size_ratio);
    }
    t
}

fn score(k: &KeyspaceVersion, level: usize, o: &Options) -> f64 {
    if level == 0 {
        return k.levels[0].len() as f64 / o.l0_compaction_trigger.max(1) as f64;
    }
    let mut target = level_target_bytes(level, o);
    let ratio = o.level_size_ratio.max(1);
    if let Some(below) = (level + 1..k.levels.len())
        .map(|l| k.level_bytes(l))
        .find(|b| *b > 0)
    {
        let floor = o.level1_size_bytes / ratio / ratio;
        target = if level == 1 {
            level1_target_bytes(below, o).max(floor)
        } else {
            target.min(below / ratio).max(floor)
        };
    }
    k.level_bytes(level) as f64 / target.max(1) as f64
}

/// Level 1 holds at most this share of the level below: the versions it holds over keys
/// that level also holds are space and scan work, up to a third more of each
/// (docs/design/level-target-cap.md).
const LEVEL1_MAX_SHARE_OF_BELOW: u64 = 3;

/// Level 1's target when `below` bytes lie in the next non-empty level under it. An L0
/// compaction merges a batch of about `b` flushed bytes into level 1 and rewrites its `x`
/// bytes (x/b per byte flushed); pushing a byte on from level 1 rewrites the ~below/x bytes
/// under it. Their sum is least at x = sqrt(b × below), and flat around it: a factor of two
/// off in `b` costs 6 %. `b` is the trigger's count of flushes, each taken as half its
/// memtable (with LZ4, a 64 MiB memtable of db_bench's values flushes to ~28 MB). Never
/// more than a third of the level below, which bounds what an overwritten database
/// keeps twice and also makes stacked runs of similar size merge
/// (docs/design/level-target-cap.md).
fn level1_target_bytes(below: u64, o: &Options) -> u64 {
    let memtable = u64::try_from(o.memtable_size_bytes).unwrap_or(u64::MAX);
    let batch = (o.l0_compaction_trigger as u64).saturating_mul(memtable / 2);
    let balanced = ((batch as f64) * (below as f64)).sqrt() as u64;
    balanced.min(below / LEVEL1_MAX_SHARE_OF_BELOW)
}

/// No two of `files` share a user key: sorted by smallest key, each ends before the next
/// begins. (Equal user keys in two files are an overlap: their versions must merge.)
fn pairwise_disjoint(files: &[Arc<FileHandle>]) -> bool {
    let mut sorted: Vec<&Arc<FileHandle>> = files.iter().collect();
    sorted.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
    sorted
        .windows(2)
        .all(|w| w[0].largest_user_key() < w[1].smallest_user_key())
}

/// The most urgent compaction in any keyspace, if any level is over its target.
pub fn pick(v: &Version, o: &Options) -> Option<CompactionSpec> {
    let mut best: Option<(f64, u32, usize)> = None;
    for (id, k) in &v.keyspaces {
        // The last level has no target: it is where data rests.
        for level in 0..k.levels.len().saturating_sub(1) {
            let s = score(k, level, o);
            if s >= 1.0 && best.is_none_or(|(b, _, _)| s >= b) {
                best = Some((s, *id, level));
            }
        }
    }
    let (_, id, level) = best?;
    let k = v.keyspaces.get(&id)?;
    let inputs = if level == 0 || k.levels[level + 1..].iter().all(|l| l.is_empty()) {
        k.levels[level].clone()
    } else {
        vec![least_overlapping_file(k, level)?]
    };
    Some(with_next_inputs(id, k, level, inputs))
}

fn least_overlapping_file(k: &KeyspaceVersion, level: usize) -> Option<Arc<FileHandle>> {
    let mut best: Option<(f64, &Arc<FileHandle>)> = None;
    for f in &k.levels[level] {
        let overlap: u64 = k
            .overlapping(level + 1, f.smallest_user_key(), f.largest_user_key())
            .iter()
            .map(|g| g.meta.size)
            .sum();
        let ratio = overlap as f64 / f.meta.size.max(1) as f64;
        if best.is_none_or(|(b, _)| ratio < b) {
            best = Some((ratio, f));
        }
    }
    best.map(|(_, f)| Arc::clone(f))
}

fn with_next_inputs(
    ks: u32,
    k: &KeyspaceVersion,
    level: usize,
    inputs: Vec<Arc<FileHandle>>,
) -> CompactionSpec {
    let (lo, hi) = key_range(inputs.iter());
    let next_inputs = k.overlapping(level + 1, &lo, &hi);
    CompactionSpec {
        ks,
        level,
        output_level: level + 1,
        inputs,
        next_inputs,
    }
}

/// For `compact_range`: the files of `level` overlapping `[start, end]` (None = unbounded)
/// pushed into `level + 1`.
pub fn pick_range(
    v: &Version,
    ks: u32,
    level: usize,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<CompactionSpec> {
    let k = v.keyspaces.get(&ks)?;
    if level + 1 >= k.levels.len() {
        return None;
    }
    let inputs = files_in_range(k, level, start, end)?;
    // L0 files overlap one another: take them all, or an older version of a key could
    // land below a newer one.
    let inputs = if level == 0 {
        k.levels[0].clone()
    } else {
        inputs
    };
    Some(with_next_inputs(ks, k, level, inputs))
}

/// For `compact_range` on the deepest level: rewrites its files overlapping `[start, end]`
/// in place, which drops what only a bottom-level rewrite can (data under range tombstones,
/// point tombstones, versions snapshots no longer pin).
pub fn pick_bottom_rewrite(
    v: &Version,
    ks: u32,
    level: usize,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<CompactionSpec> {
    let k = v.keyspaces.get(&ks)?;
    let inputs = files_in_range(k, level, start, end)?;
    Some(CompactionSpec {
        ks,
        level,
        output_level: level,
        inputs,
        next_inputs: Vec::new(),
    })
}

/// Files of `level` meeting `[start, end]` (None = unbounded); `None` when there are none.
fn files_in_range(
    k: &KeyspaceVersion,
    level: usize,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<Vec<Arc<FileHandle>>> {
    let files: Vec<_> = k
        .levels
        .get(level)?
        .iter()
        .filter(|f| {
            start.is_none_or(|s| f.largest_user_key() >= s)
                && end.is_none_or(|e| f.smallest_user_key() <= e)
        })
        .cloned()
        .collect();
    (!files.is_empty()).then_some(files)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::cache::BlockCache;
    use crate::manifest::FileMeta;
    use crate::sst::{SstBuilder, SstOptions, SstReader};
    use crate::stats::Counters;
    use crate::types::make_internal_key;
    use crate::version::KeyspaceVersion;
    use crate::vfs::{MemVfs, Vfs};

    /// A file holding `lo` and `hi`, claiming `size` bytes (the picker only reads metadata).
    fn file(vfs: &Arc<dyn Vfs>, number: u64, lo: &str, hi: &str, size: u64) -> Arc<FileHandle> {
        let path = PathBuf::from(format!("/t/{number:06}.sst"));
        vfs.create_dir_all(std::path::Path::new("/t")).expect("dir");
        let w = vfs.create(&path).expect("create");
        let mut b = SstBuilder::new(w, SstOptions::default());
        let (s, l) = (
            make_internal_key(lo.as_bytes(), number, 1),
            make_internal_key(hi.as_bytes(), number, 1),
        );
        b.add(&s, b"v").expect("add");
        if hi > lo {
            b.add(&l, b"v").expect("add");
        }
        b.finish().expect("finish");
        let r = vfs.open_read(&path, false).expect("open");
        let reader = SstReader::open(
            r,
            path.clone(),
            number,
            Arc::new(BlockCache::new(0)),
            Arc::new(Counters::default()),
            false,
        )
        .expect("reader");
        let meta = FileMeta {
            number,
            size,
            smallest: s,
            largest: l,
            min_seq: number,
            max_seq: number,
            num_entries: 2,
            num_deletions: 0,
            global_seq: None,
        };
        Arc::new(FileHandle::new(meta, reader, path, Arc::clone(vfs)))
    }

    fn version(levels: Vec<Vec<Arc<FileHandle>>>) -> Version {
        let mut keyspaces = BTreeMap::new();
        keyspaces.insert(
            0,
            KeyspaceVersion {
                name: Arc::from("default"),
                levels,
                range_tombstones: Vec::new(),
                range_dels: Default::default(),
                options: Default::default(),
            },
        );
        Version { keyspaces }
    }

    fn opts() -> Options {
        Options {
            l0_compaction_trigger: 4,
            // An L0 batch of 4 × 50 bytes: level 1's target is sqrt(200 × below).
            memtable_size_bytes: 100,
            level1_size_bytes: 1000,
            level_size_ratio: 10,
            num_levels: 4,
            ..Options::default()
        }
    }

    fn numbers(files: &[Arc<FileHandle>]) -> Vec<u64> {
        files.iter().map(|f| f.meta.number).collect()
    }

    #[test]
    fn picker_merges_stacked_runs_from_the_bottom_up() {
        // Four overlapping runs of similar size on levels 1..=3 and the bottom, as bulk loads
        // leave them: no level is over its static target, yet they must merge.
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let o = Options {
            level1_size_bytes: 10_000,
            level_size_ratio: 10,
            num_levels: 5,
            ..opts()
        };
        let v = version(vec![
            vec![],
            vec![file(&vfs, 1, "a", "z", 400)],
            vec![file(&vfs, 2, "a", "z", 400)],
            vec![file(&vfs, 3, "a", "z", 400)],
            vec![file(&vfs, 4, "a", "z", 400)],
        ]);
        let spec = pick(&v, &o).expect("stacked runs compact");
        assert_eq!((spec.level, spec.output_level), (3, 4));
        assert_eq!(numbers(&spec.next_inputs), vec![4]);
        // A level small next to the one below it (under a tenth) is left alone.
        let v = version(vec![
            vec![],
            vec![file(&vfs, 5, "a", "z", 190)],
            vec![],
            vec![],
            vec![file(&vfs, 6, "a", "z", 2000)],
        ]);
        assert!(pick(&v, &o).is_none());
    }

    #[test]
    fn level1_is_sized_between_the_l0_batch_and_the_level_below() {
        // L0 batches of 200 bytes over 20 000 in the last level: level 1's target is
        // sqrt(200 × 20 000) = 2 000, twice the cap of a tenth of the level below and under
        // a third of it.
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let with_l1 = |number, size| {
            version(vec![
                vec![],
                vec![file(&vfs, number, "a", "z", size)],
                vec![],
                vec![file(&vfs, 100, "a", "z", 20_000)],
            ])
        };
        assert_eq!(level1_target_bytes(20_000, &opts()), 2_000);
        assert!(pick(&with_l1(1, 1_900), &opts()).is_none());
        let spec = pick(&with_l1(2, 2_100), &opts()).expect("L1 is over its target");
        assert_eq!((spec.level, spec.output_level), (1, 2));
        // Never above a third of the level below: sqrt(200 × 400) = 283 would let an
        // overwritten database keep most of its keys twice.
        assert_eq!(level1_target_bytes(400, &opts()), 133);
        let over_small_l2 = version(vec![
            vec![],
            vec![file(&vfs, 3, "a", "z", 150)],
            vec![],
            vec![file(&vfs, 101, "a", "z", 400)],
        ]);
        let spec = pick(&over_small_l2, &opts()).expect("L1 is over a third of L2");
        assert_eq!((spec.level, spec.output_level), (1, 2));
    }

    #[test]
    fn picker_is_idle_when_every_level_is_under_target() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let v = version(vec![
            vec![file(&vfs, 1, "a", "z", 10)],
            vec![file(&vfs, 2, "a", "m", 500)],
            vec![],
            vec![],
        ]);
        assert!(pick(&v, &opts()).is_none());
    }

    #[test]
    fn picker_takes_all_of_level0_and_the_overlapping_level1_files() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let l0: Vec<_> = (1..=4).map(|n| file(&vfs, n, "c", "f", 10)).collect();
        let v = version(vec![
            l0,
            vec![
                file(&vfs, 10, "a", "b", 100),
                file(&vfs, 11, "d", "e", 100),
                file(&vfs, 12, "x", "y", 100),
            ],
            vec![],
            vec![],
        ]);
        let spec = pick(&v, &opts()).expect("L0 is at its trigger");
        assert_eq!((spec.level, spec.output_level), (0, 1));
        assert_eq!(numbers(&spec.inputs).len(), 4);
        assert_eq!(numbers(&spec.next_inputs), vec![11]);
        assert!(!spec.is_trivial_move());
    }

    #[test]
    fn picker_prefers_the_level_file_with_least_overlap_per_byte() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        // L1 holds 1500 bytes against a 1000-byte target.
        let v = version(vec![
            vec![],
            vec![file(&vfs, 1, "a", "c", 500), file(&vfs, 2, "m", "p", 1000)],
            vec![file(&vfs, 3, "a", "b", 4000), file(&vfs, 4, "n", "o", 100)],
            vec![],
        ]);
        let spec = pick(&v, &opts()).expect("L1 is over target");
        assert_eq!((spec.level, spec.output_level), (1, 2));
        // File 2 rewrites 100 bytes below per 1000 of its own; file 1, 4000 per 500.
        assert_eq!(numbers(&spec.inputs), vec![2]);
        assert_eq!(numbers(&spec.next_inputs), vec![4]);
        // The same version always gives the same answer.
        let again = pick(&v, &opts()).expect("again");
        assert_eq!(numbers(&again.inputs), vec![2]);
    }

    #[test]
    fn picker_moves_a_file_with_nothing_below_without_rewriting_it() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let v = version(vec![
            vec![],
            vec![file(&vfs, 1, "a", "c", 2000)],
            vec![file(&vfs, 2, "x", "z", 10)],
            vec![],
        ]);
        let spec = pick(&v, &opts()).expect("L1 is over target");
        assert!(spec.is_trivial_move());
        assert_eq!(level_target_bytes(3, &opts()), 100_000);
    }

    #[test]
    fn a_level_with_nothing_below_moves_down_whole() {
        // Level 1 alone, over its static target of 1000 bytes: all of it moves to level 2 in
        // one edit, and the next L0 batches merge into an empty level 1 instead of
        // rewriting the files a one-file move would have left there.
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let l1 = || vec![file(&vfs, 1, "a", "c", 600), file(&vfs, 2, "d", "f", 600)];
        let v = version(vec![vec![], l1(), vec![], vec![]]);
        let spec = pick(&v, &opts()).expect("L1 is over target");
        assert_eq!((spec.level, spec.output_level), (1, 2));
        assert_eq!(numbers(&spec.inputs), vec![1, 2]);
        assert!(spec.next_inputs.is_empty());
        assert!(spec.is_trivial_move());
        // With data further down, one file goes at a time, the least overlapping first.
        let v = version(vec![
            vec![],
            l1(),
            vec![file(&vfs, 3, "a", "b", 2000)],
            vec![],
        ]);
        let spec = pick(&v, &opts()).expect("L1 is over a third of level 2");
        assert_eq!(numbers(&spec.inputs), vec![2]);
        assert!(spec.is_trivial_move());
    }

    #[test]
    fn disjoint_level0_files_with_nothing_below_move_without_rewriting() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        // Keys that arrived in order: four disjoint files above everything in L1.
        let disjoint = || {
            vec![
                file(&vfs, 4, "m", "n", 10),
                file(&vfs, 3, "k", "l", 10),
                file(&vfs, 2, "g", "h", 10),
                file(&vfs, 1, "c", "f", 10),
            ]
        };
        let l0 = disjoint();
        let v = version(vec![
            l0,
            vec![file(&vfs, 10, "a", "b", 100)],
            vec![],
            vec![],
        ]);
        let spec = pick(&v, &opts()).expect("L0 is at its trigger");
        assert_eq!((spec.level, spec.output_level), (0, 1));
        assert!(spec.next_inputs.is_empty());
        assert!(spec.is_trivial_move());

        // Two files sharing one user key must merge (their versions interleave).
        let l0 = vec![
            file(&vfs, 4, "m", "n", 10),
            file(&vfs, 3, "k", "m", 10),
            file(&vfs, 2, "g", "h", 10),
            file(&vfs, 1, "c", "f", 10),
        ];
        let v = version(vec![l0, vec![], vec![], vec![]]);
        let spec = pick(&v, &opts()).expect("L0 is at its trigger");
        assert!(!spec.is_trivial_move());

        // Disjoint files, one of them over a level-1 file: merge with it.
        let l0 = disjoint();
        let v = version(vec![
            l0,
            vec![file(&vfs, 10, "d", "e", 100)],
            vec![],
            vec![],
        ]);
        let spec = pick(&v, &opts()).expect("L0 is at its trigger");
        assert_eq!(numbers(&spec.next_inputs), vec![10]);
        assert!(!spec.is_trivial_move());
    }

    #[test]
    fn bottom_rewrite_stays_on_its_level_and_is_never_a_move() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let v = version(vec![
            vec![],
            vec![],
            vec![],
            vec![file(&vfs, 1, "a", "c", 10)],
        ]);
        let spec = pick_bottom_rewrite(&v, 0, 3, None, None).expect("one file");
        assert_eq!((spec.level, spec.output_level), (3, 3));
        assert!(!spec.is_trivial_move());
        assert!(pick_bottom_rewrite(&v, 0, 3, Some(b"d"), None).is_none());
    }
}
