//! Partitioned index and filter (format version 2): round trips with many tiny partitions,
//! pinned or read through the cache (budget 0, cache 0), straddling keys, one device read
//! per pinned lookup, byte flips in every partition and the top level, the budget.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::tests::{
    build, check_round_trip_in, collect_forward, expected_get, is_named_corruption, open_in, opts,
    random_entries, straddling_entries, Entries,
};
use super::*;
use crate::cache::BlockCache;
use crate::iter::InternalIterator;
use crate::options::Compression;
use crate::types::{make_internal_key, MAX_SEQ};

fn parted(compression: Compression, bloom: u32, block: usize, part: usize) -> SstOptions {
    SstOptions {
        index_partition_bytes: part,
        ..opts(compression, bloom, block, 4)
    }
}

/// A cache whose readers pin nothing (budget 0) or everything.
fn cache(capacity: usize, budget: u64) -> Arc<BlockCache> {
    Arc::new(BlockCache::with_metadata_budget(capacity, budget))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn partitioned_round_trip_matches_model(seed in any::<u64>(), n in 1usize..300,
                                            block in prop::sample::select(vec![64usize, 256]),
                                            part in prop::sample::select(vec![1usize, 30, 200])) {
        let mut rng = StdRng::seed_from_u64(seed);
        let entries = random_entries(&mut rng, n);
        for c in [Compression::None, Compression::Lz4] {
            for bloom in [0, 10] {
                for (capacity, budget) in [(64 << 10, u64::MAX), (64 << 10, 0), (0, 0)] {
                    let o = parted(c, bloom, block, part);
                    let r = check_round_trip_in(&entries, o, cache(capacity, budget), &mut rng);
                    let p = r.properties();
                    let partitioned = r.footer().is_partitioned();
                    prop_assert_eq!(partitioned, p.num_index_partitions > 1);
                    prop_assert_eq!(r.num_index_partitions() as u64, p.num_index_partitions.max(1));
                    prop_assert_eq!(r.metadata_pinned(), !partitioned || budget > 0);
                    prop_assert_eq!(r.data_block_handles().expect("handles").len() as u64,
                                    p.num_data_blocks);
                }
            }
        }
    }
}

/// With partitions pinned, a lookup costs what it costs unpartitioned: one data block read,
/// none for a key past the file; through the cache (budget 0, cache 0) at most three.
#[test]
fn partitioned_get_reads_one_block_when_pinned() {
    let entries = straddling_entries();
    let (bytes, _) = build(&entries, parted(Compression::None, 10, 128, 64));
    for (budget, max_reads) in [(u64::MAX, 1), (0, 3)] {
        let (r, c) = open_in(bytes.clone(), cache(0, budget)).expect("open");
        assert!(r.num_index_partitions() > 4, "{}", r.num_index_partitions());
        for seq in 0..=301u64 {
            let before = c.device_reads.load(Relaxed);
            let got = r.get(b"hot", seq).expect("get");
            assert_eq!(got, expected_get(&entries, b"hot", seq));
            let reads = c.device_reads.load(Relaxed) - before;
            assert!(reads >= 1 && reads <= max_reads, "seq {seq}: {reads} reads");
        }
        assert!(r.may_contain(b"hot") && r.may_contain(b"a") && r.may_contain(b"z"));
        let before = c.device_reads.load(Relaxed);
        assert_eq!(r.get(b"\xff", 5).expect("get"), None);
        assert_eq!(c.device_reads.load(Relaxed), before, "past the file");
        let before = c.device_reads.load(Relaxed);
        assert_eq!(r.get(b"b", 5).expect("get"), None);
        let reads = c.device_reads.load(Relaxed) - before;
        assert!(reads < max_reads, "absent key: {reads} reads");
        assert_eq!(
            r.get(b"z", 5).expect("get"),
            Some(LookupResult::Deleted { seq: 1 })
        );
    }
}

/// Every partition's filter holds the keys of its blocks, straddling keys included: no
/// false negative for any key at any sequence number.
#[test]
fn partition_filters_have_no_false_negatives() {
    let mut rng = StdRng::seed_from_u64(11);
    let entries = random_entries(&mut rng, 2000);
    let (bytes, _) = build(&entries, parted(Compression::Lz4, 10, 64, 30));
    let (r, _) = open_in(bytes, cache(1 << 20, u64::MAX)).expect("open");
    assert!(r.num_index_partitions() > 50);
    for (k, _) in &entries {
        let u = crate::types::user_key(k);
        assert!(r.may_contain(u));
        for seq in [0, 500, MAX_SEQ] {
            assert_eq!(r.get(u, seq).expect("get"), expected_get(&entries, u, seq));
        }
    }
}

/// Flips every byte of a partitioned file, pinned and unpinned: each read fails with a
/// `Corruption` naming the file or returns exactly the original data.
#[test]
fn partitioned_corrupted_byte_is_detected_or_harmless() {
    let mut rng = StdRng::seed_from_u64(5);
    let entries: Entries = (0..40u64)
        .map(|i| {
            let v: Vec<u8> = (0..20).map(|_| rng.gen()).collect();
            let k = make_internal_key(format!("key{i:03}").as_bytes(), i + 1, 1);
            (k, v)
        })
        .collect();
    let (good, _) = build(&entries, parted(Compression::Lz4, 10, 96, 24));
    let (r, _) = open_in(good.clone(), cache(0, u64::MAX)).expect("open");
    assert!(r.num_index_partitions() >= 4);
    let gets: Vec<_> = entries
        .iter()
        .map(|(k, _)| {
            let u = crate::types::user_key(k).to_vec();
            let want = expected_get(&entries, &u, MAX_SEQ);
            (u, want)
        })
        .collect();
    for budget in [u64::MAX, 0] {
        // Flips that open fine, and of those, flips first caught by a later read.
        let (mut opened, mut caught_later) = (0, 0);
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 1 << (i % 8);
            let (r, _) = match open_in(bad, cache(0, budget)) {
                Ok(r) => r,
                Err(e) => {
                    assert!(is_named_corruption(&e), "byte {i}: {e}");
                    continue;
                }
            };
            opened += 1;
            let mut it = r.iter();
            let got = collect_forward(&mut it);
            match it.status() {
                Ok(()) => assert!(got == entries, "byte {i}: wrong data from scan"),
                Err(e) => {
                    assert!(is_named_corruption(&e), "byte {i}: {e}");
                    caught_later += 1;
                }
            }
            for (u, want) in &gets {
                match r.get(u, MAX_SEQ) {
                    Ok(v) => assert_eq!(&v, want, "byte {i}: wrong get"),
                    Err(e) => assert!(is_named_corruption(&e), "byte {i}: {e}"),
                }
            }
            let keys: Vec<&[u8]> = gets.iter().map(|g| &g.0[..]).collect();
            let mut results = vec![None; keys.len()];
            match r.multi_get(&keys, MAX_SEQ, &mut results) {
                Ok(()) => {
                    for (j, (_, want)) in gets.iter().enumerate() {
                        assert_eq!(&results[j], want, "byte {i}: wrong multi_get");
                    }
                }
                Err(e) => assert!(is_named_corruption(&e), "byte {i}: {e}"),
            }
            if let Err(e) = r.verify_checksums() {
                assert!(is_named_corruption(&e), "byte {i}: {e}");
            }
        }
        // Data blocks are read lazily in both modes; unpinned filter partitions too.
        assert!(opened > good.len() / 2, "budget {budget}: {opened} opened");
        assert!(
            caught_later > good.len() / 4,
            "budget {budget}: {caught_later}"
        );
    }
}

/// Small indexes stay version 1, and 0 never partitions; readers charge the budget while
/// open and give it back when dropped, and pin only while it lasts.
#[test]
fn partitioning_threshold_and_budget() {
    let mut rng = StdRng::seed_from_u64(9);
    let entries = random_entries(&mut rng, 1500);
    let small = build(
        &entries[..3].to_vec(),
        parted(Compression::Lz4, 10, 4096, 4096),
    )
    .0;
    let off = build(&entries, parted(Compression::Lz4, 10, 64, 0)).0;
    let on = build(&entries, parted(Compression::Lz4, 10, 64, 256)).0;
    let c = cache(1 << 20, u64::MAX);
    for (bytes, version) in [(&small, 1), (&off, 1), (&on, 2)] {
        let (r, _) = open_in(bytes.clone(), c.clone()).expect("open");
        assert_eq!(r.footer().version, version);
    }
    assert_eq!(
        c.metadata_budget().used_bytes(),
        0,
        "dropped readers released"
    );

    let (pinned, _) = open_in(on.clone(), c.clone()).expect("open");
    let full = pinned.resident_bytes();
    assert_eq!(c.metadata_budget().used_bytes(), full);
    // A budget just short of the full amount pins nothing but the top level.
    let tight = cache(1 << 20, full - 1);
    let (r, _) = open_in(on.clone(), tight.clone()).expect("open");
    assert!(!r.metadata_pinned());
    assert!(
        r.resident_bytes() < full / 2,
        "{} vs {full}",
        r.resident_bytes()
    );
    let mut it = r.iter();
    assert!(collect_forward(&mut it) == entries);
    drop((r, it));
    assert_eq!(tight.metadata_budget().used_bytes(), 0);
    drop(pinned);
    assert_eq!(c.metadata_budget().used_bytes(), 0);
}
