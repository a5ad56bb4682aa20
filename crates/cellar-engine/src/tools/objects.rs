//! Read-only tools over a database in an object store (the object layout of
//! `docs/object-storage.md`): its newest state, and a check of every object in the style of
//! [`check_directory`](crate::tools::check::check_directory). Nothing here writes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::log::objects::{read_wal_object, wal_object_ids, wal_object_path};
use crate::manifest::objects::{read_snapshot, snapshot_ids, snapshot_path};
use crate::manifest::{parse_file_name, sst_file_name, FileKind, VersionEdit};
use crate::tools::check::{verify_sst, DirCheck, Finding, Verdict};
use crate::tools::manifest::{replay, EditRecord};
use crate::version::LsmMeta;
use crate::vfs::Vfs;

/// The newest state of a database in an object store, for `cellar inspect lsm`.
#[derive(Debug)]
pub struct ObjectsLayout {
    /// The id of the newest manifest snapshot.
    pub snapshot_id: u64,
    /// The state it holds (the writer epoch and the log number among it).
    pub meta: LsmMeta,
    /// WAL objects present (fences included).
    pub wal_objects: usize,
    /// Of those, fences: objects holding no batches, written by an opening writer to stop
    /// an older one from appending.
    pub fences: usize,
}

/// The state snapshot `id` holds, replayed as open would.
pub fn snapshot_meta(vfs: &dyn Vfs, dir: &Path, id: u64) -> Result<LsmMeta> {
    let edit = read_snapshot(vfs, dir, id)?;
    meta_of(edit, &snapshot_path(dir, id))
}

fn meta_of(edit: VersionEdit, path: &Path) -> Result<LsmMeta> {
    let record = EditRecord {
        offset: 0,
        payload_len: 0,
        edit: Ok(edit),
    };
    replay(&[record], path)
}

/// The newest snapshot's id and state; `None` when the prefix holds no database.
pub fn newest_snapshot(vfs: &dyn Vfs, dir: &Path) -> Result<Option<(u64, LsmMeta)>> {
    match snapshot_ids(vfs, dir)?.last() {
        Some(&id) => Ok(Some((id, snapshot_meta(vfs, dir, id)?))),
        None => Ok(None),
    }
}

/// The layout of the database at `dir`; `None` when the prefix holds no database.
pub fn objects_layout(vfs: &dyn Vfs, dir: &Path) -> Result<Option<ObjectsLayout>> {
    let Some((snapshot_id, meta)) = newest_snapshot(vfs, dir)? else {
        return Ok(None);
    };
    let ids = wal_object_ids(vfs, dir)?;
    let mut fences = 0;
    for id in &ids {
        if read_wal_object(vfs, dir, *id)?.batches.is_empty() {
            fences += 1;
        }
    }
    Ok(Some(ObjectsLayout {
        snapshot_id,
        meta,
        wal_objects: ids.len(),
        fences,
    }))
}

/// Checks the database in an object store at prefix `dir`: the newest snapshot (decoded
/// and replayed), every SST it lists (every block, size and key range), the older
/// retained snapshots, every WAL object, then SST objects no retained snapshot lists
/// (warnings: a writer's garbage collection deletes them after its grace period).
/// Errors are only those of listing: a damaged object is a finding.
pub fn check_objects(vfs: &dyn Vfs, dir: &Path) -> Result<DirCheck> {
    let ids = snapshot_ids(vfs, dir)?;
    let Some((&newest, older)) = ids.split_last() else {
        return Ok(DirCheck::NotADatabase);
    };
    let mut findings = Vec::new();
    let mut listed = BTreeSet::new();
    match snapshot_meta(vfs, dir, newest) {
        Ok(meta) => {
            findings.push(ok(snapshot_path(dir, newest)));
            listed.extend(meta.live_file_numbers());
            check_ssts(vfs, dir, &meta, &mut findings);
        }
        Err(e) => findings.push(finding(snapshot_path(dir, newest), Verdict::Corrupt(e))),
    }
    for id in older.iter().rev() {
        let path = snapshot_path(dir, *id);
        match snapshot_meta(vfs, dir, *id) {
            Ok(meta) => {
                listed.extend(meta.live_file_numbers());
                findings.push(ok(path));
            }
            Err(e) if crate::vfs::is_not_found(&e) => {
                // Deleted by the writer since the listing: it keeps only the newest few.
            }
            Err(e) => findings.push(finding(path, Verdict::Corrupt(e))),
        }
    }
    check_wal_objects(vfs, dir, &mut findings)?;
    report_orphans(vfs, dir, &listed, &mut findings)?;
    Ok(DirCheck::Checked(findings))
}

fn finding(path: PathBuf, verdict: Verdict) -> Finding {
    Finding { path, verdict }
}

fn ok(path: PathBuf) -> Finding {
    finding(path, Verdict::Ok)
}

/// Every SST the newest snapshot lists, in number order, read whole and compared with its
/// record.
fn check_ssts(vfs: &dyn Vfs, dir: &Path, meta: &LsmMeta, findings: &mut Vec<Finding>) {
    let mut listed = std::collections::BTreeMap::new();
    for (ks, k) in &meta.keyspaces {
        for (level, files) in k.levels.iter().enumerate() {
            for (n, f) in files {
                listed.insert(*n, (*ks, level, f));
            }
        }
    }
    for (n, (ks, level, f)) in listed {
        let path = dir.join(sst_file_name(n));
        let verdict = match verify_sst(vfs, &path, n, Some(f)) {
            Ok(()) => Verdict::Ok,
            Err(e) if crate::vfs::is_not_found(&e) => Verdict::Missing(format!(
                "listed in the newest snapshot (keyspace {ks}, level {level}) but not found"
            )),
            Err(e) => Verdict::Corrupt(e),
        };
        findings.push(finding(path, verdict));
    }
}

/// Each WAL object must decode whole; a fence (no batches) is noted as such.
fn check_wal_objects(vfs: &dyn Vfs, dir: &Path, findings: &mut Vec<Finding>) -> Result<()> {
    for id in wal_object_ids(vfs, dir)? {
        let path = wal_object_path(dir, id);
        let verdict = match read_wal_object(vfs, dir, id) {
            Ok(w) if w.batches.is_empty() => Verdict::Noted(format!(
                "fence of the writer of epoch {}: no batches",
                w.epoch
            )),
            Ok(w) => match decode_batches(&w, &path) {
                Ok(()) => Verdict::Ok,
                Err(e) => Verdict::Corrupt(e),
            },
            // The writer deletes the WAL objects of a flushed memtable: gone since the listing.
            Err(e) if crate::vfs::is_not_found(&e) => continue,
            Err(e) => Verdict::Corrupt(e),
        };
        findings.push(finding(path, verdict));
    }
    Ok(())
}

fn decode_batches(w: &crate::log::objects::WalObject, path: &Path) -> Result<()> {
    for (offset, payload) in &w.batches {
        crate::batch::decode_batch(payload, path, *offset)?;
    }
    Ok(())
}

/// SST objects no retained snapshot lists: leftovers of compactions (or of a writer that
/// was fenced) that the live writer's garbage collection deletes after its grace period.
fn report_orphans(
    vfs: &dyn Vfs,
    dir: &Path,
    listed: &BTreeSet<u64>,
    findings: &mut Vec<Finding>,
) -> Result<()> {
    let mut names = vfs.list(dir)?;
    names.sort();
    for name in names {
        if let Some(FileKind::Sst(n)) = parse_file_name(&name) {
            if !listed.contains(&n) {
                let why = "orphan: SST no retained snapshot lists (a writer's garbage \
                           collection deletes it once its grace period has passed)";
                findings.push(finding(dir.join(name), Verdict::Warn(why.to_string())));
            }
        }
    }
    Ok(())
}
