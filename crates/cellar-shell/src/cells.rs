//! INSERT, SELECT and DELETE: the statements on cells (docs/hql.md, section 4).
//!
//! A statement that writes is one atomic batch: every cell or column it names is checked
//! before the first mutation is buffered, because a `TableWriter` writes what it holds when
//! it is dropped, even after a failed put.

use std::io::Write;
use std::ops::Bound;

use cellar_hql::{ColumnRef, Columns, Delete, Insert, RowPredicate, Select};
use cellar_table::{ColumnSelector, RowSelection, ScanSpec, Table, TimeRange, WriterOptions};

use super::exec::{format_cell, ExecError, Session};

/// SELECT output is written in pieces of about this size.
const OUTPUT_CHUNK_BYTES: usize = 60 << 10;

/// A whole-table SELECT is cut into this many row ranges, formatted in parallel and written
/// in order (formatting costs as much as reading: one core cannot keep up with the scan).
const SELECT_PIECES: usize = 256;

/// Formats the cells `scanner` returns into `buf`, handing full chunks to `emit`.
/// `count_here`: versions per column to keep (counted here); `remaining`: cells to print.
fn render(
    scanner: &mut cellar_table::Scanner,
    display_timestamps: bool,
    count_here: Option<u32>,
    remaining: &mut usize,
    buf: &mut Vec<u8>,
    emit: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<(), ExecError> {
    // The column of the previous cell and how many of its versions were printed.
    let mut column: Option<(Vec<u8>, std::sync::Arc<str>, Vec<u8>)> = None;
    let mut versions = 0u32;
    let mut line = String::with_capacity(256);
    while *remaining > 0 {
        let Some(cell) = scanner.next_ref() else {
            break;
        };
        let cell = cell?;
        if let Some(max) = count_here {
            let same = column.as_ref().is_some_and(|(r, f, q)| {
                r.as_slice() == cell.row && **f == **cell.family && q.as_slice() == cell.qualifier
            });
            if !same {
                column = Some((
                    cell.row.to_vec(),
                    cell.family.clone(),
                    cell.qualifier.to_vec(),
                ));
                versions = 0;
            }
            if versions >= max {
                continue;
            }
            versions += 1;
        }
        *remaining -= 1;
        line.clear();
        if display_timestamps {
            line.push_str(&cellar_hql::format_timestamp(cell.timestamp));
            line.push('\t');
        }
        format_cell(&mut line, cell.row, cell.family, cell.qualifier, cell.value);
        buf.extend_from_slice(line.as_bytes());
        if buf.len() >= OUTPUT_CHUNK_BYTES {
            emit(buf)?;
            buf.clear();
        }
    }
    Ok(())
}

/// A SELECT of the whole table: row ranges scanned and formatted in parallel at one
/// snapshot, written in row order.
fn select_in_pieces(
    table: &Table,
    mut spec: ScanSpec,
    snapshot: cellar_engine::Snapshot,
    display_timestamps: bool,
    out: &mut dyn Write,
) -> Result<(), ExecError> {
    use rayon::prelude::*;
    spec.snapshot = Some(snapshot);
    let splits = table.split_rows(SELECT_PIECES)?;
    let mut pieces = Vec::with_capacity(splits.len() + 1);
    let mut start = Bound::Unbounded;
    for s in splits {
        pieces.push((start, Bound::Excluded(s.clone())));
        start = Bound::Included(s);
    }
    pieces.push((start, Bound::Unbounded));
    // A window of pieces at a time bounds the formatted text held in memory.
    let window = (rayon::current_num_threads() * 4).max(2);
    for group in pieces.chunks(window) {
        let texts: Vec<Result<Vec<u8>, ExecError>> = group
            .par_iter()
            .map(|(start, end)| {
                let piece = ScanSpec {
                    rows: RowSelection::Range {
                        start: start.clone(),
                        end: end.clone(),
                    },
                    ..spec.clone()
                };
                let mut text = Vec::new();
                let mut buf = Vec::with_capacity(OUTPUT_CHUNK_BYTES + 4096);
                let mut scanner = table.scan(piece)?;
                let mut unlimited = usize::MAX;
                render(
                    &mut scanner,
                    display_timestamps,
                    None,
                    &mut unlimited,
                    &mut buf,
                    &mut |chunk: &[u8]| {
                        text.extend_from_slice(chunk);
                        Ok(())
                    },
                )?;
                text.extend_from_slice(&buf);
                Ok(text)
            })
            .collect();
        for t in texts {
            out.write_all(&t?)?;
        }
    }
    Ok(())
}

impl Session<'_> {
    pub(super) fn insert(&self, ins: &Insert) -> Result<(), ExecError> {
        let table = self.store.table(&ins.table)?;
        for c in &ins.cells {
            table.check_put(&c.row, &c.family, &c.qualifier, c.timestamp, &c.value)?;
        }
        let mut w = table.writer(WriterOptions {
            // One batch, however large the statement.
            buffer_size_bytes: usize::MAX,
            durability: self.durability,
        });
        for c in &ins.cells {
            w.put(&c.row, &c.family, &c.qualifier, c.timestamp, &c.value)?;
        }
        w.flush()?;
        Ok(())
    }

    pub(super) fn select(&self, sel: &Select, out: &mut dyn Write) -> Result<(), ExecError> {
        let table = self.store.table(&sel.table)?;
        // SELECT's MAX_VERSIONS narrows each family's own; the scan's override replaces it.
        // So the override is passed only when no family read keeps fewer versions, and
        // otherwise the versions are counted here, over what each family lets through.
        let narrows_every_family = sel.max_versions.is_some_and(|n| {
            families_read(&table, &sel.columns)
                .all(|f| f.options.max_versions == 0 || f.options.max_versions >= n)
        });
        let count_here = sel.max_versions.filter(|_| !narrows_every_family);
        let limit = sel.limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        let spec = ScanSpec {
            rows: row_selection(&sel.row),
            columns: selectors(&sel.columns),
            time_range: time_range(&sel.timestamp),
            max_versions: sel.max_versions.filter(|_| narrows_every_family),
            limit: if count_here.is_some() { None } else { limit },
            reverse: sel.reverse,
            snapshot: None,
        };
        let mut remaining = limit.unwrap_or(usize::MAX);
        let whole_table = matches!(spec.rows, RowSelection::All)
            && limit.is_none()
            && count_here.is_none()
            && !spec.reverse;
        if whole_table {
            let snapshot = self.store.db().snapshot();
            return select_in_pieces(&table, spec, snapshot, sel.display_timestamps, out);
        }
        let mut buf = Vec::with_capacity(OUTPUT_CHUNK_BYTES + 4096);
        let mut scanner = table.scan(spec)?;
        render(
            &mut scanner,
            sel.display_timestamps,
            count_here,
            &mut remaining,
            &mut buf,
            &mut |chunk: &[u8]| out.write_all(chunk),
        )?;
        out.write_all(&buf)?;
        Ok(())
    }

    pub(super) fn delete(&self, d: &Delete) -> Result<(), ExecError> {
        let table = self.store.table(&d.table)?;
        if let Columns::List(cols) = &d.columns {
            for c in cols {
                let qualifier = c.qualifier.as_deref().unwrap_or_default();
                table.check_delete(&d.row, Some(&c.family), qualifier)?;
            }
        } else {
            table.check_delete(&d.row, None, b"")?;
        }
        let mut w = table.writer(WriterOptions {
            buffer_size_bytes: usize::MAX,
            durability: self.durability,
        });
        match (&d.columns, d.version) {
            (Columns::All, None) => w.delete_row(&d.row)?,
            (Columns::List(cols), None) => {
                for c in cols {
                    match &c.qualifier {
                        None => w.delete_family(&d.row, &c.family)?,
                        Some(q) => w.delete_column(&d.row, &c.family, q)?,
                    }
                }
            }
            (cols, Some(ts)) => {
                // One version of every matching column: find the columns that have it.
                let spec = ScanSpec {
                    rows: RowSelection::Exact(d.row.clone()),
                    columns: selectors(cols),
                    time_range: TimeRange {
                        min: ts,
                        max: ts.saturating_add(1),
                    },
                    max_versions: Some(0),
                    ..ScanSpec::default()
                };
                for c in table.scan(spec)? {
                    let c = c?;
                    w.delete_version(&c.row, &c.family, &c.qualifier, ts)?;
                }
            }
        }
        w.flush()?;
        Ok(())
    }
}

/// The schema's families a statement on `columns` reads.
fn families_read<'t>(
    table: &'t Table,
    columns: &'t Columns,
) -> impl Iterator<Item = &'t cellar_table::FamilySchema> {
    table
        .schema()
        .families
        .iter()
        .filter(move |f| match columns {
            Columns::All => true,
            Columns::List(l) => l.iter().any(|c| c.family == f.name),
        })
}

fn row_selection(row: &RowPredicate) -> RowSelection {
    match row {
        RowPredicate::All => RowSelection::All,
        RowPredicate::Exact(r) => RowSelection::Exact(r.clone()),
        RowPredicate::Range { start, end } => RowSelection::Range {
            start: start.clone(),
            end: end.clone(),
        },
        RowPredicate::Prefix(p) => RowSelection::Prefix(p.clone()),
    }
}

fn selectors(cols: &Columns) -> Vec<ColumnSelector> {
    match cols {
        Columns::All => Vec::new(),
        Columns::List(l) => l.iter().map(selector).collect(),
    }
}

fn selector(c: &ColumnRef) -> ColumnSelector {
    match &c.qualifier {
        None => ColumnSelector::Family(c.family.clone()),
        Some(q) => ColumnSelector::Column {
            family: c.family.clone(),
            qualifier: q.clone(),
        },
    }
}

fn time_range((start, end): &(Bound<u64>, Bound<u64>)) -> TimeRange {
    TimeRange {
        min: match start {
            Bound::Included(t) => *t,
            Bound::Excluded(t) => t.saturating_add(1),
            Bound::Unbounded => 0,
        },
        max: match end {
            Bound::Included(t) => t.saturating_add(1),
            Bound::Excluded(t) => *t,
            Bound::Unbounded => u64::MAX,
        },
    }
}
