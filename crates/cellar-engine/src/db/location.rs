//! Opening by URL: `s3://bucket/prefix` reaches a database in an S3-compatible object
//! store through `vfs::object` (cargo feature `object-store`).

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::options::Options;

/// The prefix and the options that reach the database at `url`.
#[cfg(not(feature = "object-store"))]
pub(super) fn open_url(url: &str, _opts: Options) -> Result<(PathBuf, Options)> {
    Err(Error::ObjectStore(format!(
        "{url}: this build has no object-store support (cellar-engine's cargo feature \
         `object-store`)"
    )))
}
