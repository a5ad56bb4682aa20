//! Model-based test: random operations against the engine and against a `BTreeMap`, with
//! flushes, compactions, snapshots, reopen and crashes (through `MemVfs`) as operations.
//! After a crash, the database must equal the model after *some prefix* of the writes that
//! includes every write acknowledged as durable for that kind of crash — nothing lost that
//! was promised, nothing invented.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use cellar_engine::vfs::{MemVfs, Vfs};
use cellar_engine::{
    Db, Durability, Keyspace, ReadOptions, Snapshot, StorageLayout, WalLocation, WriteBatch,
    WriteOptions,
};
use proptest::prelude::*;

use common::{scan_all, tiny_options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Write {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
}

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<Write>, Durability),
    Get(Vec<u8>),
    MultiGet(Vec<Vec<u8>>),
    Scan {
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        reverse: bool,
    },
    Walk(Vec<u8>, Vec<bool>),
    TakeSnapshot,
    ReadSnapshot(usize, Vec<u8>),
    Flush,
    Compact,
    /// A bulk load: puts (Some) and deletes (None) of distinct keys.
    Ingest(BTreeMap<Vec<u8>, Option<Vec<u8>>>),
    Reopen,
    PowerLoss,
    ProcessCrash,
    /// The machine is lost: a database in an object store reopens elsewhere, without its
    /// local WAL (a power loss for a directory).
    MachineLoss,
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    // A small key space so that writes overwrite and delete each other; 0x00 and 0xff
    // bytes and a shared prefix exercise prefix compression and separators.
    (0u8..48, prop_oneof![Just(0u8), Just(0xffu8), 1u8..4]).prop_map(|(a, b)| vec![b'k', a, b])
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..40),
        1 => proptest::collection::vec(Just(7u8), 200..1200),
    ]
}

fn write() -> impl Strategy<Value = Write> {
    prop_oneof![
        8 => (key(), value()).prop_map(|(k, v)| Write::Put(k, v)),
        3 => key().prop_map(Write::Delete),
        1 => (key(), key()).prop_map(|(a, b)| if a <= b { Write::DeleteRange(a, b) } else { Write::DeleteRange(b, a) }),
    ]
}

fn durability() -> impl Strategy<Value = Durability> {
    prop_oneof![
        Just(Durability::Buffered),
        Just(Durability::Flush),
        Just(Durability::Sync)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (proptest::collection::vec(write(), 1..4), durability()).prop_map(|(w, d)| Op::Write(w, d)),
        8 => key().prop_map(Op::Get),
        3 => proptest::collection::vec(key(), 1..12).prop_map(Op::MultiGet),
        3 => (proptest::option::of(key()), proptest::option::of(key()), any::<bool>())
            .prop_map(|(lower, upper, reverse)| Op::Scan { lower, upper, reverse }),
        2 => (key(), proptest::collection::vec(any::<bool>(), 1..12)).prop_map(|(k, w)| Op::Walk(k, w)),
        2 => Just(Op::TakeSnapshot),
        3 => (any::<usize>(), key()).prop_map(|(i, k)| Op::ReadSnapshot(i, k)),
        2 => Just(Op::Flush),
        1 => Just(Op::Compact),
        2 => proptest::collection::btree_map(key(), proptest::option::weighted(0.85, value()), 1..12).prop_map(Op::Ingest),
        1 => Just(Op::Reopen),
        1 => Just(Op::MachineLoss),
        1 => Just(Op::PowerLoss),
        1 => Just(Op::ProcessCrash),
    ]
}

fn apply(model: &mut Model, w: &Write) {
    match w {
        Write::Put(k, v) => {
            model.insert(k.clone(), v.clone());
        }
        Write::Delete(k) => {
            model.remove(k);
        }
        Write::DeleteRange(a, b) => {
            common::model_delete_range(model, a, b);
        }
    }
}

/// Where the model test's database lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Directory,
    /// An "object store" (`StorageLayout::Objects` on the MemVfs), the WAL local under `/wal`.
    ObjectsLocalWal,
    /// An "object store" with the WAL in it too.
    ObjectsObjectWal,
}

struct Harness {
    vfs: MemVfs,
    background: bool,
    /// Where the database lives (see [`Place`]).
    place: Place,
    /// See `Harness::open`.
    layout: usize,
    db: Option<Db>,
    ks: Keyspace,
    /// State that is known durable (after open), plus the batches written since.
    base: Model,
    history: Vec<(Vec<Write>, Durability)>,
    /// How many of `history` must survive a power loss / a process crash.
    durable_power: usize,
    durable_process: usize,
    /// How many of `history` are in SSTs (flushed, compacted, ingested or reopened).
    durable_machine: usize,
    model: Model,
    snapshots: Vec<(Snapshot, Model)>,
}

impl Harness {
    /// `layout` picks how the SSTs written from now on lay out their index, and how they
    /// are read: 0 one index and filter (version 1), 1 index partitions of a few entries
    /// pinned in memory, 2 the same read through the block cache (metadata budget 0).
    /// Reopens change it, so one database mixes layouts.
    fn open(vfs: MemVfs, background: bool, layout: usize, place: Place) -> Db {
        let mut opts = tiny_options(std::sync::Arc::new(vfs.clone()), background);
        let wal = match place {
            Place::Directory => None,
            Place::ObjectsLocalWal => Some(WalLocation::Local {
                vfs: std::sync::Arc::new(vfs.clone()),
                dir: "/wal".into(),
            }),
            Place::ObjectsObjectWal => Some(WalLocation::Object),
        };
        if let Some(wal) = wal {
            opts.storage = StorageLayout::Objects { wal };
        }
        if !layout.is_multiple_of(3) {
            opts.index_partition_bytes = 48;
        }
        if layout % 3 == 2 {
            opts.max_resident_metadata_bytes = 0;
        }
        Db::open("/db", opts).expect("open")
    }

    fn new(background: bool, layout: usize, place: Place) -> Self {
        let vfs = MemVfs::new();
        let db = Self::open(vfs.clone(), background, layout, place);
        let ks = db.default_keyspace();
        Harness {
            vfs,
            background,
            place,
            layout,
            db: Some(db),
            ks,
            base: Model::new(),
            history: Vec::new(),
            durable_power: 0,
            durable_process: 0,
            durable_machine: 0,
            model: Model::new(),
            snapshots: Vec::new(),
        }
    }

    fn all_durable(&mut self) {
        self.durable_power = self.history.len();
        self.durable_process = self.history.len();
    }

    /// Every write so far is in SSTs.
    fn all_in_tables(&mut self) {
        self.all_durable();
        self.durable_machine = self.history.len();
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("database is open")
    }

    /// Replaces the database by one opened on `vfs` and checks it holds a valid prefix.
    fn recover(&mut self, vfs: MemVfs, must_keep: usize) -> Result<(), TestCaseError> {
        self.snapshots.clear();
        if let Some(old) = self.db.take() {
            old.close().expect("close");
        }
        self.layout += 1;
        self.db = Some(Self::open(
            vfs.clone(),
            self.background,
            self.layout,
            self.place,
        ));
        self.vfs = vfs;
        let got = scan_all(self.db(), &self.ks);
        let mut state = self.base.clone();
        let mut matched = None;
        for (i, (batch, _)) in self.history.iter().enumerate() {
            if i >= must_keep && state == got {
                matched = Some(state.clone());
                break;
            }
            for w in batch {
                apply(&mut state, w);
            }
        }
        if matched.is_none() && state == got {
            matched = Some(state);
        }
        let Some(state) = matched else {
            return Err(TestCaseError::fail(format!(
                "recovered state is no prefix of the writes that keeps the first {must_keep} of {}",
                self.history.len()
            )));
        };
        self.base = state.clone();
        self.model = state;
        self.history.clear();
        self.durable_power = 0;
        self.durable_process = 0;
        self.durable_machine = 0;
        Ok(())
    }

    fn run(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let ro = ReadOptions::default();
        match op {
            Op::Write(ws, d) => {
                let mut b = WriteBatch::new();
                for w in ws {
                    match w {
                        Write::Put(k, v) => b.put(&self.ks, k, v),
                        Write::Delete(k) => b.delete(&self.ks, k),
                        Write::DeleteRange(a, c) => b.delete_range(&self.ks, a, c),
                    }
                }
                self.db().write(b, &WriteOptions::new(*d)).expect("write");
                for w in ws {
                    apply(&mut self.model, w);
                }
                self.history.push((ws.clone(), *d));
                match d {
                    Durability::Sync => self.all_durable(),
                    // With the WAL in the object store, a write without Sync waits in the
                    // process for its object.
                    Durability::Flush if self.place != Place::ObjectsObjectWal => {
                        self.durable_process = self.history.len()
                    }
                    Durability::Flush | Durability::Buffered => {}
                }
                if *d == Durability::Sync && self.place == Place::ObjectsObjectWal {
                    self.durable_machine = self.history.len();
                }
            }
            Op::Get(k) => {
                let got = self.db().get(&self.ks, k, &ro).expect("get");
                prop_assert_eq!(got.as_ref(), self.model.get(k), "get {:?}", k);
            }
            Op::MultiGet(keys) => {
                let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
                let got = self
                    .db()
                    .multi_get(&self.ks, &refs, &ro)
                    .expect("multi_get");
                for (k, g) in keys.iter().zip(got) {
                    prop_assert_eq!(g.as_ref(), self.model.get(k), "multi_get {:?}", k);
                }
            }
            Op::Scan {
                lower,
                upper,
                reverse,
            } => {
                let ro = ReadOptions {
                    lower_bound: lower.clone(),
                    upper_bound: upper.clone(),
                    ..ReadOptions::default()
                };
                let mut it = self.db().iter(&self.ks, ro).expect("iter");
                let mut got = Vec::new();
                if *reverse {
                    it.seek_to_last();
                } else {
                    it.seek_to_first();
                }
                while it.valid() {
                    got.push((it.key().to_vec(), it.value().to_vec()));
                    if *reverse {
                        it.prev()
                    } else {
                        it.next()
                    }
                }
                it.status().expect("scan status");
                let lo = lower.clone().map_or(Bound::Unbounded, Bound::Included);
                let hi = upper.clone().map_or(Bound::Unbounded, Bound::Excluded);
                let empty =
                    matches!((&lo, &hi), (Bound::Included(l), Bound::Excluded(u)) if l >= u);
                let mut want: Vec<_> = if empty {
                    Vec::new()
                } else {
                    self.model
                        .range((lo, hi))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                };
                if *reverse {
                    want.reverse();
                }
                prop_assert_eq!(got, want);
            }
            Op::Walk(start, steps) => {
                let mut it = self
                    .db()
                    .iter(&self.ks, ReadOptions::default())
                    .expect("iter");
                it.seek(start);
                let keys: Vec<&Vec<u8>> = self.model.keys().collect();
                let mut pos = keys.partition_point(|k| k.as_slice() < start.as_slice());
                for fwd in steps {
                    if pos >= keys.len() {
                        prop_assert!(!it.valid());
                        break;
                    }
                    prop_assert!(it.valid());
                    prop_assert_eq!(it.key(), keys[pos].as_slice());
                    if *fwd {
                        it.next();
                        pos += 1;
                    } else {
                        it.prev();
                        if pos == 0 {
                            prop_assert!(!it.valid());
                            break;
                        }
                        pos -= 1;
                    }
                }
            }
            Op::TakeSnapshot => {
                self.snapshots
                    .push((self.db().snapshot(), self.model.clone()));
            }
            Op::ReadSnapshot(i, k) => {
                if !self.snapshots.is_empty() {
                    let (s, m) = &self.snapshots[i % self.snapshots.len()];
                    let got = self
                        .db()
                        .get(&self.ks, k, &ReadOptions::at(s))
                        .expect("get");
                    prop_assert_eq!(got.as_ref(), m.get(k));
                    let mut it = self.db().iter(&self.ks, ReadOptions::at(s)).expect("iter");
                    it.seek_to_first();
                    let mut all = Model::new();
                    while it.valid() {
                        all.insert(it.key().to_vec(), it.value().to_vec());
                        it.next();
                    }
                    prop_assert_eq!(&all, m);
                }
            }
            Op::Flush => {
                self.db().flush().expect("flush");
                self.all_in_tables();
            }
            Op::Compact => {
                self.db()
                    .compact_range(&self.ks, None, None)
                    .expect("compact");
                self.all_in_tables();
            }
            Op::Ingest(entries) => {
                let mut w = self.db().ingest_writer(&self.ks).expect("ingest writer");
                let mut writes = Vec::new();
                for (k, v) in entries {
                    match v {
                        Some(v) => {
                            w.put(k, v).expect("ingest put");
                            writes.push(Write::Put(k.clone(), v.clone()));
                        }
                        None => {
                            w.delete(k).expect("ingest delete");
                            writes.push(Write::Delete(k.clone()));
                        }
                    }
                }
                let files = w.finish().expect("ingest finish");
                self.db().ingest(vec![files]).expect("ingest");
                for x in &writes {
                    apply(&mut self.model, x);
                }
                self.history.push((writes, Durability::Sync));
                self.all_in_tables();
            }
            Op::Reopen => {
                let vfs = self.vfs.clone();
                self.all_durable();
                let n = self.history.len();
                self.recover(vfs, n)?;
            }
            Op::PowerLoss => {
                let clone = self.vfs.crash_clone();
                let keep = self.durable_power;
                self.recover(clone, keep)?;
            }
            Op::ProcessCrash => {
                let clone = self.vfs.process_crash_clone();
                let keep = self.durable_process;
                self.recover(clone, keep)?;
            }
            Op::MachineLoss if self.place != Place::Directory => {
                // The bucket keeps everything it acknowledged; the local disk is gone.
                let clone = self.vfs.process_crash_clone();
                for (path, _) in clone.list_all() {
                    if path.starts_with("/wal") {
                        let _ = clone.remove(&path);
                    }
                }
                let keep = self.durable_machine;
                self.recover(clone, keep)?;
            }
            Op::MachineLoss => {
                let clone = self.vfs.crash_clone();
                let keep = self.durable_power;
                self.recover(clone, keep)?;
            }
        }
        Ok(())
    }
}

fn run_ops(ops: &[Op], background: bool, place: Place) -> Result<(), TestCaseError> {
    let mut h = Harness::new(background, ops.len(), place);
    for op in ops {
        h.run(op)?;
    }
    // Whatever happened, a final scan equals the model.
    prop_assert_eq!(scan_all(h.db(), &h.ks), h.model.clone());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_model_inline_work(ops in proptest::collection::vec(op(), 1..120)) {
        run_ops(&ops, false, Place::Directory)?;
    }

    #[test]
    fn object_store_with_local_wal_matches_model(ops in proptest::collection::vec(op(), 1..100)) {
        run_ops(&ops, false, Place::ObjectsLocalWal)?;
    }

    #[test]
    fn object_store_with_object_wal_matches_model(ops in proptest::collection::vec(op(), 1..100)) {
        run_ops(&ops, false, Place::ObjectsObjectWal)?;
    }

    #[test]
    fn engine_matches_model_background_work(ops in proptest::collection::vec(op(), 1..80)) {
        run_ops(&ops, true, Place::Directory)?;
    }
}
