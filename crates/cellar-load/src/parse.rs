//! Lines → cells, in parallel over chunks.

use std::path::Path;

use rayon::prelude::*;

use crate::input::{Chunk, ChunkReader};
use crate::run::{ChunkCells, RunSet};
use crate::{LoadError, LoadSpec, LoadStats, LoadTarget, Progress, ProgressSink};

/// Engine limits (`cellar_engine::types`), checked per cell so that a bad line is reported
/// with its line number instead of failing the whole load at SST-writing time.
const MAX_KEY_BYTES: usize = 64 * 1024;
const MAX_VALUE_BYTES: usize = 64 * 1024 * 1024;

/// How a file's columns map to the row, the timestamp and the families.
pub struct Layout {
    columns: usize,
    row: usize,
    timestamp: Option<usize>,
    /// Per column: the family index it feeds.
    family_of: Vec<Option<usize>>,
}

impl Layout {
    pub fn new(
        header: &[String],
        target: &LoadTarget,
        spec: &LoadSpec,
        file: &Path,
    ) -> Result<Layout, LoadError> {
        let bad = |reason: String| LoadError::BadHeader {
            file: file.to_path_buf(),
            reason,
        };
        let find = |name: &str, what: &str| {
            header.iter().position(|h| h == name).ok_or_else(|| {
                bad(format!(
                    "the {what} column '{name}' is not in the header (columns: {})",
                    header.join(", ")
                ))
            })
        };
        for (i, h) in header.iter().enumerate() {
            if h.is_empty() {
                return Err(bad(format!("header column {} has no name", i + 1)));
            }
            if header[..i].contains(h) {
                return Err(bad(format!("header names column '{h}' twice")));
            }
        }
        let row = match &spec.row_key_column {
            Some(c) => find(c, "row key")?,
            None => 0,
        };
        let timestamp = match &spec.timestamp_column {
            Some(c) => Some(find(c, "timestamp")?),
            None => None,
        };
        let mut family_of = Vec::with_capacity(header.len());
        for (i, h) in header.iter().enumerate() {
            if i == row || Some(i) == timestamp {
                family_of.push(None);
                continue;
            }
            match target.families.iter().position(|(f, _)| f == h) {
                Some(f) => family_of.push(Some(f)),
                None if spec.ignore_unknown_columns => family_of.push(None),
                None => {
                    let known: Vec<&str> =
                        target.families.iter().map(|(f, _)| f.as_str()).collect();
                    return Err(bad(format!(
                        "column '{h}' names no column family of the table (families: {}); \
                         add the family or use IGNORE_UNKNOWN_COLUMNS / --ignore-unknown-columns",
                        known.join(", ")
                    )));
                }
            }
        }
        Ok(Layout {
            columns: header.len(),
            row,
            timestamp,
            family_of,
        })
    }
}

/// What one chunk produced.
struct Parsed {
    cells: Vec<ChunkCells>,
    lines: u64,
    bad_lines: u64,
    cells_count: u64,
    key_bytes: u64,
    value_bytes: u64,
}

/// Reads, parses and queues every line of one file.
#[allow(clippy::too_many_arguments)]
pub fn parse_file(
    reader: &mut ChunkReader,
    layout: &Layout,
    target: &LoadTarget,
    spec: &LoadSpec,
    runs: &mut RunSet,
    stats: &mut LoadStats,
    prog: &mut Progress,
    sink: &dyn ProgressSink,
) -> Result<(), LoadError> {
    let batch = (rayon::current_num_threads() * 2).max(2);
    let base_read = prog.input_bytes_read;
    loop {
        let mut chunks: Vec<(Chunk, u64)> = Vec::with_capacity(batch);
        while chunks.len() < batch {
            match reader.next_chunk()? {
                Some(c) => {
                    // Timestamps are handed out in input order, one per line.
                    let ts = if layout.timestamp.is_none() {
                        (target.reserve_timestamps)(c.lines)
                    } else {
                        0
                    };
                    chunks.push((c, ts));
                }
                None => break,
            }
        }
        if chunks.is_empty() {
            return Ok(());
        }
        let families = target.families.len();
        let path = reader.path().to_path_buf();
        let results: Vec<Result<Parsed, LoadError>> = chunks
            .par_iter()
            .map(|(c, ts)| parse_chunk(c, *ts, layout, target, spec, &path, families))
            .collect();
        for r in results {
            let p = r?;
            stats.lines += p.lines;
            stats.bad_lines_skipped += p.bad_lines;
            stats.cells += p.cells_count;
            stats.key_bytes += p.key_bytes;
            stats.value_bytes += p.value_bytes;
            for (f, cells) in p.cells.into_iter().enumerate() {
                runs.add(f, cells);
            }
        }
        stats.input_bytes += chunks
            .iter()
            .map(|(c, _)| c.bytes.len() as u64)
            .sum::<u64>();
        if runs.mem_bytes() >= spec.memory_budget_bytes {
            runs.spill()?;
        }
        prog.input_bytes_read = base_read + reader.raw_bytes_read();
        prog.lines = stats.lines;
        prog.cells = stats.cells;
        sink.update(prog);
    }
}

fn parse_chunk(
    chunk: &Chunk,
    ts_base: u64,
    layout: &Layout,
    target: &LoadTarget,
    spec: &LoadSpec,
    file: &Path,
    families: usize,
) -> Result<Parsed, LoadError> {
    let mut out = Parsed {
        cells: (0..families)
            .map(|_| ChunkCells {
                arena: Vec::with_capacity(chunk.bytes.len() / families.max(1)),
                entries: Vec::new(),
            })
            .collect(),
        lines: 0,
        bad_lines: 0,
        cells_count: 0,
        key_bytes: 0,
        value_bytes: 0,
    };
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(b'\t')
        .quoting(false)
        .has_headers(false)
        .flexible(true)
        .from_reader(chunk.bytes.as_slice());
    let mut rec = csv::ByteRecord::new();
    loop {
        match rdr.read_byte_record(&mut rec) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                let line = e
                    .position()
                    .map_or(chunk.first_line, |p| chunk.first_line + p.line() - 1);
                return Err(LoadError::BadLine {
                    file: file.to_path_buf(),
                    line,
                    reason: e.to_string(),
                });
            }
        }
        let line_in_chunk = rec.position().map_or(0, |p| p.line() - 1);
        let line = chunk.first_line + line_in_chunk;
        out.lines += 1;
        match check_line(&rec, layout) {
            Ok(()) => {}
            Err(reason) if spec.skip_bad_lines => {
                let _ = reason;
                out.bad_lines += 1;
                continue;
            }
            Err(reason) => {
                return Err(LoadError::BadLine {
                    file: file.to_path_buf(),
                    line,
                    reason,
                })
            }
        }
        let ts = match layout.timestamp {
            Some(i) => match parse_timestamp(&rec[i]) {
                Some(t) => t,
                None if spec.skip_bad_lines => {
                    out.bad_lines += 1;
                    continue;
                }
                None => {
                    return Err(LoadError::BadLine {
                        file: file.to_path_buf(),
                        line,
                        reason: format!(
                            "bad timestamp '{}': expected 'YYYY-MM-DD HH:MM:SS' or nanoseconds since the epoch",
                            String::from_utf8_lossy(&rec[i])
                        ),
                    })
                }
            },
            None => ts_base + line_in_chunk,
        };
        let row = &rec[layout.row];
        for (col, fam) in layout.family_of.iter().enumerate() {
            let Some(f) = fam else { continue };
            let value = &rec[col];
            if value.is_empty() {
                continue;
            }
            let cells = &mut out.cells[*f];
            let start = cells.arena.len();
            (target.encode_key)(row, b"", ts, &mut cells.arena);
            cells.push(start, value);
            out.cells_count += 1;
            out.key_bytes += row.len() as u64;
            out.value_bytes += value.len() as u64;
        }
    }
    Ok(out)
}

/// Why a line cannot be loaded, if it cannot.
fn check_line(rec: &csv::ByteRecord, layout: &Layout) -> Result<(), String> {
    if rec.len() != layout.columns {
        return Err(format!(
            "expected {} tab-separated fields (as in the header), found {}",
            layout.columns,
            rec.len()
        ));
    }
    let row = &rec[layout.row];
    if row.is_empty() {
        return Err("the row key field is empty".into());
    }
    if row.len() > MAX_KEY_BYTES / 2 {
        return Err(format!(
            "row key of {} bytes is over the limit of {} bytes",
            row.len(),
            MAX_KEY_BYTES / 2
        ));
    }
    for (i, f) in rec.iter().enumerate() {
        if f.len() > MAX_VALUE_BYTES {
            return Err(format!(
                "field {} is {} bytes, over the value limit of {MAX_VALUE_BYTES} bytes",
                i + 1,
                f.len()
            ));
        }
    }
    Ok(())
}

/// `YYYY-MM-DD HH:MM:SS[.fraction]` (UTC) or an integer count of nanoseconds since the epoch.
pub fn parse_timestamp(s: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(s).ok()?.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok();
    }
    let (date, time) = s.split_once([' ', 'T'])?;
    let mut d = date.split('-');
    let (y, m, day): (i64, u32, u32) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    if d.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let (hms, frac) = match time.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (time, None),
    };
    let mut t = hms.split(':');
    let (hh, mm, ss): (u64, u64, u64) = (
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
    );
    if t.next().is_some() || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    let nanos = match frac {
        Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            f.parse::<u64>().ok()? * 10u64.pow(9 - f.len() as u32)
        }
        Some(_) => return None,
        None => 0,
    };
    let days = days_from_civil(y, m, day);
    if days < 0 {
        return None;
    }
    let secs = days as u64 * 86_400 + hh * 3600 + mm * 60 + ss;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_as_utc_nanoseconds() {
        assert_eq!(parse_timestamp(b"1970-01-01 00:00:00"), Some(0));
        assert_eq!(
            parse_timestamp(b"2006-03-01 07:17:12"),
            Some(1_141_197_432 * 1_000_000_000)
        );
        assert_eq!(
            parse_timestamp(b"2006-03-01 07:17:12.5"),
            Some(1_141_197_432_500_000_000)
        );
        assert_eq!(parse_timestamp(b"12345"), Some(12345));
        for bad in [
            "",
            "2006-13-01 00:00:00",
            "2006-03-01",
            "x",
            "2006-03-01 25:00:00",
            "1969-12-31 23:59:59",
        ] {
            assert_eq!(parse_timestamp(bad.as_bytes()), None, "{bad}");
        }
    }
}
