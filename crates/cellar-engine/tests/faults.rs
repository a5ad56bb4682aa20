//! Fault injection: every I/O operation of one kind fails once (`FaultVfs::fail_nth`) at
//! every point a deterministic workload reaches, and the engine must
//! - surface only the injected error or `Error::Poisoned` (never `Corruption`, never panic);
//! - refuse every write-path call with `Error::Poisoned` after the first write-path error;
//! - keep serving reads that equal the acknowledged writes;
//! - reopen (without faults) after a power loss or a process crash at that moment, holding
//!   a prefix of the issued writes that includes every write the contract made durable.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cellar_engine::vfs::{FaultVfs, IoKind, MemVfs, Vfs};
use cellar_engine::{Db, Durability, Error, Options, ReadOptions, WriteBatch, WriteOptions};

use common::{scan_all, tiny_options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DB: &str = "/db";

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
}

#[derive(Debug, Clone)]
enum Step {
    Write(Vec<Op>, Durability),
    Flush,
    Compact,
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

fn key(i: u64) -> Vec<u8> {
    format!("key{:03}", i % 64).into_bytes()
}

/// A deterministic workload: ~260 writes (Sync and Flush, a few Buffered, some batches,
/// deletes and range deletes) with explicit flushes and compactions in between. With
/// `tiny_options` the memtable fills every ~25 writes, so inline flushes and compactions
/// run inside writes too.
fn workload() -> Vec<Step> {
    let mut steps = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..260u64 {
        let r = rnd();
        let durability = match i % 7 {
            0 | 3 | 5 => Durability::Sync,
            6 => Durability::Buffered,
            _ => Durability::Flush,
        };
        let pad = "x".repeat(20 + (r % 60) as usize);
        let ops = match r % 11 {
            0 => vec![Op::Delete(key(r >> 8))],
            1 => {
                let a = r >> 8;
                vec![Op::DeleteRange(key(a), key(a + 3))]
            }
            2 => (0..3)
                .map(|j| Op::Put(key((r >> 8) + j), format!("v{i}.{j}-{pad}").into_bytes()))
                .collect(),
            _ => vec![Op::Put(key(r >> 8), format!("v{i}-{pad}").into_bytes())],
        };
        steps.push(Step::Write(ops, durability));
        if i % 50 == 49 {
            steps.push(Step::Flush);
        }
        if i % 90 == 89 {
            steps.push(Step::Compact);
        }
    }
    steps
}

fn batch_of(db: &Db, ops: &[Op]) -> WriteBatch {
    let ks = db.default_keyspace();
    let mut b = WriteBatch::new();
    for op in ops {
        match op {
            Op::Put(k, v) => b.put(&ks, k, v),
            Op::Delete(k) => b.delete(&ks, k),
            Op::DeleteRange(a, c) => b.delete_range(&ks, a, c),
        }
    }
    b
}

fn opts(vfs: Arc<dyn Vfs>) -> Options {
    tiny_options(vfs, false)
}

fn allowed(e: &Error) -> bool {
    FaultVfs::is_injected(e) || matches!(e, Error::Poisoned(_))
}

/// What one faulty run did, and the crash images taken right after it (db still open).
struct Run {
    /// Batches that may have reached the log, in order: acknowledged ones, and (flagged
    /// `true`, optional) ones whose call failed.
    issued: Vec<(Vec<Op>, bool)>,
    /// How many of `issued` must survive a power loss / a process crash.
    must_power: usize,
    must_process: usize,
    power_image: MemVfs,
    process_image: MemVfs,
    /// Whether the injected fault surfaced as an error at all.
    failed: bool,
    /// Calls that were not refused with `Poisoned` after a write-path failure.
    poison_problems: Vec<String>,
}

/// Runs the workload on `FaultVfs(MemVfs)` with `arm` applied before `Db::open`. Problems
/// (contract violations) are pushed to `problems`.
fn faulty_run(arm: impl Fn(&FaultVfs), background: bool, problems: &mut Vec<String>) -> Run {
    let mem = MemVfs::new();
    let fault = FaultVfs::new(Arc::new(mem.clone()));
    arm(&fault);
    let mut run = Run {
        issued: Vec::new(),
        must_power: 0,
        must_process: 0,
        power_image: mem.crash_clone(),
        process_image: mem.process_crash_clone(),
        failed: false,
        poison_problems: Vec::new(),
    };
    let db = match Db::open(DB, tiny_options(Arc::new(fault.clone()), background)) {
        Ok(db) => db,
        Err(e) => {
            if !allowed(&e) {
                problems.push(format!("open failed with a non-injected error: {e:?}"));
            }
            run.failed = true;
            run.power_image = mem.crash_clone();
            run.process_image = mem.process_crash_clone();
            return run;
        }
    };
    let ks = db.default_keyspace();
    let mut acked = Model::new();
    let mut first_err: Option<Error> = None;
    let mut calls_after_error = 0;
    for (si, step) in workload().into_iter().enumerate() {
        if first_err.is_some() {
            calls_after_error += 1;
            if calls_after_error > 6 {
                break;
            }
        }
        let r = match &step {
            Step::Write(ops, d) => db.write(batch_of(&db, ops), &WriteOptions::new(*d)),
            Step::Flush => db.flush(),
            Step::Compact => db.compact_range(&ks, None, None),
        };
        match (r, &first_err) {
            (Ok(()), None) => match &step {
                Step::Write(ops, d) => {
                    for op in ops {
                        apply(&mut acked, op);
                    }
                    run.issued.push((ops.clone(), false));
                    match d {
                        Durability::Sync => {
                            run.must_power = run.issued.len();
                            run.must_process = run.issued.len();
                        }
                        Durability::Flush => run.must_process = run.issued.len(),
                        Durability::Buffered => {}
                    }
                }
                Step::Flush | Step::Compact => {
                    run.must_power = run.issued.len();
                    run.must_process = run.issued.len();
                }
            },
            (Err(e), None) => {
                if !allowed(&e) {
                    problems.push(format!("step {si} ({step:?}) failed with {e:?}"));
                }
                if let Step::Write(ops, _) = &step {
                    run.issued.push((ops.clone(), true));
                }
                first_err = Some(e);
                run.failed = true;
            }
            (Ok(()), Some(first)) => {
                run.poison_problems.push(format!(
                    "step {si} ({}) succeeded after the write path failed with {first}",
                    step_name(&step)
                ));
                // It was acknowledged: it may be recovered.
                if let Step::Write(ops, d) = &step {
                    for op in ops {
                        apply(&mut acked, op);
                    }
                    run.issued.push((ops.clone(), false));
                    match d {
                        Durability::Sync => {
                            run.must_power = run.issued.len();
                            run.must_process = run.issued.len();
                        }
                        Durability::Flush => run.must_process = run.issued.len(),
                        Durability::Buffered => {}
                    }
                }
            }
            (Err(e), Some(_)) => {
                if !allowed(&e) {
                    problems.push(format!(
                        "step {si} ({}) failed with {e:?}",
                        step_name(&step)
                    ));
                }
                if let Step::Write(ops, _) = &step {
                    run.issued.push((ops.clone(), true));
                }
                if !matches!(e, Error::Poisoned(_)) {
                    run.poison_problems.push(format!(
                        "step {si} ({}) after the first failure returned {e:?}, not Poisoned",
                        step_name(&step)
                    ));
                }
            }
        }
    }
    // Reads keep working and show exactly the acknowledged writes.
    match catch_unwind(AssertUnwindSafe(|| try_scan(&db))) {
        Ok(Ok(got)) => {
            if got != acked {
                problems.push(format!(
                    "reads on the live db differ from the acknowledged writes ({} vs {} keys)",
                    got.len(),
                    acked.len()
                ));
            }
        }
        Ok(Err(e)) => problems.push(format!("scan of the live db failed: {e:?}")),
        Err(_) => problems.push("scan of the live db panicked".to_string()),
    }
    for k in 0..64 {
        match db.get(&ks, &key(k), &ReadOptions::default()) {
            Ok(v) if v.as_ref() == acked.get(&key(k)) => {}
            other => {
                problems.push(format!("get {k} on the live db: {other:?}"));
                break;
            }
        }
    }
    // Crash now, with the engine still running.
    run.power_image = mem.crash_clone();
    run.process_image = mem.process_crash_clone();
    drop(db);
    run
}

fn step_name(s: &Step) -> &'static str {
    match s {
        Step::Write(..) => "write",
        Step::Flush => "flush",
        Step::Compact => "compact_range",
    }
}

fn try_scan(db: &Db) -> cellar_engine::Result<Model> {
    let ks = db.default_keyspace();
    let mut it = db.iter(&ks, ReadOptions::default())?;
    it.seek_to_first();
    let mut out = Model::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// Opens `image` without faults and checks it holds a prefix of `issued` of length at least
/// `must_keep` (optional entries of the prefix may be present or not); then checks the
/// recovered db takes writes and survives a reopen.
fn check_recovery(
    image: MemVfs,
    issued: &[(Vec<Op>, bool)],
    must_keep: usize,
) -> Result<(), String> {
    let vfs: Arc<dyn Vfs> = Arc::new(image.clone());
    let db = Db::open(DB, opts(Arc::clone(&vfs))).map_err(|e| format!("reopen failed: {e:?}"))?;
    let ks = db.default_keyspace();
    let got = try_scan(&db).map_err(|e| format!("scan after reopen: {e:?}"))?;
    // Every state some prefix can produce, optional entries taken or not.
    let mut states: Vec<Model> = vec![Model::new()];
    let mut matched = None;
    for p in 0..=issued.len() {
        if p >= must_keep && states.contains(&got) {
            matched = Some(p);
            break;
        }
        if let Some((ops, optional)) = issued.get(p) {
            let mut next = Vec::new();
            for st in &states {
                let mut s2 = st.clone();
                for op in ops {
                    apply(&mut s2, op);
                }
                if *optional && !next.contains(st) {
                    next.push(st.clone());
                }
                if !next.contains(&s2) {
                    next.push(s2);
                }
            }
            next.truncate(64);
            states = next;
        }
    }
    let Some(p) = matched else {
        return Err(format!(
            "recovered state ({} keys) is no prefix of the {} issued writes that keeps the first {must_keep}",
            got.len(),
            issued.len()
        ));
    };
    for k in 0..64 {
        let g = db
            .get(&ks, &key(k), &ReadOptions::default())
            .map_err(|e| format!("get after reopen: {e:?}"))?;
        if g.as_ref() != got.get(&key(k)) {
            return Err(format!("get {k} disagrees with the scan after reopen"));
        }
    }
    db.put(
        &ks,
        b"after",
        b"recovery",
        &WriteOptions::new(Durability::Sync),
    )
    .map_err(|e| format!("write after reopen: {e:?}"))?;
    drop(db);
    let db = Db::open(DB, opts(vfs)).map_err(|e| format!("second reopen failed: {e:?}"))?;
    let mut want = got.clone();
    want.insert(b"after".to_vec(), b"recovery".to_vec());
    let again = try_scan(&db).map_err(|e| format!("scan after second reopen: {e:?}"))?;
    if again != want {
        return Err(format!("second reopen lost data (prefix {p})"));
    }
    Ok(())
}

/// Operations of `kind` one fault-free run performs (open and workload).
fn ops_in_clean_run(kind: IoKind) -> u64 {
    let fault = FaultVfs::new(Arc::new(MemVfs::new()));
    let db = Db::open(DB, opts(Arc::new(fault.clone()))).expect("clean open");
    let ks = db.default_keyspace();
    for step in workload() {
        match &step {
            Step::Write(ops, d) => db.write(batch_of(&db, ops), &WriteOptions::new(*d)),
            Step::Flush => db.flush(),
            Step::Compact => db.compact_range(&ks, None, None),
        }
        .expect("clean run");
    }
    let s = db.stats();
    assert!(s.flushes >= 8, "workload flushes {}", s.flushes);
    assert!(s.compactions >= 3, "workload compactions {}", s.compactions);
    fault.count(kind)
}

/// Every ordinal in 1..=dense, then about `sparse` more spread up to `total`.
fn ordinals(total: u64, dense: u64, sparse: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (1..=dense.min(total)).collect();
    if total > dense {
        let stride = ((total - dense) / sparse.max(1)).max(1);
        let mut n = dense + stride;
        while n <= total {
            v.push(n);
            n += stride;
        }
        if v.last() != Some(&total) {
            v.push(total);
        }
    }
    v
}

/// Runs the workload with the `n`-th operation of `kind` failing, for many `n`; returns the
/// contract violations other than poisoning, and the poisoning violations.
fn sweep_kind(
    kind: IoKind,
    dense: u64,
    sparse: u64,
    background: bool,
    expect_surface: bool,
) -> (Vec<String>, Vec<String>) {
    let total = ops_in_clean_run(kind);
    assert!(total > 0, "the workload never performs a {kind:?}");
    let mut problems: Vec<String> = Vec::new();
    let mut poison_problems: Vec<String> = Vec::new();
    let mut surfaced = 0;
    for n in ordinals(total, dense, sparse) {
        let mut local = Vec::new();
        let run = match catch_unwind(AssertUnwindSafe(|| {
            faulty_run(|f| f.fail_nth(kind, n), background, &mut local)
        })) {
            Ok(run) => run,
            Err(_) => {
                problems.push(format!("{kind:?} #{n}: panic during the faulty run"));
                continue;
            }
        };
        problems.extend(local.into_iter().map(|p| format!("{kind:?} #{n}: {p}")));
        poison_problems.extend(
            run.poison_problems
                .iter()
                .map(|p| format!("{kind:?} #{n}: {p}")),
        );
        if run.failed {
            surfaced += 1;
        }
        for (label, image, keep) in [
            ("power loss", run.power_image.clone(), run.must_power),
            ("process crash", run.process_image.clone(), run.must_process),
        ] {
            match catch_unwind(AssertUnwindSafe(|| {
                check_recovery(image, &run.issued, keep)
            })) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => problems.push(format!("{kind:?} #{n}, {label}: {e}")),
                Err(_) => problems.push(format!("{kind:?} #{n}, {label}: panic in recovery")),
            }
        }
    }
    if expect_surface {
        assert!(surfaced > 0, "no {kind:?} fault ever surfaced");
    }
    (problems, poison_problems)
}

fn assert_none(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{what}: {} problems, first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn check_kind(kind: IoKind, dense: u64, sparse: u64, expect_surface: bool) {
    let (problems, _) = sweep_kind(kind, dense, sparse, false, expect_surface);
    assert_none(&format!("{kind:?} faults"), &problems);
}

/// The fail-stop rule of `docs/durability.md`: after any write-path I/O error (WAL, SST
/// write of a flush or compaction, manifest, directory sync) every later write, `flush` and
/// `compact_range` returns `Error::Poisoned`.
#[test]
fn write_path_faults_poison_every_later_write() {
    let mut all = Vec::new();
    for kind in [IoKind::Write, IoKind::Sync, IoKind::Create, IoKind::Other] {
        for background in [false, true] {
            let (_, poison) = sweep_kind(kind, 40, 20, background, true);
            all.extend(poison);
        }
    }
    assert_none("poisoning", &all);
}

#[test]
fn write_faults_surface_as_io_or_poisoned_and_recover_a_prefix() {
    check_kind(IoKind::Write, u64::MAX, 0, true);
}

#[test]
fn sync_faults_surface_as_io_or_poisoned_and_recover_a_prefix() {
    check_kind(IoKind::Sync, u64::MAX, 0, true);
}

#[test]
fn create_faults_surface_as_io_or_poisoned_and_recover_a_prefix() {
    check_kind(IoKind::Create, u64::MAX, 0, true);
}

/// The same with flushes and compactions on background threads: errors are injected or
/// `Poisoned`, and what is durable recovers (poisoning is checked by
/// `write_path_faults_poison_every_later_write`). Timing decides which
/// operation the fault hits, so this samples ordinals and asserts only what always holds.
#[test]
fn background_write_path_faults_poison_and_recover_a_prefix() {
    let mut all = Vec::new();
    for kind in [IoKind::Write, IoKind::Sync, IoKind::Create] {
        let (problems, _) = sweep_kind(kind, 10, 20, true, true);
        all.extend(problems);
    }
    assert_none("background faults", &all);
}

#[test]
fn rename_faults_surface_as_io_or_poisoned_and_recover_a_prefix() {
    check_kind(IoKind::Rename, 30, 0, true);
}

/// `Other` covers `open_read` (every new SST is opened when its version is installed),
/// `list`, `lock`, `create_dir_all`, `file_size` and `hard_link`.
#[test]
fn other_faults_surface_as_io_or_poisoned_and_recover_a_prefix() {
    check_kind(IoKind::Other, u64::MAX, 0, true);
}

#[test]
fn remove_faults_never_surface_and_recover_a_prefix() {
    check_kind(IoKind::Remove, u64::MAX, 0, false);
}

/// A dead disk (every operation of a kind fails from some point on) behaves like one fault:
/// errors are injected or `Poisoned`, and the durable state recovers.
#[test]
fn dead_disk_faults_surface_as_io_or_poisoned_and_recover_a_prefix() {
    let mut problems = Vec::new();
    for kind in [IoKind::Write, IoKind::Sync, IoKind::Create] {
        let total = ops_in_clean_run(kind);
        for n in ordinals(total, 6, 12) {
            let mut local = Vec::new();
            let run = faulty_run(|f| f.fail_after(kind, n), false, &mut local);
            problems.extend(
                local
                    .into_iter()
                    .map(|p| format!("{kind:?} from #{n}: {p}")),
            );
            for (label, image, keep) in [
                ("power loss", run.power_image.clone(), run.must_power),
                ("process crash", run.process_image.clone(), run.must_process),
            ] {
                if let Err(e) = check_recovery(image, &run.issued, keep) {
                    problems.push(format!("{kind:?} from #{n}, {label}: {e}"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems, first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Faults during recovery.

/// A database with SSTs on several levels, range tombstones in the manifest and synced
/// writes only in the WAL; returns it (as a power-loss image) with its expected contents.
fn db_with_unflushed_wal() -> (MemVfs, Model) {
    let mem = MemVfs::new();
    let db = Db::open(DB, opts(Arc::new(mem.clone()))).expect("open");
    let ks = db.default_keyspace();
    let mut model = Model::new();
    let mut n = 0u64;
    for step in workload() {
        match step {
            Step::Write(ops, _) => {
                db.write(batch_of(&db, &ops), &WriteOptions::new(Durability::Sync))
                    .expect("write");
                for op in &ops {
                    apply(&mut model, op);
                }
                n += 1;
            }
            Step::Flush => db.flush().expect("flush"),
            Step::Compact => db.compact_range(&ks, None, None).expect("compact"),
        }
    }
    // A few more synced writes that stay in the WAL (well under a memtable).
    for i in 0..8u64 {
        let op = Op::Put(key(i * 5), format!("wal-only-{i}").into_bytes());
        db.write(
            batch_of(&db, std::slice::from_ref(&op)),
            &WriteOptions::new(Durability::Sync),
        )
        .expect("write");
        apply(&mut model, &op);
    }
    assert!(n > 100);
    let image = mem.crash_clone();
    drop(db);
    (image, model)
}

#[test]
fn faults_during_recovery_leave_a_database_that_recovers_everything() {
    let (base, model) = db_with_unflushed_wal();
    assert_recovery_survives_every_fault(&base, &model);
}

/// The same with the WAL ending in a torn record instead of reserved zeros: a write cut
/// short (five bytes of a record header) after the synced ones. Recovery must never leave
/// that WAL behind a newer one while a manifest that needs it is current, whatever I/O
/// fails: read strictly as an older WAL, its torn tail would be corruption.
#[test]
fn faults_during_recovery_of_a_torn_wal_leave_a_database_that_recovers_everything() {
    let (base, model) = db_with_unflushed_wal();
    let (wal, _) = base
        .list_all()
        .into_iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "wal"))
        .max()
        .expect("a WAL");
    let bytes = base.read_all(&wal).expect("read");
    let log = cellar_engine::tools::log::read_log(
        &bytes,
        &wal,
        cellar_engine::tools::log::LogKind::Wal,
        cellar_engine::tools::log::TailPolicy::TolerateTornTail,
    )
    .expect("reads");
    let mut torn = bytes[..log.valid_len as usize].to_vec();
    torn.extend_from_slice(&[0x5a, 0x17, 0x33, 0x01, 0x02]);
    let mut f = base.create(&wal).expect("rewrite");
    f.append(&torn).expect("append");
    f.sync().expect("sync");
    drop(f);
    let tail = cellar_engine::tools::log::read_log(
        &base.read_all(&wal).expect("read"),
        &wal,
        cellar_engine::tools::log::LogKind::Wal,
        cellar_engine::tools::log::TailPolicy::TolerateTornTail,
    )
    .expect("reads");
    assert!(tail.dropped_tail_bytes == 5 && !tail.unwritten_tail);
    assert_recovery_survives_every_fault(&base, &model);
}

/// Fails every I/O of a recovery of `base` in turn, of every kind: the open fails with the
/// injected error or succeeds with `model`, and a power loss or process crash right after
/// leaves a database that recovers `model`.
fn assert_recovery_survives_every_fault(base: &MemVfs, model: &Model) {
    let model = model.clone();
    let mut problems = Vec::new();
    for kind in [
        IoKind::Read,
        IoKind::Write,
        IoKind::Sync,
        IoKind::Create,
        IoKind::Rename,
        IoKind::Remove,
        IoKind::Other,
    ] {
        // Count what a clean recovery does.
        let total = {
            let img = base.crash_clone();
            let fault = FaultVfs::new(Arc::new(img));
            let db = Db::open(DB, opts(Arc::new(fault.clone()))).expect("clean recovery");
            assert_eq!(scan_all(&db, &db.default_keyspace()), model);
            fault.count(kind)
        };
        for n in 1..=total {
            let img = base.crash_clone();
            let fault = FaultVfs::new(Arc::new(img.clone()));
            fault.fail_nth(kind, n);
            let opened = catch_unwind(AssertUnwindSafe(|| {
                Db::open(DB, opts(Arc::new(fault.clone()))).map(|db| {
                    let r = try_scan(&db);
                    (db, r)
                })
            }));
            let live = match opened {
                Err(_) => {
                    problems.push(format!("{kind:?} #{n}: open panicked"));
                    continue;
                }
                Ok(Err(e)) => {
                    if !FaultVfs::is_injected(&e) {
                        problems.push(format!("{kind:?} #{n}: open failed with {e:?}"));
                    }
                    None
                }
                Ok(Ok((db, scan))) => {
                    match scan {
                        Ok(got) if got == model => {}
                        Ok(got) => problems.push(format!(
                            "{kind:?} #{n}: open succeeded with wrong data ({} keys)",
                            got.len()
                        )),
                        Err(e) if FaultVfs::is_injected(&e) => {}
                        Err(e) => problems.push(format!("{kind:?} #{n}: scan failed: {e:?}")),
                    }
                    Some(db)
                }
            };
            for (label, image) in [
                ("power loss", img.crash_clone()),
                ("process crash", img.process_crash_clone()),
            ] {
                let r = catch_unwind(AssertUnwindSafe(|| {
                    let db = Db::open(DB, opts(Arc::new(image)))?;
                    try_scan(&db)
                }));
                match r {
                    Ok(Ok(got)) if got == model => {}
                    Ok(Ok(got)) => problems.push(format!(
                        "{kind:?} #{n}, {label}: recovered {} keys, expected {}",
                        got.len(),
                        model.len()
                    )),
                    Ok(Err(e)) => problems.push(format!("{kind:?} #{n}, {label}: {e:?}")),
                    Err(_) => problems.push(format!("{kind:?} #{n}, {label}: panic")),
                }
            }
            drop(live);
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems, first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Read faults.

/// Keys 0..200 with an old value on the bottom level and a new value in an L0 file, read
/// through a fresh `FaultVfs` (nothing cached).
fn two_level_db() -> (MemVfs, Model) {
    let mem = MemVfs::new();
    let db = Db::open(DB, opts(Arc::new(mem.clone()))).expect("open");
    let ks = db.default_keyspace();
    let wo = WriteOptions::new(Durability::Buffered);
    let mut model = Model::new();
    for i in 0..200u32 {
        let k = format!("r{i:04}").into_bytes();
        db.put(&ks, &k, format!("old-{i}").as_bytes(), &wo)
            .expect("put");
    }
    db.compact_range(&ks, None, None).expect("compact");
    // Big memtable for the second round so it lands in one L0 file.
    drop(db);
    let mut o = opts(Arc::new(mem.clone()));
    o.memtable_size_bytes = 1 << 20;
    let db = Db::open(DB, o).expect("reopen");
    for i in 0..200u32 {
        let k = format!("r{i:04}").into_bytes();
        let v = format!("new-{i}").into_bytes();
        db.put(&ks, &k, &v, &wo).expect("put");
        model.insert(k, v);
    }
    db.flush().expect("flush");
    let s = db.stats();
    let levels = &s.keyspaces[0].levels;
    assert_eq!(levels[0].files, 1, "{levels:?}");
    assert!(levels.iter().skip(1).any(|l| l.files > 0), "{levels:?}");
    drop(db);
    (mem, model)
}

fn open_faulty(mem: &MemVfs) -> (FaultVfs, Db) {
    let fault = FaultVfs::new(Arc::new(mem.process_crash_clone()));
    let mut o = opts(Arc::new(fault.clone()));
    o.memtable_size_bytes = 1 << 20;
    let db = Db::open(DB, o).expect("open");
    (fault, db)
}

#[test]
fn read_fault_fails_get_multi_get_and_scan_and_db_works_after_clear() {
    let (mem, model) = two_level_db();
    let (fault, db) = open_faulty(&mem);
    let ks = db.default_keyspace();
    let ro = ReadOptions::default();
    fault.fail_after(IoKind::Read, 1);
    let e = db.get(&ks, b"r0100", &ro).expect_err("get must fail");
    assert!(FaultVfs::is_injected(&e), "{e:?}");
    let keys: Vec<&[u8]> = vec![b"r0001", b"r0150"];
    let e = db
        .multi_get(&ks, &keys, &ro)
        .expect_err("multi_get must fail");
    assert!(FaultVfs::is_injected(&e), "{e:?}");
    let mut it = db.iter(&ks, ReadOptions::default()).expect("iter");
    it.seek_to_first();
    assert!(!it.valid());
    let e = it.status().expect_err("scan must fail");
    assert!(FaultVfs::is_injected(&e), "{e:?}");
    drop(it);
    // A read error is not a write-path error: writes go on.
    db.put(&ks, b"w", b"1", &WriteOptions::new(Durability::Sync))
        .expect("write after a read error");
    fault.clear();
    assert_eq!(
        db.get(&ks, b"r0100", &ro).expect("get"),
        Some(b"new-100".to_vec())
    );
    let mut want = model.clone();
    want.insert(b"w".to_vec(), b"1".to_vec());
    assert_eq!(scan_all(&db, &ks), want);
    db.flush().expect("flush after clear");
    db.compact_range(&ks, None, None)
        .expect("compact after clear");
    assert_eq!(scan_all(&db, &ks), want);
}

/// A scan that meets a read error may stop early (and must report it from `status`), but
/// every entry it did yield must be the current one — never an older version from a lower
/// level that the failed file shadows.
#[test]
fn read_fault_during_scan_never_yields_stale_values() {
    let (mem, model) = two_level_db();
    let mut problems = Vec::new();
    for n in 1..=40u64 {
        let (fault, db) = open_faulty(&mem);
        let ks = db.default_keyspace();
        fault.fail_nth(IoKind::Read, n);
        let mut it = db.iter(&ks, ReadOptions::default()).expect("iter");
        it.seek_to_first();
        let mut yielded = 0;
        while it.valid() {
            let want = model.get(it.key());
            if want.map(|v| v.as_slice()) != Some(it.value()) {
                problems.push(format!(
                    "read fault #{n}: scan yielded {:?} = {:?}, current value {:?}",
                    String::from_utf8_lossy(it.key()),
                    String::from_utf8_lossy(it.value()),
                    want.map(|v| String::from_utf8_lossy(v).to_string())
                ));
                break;
            }
            yielded += 1;
            it.next();
        }
        if it.status().is_ok() && yielded != model.len() {
            problems.push(format!(
                "read fault #{n}: scan ended cleanly after {yielded} of {} keys",
                model.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Same for the reverse direction.
#[test]
fn read_fault_during_reverse_scan_never_yields_stale_values() {
    let (mem, model) = two_level_db();
    let mut problems = Vec::new();
    for n in 1..=40u64 {
        let (fault, db) = open_faulty(&mem);
        let ks = db.default_keyspace();
        fault.fail_nth(IoKind::Read, n);
        let mut it = db.iter(&ks, ReadOptions::default()).expect("iter");
        it.seek_to_last();
        let mut yielded = 0;
        while it.valid() {
            let want = model.get(it.key());
            if want.map(|v| v.as_slice()) != Some(it.value()) {
                problems.push(format!(
                    "read fault #{n}: reverse scan yielded {:?} = {:?}",
                    String::from_utf8_lossy(it.key()),
                    String::from_utf8_lossy(it.value()),
                ));
                break;
            }
            yielded += 1;
            it.prev();
        }
        if it.status().is_ok() && yielded != model.len() {
            problems.push(format!(
                "read fault #{n}: reverse scan ended cleanly after {yielded} of {} keys",
                model.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A read error inside a compaction must fail the compaction, never install an output that
/// lacks the unread entries.
#[test]
fn read_fault_during_compaction_never_loses_data() {
    let (mem, model) = two_level_db();
    let mut problems = Vec::new();
    for n in 1..=30u64 {
        let (fault, db) = open_faulty(&mem);
        let ks = db.default_keyspace();
        fault.fail_nth(IoKind::Read, n);
        let r = db.compact_range(&ks, None, None);
        if let Err(e) = &r {
            if !allowed(e) {
                problems.push(format!("read fault #{n}: compaction failed with {e:?}"));
            }
        }
        fault.clear();
        match try_scan(&db) {
            Ok(got) if got == model => {}
            Ok(got) => problems.push(format!(
                "read fault #{n} (compaction {r:?}): live scan has {} keys, wrong data",
                got.len()
            )),
            Err(e) => problems.push(format!("read fault #{n}: live scan failed: {e:?}")),
        }
        let image = mem_image(&fault);
        drop(db);
        match Db::open(DB, opts(Arc::new(image))).and_then(|db| try_scan(&db)) {
            Ok(got) if got == model => {}
            Ok(got) => problems.push(format!(
                "read fault #{n}: after reopen {} keys, wrong data",
                got.len()
            )),
            Err(e) => problems.push(format!("read fault #{n}: reopen: {e:?}")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A copy of every live file under `fault` (what a process crash leaves), read through the
/// inner Vfs so no rule applies.
fn mem_image(fault: &FaultVfs) -> MemVfs {
    let inner = Arc::clone(fault.inner());
    let list = inner.list(std::path::Path::new(DB)).expect("list");
    let img = MemVfs::new();
    img.create_dir_all(std::path::Path::new(DB)).expect("mkdir");
    for name in list {
        let from = std::path::Path::new(DB).join(&name);
        let data = inner.read_all(&from).expect("read");
        let mut f = img.create(&from).expect("create");
        f.append(&data).expect("append");
        f.sync().expect("sync");
    }
    img.sync_dir(std::path::Path::new(DB)).expect("sync dir");
    img
}
