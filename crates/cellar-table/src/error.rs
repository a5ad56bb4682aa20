//! Typed errors of the table layer. Each message says what went wrong and, where the
//! caller can do something about it, what to do.

/// Result of every fallible table operation.
pub type Result<T, E = TableError> = std::result::Result<T, E>;

#[derive(Debug, Clone, thiserror::Error)]
pub enum TableError {
    #[error("table {0:?} does not exist (see CellStore::list_tables)")]
    TableNotFound(String),
    #[error("table {0:?} already exists; drop it first or pick another name")]
    TableExists(String),
    #[error("table {table:?} has no column family {family:?} (see CellStore::describe)")]
    FamilyNotFound { table: String, family: String },
    #[error("table {table:?} already has a column family {family:?}")]
    FamilyExists { table: String, family: String },
    /// The `Table` handle was taken before its table or one of its families was dropped
    /// (or the table was dropped and created again).
    #[error(
        "table {0:?} was dropped or altered after this handle was taken; \
         get a new one with CellStore::table"
    )]
    StaleHandle(String),
    /// The caller asked for something the table layer does not allow.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error(transparent)]
    Engine(#[from] cellar_engine::Error),
    /// Stored bytes that do not decode: a cell key in a family keyspace, or a catalog
    /// entry. `location` names the keyspace and the key (in hex).
    #[error("corruption in table {table:?} at {location}: {reason}")]
    Corruption {
        table: String,
        location: String,
        reason: String,
    },
}

/// Lowercase hex of `bytes`, for error messages; long inputs are cut after 64 bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len().min(64) * 2 + 3);
    for b in bytes.iter().take(64) {
        let _ = write!(s, "{b:02x}");
    }
    if bytes.len() > 64 {
        s.push_str("...");
    }
    s
}
