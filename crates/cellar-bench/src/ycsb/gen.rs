//! YCSB's request generators (`site.ycsb.generator`), rewritten from their specification:
//!
//! * [`Zipfian`]: Gray et al., "Quickly Generating Billion-Record Synthetic Databases"
//!   (SIGMOD 1994), as YCSB's `ZipfianGenerator`: rank `i` (0-based) drawn with probability
//!   `(1/(i+1)^θ) / ζ(n, θ)`, θ = 0.99. Exact for ranks 0 and 1, Gray's closed-form
//!   approximation beyond. The item count may grow ([`Zipfian::next_below`]); ζ is then
//!   extended incrementally, as YCSB does.
//! * [`ScrambledZipfian`]: YCSB's default request distribution: a zipfian rank over 10^10
//!   items (ζ precomputed), hashed with FNV-1a 64 and reduced modulo the key range, so the
//!   popular keys are spread over the key space instead of clustered at its start.
//! * [`SkewedLatest`]: YCSB's `latest`: `newest - zipfian(count)`, favouring the most
//!   recently inserted records.
//! * [`Uniform`]: uniform over an inclusive range.
//! * [`InsertCounter`]: YCSB's `AcknowledgedCounterGenerator`: hands out new record numbers
//!   and tracks the highest number below which every insert has completed, which is what
//!   readers may ask for.
//!
//! Randomness comes from the caller's [`YcsbRng`], so a seed reproduces a sequence exactly,
//! here and in the Java peer (bench/java/common YcsbGen.java, the same algorithms step by
//! step; bench/java/ycsb_vector.txt pins both, see vector.rs).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::peer_keys::{mix, GAMMA};

/// The random source of every YCSB choice: SplitMix64 (peer_keys.rs), whose outputs Java
/// reproduces bit for bit, with two derived draws defined here rather than borrowed from a
/// crate so that the Java side can do exactly the same:
/// * [`Self::next_f64`]: the top 53 bits of an output, times 2^-53 (uniform in [0, 1));
/// * [`Self::below`]: `n` times an output, the high 64 bits of the 128-bit product (Lemire's
///   method without the rejection step: its bias, below `n / 2^64`, is far under noise).
#[derive(Debug, Clone)]
pub struct YcsbRng {
    state: u64,
}

impl YcsbRng {
    pub fn new(seed: u64) -> Self {
        YcsbRng { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
    }

    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// REQUIRES: `n` ≥ 1. Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// Items of the zipfian behind [`ScrambledZipfian`], and ζ(10^10, 0.99) as YCSB hard-codes
/// it (computing it takes 10^10 terms).
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 bytes of `v`, least significant first,
/// made non-negative (Java's `Math.abs` on a signed long).
pub fn fnv_hash64(mut v: u64) -> u64 {
    let mut h = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(FNV_PRIME_64);
        v >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// ζ(n, θ) = Σ_{i=1..n} 1/i^θ, continued from ζ(`from`, θ) = `partial`.
fn zeta_from(from: u64, n: u64, theta: f64, partial: f64) -> f64 {
    (from..n).fold(partial, |sum, i| sum + 1.0 / ((i + 1) as f64).powf(theta))
}

pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_from(0, n, theta, 0.0)
}

/// Zipfian ranks in `0..items` (rank 0 the most popular).
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    zeta2: f64,
    eta: f64,
}

impl Zipfian {
    /// REQUIRES: `items` ≥ 1. Computing ζ costs `items` powers (a few ms per million).
    pub fn new(items: u64) -> Self {
        Self::with_zeta(items, zeta(items, ZIPFIAN_CONSTANT))
    }

    fn with_zeta(items: u64, zetan: f64) -> Self {
        let theta = ZIPFIAN_CONSTANT;
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            zeta2: zeta(2, theta),
            eta: 0.0,
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    #[cfg(test)]
    pub fn items(&self) -> u64 {
        self.items
    }

    /// A rank in `0..items`.
    pub fn next(&self, rng: &mut YcsbRng) -> u64 {
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }

    /// A rank in `0..items` after growing the item count to `items` (never shrinks).
    pub fn next_below(&mut self, items: u64, rng: &mut YcsbRng) -> u64 {
        if items > self.items {
            self.zetan = zeta_from(self.items, items, self.theta, self.zetan);
            self.items = items;
            self.eta = self.eta_for(items);
        }
        self.next(rng)
    }
}

/// YCSB's `ScrambledZipfianGenerator` over `min..=max`.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    min: u64,
    count: u64,
    ranks: Zipfian,
}

impl ScrambledZipfian {
    /// REQUIRES: `min <= max`.
    pub fn new(min: u64, max: u64) -> Self {
        ScrambledZipfian {
            min,
            count: max - min + 1,
            ranks: Zipfian::with_zeta(SCRAMBLED_ITEMS, SCRAMBLED_ZETAN),
        }
    }

    pub fn next(&self, rng: &mut YcsbRng) -> u64 {
        self.min + fnv_hash64(self.ranks.next(rng)) % self.count
    }
}

/// YCSB's `SkewedLatestGenerator`: `newest - zipfian(newest)`, so `newest` itself is the
/// most likely, then `newest - 1`, ... (record 0 is never drawn, as in YCSB).
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    ranks: Zipfian,
}

impl SkewedLatest {
    /// REQUIRES: `newest` ≥ 1 (ζ is computed for `newest` items here, once).
    pub fn new(newest: u64) -> Self {
        SkewedLatest {
            ranks: Zipfian::new(newest.max(1)),
        }
    }

    /// A record number in `1..=newest`.
    pub fn next(&mut self, newest: u64, rng: &mut YcsbRng) -> u64 {
        let newest = newest.max(1);
        newest - self.ranks.next_below(newest, rng).min(newest - 1)
    }
}

/// Uniform over `min..=max` (REQUIRES: `min <= max < u64::MAX`).
#[derive(Debug, Clone, Copy)]
pub struct Uniform {
    pub min: u64,
    pub max: u64,
}

impl Uniform {
    pub fn next(&self, rng: &mut YcsbRng) -> u64 {
        self.min + rng.below(self.max - self.min + 1)
    }
}

/// New record numbers for inserts, and the prefix of them that is complete.
#[derive(Debug)]
pub struct InsertCounter {
    next: AtomicU64,
    /// Every record number below this one is inserted and acknowledged.
    complete_below: AtomicU64,
    /// Acknowledged numbers above a gap (inserts that finished out of order).
    done_out_of_order: Mutex<BTreeSet<u64>>,
}

impl InsertCounter {
    /// Records `0..records` exist already.
    pub fn new(records: u64) -> Self {
        InsertCounter {
            next: AtomicU64::new(records),
            complete_below: AtomicU64::new(records),
            done_out_of_order: Mutex::new(BTreeSet::new()),
        }
    }

    /// The number of the next record to insert.
    pub fn claim(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Record `n` (from [`Self::claim`]) is written.
    pub fn acknowledge(&self, n: u64) {
        let mut done = self
            .done_out_of_order
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        done.insert(n);
        let mut below = self.complete_below.load(Ordering::Acquire);
        while done.remove(&below) {
            below += 1;
        }
        self.complete_below.store(below, Ordering::Release);
    }

    /// Records `0..complete()` all exist.
    pub fn complete(&self) -> u64 {
        self.complete_below.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DRAWS: usize = 1_000_000;

    fn rng(seed: u64) -> YcsbRng {
        YcsbRng::new(seed)
    }

    /// Share of `count` in `draws`, and its binomial standard error at probability `p`.
    fn share_and_sigma(count: usize, draws: usize, p: f64) -> (f64, f64) {
        (
            count as f64 / draws as f64,
            (p * (1.0 - p) / draws as f64).sqrt(),
        )
    }

    /// P(rank < k) under Gray's method (k ≥ 2): the uniform draws below the cut.
    fn gray_cdf(z: &Zipfian, k: u64) -> f64 {
        let n = z.items as f64;
        let formula = 1.0 - (1.0 - (k as f64 / n).powf(1.0 - z.theta)) / z.eta;
        let exact_two = (1.0 + 0.5f64.powf(z.theta)) / z.zetan;
        formula.max(exact_two)
    }

    #[test]
    fn fnv_hash_matches_ycsb() {
        // FNV-1a 64 of eight zero bytes, by hand: xor 0 then multiply, eight times.
        let mut h = FNV_OFFSET_BASIS_64;
        for _ in 0..8 {
            h = h.wrapping_mul(FNV_PRIME_64);
        }
        assert_eq!(fnv_hash64(0), (h as i64).unsigned_abs());
        assert_ne!(fnv_hash64(1), fnv_hash64(2));
        assert!(fnv_hash64(u64::MAX) <= i64::MAX as u64 + 1);
    }

    #[test]
    fn zipfian_top_ranks_match_theory() {
        let n = 1000;
        let z = Zipfian::new(n);
        let zn = zeta(n, ZIPFIAN_CONSTANT);
        let mut r = rng(1);
        let mut counts = vec![0usize; n as usize];
        for _ in 0..DRAWS {
            counts[z.next(&mut r) as usize] += 1;
        }
        // Ranks 0 and 1 are exact in Gray's method.
        for rank in [0usize, 1] {
            let p = 1.0 / ((rank + 1) as f64).powf(ZIPFIAN_CONSTANT) / zn;
            let (got, sigma) = share_and_sigma(counts[rank], DRAWS, p);
            assert!(
                (got - p).abs() < 5.0 * sigma,
                "rank {rank}: {got} vs {p} (σ {sigma})"
            );
        }
        // Beyond them Gray's closed form approximates: the top 10 ranks match that form's
        // own distribution exactly, and the true zipfian's within 5 % (it gives them 4 %
        // more than ζ(10)/ζ(n)).
        let got10 = counts[..10].iter().sum::<usize>();
        let gray10 = gray_cdf(&z, 10);
        let (got, sigma) = share_and_sigma(got10, DRAWS, gray10);
        assert!(
            (got - gray10).abs() < 5.0 * sigma,
            "top 10: {got} vs {gray10}"
        );
        let p10 = zeta(10, ZIPFIAN_CONSTANT) / zn;
        assert!((got / p10 - 1.0).abs() < 0.05, "top 10: {got} vs {p10}");
        // Popularity falls with rank.
        assert!(counts[0] > counts[1] && counts[1] > counts[10] && counts[10] > counts[500]);
    }

    #[test]
    fn zipfian_is_deterministic_per_seed() {
        let z = Zipfian::new(10_000);
        let a: Vec<u64> = (0..100).map(|_| z.next(&mut rng(7))).collect();
        let mut r1 = rng(7);
        let mut r2 = rng(7);
        let b: Vec<u64> = (0..100).map(|_| z.next(&mut r1)).collect();
        let c: Vec<u64> = (0..100).map(|_| z.next(&mut r2)).collect();
        assert_eq!(b, c);
        assert!(a.iter().all(|&x| x < 10_000));
        let mut r3 = rng(8);
        let d: Vec<u64> = (0..100).map(|_| z.next(&mut r3)).collect();
        assert_ne!(b, d);
    }

    #[test]
    fn zipfian_grows_its_zeta_incrementally() {
        let mut grown = Zipfian::new(1000);
        let mut r = rng(3);
        let _ = grown.next_below(5000, &mut r);
        let fresh = Zipfian::new(5000);
        assert_eq!(grown.items(), 5000);
        assert!((grown.zetan - fresh.zetan).abs() < 1e-9);
        assert!((grown.eta - fresh.eta).abs() < 1e-12);
    }

    #[test]
    fn scrambled_zipfian_hottest_key_share_matches_theory() {
        let records = 100_000;
        let g = ScrambledZipfian::new(0, records - 1);
        let mut r = rng(11);
        let mut counts = vec![0usize; records as usize];
        for _ in 0..DRAWS {
            let k = g.next(&mut r);
            assert!(k < records);
            counts[k as usize] += 1;
        }
        // The hottest key is rank 0's hash: probability 1/ζ(10^10) plus the ranks that
        // collide with it modulo the key range (negligible against its σ).
        let p = 1.0 / SCRAMBLED_ZETAN;
        let hottest = (fnv_hash64(0) % records) as usize;
        assert_eq!(counts.iter().copied().max(), Some(counts[hottest]));
        let (got, sigma) = share_and_sigma(counts[hottest], DRAWS, p);
        assert!((got - p).abs() < 5.0 * sigma, "{got} vs {p}");
        // Scrambling spreads the hot keys: the 10 hottest are not neighbours.
        let mut top: Vec<usize> = (0..records as usize).collect();
        top.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
        let mut ten = top[..10].to_vec();
        ten.sort_unstable();
        assert!(ten.windows(2).any(|w| w[1] - w[0] > 1000), "{ten:?}");
        // And it is still skewed: the top 1 % of keys get far more than 1 % of draws.
        // (about ζ(1000)/ζ(10^10) ≈ 0.29 of them).
        let top1pc: usize = top[..records as usize / 100]
            .iter()
            .map(|&i| counts[i])
            .sum();
        assert!(top1pc as f64 / DRAWS as f64 > 0.25, "{top1pc}");
    }

    #[test]
    fn uniform_passes_chi_square() {
        let buckets = 100usize;
        let u = Uniform {
            min: 0,
            max: buckets as u64 * 1000 - 1,
        };
        let mut r = rng(5);
        let mut counts = vec![0usize; buckets];
        for _ in 0..DRAWS {
            let v = u.next(&mut r);
            assert!(v <= u.max);
            counts[(v / 1000) as usize] += 1;
        }
        let expected = DRAWS as f64 / buckets as f64;
        let chi2: f64 = counts
            .iter()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum();
        // 99 degrees of freedom: the 0.1 % critical value is 148.2.
        assert!(chi2 < 148.2, "χ² = {chi2}");
        let ends = Uniform { min: 1, max: 100 };
        let lens: Vec<u64> = (0..10_000).map(|_| ends.next(&mut r)).collect();
        assert_eq!(lens.iter().min(), Some(&1));
        assert_eq!(lens.iter().max(), Some(&100));
    }

    #[test]
    fn latest_favours_recent_records() {
        let newest = 10_000;
        let mut g = SkewedLatest::new(newest);
        let mut r = rng(9);
        let mut recent10 = 0usize;
        let mut newest_hits = 0usize;
        for _ in 0..DRAWS {
            let k = g.next(newest, &mut r);
            assert!((1..=newest).contains(&k));
            if k == newest {
                newest_hits += 1;
            }
            if k > newest - 10 {
                recent10 += 1;
            }
        }
        let zn = zeta(newest, ZIPFIAN_CONSTANT);
        let p_newest = 1.0 / zn;
        let (got, sigma) = share_and_sigma(newest_hits, DRAWS, p_newest);
        assert!((got - p_newest).abs() < 5.0 * sigma, "{got} vs {p_newest}");
        let gray10 = gray_cdf(&Zipfian::new(newest), 10);
        let (got10, sigma) = share_and_sigma(recent10, DRAWS, gray10);
        assert!((got10 - gray10).abs() < 5.0 * sigma, "{got10} vs {gray10}");
        let p10 = zeta(10, ZIPFIAN_CONSTANT) / zn;
        assert!((got10 / p10 - 1.0).abs() < 0.05, "{got10} vs {p10}");
        // After more inserts the favourite moves to the new newest record.
        let mut moved = 0;
        for _ in 0..10_000 {
            if g.next(newest + 500, &mut r) > newest {
                moved += 1;
            }
        }
        assert!(moved > 5_000, "{moved}");
    }

    #[test]
    fn insert_counter_tracks_the_complete_prefix() {
        let c = InsertCounter::new(100);
        let (a, b, d) = (c.claim(), c.claim(), c.claim());
        assert_eq!((a, b, d), (100, 101, 102));
        assert_eq!(c.complete(), 100);
        c.acknowledge(b);
        assert_eq!(c.complete(), 100, "101 done but 100 is not");
        c.acknowledge(a);
        assert_eq!(c.complete(), 102);
        c.acknowledge(d);
        assert_eq!(c.complete(), 103);
    }
}
