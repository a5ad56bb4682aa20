//! Orphan family keyspaces (left by a crash in the middle of a create or a drop) are
//! dropped on open, and leftovers of a name are dropped before a table of that name is
//! created.

use cellar_engine::vfs::MemVfs;
use cellar_engine::{Durability, WriteOptions};
use cellar_table::cell_key::encode_cell_key;
use cellar_table::{FamilyOptions, TableSchema};

use crate::common::{family_keyspaces, open_store};

fn put_raw_cell(db: &cellar_engine::Db, keyspace: &str, row: &[u8]) {
    let ks = db.keyspace(keyspace).expect("keyspace");
    let mut key = Vec::new();
    encode_cell_key(row, b"q", 1, &mut key);
    db.put(&ks, &key, b"stale", &WriteOptions::new(Durability::Sync))
        .expect("put");
}

#[test]
fn orphans_are_dropped_on_open() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    store
        .create_table(TableSchema::new("real").family("cf", FamilyOptions::default()))
        .expect("create");
    store
        .table("real")
        .expect("table")
        .put(b"r", "cf", b"q", None, b"v", Durability::Flush)
        .expect("put");
    // What a crash leaves: keyspaces created for a table whose entry was never written, and
    // the keyspace of a family whose drop was logged but not carried out.
    let db = store.db().clone();
    db.create_keyspace("t/ghost/cf").expect("create keyspace");
    put_raw_cell(&db, "t/ghost/cf", b"r");
    db.create_keyspace("t/real/gone").expect("create keyspace");
    db.create_keyspace("unrelated").expect("create keyspace");
    db.flush().expect("flush");
    drop(db);
    drop(store);

    let store = open_store(&vfs);
    assert_eq!(family_keyspaces(&store), vec!["t/real/cf"]);
    assert!(store
        .db()
        .keyspace_names()
        .contains(&"unrelated".to_string()));
    assert_eq!(store.list_tables(), vec!["real"]);
    assert_eq!(
        store
            .table("real")
            .expect("table")
            .get_row(b"r")
            .expect("get")
            .len(),
        1
    );
}

#[test]
fn orphans_of_a_name_are_dropped_before_create() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    let db = store.db().clone();
    db.create_keyspace("t/x/cf").expect("create keyspace");
    put_raw_cell(&db, "t/x/cf", b"r");
    db.create_keyspace("t/x/other").expect("create keyspace");
    store
        .create_table(TableSchema::new("x").family("cf", FamilyOptions::default()))
        .expect("create");
    assert_eq!(family_keyspaces(&store), vec!["t/x/cf"]);
    assert!(store
        .table("x")
        .expect("table")
        .get_row(b"r")
        .expect("get")
        .is_empty());

    db.create_keyspace("t/x/late").expect("create keyspace");
    put_raw_cell(&db, "t/x/late", b"r");
    store
        .alter_add_family("x", "late", FamilyOptions::default())
        .expect("add");
    assert!(store
        .table("x")
        .expect("table")
        .get_row(b"r")
        .expect("get")
        .is_empty());
}
