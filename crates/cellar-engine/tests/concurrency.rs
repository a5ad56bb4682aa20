//! Concurrency: writers, readers, snapshots and checkpoints at the same time as background
//! flushes and compactions (tiny memtables), on the real file system and on `MemVfs`.
//!
//! Every value encodes its key and a version; writers count up, so a reader can check that
//! what it sees is well-formed, never older than a write acknowledged before the read began,
//! never newer than a write that was issued, and never goes backwards.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use cellar_engine::vfs::{FaultVfs, MemVfs, RealVfs, Vfs};
use cellar_engine::{Db, Durability, Options, ReadOptions, WriteBatch, WriteOptions};

use common::{scan_all, tiny_options};

const WRITERS: usize = 4;
const KEYS_PER_WRITER: usize = 40;
const VERSIONS: u32 = 150;

fn key(w: usize, j: usize) -> Vec<u8> {
    format!("w{w}-k{j:03}").into_bytes()
}

fn key_index(k: &[u8]) -> Option<usize> {
    let s = std::str::from_utf8(k).ok()?;
    let rest = s.strip_prefix('w')?;
    let (w, j) = rest.split_once("-k")?;
    let (w, j): (usize, usize) = (w.parse().ok()?, j.parse().ok()?);
    (w < WRITERS && j < KEYS_PER_WRITER).then_some(w * KEYS_PER_WRITER + j)
}

/// `<key>|<version>|<filler>`: the filler length varies with the version so values differ
/// in size and memtables fill at different points.
fn value(k: &[u8], version: u32) -> Vec<u8> {
    let mut v = k.to_vec();
    v.extend_from_slice(format!("|{version:08}|").as_bytes());
    let n = 10 + (version as usize * 7 + k.len()) % 60;
    v.extend((0..n).map(|i| b'a' + ((i + version as usize) % 26) as u8));
    v
}

/// The version a value encodes, if it is well-formed for `k`.
fn parse(k: &[u8], v: &[u8]) -> Option<u32> {
    let rest = v.strip_prefix(k)?.strip_prefix(b"|")?;
    let ver: u32 = std::str::from_utf8(rest.get(..8)?).ok()?.parse().ok()?;
    (value(k, ver) == v).then_some(ver)
}

/// Shared progress: per key, the highest version issued (before the write call) and the
/// highest acknowledged (after it returned).
struct Progress {
    issued: Vec<AtomicU32>,
    acked: Vec<AtomicU32>,
    writers_done: AtomicUsize,
    problems: Mutex<Vec<String>>,
}

impl Progress {
    fn new() -> Arc<Self> {
        let n = WRITERS * KEYS_PER_WRITER;
        Arc::new(Progress {
            issued: (0..n).map(|_| AtomicU32::new(0)).collect(),
            acked: (0..n).map(|_| AtomicU32::new(0)).collect(),
            writers_done: AtomicUsize::new(0),
            problems: Mutex::new(Vec::new()),
        })
    }

    fn problem(&self, p: String) {
        let mut v = self.problems.lock().expect("problems lock");
        if v.len() < 50 {
            v.push(p);
        }
    }

    fn done(&self) -> bool {
        self.writers_done.load(Ordering::SeqCst) == WRITERS
    }

    fn acked_snapshot(&self) -> Vec<u32> {
        self.acked
            .iter()
            .map(|a| a.load(Ordering::SeqCst))
            .collect()
    }
}

fn writer(db: Db, w: usize, p: Arc<Progress>) {
    let ks = db.default_keyspace();
    for ver in 1..=VERSIONS {
        let mut j = 0;
        while j < KEYS_PER_WRITER {
            let d = match (ver as usize + j) % 4 {
                0 => Durability::Sync,
                1 => Durability::Flush,
                _ => Durability::Buffered,
            };
            // Every third write is a batch of two keys.
            let n = if j % 3 == 0 && j + 1 < KEYS_PER_WRITER {
                2
            } else {
                1
            };
            let mut b = WriteBatch::new();
            for jj in j..j + n {
                let k = key(w, jj);
                p.issued[w * KEYS_PER_WRITER + jj].store(ver, Ordering::SeqCst);
                b.put(&ks, &k, &value(&k, ver));
            }
            if let Err(e) = db.write(b, &WriteOptions::new(d)) {
                p.problem(format!("writer {w}: {e}"));
                return;
            }
            for jj in j..j + n {
                p.acked[w * KEYS_PER_WRITER + jj].store(ver, Ordering::SeqCst);
            }
            j += n;
        }
    }
    p.writers_done.fetch_add(1, Ordering::SeqCst);
}

/// Checks one observed value of key index `i`: well-formed, at least `floor` (acknowledged
/// before the read began), at most what was issued after the read, and not below what this
/// reader saw before (`seen`, updated).
fn check_seen(p: &Progress, what: &str, k: &[u8], v: Option<&[u8]>, floor: u32, seen: &mut [u32]) {
    let Some(i) = key_index(k) else {
        p.problem(format!(
            "{what}: unknown key {:?}",
            String::from_utf8_lossy(k)
        ));
        return;
    };
    let ver = match v {
        None => 0,
        Some(v) => match parse(k, v) {
            Some(ver) => ver,
            None => {
                p.problem(format!(
                    "{what}: malformed value for {:?}: {:?}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                ));
                return;
            }
        },
    };
    let issued = p.issued[i].load(Ordering::SeqCst);
    if ver < floor {
        p.problem(format!(
            "{what}: {:?} at version {ver}, but version {floor} was acknowledged before the read",
            String::from_utf8_lossy(k)
        ));
    }
    if ver > issued {
        p.problem(format!(
            "{what}: {:?} at version {ver}, never issued (issued {issued})",
            String::from_utf8_lossy(k)
        ));
    }
    if ver < seen[i] {
        p.problem(format!(
            "{what}: {:?} went back from version {} to {ver}",
            String::from_utf8_lossy(k),
            seen[i]
        ));
    }
    seen[i] = seen[i].max(ver);
}

fn reader(db: Db, r: usize, p: Arc<Progress>) {
    let ks = db.default_keyspace();
    let n = WRITERS * KEYS_PER_WRITER;
    let mut seen = vec![0u32; n];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d ^ (r as u64 + 1);
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut rounds = 0u64;
    // Keep reading a little after the writers finish, to check the final state too.
    let mut after_done = 0;
    while after_done < 20 {
        if p.done() {
            after_done += 1;
        }
        rounds += 1;
        let w = (rnd() % WRITERS as u64) as usize;
        match rnd() % 6 {
            0 | 1 => {
                let j = (rnd() % KEYS_PER_WRITER as u64) as usize;
                let k = key(w, j);
                let floor = p.acked[w * KEYS_PER_WRITER + j].load(Ordering::SeqCst);
                match db.get(&ks, &k, &ReadOptions::default()) {
                    Ok(v) => check_seen(&p, "get", &k, v.as_deref(), floor, &mut seen),
                    Err(e) => p.problem(format!("get: {e}")),
                }
            }
            2 => {
                let keys: Vec<Vec<u8>> = (0..12)
                    .map(|_| key(w, (rnd() % KEYS_PER_WRITER as u64) as usize))
                    .collect();
                let floors = p.acked_snapshot();
                let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
                match db.multi_get(&ks, &refs, &ReadOptions::default()) {
                    Ok(vs) => {
                        for (k, v) in keys.iter().zip(vs) {
                            let i = key_index(k).unwrap_or(0);
                            check_seen(&p, "multi_get", k, v.as_deref(), floors[i], &mut seen);
                        }
                    }
                    Err(e) => p.problem(format!("multi_get: {e}")),
                }
            }
            3 | 4 => {
                // A prefix scan of one writer's keys, forward or backward.
                let floors = p.acked_snapshot();
                let ro = ReadOptions {
                    prefix: Some(format!("w{w}-").into_bytes()),
                    ..ReadOptions::default()
                };
                let mut it = match db.iter(&ks, ro) {
                    Ok(it) => it,
                    Err(e) => {
                        p.problem(format!("iter: {e}"));
                        continue;
                    }
                };
                let backward = rnd() % 2 == 0;
                if backward {
                    it.seek_to_last();
                } else {
                    it.seek_to_first();
                }
                let mut got: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
                let mut last: Option<Vec<u8>> = None;
                while it.valid() {
                    let k = it.key().to_vec();
                    if let Some(l) = &last {
                        if (backward && k >= *l) || (!backward && k <= *l) {
                            p.problem(format!("scan out of order at {:?}", k));
                        }
                    }
                    got.insert(k.clone(), it.value().to_vec());
                    last = Some(k);
                    if backward {
                        it.prev();
                    } else {
                        it.next();
                    }
                }
                if let Err(e) = it.status() {
                    p.problem(format!("scan: {e}"));
                }
                for j in 0..KEYS_PER_WRITER {
                    let k = key(w, j);
                    let i = w * KEYS_PER_WRITER + j;
                    check_seen(
                        &p,
                        "scan",
                        &k,
                        got.get(&k).map(|v| v.as_slice()),
                        floors[i],
                        &mut seen,
                    );
                }
                if got.len() > KEYS_PER_WRITER {
                    p.problem(format!("scan of w{w} saw {} keys", got.len()));
                }
            }
            _ => {
                // A snapshot reads the same before and after more writes and compactions.
                let floors = p.acked_snapshot();
                let snap = db.snapshot();
                let first = scan_all_at(&db, &snap);
                for (k, v) in &first {
                    let i = key_index(k).unwrap_or(0);
                    check_seen(&p, "snapshot", k, Some(v), floors[i], &mut seen);
                }
                thread::sleep(Duration::from_millis(2));
                let again = scan_all_at(&db, &snap);
                if first != again {
                    p.problem(format!(
                        "snapshot {:?} changed: {} keys then {}",
                        snap,
                        first.len(),
                        again.len()
                    ));
                }
                let j = (rnd() % KEYS_PER_WRITER as u64) as usize;
                let k = key(w, j);
                match db.get(&ks, &k, &ReadOptions::at(&snap)) {
                    Ok(v) if v.as_ref() == first.get(&k) => {}
                    other => p.problem(format!(
                        "get at snapshot disagrees with its scan: {other:?}"
                    )),
                }
            }
        }
    }
    assert!(rounds > 20);
}

fn scan_all_at(db: &Db, snap: &cellar_engine::Snapshot) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db
        .iter(&db.default_keyspace(), ReadOptions::at(snap))
        .expect("iter");
    it.seek_to_first();
    let mut out = BTreeMap::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().expect("snapshot scan");
    out
}

fn final_state() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for w in 0..WRITERS {
        for j in 0..KEYS_PER_WRITER {
            let k = key(w, j);
            m.insert(k.clone(), value(&k, VERSIONS));
        }
    }
    m
}

/// Checkpoints taken while everything runs: each opens on its own and holds, for every key,
/// a version between what was acknowledged before it began and what was issued after.
fn checkpointer(db: Db, vfs: Arc<dyn Vfs>, dirs: Vec<PathBuf>, p: Arc<Progress>) {
    for dir in dirs {
        thread::sleep(Duration::from_millis(1));
        let floors = p.acked_snapshot();
        if let Err(e) = db.checkpoint(&dir) {
            // Known race (see `checkpoints_during_heavy_compaction_succeed`): tolerated here
            // so this test keeps checking the checkpoints that do succeed.
            let race = TOLERATE_CHECKPOINT_RACE && e.to_string().contains("no such file");
            if !race {
                p.problem(format!("checkpoint {}: {e}", dir.display()));
            }
            continue;
        }
        let ceilings: Vec<u32> = p.issued.iter().map(|a| a.load(Ordering::SeqCst)).collect();
        let opts = Options {
            vfs: Arc::clone(&vfs),
            create_if_missing: false,
            background_work: false,
            ..Options::default()
        };
        let copy = match Db::open(&dir, opts) {
            Ok(c) => c,
            Err(e) => {
                p.problem(format!("open checkpoint {}: {e}", dir.display()));
                continue;
            }
        };
        let got = scan_all(&copy, &copy.default_keyspace());
        for w in 0..WRITERS {
            for j in 0..KEYS_PER_WRITER {
                let k = key(w, j);
                let i = w * KEYS_PER_WRITER + j;
                let ver = match got.get(&k) {
                    None => 0,
                    Some(v) => parse(&k, v).unwrap_or(u32::MAX),
                };
                if ver < floors[i] || ver > ceilings[i] {
                    p.problem(format!(
                        "checkpoint {}: {:?} at version {ver}, expected {}..={}",
                        dir.display(),
                        String::from_utf8_lossy(&k),
                        floors[i],
                        ceilings[i]
                    ));
                }
            }
        }
    }
}

/// BUG: set to false once checkpoints no longer race compactions
/// (`checkpoints_during_heavy_compaction_succeed` un-ignored).
const TOLERATE_CHECKPOINT_RACE: bool = false;

fn run_mixed(vfs: Arc<dyn Vfs>, dir: &Path, checkpoint_root: &Path, background: bool) {
    let opts = tiny_options(Arc::clone(&vfs), background);
    let db = Db::open(dir, opts.clone()).expect("open");
    let p = Progress::new();
    let start = Instant::now();
    let mut handles = Vec::new();
    for w in 0..WRITERS {
        let (db, p) = (db.clone(), Arc::clone(&p));
        handles.push(thread::spawn(move || writer(db, w, p)));
    }
    for r in 0..2 {
        let (db, p) = (db.clone(), Arc::clone(&p));
        handles.push(thread::spawn(move || reader(db, r, p)));
    }
    {
        let (db, p, vfs) = (db.clone(), Arc::clone(&p), Arc::clone(&vfs));
        let dirs: Vec<PathBuf> = (0..10)
            .map(|i| checkpoint_root.join(format!("ckpt{i}")))
            .collect();
        handles.push(thread::spawn(move || checkpointer(db, vfs, dirs, p)));
    }
    for h in handles {
        if h.join().is_err() {
            p.problem("a thread panicked".into());
        }
    }
    let problems = p.problems.lock().expect("lock").clone();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let s = db.stats();
    assert!(s.flushes > 5, "flushes {}", s.flushes);
    assert!(s.compactions > 0, "compactions {}", s.compactions);
    let want = final_state();
    let ks = db.default_keyspace();
    assert_eq!(scan_all(&db, &ks), want);
    db.wait_for_background_work().expect("background work");
    assert_eq!(scan_all(&db, &ks), want);
    db.close().expect("close");
    let db = Db::open(dir, opts).expect("reopen");
    assert_eq!(scan_all(&db, &db.default_keyspace()), want);
    for (k, v) in &want {
        assert_eq!(
            db.get(&db.default_keyspace(), k, &ReadOptions::default())
                .expect("get")
                .as_ref(),
            Some(v)
        );
    }
    eprintln!("mixed workload took {:?}", start.elapsed());
}

#[test]
fn concurrent_writers_readers_snapshots_and_checkpoints_on_real_fs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    run_mixed(
        Arc::new(RealVfs),
        &tmp.path().join("db"),
        &tmp.path().join("ckpt"),
        true,
    );
}

#[test]
fn concurrent_writers_readers_snapshots_and_checkpoints_on_mem_vfs() {
    let mem = MemVfs::new();
    run_mixed(Arc::new(mem), Path::new("/db"), Path::new("/ckpt"), true);
}

/// The same with flushes and compactions done inline by the writer that fills a memtable.
#[test]
fn concurrent_writers_readers_snapshots_and_checkpoints_with_inline_work() {
    let mem = MemVfs::new();
    run_mixed(Arc::new(mem), Path::new("/db"), Path::new("/ckpt"), false);
}

/// 16 threads each doing synced writes: group commit shares fsyncs, and every acknowledged
/// write survives a power loss.
#[test]
fn concurrent_sync_writers_share_fsyncs_and_survive_power_loss() {
    const THREADS: usize = 16;
    const PER_THREAD: usize = 150;
    let mem = MemVfs::new();
    // A sync as long as a fast disk's fdatasync: writers arriving while the leader waits on
    // it queue behind it. With the memory Vfs's instant sync, 16 threads on two cores can
    // each find the queue empty, and then no group forms at all.
    let vfs = FaultVfs::new(Arc::new(mem.clone()));
    vfs.delay_syncs(Duration::from_micros(200));
    let mut opts = tiny_options(Arc::new(vfs), true);
    opts.memtable_size_bytes = 64 << 10;
    let db = Db::open("/db", opts.clone()).expect("open");
    let go = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (db, go) = (db.clone(), Arc::clone(&go));
            thread::spawn(move || {
                while !go.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                let ks = db.default_keyspace();
                for i in 0..PER_THREAD {
                    let k = format!("t{t:02}-{i:04}");
                    db.put(
                        &ks,
                        k.as_bytes(),
                        k.as_bytes(),
                        &WriteOptions::new(Durability::Sync),
                    )
                    .expect("put");
                }
            })
        })
        .collect();
    go.store(true, Ordering::SeqCst);
    for h in handles {
        h.join().expect("writer");
    }
    // Power loss right now, with the engine still running.
    let image = mem.crash_clone();
    let s = db.stats();
    let total = (THREADS * PER_THREAD) as u64;
    assert_eq!(s.writes, total);
    assert!(
        s.wal_syncs * 2 <= total,
        "too little group commit: {} syncs for {total} writes",
        s.wal_syncs
    );
    assert!(s.grouped_writes > 0);
    eprintln!(
        "{} synced writes took {} WAL syncs ({} grouped)",
        total, s.wal_syncs, s.grouped_writes
    );
    drop(db);
    let mut o = opts;
    o.vfs = Arc::new(image);
    let db = Db::open("/db", o).expect("recover");
    let got = scan_all(&db, &db.default_keyspace());
    assert_eq!(got.len(), THREADS * PER_THREAD);
    for (k, v) in &got {
        assert_eq!(k, v);
    }
}

/// Keyspaces created, written and dropped while other threads write and read the default
/// keyspace (and flushes and compactions run): the default keyspace is unaffected, dropped
/// ones stay gone, and everything survives a reopen.
#[test]
fn keyspace_churn_alongside_writers() {
    let mem = MemVfs::new();
    let opts = tiny_options(Arc::new(mem.clone()), true);
    let db = Db::open("/db", opts.clone()).expect("open");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        thread::spawn(move || {
            let ks = db.default_keyspace();
            let mut i = 0u32;
            while !stop.load(Ordering::SeqCst) || i < 2000 {
                let k = format!("d{:04}", i % 500);
                db.put(
                    &ks,
                    k.as_bytes(),
                    format!("{k}-{i}").as_bytes(),
                    &WriteOptions::default(),
                )
                .expect("put");
                i += 1;
            }
            i
        })
    };
    let mut kept = Vec::new();
    for round in 0..30u32 {
        let name = format!("tmp{round}");
        let ks = db.create_keyspace(&name).expect("create");
        let mut b = WriteBatch::new();
        for j in 0..60u32 {
            b.put(&ks, format!("{name}-{j:03}").as_bytes(), &[b'v'; 40]);
        }
        db.write(b, &WriteOptions::default()).expect("write");
        if round % 3 == 0 {
            kept.push((name, ks));
        } else {
            db.drop_keyspace(&name).expect("drop");
            assert!(db.get(&ks, b"x", &ReadOptions::default()).is_err());
        }
    }
    stop.store(true, Ordering::SeqCst);
    let n = writer.join().expect("writer");
    let mut want = BTreeMap::new();
    for i in n.saturating_sub(500)..n {
        let k = format!("d{:04}", i % 500);
        want.insert(k.clone().into_bytes(), format!("{k}-{i}").into_bytes());
    }
    for pass in 0..2 {
        assert_eq!(scan_all(&db, &db.default_keyspace()), want, "pass {pass}");
        let mut names = db.keyspace_names();
        names.sort();
        let mut expect: Vec<String> = kept.iter().map(|(n, _)| n.clone()).collect();
        expect.push("default".into());
        expect.sort();
        assert_eq!(names, expect);
        for (name, _) in &kept {
            let ks = db.keyspace(name).expect("kept keyspace");
            assert_eq!(scan_all(&db, &ks).len(), 60, "{name}");
        }
        if pass == 0 {
            db.flush().expect("flush");
        }
    }
    drop(db);
    let db = Db::open("/db", opts).expect("reopen");
    assert_eq!(scan_all(&db, &db.default_keyspace()), want);
    for (name, _) in &kept {
        let ks = db.keyspace(name).expect("kept keyspace after reopen");
        assert_eq!(scan_all(&db, &ks).len(), 60, "{name}");
    }
    for round in 0..30u32 {
        if round % 3 != 0 {
            assert!(db.keyspace(&format!("tmp{round}")).is_err());
        }
    }
}

/// Checkpoints taken back to back while writers keep flushes and compactions busy (in the
/// background, then inline): every one succeeds (the files it links are not deleted under
/// it) and opens with a state that is a prefix of the writes.
#[test]
fn checkpoints_during_heavy_compaction_succeed() {
    checkpoints_during_heavy_compaction(true);
    checkpoints_during_heavy_compaction(false);
}

fn checkpoints_during_heavy_compaction(background: bool) {
    let mem = MemVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(mem.clone());
    let db = Db::open("/db", tiny_options(Arc::clone(&vfs), background)).expect("open");
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU32::new(0));
    let writer = {
        let (db, stop, written) = (db.clone(), Arc::clone(&stop), Arc::clone(&written));
        thread::spawn(move || {
            let ks = db.default_keyspace();
            let mut i = 0u32;
            while !stop.load(Ordering::SeqCst) {
                // Key i % 300 holds i: a checkpoint's values reveal which prefix it holds.
                let k = format!("h{:04}", i % 300);
                db.put(
                    &ks,
                    k.as_bytes(),
                    format!("{i:08}").as_bytes(),
                    &WriteOptions::new(Durability::Buffered),
                )
                .expect("put");
                i += 1;
                written.store(i, Ordering::SeqCst);
            }
        })
    };
    // Other keyspaces keep more flushes and compactions (and version changes) going.
    let churners: Vec<_> = (0..3)
        .map(|t| {
            let (db, stop) = (db.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let ks = db.create_keyspace(&format!("churn{t}")).expect("create");
                let mut i = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    db.put(
                        &ks,
                        format!("c{:04}", i % 500).as_bytes(),
                        &[b'c'; 40],
                        &WriteOptions::new(Durability::Buffered),
                    )
                    .expect("put");
                    i += 1;
                }
            })
        })
        .collect();
    let mut failures = Vec::new();
    for c in 0..200 {
        let dir = PathBuf::from(format!("/ckpt/{c}"));
        let floor = written.load(Ordering::SeqCst);
        if let Err(e) = db.checkpoint(&dir) {
            failures.push(format!("checkpoint {c}: {e}"));
            continue;
        }
        let ceiling = written.load(Ordering::SeqCst);
        let copy = Db::open(
            &dir,
            Options {
                vfs: Arc::clone(&vfs),
                create_if_missing: false,
                background_work: false,
                ..Options::default()
            },
        );
        let copy = match copy {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("open checkpoint {c}: {e}"));
                continue;
            }
        };
        // A prefix of the writes: the newest value n, and every key holding the newest
        // value of the writes 0..=n.
        let got = scan_all(&copy, &copy.default_keyspace());
        let n = got
            .values()
            .filter_map(|v| std::str::from_utf8(v).ok()?.parse::<u32>().ok())
            .max()
            .unwrap_or(0);
        if n + 1 < floor || n > ceiling {
            failures.push(format!(
                "checkpoint {c}: newest write {n}, expected {}..={ceiling}",
                floor.saturating_sub(1)
            ));
        }
        for (k, v) in &got {
            let slot: u32 = std::str::from_utf8(&k[1..])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(u32::MAX);
            let want = n - ((n + 300 - slot) % 300);
            if v != format!("{want:08}").as_bytes() {
                failures.push(format!(
                    "checkpoint {c}: {:?} = {:?}, not the prefix ending at {n}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                ));
                break;
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().expect("writer");
    for c in churners {
        c.join().expect("churner");
    }
    let s = db.stats();
    assert!(s.compactions > 10, "compactions {}", s.compactions);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Dropping a keyspace while a compaction of it runs (in the background, or through
/// `compact_range` on another thread) must not break the database: the compaction's result
/// is discarded, later writes succeed, nothing is poisoned.
#[test]
fn dropping_a_keyspace_while_it_compacts_does_not_poison_the_db() {
    let mem = MemVfs::new();
    let db = Db::open("/db", tiny_options(Arc::new(mem.clone()), true)).expect("open");
    let ks0 = db.default_keyspace();
    let mut failures = Vec::new();
    for round in 0..200u32 {
        let name = format!("victim{round}");
        let ks = db.create_keyspace(&name).expect("create");
        let mut wrote = Ok(());
        for i in 0..300u32 {
            wrote = db.put(
                &ks,
                format!("{i:05}").as_bytes(),
                &[b'x'; 48],
                &WriteOptions::new(Durability::Buffered),
            );
            if wrote.is_err() {
                break;
            }
        }
        if let Err(e) = wrote {
            failures.push(format!("round {round}: write to {name}: {e}"));
            break;
        }
        // Half the rounds also compact it by hand, racing the drop.
        let racer = (round % 2 == 0).then(|| {
            let (db, ks) = (db.clone(), ks.clone());
            thread::spawn(move || db.compact_range(&ks, None, None))
        });
        if round % 3 == 0 {
            thread::sleep(Duration::from_micros(200));
        }
        db.drop_keyspace(&name).expect("drop");
        if let Some(r) = racer {
            match r.join().expect("racer") {
                Ok(()) | Err(cellar_engine::Error::KeyspaceNotFound(_)) => {}
                Err(e) => failures.push(format!("round {round}: compact_range: {e}")),
            }
        }
        if let Err(e) = db.put(&ks0, b"alive", format!("{round}").as_bytes(), &sync_wo()) {
            failures.push(format!("round {round}: write after the drop: {e}"));
            break;
        }
    }
    if let Err(e) = db.wait_for_background_work() {
        failures.push(format!("background work: {e}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(db.keyspace_names(), vec!["default".to_string()]);
}

fn sync_wo() -> WriteOptions {
    WriteOptions::new(Durability::Sync)
}

/// Direct (`Buffered`/`Flush`) writes insert outside the WAL lock and are published in log
/// order. If a later write could become visible before an earlier one finished inserting, a
/// snapshot taken in between would include the earlier write's sequence number but not its
/// entry, and show the entry later: reads at one snapshot would not repeat. Writers announce
/// the key they are writing; the reader reads that key at a fresh snapshot, waits until the
/// write is acknowledged, and reads it again at the same snapshot: both reads must agree.
#[test]
fn snapshot_reads_repeat_while_direct_writers_insert() {
    const W: usize = 4;
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        memtable_size_bytes: 256 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).expect("open");
    let stop = Arc::new(AtomicBool::new(false));
    // Per writer: the index being written (set before the put) and the last acknowledged.
    let writing: Arc<Vec<AtomicU32>> = Arc::new((0..W).map(|_| AtomicU32::new(0)).collect());
    let acked: Arc<Vec<AtomicU32>> = Arc::new((0..W).map(|_| AtomicU32::new(0)).collect());
    let key = |w: usize, i: u32| format!("w{w}-{i:08}").into_bytes();
    let writers: Vec<_> = (0..W)
        .map(|w| {
            let (db, stop) = (db.clone(), Arc::clone(&stop));
            let (writing, acked) = (Arc::clone(&writing), Arc::clone(&acked));
            thread::spawn(move || {
                let ks = db.default_keyspace();
                let mut i = 1u32;
                while !stop.load(Ordering::SeqCst) {
                    let d = if i.is_multiple_of(3) {
                        Durability::Flush
                    } else {
                        Durability::Buffered
                    };
                    writing[w].store(i, Ordering::SeqCst);
                    db.put(&ks, &key(w, i), &[b'v'; 64], &WriteOptions::new(d))
                        .expect("put");
                    acked[w].store(i, Ordering::SeqCst);
                    i += 1;
                }
            })
        })
        .collect();
    let ks = db.default_keyspace();
    let deadline = Instant::now() + Duration::from_millis(1500);
    let mut checks = 0u64;
    'outer: while Instant::now() < deadline {
        for w in 0..W {
            let i = writing[w].load(Ordering::SeqCst);
            let snap = db.snapshot();
            let ro = ReadOptions::at(&snap);
            let before = db.get(&ks, &key(w, i), &ro).expect("get");
            while acked[w].load(Ordering::SeqCst) < i {
                if Instant::now() >= deadline {
                    break 'outer;
                }
                thread::yield_now();
            }
            let after = db.get(&ks, &key(w, i), &ro).expect("get");
            assert_eq!(
                before.is_some(),
                after.is_some(),
                "writer {w} key {i}: a read at one snapshot changed from {before:?} to {after:?}"
            );
            checks += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().expect("writer");
    }
    assert!(checks > 20, "only {checks} checks ran");
}
