//! Bulk load into a table of cells: [`load`] with the table's families and cell-key encoding.

use std::sync::Arc;

use cellar_table::cell_key::encode_cell_key;
use cellar_table::{reserve_timestamps, Table};

use crate::{load, LoadError, LoadSpec, LoadStats, LoadTarget, ProgressSink};

/// Loads TSV files whose header columns name `table`'s families (see [`load`]): every cell
/// of the load becomes visible at once, or none does. Cells get an empty qualifier and,
/// without a timestamp column, one fresh timestamp per line from the process's timestamp
/// oracle.
pub fn load_into_table(
    table: &Table,
    spec: &LoadSpec,
    progress: &dyn ProgressSink,
) -> Result<LoadStats, LoadError> {
    let target = LoadTarget {
        families: table
            .family_keyspaces()
            .map(|(name, keyspace)| (name.to_string(), keyspace.clone()))
            .collect(),
        encode_key: encode_cell_key,
        reserve_timestamps: Arc::new(reserve_timestamps),
    };
    load(table.db(), &target, spec, progress)
}
