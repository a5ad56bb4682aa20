//! A read-only check of every checksum in a database directory (`cellar check`).
//!
//! Order: `CURRENT`, the manifest it names (strict: every record must check out and decode,
//! and the edits must replay), the live WALs (strict, except that the newest may end in a
//! torn tail, reported as a warning), every SST the manifest lists (all blocks read and
//! checked, and compared with the manifest's record of it), then files nothing refers to
//! (warnings). Nothing is opened for writing and no lock is taken.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::batch::decode_batch;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::log::{read_log, LogContents, LogKind, TailPolicy};
use crate::manifest::{
    manifest_file_name, parse_file_name, read_current, sst_file_name, wal_file_name, FileKind,
    FileMeta, CURRENT_FILE,
};
use crate::sst::SstReader;
use crate::stats::Counters;
use crate::tools::manifest::{read_manifest_records, replay};
use crate::version::LsmMeta;
use crate::vfs::Vfs;

/// What the check found about one file.
#[derive(Debug)]
pub enum Verdict {
    /// The file checks out.
    Ok,
    /// The file is damaged (what and where).
    Corrupt(Error),
    /// A file the database needs is not there (why).
    Missing(String),
    /// Harmless, but worth knowing (why): a torn tail, a leftover file.
    Warn(String),
    /// The file checks out; what is worth noting about it (a WAL object that is a fence).
    Noted(String),
}

/// One file and its verdict, in the order the check visits them.
#[derive(Debug)]
pub struct Finding {
    /// The file.
    pub path: PathBuf,
    /// What the check found.
    pub verdict: Verdict,
}

/// The outcome of [`check_directory`].
#[derive(Debug)]
pub enum DirCheck {
    /// No `CURRENT`, manifest, SST or WAL: not a database at all.
    NotADatabase,
    /// A database: one finding per file.
    Checked(Vec<Finding>),
}

/// Checks every file of the database in `dir`; see the module doc for the order. Errors are
/// only those of listing the directory: a damaged file is a finding.
pub fn check_directory(vfs: &dyn Vfs, dir: &Path) -> Result<DirCheck> {
    let mut names = vfs.list(dir)?;
    names.sort();
    let files: Vec<(String, Option<FileKind>)> = names
        .into_iter()
        .map(|n| {
            let k = parse_file_name(&n);
            (n, k)
        })
        .collect();
    let mut c = Checker {
        vfs,
        dir,
        files,
        findings: Vec::new(),
    };
    let looks_like_db = c.has(|k| {
        matches!(
            k,
            FileKind::Current | FileKind::Manifest(_) | FileKind::Sst(_) | FileKind::Wal(_)
        )
    });
    if !looks_like_db {
        return Ok(DirCheck::NotADatabase);
    }
    let manifest_number = c.check_current();
    let meta = manifest_number.and_then(|n| c.check_manifest(n));
    let log_number = meta.as_ref().map_or(0, |m| m.log_number);
    let old_wals = c.check_wals(log_number);
    let listed = c.check_ssts(meta.as_ref());
    c.report_unreferenced(
        meta.is_some(),
        &old_wals,
        log_number,
        &listed,
        manifest_number,
    );
    Ok(DirCheck::Checked(c.findings))
}

/// Reads and replays a manifest strictly.
pub fn verify_manifest(vfs: &dyn Vfs, path: &Path) -> Result<LsmMeta> {
    let bytes = vfs.read_all(path)?;
    let read = read_manifest_records(&bytes, path, TailPolicy::Strict)?;
    replay(&read.records, path)
}

/// Reads a WAL and decodes every batch; returns what `read_log` found (no dropped tail
/// under `Strict`).
pub fn verify_wal(vfs: &dyn Vfs, path: &Path, tail: TailPolicy) -> Result<LogContents> {
    let bytes = vfs.read_all(path)?;
    let log = read_log(&bytes, path, LogKind::Wal, tail)?;
    for (offset, payload) in log.payloads(&bytes) {
        decode_batch(payload, path, offset)?;
    }
    Ok(log)
}

/// Opens an SST as the engine does, reads every block, and compares it with what the
/// manifest recorded of it (`listed`).
pub fn verify_sst(
    vfs: &dyn Vfs,
    path: &Path,
    number: u64,
    listed: Option<&FileMeta>,
) -> Result<()> {
    let file = vfs.open_read(path, false)?;
    let reader = SstReader::open(
        file,
        path.to_path_buf(),
        number,
        Arc::new(BlockCache::new(1 << 20)),
        Arc::new(Counters::default()),
        false,
    )?;
    reader.verify_checksums()?;
    let Some(m) = listed else {
        return Ok(());
    };
    let disagree =
        |what: String| Error::corruption(path, 0, format!("file and manifest disagree: {what}"));
    if reader.file_size() != m.size {
        return Err(disagree(format!(
            "file is {} bytes, manifest says {}",
            reader.file_size(),
            m.size
        )));
    }
    let p = reader.properties();
    if p.num_entries != m.num_entries {
        return Err(disagree(format!(
            "file holds {} entries, manifest says {}",
            p.num_entries, m.num_entries
        )));
    }
    if p.smallest != m.smallest || p.largest != m.largest {
        return Err(disagree("key range".to_string()));
    }
    Ok(())
}

struct Checker<'a> {
    vfs: &'a dyn Vfs,
    dir: &'a Path,
    /// Every name in the directory, sorted, with what it is.
    files: Vec<(String, Option<FileKind>)>,
    findings: Vec<Finding>,
}

/// SSTs the manifest lists: number → (keyspace, level, what it recorded).
type Listed = BTreeMap<u64, (u32, usize, FileMeta)>;

impl Checker<'_> {
    fn has(&self, f: impl Fn(FileKind) -> bool) -> bool {
        self.files.iter().any(|(_, k)| k.is_some_and(&f))
    }

    fn numbers(&self, f: impl Fn(FileKind) -> Option<u64>) -> Vec<u64> {
        self.files
            .iter()
            .filter_map(|(_, k)| k.and_then(&f))
            .collect()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn push(&mut self, path: PathBuf, verdict: Verdict) {
        self.findings.push(Finding { path, verdict });
    }

    fn result(&mut self, path: PathBuf, r: Result<()>) {
        let verdict = match r {
            Ok(()) => Verdict::Ok,
            Err(e) => Verdict::Corrupt(e),
        };
        self.push(path, verdict);
    }

    /// `CURRENT`, and the number of the manifest it names.
    fn check_current(&mut self) -> Option<u64> {
        let path = self.path(CURRENT_FILE);
        if !self.has(|k| k == FileKind::Current) {
            let why = "no CURRENT: the live manifest is unknown".to_string();
            self.push(path, Verdict::Missing(why));
            return None;
        }
        match read_current(self.vfs, self.dir) {
            Ok(n) => {
                self.push(path, Verdict::Ok);
                n
            }
            Err(e) => {
                self.push(path, Verdict::Corrupt(e));
                None
            }
        }
    }

    /// The manifest `CURRENT` names, replayed.
    fn check_manifest(&mut self, n: u64) -> Option<LsmMeta> {
        let path = self.path(&manifest_file_name(n));
        if !self.has(|k| k == FileKind::Manifest(n)) {
            let why = "named by CURRENT but not found".to_string();
            self.push(path, Verdict::Missing(why));
            return None;
        }
        match verify_manifest(self.vfs, &path) {
            Ok(m) => {
                self.push(path, Verdict::Ok);
                Some(m)
            }
            Err(e) => {
                self.push(path, Verdict::Corrupt(e));
                None
            }
        }
    }

    /// WALs the manifest does not cover yet are replayed at open. Any may end in a torn
    /// write (an older one when it was never synced, see docs/durability.md); recovery
    /// stops at the first. Without a readable manifest (`log_number` 0) every WAL is
    /// checked. Returns the older WALs, which nothing refers to.
    fn check_wals(&mut self, log_number: u64) -> Vec<u64> {
        let mut wals = self.numbers(|k| match k {
            FileKind::Wal(n) => Some(n),
            _ => None,
        });
        wals.sort_unstable();
        let (live, old): (Vec<u64>, Vec<u64>) = wals.into_iter().partition(|n| *n >= log_number);
        for (i, n) in live.iter().enumerate() {
            let path = self.path(&wal_file_name(*n));
            let newest = i + 1 == live.len();
            let verdict = match verify_wal(self.vfs, &path, TailPolicy::TolerateUnwrittenPages) {
                // Zeros after the last record of the newest WAL are space it reserved ahead
                // (or a crash left allocated), not a lost write: nothing to warn about.
                Ok(log) if log.dropped_tail_bytes == 0 || (newest && log.unwritten_tail) => {
                    Verdict::Ok
                }
                Ok(log) if log.unwritten_gap => Verdict::Warn(format!(
                    "records stop at offset {} where a page was left unwritten before later \
                     bytes ({} bytes after it; a power loss while the WAL's pages were \
                     written back): recovery drops them if the WAL was never synced, and \
                     reports corruption otherwise",
                    log.valid_len, log.dropped_tail_bytes
                )),
                Ok(log) if newest => Verdict::Warn(format!(
                    "torn tail of {} bytes at offset {} in the newest WAL \
                     (a write cut short by a crash; recovery drops it)",
                    log.dropped_tail_bytes, log.valid_len
                )),
                Ok(log) => Verdict::Warn(format!(
                    "an older WAL cut short at offset {} ({} bytes after it; a power loss \
                     before it was synced): recovery stops there and drops the newer WALs' \
                     writes, unless a newer WAL records this one as synced (then open \
                     reports corruption)",
                    log.valid_len, log.dropped_tail_bytes
                )),
                Err(e) => Verdict::Corrupt(e),
            };
            self.push(path, verdict);
        }
        old
    }

    /// Every SST the manifest lists; without a manifest, every SST present.
    fn check_ssts(&mut self, meta: Option<&LsmMeta>) -> Listed {
        let mut listed = Listed::new();
        for (ks, k) in meta.iter().flat_map(|m| &m.keyspaces) {
            for (level, files) in k.levels.iter().enumerate() {
                for (n, f) in files {
                    listed.insert(*n, (*ks, level, f.clone()));
                }
            }
        }
        let present: BTreeSet<u64> = self
            .numbers(|k| match k {
                FileKind::Sst(n) => Some(n),
                _ => None,
            })
            .into_iter()
            .collect();
        if meta.is_none() {
            for n in &present {
                let path = self.path(&sst_file_name(*n));
                let r = verify_sst(self.vfs, &path, *n, None);
                self.result(path, r);
            }
            return listed;
        }
        for (n, (ks, level, f)) in &listed {
            let path = self.path(&sst_file_name(*n));
            if !present.contains(n) {
                let why =
                    format!("listed in the manifest (keyspace {ks}, level {level}) but not found");
                self.push(path, Verdict::Missing(why));
                continue;
            }
            let r = verify_sst(self.vfs, &path, *n, Some(f));
            self.result(path, r);
        }
        listed
    }

    /// Files nothing refers to: harmless leftovers the next open deletes.
    fn report_unreferenced(
        &mut self,
        have_manifest: bool,
        old_wals: &[u64],
        log_number: u64,
        listed: &Listed,
        manifest_number: Option<u64>,
    ) {
        if have_manifest {
            for n in old_wals {
                let why =
                    format!("unreferenced: WAL older than the manifest's log number {log_number}");
                self.push(self.path(&wal_file_name(*n)), Verdict::Warn(why));
            }
        }
        let files = std::mem::take(&mut self.files);
        for (name, kind) in &files {
            let why = match kind {
                Some(FileKind::Sst(n)) if have_manifest && !listed.contains_key(n) => {
                    "unreferenced: SST not listed in the manifest"
                }
                Some(FileKind::Manifest(n)) if Some(*n) != manifest_number => {
                    "unreferenced: manifest not named by CURRENT"
                }
                Some(FileKind::Temp) => "unreferenced: unfinished temporary file",
                None => "not a Cellar file (ignored by the engine)",
                _ => continue,
            };
            self.push(self.path(name), Verdict::Warn(why.to_string()));
        }
        self.files = files;
    }
}
