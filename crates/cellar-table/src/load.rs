//! Bulk load into a table: `cellar_load` with this table's families and cell-key encoding.

use std::sync::Arc;

use cellar_load::{LoadError, LoadSpec, LoadStats, LoadTarget, ProgressSink};

use crate::cell_key::encode_cell_key;
use crate::table::Table;
use crate::timestamp::reserve_timestamps;

impl Table {
    /// Loads TSV files whose header columns name this table's families (see
    /// `cellar_load::load`): every cell of the load becomes visible at once, or none does.
    /// Cells get an empty qualifier and, without a timestamp column, one fresh timestamp per
    /// line from the process's timestamp oracle.
    pub fn bulk_load(
        &self,
        spec: &LoadSpec,
        progress: &dyn ProgressSink,
    ) -> Result<LoadStats, LoadError> {
        let target = LoadTarget {
            families: self
                .families()
                .iter()
                .map(|f| (f.name.to_string(), f.keyspace.clone()))
                .collect(),
            encode_key: encode_cell_key,
            reserve_timestamps: Arc::new(reserve_timestamps),
        };
        cellar_load::load(self.db(), &target, spec, progress)
    }
}
