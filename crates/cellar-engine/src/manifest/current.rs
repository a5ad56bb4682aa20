//! File names in a database directory, and the `CURRENT` file that names the live manifest.

use std::path::Path;

use crate::error::{Error, Result};
use crate::vfs::Vfs;

/// The file that names the live manifest.
pub const CURRENT_FILE: &str = "CURRENT";
pub const LOCK_FILE: &str = "LOCK";
pub const TEMP_SUFFIX: &str = ".tmp";
const CURRENT_TEMP: &str = "CURRENT.tmp";
const MANIFEST_PREFIX: &str = "MANIFEST-";

/// What a file in a database directory is, judged by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// `000012.wal`
    Wal(u64),
    /// `000012.sst`
    Sst(u64),
    /// `MANIFEST-000007`
    Manifest(u64),
    /// The `CURRENT` file.
    Current,
    /// The `LOCK` file.
    Lock,
    /// Anything ending in `.tmp`: a write that never completed its rename.
    Temp,
}

/// Zero-padded to 6 digits so names sort by number up to a million; longer past that.
pub fn wal_file_name(number: u64) -> String {
    format!("{number:06}.wal")
}

/// The name of SST number `number` (`000012.sst`).
pub fn sst_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// The name of manifest number `number` (`MANIFEST-000007`).
pub fn manifest_file_name(number: u64) -> String {
    format!("{MANIFEST_PREFIX}{number:06}")
}

/// The number in a name we generated: at least 6 ASCII digits (no sign, no spaces, which
/// `u64::from_str` would let through) that fit in a u64.
fn parse_number(digits: &str) -> Option<u64> {
    if digits.len() < 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Classifies a file name; `None` for names the engine never creates (left alone).
pub fn parse_file_name(name: &str) -> Option<FileKind> {
    match name {
        CURRENT_FILE => return Some(FileKind::Current),
        LOCK_FILE => return Some(FileKind::Lock),
        _ => {}
    }
    if name.ends_with(TEMP_SUFFIX) {
        return Some(FileKind::Temp);
    }
    if let Some(n) = name.strip_prefix(MANIFEST_PREFIX) {
        return parse_number(n).map(FileKind::Manifest);
    }
    if let Some(n) = name.strip_suffix(".wal") {
        return parse_number(n).map(FileKind::Wal);
    }
    if let Some(n) = name.strip_suffix(".sst") {
        return parse_number(n).map(FileKind::Sst);
    }
    None
}

/// Points `CURRENT` at `MANIFEST-<manifest_number>`, atomically and durably.
///
/// Write the new contents to `CURRENT.tmp` and sync them, so the file is complete before
/// any name points at it; rename over `CURRENT`, which swaps the name atomically (a
/// reader sees the old or the new file, never a mix); then sync the directory, which makes
/// the rename survive power loss. When this returns `Ok`, the switch is durable; if it
/// fails, `CURRENT` names either the old or the new manifest.
pub fn write_current(vfs: &dyn Vfs, dir: &Path, manifest_number: u64) -> Result<()> {
    let tmp = dir.join(CURRENT_TEMP);
    let contents = format!("{}\n", manifest_file_name(manifest_number));
    let written = (|| {
        let mut f = vfs.create(&tmp)?;
        f.append(contents.as_bytes())?;
        f.sync()
    })();
    if let Err(e) = written {
        // Best effort: a leftover temp file is harmless (ignored and cleaned up on open).
        let _ = vfs.remove(&tmp);
        return Err(e);
    }
    vfs.rename(&tmp, &dir.join(CURRENT_FILE))?;
    vfs.sync_dir(dir)
}

/// The manifest number `CURRENT` names, `None` if there is no `CURRENT` (a new database).
pub fn read_current(vfs: &dyn Vfs, dir: &Path) -> Result<Option<u64>> {
    let path = dir.join(CURRENT_FILE);
    if !vfs.exists(&path) {
        return Ok(None);
    }
    let bytes = vfs.read_all(&path)?;
    let number = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .and_then(parse_file_name);
    match number {
        Some(FileKind::Manifest(n)) => Ok(Some(n)),
        _ => Err(Error::corruption(
            &path,
            0,
            format!(
                "CURRENT must hold \"MANIFEST-<number>\\n\", found {:?}",
                String::from_utf8_lossy(bytes.get(..64).unwrap_or(&bytes))
            ),
        )),
    }
}
