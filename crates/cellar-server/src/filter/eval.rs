//! A parsed filter as a tree, and its evaluation over one row.
//!
//! Every node looks at the row's original cells and answers an [`Outcome`]: whether it
//! lets the row through, and for each cell whether it keeps it and what it makes of its
//! value. Parents combine their children's outcomes (`AND`: all, `OR`: any), so a node's
//! answer never depends on its siblings' order. After the whole tree has decided, every
//! node learns whether the row was returned ([`Node::commit`]), which is when PageFilter
//! counts it.

use cellar_table::Cell;

use super::compare::Compare;

/// A filter expression with its per-scan state (PageFilter's count, WHILE's stop).
#[derive(Debug, Clone)]
pub enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    /// `SKIP f`: the row is dropped whole unless `f` keeps every one of its cells.
    Skip(Box<Node>),
    /// `WHILE f`: the scan ends at the first row `f` would not keep whole.
    While {
        inner: Box<Node>,
        failed: bool,
    },
    Leaf(Leaf),
}

/// One named filter.
#[derive(Debug, Clone)]
pub enum Leaf {
    /// `PrefixFilter('p')`: rows whose key starts with `p`.
    Prefix(Vec<u8>),
    /// `KeyOnlyFilter([lenAsValue])`: every cell, its value emptied (or, with `true`,
    /// replaced by its length as a 4-byte big-endian integer).
    KeyOnly {
        length_as_value: bool,
    },
    /// `FirstKeyOnlyFilter()`: the first cell of each row.
    FirstKeyOnly,
    /// `ColumnPrefixFilter('q')`, `MultipleColumnPrefixFilter('a', 'b', ...)`: cells whose
    /// qualifier starts with one of the prefixes.
    ColumnPrefix(Vec<Vec<u8>>),
    SingleColumnValue(SingleColumnValue),
    /// `PageFilter(n)`: the first `n` rows returned through this node.
    Page {
        limit: u64,
        returned: u64,
        passed_this_row: bool,
    },
    /// `RowFilter(op, 'cmp')`: rows whose key compares.
    Row(Compare),
    /// `QualifierFilter(op, 'cmp')`: cells whose qualifier compares.
    Qualifier(Compare),
    /// `ValueFilter(op, 'cmp')`: cells whose value compares.
    Value(Compare),
}

/// `SingleColumnValueFilter('family', 'qualifier', op, 'cmp' [, filterIfMissing,
/// latestVersionOnly])`: rows whose `family:qualifier` value compares; the row keeps all
/// its cells.
#[derive(Debug, Clone)]
pub struct SingleColumnValue {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub compare: Compare,
    /// Drop rows without the column (otherwise they pass).
    pub filter_if_missing: bool,
    /// Test only the newest version; otherwise any version that compares lets the row in.
    pub latest_version_only: bool,
}

/// What a cell's value becomes when returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueChange {
    Unchanged,
    Emptied,
    /// Replaced by this length as a 4-byte big-endian integer.
    Length(u32),
}

impl ValueChange {
    /// `self` then `next`, for a value of `original_len` bytes.
    fn then(self, next: ValueChange, original_len: usize) -> ValueChange {
        match next {
            ValueChange::Unchanged => self,
            ValueChange::Emptied => ValueChange::Emptied,
            ValueChange::Length(_) => ValueChange::Length(match self {
                ValueChange::Unchanged => length_u32(original_len),
                ValueChange::Emptied => 0,
                ValueChange::Length(_) => 4,
            }),
        }
    }
}

fn length_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// One node's decision about one row.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub row_passes: bool,
    /// Per cell: `None` drops it, `Some(change)` keeps it so changed.
    pub cells: Vec<Option<ValueChange>>,
}

impl Outcome {
    fn all(passes: bool, n: usize) -> Outcome {
        let keep = if passes {
            Some(ValueChange::Unchanged)
        } else {
            None
        };
        Outcome {
            row_passes: passes,
            cells: vec![keep; n],
        }
    }

    fn per_cell(n: usize, mut keep: impl FnMut(usize) -> bool) -> Outcome {
        Outcome {
            row_passes: true,
            cells: (0..n)
                .map(|i| keep(i).then_some(ValueChange::Unchanged))
                .collect(),
        }
    }

    /// Whether the row passes and keeps every cell (what SKIP and WHILE ask).
    fn whole(&self) -> bool {
        self.row_passes && self.cells.iter().all(Option::is_some)
    }

    /// Whether the row is returned: it passes and keeps a cell.
    pub fn returns_row(&self) -> bool {
        self.row_passes && self.cells.iter().any(Option::is_some)
    }

    /// Drops and changes `cells` as decided.
    pub fn apply(&self, cells: &mut Vec<Cell>) {
        let mut fate = self.cells.iter();
        cells.retain_mut(|cell| match fate.next().copied().flatten() {
            None => false,
            Some(change) => {
                match change {
                    ValueChange::Unchanged => {}
                    ValueChange::Emptied => cell.value.clear(),
                    ValueChange::Length(n) => cell.value = n.to_be_bytes().to_vec(),
                }
                true
            }
        });
    }
}

impl Node {
    /// Decides about a row (`cells` as read, in scan order).
    pub fn eval(&mut self, row: &[u8], cells: &[Cell]) -> Outcome {
        if self.exhausted() {
            return Outcome::all(false, cells.len());
        }
        match self {
            Node::And(children) => and(children.iter_mut().map(|c| c.eval(row, cells)), cells),
            Node::Or(children) => or(children.iter_mut().map(|c| c.eval(row, cells)), cells),
            Node::Skip(inner) => {
                let out = inner.eval(row, cells);
                if out.whole() {
                    out
                } else {
                    Outcome::all(false, cells.len())
                }
            }
            Node::While { inner, failed } => {
                let out = inner.eval(row, cells);
                if out.whole() {
                    out
                } else {
                    *failed = true;
                    Outcome::all(false, cells.len())
                }
            }
            Node::Leaf(leaf) => leaf.eval(row, cells),
        }
    }

    /// Tells the tree whether the row it just decided about was returned.
    pub fn commit(&mut self, returned: bool) {
        match self {
            Node::And(children) | Node::Or(children) => {
                children.iter_mut().for_each(|c| c.commit(returned))
            }
            Node::Skip(inner) | Node::While { inner, .. } => inner.commit(returned),
            Node::Leaf(Leaf::Page {
                returned: count,
                passed_this_row,
                ..
            }) => {
                if returned && *passed_this_row {
                    *count += 1;
                }
                *passed_this_row = false;
            }
            Node::Leaf(_) => {}
        }
    }

    /// Whether no later row can pass (HBase's `filterAllRemaining`): the scan may end.
    pub fn exhausted(&self) -> bool {
        match self {
            Node::And(children) => children.iter().any(Node::exhausted),
            Node::Or(children) => children.iter().all(Node::exhausted),
            Node::Skip(inner) => inner.exhausted(),
            Node::While { inner, failed } => *failed || inner.exhausted(),
            Node::Leaf(Leaf::Page {
                limit, returned, ..
            }) => returned >= limit,
            Node::Leaf(_) => false,
        }
    }

    /// Whether a WHILE is anywhere in the tree (it sees every row, so a scan must not
    /// skip rows on its behalf).
    pub fn has_while(&self) -> bool {
        match self {
            Node::And(children) | Node::Or(children) => children.iter().any(Node::has_while),
            Node::Skip(inner) => inner.has_while(),
            Node::While { .. } => true,
            Node::Leaf(_) => false,
        }
    }

    /// The longest row prefix every returned row must have: a PrefixFilter at the top or
    /// under ANDs.
    pub fn required_prefix(&self) -> Option<&[u8]> {
        match self {
            Node::Leaf(Leaf::Prefix(p)) => Some(p),
            Node::And(children) => children
                .iter()
                .filter_map(Node::required_prefix)
                .max_by_key(|p| p.len()),
            _ => None,
        }
    }
}

/// MUST_PASS_ALL: the row passes if every child passes it; a cell is kept if every child
/// keeps it, its value changed by each child in order.
fn and(outcomes: impl Iterator<Item = Outcome>, cells: &[Cell]) -> Outcome {
    let mut acc = Outcome::all(true, cells.len());
    for out in outcomes {
        acc.row_passes &= out.row_passes;
        for ((slot, theirs), cell) in acc.cells.iter_mut().zip(out.cells).zip(cells) {
            *slot = match (*slot, theirs) {
                (Some(mine), Some(theirs)) => Some(mine.then(theirs, cell.value.len())),
                _ => None,
            };
        }
    }
    acc
}

/// MUST_PASS_ONE: the row passes if any child passes it; a cell is kept if a child that
/// passes the row keeps it, its value changed by each such child in order.
fn or(outcomes: impl Iterator<Item = Outcome>, cells: &[Cell]) -> Outcome {
    let mut acc = Outcome::all(false, cells.len());
    for out in outcomes.filter(|o| o.row_passes) {
        acc.row_passes = true;
        for ((slot, theirs), cell) in acc.cells.iter_mut().zip(out.cells).zip(cells) {
            *slot = match (*slot, theirs) {
                (Some(mine), Some(theirs)) => Some(mine.then(theirs, cell.value.len())),
                (mine, None) => mine,
                (None, theirs) => theirs,
            };
        }
    }
    acc
}

impl Leaf {
    fn eval(&mut self, row: &[u8], cells: &[Cell]) -> Outcome {
        let n = cells.len();
        match self {
            Leaf::Prefix(prefix) => Outcome::all(row.starts_with(prefix), n),
            Leaf::KeyOnly { length_as_value } => Outcome {
                row_passes: true,
                cells: cells
                    .iter()
                    .map(|c| {
                        Some(if *length_as_value {
                            ValueChange::Length(length_u32(c.value.len()))
                        } else {
                            ValueChange::Emptied
                        })
                    })
                    .collect(),
            },
            Leaf::FirstKeyOnly => Outcome::per_cell(n, |i| i == 0),
            Leaf::ColumnPrefix(prefixes) => Outcome::per_cell(n, |i| {
                prefixes.iter().any(|p| cells[i].qualifier.starts_with(p))
            }),
            Leaf::SingleColumnValue(scv) => Outcome::all(scv.passes(cells), n),
            Leaf::Page {
                limit,
                returned,
                passed_this_row,
            } => {
                *passed_this_row = returned < limit;
                Outcome::all(*passed_this_row, n)
            }
            Leaf::Row(compare) => Outcome::all(compare.matches(row), n),
            Leaf::Qualifier(compare) => {
                Outcome::per_cell(n, |i| compare.matches(&cells[i].qualifier))
            }
            Leaf::Value(compare) => Outcome::per_cell(n, |i| compare.matches(&cells[i].value)),
        }
    }
}

impl SingleColumnValue {
    fn passes(&self, cells: &[Cell]) -> bool {
        // Versions of a column arrive newest first.
        let mut versions = cells.iter().filter(|c| {
            c.family.as_bytes() == self.family.as_slice() && c.qualifier == self.qualifier
        });
        let Some(newest) = versions.next() else {
            return !self.filter_if_missing;
        };
        self.compare.matches(&newest.value)
            || (!self.latest_version_only && versions.any(|c| self.compare.matches(&c.value)))
    }
}
