//! Typed errors. Corruption is its own kind and always names the file and the offset,
//! so an operator can find the damaged bytes with `cellar inspect`.

use std::path::Path;
use std::sync::Arc;

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `Clone` so that an iterator can keep its first error and report it from `status()`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The operating system refused an operation on a file.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file (or directory) operated on.
        path: String,
        /// What the operating system said.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// Bytes on disk are not what was written: a checksum, a magic number, a length or an
    /// encoding does not check out. Never returned for bad caller input.
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption {
        /// The damaged file.
        file: String,
        /// Where in the file the damage was found.
        offset: u64,
        /// What does not check out.
        reason: String,
    },
    /// The caller asked for something the engine does not allow (oversized key, bad range, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An earlier write-path failure (a failed fsync or write) left the database in a state
    /// where acknowledging more writes could lie about durability. Reopen the database.
    #[error("database refuses writes after an earlier failure ({0}); reopen it to recover")]
    Poisoned(String),
    /// No keyspace has this name.
    #[error("keyspace {0:?} does not exist")]
    KeyspaceNotFound(String),
    /// A keyspace with this name exists already.
    #[error("keyspace {0:?} already exists")]
    KeyspaceExists(String),
    /// The on-disk format was written by an incompatible build.
    #[error("{file}: unsupported format version {found} (this build reads {supported})")]
    UnsupportedVersion {
        /// The file with the unknown version.
        file: String,
        /// The version the file says.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A newer writer opened this database in the object store (its epoch is in the latest
    /// manifest): this instance lost the right to write and refuses every write from now
    /// on. Reads keep working on what it had. Reopen to become the writer again (which
    /// fences the other one).
    #[error("fenced: {0}")]
    Fenced(String),
    /// This instance only reads (a follower): writes are refused.
    #[error("read-only: {0}")]
    ReadOnly(String),
    /// The object store cannot be used safely, or the URL or its settings are wrong.
    #[error("object store: {0}")]
    ObjectStore(String),
    /// Another process holds the database's lock file (the path).
    #[error("database at {0} is already open in another process (lock held)")]
    Locked(String),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            source: Arc::new(source),
        }
    }

    /// Corruption of `file` at `offset`, for `reason`.
    pub fn corruption(file: impl AsRef<Path>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.as_ref().display().to_string(),
            offset,
            reason: reason.into(),
        }
    }

    /// Whether this is [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}
