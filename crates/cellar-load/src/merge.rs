//! The last phase: each family's runs merged in key order into an `IngestWriter`. Of equal
//! keys (possible only with a timestamp column) the one read last wins.

use std::sync::atomic::{AtomicU64, Ordering};

use cellar_engine::{Db, IngestFiles, IngestWriter};
use rayon::prelude::*;

use crate::run::{head_order, MemRun, RunSet, SpillReader};
use crate::{LoadError, LoadStats, LoadTarget, Progress, ProgressSink};

const PROGRESS_EVERY_CELLS: u64 = 1 << 20;

struct Counter<'a> {
    written: &'a AtomicU64,
    base: Progress,
    sink: &'a dyn ProgressSink,
    pending: u64,
}

impl Counter<'_> {
    fn tick(&mut self) {
        self.pending += 1;
        if self.pending == PROGRESS_EVERY_CELLS {
            let total = self.written.fetch_add(self.pending, Ordering::Relaxed) + self.pending;
            self.pending = 0;
            let mut p = self.base;
            p.cells_written = total;
            self.sink.update(&p);
        }
    }
}

impl Drop for Counter<'_> {
    fn drop(&mut self) {
        self.written.fetch_add(self.pending, Ordering::Relaxed);
    }
}

/// Writes every family's files (families in parallel); returns them ready to ingest.
pub fn write_families(
    db: &Db,
    target: &LoadTarget,
    mut runs: RunSet,
    stats: &mut LoadStats,
    prog: &mut Progress,
    sink: &dyn ProgressSink,
) -> Result<Vec<IngestFiles>, LoadError> {
    let mems = std::mem::take(&mut runs.mem);
    let spilled = std::mem::take(&mut runs.spilled);
    let written = AtomicU64::new(0);
    let base = *prog;
    let results: Vec<Result<(IngestFiles, u64), LoadError>> = mems
        .into_par_iter()
        .zip(spilled.into_par_iter())
        .enumerate()
        .map(|(f, (mut mem, spills))| {
            mem.sort();
            let mut w = db.ingest_writer(&target.families[f].1)?;
            let mut counter = Counter {
                written: &written,
                base,
                sink,
                pending: 0,
            };
            let n = if spills.is_empty() {
                write_mem_run(&mem, &mut w, &mut counter)?
            } else {
                merge_runs(mem, spills, &mut w, &mut counter)?
            };
            Ok((w.finish()?, n))
        })
        .collect();
    let mut sets = Vec::with_capacity(results.len());
    for r in results {
        let (files, n) = r?;
        stats.cells_written += n;
        stats.files_written += files.file_count() as u64;
        stats.bytes_written += files.bytes();
        sets.push(files);
    }
    prog.cells_written = written.load(Ordering::Relaxed);
    Ok(sets)
}

/// The common case: everything fit in memory, one sorted run.
fn write_mem_run(
    mem: &MemRun,
    w: &mut IngestWriter,
    counter: &mut Counter<'_>,
) -> Result<u64, LoadError> {
    let mut n = 0;
    let es = &mem.entries;
    for (i, e) in es.iter().enumerate() {
        if es.get(i + 1).is_some_and(|next| mem.same_key(e, next)) {
            continue; // a later line has the same key: it wins
        }
        w.put(mem.key(e), mem.value(e))?;
        n += 1;
        counter.tick();
    }
    Ok(n)
}

/// Spilled runs (oldest first) and the in-memory run (newest), merged.
fn merge_runs(
    mut mem: MemRun,
    spills: Vec<std::path::PathBuf>,
    w: &mut IngestWriter,
    counter: &mut Counter<'_>,
) -> Result<u64, LoadError> {
    let mut readers = Vec::with_capacity(spills.len());
    for p in spills {
        let mut r = SpillReader::open(p)?;
        if r.advance()? {
            readers.push(Some(r));
        } else {
            readers.push(None);
        }
    }
    let mem_src = readers.len();
    let entries = std::mem::take(&mut mem.entries);
    let mut mem_pos = 0usize;
    let mut pending: Option<(Vec<u8>, Vec<u8>)> = None;
    let mut n = 0;
    loop {
        // The source with the smallest head (a linear scan: runs are few).
        let mut best: Option<(usize, &[u8])> = None;
        for (i, r) in readers.iter().enumerate() {
            if let Some(r) = r {
                if best.is_none_or(|(bi, bk)| head_order((r.key(), i), (bk, bi)).is_lt()) {
                    best = Some((i, r.key()));
                }
            }
        }
        if let Some(e) = entries.get(mem_pos) {
            let k = mem.key(e);
            if best.is_none_or(|(bi, bk)| head_order((k, mem_src), (bk, bi)).is_lt()) {
                best = Some((mem_src, k));
            }
        }
        let Some((src, _)) = best else { break };
        let (key, value) = if src == mem_src {
            let e = &entries[mem_pos];
            (mem.key(e), mem.value(e))
        } else {
            let r = readers[src].as_ref().ok_or_else(|| {
                LoadError::InvalidArgument("internal: merge source vanished".into())
            })?;
            (r.key(), r.value())
        };
        match &mut pending {
            Some((pk, pv)) if pk.as_slice() == key => {
                pv.clear();
                pv.extend_from_slice(value);
            }
            _ => {
                if let Some((pk, pv)) = pending.take() {
                    w.put(&pk, &pv)?;
                    n += 1;
                    counter.tick();
                }
                pending = Some((key.to_vec(), value.to_vec()));
            }
        }
        if src == mem_src {
            mem_pos += 1;
        } else if let Some(r) = readers[src].as_mut() {
            if !r.advance()? {
                readers[src] = None;
            }
        }
    }
    if let Some((pk, pv)) = pending {
        w.put(&pk, &pv)?;
        n += 1;
        counter.tick();
    }
    Ok(n)
}
