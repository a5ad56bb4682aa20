//! Table definitions: a table is a name and an ordered list of column families, each with
//! its own read rules (versions, TTL) and storage options (compression, block size, bloom).
//! Serialized into the catalog as JSON (`docs/format/cells.md`).

use std::time::Duration;

use cellar_engine::{Compression, KeyspaceOptions};
use serde::{Deserialize, Serialize};

use crate::error::{Result, TableError};

/// Longest table name, in bytes.
pub const MAX_TABLE_NAME_LEN: usize = 255;
/// Most column families one table may have.
pub const MAX_FAMILIES: usize = 255;
/// Longest engine keyspace name (`t/<table>/<family>` must fit).
const MAX_KEYSPACE_NAME_LEN: usize = 255;

/// Block compression of a family's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FamilyCompression {
    None,
    Lz4,
    Zstd,
}

impl From<FamilyCompression> for Compression {
    fn from(c: FamilyCompression) -> Compression {
        match c {
            FamilyCompression::None => Compression::None,
            FamilyCompression::Lz4 => Compression::Lz4,
            FamilyCompression::Zstd => Compression::Zstd,
        }
    }
}

/// Per-family options. `None` for a storage option takes the database's default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyOptions {
    /// Versions of a column a read returns, newest first; 0 returns every version.
    pub max_versions: u32,
    /// Cells whose timestamp is older than `now - ttl` are invisible.
    pub ttl: Option<Duration>,
    pub compression: Option<FamilyCompression>,
    pub block_size_bytes: Option<usize>,
    pub bloom_filter: bool,
}

impl Default for FamilyOptions {
    fn default() -> Self {
        FamilyOptions {
            max_versions: 1,
            ttl: None,
            compression: None,
            block_size_bytes: None,
            bloom_filter: true,
        }
    }
}

impl FamilyOptions {
    /// What the engine is told when the family's keyspace is created.
    pub fn keyspace_options(&self) -> KeyspaceOptions {
        KeyspaceOptions {
            compression: self.compression.map(Compression::from),
            block_size_bytes: self.block_size_bytes,
            bloom_bits_per_key: if self.bloom_filter { None } else { Some(0) },
        }
    }
}

/// One column family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilySchema {
    /// Stable id, assigned by `create_table` / `alter_add_family` (what a caller sets is
    /// ignored) and never reused within the table.
    pub id: u32,
    pub name: String,
    pub options: FamilyOptions,
}

impl FamilySchema {
    pub fn new(name: impl Into<String>, options: FamilyOptions) -> Self {
        FamilySchema {
            id: 0,
            name: name.into(),
            options,
        }
    }
}

/// A table: its families in creation order (which is also the order a scan returns them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSchema {
    pub name: String,
    pub families: Vec<FamilySchema>,
    /// The id the next added family gets.
    pub next_family_id: u32,
}

impl TableSchema {
    /// A table with no families yet; add them with [`TableSchema::family`].
    pub fn new(name: impl Into<String>) -> Self {
        TableSchema {
            name: name.into(),
            families: Vec::new(),
            next_family_id: 0,
        }
    }

    /// Adds a family (builder style).
    pub fn family(mut self, name: impl Into<String>, options: FamilyOptions) -> Self {
        self.families.push(FamilySchema::new(name, options));
        self
    }

    pub fn find_family(&self, name: &str) -> Option<&FamilySchema> {
        self.families.iter().find(|f| f.name == name)
    }
}

/// The engine keyspace that holds one family of one table.
pub fn family_keyspace_name(table: &str, family: &str) -> String {
    format!("t/{table}/{family}")
}

/// The prefix shared by the keyspaces of every family of `table`.
pub fn table_keyspace_prefix(table: &str) -> String {
    format!("t/{table}/")
}

/// Splits a keyspace name `t/<table>/<family>` into its parts.
pub fn parse_family_keyspace_name(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("t/")?.split_once('/')
}

fn invalid(msg: String) -> TableError {
    TableError::InvalidArgument(msg)
}

pub fn validate_table_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_TABLE_NAME_LEN {
        return Err(invalid(format!(
            "table name must be 1 to {MAX_TABLE_NAME_LEN} bytes, got {}",
            name.len()
        )));
    }
    if name.contains('/') {
        return Err(invalid(format!("table name {name:?} must not contain '/'")));
    }
    Ok(())
}

/// Checks a family's name (and that its keyspace name fits the engine) and options.
pub fn validate_family(table: &str, family: &FamilySchema) -> Result<()> {
    let name = &family.name;
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(invalid(format!(
            "family name {name:?} must be non-empty and use only A-Z, a-z, 0-9, '_' and '-'"
        )));
    }
    let ks = family_keyspace_name(table, name);
    if ks.len() > MAX_KEYSPACE_NAME_LEN {
        return Err(invalid(format!(
            "table name and family name together must be at most {} bytes \
             (the keyspace {ks:?} is {} bytes)",
            MAX_KEYSPACE_NAME_LEN - 3,
            ks.len()
        )));
    }
    if family.options.ttl.is_some_and(|t| t.is_zero()) {
        return Err(invalid(format!(
            "family {name:?}: ttl must be positive (None keeps cells forever)"
        )));
    }
    if family.options.block_size_bytes == Some(0) {
        return Err(invalid(format!(
            "family {name:?}: block_size_bytes must be positive"
        )));
    }
    Ok(())
}

/// Checks a whole schema as `create_table` receives it.
pub fn validate_schema(schema: &TableSchema) -> Result<()> {
    validate_table_name(&schema.name)?;
    if schema.families.is_empty() {
        return Err(invalid(format!(
            "table {:?} needs at least one column family",
            schema.name
        )));
    }
    if schema.families.len() > MAX_FAMILIES {
        return Err(invalid(format!(
            "table {:?} has {} families; at most {MAX_FAMILIES} are allowed",
            schema.name,
            schema.families.len()
        )));
    }
    for (i, f) in schema.families.iter().enumerate() {
        validate_family(&schema.name, f)?;
        if schema.families[..i].iter().any(|g| g.name == f.name) {
            return Err(TableError::FamilyExists {
                table: schema.name.clone(),
                family: f.name.clone(),
            });
        }
    }
    Ok(())
}
