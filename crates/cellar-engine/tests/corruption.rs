//! Bit rot: flip bytes of every kind of file of a database on `MemVfs`, then open it, scan it
//! and read every key. The only acceptable outcomes are
//! (a) `Error::Corruption` whose `file` names the damaged file, or
//! (b) exactly the right data,
//! never other data and never a panic. (An iterator may stop at the damage, but what it
//! yielded before must be right.) Only a WAL cut short (a torn append) may lose records: its
//! incomplete last ones (the torn-tail rule of `docs/format/wal.md`).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cellar_engine::vfs::{MemVfs, Vfs};
use cellar_engine::{Db, Durability, Error, Options, ReadOptions, WriteBatch, WriteOptions};

use common::tiny_options;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DB: &str = "/db";

fn opts(vfs: MemVfs) -> Options {
    opts_reserving(vfs, 0)
}

/// `wal_reserve`: how far ahead the WAL reserves space. The tests below read the log's
/// framing byte by byte and expect each WAL to end at its last record, so they reserve
/// nothing; `newest_wal_with_reserved_space_*` covers the default.
fn opts_reserving(vfs: MemVfs, wal_reserve: u64) -> Options {
    let mut o = tiny_options(Arc::new(vfs), false);
    // Big enough that phases 2 and 3 stay in one memtable each.
    o.memtable_size_bytes = 32 << 10;
    o.wal_preallocate_bytes = wal_reserve;
    o
}

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
}

fn apply(model: &mut Model, op: &Op) {
    match op {
        Op::Put(k, v) => {
            model.insert(k.clone(), v.clone());
        }
        Op::Delete(k) => {
            model.remove(k);
        }
        Op::DeleteRange(a, b) => {
            common::model_delete_range(model, a, b);
        }
    }
}

fn write(db: &Db, model: &mut Model, ops: &[Op], d: Durability) {
    let ks = db.default_keyspace();
    let mut b = WriteBatch::new();
    for op in ops {
        match op {
            Op::Put(k, v) => b.put(&ks, k, v),
            Op::Delete(k) => b.delete(&ks, k),
            Op::DeleteRange(a, c) => b.delete_range(&ks, a, c),
        }
        apply(model, op);
    }
    db.write(b, &WriteOptions::new(d)).expect("write");
}

/// Keys of the bottom level.
const N: u32 = 320;

/// Incompressible filler, so that the data spans several SSTs and blocks.
fn noise(seed: u32, len: u32) -> String {
    let mut x = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

fn key(i: u32) -> Vec<u8> {
    format!("c{i:04}").into_bytes()
}

/// A database with old versions on the bottom level, newer versions, deletes and a range
/// delete in one L0 file, and synced writes only in the WAL (one record per batch).
struct Base {
    image: MemVfs,
    model: Model,
    /// The WAL batches of phase 3, in order (for the torn-tail rule).
    wal_batches: Vec<Vec<Op>>,
    /// The state before the last WAL batch.
    model_without_last: Model,
    keys: Vec<Vec<u8>>,
}

fn build_base() -> Base {
    build_base_reserving(0)
}

fn build_base_reserving(wal_reserve: u64) -> Base {
    let mem = MemVfs::new();
    let db = Db::open(DB, opts_reserving(mem.clone(), wal_reserve)).expect("open");
    let ks = db.default_keyspace();
    let mut model = Model::new();
    for i in 0..N {
        let v = format!("one-{i}-{}", noise(i, 8 + i % 24)).into_bytes();
        write(&db, &mut model, &[Op::Put(key(i), v)], Durability::Buffered);
    }
    db.compact_range(&ks, None, None).expect("compact");
    for i in (0..N).step_by(3) {
        let v = format!("two-{i}").into_bytes();
        write(&db, &mut model, &[Op::Put(key(i), v)], Durability::Flush);
    }
    for i in (0..N).step_by(7) {
        write(&db, &mut model, &[Op::Delete(key(i))], Durability::Flush);
    }
    write(
        &db,
        &mut model,
        &[Op::DeleteRange(key(100), key(110))],
        Durability::Flush,
    );
    db.flush().expect("flush");
    let mut wal_batches = Vec::new();
    let mut model_without_last = Model::new();
    for j in 0..10u32 {
        let ops = match j % 4 {
            0 => vec![Op::Delete(key(j * 13 + 1))],
            1 => vec![
                Op::Put(key(j * 11), format!("three-{j}").into_bytes()),
                Op::Put(key(j * 11 + 1), format!("three-{j}b").into_bytes()),
            ],
            2 => vec![Op::DeleteRange(key(j * 10 + 40), key(j * 10 + 43))],
            _ => vec![Op::Put(key(N + j), format!("new-{j}").into_bytes())],
        };
        wal_batches.push(ops.clone());
        model_without_last = model.clone();
        write(&db, &mut model, &ops, Durability::Sync);
    }
    let image = mem.crash_clone();
    drop(db);
    let keys: Vec<Vec<u8>> = (0..N + 20).map(key).collect();
    Base {
        image,
        model,
        wal_batches,
        model_without_last,
        keys,
    }
}

/// What opening and reading a (possibly damaged) database gave.
enum Outcome {
    /// Open, a full scan, `get` and `multi_get` of every key all agreed on this state.
    Data(Model),
    Failed(Error),
    /// A contract violation that is not a plain wrong state (reported as is).
    Bad(String),
}

/// Opens `vfs`, scans both ways, gets and multi_gets `keys`.
fn read_everything(vfs: MemVfs, expected: &Model, keys: &[Vec<u8>]) -> Outcome {
    let db = match Db::open(DB, opts(vfs)) {
        Ok(db) => db,
        Err(e) => return Outcome::Failed(e),
    };
    let ks = db.default_keyspace();
    let ro = ReadOptions::default();
    let mut it = match db.iter(&ks, ReadOptions::default()) {
        Ok(it) => it,
        Err(e) => return Outcome::Failed(e),
    };
    let mut got = Model::new();
    it.seek_to_first();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    if let Err(e) = it.status() {
        // The scan may stop at the damage, but what it yielded before must be right ...
        for (k, v) in &got {
            if expected.get(k) != Some(v) {
                return Outcome::Bad(format!(
                    "scan yielded {:?} = {:?} (expected {:?}) before failing with {e}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v),
                    expected
                        .get(k)
                        .map(|v| String::from_utf8_lossy(v).to_string())
                ));
            }
        }
        // ... and point reads return the right value or fail; never other data.
        for k in keys {
            match db.get(&ks, k, &ro) {
                Ok(v) if v.as_ref() != expected.get(k) => {
                    return Outcome::Bad(format!(
                        "get {:?} = {:?}, expected {:?} (the scan failed with {e})",
                        String::from_utf8_lossy(k),
                        v.map(|v| String::from_utf8_lossy(&v).to_string()),
                        expected
                            .get(k)
                            .map(|v| String::from_utf8_lossy(v).to_string())
                    ))
                }
                Ok(_) | Err(Error::Corruption { .. }) => {}
                Err(other) => return Outcome::Failed(other),
            }
        }
        return Outcome::Failed(e);
    }
    // Backward scan must agree.
    let mut back = Vec::new();
    it.seek_to_last();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    if let Err(e) = it.status() {
        return Outcome::Failed(e);
    }
    back.reverse();
    if back != got.clone().into_iter().collect::<Vec<_>>() {
        return Outcome::Bad("forward and backward scans disagree".into());
    }
    for k in keys {
        match db.get(&ks, k, &ro) {
            Err(e) => return Outcome::Failed(e),
            Ok(v) if v.as_ref() != got.get(k) => {
                return Outcome::Bad(format!(
                    "get {:?} = {:?} but the scan saw {:?}",
                    String::from_utf8_lossy(k),
                    v.map(|v| String::from_utf8_lossy(&v).to_string()),
                    got.get(k).map(|v| String::from_utf8_lossy(v).to_string())
                ))
            }
            Ok(_) => {}
        }
    }
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    match db.multi_get(&ks, &refs, &ro) {
        Err(e) => return Outcome::Failed(e),
        Ok(vs) => {
            for (k, v) in keys.iter().zip(vs) {
                if v.as_ref() != got.get(k) {
                    return Outcome::Bad(format!(
                        "multi_get {:?} disagrees with the scan",
                        String::from_utf8_lossy(k)
                    ));
                }
            }
        }
    }
    Outcome::Data(got)
}

/// Judges one damaged copy. `alternatives` are states other than `expected` that are
/// acceptable for this particular damage.
fn judge(
    damaged: &Path,
    outcome: Outcome,
    expected: &Model,
    alternatives: &[&Model],
) -> Result<(), String> {
    match outcome {
        Outcome::Data(got) if &got == expected => Ok(()),
        Outcome::Data(got) if alternatives.contains(&&got) => Ok(()),
        Outcome::Data(got) => {
            let diff: Vec<String> = expected
                .iter()
                .filter(|(k, v)| got.get(*k) != Some(*v))
                .map(|(k, _)| String::from_utf8_lossy(k).to_string())
                .chain(
                    got.keys()
                        .filter(|k| !expected.contains_key(*k))
                        .map(|k| format!("+{}", String::from_utf8_lossy(k))),
                )
                .take(5)
                .collect();
            Err(format!(
                "opened with wrong data ({} keys, expected {}; differing: {diff:?})",
                got.len(),
                expected.len()
            ))
        }
        Outcome::Failed(Error::Corruption { file, .. })
            if Path::new(&file).file_name() == damaged.file_name() =>
        {
            Ok(())
        }
        Outcome::Failed(e) => Err(format!("failed with {e}")),
        Outcome::Bad(why) => Err(why),
    }
}

fn files_of(image: &MemVfs, pred: impl Fn(&str) -> bool) -> Vec<(PathBuf, u64)> {
    image
        .list_all()
        .into_iter()
        .filter(|(p, _)| p.file_name().and_then(|n| n.to_str()).is_some_and(&pred))
        .collect()
}

fn flip_each(
    base: &Base,
    files: &[(PathBuf, u64)],
    skip: impl Fn(&Path, u64) -> bool,
    alternatives: impl Fn(&Path, u64) -> Vec<Model>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, len) in files {
        for off in 0..*len {
            if skip(path, off) {
                continue;
            }
            // Small files get two flips per byte; large ones one, cycling through the bits.
            let xors: Vec<u8> = if *len <= 4096 {
                vec![0x01, 0x80]
            } else {
                vec![1 << (off % 8)]
            };
            for xor in xors {
                let img = base.image.process_crash_clone();
                img.corrupt_byte(path, off, xor).expect("corrupt");
                let alts = alternatives(path, off);
                let alt_refs: Vec<&Model> = alts.iter().collect();
                let r = catch_unwind(AssertUnwindSafe(|| {
                    let outcome = read_everything(img, &base.model, &base.keys);
                    judge(path, outcome, &base.model, &alt_refs)
                }));
                match r {
                    Ok(Ok(())) => {}
                    Ok(Err(why)) => {
                        problems.push(format!("{} @{off} ^{xor:#x}: {why}", path.display()))
                    }
                    Err(_) => problems.push(format!("{} @{off} ^{xor:#x}: panic", path.display())),
                }
            }
        }
    }
    problems
}

fn report(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{what}: {} damaged copies misbehaved, first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn corruption_base_database_has_every_file_kind() {
    let base = build_base();
    let all = base.image.list_all();
    let ssts = files_of(&base.image, |n| n.ends_with(".sst"));
    let wals = files_of(&base.image, |n| n.ends_with(".wal"));
    let manifests = files_of(&base.image, |n| n.starts_with("MANIFEST-"));
    assert!(ssts.len() >= 4, "{all:?}");
    assert!(!wals.is_empty(), "{all:?}");
    assert_eq!(manifests.len(), 1, "{all:?}");
    assert_eq!(base.wal_batches.len(), 10);
    assert_reads_back_exactly(&base);
    assert!(base.model != base.model_without_last);
}

/// An undamaged copy of `base` opens with exactly its model.
fn assert_reads_back_exactly(base: &Base) {
    judge(
        Path::new("none"),
        read_everything(base.image.process_crash_clone(), &base.model, &base.keys),
        &base.model,
        &[],
    )
    .expect("undamaged copy");
}

/// Record spans `[start, end)` of a log file (WAL or manifest): a 16-byte header, then
/// records of `crc:u32 len:u32 payload` (see `docs/format/wal.md`).
fn record_spans(bytes: &[u8]) -> Vec<(u64, u64)> {
    let mut spans = Vec::new();
    let mut pos = 16usize;
    while pos + 8 <= bytes.len() {
        let len = u32::from_le_bytes([
            bytes[pos + 4],
            bytes[pos + 5],
            bytes[pos + 6],
            bytes[pos + 7],
        ]) as usize;
        let end = pos + 8 + len;
        if end > bytes.len() {
            break;
        }
        spans.push((pos as u64, end as u64));
        pos = end;
    }
    assert_eq!(pos, bytes.len(), "log framing not understood");
    spans
}

/// The spans of `record_spans` that hold writes: without the synced-predecessors record (an
/// empty batch: a 12-byte payload with count 0) that a WAL's first sync adds.
fn batch_spans(bytes: &[u8]) -> Vec<(u64, u64)> {
    record_spans(bytes)
        .into_iter()
        .filter(|&(start, end)| {
            let payload = &bytes[start as usize + 8..end as usize];
            !(payload.len() == 12 && payload[8..12] == [0, 0, 0, 0])
        })
        .collect()
}

fn newest(files: &[(PathBuf, u64)]) -> (PathBuf, u64) {
    files
        .iter()
        .max_by(|a, b| a.0.cmp(&b.0))
        .cloned()
        .expect("no file")
}

/// Every byte of every SST flipped in turn: detected (Corruption naming the SST) or harmless.
/// A scan that meets a damaged block may stop there but must not first yield older versions
/// from deeper levels that the damaged file shadows; point reads return the right value or
/// fail.
#[test]
fn sst_bit_flips_are_detected_or_harmless() {
    let base = build_base();
    let ssts = files_of(&base.image, |n| n.ends_with(".sst"));
    let problems = flip_each(&base, &ssts, |_, _| false, |_, _| Vec::new());
    report("SST", &problems);
}

/// A flipped byte anywhere in the newest WAL, its last record included, is corruption: a
/// crash only shortens an append-only file, it never rewrites synced bytes, so a damaged
/// complete record is never a torn tail (`docs/format/wal.md`).
#[test]
fn newest_wal_bit_flips_are_detected() {
    let base = build_base();
    let wal = newest(&files_of(&base.image, |n| n.ends_with(".wal")));
    let bytes = base.image.file_contents(&wal.0).expect("wal");
    assert_eq!(batch_spans(&bytes).len(), base.wal_batches.len());
    assert_eq!(record_spans(&bytes).len(), base.wal_batches.len() + 1);
    let problems = flip_each(&base, &[wal], |_, _| false, |_, _| Vec::new());
    report("newest WAL", &problems);
}

/// The newest WAL with space reserved ahead of its records (the engine's default): it ends
/// in zeros, which read as space never written, so the undamaged copy opens with every
/// synced write. Flips in its records are detected or harmless as without reserved space;
/// a flip in the zeros loses nothing (the tail is dropped, or reported as damage).
#[test]
fn newest_wal_with_reserved_space_flips_are_detected() {
    let base = build_base_reserving(4 << 10);
    let wal = newest(&files_of(&base.image, |n| n.ends_with(".wal")));
    let bytes = base.image.file_contents(&wal.0).expect("wal");
    let log = cellar_engine::tools::log::read_log(
        &bytes,
        &wal.0,
        cellar_engine::tools::log::LogKind::Wal,
        cellar_engine::tools::log::TailPolicy::TolerateTornTail,
    )
    .expect("reads");
    assert_eq!(log.records.len(), base.wal_batches.len() + 1);
    let records_end = usize::try_from(log.valid_len).expect("fits");
    assert!(bytes.len() > records_end, "no space reserved");
    assert!(bytes[records_end..].iter().all(|&b| b == 0));
    assert!(log.unwritten_tail, "the reader says so too");
    assert_eq!(record_spans(&bytes[..records_end]).len(), log.records.len());
    assert_reads_back_exactly(&base);
    let problems = flip_each(&base, &[wal], |_, _| false, |_, _| Vec::new());
    report("newest WAL with reserved space", &problems);
}

/// A newest WAL cut short (a torn append) loses only the records that are not whole; cut at
/// a record boundary it loses nothing it still holds. Either way: a prefix, never an error.
#[test]
fn newest_wal_truncation_drops_only_the_cut_records() {
    let base = build_base();
    let wal = newest(&files_of(&base.image, |n| n.ends_with(".wal")));
    // The state after each number of whole batches. Before phase 3 is what the SSTs hold:
    // what a copy whose WAL is cut to its header opens with.
    let img = base.image.process_crash_clone();
    img.truncate(&wal.0, 16).expect("truncate");
    let before_wal = match read_everything(img, &base.model, &base.keys) {
        Outcome::Data(m) => m,
        Outcome::Failed(e) => panic!("WAL cut to its header: {e}"),
        Outcome::Bad(why) => panic!("WAL cut to its header: {why}"),
    };
    let mut st = before_wal;
    let mut states = vec![st.clone()];
    for batch in &base.wal_batches {
        for op in batch {
            apply(&mut st, op);
        }
        states.push(st.clone());
    }
    assert_eq!(states.last(), Some(&base.model));
    let problems = cut_everywhere(&base.image, &wal.0, &states, &base.model, &base.keys);
    report("newest WAL truncated", &problems);
}

/// Opens copies of `image` with `wal` cut at every length past its header: each must hold
/// `states[n]`, `n` being the number of whole batches left in `wal`.
fn cut_everywhere(
    image: &MemVfs,
    wal: &Path,
    states: &[Model],
    model: &Model,
    keys: &[Vec<u8>],
) -> Vec<String> {
    let bytes = image.file_contents(wal).expect("wal");
    let spans = batch_spans(&bytes);
    assert_eq!(spans.len(), states.len() - 1);
    let mut problems = Vec::new();
    for cut in 16..bytes.len() as u64 {
        let whole = spans.iter().filter(|(_, end)| *end <= cut).count();
        let img = image.process_crash_clone();
        img.truncate(wal, cut).expect("truncate");
        match read_everything(img, model, keys) {
            Outcome::Data(m) if m == states[whole] => {}
            Outcome::Data(m) => problems.push(format!(
                "cut at {cut}: {} keys, expected the first {whole} batches",
                m.len()
            )),
            Outcome::Failed(e) => problems.push(format!("cut at {cut}: {e}")),
            Outcome::Bad(why) => problems.push(format!("cut at {cut}: {why}")),
        }
    }
    problems
}

/// WALs older than the manifest's log number are leftovers (their removal was not yet
/// durable): damage in them must change nothing.
#[test]
fn obsolete_wal_bit_flips_are_harmless() {
    let base = build_base();
    let wals = files_of(&base.image, |n| n.ends_with(".wal"));
    let newest = newest(&wals);
    let old: Vec<_> = wals.into_iter().filter(|w| w.0 != newest.0).collect();
    assert!(!old.is_empty());
    // Open never reads them: a sample of offsets is enough.
    let problems = flip_each(&base, &old, |_, off| off % 5 != 0, |_, _| Vec::new());
    report("obsolete WAL", &problems);
}

/// The manifest CURRENT names.
fn manifest_of(image: &MemVfs) -> (PathBuf, u64) {
    let current = image
        .file_contents(&Path::new(DB).join("CURRENT"))
        .expect("CURRENT");
    let name = String::from_utf8(current).expect("utf8");
    let path = Path::new(DB).join(name.trim_end());
    let len = image.file_size(&path).expect("manifest");
    (path, len)
}

#[test]
fn manifest_bit_flips_before_the_last_edit_are_detected() {
    let base = build_base();
    let m = manifest_of(&base.image);
    let bytes = base.image.file_contents(&m.0).expect("manifest");
    let spans = record_spans(&bytes);
    assert!(spans.len() >= 3, "{spans:?}");
    let last_start = spans.last().map(|s| s.0).unwrap_or(0);
    let problems = flip_each(&base, &[m], |_, off| off >= last_start, |_, _| Vec::new());
    report("MANIFEST (all but the last edit)", &problems);
}

/// The last edit of the manifest (the flush of phase 2) was synced before the flush deleted
/// the WAL it covers, so dropping it as a "torn tail" loses acknowledged data (and deletes
/// the L0 file as an orphan). Damage there must be reported as corruption (or be harmless).
/// The image is one where the WAL's removal has become durable (any later directory sync).
#[test]
fn manifest_bit_flips_in_the_last_edit_are_detected() {
    let base = build_base();
    let image = without_obsolete_wals(&base.image);
    let base = Base { image, ..base };
    let m = manifest_of(&base.image);
    let bytes = base.image.file_contents(&m.0).expect("manifest");
    let spans = record_spans(&bytes);
    let last_start = spans.last().map(|s| s.0).unwrap_or(0);
    let problems = flip_each(&base, &[m], |_, off| off < last_start, |_, _| Vec::new());
    report("MANIFEST (last edit)", &problems);
}

/// A copy of `image` where every WAL but the newest is removed, durably.
fn without_obsolete_wals(image: &MemVfs) -> MemVfs {
    let img = image.process_crash_clone();
    let wals = files_of(&img, |n| n.ends_with(".wal"));
    let newest = newest(&wals);
    for (p, _) in wals {
        if p != newest.0 {
            img.remove(&p).expect("remove");
        }
    }
    img.sync_dir(Path::new(DB)).expect("sync dir");
    img.crash_clone()
}

/// Right after open the manifest holds one snapshot edit, written and synced before CURRENT
/// named the file: it can never be torn, so any damage to it is corruption. Treating it as
/// a torn tail would open an empty database and delete every SST as an orphan.
#[test]
fn manifest_bit_flips_in_the_snapshot_edit_are_detected() {
    let base = build_base();
    // Reopen once: recovery writes a fresh manifest holding one snapshot edit.
    let reopened = base.image.process_crash_clone();
    drop(Db::open(DB, opts(reopened.clone())).expect("reopen"));
    let image = reopened.crash_clone();
    let m = manifest_of(&image);
    let bytes = image.file_contents(&m.0).expect("manifest");
    assert_eq!(record_spans(&bytes).len(), 1, "{:?}", image.list_all());
    let base = Base { image, ..base };
    let problems = flip_each(&base, &[m], |_, _| false, |_, _| Vec::new());
    report("MANIFEST (snapshot edit)", &problems);
}

/// Whatever open makes of a damaged manifest, it must not delete the SSTs it could not
/// account for: they are the data an operator needs to repair the database.
#[test]
fn damaged_manifest_never_makes_open_delete_ssts() {
    let base = build_base();
    let reopened = base.image.process_crash_clone();
    drop(Db::open(DB, opts(reopened.clone())).expect("reopen"));
    let image = reopened.crash_clone();
    let m = manifest_of(&image);
    let ssts_before = files_of(&image, |n| n.ends_with(".sst"));
    assert!(!ssts_before.is_empty());
    // A flip in the payload of the snapshot edit.
    image.corrupt_byte(&m.0, 30, 0x01).expect("corrupt");
    let r = Db::open(DB, opts(image.clone()));
    let ssts_after = files_of(&image, |n| n.ends_with(".sst"));
    assert_eq!(
        ssts_after.len(),
        ssts_before.len(),
        "open returned {:?} and left {ssts_after:?}",
        r.as_ref().map(|_| "a database")
    );
}

// ---------------------------------------------------------------------------------------
// An older WAL: the state between a memtable switch and the end of its flush, when two
// WALs are live. Built by adding the next WAL (taken from the same run a moment later) to
// a power-loss image taken before the switch.

struct TwoWals {
    image: MemVfs,
    older: PathBuf,
    newer: PathBuf,
    model: Model,
    /// The state without the last record of the newer WAL.
    model_without_last: Model,
    keys: Vec<Vec<u8>>,
}

/// A database whose `N` buffered writes are compacted into SSTs, its WAL empty.
fn compacted_db() -> (MemVfs, Db, Model) {
    let mem = MemVfs::new();
    let db = Db::open(DB, opts(mem.clone())).expect("open");
    let mut model = Model::new();
    for i in 0..N {
        let v = format!("one-{i}-{}", noise(i, 12)).into_bytes();
        write(&db, &mut model, &[Op::Put(key(i), v)], Durability::Buffered);
    }
    db.compact_range(&db.default_keyspace(), None, None)
        .expect("compact");
    (mem, db, model)
}

/// Copies the newest WAL of `live` (newer than `older`) into `image`, durably: the image
/// taken before a memtable switch gets the WAL started after it.
fn add_newest_wal(live: &MemVfs, image: &MemVfs, older: &Path) -> PathBuf {
    let newer = newest(&files_of(live, |n| n.ends_with(".wal"))).0;
    assert!(newer.as_path() > older);
    let bytes = live.file_contents(&newer).expect("newer wal");
    let mut f = image.create(&newer).expect("create");
    f.append(&bytes).expect("append");
    f.sync().expect("sync");
    image.sync_dir(Path::new(DB)).expect("sync dir");
    newer
}

fn build_two_wals() -> TwoWals {
    let (mem, db, mut model) = compacted_db();
    for j in 0..8u32 {
        let ops = vec![
            Op::Put(key(j * 17), format!("x-{j}").into_bytes()),
            Op::Delete(key(j * 17 + 5)),
        ];
        write(&db, &mut model, &ops, Durability::Sync);
    }
    let before_switch = mem.crash_clone();
    let older = newest(&files_of(&before_switch, |n| n.ends_with(".wal"))).0;
    db.flush().expect("flush");
    let mut model_without_last = Model::new();
    for j in 0..8u32 {
        let ops = vec![
            Op::Put(key(j * 19 + 2), format!("y-{j}").into_bytes()),
            Op::DeleteRange(key(j * 30 + 200), key(j * 30 + 204)),
        ];
        model_without_last = model.clone();
        write(&db, &mut model, &ops, Durability::Sync);
    }
    drop(db);
    let image = before_switch;
    let newer = add_newest_wal(&mem, &image, &older);
    TwoWals {
        image,
        older,
        newer,
        model,
        model_without_last,
        keys: (0..N + 20).map(key).collect(),
    }
}

#[test]
fn two_wal_image_recovers_both_wals() {
    let t = build_two_wals();
    let outcome = read_everything(t.image.process_crash_clone(), &t.model, &t.keys);
    judge(Path::new("none"), outcome, &t.model, &[]).expect("undamaged two-WAL image");
}

#[test]
fn older_wal_bit_flips_are_always_corruption() {
    let t = build_two_wals();
    let len = t.image.file_size(&t.older).expect("older");
    let base = Base {
        image: t.image.clone(),
        model: t.model.clone(),
        wal_batches: Vec::new(),
        model_without_last: t.model_without_last.clone(),
        keys: t.keys.clone(),
    };
    let problems = flip_each(
        &base,
        &[(t.older.clone(), len)],
        |_, _| false,
        |_, _| Vec::new(),
    );
    report("older WAL", &problems);
    // Whatever was flipped, the outcome was corruption naming the older WAL: check one.
    let img = t.image.process_crash_clone();
    img.corrupt_byte(&t.older, len - 1, 0x01).expect("corrupt");
    match Db::open(DB, opts(img)) {
        Err(Error::Corruption { file, .. }) => {
            assert!(file.ends_with(t.older.file_name().and_then(|n| n.to_str()).unwrap_or("?")))
        }
        other => panic!("flip in the last record of an older WAL: {other:?}"),
    }
}

#[test]
fn newer_of_two_wals_bit_flips_are_detected() {
    let t = build_two_wals();
    let len = t.image.file_size(&t.newer).expect("newer");
    let base = Base {
        image: t.image.clone(),
        model: t.model.clone(),
        wal_batches: Vec::new(),
        model_without_last: t.model_without_last.clone(),
        keys: t.keys.clone(),
    };
    let problems = flip_each(
        &base,
        &[(t.newer.clone(), len)],
        |_, _| false,
        |_, _| Vec::new(),
    );
    report("newer of two WALs", &problems);
}

// ---------------------------------------------------------------------------------------
// An older WAL cut short. A WAL frozen before the database ever synced is not synced at
// the switch (docs/durability.md, "Switching WALs"), so a power loss can cut an older WAL
// as well as the newest. Built like `build_two_wals`, with writes that ask for no sync in
// the older WAL.

struct Chain {
    image: MemVfs,
    older: PathBuf,
    newer: PathBuf,
    /// The state after each number of the older WAL's batches (0 ..= all).
    states: Vec<Model>,
    /// The state with both WALs replayed.
    model: Model,
    keys: Vec<Vec<u8>>,
}

/// `newer_synced`: the newer WAL's writes are `Sync` (so its first sync wrote the
/// synced-predecessors record); otherwise `Flush`.
fn build_chain(newer_synced: bool) -> Chain {
    let (mem, db, mut model) = compacted_db();
    let mut states = vec![model.clone()];
    for j in 0..6u32 {
        let ops = vec![
            Op::Put(key(j * 23 + 3), format!("older-{j}").into_bytes()),
            Op::Delete(key(j * 23 + 9)),
        ];
        write(&db, &mut model, &ops, Durability::Flush);
        states.push(model.clone());
    }
    // Everything handed to the OS so far, the older WAL whole.
    let image = mem.process_crash_clone();
    let older = newest(&files_of(&image, |n| n.ends_with(".wal"))).0;
    db.flush().expect("flush");
    let durability = if newer_synced {
        Durability::Sync
    } else {
        Durability::Flush
    };
    for j in 0..4u32 {
        let ops = vec![Op::Put(key(j * 31 + 5), format!("newer-{j}").into_bytes())];
        write(&db, &mut model, &ops, durability);
    }
    drop(db);
    let newer = add_newest_wal(&mem, &image, &older);
    Chain {
        image,
        older,
        newer,
        states,
        model,
        keys: (0..N + 20).map(key).collect(),
    }
}

#[test]
fn chain_image_recovers_both_wals() {
    for synced in [false, true] {
        let t = build_chain(synced);
        let outcome = read_everything(t.image.process_crash_clone(), &t.model, &t.keys);
        judge(Path::new("none"), outcome, &t.model, &[]).expect("undamaged chain");
    }
}

/// Cut anywhere, at a record boundary or inside a record, an older WAL that was never
/// synced ends the replay there: the state is the older WAL's whole batches, and nothing of
/// the newer WAL, whose writes were never synced either.
#[test]
fn older_wal_cut_short_stops_replay_at_the_cut() {
    let t = build_chain(false);
    let problems = cut_everywhere(&t.image, &t.older, &t.states, &t.model, &t.keys);
    report("older WAL cut short", &problems);
}

/// The newer WAL's first sync synced the older WAL whole first, and recorded that: a cut in
/// the older WAL is then damage, reported as corruption naming one of the two WALs.
#[test]
fn older_wal_cut_short_under_a_synced_newer_wal_is_corruption() {
    let t = build_chain(true);
    let len = t.image.file_size(&t.older).expect("older");
    let mut problems = Vec::new();
    for cut in 16..len {
        let img = t.image.process_crash_clone();
        img.truncate(&t.older, cut).expect("truncate");
        match Db::open(DB, opts(img)) {
            Err(Error::Corruption { file, .. }) if file == t.older || file == t.newer => {}
            Err(e) => problems.push(format!("cut at {cut}: {e}")),
            Ok(_) => problems.push(format!("cut at {cut}: opened")),
        }
    }
    report("older WAL cut short under a synced newer WAL", &problems);
}

// ---------------------------------------------------------------------------------------
// Missing and truncated files, CURRENT.

#[test]
fn truncated_sst_is_corruption_naming_it() {
    let base = build_base();
    let mut problems = Vec::new();
    for (path, len) in files_of(&base.image, |n| n.ends_with(".sst")) {
        for cut in [0, 1, 10, len / 2, len - 65, len - 64, len - 20, len - 1] {
            let img = base.image.process_crash_clone();
            img.truncate(&path, cut).expect("truncate");
            let outcome = read_everything(img, &base.model, &base.keys);
            if let Err(why) = judge(&path, outcome, &base.model, &[]) {
                problems.push(format!("{} cut to {cut}: {why}", path.display()));
            }
        }
    }
    report("truncated SST", &problems);
}

#[test]
fn missing_sst_fails_open_naming_it_and_open_works_once_it_is_back() {
    let base = build_base();
    for (path, _) in files_of(&base.image, |n| n.ends_with(".sst")) {
        let img = base.image.process_crash_clone();
        let bytes = img.file_contents(&path).expect("sst");
        img.remove(&path).expect("remove");
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_string();
        match Db::open(DB, opts(img.clone())) {
            Ok(_) => panic!("open succeeded without {name}"),
            Err(e) => assert!(
                e.to_string().contains(&name),
                "error does not name {name}: {e}"
            ),
        }
        // The failed open destroyed nothing: with the file back, everything is there.
        let mut f = img.create(&path).expect("create");
        f.append(&bytes).expect("append");
        f.sync().expect("sync");
        let outcome = read_everything(img, &base.model, &base.keys);
        judge(Path::new("none"), outcome, &base.model, &[])
            .unwrap_or_else(|e| panic!("after restoring {name}: {e}"));
    }
}

#[test]
fn garbage_current_fails_open() {
    let base = build_base();
    let current = Path::new(DB).join("CURRENT");
    let good = base.image.file_contents(&current).expect("CURRENT");
    let mut variants: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"\n".to_vec(),
        b"garbage\n".to_vec(),
        good[..good.len() - 1].to_vec(),
        b"MANIFEST-999999\n".to_vec(),
        b"MANIFEST-\n".to_vec(),
        b"MANIFEST-00000x\n".to_vec(),
        b"MANIFEST-+00002\n".to_vec(),
        b"../MANIFEST-000002\n".to_vec(),
        [good.clone(), b"extra".to_vec()].concat(),
        vec![0u8; 16],
        vec![0xffu8; 4096],
    ];
    for off in 0..good.len() {
        for xor in [0x01u8, 0x80] {
            let mut v = good.clone();
            v[off] ^= xor;
            variants.push(v);
        }
    }
    let mut problems = Vec::new();
    for v in variants {
        let img = base.image.process_crash_clone();
        let mut f = img.create(&current).expect("create");
        f.append(&v).expect("append");
        f.sync().expect("sync");
        let ssts = files_of(&img, |n| n.ends_with(".sst")).len();
        let r = catch_unwind(AssertUnwindSafe(|| Db::open(DB, opts(img.clone()))));
        match r {
            Err(_) => problems.push(format!("{:?}: panic", String::from_utf8_lossy(&v))),
            Ok(Ok(_)) => problems.push(format!(
                "{:?}: opened (it names no good manifest)",
                String::from_utf8_lossy(&v)
            )),
            Ok(Err(Error::Corruption { file, .. })) if file.ends_with("CURRENT") => {}
            Ok(Err(e)) if e.to_string().contains("MANIFEST-") => {}
            Ok(Err(e)) => problems.push(format!("{:?}: {e:?}", String::from_utf8_lossy(&v))),
        }
        if files_of(&img, |n| n.ends_with(".sst")).len() != ssts {
            problems.push(format!(
                "{:?}: the failed open deleted SSTs",
                String::from_utf8_lossy(&v)
            ));
        }
    }
    report("garbage CURRENT", &problems);
}

/// A directory full of database files but without CURRENT is not a new database: opening
/// it must not start an empty one and delete the files as orphans.
#[test]
fn missing_current_does_not_wipe_the_database() {
    let base = build_base();
    let img = base.image.process_crash_clone();
    img.remove(&Path::new(DB).join("CURRENT")).expect("remove");
    let before = files_of(&img, |n| n.ends_with(".sst"));
    let r = Db::open(DB, opts(img.clone()));
    let after = files_of(&img, |n| n.ends_with(".sst"));
    let lost: Vec<_> = before.iter().filter(|f| !after.contains(f)).collect();
    assert!(
        lost.is_empty(),
        "open returned {:?} and deleted {lost:?}",
        r.as_ref().map(scan_len)
    );
}

fn scan_len(db: &Db) -> usize {
    let mut it = db
        .iter(&db.default_keyspace(), ReadOptions::default())
        .expect("iter");
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    n
}

/// Losing the older of two live WALs leaves a gap in the sequence: the newer WAL's batches
/// follow writes that are gone. Recovery must not apply them silently (the result would be
/// no prefix of the writes); the sequence numbers show the gap.
#[test]
fn missing_older_wal_is_detected() {
    let t = build_two_wals();
    let img = t.image.process_crash_clone();
    img.remove(&t.older).expect("remove");
    img.sync_dir(Path::new(DB)).expect("sync dir");
    match Db::open(DB, opts(img.clone())) {
        Err(e) => assert!(
            e.is_corruption() || e.to_string().contains(".wal"),
            "unexpected error: {e}"
        ),
        Ok(db) => {
            let got = scan_len(&db);
            panic!(
                "opened with {got} keys (expected {}) although {} is missing",
                t.model.len(),
                t.older.display()
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Torn appends as real disks leave them (docs/durability.md, "Assumptions"): the unsynced
// suffix of the newest WAL may be missing *or garbage*. A power loss there must recover the
// synced prefix, not refuse to open.

/// A db whose newest WAL ends with synced records followed by one unsynced (Flush) record
/// of `payload` bytes. Returns the process-crash image, the WAL path, the synced length, and
/// the state with and without the unsynced record.
fn torn_base(payload: usize) -> (MemVfs, PathBuf, u64, Model, Model) {
    let mem = MemVfs::new();
    let db = Db::open(DB, opts(mem.clone())).expect("open");
    let mut model = Model::new();
    for i in 0..20 {
        write(
            &db,
            &mut model,
            &[Op::Put(key(i), format!("synced-{i}").into_bytes())],
            Durability::Sync,
        );
    }
    let synced_model = model.clone();
    write(
        &db,
        &mut model,
        &[Op::Put(key(999), vec![b'u'; payload])],
        Durability::Flush,
    );
    let wal = newest(&files_of(&mem, |n| n.ends_with(".wal"))).0;
    let synced = mem.synced_len(&wal).expect("synced len");
    let image = mem.process_crash_clone();
    drop(db);
    assert!(image.file_size(&wal).expect("size") > synced + 100);
    (image, wal, synced, synced_model, model)
}

/// The unsynced record's header reached the disk, the rest of its payload did not (the file
/// was extended, the later pages read back as zeros): a torn append.
#[test]
fn newest_wal_record_with_zeroed_payload_tail_is_a_torn_append() {
    let mut problems = Vec::new();
    for payload in [100usize, 5000, 20000] {
        let (image, wal, synced, synced_model, _) = torn_base(payload);
        let len = image.file_size(&wal).expect("size");
        // Zero from a point inside the payload to the end.
        for keep in [8 + 1, 8 + payload as u64 / 2, len - synced - 1] {
            // A power loss loses whole sectors: zero from the first 512-byte boundary on.
            let from = (synced + keep).div_ceil(512) * 512;
            if from >= len {
                continue;
            }
            let img = image.process_crash_clone();
            let data = img.file_contents(&wal).expect("wal");
            for off in from..len {
                let b = data[off as usize];
                if b != 0 {
                    img.corrupt_byte(&wal, off, b).expect("zero");
                }
            }
            let keys: Vec<Vec<u8>> = (0..20).chain([999]).map(key).collect();
            match read_everything(img, &synced_model, &keys) {
                Outcome::Data(m) if m == synced_model => {}
                Outcome::Data(m) => problems.push(format!(
                    "payload {payload}, zeros after {keep}: {} keys",
                    m.len()
                )),
                Outcome::Failed(e) => {
                    problems.push(format!("payload {payload}, zeros after {keep}: {e}"))
                }
                Outcome::Bad(why) => {
                    problems.push(format!("payload {payload}, zeros after {keep}: {why}"))
                }
            }
        }
    }
    report("torn append with zeroed tail", &problems);
}

/// An unsynced suffix that came back as garbage: with the header garbage too, it reads as a
/// record running past the end (a torn append, dropped); behind an intact header it is a
/// complete record with a bad checksum, which `docs/durability.md` reports as corruption
/// (lost sectors read back as zeros, never as other bytes). Never wrong data either way.
#[test]
fn newest_wal_unsynced_suffix_of_garbage_is_torn_or_reported() {
    let mut problems = Vec::new();
    for payload in [100usize, 5000] {
        let (image, wal, synced, synced_model, _) = torn_base(payload);
        let len = image.file_size(&wal).expect("size");
        for (label, from) in [("all", synced), ("payload only", synced + 8)] {
            let img = image.process_crash_clone();
            let mut x: u64 = 0x1234_5678_9abc_def1;
            for off in from..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                img.corrupt_byte(&wal, off, (x as u8) | 1).expect("garbage");
            }
            let keys: Vec<Vec<u8>> = (0..20).chain([999]).map(key).collect();
            match read_everything(img, &synced_model, &keys) {
                Outcome::Data(m) if m == synced_model && label == "all" => {}
                Outcome::Data(m) => {
                    problems.push(format!("payload {payload}, {label}: {} keys", m.len()))
                }
                Outcome::Failed(e) if label == "payload only" && e.to_string().contains(".wal") => {
                }
                Outcome::Failed(e) => problems.push(format!("payload {payload}, {label}: {e}")),
                Outcome::Bad(why) => problems.push(format!("payload {payload}, {label}: {why}")),
            }
        }
    }
    report("torn append with garbage", &problems);
}

/// The same for the manifest: a power loss during a flush's manifest append (the edit's
/// header on disk, its payload tail zeros; the flushed WAL still there) must recover by
/// dropping the edit and replaying the WAL.
#[test]
fn manifest_edit_with_zeroed_payload_tail_is_a_torn_append() {
    let base = build_base();
    // base.image is a power-loss image taken while the db ran: the WAL the last flush
    // covered is still on disk (its removal was never made durable).
    assert!(files_of(&base.image, |n| n.ends_with(".wal")).len() >= 2);
    let m = manifest_of(&base.image);
    let bytes = base.image.file_contents(&m.0).expect("manifest");
    let last = *record_spans(&bytes).last().expect("records");
    let mut problems = Vec::new();
    for keep in [8 + 1, (last.1 - last.0) / 2, last.1 - last.0 - 1] {
        // A power loss loses whole sectors: zero from the first 512-byte boundary on, and
        // the file past the edit too (it was extended but never written).
        let from = (last.0 + keep).div_ceil(512) * 512;
        if from >= last.1 {
            continue;
        }
        let img = base.image.process_crash_clone();
        for off in from..bytes.len() as u64 {
            let b = bytes[off as usize];
            if b != 0 {
                img.corrupt_byte(&m.0, off, b).expect("zero");
            }
        }
        if let Err(why) = judge(
            &m.0,
            read_everything(img, &base.model, &base.keys),
            &base.model,
            &[],
        ) {
            problems.push(format!("zeros after {keep} bytes of the last edit: {why}"));
        }
        // Judge accepts Corruption naming the file; a torn append must open.
        let img = base.image.process_crash_clone();
        for off in from..bytes.len() as u64 {
            let b = bytes[off as usize];
            if b != 0 {
                img.corrupt_byte(&m.0, off, b).expect("zero");
            }
        }
        if let Err(e) = Db::open(DB, opts(img)) {
            problems.push(format!("zeros after {keep} bytes of the last edit: {e}"));
        }
    }
    report("torn manifest append", &problems);
}

// ---------------------------------------------------------------------------------------
// A WAL appended through a memory map: its pages reach the disk in any order.

/// A database whose newest WAL holds 40 batches of one ~330-byte put each, written
/// `Flush`, or with the first one `Sync` when `synced` (its sync writes the
/// synced-predecessors record). Returns the process-crash image, the WAL, the state after
/// each number of batches, and the batches' spans in the WAL.
fn paged_wal(synced: bool) -> (MemVfs, PathBuf, Vec<Model>, Vec<(u64, u64)>) {
    let mem = MemVfs::new();
    let db = Db::open(DB, opts(mem.clone())).expect("open");
    let mut model = Model::new();
    let mut states = vec![model.clone()];
    for i in 0..40 {
        let d = if synced && i == 0 {
            Durability::Sync
        } else {
            Durability::Flush
        };
        let value = format!("paged-{i}-{}", noise(i, 320)).into_bytes();
        write(&db, &mut model, &[Op::Put(key(i), value)], d);
        states.push(model.clone());
    }
    let wal = newest(&files_of(&mem, |n| n.ends_with(".wal"))).0;
    let image = mem.process_crash_clone();
    drop(db);
    let bytes = image.file_contents(&wal).expect("wal");
    let spans = batch_spans(&bytes);
    assert_eq!(spans.len(), 40);
    assert!(bytes.len() > 3 * 4096, "the WAL spans several pages");
    (image, wal, states, spans)
}

/// Zeros `from..to` of `wal` in a copy of `image`, as a page written back before its last
/// bytes were copied into it and never again.
fn with_zeros(image: &MemVfs, wal: &Path, from: u64, to: u64) -> MemVfs {
    let img = image.process_crash_clone();
    let data = img.file_contents(wal).expect("wal");
    for off in from..to {
        let b = data[off as usize];
        if b != 0 {
            img.corrupt_byte(wal, off, b).expect("zero");
        }
    }
    img
}

/// The start of each zero run the tests below try before the page boundary `end`: the
/// whole page, the page's last byte, a record's start inside the page and its middle.
fn cuts_before(end: u64, spans: &[(u64, u64)]) -> Vec<u64> {
    let mut cuts = vec![end - 4096, end - 1];
    if let Some(&(start, stop)) = spans.iter().find(|s| s.0 > end - 4096 && s.1 < end) {
        cuts.extend([start, (start + stop) / 2]);
    }
    cuts
}

/// A power loss while a never-synced WAL's pages were written back out of order leaves a
/// page cut short with later pages whole: recovery keeps the batches before the cut and
/// drops the rest, as for a torn tail. Never an error, never a batch from after the cut.
#[test]
fn unsynced_wal_with_pages_written_out_of_order_recovers_the_batches_before_the_gap() {
    let (image, wal, states, spans) = paged_wal(false);
    let len = image.file_size(&wal).expect("size");
    let keys: Vec<Vec<u8>> = (0..40).map(key).collect();
    let mut problems = Vec::new();
    for end in (4096..len - 512).step_by(4096) {
        for from in cuts_before(end, &spans) {
            let kept = spans.iter().filter(|s| s.1 <= from).count();
            let img = with_zeros(&image, &wal, from, end);
            match read_everything(img, &states[kept], &keys) {
                Outcome::Data(m) if m == states[kept] => {}
                Outcome::Data(m) => problems.push(format!(
                    "zeros {from}..{end}: {} keys, expected {kept}",
                    m.len()
                )),
                Outcome::Failed(e) => problems.push(format!("zeros {from}..{end}: {e}")),
                Outcome::Bad(why) => problems.push(format!("zeros {from}..{end}: {why}")),
            }
        }
    }
    report("unsynced WAL with a page written out of order", &problems);
}

/// The same gap after the WAL's first sync may hide a write that sync acknowledged (a
/// page the device lost): it is reported as corruption naming the WAL.
#[test]
fn synced_wal_with_a_page_of_zeros_before_later_bytes_is_corruption() {
    let (image, wal, states, spans) = paged_wal(true);
    let len = image.file_size(&wal).expect("size");
    let keys: Vec<Vec<u8>> = (0..40).map(key).collect();
    let mut problems = Vec::new();
    for end in (8192..len - 512).step_by(4096) {
        for from in cuts_before(end, &spans) {
            let img = with_zeros(&image, &wal, from, end);
            match read_everything(img, &states[40], &keys) {
                Outcome::Failed(Error::Corruption { file, .. }) if Path::new(&file) == wal => {}
                Outcome::Failed(e) => problems.push(format!("zeros {from}..{end}: {e}")),
                Outcome::Data(m) => {
                    problems.push(format!("zeros {from}..{end}: opened, {} keys", m.len()))
                }
                Outcome::Bad(why) => problems.push(format!("zeros {from}..{end}: {why}")),
            }
        }
    }
    report("synced WAL with a page of zeros", &problems);
}
