//! Engine adapters. `rocksdb` is compiled only with the cargo feature of that name.

use std::path::Path;

use crate::engine::{Engine, OpenConfig};
use crate::error::{BenchError, Result};

pub mod cellar;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;

/// Fails unless `name` is known and compiled into this binary.
pub fn check_available(name: &str) -> Result<()> {
    match name {
        "cellar" => Ok(()),
        "rocksdb" if cfg!(feature = "rocksdb") => Ok(()),
        "rocksdb" => Err(BenchError::EngineNotBuilt(name.to_string())),
        _ => Err(BenchError::UnknownEngine(name.to_string())),
    }
}

pub fn open(name: &str, path: &Path, cfg: &OpenConfig) -> Result<Box<dyn Engine>> {
    check_available(name)?;
    match name {
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Ok(Box::new(rocksdb::RocksEngine::open(path, cfg)?)),
        _ => Ok(Box::new(cellar::CellarEngine::open(path, cfg)?)),
    }
}
