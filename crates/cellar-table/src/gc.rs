//! Reclaiming what a family's rules hide: cells past their TTL are dropped by the engine's
//! compactions through a compaction filter per family keyspace (registered whenever the
//! store learns of a family). Reads hide them the same way, so this only frees space; the
//! engine only lets a filter drop what no snapshot sees and what has nothing older below it.
//!
//! Versions beyond MAX_VERSIONS are *not* dropped: a read counts versions among the cells of
//! its time range (as HBase does), so `SELECT ... WHERE TIMESTAMP = t` may show a version
//! that is not among the newest MAX_VERSIONS; dropping it would change that answer.

use std::sync::Arc;
use std::time::Duration;

use cellar_engine::Db;
use cellar_engine::{CompactionFilter, CompactionFilterRun};

use crate::schema::{family_keyspace_name, TableSchema};
use crate::timestamp::now_nanos;

struct FamilyGc {
    ttl: Duration,
}

struct FamilyGcRun {
    /// Cells with a timestamp below this have expired.
    min_ts: u64,
}

impl CompactionFilter for FamilyGc {
    fn start(&self) -> Box<dyn CompactionFilterRun> {
        let ttl = u64::try_from(self.ttl.as_nanos()).unwrap_or(u64::MAX);
        Box::new(FamilyGcRun {
            min_ts: now_nanos().saturating_sub(ttl),
        })
    }
}

impl CompactionFilterRun for FamilyGcRun {
    fn decide(&mut self, key: &[u8], _value: &[u8], _droppable: bool) -> bool {
        // A cell key ends with the inverted timestamp (docs/format/cells.md).
        let Some(split) = key.len().checked_sub(8) else {
            return false;
        };
        let mut b = [0u8; 8];
        b.copy_from_slice(&key[split..]);
        u64::MAX - u64::from_be_bytes(b) < self.min_ts
    }
}

/// Registers the compaction filter of every family of `schema` that has a TTL.
pub(crate) fn register(db: &Db, schema: &TableSchema) {
    for f in &schema.families {
        let Ok(ks) = db.keyspace(&family_keyspace_name(&schema.name, &f.name)) else {
            continue;
        };
        let filter: Option<Arc<dyn CompactionFilter>> = f
            .options
            .ttl
            .map(|ttl| Arc::new(FamilyGc { ttl }) as Arc<dyn CompactionFilter>);
        db.set_compaction_filter(&ks, filter);
    }
}
