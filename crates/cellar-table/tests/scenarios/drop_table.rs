//! Dropping a table or a family drops its keyspaces, and the engine deletes their files.

use cellar_engine::vfs::MemVfs;
use cellar_engine::Durability;
use cellar_table::{CellStore, FamilyOptions, TableSchema};

use crate::common::{family_keyspaces, open_store};

fn sst_files(vfs: &MemVfs) -> usize {
    vfs.list_all()
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "sst"))
        .count()
}

/// Files of the keyspaces whose name starts with `prefix`, per the engine's statistics.
fn files_of(store: &CellStore, prefix: &str) -> usize {
    store
        .db()
        .stats()
        .keyspaces
        .iter()
        .filter(|k| k.name.starts_with(prefix))
        .flat_map(|k| k.levels.iter().map(|l| l.files))
        .sum()
}

fn fill(store: &CellStore, table: &str, families: &[&str]) {
    let t = store.table(table).expect("table");
    let value = vec![0x5a; 100];
    for i in 0..300u32 {
        for f in families {
            t.put(
                &i.to_be_bytes(),
                f,
                b"q",
                None,
                &value,
                Durability::Buffered,
            )
            .expect("put");
        }
    }
    store.db().flush().expect("flush");
}

#[test]
fn drop_table_reclaims_keyspaces_and_files() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    let schema = |name: &str| {
        TableSchema::new(name)
            .family("a", FamilyOptions::default())
            .family("b", FamilyOptions::default())
    };
    store.create_table(schema("big")).expect("create");
    store.create_table(schema("keep")).expect("create");
    fill(&store, "big", &["a", "b"]);
    fill(&store, "keep", &["a"]);
    let big_files = files_of(&store, "t/big/");
    assert!(
        big_files >= 2,
        "the fill should make files, got {big_files}"
    );
    let before = sst_files(&vfs);

    store.drop_table("big").expect("drop");
    assert_eq!(family_keyspaces(&store), vec!["t/keep/a", "t/keep/b"]);
    assert_eq!(files_of(&store, "t/big/"), 0);
    assert_eq!(sst_files(&vfs), before - big_files);
    assert_eq!(store.list_tables(), vec!["keep"]);

    // A table created again under the name starts empty.
    store.create_table(schema("big")).expect("create again");
    assert!(store
        .table("big")
        .expect("table")
        .get_row(&7u32.to_be_bytes())
        .expect("get")
        .is_empty());
    assert_eq!(
        store
            .table("keep")
            .expect("table")
            .get_row(&7u32.to_be_bytes())
            .expect("get")
            .len(),
        1
    );
}

#[test]
fn drop_family_reclaims_its_keyspace_and_files() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    store
        .create_table(
            TableSchema::new("t")
                .family("a", FamilyOptions::default())
                .family("b", FamilyOptions::default()),
        )
        .expect("create");
    fill(&store, "t", &["a", "b"]);
    let b_files = files_of(&store, "t/t/b");
    assert!(b_files >= 1);
    let before = sst_files(&vfs);
    store.alter_drop_family("t", "b").expect("drop family");
    assert_eq!(family_keyspaces(&store), vec!["t/t/a"]);
    assert_eq!(sst_files(&vfs), before - b_files);

    // Re-adding the family gives an empty one with a new id.
    store
        .alter_add_family("t", "b", FamilyOptions::default())
        .expect("add");
    let schema = store.describe("t").expect("describe");
    assert_eq!(schema.families[1].id, 2);
    let cells = store
        .table("t")
        .expect("table")
        .get_row(&1u32.to_be_bytes())
        .expect("get");
    assert_eq!(
        cells.iter().map(|c| &*c.family).collect::<Vec<_>>(),
        vec!["a"]
    );
}
