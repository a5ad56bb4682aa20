//! Leveled compaction: the picker decides *what* to compact from a version alone; the
//! executor merges inputs into new files. Flushes reuse the executor's output writer.

mod executor;
mod picker;

pub use executor::{
    write_sorted_run, CompactionFilter, CompactionFilterRun, OutputSpec, RunFilter,
};
pub use picker::{pick, pick_bottom_rewrite, pick_range, CompactionSpec};
