//! A point lookup brings its block into the page cache and nothing more; a scan lets the
//! kernel read ahead. Lookups that trigger the kernel's readahead give cold random reads a
//! p99 tail (docs/design/cold-start-warm-up.md): this looks, with
//! `mincore`, at which pages of an SST a cold `get` and a cold scan leave in the page cache.
//! Where the file system shows no readahead even for the scan there is nothing to tell
//! apart, and the test says so and passes.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
// Unsafe code here: `mmap`, `mincore` and `posix_fadvise` through libc; each block says
// why it is sound.
#![allow(clippy::unwrap_used, clippy::expect_used, unsafe_code)]

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

mod common;

use cellar_engine::{Db, Options, ReadOptions};

const PAGE_BYTES: usize = 4096;

/// Pages of `path` in the page cache.
fn resident_pages(path: &Path) -> usize {
    let file = File::open(path).expect("open sst");
    let len = file.metadata().expect("stat sst").len() as usize;
    let pages = len.div_ceil(PAGE_BYTES);
    let mut vec = vec![0u8; pages];
    // SAFETY: a read-only shared mapping of an open file, unmapped before returning; mincore
    // writes one byte per page of it into `vec`, which holds `pages` bytes.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        assert_ne!(addr, libc::MAP_FAILED, "mmap");
        let rc = libc::mincore(addr, len, vec.as_mut_ptr());
        libc::munmap(addr, len);
        assert_eq!(rc, 0, "mincore");
    }
    vec.iter().filter(|&&b| b & 1 == 1).count()
}

/// Whether this host's device finishes every read inside a `preadv2(RWF_NOWAIT)` probe: the
/// probe of an evicted page starts its read, and where that read completes before the probe
/// looks again the kernel returns the bytes as though they had been cached. Five probes of
/// an evicted page must all return its bytes, as the five cold lookups were all counted
/// cached. The probe's description is marked random, as the engine's point reads are, so
/// the kernel starts a read of the one page and not a readahead window, which takes longer.
fn device_reads_finish_inside_the_probe(path: &Path) -> bool {
    let file = File::open(path).expect("open sst");
    // SAFETY: posix_fadvise only reads its arguments; the descriptor is open for the call.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    assert_eq!(rc, 0, "posix_fadvise(RANDOM)");
    let mut buf = vec![0u8; PAGE_BYTES];
    (0..5).all(|_| {
        evict(path);
        if resident_pages(path) != 0 {
            return false;
        }
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: `iov` describes `buf`, valid for writes of its length for the call; the
        // descriptor is open for the call.
        let n = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, 0, libc::RWF_NOWAIT) };
        n == PAGE_BYTES as isize
    })
}

/// Evicts the file's (clean) pages from the page cache.
fn evict(path: &Path) {
    let file = File::open(path).expect("open sst");
    // SAFETY: posix_fadvise only reads its arguments; the descriptor is open for the call.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "posix_fadvise(DONTNEED)");
}

fn only_sst(dir: &Path) -> PathBuf {
    let ssts: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert_eq!(ssts.len(), 1, "{ssts:?}");
    ssts.into_iter().next().expect("one sst")
}

/// A database of 20 000 records (`key{i:08}` → `{i:0100}`) flushed into one SST.
fn db_of_one_sst(dir: &Path, opts: Options) -> (Db, PathBuf) {
    let db = Db::open(dir, opts).expect("open");
    common::put_numbered_records_and_flush(&db, 20_000);
    let sst = only_sst(dir);
    (db, sst)
}

#[test]
fn point_get_reads_only_its_block_and_scans_read_ahead() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        // Every lookup goes to the file: the scan below must not find the get's block cached.
        block_cache_size_bytes: 0,
        ..Options::default()
    };
    let (db, sst) = db_of_one_sst(dir.path(), opts);
    let ks = db.default_keyspace();

    evict(&sst);
    if resident_pages(&sst) != 0 {
        eprintln!("skipped: this file system keeps the SST's pages cached after DONTNEED");
        return;
    }
    // The first key's block starts at offset 0, where the kernel's readahead (when on)
    // always reads a window ahead.
    let got = db
        .get(&ks, b"key00000000", &ReadOptions::default())
        .expect("get");
    assert!(got.is_some());
    let point = resident_pages(&sst);

    evict(&sst);
    let mut it = db.iter(&ks, ReadOptions::default()).expect("iter");
    it.seek_to_first();
    assert!(it.valid());
    assert_eq!(it.key(), b"key00000000");
    it.status().expect("scan");
    let scan = resident_pages(&sst);

    // A block of 4 KiB (plus its trailer) spans at most 2 pages.
    if scan <= 2 {
        eprintln!("skipped: no readahead on this file system (a scan read {scan} pages)");
        return;
    }
    assert!(
        point <= 2,
        "a get read {point} pages of the SST into the page cache (a scan {scan}): readahead"
    );
}

/// A database of one SST whose pages were evicted, reopened with the given warm-up budget.
fn cold_db_of_one_sst(dir: &Path, warm_up_budget_bytes: u64) -> (Db, PathBuf) {
    let opts = || Options {
        block_cache_size_bytes: 0,
        // Reads that the page cache serves through the map pay no rent: these tests time
        // every read.
        mapped_reads: false,
        // Warm once point reads have waited 10 ms (the floor), whatever the file's size.
        warm_up_read_bytes_per_sec: u64::MAX,
        warm_up_budget_bytes,
        ..Options::default()
    };
    let (db, sst) = db_of_one_sst(dir, opts());
    db.close().expect("close");
    evict(&sst);
    (Db::open(dir, opts()).expect("reopen"), sst)
}

/// Key indexes in `0..20_000` from a fixed xorshift sequence, for random reads of
/// `db_of_one_sst`'s keys.
fn random_key_indexes() -> impl Iterator<Item = u32> {
    let mut x = 0x9E37_79B9u32;
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x % 20_000
    })
}

/// Random point reads of `db` (every answer checked) until `done` or 400 000 reads.
fn read_until(db: &Db, done: impl Fn(&Db) -> bool) -> usize {
    let ks = db.default_keyspace();
    for (n, i) in random_key_indexes().take(400_000).enumerate() {
        if done(db) {
            return n;
        }
        let got = db
            .get(
                &ks,
                format!("key{i:08}").as_bytes(),
                &ReadOptions::default(),
            )
            .expect("get");
        assert_eq!(got.as_deref(), Some(format!("{i:0100}").as_bytes()));
    }
    400_000
}

#[test]
fn point_reads_that_paid_for_a_file_warm_it_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, sst) = cold_db_of_one_sst(dir.path(), 1 << 30);
    let size = std::fs::metadata(&sst).expect("stat").len();
    let reads = read_until(&db, |db| db.stats().warm_ups == 1);
    assert!(reads < 400_000, "no warm-up after {reads} reads");
    let stats = db.stats();
    // Chunks the lookups had already read in whole are skipped; the rest is read.
    assert_eq!(stats.warm_up_bytes + stats.warm_up_cached_bytes, size);
    assert_eq!(stats.warm_up_budget_used_bytes, size);
    let pages = size.div_ceil(PAGE_BYTES as u64) as usize;
    assert_eq!(
        resident_pages(&sst),
        pages,
        "the whole file is in the page cache"
    );
    // Reads go on, right, and the file is not warmed again.
    read_until(&db, |_| false);
    assert_eq!(db.stats().warm_ups, 1);
    db.close().expect("close");
}

/// A seek is a random read as a point read is: a file its seeks have waited on as long as
/// its price is warmed whole too, or a seek-only workload on a cold database would read it
/// block by block from the disk for ever.
#[test]
fn seeks_that_paid_for_a_file_warm_it_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, sst) = cold_db_of_one_sst(dir.path(), 1 << 30);
    let size = std::fs::metadata(&sst).expect("stat").len();
    let ks = db.default_keyspace();
    let mut seeks = 0;
    for i in random_key_indexes().take(400_000) {
        if db.stats().warm_ups > 0 {
            break;
        }
        let key = format!("key{i:08}");
        let mut it = db.iter(&ks, ReadOptions::default()).expect("iter");
        it.seek(key.as_bytes());
        it.status().expect("seek");
        assert!(it.valid());
        assert_eq!(it.key(), key.as_bytes());
        seeks += 1;
    }
    assert!(seeks < 400_000, "no warm-up after {seeks} seeks");
    let stats = db.stats();
    assert_eq!(stats.warm_up_bytes + stats.warm_up_cached_bytes, size);
    db.close().expect("close");
}

#[test]
fn no_warm_up_without_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A budget smaller than the file: nothing is warmed, the reads still answer.
    let (db, _) = cold_db_of_one_sst(dir.path(), 4096);
    read_until(&db, |_| false);
    let stats = db.stats();
    assert_eq!((stats.warm_ups, stats.warm_up_bytes), (0, 0));
    assert_eq!(stats.warm_up_budget_used_bytes, 0);
    db.close().expect("close");
}

/// A point read the page cache serves is counted apart from one that waited on the disk
/// (`Stats::page_cache_reads`): `multi_get` spreads a batch over threads only for the latter.
#[test]
fn point_reads_the_page_cache_serves_are_counted_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        block_cache_size_bytes: 0,
        warm_up_budget_bytes: 0,
        ..Options::default()
    };
    let (db, sst) = db_of_one_sst(dir.path(), opts);
    let ks = db.default_keyspace();
    let get = || {
        let got = db
            .get(&ks, b"key00012345", &ReadOptions::default())
            .expect("get");
        assert_eq!(got.as_deref(), Some(format!("{:0100}", 12345).as_bytes()));
    };
    // A cold lookup is counted as waiting on the device when any of its reads waited (here
    // it reads one block). The kernel's RWF_NOWAIT probe starts the read of the pages it
    // misses, and a fast device can finish that read before the probe returns, which then
    // counts it as cached: of a few cold tries, one is counted as waiting unless the race
    // is won every time. Where the device wins it every time, only the warm half below is
    // checked.
    let mut cold_lookup_counted_as_waiting = false;
    for _ in 0..5 {
        evict(&sst);
        if resident_pages(&sst) != 0 {
            eprintln!("skipped: this file system keeps the SST's pages cached after DONTNEED");
            return;
        }
        let s0 = db.stats();
        get();
        let s1 = db.stats();
        let reads = s1.device_reads - s0.device_reads;
        let cached = s1.page_cache_reads - s0.page_cache_reads;
        assert!(reads > 0);
        if cached < reads {
            cold_lookup_counted_as_waiting = true;
            break;
        }
    }
    if !cold_lookup_counted_as_waiting && device_reads_finish_inside_the_probe(&sst) {
        eprintln!("cold half skipped: this device finishes every read inside the RWF_NOWAIT probe");
    } else {
        assert!(
            cold_lookup_counted_as_waiting,
            "every read of every cold lookup was counted as served by the page cache"
        );
    }
    // The same lookup again: every block it reads is now in the page cache. After the
    // misses above a few reads skip the probe (counted as waiting); a later lookup probes
    // and finds everything cached.
    for _ in 0..2 * 64 {
        get();
    }
    let s1 = db.stats();
    get();
    let s2 = db.stats();
    let reads = s2.device_reads - s1.device_reads;
    let cached = s2.page_cache_reads - s1.page_cache_reads;
    if cached == 0 {
        eprintln!("skipped: this file system serves no RWF_NOWAIT reads");
        return;
    }
    assert_eq!(cached, reads, "every read of the second lookup was cached");
    db.close().expect("close");
}
