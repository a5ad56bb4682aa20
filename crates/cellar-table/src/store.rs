//! `CellStore`: the tables of one database, and their DDL (create, drop, alter).
//!
//! Each family of each table is its own engine keyspace `t/<table>/<family>`, so dropping a
//! family or a table drops keyspaces and the engine deletes their files. DDL operations are
//! serialized by one lock; the catalog (`catalog.rs`) is cached in memory and written
//! through with `Durability::Sync`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use cellar_engine::{Db, Keyspace, Options};
use parking_lot::RwLock;

use crate::catalog::{self, CatalogEntry};
use crate::error::{Result, TableError};
use crate::schema::{
    family_keyspace_name, parse_family_keyspace_name, table_keyspace_prefix, validate_family,
    validate_schema, validate_table_name, FamilyOptions, FamilySchema, TableSchema, MAX_FAMILIES,
};
use crate::table::{FamilyHandle, Table};

/// The tables of one database. Cheap to clone. Use one `CellStore` per `Db`: two stores on
/// one database would each cache the catalog and see stale schemas.
#[derive(Clone)]
pub struct CellStore {
    inner: Arc<StoreInner>,
}

struct StoreInner {
    db: Db,
    catalog_ks: Keyspace,
    tables: RwLock<BTreeMap<String, CatalogEntry>>,
    /// For a follower: the sequence number the cached catalog was read at, so that it is
    /// read again once the follower has caught up past it (the writer may have changed it).
    catalog_seq: Option<parking_lot::Mutex<u64>>,
    /// Held exclusively by DDL, so that a check (table exists?) and the steps after it
    /// agree; shared by `table`, so that it never sees a schema whose keyspaces are
    /// being dropped.
    ddl: RwLock<()>,
}

impl std::fmt::Debug for CellStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CellStore")
            .field("db", &self.inner.db)
            .finish_non_exhaustive()
    }
}

impl CellStore {
    /// Opens the database in `path` and its tables.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<CellStore> {
        CellStore::from_db(Db::open(path, opts)?)
    }

    /// Loads the catalog of `db` (creating it if missing) and drops orphan family keyspaces:
    /// `t/<table>/<family>` keyspaces that no catalog entry names, left by a crash in the
    /// middle of a create or a drop. Keyspaces of a table whose entry does not decode are
    /// kept.
    pub fn from_db(db: Db) -> Result<CellStore> {
        let catalog_ks = catalog::open_keyspace(&db)?;
        let tables = catalog::load(&db, &catalog_ks)?;
        for ks in db.keyspace_names() {
            let Some((table, family)) = parse_family_keyspace_name(&ks) else {
                continue;
            };
            let named = match tables.get(table) {
                Some(CatalogEntry::Valid(s)) => s.find_family(family).is_some(),
                Some(CatalogEntry::Corrupt(_)) => true,
                None => false,
            };
            if !named {
                db.drop_keyspace(&ks)?;
            }
        }
        for entry in tables.values() {
            if let CatalogEntry::Valid(schema) = entry {
                crate::gc::register(&db, schema);
            }
        }
        Ok(CellStore {
            inner: Arc::new(StoreInner {
                db,
                catalog_ks,
                tables: RwLock::new(tables),
                catalog_seq: None,
                ddl: RwLock::new(()),
            }),
        })
    }

    /// Opens a read-only follower of the database in an object store at `path`
    /// (`Db::open_follower`) and its tables. The catalog is read again whenever the
    /// follower has caught up with newer writes, so tables the writer creates appear.
    pub fn open_follower(path: impl AsRef<Path>, opts: Options) -> Result<CellStore> {
        let db = Db::open_follower(path, opts)?;
        let catalog_ks = db.keyspace(catalog::CATALOG_KEYSPACE)?;
        let seq = db.stats().last_sequence;
        let tables = catalog::load(&db, &catalog_ks)?;
        Ok(CellStore {
            inner: Arc::new(StoreInner {
                db,
                catalog_ks,
                tables: RwLock::new(tables),
                catalog_seq: Some(parking_lot::Mutex::new(seq)),
                ddl: RwLock::new(()),
            }),
        })
    }

    /// A follower's catalog, read again if the follower has moved on since it was read.
    fn refresh_follower_catalog(&self) -> Result<()> {
        let Some(read_at) = &self.inner.catalog_seq else {
            return Ok(());
        };
        let mut read_at = read_at.lock();
        let now = self
            .inner
            .db
            .follower_status()
            .map_or(0, |s| s.last_sequence);
        if now != *read_at {
            let tables = catalog::load(&self.inner.db, &self.inner.catalog_ks)?;
            *self.inner.tables.write() = tables;
            *read_at = now;
        }
        Ok(())
    }

    /// The underlying database (for flushes, compactions, snapshots and statistics).
    pub fn db(&self) -> &Db {
        &self.inner.db
    }

    /// Names of every table, sorted (tables whose catalog entry is corrupt included).
    pub fn list_tables(&self) -> Vec<String> {
        // A follower whose catalog cannot be read again keeps listing the last one read.
        let _ = self.refresh_follower_catalog();
        self.inner.tables.read().keys().cloned().collect()
    }

    /// The schema of table `name`.
    pub fn describe(&self, name: &str) -> Result<TableSchema> {
        Ok((*self.schema(name)?).clone())
    }

    fn schema(&self, name: &str) -> Result<Arc<TableSchema>> {
        match self.inner.tables.read().get(name) {
            Some(CatalogEntry::Valid(s)) => Ok(Arc::clone(s)),
            Some(CatalogEntry::Corrupt(e)) => Err(e.clone()),
            None => Err(TableError::TableNotFound(name.to_string())),
        }
    }

    /// Creates a table. Family ids are assigned in the order given (0, 1, ...); families
    /// keep that order. Keyspaces left by an earlier failed create or drop of the same name
    /// are dropped first.
    pub fn create_table(&self, schema: TableSchema) -> Result<()> {
        let mut schema = schema;
        validate_schema(&schema)?;
        let _ddl = self.inner.ddl.write();
        if self.inner.tables.read().contains_key(&schema.name) {
            return Err(TableError::TableExists(schema.name));
        }
        let db = &self.inner.db;
        drop_keyspaces_with_prefix(db, &table_keyspace_prefix(&schema.name))?;
        for (id, f) in (0u32..).zip(schema.families.iter_mut()) {
            f.id = id;
        }
        schema.next_family_id = u32::try_from(schema.families.len()).unwrap_or(u32::MAX);
        let mut created: Vec<String> = Vec::new();
        for f in &schema.families {
            let name = family_keyspace_name(&schema.name, &f.name);
            if let Err(e) = db.create_keyspace_with(&name, f.options.keyspace_options()) {
                // No catalog entry names them yet: removing them is always safe (and if
                // this fails too, the next open drops them as orphans).
                for n in &created {
                    let _ = db.drop_keyspace(n);
                }
                return Err(e.into());
            }
            created.push(name);
        }
        // If this fails the entry may still have reached the log: the keyspaces stay, and
        // are either the table's after reopen or orphans that the open drops.
        catalog::store(db, &self.inner.catalog_ks, &schema)?;
        crate::gc::register(db, &schema);
        let name = schema.name.clone();
        self.inner
            .tables
            .write()
            .insert(name, CatalogEntry::Valid(Arc::new(schema)));
        Ok(())
    }

    /// Drops a table and all its data. The catalog entry goes first (durably), then the
    /// keyspaces; if dropping a keyspace fails the table is gone nonetheless, the error is
    /// returned, and the next open reclaims the space.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = self.inner.ddl.write();
        if !self.inner.tables.read().contains_key(name) {
            return Err(TableError::TableNotFound(name.to_string()));
        }
        let db = &self.inner.db;
        catalog::remove(db, &self.inner.catalog_ks, name)?;
        self.inner.tables.write().remove(name);
        drop_keyspaces_with_prefix(db, &table_keyspace_prefix(name))
    }

    /// Adds a family at the end of the table's family list, with the next unused id.
    pub fn alter_add_family(
        &self,
        table: &str,
        family: &str,
        options: FamilyOptions,
    ) -> Result<()> {
        let _ddl = self.inner.ddl.write();
        let old = self.schema(table)?;
        if old.find_family(family).is_some() {
            return Err(TableError::FamilyExists {
                table: table.to_string(),
                family: family.to_string(),
            });
        }
        if old.families.len() >= MAX_FAMILIES {
            return Err(TableError::InvalidArgument(format!(
                "table {table:?} already has {MAX_FAMILIES} families, the most allowed"
            )));
        }
        let mut schema = (*old).clone();
        let f = FamilySchema {
            id: schema.next_family_id,
            name: family.to_string(),
            options,
        };
        validate_family(table, &f)?;
        schema.next_family_id = schema.next_family_id.checked_add(1).ok_or_else(|| {
            TableError::InvalidArgument(format!("table {table:?} has used up its family ids"))
        })?;
        let ks = family_keyspace_name(table, family);
        let keyspace_options = f.options.keyspace_options();
        schema.families.push(f);
        let db = &self.inner.db;
        drop_keyspace_if_exists(db, &ks)?;
        db.create_keyspace_with(&ks, keyspace_options)?;
        catalog::store(db, &self.inner.catalog_ks, &schema)?;
        crate::gc::register(db, &schema);
        self.inner
            .tables
            .write()
            .insert(table.to_string(), CatalogEntry::Valid(Arc::new(schema)));
        Ok(())
    }

    /// Drops a family and all its data. A table keeps at least one family: drop the table
    /// instead.
    pub fn alter_drop_family(&self, table: &str, family: &str) -> Result<()> {
        let _ddl = self.inner.ddl.write();
        let mut schema = (*self.schema(table)?).clone();
        let Some(pos) = schema.families.iter().position(|f| f.name == family) else {
            return Err(TableError::FamilyNotFound {
                table: table.to_string(),
                family: family.to_string(),
            });
        };
        if schema.families.len() == 1 {
            return Err(TableError::InvalidArgument(format!(
                "{family:?} is the last family of table {table:?}; drop the table instead"
            )));
        }
        schema.families.remove(pos);
        let db = &self.inner.db;
        catalog::store(db, &self.inner.catalog_ks, &schema)?;
        self.inner
            .tables
            .write()
            .insert(table.to_string(), CatalogEntry::Valid(Arc::new(schema)));
        drop_keyspace_if_exists(db, &family_keyspace_name(table, family))
    }

    /// A handle for reading and writing table `name`. It holds the schema as of now: after
    /// an ALTER take a new handle (an old one fails with `StaleHandle` on a dropped family
    /// and does not know added ones).
    pub fn table(&self, name: &str) -> Result<Table> {
        validate_table_name(name)?;
        self.refresh_follower_catalog()?;
        let _ddl = self.inner.ddl.read();
        let schema = self.schema(name)?;
        let db = &self.inner.db;
        let mut families = Vec::with_capacity(schema.families.len());
        for f in &schema.families {
            let ks_name = family_keyspace_name(name, &f.name);
            let ks = match db.keyspace(&ks_name) {
                Ok(ks) => ks,
                Err(cellar_engine::Error::KeyspaceNotFound(_)) => {
                    return Err(TableError::Corruption {
                        table: name.to_string(),
                        location: format!("keyspace {ks_name}"),
                        reason: format!(
                            "the catalog names family {:?} but its keyspace is missing; \
                             the table cannot be used (drop it to remove the entry)",
                            f.name
                        ),
                    })
                }
                Err(e) => return Err(e.into()),
            };
            families.push(FamilyHandle::new(f, ks));
        }
        Ok(Table::new(db.clone(), schema, families))
    }
}

fn drop_keyspace_if_exists(db: &Db, name: &str) -> Result<()> {
    match db.drop_keyspace(name) {
        Ok(()) | Err(cellar_engine::Error::KeyspaceNotFound(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn drop_keyspaces_with_prefix(db: &Db, prefix: &str) -> Result<()> {
    for ks in db.keyspace_names() {
        if ks.starts_with(prefix) {
            drop_keyspace_if_exists(db, &ks)?;
        }
    }
    Ok(())
}
