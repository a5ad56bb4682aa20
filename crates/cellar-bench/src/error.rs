//! Typed errors: every failure the harness reports names what failed and where.

use std::path::Path;

pub type Result<T, E = BenchError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// An engine call returned an error.
    #[error("{engine}: {op} failed: {msg}")]
    Engine {
        engine: &'static str,
        op: &'static str,
        msg: String,
    },
    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A flag value the harness cannot use.
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error("unknown engine {0:?} (known: cellar, rocksdb, lmdb, fjall, sqlite, slatedb)")]
    UnknownEngine(String),
    #[error(
        "engine {0:?} is not compiled into this binary: rebuild with `--features {0}` \
         (see docs/benchmarks.md)"
    )]
    EngineNotBuilt(String),
    #[error("unknown benchmark {0:?} (known: {1})")]
    UnknownWorkload(String, String),
    /// An engine returned a value that is not what was written.
    #[error("{engine}: {workload}: {what}")]
    Verify {
        engine: &'static str,
        workload: &'static str,
        what: String,
    },
    /// The per-engine child process failed or spoke garbage.
    #[error("engine {engine}: benchmark child process {what}")]
    Child { engine: String, what: String },
}

impl BenchError {
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        BenchError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }

    pub fn engine(engine: &'static str, op: &'static str, err: impl std::fmt::Display) -> Self {
        BenchError::Engine {
            engine,
            op,
            msg: err.to_string(),
        }
    }
}
