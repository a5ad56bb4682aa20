//! DDL under I/O faults: for every sync or write a DDL workload makes, fail that one,
//! crash (power loss, or a process crash that keeps what reached the OS), reopen, and check
//! that acknowledged DDL survived, the failed operation happened entirely or not at all, and
//! no family keyspace is left without a catalog entry.

use std::collections::BTreeMap;
use std::sync::Arc;

use cellar_engine::vfs::{FaultVfs, IoKind, MemVfs};
use cellar_table::{CellStore, FamilyOptions, TableSchema};

use crate::common::{family_keyspaces, open_store, tiny_options, DB_PATH};

/// Table name → family names, in order.
type Tables = BTreeMap<String, Vec<String>>;

enum Ddl {
    Create(&'static str, &'static [&'static str]),
    Drop(&'static str),
    AddFamily(&'static str, &'static str),
    DropFamily(&'static str, &'static str),
}

const WORKLOAD: &[Ddl] = &[
    Ddl::Create("a", &["x", "y"]),
    Ddl::AddFamily("a", "z"),
    Ddl::DropFamily("a", "x"),
    Ddl::Drop("old"),
    Ddl::Create("b", &["p"]),
    Ddl::Drop("a"),
];

fn apply(store: &CellStore, op: &Ddl) -> cellar_table::Result<()> {
    let f = FamilyOptions::default;
    match op {
        Ddl::Create(t, fams) => {
            let schema = fams
                .iter()
                .fold(TableSchema::new(*t), |s, n| s.family(*n, f()));
            store.create_table(schema)
        }
        Ddl::Drop(t) => store.drop_table(t),
        Ddl::AddFamily(t, n) => store.alter_add_family(t, n, f()),
        Ddl::DropFamily(t, n) => store.alter_drop_family(t, n),
    }
}

fn model(tables: &mut Tables, op: &Ddl) {
    match op {
        Ddl::Create(t, fams) => {
            tables.insert(t.to_string(), fams.iter().map(|s| s.to_string()).collect());
        }
        Ddl::Drop(t) => {
            tables.remove(*t);
        }
        Ddl::AddFamily(t, n) => tables.entry(t.to_string()).or_default().push(n.to_string()),
        Ddl::DropFamily(t, n) => tables.entry(t.to_string()).or_default().retain(|f| f != n),
    }
}

/// What the reopened store holds, checking that every table is usable and that the
/// family keyspaces are exactly the catalog's.
fn observe(store: &CellStore) -> Tables {
    let mut tables = Tables::new();
    let mut keyspaces = Vec::new();
    for name in store.list_tables() {
        store.table(&name).expect("every listed table is usable");
        let families: Vec<String> = store
            .describe(&name)
            .expect("describe")
            .families
            .into_iter()
            .map(|f| f.name)
            .collect();
        keyspaces.extend(families.iter().map(|f| format!("t/{name}/{f}")));
        tables.insert(name, families);
    }
    keyspaces.sort();
    assert_eq!(
        family_keyspaces(store),
        keyspaces,
        "no orphans, no missing keyspaces"
    );
    tables
}

#[test]
fn ddl_faults_leave_acknowledged_or_atomic_state() {
    let mut faults_hit = 0;
    for kind in [IoKind::Sync, IoKind::Write] {
        for n in 1.. {
            let mem = MemVfs::new();
            {
                let setup = open_store(&mem);
                apply(&setup, &Ddl::Create("old", &["f"])).expect("setup");
            }
            let fault = FaultVfs::new(Arc::new(mem.clone()));
            let store =
                CellStore::open(DB_PATH, tiny_options(Arc::new(fault.clone()))).expect("open");
            fault.fail_nth(kind, fault.count(kind) + n);
            let mut acked = Tables::new();
            acked.insert("old".into(), vec!["f".into()]);
            let mut failed = None;
            for op in WORKLOAD {
                if let Err(e) = apply(&store, op) {
                    failed = Some((op, e));
                    break;
                }
                model(&mut acked, op);
            }
            // Power loss, and a process crash (which keeps what reached the OS).
            let images = [mem.crash_clone(), mem.process_crash_clone()];
            drop(store);
            let Some((op, e)) = failed else {
                break; // The workload made fewer than n operations of this kind.
            };
            faults_hit += 1;
            let mut applied = acked.clone();
            model(&mut applied, op);
            for image in &images {
                let seen = observe(&open_store(image));
                assert!(
                    seen == acked || seen == applied,
                    "{kind:?} fault {n} ({e}): saw {seen:?}, want {acked:?} or {applied:?}"
                );
            }
        }
    }
    assert!(faults_hit >= 10, "only {faults_hit} faults were injected");
}
