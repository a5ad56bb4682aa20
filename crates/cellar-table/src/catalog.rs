//! The catalog: every table's schema, stored in the database itself so that it is as
//! durable as the data (`docs/format/cells.md`).
//!
//! ```text
//! keyspace  __catalog
//! key       table name (UTF-8)
//! value     JSON {"format_version": 1, "schema": TableSchema}
//! ```
//!
//! Entries are written and deleted with `Durability::Sync`. The order of a DDL operation's
//! steps makes a crash at any point leave only *orphans* (family keyspaces no entry names),
//! which `CellStore::open` drops: create makes the keyspaces before writing the entry, drop
//! deletes the entry before dropping the keyspaces.

use std::collections::BTreeMap;
use std::sync::Arc;

use cellar_engine::{Db, Durability, Keyspace, ReadOptions, WriteOptions};
use serde::{Deserialize, Serialize};

use crate::error::{hex, Result, TableError};
use crate::schema::{validate_schema, TableSchema};

pub const CATALOG_KEYSPACE: &str = "__catalog";
/// Written into every entry and checked when it is read.
pub const CATALOG_FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
struct EntryOut<'a> {
    format_version: u32,
    schema: &'a TableSchema,
}

#[derive(Deserialize)]
struct EntryIn {
    format_version: u32,
    schema: serde_json::Value,
}

/// One catalog entry as loaded: a table whose entry does not decode stays listed (so that
/// it can be dropped) but cannot be used.
#[derive(Debug, Clone)]
pub(crate) enum CatalogEntry {
    Valid(Arc<TableSchema>),
    Corrupt(TableError),
}

pub(crate) fn encode(schema: &TableSchema) -> Result<Vec<u8>> {
    serde_json::to_vec(&EntryOut {
        format_version: CATALOG_FORMAT_VERSION,
        schema,
    })
    .map_err(|e| TableError::InvalidArgument(format!("cannot serialize schema: {e}")))
}

/// Decodes and checks the entry stored under `key`.
pub(crate) fn decode(key: &[u8], value: &[u8]) -> Result<TableSchema> {
    let name = String::from_utf8_lossy(key).into_owned();
    let corrupt = |reason: String| TableError::Corruption {
        table: name.clone(),
        location: format!("catalog entry {}", hex(key)),
        reason,
    };
    if std::str::from_utf8(key).is_err() {
        return Err(corrupt("table name is not UTF-8".into()));
    }
    let entry: EntryIn =
        serde_json::from_slice(value).map_err(|e| corrupt(format!("not a catalog entry: {e}")))?;
    if entry.format_version != CATALOG_FORMAT_VERSION {
        return Err(corrupt(format!(
            "format version {} (this build reads {CATALOG_FORMAT_VERSION})",
            entry.format_version
        )));
    }
    let schema: TableSchema = serde_json::from_value(entry.schema)
        .map_err(|e| corrupt(format!("schema does not decode: {e}")))?;
    if schema.name != name {
        return Err(corrupt(format!(
            "entry names table {:?}, not its key",
            schema.name
        )));
    }
    validate_schema(&schema).map_err(|e| corrupt(format!("schema is invalid: {e}")))?;
    for (i, f) in schema.families.iter().enumerate() {
        if f.id >= schema.next_family_id || schema.families[..i].iter().any(|g| g.id == f.id) {
            return Err(corrupt(format!(
                "family {:?} has id {} (duplicate or not below next_family_id {})",
                f.name, f.id, schema.next_family_id
            )));
        }
    }
    Ok(schema)
}

/// The catalog keyspace, created on first use.
pub(crate) fn open_keyspace(db: &Db) -> Result<Keyspace> {
    match db.keyspace(CATALOG_KEYSPACE) {
        Ok(ks) => Ok(ks),
        Err(cellar_engine::Error::KeyspaceNotFound(_)) => Ok(db.create_keyspace(CATALOG_KEYSPACE)?),
        Err(e) => Err(e.into()),
    }
}

/// Every entry of the catalog, by table name.
pub(crate) fn load(db: &Db, ks: &Keyspace) -> Result<BTreeMap<String, CatalogEntry>> {
    let mut it = db.iter(ks, ReadOptions::default())?;
    it.seek_to_first();
    let mut out = BTreeMap::new();
    while it.valid() {
        let name = String::from_utf8_lossy(it.key()).into_owned();
        let entry = match decode(it.key(), it.value()) {
            Ok(s) => CatalogEntry::Valid(Arc::new(s)),
            Err(e) => CatalogEntry::Corrupt(e),
        };
        out.insert(name, entry);
        it.next();
    }
    it.status()?;
    Ok(out)
}

pub(crate) fn store(db: &Db, ks: &Keyspace, schema: &TableSchema) -> Result<()> {
    let value = encode(schema)?;
    db.put(
        ks,
        schema.name.as_bytes(),
        &value,
        &WriteOptions::new(Durability::Sync),
    )?;
    Ok(())
}

pub(crate) fn remove(db: &Db, ks: &Keyspace, name: &str) -> Result<()> {
    db.delete(ks, name.as_bytes(), &WriteOptions::new(Durability::Sync))?;
    Ok(())
}
