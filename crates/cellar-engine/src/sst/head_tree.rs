//! The search heads of a resident index laid out as a static 16-ary tree of 128-byte nodes.
//!
//! An index lookup first narrows its search by 8-byte "heads" (a monotonic integer image of
//! each separator, see `IndexBlock::head`). A binary search over one head per entry costs
//! ~log2(entries) dependent loads, most of them cache misses once the index no longer fits
//! in the CPU cache (a 64 MiB file of 4 KiB blocks has 16 K entries). Here level 0 holds every
//! entry's head, and each level above holds every 16th head of the one below, until one node
//! is left. A search reads one 16-head node per level, each a single aligned 128-byte
//! read (two adjacent cache lines, which the CPU fetches together), and counts the heads below
//! the target with branch-free compares: 3 nodes for up to 4 K entries, 4 up to 64 K, of
//! which the upper ones stay cached because every lookup in the file reads them.
//!
//! Nodes are padded with `u64::MAX`; it is never counted as below a target, and results are
//! clamped to the number of heads.

/// Heads per node: 16 × 8 bytes is two cache lines.
const FANOUT: usize = 16;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Node([u64; FANOUT]);

const PAD: Node = Node([u64::MAX; FANOUT]);

pub struct HeadTree {
    len: usize,
    /// `levels[0]` holds every head; `levels[l + 1]` every 16th of `levels[l]`; the last
    /// level is a single node.
    levels: Vec<Vec<Node>>,
    /// Heads on each level (the rest of its last node is padding).
    level_lens: Vec<usize>,
}

impl HeadTree {
    /// `heads` must be non-decreasing.
    pub fn new(heads: &[u64]) -> HeadTree {
        let mut levels = Vec::new();
        let mut level_lens = Vec::new();
        let mut level: Vec<u64> = heads.to_vec();
        loop {
            level_lens.push(level.len());
            let nodes: Vec<Node> = level
                .chunks(FANOUT)
                .map(|c| {
                    let mut n = PAD;
                    n.0[..c.len()].copy_from_slice(c);
                    n
                })
                .collect();
            let done = nodes.len() <= 1;
            levels.push(if nodes.is_empty() { vec![PAD] } else { nodes });
            if done {
                break;
            }
            level = level.iter().step_by(FANOUT).copied().collect();
        }
        HeadTree {
            len: heads.len(),
            levels,
            level_lens,
        }
    }

    pub fn resident_bytes(&self) -> usize {
        self.levels.iter().map(|l| l.len() * FANOUT * 8).sum()
    }

    /// Head `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<u64> {
        if i >= self.len {
            return None;
        }
        self.levels[0].get(i / FANOUT).map(|n| n.0[i % FANOUT])
    }

    /// The first position whose head is `>= target` (`len` when there is none).
    pub fn lower_bound(&self, target: u64) -> usize {
        self.descend(|h| h < target, 0)
    }

    /// The first position whose head is `> target` (`len` when there is none).
    pub fn upper_bound(&self, target: u64) -> usize {
        self.descend(|h| h <= target, self.len)
    }

    /// Both bounds: the positions whose head equals `target` are `lower..upper`. Usually no
    /// head equals it and the second bound costs one compare in the node already loaded.
    pub fn equal_range(&self, target: u64) -> (usize, usize) {
        let lower = self.lower_bound(target);
        match self.get(lower) {
            Some(h) if h == target => (lower, self.upper_bound(target)),
            _ => (lower, lower),
        }
    }

    /// The first position where `below` turns false (it must be true on a prefix of the
    /// heads). `widest` is returned if the levels were ever inconsistent: the bound that
    /// makes the caller compare whole separators instead of trusting the heads.
    fn descend(&self, below: impl Fn(u64) -> bool, widest: usize) -> usize {
        self.position_on(0, below).unwrap_or(widest)
    }

    /// The first position on level `bottom` where `below` turns false, found from the top
    /// down. Node `c` of level `l + 1` holds heads `16c .. 16c + 16` of level `l + 1`, and
    /// head `j` of level `l + 1` is head `16j` of level `l`: if the first head of level
    /// `l + 1` that is not below is `p`, the answer on level `l` lies in `16(p-1)+1 ..= 16p`,
    /// within node `p - 1` or just after it. `None` only if the levels were inconsistent
    /// (`p <= len` of the level above, so node `p - 1` always exists below it).
    fn position_on(&self, bottom: usize, below: impl Fn(u64) -> bool) -> Option<usize> {
        let mut p = 0;
        let mut node = 0;
        let levels = self.levels.iter().zip(&self.level_lens).skip(bottom);
        for (level, &len) in levels.rev() {
            let n = level.get(node)?;
            // Padding counts as below only for a target of `u64::MAX`: clamp it away.
            p = (node * FANOUT + count_below(n, &below)).min(len);
            if p == 0 {
                return Some(0);
            }
            node = p - 1;
        }
        Some(p)
    }

    /// Starts loading the level-0 node a search for `target` will read last, after reading
    /// the (usually cached) levels above it, and returns the positions that node covers:
    /// the lower bound is among them or just after them.
    pub fn prefetch(&self, target: u64) -> std::ops::Range<usize> {
        let node = self
            .position_on(1, |h| h < target)
            .unwrap_or(0)
            .saturating_sub(1);
        if let Some(n) = self.levels[0].get(node) {
            super::prefetch::read(n as *const Node);
        }
        node * FANOUT..((node + 1) * FANOUT).min(self.len)
    }
}

/// How many heads of `node` are below (`below` is true on a prefix of the node): a branch-free
/// binary search, five compares where counting takes sixteen (the baseline x86-64 target has no
/// 64-bit vector compare). The search's four steps find the count up to 15, and the last head
/// adds the sixteenth; reading it first starts the load of the node's second cache line beside
/// the first step's, so a node not in the CPU cache still costs one miss, not two in a row.
#[inline]
fn count_below(node: &Node, below: &impl Fn(u64) -> bool) -> usize {
    let last = usize::from(below(node.0[FANOUT - 1]));
    let mut lo = 0;
    for half in [8, 4, 2, 1] {
        lo += usize::from(below(node.0[lo + half - 1])) * half;
    }
    lo + last
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(heads: &[u64], target: u64) {
        let t = HeadTree::new(heads);
        let lower = heads.partition_point(|&h| h < target);
        let upper = heads.partition_point(|&h| h <= target);
        assert_eq!(t.lower_bound(target), lower, "lower {target} in {heads:?}");
        assert_eq!(t.upper_bound(target), upper, "upper {target} in {heads:?}");
        assert_eq!(t.equal_range(target), (lower, upper));
        // The node `prefetch` loads is the one the search ends in.
        let w = t.prefetch(target);
        assert!(
            w.contains(&lower) || lower == w.end,
            "{lower} outside {w:?}"
        );
    }

    #[test]
    fn empty_and_tiny() {
        for target in [0, 1, u64::MAX] {
            check(&[], target);
            check(&[5], target);
            check(&[u64::MAX], target);
            check(&[0, 0, u64::MAX, u64::MAX], target);
        }
        assert_eq!(HeadTree::new(&[]).get(0), None);
    }

    #[test]
    fn every_size_around_node_boundaries() {
        for n in [15, 16, 17, 31, 32, 33, 255, 256, 257, 4095, 4096, 4097] {
            let heads: Vec<u64> = (0..n as u64).map(|i| i * 10).collect();
            let t = HeadTree::new(&heads);
            for target in (0..n as u64 * 10 + 20).step_by(5) {
                check(&heads, target);
            }
            assert_eq!(t.get(n - 1), Some((n as u64 - 1) * 10));
            assert_eq!(t.get(n), None);
        }
    }

    #[test]
    fn long_runs_of_equal_heads() {
        let mut heads = vec![3u64; 300];
        heads.extend(std::iter::repeat_n(7, 500));
        heads.push(u64::MAX);
        for target in [0, 3, 4, 7, 8, u64::MAX - 1, u64::MAX] {
            check(&heads, target);
        }
    }

    proptest! {
        #[test]
        fn matches_partition_point(
            mut heads in proptest::collection::vec(any::<u64>().prop_map(|h| h % 5000), 0..3000),
            targets in proptest::collection::vec(0u64..5100, 1..40),
        ) {
            heads.sort_unstable();
            for t in targets {
                check(&heads, t);
            }
        }
    }
}
