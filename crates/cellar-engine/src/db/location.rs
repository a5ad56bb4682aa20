//! Opening by URL: `s3://bucket/prefix` reaches a database in an S3-compatible object
//! store through `vfs::object` (cargo feature `object-store`).
//!
//! The local cache directory (`ObjectStoreOptions::cache_dir`, by default under
//! `~/.cache/cellar/`) holds the disk cache (`objects/`) and, with `wal=local`, the WAL
//! (`wal/`). It belongs to one database: its `DATABASE` file names the URL, and another URL
//! is refused, because a WAL replayed into the wrong database would corrupt it.

use crate::error::{Error, Result};
use crate::options::Options;

/// The URL `path` holds when it names a database in an object store (`s3://bucket/prefix`),
/// whether or not this build can reach one: `Db::open`, the CLI and the benchmarks all tell
/// a URL from a directory by this.
pub fn object_store_url(path: &std::path::Path) -> Option<&str> {
    path.to_str().filter(|p| p.starts_with("s3://"))
}

/// The prefix and the options that reach the database at `url`. `writer`: run the probe
/// that refuses a store without conditional creates (a follower writes nothing to fence).
#[cfg(not(feature = "object-store"))]
pub(super) fn open_url(
    url: &str,
    _opts: Options,
    _writer: bool,
) -> Result<(std::path::PathBuf, Options)> {
    Err(Error::ObjectStore(format!(
        "{url}: this build has no object-store support (cellar-engine's cargo feature \
         `object-store`)"
    )))
}

#[cfg(feature = "object-store")]
pub(super) use with_store::open_url;

#[cfg(feature = "object-store")]
mod with_store {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use super::{Error, Options, Result};
    use crate::log::objects::{read_wal_object, wal_object_ids};
    use crate::manifest::{parse_file_name, FileKind};
    use crate::options::{StorageLayout, WalLocation, WalMode};
    use crate::vfs::object::{default_cache_dir, ObjectLocation, ObjectVfs};
    use crate::vfs::{RealVfs, Vfs};

    const CLAIM_FILE: &str = "DATABASE";

    pub(in crate::db) fn open_url(
        url: &str,
        mut opts: Options,
        writer: bool,
    ) -> Result<(PathBuf, Options)> {
        let location = ObjectLocation::parse(url)?;
        let cache_dir = match &opts.object_store.cache_dir {
            Some(d) => d.clone(),
            None => default_cache_dir(url)?,
        };
        claim(&cache_dir, url)?;
        let vfs = ObjectVfs::connect(url, &opts.object_store, Some(&cache_dir.join("objects")))?;
        let prefix = PathBuf::from(&location.prefix);
        if writer && !opts.object_store.assume_single_writer {
            vfs.probe_conditional_create(&prefix)?;
        }
        let wal_dir = cache_dir.join("wal");
        opts.vfs = Arc::new(vfs);
        opts.storage = StorageLayout::Objects {
            wal: match opts.object_store.wal {
                WalMode::Local => WalLocation::Local {
                    vfs: Arc::new(RealVfs),
                    dir: wal_dir.clone(),
                },
                WalMode::Object => WalLocation::Object,
            },
        };
        if writer {
            recover_other_wal(&prefix, &opts, &wal_dir)?;
        }
        Ok((prefix, opts))
    }

    /// Makes `dir` this database's cache directory, or refuses it if it is another's.
    fn claim(dir: &Path, url: &str) -> Result<()> {
        let file = dir.join(CLAIM_FILE);
        let io = |e| Error::io(&file, e);
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        match std::fs::read_to_string(&file) {
            Ok(owner) if owner.trim_end() == url => Ok(()),
            Ok(owner) => Err(Error::ObjectStore(format!(
                "the cache directory {} belongs to {}; give {url} a cache directory of its own \
                 (--cache-dir)",
                dir.display(),
                owner.trim_end()
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::write(&file, format!("{url}\n")).map_err(io)
            }
            Err(e) => Err(io(e)),
        }
    }

    /// A database last written with the other WAL placement may hold acknowledged writes
    /// only there: open it once with that placement, which replays them into SSTs in the
    /// bucket, before opening with the one asked for.
    fn recover_other_wal(prefix: &Path, opts: &Options, wal_dir: &Path) -> Result<()> {
        let other = match opts.object_store.wal {
            WalMode::Object if holds_local_wal(wal_dir)? => WalLocation::Local {
                vfs: Arc::new(RealVfs),
                dir: wal_dir.to_path_buf(),
            },
            WalMode::Local if holds_wal_objects(&*opts.vfs, prefix)? => WalLocation::Object,
            _ => return Ok(()),
        };
        let mut once = opts.clone();
        once.storage = StorageLayout::Objects { wal: other };
        once.background_work = false;
        let db = crate::Db::open_inner_at(prefix, once)?;
        db.close()?;
        if opts.object_store.wal == WalMode::Object {
            for name in RealVfs.list(wal_dir)? {
                if let Some(FileKind::Wal(_)) = parse_file_name(&name) {
                    RealVfs.remove(&wal_dir.join(name))?;
                }
            }
        }
        Ok(())
    }

    fn holds_local_wal(dir: &Path) -> Result<bool> {
        if !dir.exists() {
            return Ok(false);
        }
        Ok(RealVfs
            .list(dir)?
            .iter()
            .any(|n| matches!(parse_file_name(n), Some(FileKind::Wal(_)))))
    }

    /// Whether any WAL object holds batches (fences hold none).
    fn holds_wal_objects(vfs: &dyn Vfs, prefix: &Path) -> Result<bool> {
        for id in wal_object_ids(vfs, prefix)?.into_iter().rev() {
            if !read_wal_object(vfs, prefix, id)?.batches.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
