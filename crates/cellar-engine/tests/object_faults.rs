//! Model test of a database in an in-memory object store (`object_store::memory::InMemory`
//! under `ObjectVfs`) with faults: failed, ambiguous (performed, then reported failed) and
//! throttled PUTs, failed, short and throttled GETs, slow requests. After every error the
//! "process" restarts (a new `ObjectVfs` and `Db` on the same bucket). Nothing acknowledged
//! may be lost, and a write that failed appears whole or not at all.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use cellar_engine::vfs::object::fault::FaultObjectStore;
use cellar_engine::vfs::object::object_store::memory::InMemory;
use cellar_engine::vfs::object::{DiskCacheConfig, ObjectVfs};
use cellar_engine::vfs::{RealVfs, Vfs};
use cellar_engine::{Db, Durability, StorageLayout, WalLocation, WriteBatch, WriteOptions};
use proptest::prelude::*;

use common::{scan_all, tiny_options};

#[derive(Debug, Clone)]
enum Op {
    /// One batch putting two keys to one value, acknowledged with Sync.
    Write(u8, u8, u8),
    Flush,
    Compact,
    FailPut(u64),
    AmbiguousPut(u64),
    ThrottlePut(u64),
    FailGet(u64),
    ShortGet(u64),
    ThrottleGet(u64),
    Slow(bool),
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0u8..24, 0u8..24, any::<u8>()).prop_map(|(a, b, v)| Op::Write(a, b, v)),
        2 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => (1u64..4).prop_map(Op::FailPut),
        1 => (1u64..4).prop_map(Op::AmbiguousPut),
        1 => (1u64..4).prop_map(Op::ThrottlePut),
        1 => (1u64..4).prop_map(Op::FailGet),
        1 => (1u64..4).prop_map(Op::ShortGet),
        1 => (1u64..4).prop_map(Op::ThrottleGet),
        1 => any::<bool>().prop_map(Op::Slow),
        1 => Just(Op::Restart),
    ]
}

struct Harness {
    bucket: Arc<InMemory>,
    faults: Arc<FaultObjectStore>,
    local: tempfile::TempDir,
    wal_object: bool,
    db: Option<Db>,
    /// Every acknowledged write applied.
    model: BTreeMap<Vec<u8>, Vec<u8>>,
    /// A write that failed: it may or may not be in the database, whole.
    maybe: Option<(Vec<u8>, Vec<u8>, Vec<u8>)>,
}

impl Harness {
    fn open(&mut self) -> Result<(), TestCaseError> {
        // A restart: the old process's faults die with it, but the bucket stays.
        self.faults = Arc::new(FaultObjectStore::new(self.bucket.clone()));
        let cache = DiskCacheConfig {
            dir: self.local.path().join("cache"),
            bytes: 1 << 30,
        };
        let vfs = ObjectVfs::new(self.faults.clone(), "memory", Some(cache)).unwrap();
        let mut opts = tiny_options(Arc::new(vfs), false);
        opts.storage = StorageLayout::Objects {
            wal: if self.wal_object {
                WalLocation::Object
            } else {
                WalLocation::Local {
                    vfs: Arc::new(RealVfs) as Arc<dyn Vfs>,
                    dir: self.local.path().join("wal"),
                }
            },
        };
        let db = Db::open("db", opts).map_err(|e| TestCaseError::fail(format!("open: {e}")))?;
        let got = scan_all(&db, &db.default_keyspace());
        self.check(&got)?;
        self.model = got;
        self.maybe = None;
        self.db = Some(db);
        Ok(())
    }

    /// `got` is the model, or the model with the failed write applied whole.
    fn check(&self, got: &BTreeMap<Vec<u8>, Vec<u8>>) -> Result<(), TestCaseError> {
        if *got == self.model {
            return Ok(());
        }
        if let Some((a, b, v)) = &self.maybe {
            let mut with = self.model.clone();
            with.insert(a.clone(), v.clone());
            with.insert(b.clone(), v.clone());
            if *got == with {
                return Ok(());
            }
        }
        Err(TestCaseError::fail(format!(
            "recovered {got:?}, acknowledged {:?}, maybe {:?}",
            self.model, self.maybe
        )))
    }

    fn restart(&mut self) -> Result<(), TestCaseError> {
        if let Some(db) = self.db.take() {
            let _ = db.close();
        }
        self.open()
    }

    fn inject(&self, fault: &Op) {
        let f = &self.faults;
        match fault {
            Op::FailPut(n) => f.fail_nth_put(*n),
            Op::AmbiguousPut(n) => f.ambiguous_nth_put(*n),
            Op::ThrottlePut(n) => f.throttle_nth_put(*n),
            Op::FailGet(n) => f.fail_nth_get(*n),
            Op::ShortGet(n) => f.short_nth_get(*n),
            Op::ThrottleGet(n) => f.throttle_nth_get(*n),
            Op::Slow(on) => f.set_delay(if *on {
                Duration::from_millis(1)
            } else {
                Duration::ZERO
            }),
            _ => {}
        }
    }

    fn run(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let db = self.db.as_ref().expect("open");
        let result = match op {
            Op::Write(a, b, v) => {
                let (ka, kb, val) = (vec![b'k', *a], vec![b'k', *b], vec![*v; 20]);
                let ks = db.default_keyspace();
                let mut batch = WriteBatch::new();
                batch.put(&ks, &ka, &val);
                batch.put(&ks, &kb, &val);
                let r = db.write(batch, &WriteOptions::new(Durability::Sync));
                match &r {
                    Ok(()) => {
                        self.model.insert(ka, val.clone());
                        self.model.insert(kb, val);
                    }
                    Err(_) => self.maybe = Some((ka, kb, val)),
                }
                r
            }
            Op::Flush => db.flush(),
            Op::Compact => db.compact_range(&db.default_keyspace(), None, None),
            Op::Restart => return self.restart(),
            fault => {
                self.inject(fault);
                Ok(())
            }
        };
        if result.is_err() {
            self.restart()?;
        }
        Ok(())
    }
}

fn run(ops: &[Op], wal_object: bool) -> Result<(), TestCaseError> {
    let bucket = Arc::new(InMemory::new());
    let mut h = Harness {
        faults: Arc::new(FaultObjectStore::new(bucket.clone())),
        bucket,
        local: tempfile::tempdir().unwrap(),
        wal_object,
        db: None,
        model: BTreeMap::new(),
        maybe: None,
    };
    h.open()?;
    for op in ops {
        h.run(op)?;
    }
    h.restart()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 500, ..ProptestConfig::default() })]

    #[test]
    fn faults_lose_no_acknowledged_write(ops in proptest::collection::vec(op(), 1..50), wal_object in any::<bool>()) {
        run(&ops, wal_object)?;
    }
}
