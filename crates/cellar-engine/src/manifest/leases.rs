//! Follower leases of a database in an object store: `<prefix>/leases/<follower>.lease`,
//! each naming the manifest snapshot a follower reads and when its claim expires. The
//! writer deletes no file that a snapshot older than a live lease's still lists, so a
//! follower's reads never find a file gone. A follower refreshes its lease at every poll;
//! one that stops (crashed, paused past the expiry) loses the protection and, when it
//! resumes, reloads the newest snapshot. Expiry is wall-clock time: the lease's length must
//! exceed the clock skew between machines by far (docs/object-storage.md).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::vfs::{is_not_found, Vfs};

/// The key prefix leases live under.
pub const LEASE_DIR: &str = "leases";
const SUFFIX: &str = ".lease";

/// Where the lease of follower `name` lives.
pub fn lease_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(LEASE_DIR).join(format!("{name}{SUFFIX}"))
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Writes (or renews) follower `name`'s lease on snapshot `snapshot` for `ttl`.
pub fn write_lease(
    vfs: &dyn Vfs,
    dir: &Path,
    name: &str,
    snapshot: u64,
    ttl: Duration,
) -> Result<()> {
    let expires = unix_ms(SystemTime::now() + ttl);
    let text = format!("snapshot={snapshot}\nexpires_unix_ms={expires}\n");
    vfs.create_dir_all(&dir.join(LEASE_DIR))?;
    let mut f = vfs.create(&lease_path(dir, name))?;
    f.append(text.as_bytes())?;
    f.sync()
}

/// Removes follower `name`'s lease (a follower closing).
pub fn remove_lease(vfs: &dyn Vfs, dir: &Path, name: &str) -> Result<()> {
    vfs.remove(&lease_path(dir, name))
}

fn parse_lease(bytes: &[u8], path: &Path) -> Result<(u64, u64)> {
    let bad = || {
        Error::corruption(
            path,
            0,
            "a lease holds snapshot=<id> and expires_unix_ms=<ms>",
        )
    };
    let text = std::str::from_utf8(bytes).map_err(|_| bad())?;
    let mut snapshot = None;
    let mut expires = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("snapshot", v)) => snapshot = v.parse().ok(),
            Some(("expires_unix_ms", v)) => expires = v.parse().ok(),
            _ => return Err(bad()),
        }
    }
    snapshot.zip(expires).ok_or_else(bad)
}

/// The lowest snapshot id a live (unexpired) lease pins; `None` when no follower holds one.
pub fn min_pinned_snapshot(vfs: &dyn Vfs, dir: &Path) -> Result<Option<u64>> {
    let names = match vfs.list(&dir.join(LEASE_DIR)) {
        Ok(n) => n,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let now = unix_ms(SystemTime::now());
    let mut min: Option<u64> = None;
    for name in names.iter().filter(|n| n.ends_with(SUFFIX)) {
        let path = dir.join(LEASE_DIR).join(name);
        let bytes = match vfs.read_all(&path) {
            Ok(b) => b,
            Err(e) if is_not_found(&e) => continue,
            Err(e) => return Err(e),
        };
        let (snapshot, expires) = parse_lease(&bytes, &path)?;
        if expires > now {
            min = Some(min.map_or(snapshot, |m| m.min(snapshot)));
        }
    }
    Ok(min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemVfs;

    #[test]
    fn only_live_leases_pin() -> Result<()> {
        let vfs = MemVfs::new();
        let dir = Path::new("db");
        vfs.create_dir_all(&dir.join(LEASE_DIR))?;
        assert_eq!(min_pinned_snapshot(&vfs, dir)?, None);
        write_lease(&vfs, dir, "a", 7, Duration::from_secs(60))?;
        write_lease(&vfs, dir, "b", 5, Duration::from_secs(60))?;
        write_lease(&vfs, dir, "old", 1, Duration::ZERO)?;
        assert_eq!(min_pinned_snapshot(&vfs, dir)?, Some(5));
        remove_lease(&vfs, dir, "b")?;
        assert_eq!(min_pinned_snapshot(&vfs, dir)?, Some(7));
        Ok(())
    }
}
