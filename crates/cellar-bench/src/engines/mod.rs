//! Engine adapters, each compiled only with the cargo feature of its name (except Cellar's).
//! `lmdb`, `fjall` and `sqlite` are default features; `rocksdb` (a C++ build) and `slatedb`
//! (an object-store engine on tokio) are opt-in. What `sync` means for each engine is at the top of its file.

use std::path::Path;

use crate::engine::{Engine, OpenConfig};
use crate::error::{BenchError, Result};

pub mod cellar;
#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "lmdb")]
pub mod lmdb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
#[cfg(feature = "slatedb")]
pub mod slatedb;
#[cfg(feature = "sqlite")]
pub mod sqlite;

/// Every engine the harness knows, in the order suites run them.
pub const KNOWN: &[&str] = &["cellar", "rocksdb", "lmdb", "fjall", "sqlite", "slatedb"];

/// The engines compiled into this binary.
const BUILT: &[&str] = &[
    "cellar",
    #[cfg(feature = "rocksdb")]
    "rocksdb",
    #[cfg(feature = "lmdb")]
    "lmdb",
    #[cfg(feature = "fjall")]
    "fjall",
    #[cfg(feature = "sqlite")]
    "sqlite",
    #[cfg(feature = "slatedb")]
    "slatedb",
];

/// Whether engine `name` (one of [`KNOWN`]) is compiled into this binary.
pub fn is_built(name: &str) -> bool {
    BUILT.contains(&name)
}

/// Fails unless `name` is known and compiled into this binary.
pub fn check_available(name: &str) -> Result<()> {
    if !KNOWN.contains(&name) {
        return Err(BenchError::UnknownEngine(name.to_string()));
    }
    if !is_built(name) {
        return Err(BenchError::EngineNotBuilt(name.to_string()));
    }
    Ok(())
}

pub fn open(name: &str, path: &Path, cfg: &OpenConfig) -> Result<Box<dyn Engine>> {
    check_available(name)?;
    match name {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(rocksdb::RocksEngine::open(path, cfg)?)),
        #[cfg(feature = "lmdb")]
        "lmdb" => Ok(Box::new(lmdb::LmdbEngine::open(path, cfg)?)),
        #[cfg(feature = "fjall")]
        "fjall" => Ok(Box::new(fjall::FjallEngine::open(path, cfg)?)),
        #[cfg(feature = "sqlite")]
        "sqlite" => Ok(Box::new(sqlite::SqliteEngine::open(path, cfg)?)),
        #[cfg(feature = "slatedb")]
        "slatedb" => Ok(Box::new(slatedb::SlateDbEngine::open(path, cfg)?)),
        _ => Ok(Box::new(cellar::CellarEngine::open(path, cfg)?)),
    }
}

#[cfg(test)]
mod conformance;
