//! Read-only access to a database directory: resolving paths and `CURRENT` (the engine's
//! `tools` decode and replay the files). Nothing here creates, locks or modifies a file.

use std::io;
use std::path::{Path, PathBuf};

use cellar_engine::tools::manifest::{manifest_file_name, read_current};
use cellar_engine::vfs::RealVfs;
use cellar_engine::Error;

use crate::error::{CliError, CliResult};

/// `file` as given if it exists, else `db/file` when `--db` was given.
pub fn resolve(file: &Path, db: Option<&Path>) -> PathBuf {
    match db {
        Some(db) if !file.exists() && file.is_relative() => {
            let in_db = db.join(file);
            if in_db.exists() {
                in_db
            } else {
                file.to_path_buf()
            }
        }
        _ => file.to_path_buf(),
    }
}

/// Reads a whole file named on the command line: a path that does not exist or is not a
/// file is a usage error, any other failure an I/O error.
pub fn read_input(path: &Path) -> CliResult<Vec<u8>> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(CliError::Usage(format!("{}: no such file", path.display())))
        }
        Ok(m) if !m.is_file() => {
            return Err(CliError::Usage(format!(
                "{}: not a regular file",
                path.display()
            )))
        }
        _ => {}
    }
    std::fs::read(path).map_err(|e| CliError::Engine(Error::io(path, e)))
}

/// The database directory must exist (no command creates one).
pub fn require_db_dir(db: &Path) -> CliResult<()> {
    match std::fs::metadata(db) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(CliError::Usage(format!(
            "{}: not a directory (--db names a database directory)",
            db.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(CliError::Usage(format!(
            "{}: no such database directory (use --db PATH)",
            db.display()
        ))),
        Err(e) => Err(CliError::Engine(Error::io(db, e))),
    }
}

/// The manifest `CURRENT` names. No `CURRENT` means this is not a database: a usage error.
pub fn current_manifest(db: &Path) -> CliResult<PathBuf> {
    require_db_dir(db)?;
    match read_current(&RealVfs, db)? {
        Some(n) => Ok(db.join(manifest_file_name(n))),
        None => Err(CliError::Usage(format!(
            "{}: no CURRENT file, not a Cellar database",
            db.display()
        ))),
    }
}
