//! `cellar check`: read-only verification of every checksum in a database directory, or of
//! every object of a database in an object store. The engine's `tools::check` and
//! `tools::objects` walk the files (the order is described there); this prints one line per
//! file and a summary.

use std::io::Write;
use std::path::Path;

use cellar_engine::tools::check::{check_directory, DirCheck, Finding, Verdict};
use cellar_engine::tools::objects::check_objects;
use cellar_engine::vfs::RealVfs;

use crate::dbdir::require_db_dir;
use crate::error::{CliError, CliResult, Outcome};

pub fn run(
    db: &Path,
    store: &cellar_server::ObjectStoreArgs,
    out: &mut dyn Write,
) -> CliResult<Outcome> {
    let checked = if crate::place::is_url(db) {
        let at = crate::place::Location::reach(db, store)?;
        check_objects(&*at.vfs, &at.dir)?
    } else {
        require_db_dir(db)?;
        check_directory(&RealVfs, db)?
    };
    let findings = match checked {
        DirCheck::NotADatabase => {
            return Err(CliError::Usage(format!(
                "{}: no Cellar files here, not a database (use --db PATH)",
                db.display()
            )))
        }
        DirCheck::Checked(findings) => findings,
    };
    writeln!(out, "checking {}", db.display())?;
    print(&findings, out)
}

/// One line per finding, then the summary.
fn print(findings: &[Finding], out: &mut dyn Write) -> CliResult<Outcome> {
    let (mut ok, mut corrupt, mut missing, mut warnings) = (0usize, 0usize, 0usize, 0usize);
    for f in findings {
        let path = f.path.display();
        match &f.verdict {
            Verdict::Ok => {
                ok += 1;
                writeln!(out, "OK {path}")?;
            }
            Verdict::Noted(note) => {
                ok += 1;
                writeln!(out, "OK {path}: {note}")?;
            }
            Verdict::Corrupt(e) => {
                corrupt += 1;
                writeln!(out, "CORRUPT {path}: {e}")?;
            }
            Verdict::Missing(why) => {
                missing += 1;
                writeln!(out, "MISSING {path}: {why}")?;
            }
            Verdict::Warn(why) => {
                warnings += 1;
                writeln!(out, "WARN {path}: {why}")?;
            }
        }
    }
    let bad = corrupt + missing;
    writeln!(
        out,
        "summary: {ok} ok, {corrupt} corrupt, {missing} missing, {warnings} warnings: {}",
        if bad == 0 { "OK" } else { "DAMAGED" }
    )?;
    Ok(if bad == 0 {
        Outcome::Clean
    } else {
        Outcome::Damaged
    })
}
