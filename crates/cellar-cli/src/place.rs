//! Where `--db` (or `--to`, `--from`) points: a local directory, or a prefix in an object
//! store (`s3://bucket/prefix`). The read-only commands reach an object store through an
//! `ObjectVfs` without a disk cache and without the conditional-create probe, so they write
//! nothing to the bucket or the cache directory.

use std::path::{Path, PathBuf};

use cellar_engine::tools::backup::{Layout, Place};
use cellar_engine::vfs::object::{ObjectLocation, ObjectVfs};
use cellar_engine::vfs::{RealVfs, Vfs};

use crate::error::{CliError, CliResult};

/// A database location, reached.
pub struct Location {
    /// `RealVfs`, or the object store.
    pub vfs: Box<dyn Vfs>,
    /// The directory, or the prefix within the bucket.
    pub dir: PathBuf,
    /// How the files are laid out.
    pub layout: Layout,
    /// As given on the command line, for messages.
    pub shown: String,
}

impl Location {
    /// Reaches `db`: an `s3://` URL through the object store (flags in `store`), anything
    /// else as a local directory.
    pub fn reach(db: &Path, store: &cellar_server::ObjectStoreArgs) -> CliResult<Location> {
        let shown = db.display().to_string();
        match cellar_engine::object_store_url(db) {
            Some(url) => {
                let location =
                    ObjectLocation::parse(url).map_err(|e| CliError::Usage(e.to_string()))?;
                let vfs = ObjectVfs::connect(url, &store.options().object_store, None)?;
                Ok(Location {
                    vfs: Box::new(vfs),
                    dir: PathBuf::from(location.prefix),
                    layout: Layout::Objects,
                    shown,
                })
            }
            None => Ok(Location {
                vfs: Box::new(RealVfs),
                dir: db.to_path_buf(),
                layout: Layout::Directory,
                shown,
            }),
        }
    }

    /// The engine tools' view of it.
    pub fn place(&self) -> Place<'_> {
        Place {
            vfs: &*self.vfs,
            dir: &self.dir,
            layout: self.layout,
        }
    }
}

/// Whether `db` names an object store.
pub fn is_url(db: &Path) -> bool {
    cellar_engine::object_store_url(db).is_some()
}
