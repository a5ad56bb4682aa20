//! What a YCSB client asks of an engine: its reads take the record's bytes (`read_into`),
//! as YCSB's bindings copy every field into the caller's result, never a length alone.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use super::gen::InsertCounter;
use super::workload::{client, KeyChooser, RecordShape, RunShared, CORE};
use crate::engine::{Direction, Engine, EngineStats, Seek};
use crate::error::Result;

/// An engine over a sorted map that counts how its values are asked for.
#[derive(Default)]
struct MapEngine {
    map: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
    lengths: AtomicU64,
    copies: AtomicU64,
}

impl MapEngine {
    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<Vec<u8>, Vec<u8>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Engine for MapEngine {
    fn name(&self) -> &'static str {
        "map"
    }
    fn put(&self, key: &[u8], value: &[u8], _sync: bool) -> Result<()> {
        self.map().insert(key.to_vec(), value.to_vec());
        Ok(())
    }
    fn put_batch(&self, entries: &[(&[u8], &[u8])], sync: bool) -> Result<()> {
        entries.iter().try_for_each(|(k, v)| self.put(k, v, sync))
    }
    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        self.lengths.fetch_add(1, Relaxed);
        Ok(self.map().get(key).map(Vec::len))
    }
    fn read_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.copies.fetch_add(1, Relaxed);
        Ok(crate::engine::copy_found(
            self.map().get(key).map(Vec::as_slice),
            out,
        ))
    }
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<usize>>> {
        keys.iter().map(|k| self.get(k)).collect()
    }
    fn scan(
        &self,
        _dir: Direction,
        limit: usize,
        next_seek: &mut dyn FnMut(&mut Vec<u8>) -> Option<Seek>,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<()> {
        let mut from = Vec::new();
        while next_seek(&mut from).is_some() {
            for (k, v) in self.map().range(from.clone()..).take(limit) {
                visit(k, v);
            }
        }
        Ok(())
    }
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    fn compact(&self) -> Result<()> {
        Ok(())
    }
    fn wait_for_background(&self, _timeout: Duration) -> Result<()> {
        Ok(())
    }
    fn stats(&self) -> EngineStats {
        EngineStats::default()
    }
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

#[test]
fn ycsb_reads_take_the_records_bytes_not_their_length() {
    const RECORDS: u64 = 200;
    let engine = MapEngine::default();
    let mut shape = RecordShape::new(10, 100);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    for r in 0..RECORDS {
        RecordShape::key(r, &mut key);
        shape.value(&mut value);
        engine.put(&key, &value, false).unwrap();
    }
    // B reads and updates, F reads, modifies and writes.
    for mix in [CORE[1], CORE[5]] {
        let inserts = InsertCounter::new(RECORDS);
        let shared = RunShared {
            engine: &engine,
            mix,
            inserts: &inserts,
            value_bytes: shape.value_bytes(),
        };
        let before = engine.copies.load(Relaxed);
        let chooser = KeyChooser::new(mix.distribution, RECORDS, 0);
        let out = client(&shared, chooser, shape.fork(1), 7, 500).unwrap();
        assert!(out.reads > 0, "{}", mix.name);
        assert_eq!(out.found, out.reads, "{}", mix.name);
        assert_eq!(
            engine.copies.load(Relaxed) - before,
            out.reads,
            "{}",
            mix.name
        );
    }
    assert_eq!(
        engine.lengths.load(Relaxed),
        0,
        "a read asked for a length only"
    );
}
