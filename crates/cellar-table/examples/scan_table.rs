//! Times full scans of one table of an existing database, for profiling the scan path
//! (`perf record ./target/release/examples/scan_table DIR TABLE`). The first scan starts
//! with an empty block cache; the page cache is whatever the machine holds.
//!
//! Usage: scan_table DIR TABLE [SCANS]

use std::error::Error;
use std::time::Instant;

use cellar_engine::Options;
use cellar_table::{CellStore, ScanSpec};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: scan_table DIR TABLE [SCANS]";
    let dir = args.next().ok_or(usage)?;
    let name = args.next().ok_or(usage)?;
    let scans: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let store = CellStore::open(&dir, Options::default())?;
    let table = store.table(&name)?;
    for i in 1..=scans {
        let started = Instant::now();
        let mut cells = 0u64;
        let mut scanner = table.scan(ScanSpec::default())?;
        while let Some(cell) = scanner.next_ref() {
            cell?;
            cells += 1;
        }
        let secs = started.elapsed().as_secs_f64();
        let rate = cells as f64 / secs;
        println!("scan {i}: {cells} cells in {secs:.3} s = {rate:.0} cells/s");
    }
    Ok(())
}
