//! `cellar backup` and `cellar restore`: the newest state of a database copied to another
//! place, a directory or an object store on either side. The engine's `tools::backup` does
//! the copying (only the SSTs the destination lacks, the manifest last); this decides what
//! the consistent source state is and reports progress.
//!
//! A directory source may be open by a writer, whose files change under a reader: its LOCK
//! is taken (which fails while a writer holds it) and kept for the copy. If its WALs hold
//! no writes beyond the manifest (a closed database, a backup), the manifest's files are
//! copied as they are, and the source is not modified. Otherwise it is opened and
//! checkpointed, and the checkpoint, hard links of immutable files, is what is copied. An object-store source is read at its
//! newest manifest snapshot, without writing anything: the live writer is neither fenced
//! nor replaced.

use std::io::Write;
use std::path::{Path, PathBuf};

use cellar_engine::tools::backup::{
    copy_state, has_unflushed_writes, holds_database, read_state, CopyReport, Step,
};
use cellar_engine::tools::manifest::LsmMeta;
use cellar_engine::vfs::{FileLock, RealVfs, Vfs};
use cellar_engine::{Db, Options};

use crate::error::{CliError, CliResult, Outcome};
use crate::place::Location;

#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// The database to back up: a directory or s3://bucket/prefix
    #[arg(long, value_name = "PATH|URL", default_value = crate::DEFAULT_DB)]
    pub db: PathBuf,
    /// Where the backup goes: a directory or s3://bucket/prefix (an earlier backup there is
    /// brought up to date, copying only the files it lacks)
    #[arg(long, value_name = "PATH|URL")]
    pub to: PathBuf,
    #[command(flatten)]
    pub store: cellar_server::ObjectStoreArgs,
}

#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The backup to restore: a directory or s3://bucket/prefix
    #[arg(long, value_name = "PATH|URL")]
    pub from: PathBuf,
    /// Where the database is restored: a directory or s3://bucket/prefix that holds no
    /// database yet
    #[arg(long, value_name = "PATH|URL")]
    pub db: PathBuf,
    #[command(flatten)]
    pub store: cellar_server::ObjectStoreArgs,
}

pub fn backup(args: &BackupArgs, out: &mut dyn Write) -> CliResult<Outcome> {
    let dst = Location::reach(&args.to, &args.store)?;
    copy(&args.db, &dst, &args.store, "backup", out)
}

pub fn restore(args: &RestoreArgs, out: &mut dyn Write) -> CliResult<Outcome> {
    let dst = Location::reach(&args.db, &args.store)?;
    if holds_database(&dst.place())? {
        return Err(CliError::Usage(format!(
            "{} already holds a database; restore into a new directory or prefix",
            dst.shown
        )));
    }
    copy(&args.from, &dst, &args.store, "restore", out)
}

/// Copies the newest state of `src` to `dst`.
fn copy(
    src: &Path,
    dst: &Location,
    store: &cellar_server::ObjectStoreArgs,
    what: &str,
    out: &mut dyn Write,
) -> CliResult<Outcome> {
    let (source, _guard) = consistent_source(src, store)?;
    let Some(meta) = read_state(&source.place())? else {
        return Err(CliError::Usage(format!(
            "{}: not a Cellar database",
            src.display()
        )));
    };
    let report = copy_state(&source.place(), &meta, &dst.place(), &mut |s: &Step| {
        let verb = if s.copied { "copied" } else { "skipped" };
        eprintln!("{verb} {} ({} bytes)", s.name, s.bytes);
    })?;
    summary(what, src, dst, &meta, &report, out)?;
    Ok(Outcome::Clean)
}

fn summary(
    what: &str,
    src: &Path,
    dst: &Location,
    meta: &LsmMeta,
    r: &CopyReport,
    out: &mut dyn Write,
) -> CliResult<()> {
    writeln!(
        out,
        "{what} {} -> {}: copied {} files ({} bytes), skipped {} files ({} bytes) already \
         there; last sequence {}; manifest {}",
        src.display(),
        dst.shown,
        r.copied_files,
        r.copied_bytes,
        r.skipped_files,
        r.skipped_bytes,
        meta.last_sequence,
        r.manifest.display()
    )?;
    Ok(())
}

/// Where the consistent state of `src` can be read: an object store as it is (its
/// snapshots are immutable), a closed directory as it is (under its LOCK), any other
/// directory through a checkpoint. The guard holds the LOCK or removes the checkpoint.
fn consistent_source(
    src: &Path,
    store: &cellar_server::ObjectStoreArgs,
) -> CliResult<(Location, SourceGuard)> {
    let at = Location::reach(src, store)?;
    if crate::place::is_url(src) {
        return Ok((at, SourceGuard::default()));
    }
    let Some(meta) = read_state(&at.place())? else {
        return Err(CliError::Usage(format!(
            "{}: no CURRENT file, not a Cellar database",
            src.display()
        )));
    };
    let lock = RealVfs
        .lock(&src.join("LOCK"))
        .map_err(|e| in_use(src, &e))?;
    if !has_unflushed_writes(&at.place(), &meta)? {
        let guard = SourceGuard {
            _lock: Some(lock),
            _checkpoint: None,
        };
        return Ok((at, guard));
    }
    // The open below takes the LOCK itself.
    drop(lock);
    let tmp = TempDir::beside(src)?;
    let opts = Options {
        background_work: false,
        ..Options::default()
    };
    let db = Db::open(src, opts).map_err(|e| in_use(src, &e))?;
    db.checkpoint(&tmp.0)?;
    db.close()?;
    let checkpoint = Location::reach(&tmp.0, store)?;
    let guard = SourceGuard {
        _lock: None,
        _checkpoint: Some(tmp),
    };
    Ok((checkpoint, guard))
}

fn in_use(src: &Path, e: &cellar_engine::Error) -> CliError {
    CliError::Usage(format!(
        "cannot open {} to copy it consistently: {e} (a directory database open by a writer \
         cannot be copied; stop the writer, or back up a checkpoint it made)",
        src.display()
    ))
}

/// What keeps the source consistent until the copy is done (dropped after it).
#[derive(Default)]
struct SourceGuard {
    _lock: Option<Box<dyn FileLock>>,
    _checkpoint: Option<TempDir>,
}

/// A directory next to the database (hard links need the same file system), removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn beside(db: &Path) -> CliResult<TempDir> {
        let db = std::fs::canonicalize(db).map_err(|e| cellar_engine::Error::io(db, e))?;
        let name = db
            .file_name()
            .map_or_else(|| "db".into(), |n| n.to_string_lossy().into_owned());
        let parent = db.parent().unwrap_or(Path::new("/"));
        let dir = parent.join(format!(".{name}.backup-{}", std::process::id()));
        // A leftover of an earlier run with this pid.
        let _ = std::fs::remove_dir_all(&dir);
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
