//! A database of partitioned SSTs: reads agree with a model whether partitions are pinned
//! or read through the cache, and the metadata budget is charged by live files only (files
//! deleted by compaction give their share back).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use cellar_engine::{Db, Options, ReadOptions, WriteOptions};
use common::{mem_vfs, scan_all, tiny_options};

fn options(budget: u64) -> Options {
    let (_, vfs) = mem_vfs();
    Options {
        index_partition_bytes: 48,
        max_resident_metadata_bytes: budget,
        ..tiny_options(vfs, false)
    }
}

/// Writes overlapping rounds of keys (so compactions rewrite files), checking reads after.
fn fill(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let ks = db.default_keyspace();
    let wo = WriteOptions::default();
    let mut model = BTreeMap::new();
    for round in 0..3u32 {
        for i in (0..600u32).filter(|i| i % (round + 1) == 0) {
            let k = format!("key{:05}", i * 7 % 600).into_bytes();
            let v = format!("value-{round}-{i}").into_bytes();
            db.put(&ks, &k, &v, &wo).expect("put");
            model.insert(k, v);
        }
    }
    db.flush().expect("flush");
    model
}

fn check_reads(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let ks = db.default_keyspace();
    let ro = ReadOptions::default();
    assert!(scan_all(db, &ks) == *model, "scan differs from the model");
    let keys: Vec<Vec<u8>> = (0..650u32)
        .map(|i| format!("key{i:05}").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let got = db.multi_get(&ks, &refs, &ro).expect("multi_get");
    for (k, v) in keys.iter().zip(got) {
        assert_eq!(v.as_ref(), model.get(k));
        assert_eq!(db.get(&ks, k, &ro).expect("get").as_ref(), model.get(k));
    }
}

#[test]
fn partitioned_database_reads_and_budget_follow_live_files() {
    let mut resident = Vec::new();
    for budget in [1 << 30, 0] {
        let db = Db::open("/db", options(budget)).expect("open");
        let model = fill(&db);
        check_reads(&db, &model);
        let before = db.stats();
        let files: usize = before.keyspaces[0].levels.iter().map(|l| l.files).sum();
        assert!(files > 3, "{files} files");
        // Every open file charges what it keeps resident: all of it when pinned, only the
        // top level (or the whole small index of an unpartitioned file) otherwise.
        assert_eq!(
            before.metadata_budget_used_bytes, before.resident_index_filter_bytes,
            "budget {budget}"
        );

        let ks = db.default_keyspace();
        db.compact_range(&ks, None, None).expect("compact");
        let after = db.stats();
        let files_after: usize = after.keyspaces[0].levels.iter().map(|l| l.files).sum();
        assert!(files_after < files, "{files_after} files after compaction");
        assert_eq!(
            after.metadata_budget_used_bytes, after.resident_index_filter_bytes,
            "budget {budget}: deleted files must release their charge"
        );
        check_reads(&db, &model);
        resident.push(before.resident_index_filter_bytes);
        db.close().expect("close");
    }
    // Budget 0 keeps only the top levels: the files are partitioned, and unpinned.
    assert!(resident[1] * 2 < resident[0], "{resident:?}");
}
