//! Lines → cells, in parallel over chunks.

use std::path::Path;

// The engine's limits, checked per cell so that a bad line is reported with its line number
// instead of failing the whole load at SST-writing time.
use cellar_engine::{MAX_KEY_LEN as MAX_KEY_BYTES, MAX_VALUE_LEN as MAX_VALUE_BYTES};
use rayon::prelude::*;

use crate::input::{Chunk, ChunkReader};
use crate::run::{ChunkCells, RunSet};
use crate::{LoadError, LoadSpec, LoadStats, LoadTarget, Progress, ProgressSink};

/// How a file's columns become cells.
pub enum Layout {
    /// A header of named columns (the AOL files): one row per line, a cell per non-empty
    /// field of a column that names a family (`family` or `family:qualifier`).
    Wide {
        columns: usize,
        row: usize,
        timestamp: Option<usize>,
        /// Per column: the family index and qualifier it feeds.
        cell_of: Vec<Option<(usize, Vec<u8>)>>,
    },
    /// What DUMP TABLE writes: `#[timestamp<TAB>]row<TAB>column<TAB>value`, a cell per line.
    Cells { timestamp: Option<usize> },
}

/// `family` or `family:qualifier`.
fn split_column(c: &[u8]) -> (&[u8], &[u8]) {
    match c.iter().position(|b| *b == b':') {
        Some(i) => (&c[..i], &c[i + 1..]),
        None => (c, &[]),
    }
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
        let h: Vec<&str> = header.iter().map(String::as_str).collect();
        match h.as_slice() {
            ["row", "column", "value"] => return Ok(Layout::Cells { timestamp: None }),
            ["timestamp", "row", "column", "value"] => {
                return Ok(Layout::Cells { timestamp: Some(0) })
            }
            _ => {}
        }
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
        let mut cell_of = Vec::with_capacity(header.len());
        for (i, h) in header.iter().enumerate() {
            if i == row || Some(i) == timestamp {
                cell_of.push(None);
                continue;
            }
            let (family, qualifier) = split_column(h.as_bytes());
            match target
                .families
                .iter()
                .position(|(f, _)| f.as_bytes() == family)
            {
                Some(f) => cell_of.push(Some((f, qualifier.to_vec()))),
                None if spec.ignore_unknown_columns => cell_of.push(None),
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
        Ok(Layout::Wide {
            columns: header.len(),
            row,
            timestamp,
            cell_of,
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
                    let ts = if layout.auto_timestamps() {
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

// Long by design: the per-line loop of the parallel parse (the load's hot path); its
// state (reader, record, arenas, counters) is shared by every step of a line, so phases
// would pass it all around or allocate per line.
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
    let mut scratch = Scratch::default();
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
        out.lines += 1;
        let auto_ts = ts_base + line_in_chunk;
        let parsed = match layout {
            Layout::Wide {
                columns,
                row,
                timestamp,
                cell_of,
            } => wide_line(
                &rec,
                (*columns, *row, *timestamp, cell_of),
                auto_ts,
                target,
                &mut out,
                &mut scratch,
            ),
            Layout::Cells { timestamp } => cells_line(
                &rec,
                *timestamp,
                auto_ts,
                target,
                spec,
                &mut out,
                &mut scratch,
            ),
        };
        if let Err(reason) = parsed {
            if spec.skip_bad_lines {
                out.bad_lines += 1;
                continue;
            }
            return Err(LoadError::BadLine {
                file: file.to_path_buf(),
                line: chunk.first_line + line_in_chunk,
                reason,
            });
        }
    }
    Ok(out)
}

/// Buffers for fields that hold escapes.
#[derive(Default)]
struct Scratch {
    row: Vec<u8>,
    qualifier: Vec<u8>,
    value: Vec<u8>,
}

/// `field` with `\` escapes (as DUMP and SELECT write them) decoded; borrowed when it has
/// none, which is the common case.
fn unescaped<'a>(field: &'a [u8], buf: &'a mut Vec<u8>) -> &'a [u8] {
    if !field.contains(&b'\\') {
        return field;
    }
    *buf = cellar_text::unescape_output(field);
    buf
}

impl Parsed {
    fn add_cell(&mut self, target: &LoadTarget, f: usize, row: &[u8], q: &[u8], ts: u64, v: &[u8]) {
        let cells = &mut self.cells[f];
        let start = cells.arena.len();
        (target.encode_key)(row, q, ts, &mut cells.arena);
        cells.push(start, v);
        self.cells_count += 1;
        self.key_bytes += row.len() as u64;
        self.value_bytes += v.len() as u64;
    }
}

type WideColumns<'a> = (usize, usize, Option<usize>, &'a [Option<(usize, Vec<u8>)>]);

/// A wide line: checked whole first, so that a bad line adds no cell.
fn wide_line(
    rec: &csv::ByteRecord,
    (columns, row_col, ts_col, cell_of): WideColumns<'_>,
    auto_ts: u64,
    target: &LoadTarget,
    out: &mut Parsed,
    s: &mut Scratch,
) -> Result<(), String> {
    if rec.len() > columns {
        return Err(format!(
            "{} tab-separated fields, the header has {columns}",
            rec.len()
        ));
    }
    let row = unescaped(rec.get(row_col).unwrap_or_default(), &mut s.row);
    check_row(row)?;
    let ts = match ts_col {
        Some(i) => timestamp_field(rec.get(i).unwrap_or_default())?,
        None => auto_ts,
    };
    for (i, field) in rec.iter().enumerate() {
        if field.len() > MAX_VALUE_BYTES {
            return Err(format!(
                "field {} is {} bytes, over the value limit of {MAX_VALUE_BYTES} bytes",
                i + 1,
                field.len()
            ));
        }
    }
    for (i, field) in rec.iter().enumerate() {
        let Some((f, qualifier)) = &cell_of[i] else {
            continue;
        };
        if field.is_empty() {
            continue;
        }
        let value = unescaped(field, &mut s.value);
        out.add_cell(target, *f, row, qualifier, ts, value);
    }
    Ok(())
}

/// A line of DUMP's cell shape: `[timestamp<TAB>]row<TAB>family[:qualifier]<TAB>value`.
fn cells_line(
    rec: &csv::ByteRecord,
    ts_col: Option<usize>,
    auto_ts: u64,
    target: &LoadTarget,
    spec: &LoadSpec,
    out: &mut Parsed,
    s: &mut Scratch,
) -> Result<(), String> {
    let base = usize::from(ts_col.is_some());
    if rec.len() != base + 3 {
        return Err(format!(
            "{} tab-separated fields, a cell line has {}",
            rec.len(),
            base + 3
        ));
    }
    let ts = match ts_col {
        Some(i) => timestamp_field(&rec[i])?,
        None => auto_ts,
    };
    let row = unescaped(&rec[base], &mut s.row);
    check_row(row)?;
    let (family, qualifier) = split_column(&rec[base + 1]);
    let qualifier = unescaped(qualifier, &mut s.qualifier);
    let Some(f) = target
        .families
        .iter()
        .position(|(n, _)| n.as_bytes() == family)
    else {
        if spec.ignore_unknown_columns {
            return Ok(());
        }
        return Err(format!(
            "column family '{}' is not in the table",
            String::from_utf8_lossy(family)
        ));
    };
    if rec[base + 2].len() > MAX_VALUE_BYTES {
        return Err(format!("value over the limit of {MAX_VALUE_BYTES} bytes"));
    }
    let value = unescaped(&rec[base + 2], &mut s.value);
    out.add_cell(target, f, row, qualifier, ts, value);
    Ok(())
}

fn check_row(row: &[u8]) -> Result<(), String> {
    if row.is_empty() {
        return Err("the row key field is empty".into());
    }
    // The cell key adds escapes and a timestamp to the row: keep room for them.
    if row.len() > MAX_KEY_BYTES / 2 {
        return Err(format!(
            "row key of {} bytes is over the limit of {} bytes",
            row.len(),
            MAX_KEY_BYTES / 2
        ));
    }
    Ok(())
}

fn timestamp_field(field: &[u8]) -> Result<u64, String> {
    parse_timestamp(field).ok_or_else(|| {
        format!(
            "bad timestamp '{}': expected 'YYYY-MM-DD HH:MM:SS[.fraction]' (UTC) or nanoseconds since the epoch",
            String::from_utf8_lossy(field)
        )
    })
}

impl Layout {
    /// Lines without a timestamp field get one from the oracle.
    pub fn auto_timestamps(&self) -> bool {
        match self {
            Layout::Wide { timestamp, .. } | Layout::Cells { timestamp } => timestamp.is_none(),
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS[.fraction]` (UTC) or an integer count of nanoseconds since the epoch.
pub fn parse_timestamp(s: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(s).ok()?.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok();
    }
    cellar_text::parse_timestamp(s).ok()
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
