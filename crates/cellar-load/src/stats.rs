use std::fmt;
use std::time::Duration;

/// What a load did, printed Hypertable-style at its end.
#[derive(Debug, Clone, Default)]
pub struct LoadStats {
    pub elapsed: Duration,
    pub lines: u64,
    pub bad_lines_skipped: u64,
    /// Cells parsed ("inserts").
    pub cells: u64,
    /// Cells written after duplicates (same row, column and timestamp) were collapsed.
    pub cells_written: u64,
    /// Row key bytes, summed over cells (Hypertable's "key size").
    pub key_bytes: u64,
    pub value_bytes: u64,
    pub input_bytes: u64,
    pub files_written: u64,
    pub bytes_written: u64,
}

impl LoadStats {
    pub fn inserts_per_sec(&self) -> f64 {
        self.cells as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
    pub fn bytes_per_sec(&self) -> f64 {
        (self.key_bytes + self.value_bytes) as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
    pub fn avg_key_bytes(&self) -> f64 {
        self.key_bytes as f64 / self.cells.max(1) as f64
    }
    pub fn avg_value_bytes(&self) -> f64 {
        self.value_bytes as f64 / self.cells.max(1) as f64
    }

    /// Adds another load's counts (elapsed: the longer one).
    pub fn merge(&mut self, o: &LoadStats) {
        self.elapsed = self.elapsed.max(o.elapsed);
        self.lines += o.lines;
        self.bad_lines_skipped += o.bad_lines_skipped;
        self.cells += o.cells;
        self.cells_written += o.cells_written;
        self.key_bytes += o.key_bytes;
        self.value_bytes += o.value_bytes;
        self.input_bytes += o.input_bytes;
        self.files_written += o.files_written;
        self.bytes_written += o.bytes_written;
    }
}

impl fmt::Display for LoadStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Load complete.")?;
        writeln!(f, "  Elapsed time:  {:.2} s", self.elapsed.as_secs_f64())?;
        writeln!(f, "Avg value size:  {:.2} bytes", self.avg_value_bytes())?;
        writeln!(f, "  Avg key size:  {:.2} bytes", self.avg_key_bytes())?;
        writeln!(f, "    Throughput:  {:.2} bytes/s", self.bytes_per_sec())?;
        writeln!(f, " Total inserts:  {}", self.cells)?;
        writeln!(
            f,
            "    Throughput:  {:.2} inserts/s",
            self.inserts_per_sec()
        )?;
        if self.bad_lines_skipped > 0 {
            writeln!(f, "   Bad lines skipped:  {}", self.bad_lines_skipped)?;
        }
        write!(
            f,
            "         Lines:  {} ({} SST files, {:.1} MB written)",
            self.lines,
            self.files_written,
            self.bytes_written as f64 / 1e6
        )
    }
}
