use std::path::PathBuf;

/// Why a load failed. Nothing of a failed load is visible in the database.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}:{line}: {reason} (nothing was loaded; use --skip-bad-lines / SKIP_BAD_LINES to skip such lines)")]
    BadLine {
        file: PathBuf,
        line: u64,
        reason: String,
    },
    #[error("{file}: {reason}")]
    BadHeader { file: PathBuf, reason: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    InvalidArgument(String),
    #[error(transparent)]
    Engine(#[from] cellar_engine::Error),
}

impl LoadError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        LoadError::Io {
            what: what.into(),
            source,
        }
    }
}
