//! Copying a database's state from one place to another (`cellar backup` and
//! `cellar restore`): a directory or an object store on either side. SSTs are immutable and
//! named by number, so only those the destination lacks (by name and size) are copied; the
//! manifest is written last, so the destination holds either its previous state or the new
//! one, never a manifest naming a file that is not there yet.
//!
//! The source state is a replayed manifest ([`LsmMeta`]): for a directory, the one `CURRENT`
//! names (the caller makes it consistent first, e.g. with `Db::checkpoint`); for an object
//! store, the newest snapshot, read without writing anything (no fencing, no writer role).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::log::TailPolicy;
use crate::log::{LogKind, LogWriter};
use crate::manifest::objects::{publish_snapshot, snapshot_ids, Published, MANIFEST_DIR};
use crate::manifest::{
    manifest_file_name, parse_file_name, read_current, sst_file_name, write_current, FileKind,
};
use crate::tools::check::{verify_manifest, verify_wal};
use crate::tools::objects::newest_snapshot;
use crate::version::LsmMeta;
use crate::vfs::{is_not_found, Vfs};

/// Bytes read and written per request while copying a file.
const CHUNK: u64 = 8 << 20;

/// How a database is laid out at a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A directory: `CURRENT`, a manifest, SSTs (and WALs).
    Directory,
    /// An object-store prefix: numbered manifest snapshots and SST objects.
    Objects,
}

/// One side of a copy.
pub struct Place<'a> {
    /// Reaches the files (a `RealVfs` or an `ObjectVfs`).
    pub vfs: &'a dyn Vfs,
    /// The directory, or the prefix within the bucket.
    pub dir: &'a Path,
    /// How the database is laid out there.
    pub layout: Layout,
}

/// One file the copy visited, for progress reports.
#[derive(Debug)]
pub struct Step<'a> {
    /// The file's name.
    pub name: &'a str,
    /// Its size.
    pub bytes: u64,
    /// Whether it was copied (or skipped, the destination holding it already).
    pub copied: bool,
}

/// What a copy did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// SSTs copied, and their bytes.
    pub copied_files: u64,
    /// Bytes copied.
    pub copied_bytes: u64,
    /// SSTs the destination held already.
    pub skipped_files: u64,
    /// Bytes not copied.
    pub skipped_bytes: u64,
    /// The manifest written at the destination.
    pub manifest: PathBuf,
}

/// The state of the database at `place`; `None` when no database is there.
pub fn read_state(place: &Place) -> Result<Option<LsmMeta>> {
    match place.layout {
        Layout::Objects => Ok(newest_snapshot(place.vfs, place.dir)?.map(|(_, m)| m)),
        Layout::Directory => {
            if !place.vfs.exists(place.dir) {
                return Ok(None);
            }
            match read_current(place.vfs, place.dir)? {
                Some(n) => {
                    verify_manifest(place.vfs, &place.dir.join(manifest_file_name(n))).map(Some)
                }
                None => Ok(None),
            }
        }
    }
}

/// Whether a directory database holds writes only its WALs have (records in a WAL the
/// manifest does not cover yet): its manifest alone is then not its newest state, and it
/// must be opened (and flushed) to be copied whole.
pub fn has_unflushed_writes(place: &Place, meta: &LsmMeta) -> Result<bool> {
    if place.layout != Layout::Directory {
        return Ok(false);
    }
    for name in list(place)? {
        if let Some(FileKind::Wal(n)) = parse_file_name(&name) {
            let path = place.dir.join(&name);
            if n >= meta.log_number
                && !verify_wal(place.vfs, &path, TailPolicy::TolerateTornTail)?
                    .records
                    .is_empty()
            {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Whether anything of a database is at `place` (a manifest, an SST, a WAL): a restore
/// refuses such a destination.
pub fn holds_database(place: &Place) -> Result<bool> {
    if place.layout == Layout::Objects && !snapshot_ids(place.vfs, place.dir)?.is_empty() {
        return Ok(true);
    }
    Ok(list(place)?.iter().any(|n| {
        matches!(
            parse_file_name(n),
            Some(FileKind::Current | FileKind::Manifest(_) | FileKind::Sst(_) | FileKind::Wal(_))
        )
    }))
}

fn list(place: &Place) -> Result<Vec<String>> {
    match place.vfs.list(place.dir) {
        Ok(names) => Ok(names),
        Err(e) if is_not_found(&e) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Copies the SSTs of `meta` (the state read from `src`) that `dst` lacks, then writes the
/// manifest at `dst`. `progress` hears of every SST.
pub fn copy_state(
    src: &Place,
    meta: &LsmMeta,
    dst: &Place,
    progress: &mut dyn FnMut(&Step),
) -> Result<CopyReport> {
    dst.vfs.create_dir_all(dst.dir)?;
    let mut report = CopyReport::default();
    for (n, size) in listed_files(meta) {
        let name = sst_file_name(n);
        let to = dst.dir.join(&name);
        let present = match dst.vfs.file_size(&to) {
            Ok(s) => s == size,
            Err(e) if is_not_found(&e) => false,
            Err(e) => return Err(e),
        };
        if present {
            report.skipped_files += 1;
            report.skipped_bytes += size;
        } else {
            copy_file(src.vfs, &src.dir.join(&name), dst.vfs, &to, size)?;
            report.copied_files += 1;
            report.copied_bytes += size;
        }
        progress(&Step {
            name: &name,
            bytes: size,
            copied: !present,
        });
    }
    report.manifest = match dst.layout {
        Layout::Directory => write_directory_manifest(dst, meta)?,
        Layout::Objects => publish(dst, meta)?,
    };
    Ok(report)
}

/// Every SST `meta` lists, with the size it records.
fn listed_files(meta: &LsmMeta) -> Vec<(u64, u64)> {
    let mut files: Vec<(u64, u64)> = meta
        .keyspaces
        .values()
        .flat_map(|k| k.levels.iter().flat_map(|l| l.iter()))
        .map(|(n, f)| (*n, f.size))
        .collect();
    files.sort_unstable();
    files.dedup();
    files
}

/// Copies `from` to `to` in chunks (an SST can be larger than memory wants to hold). The
/// size must be what the manifest recorded: anything else is not the file it lists.
fn copy_file(
    from_vfs: &dyn Vfs,
    from: &Path,
    to_vfs: &dyn Vfs,
    to: &Path,
    size: u64,
) -> Result<()> {
    let src = from_vfs.open_read(from, false)?;
    if src.size() != size {
        return Err(Error::corruption(
            from,
            0,
            format!("file is {} bytes, the manifest says {size}", src.size()),
        ));
    }
    let mut dst = to_vfs.create(to)?;
    let mut buf = Vec::new();
    let mut at = 0u64;
    while at < size {
        let len = CHUNK.min(size - at);
        buf.resize(len as usize, 0);
        src.read_exact_at(&mut buf, at)?;
        dst.append(&buf)?;
        at += len;
    }
    dst.sync()
}

/// A new manifest (one snapshot edit) and `CURRENT` naming it, as `Db::checkpoint` writes
/// them; then the files no longer referenced (older manifests, SSTs, WALs) are removed.
fn write_directory_manifest(dst: &Place, meta: &LsmMeta) -> Result<PathBuf> {
    let names = list(dst)?;
    let highest = names
        .iter()
        .filter_map(|n| match parse_file_name(n)? {
            FileKind::Manifest(x) | FileKind::Sst(x) | FileKind::Wal(x) => Some(x),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let number = meta.next_file_number.max(highest + 1).max(1);
    let mut meta = meta.clone();
    // Every write is in the SSTs: the copy has no WAL.
    meta.log_number = number + 1;
    meta.next_file_number = number + 2;
    meta.writer_epoch = 0;
    let path = dst.dir.join(manifest_file_name(number));
    let mut w = LogWriter::new(dst.vfs.create(&path)?, path.clone(), LogKind::Manifest)?;
    w.add_record(&meta.snapshot_edit().encode())?;
    w.sync()?;
    dst.vfs.sync_dir(dst.dir)?;
    write_current(dst.vfs, dst.dir, number)?;
    let live: BTreeSet<u64> = meta.live_file_numbers();
    for name in names {
        let stale = match parse_file_name(&name) {
            Some(FileKind::Sst(n)) => !live.contains(&n),
            Some(FileKind::Manifest(n)) => n != number,
            Some(FileKind::Wal(_) | FileKind::Temp) => true,
            _ => false,
        };
        if stale {
            dst.vfs.remove(&dst.dir.join(name))?;
        }
    }
    Ok(path)
}

/// The next snapshot id at the destination, create-if-absent. Its epoch is at least that of
/// the newest snapshot there, so a writer opening the copy later takes a fresh epoch.
fn publish(dst: &Place, meta: &LsmMeta) -> Result<PathBuf> {
    dst.vfs.create_dir_all(&dst.dir.join(MANIFEST_DIR))?;
    let previous = newest_snapshot(dst.vfs, dst.dir)?;
    let id = previous.as_ref().map_or(1, |(id, _)| id + 1);
    let mut meta = meta.clone();
    if let Some((_, p)) = &previous {
        meta.writer_epoch = meta.writer_epoch.max(p.writer_epoch);
        meta.next_file_number = meta.next_file_number.max(p.next_file_number);
    }
    match publish_snapshot(dst.vfs, dst.dir, id, &meta.snapshot_edit())? {
        Published::Yes => Ok(crate::manifest::objects::snapshot_path(dst.dir, id)),
        Published::Taken { epoch } => Err(Error::Fenced(format!(
            "a writer (epoch {epoch}) published manifest snapshot {id} at {} during the copy",
            dst.dir.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::check::{DirCheck, Verdict};
    use crate::tools::objects::check_objects;
    use crate::vfs::{MemVfs, RealVfs};
    use crate::{Db, Options, ReadOptions, WriteOptions};

    fn nothing(_: &Step) {}

    #[test]
    fn a_directory_copied_to_objects_and_back_holds_the_same_data() -> Result<()> {
        let tmp = tempfile::tempdir().map_err(|e| Error::io(Path::new("tmp"), e))?;
        let (src, ck, back) = (
            tmp.path().join("src"),
            tmp.path().join("ck"),
            tmp.path().join("back"),
        );
        let db = Db::open(&src, Options::default())?;
        let ks = db.default_keyspace();
        for i in 0..100u32 {
            db.put(
                &ks,
                format!("k{i:03}").as_bytes(),
                b"v",
                &WriteOptions::default(),
            )?;
        }
        db.checkpoint(&ck)?;
        db.close()?;
        let mem = MemVfs::new();
        fn dir(p: &Path) -> Place<'_> {
            Place {
                vfs: &RealVfs,
                dir: p,
                layout: Layout::Directory,
            }
        }
        let objects = Place {
            vfs: &mem,
            dir: Path::new("bucket/p"),
            layout: Layout::Objects,
        };
        assert!(!holds_database(&objects)?);
        let meta = read_state(&dir(&ck))?.ok_or_else(|| Error::InvalidArgument("none".into()))?;
        let first = copy_state(&dir(&ck), &meta, &objects, &mut nothing)?;
        assert!(
            first.copied_files >= 1 && first.skipped_files == 0,
            "{first:?}"
        );
        let again = copy_state(&dir(&ck), &meta, &objects, &mut nothing)?;
        assert_eq!(
            (again.copied_files, again.skipped_files),
            (0, first.copied_files)
        );
        assert!(holds_database(&objects)?);
        let DirCheck::Checked(findings) = check_objects(&mem, objects.dir)? else {
            panic!("not a database");
        };
        assert!(
            findings.iter().all(|f| matches!(f.verdict, Verdict::Ok)),
            "{findings:?}"
        );

        let meta = read_state(&objects)?.ok_or_else(|| Error::InvalidArgument("none".into()))?;
        copy_state(&objects, &meta, &dir(&back), &mut nothing)?;
        let db = Db::open(&back, Options::default())?;
        let got = db.get(&db.default_keyspace(), b"k099", &ReadOptions::default())?;
        assert_eq!(got.as_deref(), Some(&b"v"[..]));
        db.close()
    }
}
