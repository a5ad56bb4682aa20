//! `cellar-bench hypertable`: Hypertable's AOL query-log test on one machine.
//!
//! As in Hypertable's test: `CREATE TABLE "query-log" (Query, ItemRank, ClickURL)`, four
//! `LOAD DATA INFILE ROW_KEY_COLUMN=AnonID` jobs over pieces a–d at once, then piece e alone,
//! then `select * from "query-log"` to /dev/null through the shell. Cellar runs all of it
//! (cellar.rs, in this process); the key-value peers of `--engines` run the loads and the
//! full scan on the same cells (peer.rs, each in a child process of its own). One table and
//! one JSON line per engine × measurement; peers use Cellar's variant names where they
//! measure the same thing, so the report compares them row by row.

mod cellar;
mod peer;

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::gen_aol::{self, AolArgs};

pub const FAMILIES: [&str; 3] = ["Query", "ItemRank", "ClickURL"];

#[derive(Debug, Clone, Args)]
pub struct HypertableArgs {
    /// Engines, comma-separated: cellar (everything), and the key-value peers lmdb, fjall,
    /// sqlite, rocksdb (the loads and the full scan; each needs its cargo feature, and one
    /// not compiled in is skipped with a note), or "all"
    #[arg(long, value_name = "LIST", default_value = "cellar")]
    pub engines: String,
    /// Lines of the generated query log, over 5 pieces (Hypertable's log had 36M)
    #[arg(long, value_name = "N", default_value_t = 20_000_000)]
    pub lines: u64,
    /// Lines streamed through the WAL by the buffered-writer test (from piece e)
    #[arg(long, value_name = "N", default_value_t = 2_000_000)]
    pub stream_lines: u64,
    /// Working directory: input pieces (kept for reuse) and the databases (DIR/db for
    /// Cellar, DIR/db-<engine> for a peer)
    #[arg(long, value_name = "DIR", default_value = "./bench-data/hypertable")]
    pub dir: PathBuf,
    /// A small run in seconds (200K lines), for tests
    #[arg(long)]
    pub quick: bool,
    /// Append one JSON object per measurement to this file
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The `cellar` binary for the shell scan (default: next to this one)
    #[arg(long, value_name = "PATH")]
    pub cellar_bin: Option<PathBuf>,
    /// Seed of the generated log
    #[arg(long, default_value_t = 2006)]
    pub seed: u64,
    /// Keep the databases after the run, for inspection or profiling
    #[arg(long)]
    pub keep_db: bool,
    /// Also scan again after compacting the table fully (Cellar; the loads leave one
    /// sorted run per load; this shows what merging them buys)
    #[arg(long)]
    pub compacted_scan: bool,
    /// Internal: run as the child process of one peer with this JSON config.
    #[arg(long, hide = true, value_name = "JSON")]
    pub child: Option<String>,
}

/// One measurement of one engine: a line of `--json`, and of the child protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HtRecord {
    pub engine: String,
    pub workload: String,
    pub variant: String,
    pub lines: u64,
    /// 0 for a measurement of time only (no rate).
    pub cells: u64,
    pub seconds: f64,
    /// cells/s (rows/s for the row lookups, as the note says).
    pub ops_per_sec: f64,
    pub note: String,
    /// The database after the loads (and, for peers, the settle).
    pub db_bytes: u64,
}

pub fn run(args: &HypertableArgs) -> Result<()> {
    if let Some(json) = &args.child {
        return peer::child_main(json);
    }
    let (engines, skipped) = crate::suite::select_engines(&args.engines)?;
    for why in &skipped {
        eprintln!("[hypertable] skipped {why}");
    }
    let (lines, stream_lines) = if args.quick {
        (200_000, 50_000)
    } else {
        (args.lines, args.stream_lines)
    };
    let input = args.dir.join(format!("aol-{lines}-{}", args.seed));
    let pieces: Vec<PathBuf> = "abcde"
        .chars()
        .map(|c| input.join(format!("{c}.tsv")))
        .collect();
    if !pieces.iter().all(|p| p.exists()) {
        eprintln!(
            "hypertable: generating {lines} lines into {}",
            input.display()
        );
        gen_aol::run(&AolArgs {
            lines,
            out: input.clone(),
            pieces: 5,
            seed: args.seed,
            no_query_time: true,
        })?;
    }
    let mut records = Vec::new();
    let mut failure = None;
    for engine in &engines {
        let r = if engine == "cellar" {
            cellar::run(args, &pieces, lines, stream_lines).map(|mut got| records.append(&mut got))
        } else {
            run_peer(args, engine, &pieces, lines, &mut records)
        };
        if let Err(e) = r {
            eprintln!("[{engine}] failed: {e}");
            failure.get_or_insert(e);
        }
    }
    print_table(&records, &skipped);
    if let Some(path) = &args.json {
        crate::record::append_json_lines(path, "hypertable", &records)?;
    }
    failure.map_or(Ok(()), Err)
}

fn run_peer(
    args: &HypertableArgs,
    engine: &str,
    pieces: &[PathBuf],
    lines: u64,
    records: &mut Vec<HtRecord>,
) -> Result<()> {
    let cfg = peer::PeerConfig {
        engine: engine.to_string(),
        pieces: pieces.to_vec(),
        db_dir: args.dir.join(format!("db-{engine}")),
        lines,
        keep_db: args.keep_db,
    };
    let (mut got, r) = crate::child::run_child::<HtRecord>("hypertable", engine, &cfg);
    records.append(&mut got);
    r
}

fn print_table(records: &[HtRecord], skipped: &[String]) {
    println!();
    println!("| engine | variant | cells | seconds | cells/s | note |");
    println!("|---|---|---:|---:|---:|---|");
    for m in records {
        let rate = if m.cells == 0 {
            "-".to_string()
        } else {
            format!("{:.0}", m.ops_per_sec)
        };
        println!(
            "| {} | {} | {} | {:.2} | {rate} | {} |",
            m.engine, m.variant, m.cells, m.seconds, m.note
        );
    }
    let mut seen: Vec<&str> = Vec::new();
    for m in records {
        if seen.contains(&m.engine.as_str()) {
            continue;
        }
        seen.push(&m.engine);
        let loaded: u64 = records
            .iter()
            .filter(|r| r.engine == m.engine && r.variant.starts_with("load "))
            .map(|r| r.cells)
            .sum();
        println!(
            "\n{}: database after the loads: {:.1} MB on disk ({:.1} bytes/cell)",
            m.engine,
            m.db_bytes as f64 / 1e6,
            m.db_bytes as f64 / loaded.max(1) as f64
        );
    }
    if records.iter().any(|r| r.engine != "cellar") {
        println!(
            "\nPeers: cells keyed by Cellar's cell key encoding with the family as qualifier, \
             put_batch of {} cells by 4 loader threads, then e alone; the row lookups, the \
             shell scan and the TableWriter stream are Cellar's table layer and not run for \
             them.",
            peer::BATCH_CELLS
        );
    }
    for why in skipped {
        println!("\nskipped {why}");
    }
}
