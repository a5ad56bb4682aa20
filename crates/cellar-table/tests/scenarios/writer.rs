//! `TableWriter`: nothing is visible before a flush unless the buffer fills; dropping the
//! writer flushes.

use cellar_engine::vfs::MemVfs;
use cellar_engine::Durability;
use cellar_table::{CellStore, FamilyOptions, ScanSpec, Table, TableSchema, WriterOptions};

use crate::common::open_store;

fn setup(vfs: &MemVfs) -> (CellStore, Table) {
    let store = open_store(vfs);
    store
        .create_table(
            TableSchema::new("t")
                .family("a", FamilyOptions::default())
                .family("b", FamilyOptions::default()),
        )
        .expect("create");
    let t = store.table("t").expect("table");
    (store, t)
}

fn count(t: &Table) -> usize {
    t.scan(ScanSpec::default()).expect("scan").count()
}

#[test]
fn writer_buffers_until_flush() {
    let vfs = MemVfs::new();
    let (_store, t) = setup(&vfs);
    let mut w = t.writer(WriterOptions::default());
    for i in 0..50u32 {
        w.put(&i.to_be_bytes(), "a", b"q", None, b"v").expect("put");
        w.put(&i.to_be_bytes(), "b", b"q", None, b"v").expect("put");
    }
    assert_eq!(w.buffered_mutations(), 100);
    assert_eq!(count(&t), 0, "nothing is visible before the flush");
    w.flush().expect("flush");
    assert_eq!(w.buffered_mutations(), 0);
    assert_eq!(count(&t), 100);

    // Mutations apply in order within one buffer: a row delete after puts removes them.
    w.put(b"x", "a", b"q", None, b"v").expect("put");
    w.delete_row(&0u32.to_be_bytes()).expect("delete");
    w.delete_column(&1u32.to_be_bytes(), "b", b"q")
        .expect("delete");
    w.delete_row(b"x").expect("delete");
    w.flush().expect("flush");
    assert_eq!(count(&t), 97);
}

#[test]
fn writer_flushes_when_the_buffer_fills() {
    let vfs = MemVfs::new();
    let (_store, t) = setup(&vfs);
    let options = WriterOptions {
        buffer_size_bytes: 1024,
        durability: Durability::Sync,
    };
    let mut w = t.writer(options);
    let value = vec![7u8; 100];
    let mut puts = 0;
    while count(&t) == 0 {
        w.put(&[puts], "a", b"q", None, &value).expect("put");
        puts += 1;
        assert!(
            puts < 20,
            "a 1 KiB buffer must flush within 20 puts of 100 bytes"
        );
    }
    assert_eq!(count(&t), usize::from(puts));
    assert_eq!(w.buffered_mutations(), 0);
    w.put(b"last", "b", b"q", None, b"v").expect("put");
    assert_eq!(count(&t), usize::from(puts));
    drop(w);
    assert_eq!(
        count(&t),
        usize::from(puts) + 1,
        "dropping the writer flushes"
    );
}

#[test]
fn delete_column_up_to_removes_only_the_versions_at_or_before_it() {
    let vfs = MemVfs::new();
    let (_store, t) = setup(&vfs);
    for ts in [10, 20, 30] {
        t.put(b"r", "a", b"q", Some(ts), b"v", Durability::Buffered)
            .expect("put");
        t.put(b"r", "a", b"q2", Some(ts), b"v", Durability::Buffered)
            .expect("put");
    }
    let mut w = t.writer(WriterOptions::default());
    w.delete_column_up_to(b"r", "a", b"q", 20).expect("delete");
    w.flush().expect("flush");
    let versions = |q: &[u8]| -> Vec<u64> {
        t.scan(ScanSpec {
            columns: vec![cellar_table::ColumnSelector::Column {
                family: "a".to_string(),
                qualifier: q.to_vec(),
            }],
            max_versions: Some(0),
            ..ScanSpec::default()
        })
        .expect("scan")
        .map(|c| c.expect("cell").timestamp)
        .collect()
    };
    assert_eq!(versions(b"q"), vec![30]);
    assert_eq!(versions(b"q2"), vec![30, 20, 10]);
}
