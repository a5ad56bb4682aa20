//! The catalog: durable across reopen, stable family ids, typed errors for bad DDL, and
//! corrupt entries reported without making the store unusable.

use std::time::Duration;

use cellar_engine::vfs::MemVfs;
use cellar_engine::{Durability, WriteOptions};
use cellar_table::catalog::CATALOG_KEYSPACE;
use cellar_table::{
    CellStore, ColumnSelector, FamilyCompression, FamilyOptions, ScanSpec, TableError, TableSchema,
};

use crate::common::{family_keyspaces, open_store};

fn schema() -> TableSchema {
    TableSchema::new("web pages ✓")
        .family(
            "contents",
            FamilyOptions {
                max_versions: 3,
                compression: Some(FamilyCompression::Zstd),
                block_size_bytes: Some(16 << 10),
                bloom_filter: false,
                ..FamilyOptions::default()
            },
        )
        .family(
            "anchor",
            FamilyOptions {
                ttl: Some(Duration::from_secs(86_400)),
                compression: Some(FamilyCompression::None),
                ..FamilyOptions::default()
            },
        )
        .family("b", FamilyOptions::default())
}

#[test]
fn catalog_survives_reopen_with_stable_family_ids() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    store.create_table(schema()).expect("create");
    store
        .create_table(TableSchema::new("other").family("f", FamilyOptions::default()))
        .expect("create other");
    let t = store.table("web pages ✓").expect("table");
    t.put(b"row", "b", b"q", Some(7), b"value", Durability::Flush)
        .expect("put");
    store
        .alter_drop_family("web pages ✓", "anchor")
        .expect("drop family");
    store
        .alter_add_family("web pages ✓", "links", FamilyOptions::default())
        .expect("add family");
    let before = store.describe("web pages ✓").expect("describe");
    let ids: Vec<(&str, u32)> = before
        .families
        .iter()
        .map(|f| (f.name.as_str(), f.id))
        .collect();
    assert_eq!(ids, vec![("contents", 0), ("b", 2), ("links", 3)]);
    assert_eq!(before.next_family_id, 4);
    drop(t);
    drop(store);

    let store = open_store(&vfs);
    assert_eq!(
        store.list_tables(),
        vec!["other".to_string(), "web pages ✓".to_string()]
    );
    assert_eq!(store.describe("web pages ✓").expect("describe"), before);
    let cells = store
        .table("web pages ✓")
        .expect("table")
        .get_row(b"row")
        .expect("get");
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0].value, b"value");
    assert_eq!(
        family_keyspaces(&store),
        vec![
            "t/other/f",
            "t/web pages ✓/b",
            "t/web pages ✓/contents",
            "t/web pages ✓/links"
        ]
    );
}

fn is_invalid(r: cellar_table::Result<()>) -> bool {
    matches!(r, Err(TableError::InvalidArgument(_)))
}

#[test]
fn catalog_rejects_bad_ddl_with_typed_errors() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    let f = FamilyOptions::default;
    assert!(is_invalid(
        store.create_table(TableSchema::new("").family("f", f()))
    ));
    assert!(is_invalid(
        store.create_table(TableSchema::new("a/b").family("f", f()))
    ));
    assert!(is_invalid(store.create_table(
        TableSchema::new("x".repeat(256)).family("f", f())
    )));
    // The keyspace name t/<table>/<family> must fit in 255 bytes.
    assert!(is_invalid(store.create_table(
        TableSchema::new("x".repeat(252)).family("ff", f())
    )));
    store
        .create_table(TableSchema::new("x".repeat(251)).family("f", f()))
        .expect("longest table name with a one-byte family");
    assert!(is_invalid(
        store.create_table(TableSchema::new("nofamilies"))
    ));
    assert!(is_invalid(
        store.create_table(TableSchema::new("t").family("a:b", f()))
    ));
    assert!(is_invalid(
        store.create_table(TableSchema::new("t").family("", f()))
    ));
    let many = (0..256).fold(TableSchema::new("t"), |s, i| s.family(format!("f{i}"), f()));
    assert!(is_invalid(store.create_table(many)));
    assert!(matches!(
        store.create_table(TableSchema::new("t").family("a", f()).family("a", f())),
        Err(TableError::FamilyExists { .. })
    ));

    store
        .create_table(TableSchema::new("t").family("a", f()))
        .expect("create");
    assert!(matches!(
        store.create_table(TableSchema::new("t").family("b", f())),
        Err(TableError::TableExists(_))
    ));
    assert!(matches!(
        store.drop_table("nope"),
        Err(TableError::TableNotFound(_))
    ));
    assert!(matches!(
        store.describe("nope"),
        Err(TableError::TableNotFound(_))
    ));
    assert!(matches!(
        store.table("nope"),
        Err(TableError::TableNotFound(_))
    ));
    assert!(matches!(
        store.alter_add_family("t", "a", f()),
        Err(TableError::FamilyExists { .. })
    ));
    assert!(matches!(
        store.alter_drop_family("t", "zz"),
        Err(TableError::FamilyNotFound { .. })
    ));
    assert!(is_invalid(store.alter_drop_family("t", "a")));

    let t = store.table("t").expect("table");
    let d = Durability::Flush;
    assert!(matches!(
        t.put(b"r", "zz", b"q", None, b"v", d),
        Err(TableError::FamilyNotFound { .. })
    ));
    assert!(matches!(
        t.put(b"r", "a", b"q", Some(u64::MAX), b"v", d),
        Err(TableError::InvalidArgument(_))
    ));
    assert!(matches!(
        t.put(&vec![0u8; 40_000], "a", b"q", None, b"v", d),
        Err(TableError::InvalidArgument(_))
    ));
    let spec = ScanSpec {
        columns: vec![ColumnSelector::Family("zz".into())],
        ..ScanSpec::default()
    };
    assert!(matches!(
        t.scan(spec),
        Err(TableError::FamilyNotFound { .. })
    ));
    assert_eq!(store.list_tables(), vec!["t".to_string(), "x".repeat(251)]);
}

#[test]
fn catalog_stale_handles_are_reported() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    let schema = || {
        TableSchema::new("t")
            .family("a", FamilyOptions::default())
            .family("b", FamilyOptions::default())
    };
    store.create_table(schema()).expect("create");
    let t = store.table("t").expect("table");
    store.alter_drop_family("t", "b").expect("drop family");
    let d = Durability::Flush;
    t.put(b"r", "a", b"q", None, b"v", d)
        .expect("family a still exists");
    assert!(matches!(
        t.put(b"r", "b", b"q", None, b"v", d),
        Err(TableError::StaleHandle(_))
    ));
    assert!(matches!(
        t.scan(ScanSpec::default()),
        Err(TableError::StaleHandle(_))
    ));

    store.drop_table("t").expect("drop");
    store.create_table(schema()).expect("create again");
    assert!(matches!(
        t.put(b"r", "a", b"q", None, b"v", d),
        Err(TableError::StaleHandle(_))
    ));
    let fresh = store.table("t").expect("table");
    assert!(fresh.get_row(b"r").expect("get").is_empty());
}

#[test]
fn catalog_corrupt_entry_is_reported_and_droppable() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    store
        .create_table(TableSchema::new("good").family("f", FamilyOptions::default()))
        .expect("create");
    store
        .create_table(TableSchema::new("bad").family("f", FamilyOptions::default()))
        .expect("create");
    let db = store.db().clone();
    let catalog = db.keyspace(CATALOG_KEYSPACE).expect("catalog keyspace");
    let wo = WriteOptions::new(Durability::Sync);
    db.put(
        &catalog,
        b"bad",
        b"{\"format_version\": 1, \"schema\": 5}",
        &wo,
    )
    .expect("overwrite entry");
    db.put(
        &catalog,
        b"future",
        b"{\"format_version\": 2, \"schema\": {}}",
        &wo,
    )
    .expect("write entry");
    drop(db);
    drop(store);

    let store = CellStore::open(
        crate::common::DB_PATH,
        crate::common::tiny_options(std::sync::Arc::new(vfs.clone())),
    )
    .expect("a corrupt entry does not stop the open");
    assert_eq!(store.list_tables(), vec!["bad", "future", "good"]);
    for name in ["bad", "future"] {
        let err = store.describe(name).expect_err("corrupt");
        assert!(
            matches!(err, TableError::Corruption { ref table, .. } if table == name),
            "{err}"
        );
        assert!(matches!(
            store.table(name),
            Err(TableError::Corruption { .. })
        ));
    }
    // The corrupt table's keyspaces are not dropped as orphans: the entry may be repairable.
    assert_eq!(family_keyspaces(&store), vec!["t/bad/f", "t/good/f"]);
    store.drop_table("bad").expect("drop corrupt table");
    store.drop_table("future").expect("drop corrupt table");
    assert_eq!(store.list_tables(), vec!["good"]);
    assert_eq!(family_keyspaces(&store), vec!["t/good/f"]);
    store.table("good").expect("good table still works");
}

#[test]
fn catalog_ddl_survives_power_loss() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    let schema = |name: &str| TableSchema::new(name).family("f", FamilyOptions::default());
    store.create_table(schema("kept")).expect("create");
    store.create_table(schema("dropped")).expect("create");
    store.drop_table("dropped").expect("drop");
    store
        .alter_add_family("kept", "g", FamilyOptions::default())
        .expect("add");
    // Power loss: only what was synced survives. DDL syncs; nothing else was written.
    let crashed = vfs.crash_clone();
    drop(store);

    let store = open_store(&crashed);
    assert_eq!(store.list_tables(), vec!["kept"]);
    assert_eq!(family_keyspaces(&store), vec!["t/kept/f", "t/kept/g"]);
    store.table("kept").expect("table");
}
