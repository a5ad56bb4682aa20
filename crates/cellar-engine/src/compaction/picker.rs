//! Chooses the next compaction. A pure function of the version and the options: no I/O, no
//! clocks, no hidden state, so it can be tested (and simulated) on hand-made versions.
//!
//! Scores: level 0 by file count over `l0_compaction_trigger` (each L0 file overlaps the
//! others, so their number is what costs reads); level n ≥ 1 by bytes over its target, which
//! grows by `level_size_ratio` per level from `level1_size_bytes`. The highest score ≥ 1 wins.
//! From a sorted level the file with the least overlap in the next level (per byte of its
//! own) is chosen: it rewrites the fewest bytes for the bytes it pushes down.

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
    pub score: f64,
}

impl CompactionSpec {
    /// One file with nothing under it moves down without being rewritten.
    pub fn is_trivial_move(&self) -> bool {
        self.level > 0
            && self.level != self.output_level
            && self.inputs.len() == 1
            && self.next_inputs.is_empty()
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
        k.levels[0].len() as f64 / o.l0_compaction_trigger.max(1) as f64
    } else {
        k.level_bytes(level) as f64 / level_target_bytes(level, o).max(1) as f64
    }
}

/// The most urgent compaction in any keyspace, if any level is over its target.
pub fn pick(v: &Version, o: &Options) -> Option<CompactionSpec> {
    let mut best: Option<(f64, u32, usize)> = None;
    for (id, k) in &v.keyspaces {
        // The last level has no target: it is where data rests.
        for level in 0..k.levels.len().saturating_sub(1) {
            let s = score(k, level, o);
            if s >= 1.0 && best.is_none_or(|(b, _, _)| s > b) {
                best = Some((s, *id, level));
            }
        }
    }
    let (s, id, level) = best?;
    let k = v.keyspaces.get(&id)?;
    let inputs = if level == 0 {
        k.levels[0].clone()
    } else {
        vec![least_overlapping_file(k, level)?]
    };
    Some(with_next_inputs(id, k, level, inputs, s))
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
    score: f64,
) -> CompactionSpec {
    let (lo, hi) = key_range(inputs.iter());
    let next_inputs = k.overlapping(level + 1, &lo, &hi);
    CompactionSpec {
        ks,
        level,
        output_level: level + 1,
        inputs,
        next_inputs,
        score,
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
    let inputs: Vec<_> = k.levels[level]
        .iter()
        .filter(|f| {
            start.is_none_or(|s| f.largest_user_key() >= s)
                && end.is_none_or(|e| f.smallest_user_key() <= e)
        })
        .cloned()
        .collect();
    if inputs.is_empty() {
        return None;
    }
    // L0 files overlap one another: take them all, or an older version of a key could
    // land below a newer one.
    let inputs = if level == 0 {
        k.levels[0].clone()
    } else {
        inputs
    };
    Some(with_next_inputs(ks, k, level, inputs, 0.0))
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
    let inputs: Vec<_> = k
        .levels
        .get(level)?
        .iter()
        .filter(|f| {
            start.is_none_or(|s| f.largest_user_key() >= s)
                && end.is_none_or(|e| f.smallest_user_key() <= e)
        })
        .cloned()
        .collect();
    if inputs.is_empty() {
        return None;
    }
    Some(CompactionSpec {
        ks,
        level,
        output_level: level,
        inputs,
        next_inputs: Vec::new(),
        score: 0.0,
    })
}
