//! Whole-file tests: builder → reader round trips against a model, corruption of every
//! byte, resident memory per key, and coalesced multi_get reads.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use parking_lot::Mutex;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::cache::{BlockCache, WarmUp};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::stats::Counters;
use crate::types::{compare_internal, make_internal_key, split_internal, unpack_trailer, MAX_SEQ};
use crate::vfs::{RandomAccessFile, RealVfs, Vfs, WritableFile};

pub(super) const NAME: &str = "000042.sst";

pub(super) struct MemWritable(Arc<Mutex<Vec<u8>>>);

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

pub(super) struct MemFile(Vec<u8>);

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.0.get(o..o.checked_add(buf.len())?));
        match src {
            Some(s) => {
                buf.copy_from_slice(s);
                Ok(())
            }
            None => Err(Error::io(
                NAME,
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            )),
        }
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

/// A file held whole in memory that also offers itself as a map, as `RealVfs` does for a
/// file the page cache holds: point reads go through `sst/mapped.rs`.
pub(super) struct MappedMemFile(bytes::Bytes);

impl RandomAccessFile for MappedMemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        MemFile(self.0.to_vec()).read_exact_at(buf, offset)
    }
    fn is_cached(&self, _offset: u64, _len: u64) -> Option<bool> {
        Some(true)
    }
    fn map_whole(&self) -> Option<bytes::Bytes> {
        Some(self.0.clone())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

pub(super) type Entries = Vec<(Vec<u8>, Vec<u8>)>;

pub(super) fn build(entries: &Entries, opts: SstOptions) -> (Vec<u8>, SstSummary) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let mut b = SstBuilder::new(Box::new(MemWritable(buf.clone())), opts);
    for (k, v) in entries {
        b.add(k, v).expect("add");
    }
    let summary = b.finish().expect("finish");
    let bytes = buf.lock().clone();
    assert_eq!(summary.file_size, bytes.len() as u64);
    (bytes, summary)
}

pub(super) fn open(bytes: Vec<u8>, cache_bytes: usize) -> Result<(SstReader, Arc<Counters>)> {
    open_in(bytes, Arc::new(BlockCache::new(cache_bytes)))
}

/// Opens with a given cache (and so its metadata budget).
pub(super) fn open_in(
    bytes: Vec<u8>,
    cache: Arc<BlockCache>,
) -> Result<(SstReader, Arc<Counters>)> {
    open_file(Arc::new(MemFile(bytes)), cache)
}

/// Opens `bytes` as a file its reader maps (`MappedMemFile`).
pub(super) fn open_mapped(
    bytes: Vec<u8>,
    cache: Arc<BlockCache>,
) -> Result<(SstReader, Arc<Counters>)> {
    open_file(Arc::new(MappedMemFile(bytes.into())), cache)
}

/// Opens `file` as the reader of file number 42.
fn open_file(
    file: Arc<dyn RandomAccessFile>,
    cache: Arc<BlockCache>,
) -> Result<(SstReader, Arc<Counters>)> {
    let counters = Arc::new(Counters::default());
    let r = SstReader::open(file, PathBuf::from(NAME), 42, cache, counters.clone(), true)?;
    Ok((r, counters))
}

pub(super) fn opts(
    compression: Compression,
    bloom: u32,
    block: usize,
    restart: usize,
) -> SstOptions {
    SstOptions {
        block_size_bytes: block,
        block_restart_interval: restart,
        compression,
        bloom_bits_per_key: bloom,
        index_partition_bytes: 0,
        writeback_bytes: 0,
    }
}

pub(super) fn random_user_key(rng: &mut StdRng) -> Vec<u8> {
    const ALPHABET: [u8; 6] = [0x00, 0x01, b'a', b'b', 0xfe, 0xff];
    match rng.gen_range(0..20) {
        0..=11 => (0..rng.gen_range(0..6))
            .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())])
            .collect(),
        12..=18 => (0..rng.gen_range(7..24)).map(|_| rng.gen()).collect(),
        _ => {
            let mut k = vec![b'L'; rng.gen_range(100..3000)];
            let last = k.len() - 1;
            k[last] = rng.gen();
            k
        }
    }
}

fn random_value(rng: &mut StdRng) -> Vec<u8> {
    let len = match rng.gen_range(0..40) {
        0..=27 => rng.gen_range(0..40),
        28..=38 => rng.gen_range(0..300),
        _ => rng.gen_range(1000..100_000),
    };
    if rng.gen_bool(0.5) {
        (0..len).map(|i| (i % 13) as u8).collect() // compressible
    } else {
        (0..len).map(|_| rng.gen()).collect()
    }
}

/// Sorted internal-key entries with several versions per key, deletes and odd keys.
pub(super) fn random_entries(rng: &mut StdRng, n_users: usize) -> Entries {
    let mut users: Vec<Vec<u8>> = (0..n_users).map(|_| random_user_key(rng)).collect();
    users.sort();
    users.dedup();
    let mut out = Vec::new();
    for u in users {
        let versions = if rng.gen_bool(0.7) {
            1
        } else {
            rng.gen_range(2..6)
        };
        let mut seqs: Vec<u64> = (0..versions).map(|_| rng.gen_range(1..1000)).collect();
        seqs.sort();
        seqs.dedup();
        for s in seqs {
            let del = rng.gen_bool(0.2);
            let v = if del { Vec::new() } else { random_value(rng) };
            out.push((make_internal_key(&u, s, u8::from(!del)), v));
        }
    }
    out.sort_by(|a, b| compare_internal(&a.0, &b.0));
    out
}

/// The model answer for `get`.
pub(super) fn expected_get(entries: &Entries, user_key: &[u8], seq: u64) -> Option<LookupResult> {
    entries.iter().find_map(|(k, v)| {
        let (u, t) = split_internal(k)?;
        let (s, kind) = unpack_trailer(t);
        (u == user_key && s <= seq).then(|| match kind {
            0 => LookupResult::Deleted { seq: s },
            _ => LookupResult::Found {
                seq: s,
                value: v.clone(),
            },
        })
    })
}

pub(super) fn collect_forward(it: &mut SstIterator) -> Entries {
    let mut got = Vec::new();
    it.seek_to_first();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    got
}

pub(super) fn check_round_trip(entries: &Entries, o: SstOptions, cache: usize, rng: &mut StdRng) {
    check_round_trip_in(entries, o, Arc::new(BlockCache::new(cache)), rng);
}

/// Scans both ways, seeks, gets and multi_gets against the model; returns the reader.
pub(super) fn check_round_trip_in(
    entries: &Entries,
    o: SstOptions,
    cache: Arc<BlockCache>,
    rng: &mut StdRng,
) -> SstReader {
    let (bytes, summary) = build(entries, o.clone());
    assert_eq!(summary.num_entries, entries.len() as u64);
    let (r, _) = if rng.gen_bool(0.5) {
        open_mapped(bytes, cache)
    } else {
        open_in(bytes, cache)
    }
    .expect("open");
    let p = r.properties();
    assert_eq!(p.num_entries, entries.len() as u64);
    assert_eq!(p.smallest, entries[0].0);
    assert_eq!(summary.largest, entries[entries.len() - 1].0);

    let mut it = r.iter();
    assert!(collect_forward(&mut it) == *entries, "forward scan differs");
    it.status().expect("status");
    let mut back = Vec::new();
    it.seek_to_last();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    back.reverse();
    assert!(back == *entries, "backward scan differs");

    let users: Vec<Vec<u8>> = entries
        .iter()
        .map(|(k, _)| crate::types::user_key(k).to_vec())
        .collect();
    let pick_user = |rng: &mut StdRng| {
        if rng.gen_bool(0.8) {
            users[rng.gen_range(0..users.len())].clone()
        } else {
            random_user_key(rng)
        }
    };
    for _ in 0..60 {
        let u = pick_user(rng);
        let seq = if rng.gen_bool(0.2) {
            MAX_SEQ
        } else {
            rng.gen_range(0..1100)
        };
        let kind = [0u8, 1, 0xff][rng.gen_range(0..3)];
        let t = make_internal_key(&u, seq, kind);
        let ge = entries.partition_point(|(k, _)| compare_internal(k, &t) == Ordering::Less);
        it.seek(&t);
        assert_eq!(
            it.valid().then(|| it.key()),
            entries.get(ge).map(|e| &e.0[..])
        );
        if it.valid() {
            it.next();
            assert_eq!(
                it.valid().then(|| it.key()),
                entries.get(ge + 1).map(|e| &e.0[..])
            );
        }
        let le = entries.partition_point(|(k, _)| compare_internal(k, &t) != Ordering::Greater);
        it.seek_for_prev(&t);
        let want = le.checked_sub(1).map(|i| &entries[i].0[..]);
        assert_eq!(it.valid().then(|| it.key()), want);
        if it.valid() {
            it.prev();
            let want = le.checked_sub(2).map(|i| &entries[i].0[..]);
            assert_eq!(it.valid().then(|| it.key()), want);
        }
        assert_eq!(r.get(&u, seq).expect("get"), expected_get(entries, &u, seq));
    }
    it.status().expect("status");

    // multi_get against get, with a few slots already answered by a newer layer.
    let mut q: Vec<Vec<u8>> = (0..40).map(|_| pick_user(rng)).collect();
    q.sort();
    q.dedup();
    let seq = rng.gen_range(0..1100);
    let keys: Vec<&[u8]> = q.iter().map(|k| &k[..]).collect();
    let sentinel = LookupResult::Deleted { seq: u64::MAX };
    let mut results: Vec<Option<LookupResult>> = (0..keys.len())
        .map(|i| (i % 7 == 3).then(|| sentinel.clone()))
        .collect();
    r.multi_get(&keys, seq, &mut results).expect("multi_get");
    for (i, k) in keys.iter().enumerate() {
        let want = if i % 7 == 3 {
            Some(sentinel.clone())
        } else {
            r.get(k, seq).expect("get")
        };
        assert_eq!(results[i], want);
    }
    r.verify_checksums().expect("verify");
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn round_trip_matches_model(seed in any::<u64>(), n in 1usize..300,
                                block in prop::sample::select(vec![64usize, 256, 1024, 4096]),
                                restart in prop::sample::select(vec![1usize, 2, 16])) {
        let mut rng = StdRng::seed_from_u64(seed);
        let entries = random_entries(&mut rng, n);
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            for bloom in [0, 10] {
                let cache = if rng.gen_bool(0.5) { 0 } else { 64 << 10 };
                check_round_trip(&entries, opts(c, bloom, block, restart), cache, &mut rng);
            }
        }
    }
}

pub(super) fn is_named_corruption(e: &Error) -> bool {
    e.is_corruption() && e.to_string().contains(NAME)
}

/// Flips every byte of a small multi-block file: each read either fails with a
/// `Corruption` naming the file or returns exactly the original data, whether the file is
/// read with `pread` or through its map.
#[test]
fn every_corrupted_byte_is_detected_or_harmless() {
    let mut rng = StdRng::seed_from_u64(7);
    let entries: Entries = (0..60u64)
        .map(|i| {
            let v: Vec<u8> = if i % 3 == 0 {
                vec![b'x'; 40]
            } else {
                (0..30).map(|_| rng.gen()).collect()
            };
            (
                make_internal_key(format!("key{i:03}").as_bytes(), i + 1, (i % 5 != 0) as u8),
                v,
            )
        })
        .collect();
    let kinds = [Compression::None, Compression::Lz4, Compression::Zstd];
    for (c, mapped) in kinds.into_iter().flat_map(|c| [(c, false), (c, true)]) {
        let open = |bytes: Vec<u8>, cache: usize| {
            let cache = Arc::new(BlockCache::new(cache));
            if mapped {
                open_mapped(bytes, cache)
            } else {
                open_in(bytes, cache)
            }
        };
        let (good, _) = build(&entries, opts(c, 10, 256, 4));
        let gets: Vec<_> = entries
            .iter()
            .map(|(k, _)| {
                let u = crate::types::user_key(k);
                (u.to_vec(), expected_get(&entries, u, MAX_SEQ))
            })
            .collect();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 1 << (i % 8);
            let (r, _) = match open(bad, 0) {
                Ok(r) => r,
                Err(e) => {
                    assert!(is_named_corruption(&e), "byte {i}: {e}");
                    continue;
                }
            };
            let mut it = r.iter();
            let got = collect_forward(&mut it);
            match it.status() {
                Ok(()) => assert!(got == entries, "byte {i}: wrong data from scan"),
                Err(e) => assert!(is_named_corruption(&e), "byte {i}: {e}"),
            }
            for (u, want) in &gets {
                match r.get(u, MAX_SEQ) {
                    Ok(v) => assert_eq!(&v, want, "byte {i}: wrong get"),
                    Err(e) => assert!(is_named_corruption(&e), "byte {i}: {e}"),
                }
            }
            let keys: Vec<&[u8]> = gets.iter().map(|(u, _)| u.as_slice()).collect();
            let mut found = vec![None; keys.len()];
            match r.multi_get(&keys, MAX_SEQ, &mut found) {
                Ok(()) => {
                    for ((_, want), got) in gets.iter().zip(&found) {
                        assert_eq!(got, want, "byte {i}: wrong multi_get");
                    }
                }
                Err(e) => assert!(is_named_corruption(&e), "byte {i}: {e}"),
            }
            if let Err(e) = r.verify_checksums() {
                assert!(is_named_corruption(&e), "byte {i}: {e}");
            }
        }
        for len in [
            0,
            1,
            63,
            64,
            good.len() / 2,
            good.len() - 64,
            good.len() - 1,
        ] {
            let e = open(good[..len].to_vec(), 0)
                .err()
                .expect("truncated file opened");
            assert!(is_named_corruption(&e), "len {len}: {e}");
        }
    }
}

/// Index and filter bytes held per key by a file of `entries` at default options.
fn resident_bytes_per_key(entries: &Entries) -> f64 {
    let (bytes, _) = build(entries, SstOptions::default());
    let (r, _) = open(bytes, 0).expect("open");
    let per_key = r.resident_bytes() as f64 / entries.len() as f64;
    let p = r.properties();
    println!(
        "resident {:.3} B/key ({} keys, {} blocks, {} index partitions, filter {} B)",
        per_key,
        entries.len(),
        p.num_data_blocks,
        r.num_index_partitions(),
        p.filter_bytes
    );
    per_key
}

#[test]
fn resident_bytes_per_key_at_default_options() {
    let mut rng = StdRng::seed_from_u64(1);
    let n = 200_000u64;
    let mut keys: Vec<[u8; 16]> = (0..n).map(|_| rng.gen()).collect();
    keys.sort();
    keys.dedup();
    let entries: Entries = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let v: Vec<u8> = (0..100).map(|_| rng.gen()).collect();
            (make_internal_key(k, i as u64 + 1, 1), v)
        })
        .collect();
    let per_key = resident_bytes_per_key(&entries);
    assert!(per_key <= 2.0, "{per_key} resident bytes per key");
}

/// The `elliptics` shape: zero-padded decimal keys in order, 200-byte values, ~20 entries a
/// block. Consecutive keys differ only in their last digits, so every separator is a whole
/// key: the bytes its head does not hold decide the index's size.
#[test]
fn resident_bytes_per_key_with_sequential_keys_and_200_byte_values() {
    let entries: Entries = (0..300_000u64)
        .map(|i| {
            let k = format!("{:016}", 70_000_000 + i);
            (make_internal_key(k.as_bytes(), i + 1, 1), vec![b'a'; 200])
        })
        .collect();
    let per_key = resident_bytes_per_key(&entries);
    assert!(per_key <= 2.0, "{per_key} resident bytes per key");
}

/// Keys `user{i:08}` for `i` in `0..n`, each a put at sequence 9 of 100 bytes.
fn user_entries(n: u64) -> Entries {
    (0..n)
        .map(|i| {
            let key = make_internal_key(format!("user{i:08}").as_bytes(), 9, 1);
            (key, vec![7; 100])
        })
        .collect()
}

#[test]
fn multi_get_coalesces_reads() {
    let entries = user_entries(20_000);
    let (bytes, _) = build(&entries, opts(Compression::Lz4, 10, 4096, 16));
    let (r, counters) = open(bytes, 0).expect("open");
    let q: Vec<Vec<u8>> = (5000..7000u64)
        .map(|i| format!("user{i:08}").into_bytes())
        .collect();
    let keys: Vec<&[u8]> = q.iter().map(|k| &k[..]).collect();

    let before = counters.device_reads.load(Relaxed);
    let singles: Vec<_> = keys.iter().map(|k| r.get(k, 10).expect("get")).collect();
    let single_reads = counters.device_reads.load(Relaxed) - before;

    let before = counters.device_reads.load(Relaxed);
    let mut results = vec![None; keys.len()];
    r.multi_get(&keys, 10, &mut results).expect("multi_get");
    let multi_reads = counters.device_reads.load(Relaxed) - before;
    assert_eq!(results, singles);
    assert!(results.iter().all(|x| x.is_some()));
    println!(
        "{} keys: {single_reads} reads with get, {multi_reads} with multi_get",
        keys.len()
    );
    assert_eq!(single_reads, keys.len() as u64);
    assert!(multi_reads * 10 < single_reads);
}

/// A file whose reads note the warm-up's count of point reads in flight as they run.
struct InFlightProbe {
    file: MemFile,
    warm_up: Arc<WarmUp>,
    seen: Mutex<Vec<(usize, usize)>>,
}

impl RandomAccessFile for InFlightProbe {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.seen.lock().push(self.warm_up.reads_in_flight());
        self.file.read_exact_at(buf, offset)
    }
    fn size(&self) -> u64 {
        self.file.size()
    }
}

/// The warm-up tells a get's reads of a cold file from a batch's: the first count toward
/// the gets that send it to the idle I/O class, the second do not (`cache/warm.rs`).
#[test]
fn a_cold_files_reads_count_as_gets_or_as_a_batchs() {
    let entries = user_entries(2_000);
    let (bytes, _) = build(&entries, opts(Compression::Lz4, 10, 4096, 16));
    let counters = Arc::new(Counters::default());
    let warm_up = Arc::new(WarmUp::new(1 << 30, 1 << 30, counters.clone()));
    let cache = Arc::new(BlockCache::new(0).with_warm_up(warm_up.clone()));
    let probe = Arc::new(InFlightProbe {
        file: MemFile(bytes),
        warm_up: warm_up.clone(),
        seen: Mutex::new(Vec::new()),
    });
    let file = Arc::clone(&probe) as Arc<dyn RandomAccessFile>;
    let (r, _) = open_file(file, cache).expect("open");
    let seen = |f: &dyn Fn()| {
        probe.seen.lock().clear();
        f();
        std::mem::take(&mut *probe.seen.lock())
    };
    let get = seen(&|| {
        r.get(b"user00000100", 10).expect("get");
    });
    assert_eq!(get, vec![(1, 1)]);
    let q: Vec<Vec<u8>> = (0..2_000u64)
        .step_by(100)
        .map(|i| format!("user{i:08}").into_bytes())
        .collect();
    let keys: Vec<&[u8]> = q.iter().map(|k| &k[..]).collect();
    let batch = seen(&|| {
        r.multi_get(&keys, 10, &mut vec![None; keys.len()])
            .expect("multi_get");
    });
    assert!(!batch.is_empty());
    assert!(
        batch.iter().all(|&(all, gets)| all >= 1 && gets == 0),
        "{batch:?}"
    );
    warm_up.shutdown();
}

/// 300 versions of one key (over many blocks with small blocks), a key before, a delete after.
pub(super) fn straddling_entries() -> Entries {
    let mut entries: Entries = (1..=300u64)
        .rev()
        .map(|s| (make_internal_key(b"hot", s, 1), s.to_le_bytes().to_vec()))
        .collect();
    entries.insert(0, (make_internal_key(b"a", 1, 1), b"v".to_vec()));
    entries.push((make_internal_key(b"z", 1, 0), Vec::new()));
    entries
}

/// A key whose versions straddle many blocks still costs one block read per lookup, and
/// absent keys past the file or rejected by the filter cost none.
/// Through the map, a block stored uncompressed is read in place: no device read, nothing
/// cached. A compressed one is decompressed from the map and cached, and from the first
/// such block on the file's lookups ask the cache first.
#[test]
fn mapped_gets_read_stored_blocks_in_place_and_cache_compressed_ones() {
    let entries = straddling_entries();
    for c in [Compression::None, Compression::Lz4] {
        let (bytes, _) = build(&entries, opts(c, 10, 128, 2));
        let cache = Arc::new(BlockCache::new(1 << 20));
        let (r, counters) = open_mapped(bytes, cache.clone()).expect("open");
        let device_reads = counters.device_reads.load(Relaxed);
        for seq in 0..=301u64 {
            let got = r.get(b"hot", seq).expect("get");
            assert_eq!(got, expected_get(&entries, b"hot", seq), "{c:?} seq {seq}");
        }
        assert_eq!(counters.device_reads.load(Relaxed), device_reads, "{c:?}");
        let mapped = counters.mapped_reads.load(Relaxed);
        let hits = counters.block_cache_hits.load(Relaxed);
        if c == Compression::None {
            assert!(mapped >= 302, "{mapped} mapped reads");
            assert_eq!(hits, 0);
            assert_eq!(cache.used_bytes(), 0, "a block stored as it is was cached");
        } else {
            assert!(hits > 0, "no compressed block was cached");
            assert!(mapped < 302, "every get read the map: {mapped}");
        }
    }
}

/// An entry of a quarter of a block or more (and at least the floor) ends its block, so a
/// point read's checksum covers about that entry; smaller entries still share blocks.
#[test]
fn large_entries_end_their_blocks() {
    let block = 4096;
    let large = builder::LARGE_ENTRY_SHARE;
    assert!(builder::is_large_entry(block / large, block));
    assert!(!builder::is_large_entry(block / large - 1, block));
    assert!(!builder::is_large_entry(
        builder::LARGE_ENTRY_MIN_BYTES - 1,
        1024
    ));
    // Values of 100, 600 (under a quarter of 4 KiB) and 1 100 bytes, in a repeating pattern.
    let sizes = [100, 600, 1100, 100, 100, 1100, 1100, 600, 100];
    let entries: Entries = (0..300u64)
        .map(|i| {
            let len = sizes[i as usize % sizes.len()];
            let k = make_internal_key(format!("user{i:05}").as_bytes(), i + 1, 1);
            (k, vec![(i % 251) as u8; len])
        })
        .collect();
    let (bytes, _) = build(&entries, opts(Compression::None, 10, block, 16));
    let (r, _) = open(bytes, 0).expect("open");
    let mut per_block = Vec::new();
    for h in r.data_block_handles().expect("handles") {
        let b = r.read_block(h).expect("block");
        let mut it = b.iter();
        it.seek_to_first();
        let mut lens = Vec::new();
        while it.valid() {
            lens.push(it.key().len() + it.value().len());
            it.next();
        }
        per_block.push(lens);
    }
    let ends_of_blocks = per_block.iter().flat_map(|l| l.last().copied());
    let large_ends = ends_of_blocks
        .filter(|&n| builder::is_large_entry(n, block))
        .count();
    let large_entries = entries
        .iter()
        .filter(|(k, v)| builder::is_large_entry(k.len() + v.len(), block))
        .count();
    assert_eq!(
        large_ends, large_entries,
        "a large entry did not end its block"
    );
    assert!(
        per_block.iter().any(|l| l.len() >= 3),
        "small entries no longer share blocks: {per_block:?}"
    );
    for (k, _) in entries.iter().step_by(7) {
        let u = split_internal(k).expect("key").0;
        let got = r.get(u, MAX_SEQ).expect("get");
        assert_eq!(got, expected_get(&entries, u, MAX_SEQ));
    }
}

/// Through the map, an iterator reads blocks stored uncompressed in place, a long walk too,
/// and caches none; compressed ones a seek decodes from the map (no device read), and a
/// long walk over them reads its windows from the file.
#[test]
fn mapped_iterators_read_stored_blocks_in_place_and_walk_compressed_ones_in_windows() {
    let mut rng = StdRng::seed_from_u64(11);
    let entries = random_entries(&mut rng, 3_000);
    for c in [Compression::None, Compression::Lz4] {
        let (bytes, _) = build(&entries, opts(c, 10, 256, 4));
        // No block cache: every block an iterator needs is a miss.
        let (r, counters) = open_mapped(bytes, Arc::new(BlockCache::new(0))).expect("open");
        let device_reads = counters.device_reads.load(Relaxed);
        let mut it = r.iter();
        for i in (0..entries.len()).step_by(97) {
            it.seek(&entries[i].0);
            assert_eq!(
                it.valid().then(|| it.key()),
                Some(&entries[i].0[..]),
                "{c:?}"
            );
            it.next();
            assert_eq!(
                it.valid().then(|| it.key()),
                entries.get(i + 1).map(|e| &e.0[..]),
                "{c:?}"
            );
        }
        assert_eq!(counters.device_reads.load(Relaxed), device_reads, "{c:?}");
        assert!(counters.mapped_reads.load(Relaxed) >= 31, "{c:?}");
        let mapped = counters.mapped_reads.load(Relaxed);
        assert_eq!(collect_forward(&mut r.iter()), entries, "{c:?}");
        let walked = counters.mapped_reads.load(Relaxed) - mapped;
        let blocks = r.data_block_handles().expect("handles").len() as u64;
        if c == Compression::None {
            assert_eq!(counters.device_reads.load(Relaxed), device_reads, "{c:?}");
            assert_eq!(walked, blocks, "a long walk read stored blocks elsewhere");
            assert_eq!(counters.block_cache_hits.load(Relaxed), 0);
        } else {
            assert!(
                counters.device_reads.load(Relaxed) > device_reads,
                "{c:?}: a long walk reads its windows"
            );
        }
    }
}

/// A seek's block enters the cache at once while short walks hit it as often as they miss;
/// once they mostly miss (more blocks than the cache holds), on its second miss only.
#[test]
fn a_seeks_block_passes_the_doorkeeper_while_walks_mostly_miss() {
    let mut rng = StdRng::seed_from_u64(5);
    let entries = random_entries(&mut rng, 3_000);
    let (bytes, _) = build(&entries, opts(Compression::None, 10, 256, 4));
    let cache = Arc::new(BlockCache::new(64 << 20).with_doorkeeper());
    let (r, _) = open_in(bytes, Arc::clone(&cache)).expect("open");
    let mut it = r.iter();
    let mut seek_and_measure = |key: &[u8]| {
        let used = cache.used_bytes();
        it.seek(key);
        assert_eq!(it.valid().then(|| it.key()), Some(key));
        cache.used_bytes() - used
    };
    assert!(
        seek_and_measure(&entries[0].0) > 0,
        "a cold cache keeps a seek's block"
    );
    // Walks that keep nothing (a compaction's input) miss every block without counting.
    let blocks = r.properties().num_data_blocks;
    let passes = u64::from(crate::cache::admission::WALK_PERIOD_MISSES) / blocks + 2;
    for _ in 0..passes {
        assert_eq!(
            collect_forward(&mut r.iter_with(false)).len(),
            entries.len()
        );
    }
    assert!(
        seek_and_measure(&entries[entries.len() / 2].0) > 0,
        "a compaction's misses turned the walks' rule"
    );
    for _ in 0..crate::cache::admission::WALK_PERIOD_MISSES {
        cache.record_walk_lookup(false);
    }
    let far = &entries[entries.len() - 1].0;
    assert_eq!(seek_and_measure(far), 0, "kept on its first miss");
    assert!(seek_and_measure(far) > 0, "not kept on its second miss");
    assert_eq!(seek_and_measure(far), 0, "not a hit");
}

#[test]
fn one_block_read_per_get() {
    let entries = straddling_entries();
    let (bytes, _) = build(&entries, opts(Compression::None, 10, 128, 2));
    let (r, c) = open(bytes, 0).expect("open");
    assert!(r.properties().num_data_blocks > 20);
    for seq in 0..=301u64 {
        let before = c.device_reads.load(Relaxed);
        let got = r.get(b"hot", seq).expect("get");
        assert_eq!(got, expected_get(&entries, b"hot", seq));
        assert_eq!(c.device_reads.load(Relaxed) - before, 1, "seq {seq}");
    }
    let before = c.device_reads.load(Relaxed);
    assert_eq!(r.get(b"zz", 5).expect("get"), None);
    assert_eq!(c.device_reads.load(Relaxed), before);
    assert_eq!(
        r.get(b"z", 5).expect("get"),
        Some(LookupResult::Deleted { seq: 1 })
    );
}

#[test]
fn empty_file_and_real_vfs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vfs = RealVfs;
    let path = dir.path().join(NAME);
    let b = SstBuilder::new(vfs.create(&path).expect("create"), SstOptions::default());
    let s = b.finish().expect("finish");
    assert_eq!(s.num_entries, 0);
    let cache = Arc::new(BlockCache::new(1 << 20));
    let counters = Arc::new(Counters::default());
    let open_real = |p: &std::path::Path| {
        let f = vfs.open_read(p, false).expect("open_read");
        SstReader::open(f, p.to_path_buf(), 1, cache.clone(), counters.clone(), true).expect("open")
    };
    let r = open_real(&path);
    assert!(!r.iter().valid());
    let mut it = r.iter();
    it.seek_to_last();
    assert!(!it.valid() && it.status().is_ok());
    assert_eq!(r.get(b"k", MAX_SEQ).expect("get"), None);

    let mut rng = StdRng::seed_from_u64(3);
    let entries = random_entries(&mut rng, 500);
    let mut b = SstBuilder::new(vfs.create(&path).expect("create"), SstOptions::default());
    for (k, v) in &entries {
        b.add(k, v).expect("add");
    }
    let s = b.finish().expect("finish");
    assert_eq!(s.file_size, vfs.file_size(&path).expect("size"));
    let r = open_real(&path);
    let mut it = r.iter();
    assert!(collect_forward(&mut it) == entries);
    // Second scan is served from the cache.
    let hits = counters.block_cache_hits.load(Relaxed);
    assert!(collect_forward(&mut it) == entries);
    assert!(counters.block_cache_hits.load(Relaxed) > hits);
    assert!(cache.used_bytes() > 0);
    r.verify_checksums().expect("verify");
    for h in r.data_block_handles().expect("handles") {
        let block = r.read_block(h).expect("block");
        let mut bi = block.iter();
        bi.seek_to_first();
        assert!(bi.valid());
    }
}

#[test]
fn iterator_is_static_and_send() {
    fn assert_send<T: Send + 'static>(_: &T) {}
    let entries = vec![(make_internal_key(b"a", 1, 1), b"1".to_vec())];
    let (bytes, _) = build(&entries, SstOptions::default());
    let (r, _) = open(bytes, 0).expect("open");
    let it = r.iter();
    assert_send(&it);
    drop(r);
    let handle = std::thread::spawn(move || {
        let mut it = it;
        collect_forward(&mut it)
    });
    assert_eq!(handle.join().expect("thread"), entries);
}

/// The builder asks the OS to write back what it appended, in order and once per threshold,
/// without changing a byte of the file; a failed request fails the build.
#[test]
fn writeback_hints_cover_the_file_once_per_threshold() {
    use crate::vfs::hints::{assert_contiguous, HintRecorder};
    let entries = random_entries(&mut StdRng::seed_from_u64(7), 3000);
    let plain = opts(Compression::None, 10, 512, 4);
    let (expected, _) = build(&entries, plain.clone());

    let hinted = |every: u64, fail: bool| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let hints = Arc::new(Mutex::new(Vec::new()));
        let file = HintRecorder {
            inner: Box::new(MemWritable(buf.clone())),
            hints: hints.clone(),
            fail,
        };
        let o = SstOptions {
            writeback_bytes: every,
            ..plain.clone()
        };
        let mut b = SstBuilder::new(Box::new(file), o);
        let built = entries
            .iter()
            .try_for_each(|(k, v)| b.add(k, v))
            .and_then(|()| b.finish());
        let got = hints.lock().clone();
        let bytes = buf.lock().clone();
        (built, got, bytes)
    };

    let (built, got, bytes) = hinted(0, false);
    assert!(built.is_ok() && got.is_empty(), "{got:?}");
    assert_eq!(bytes, expected);

    let every = 100 << 10;
    let (built, got, bytes) = hinted(every, false);
    assert!(built.is_ok());
    assert_eq!(bytes, expected, "hints change no byte");
    assert!(
        bytes.len() as u64 > 3 * every,
        "a file of several thresholds"
    );
    assert_contiguous(&got, 0, every);
    let end = got.last().map_or(0, |(o, l)| o + l);
    assert!(end <= bytes.len() as u64 && bytes.len() as u64 - end < 2 * every);

    let (built, _, _) = hinted(every, true);
    assert!(built.is_err(), "a failed writeback request fails the build");
}

/// A file of 40 K entries (about 270 blocks of 4 KiB) for the scan tests, opened with a
/// cache that holds it all: its entries, reader, counters and size.
fn scanned_file() -> (Entries, SstReader, Arc<Counters>, u64) {
    let (entries, bytes) = scanned_bytes();
    let size = bytes.len() as u64;
    let (r, c) = open(bytes, 64 << 20).expect("open");
    (entries, r, c, size)
}

/// The entries and bytes of [`scanned_file`].
fn scanned_bytes() -> (Entries, Vec<u8>) {
    let entries: Entries = (0..40_000u64)
        .map(|i| {
            let key = make_internal_key(format!("user{i:08}").as_bytes(), 9, 1);
            (key, format!("value {i} {}", i * 7919 % 1000).into_bytes())
        })
        .collect();
    let (bytes, _) = build(&entries, opts(Compression::Lz4, 10, 4096, 16));
    (entries, bytes)
}

/// A scan of a file of `blocks` blocks made at most one read per largest window (and a few
/// small ones while the window grew).
fn assert_read_in_windows(scan_reads: u64, file_size: u64, blocks: u64) {
    assert!(blocks > 200, "{blocks} blocks");
    let windows = file_size / readahead::MAX_WINDOW + 6;
    assert!(
        scan_reads <= windows,
        "{scan_reads} reads for {blocks} blocks"
    );
}

/// The block holding internal key `kept` is in the cache, the one holding `left_out` is not.
fn assert_kept_and_left_out(r: &SstReader, c: &Counters, kept: &[u8], left_out: &[u8]) {
    let reads = || c.device_reads.load(Relaxed);
    let before = reads();
    let kept = crate::types::user_key(kept);
    assert!(r.get(kept, MAX_SEQ).expect("get").is_some());
    assert_eq!(
        reads(),
        before,
        "a block read before the long scan is cached"
    );
    let left_out = crate::types::user_key(left_out);
    assert!(r.get(left_out, MAX_SEQ).expect("get").is_some());
    assert_eq!(
        reads(),
        before + 1,
        "a long scan's block was left out of the cache"
    );
}

/// A forward scan over uncached blocks reads windows that double up to the largest, not
/// one block per read; the blocks of a short walk enter the block cache, those read once
/// the walk is a long scan do not.
#[test]
fn scans_read_ahead_in_growing_windows_and_long_scans_bypass_the_cache() {
    let (entries, r, c, file_size) = scanned_file();
    let blocks = r.properties().num_data_blocks;
    let reads = || c.device_reads.load(Relaxed);

    let before = reads();
    assert_eq!(collect_forward(&mut r.iter()), entries);
    assert_read_in_windows(reads() - before, file_size, blocks);
    // The first blocks were read before the walk became a long scan: cached. The last ones
    // were not.
    assert_kept_and_left_out(&r, &c, &entries[0].0, &entries[entries.len() - 1].0);

    // A short walk after a seek: a few small reads, and its blocks are kept.
    let middle = &entries[entries.len() / 2].0;
    let walk = |it: &mut SstIterator| {
        it.seek(middle);
        for _ in 0..200 {
            assert!(it.valid());
            it.next();
        }
    };
    let before = reads();
    walk(&mut r.iter());
    assert!(reads() - before <= 3, "{} reads", reads() - before);
    let before = reads();
    walk(&mut r.iter());
    assert_eq!(reads(), before, "the short walk's blocks are cached");
}

/// A walk backward reads windows that end at the block it missed, growing as a forward
/// walk's do, and a long one keeps its blocks out of the cache.
#[test]
fn backward_scans_read_ahead_and_long_ones_bypass_the_cache() {
    let (entries, r, c, file_size) = scanned_file();
    let blocks = r.properties().num_data_blocks;
    let reads = || c.device_reads.load(Relaxed);

    let before = reads();
    let mut it = r.iter();
    it.seek_to_last();
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    assert!(it.status().is_ok());
    got.reverse();
    assert_eq!(got, entries);
    assert_read_in_windows(reads() - before, file_size, blocks);
    // The last blocks were read before the walk became a long scan: cached. The first ones
    // were not.
    assert_kept_and_left_out(&r, &c, &entries[entries.len() - 1].0, &entries[0].0);
}

/// A file that counts the reads asking for the kernel's readahead apart from the others.
struct ScanCountingFile {
    file: MemFile,
    scan_reads: std::sync::atomic::AtomicU64,
    other_reads: std::sync::atomic::AtomicU64,
}

impl RandomAccessFile for ScanCountingFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.other_reads.fetch_add(1, Relaxed);
        self.file.read_exact_at(buf, offset)
    }
    fn read_exact_at_scan(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.scan_reads.fetch_add(1, Relaxed);
        self.file.read_exact_at(buf, offset)
    }
    fn size(&self) -> u64 {
        self.file.size()
    }
}

/// A short walk after a seek reads what its own windows ask for, without the kernel's
/// readahead on top; a walk that becomes a long scan reads through it from then on.
#[test]
fn only_long_scans_read_through_the_kernels_readahead() {
    let (entries, bytes) = scanned_bytes();
    let file = Arc::new(ScanCountingFile {
        file: MemFile(bytes),
        scan_reads: Default::default(),
        other_reads: Default::default(),
    });
    let (r, _) = open_file(file.clone(), Arc::new(BlockCache::new(64 << 20))).expect("open");
    let counts = || {
        (
            file.scan_reads.load(Relaxed),
            file.other_reads.load(Relaxed),
        )
    };

    let (_, opened) = counts();
    let mut it = r.iter();
    it.seek(&entries[entries.len() / 2].0);
    for _ in 0..600 {
        assert!(it.valid());
        it.next();
    }
    let (scan, walk) = counts();
    assert_eq!(scan, 0, "a short walk asks for no readahead");
    assert!(walk > opened, "the walk read its blocks");

    assert_eq!(collect_forward(&mut r.iter()), entries);
    let (scan, after) = counts();
    assert!(scan > 0, "a long scan reads through the readahead");
    // Before the walk is a long scan: its first block and the windows as they grow.
    assert!(
        after - walk <= 6,
        "{} reads without readahead",
        after - walk
    );
}
