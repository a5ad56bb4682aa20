//! Times cached point reads of an existing database made by `cellar-bench db` (keys are
//! the zero-padded decimal index, 16 bytes), for profiling the hit path. The database is
//! settled as `cellar-bench db` settles it after a fill; then one untimed pass
//! reads every key so the block cache holds the whole database (left out with `cold`, as
//! `cellar-bench db`'s readrandom starts with an empty cache); then `GETS` random keys
//! are read in `timed_gets`, the function to give callgrind
//! (`valgrind --tool=callgrind --toggle-collect='*timed_gets*'
//! ./target/release/examples/point_gets DIR NUM GETS`).
//!
//! Usage: point_gets DIR NUM [GETS] [cold]

use std::error::Error;
use std::time::Instant;

use cellar_engine::{Db, Keyspace, Options, ReadOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const KEY_BYTES: usize = 16;

fn key(i: u64) -> Vec<u8> {
    format!("{i:0KEY_BYTES$}").into_bytes()
}

/// Reads `keys` and returns how many were found.
#[inline(never)]
fn timed_gets(db: &Db, ks: &Keyspace, keys: &[Vec<u8>]) -> Result<u64, cellar_engine::Error> {
    let ro = ReadOptions::default();
    let mut found = 0;
    for k in keys {
        if db.get(ks, k, &ro)?.is_some() {
            found += 1;
        }
    }
    Ok(found)
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: point_gets DIR NUM [GETS] [cold]";
    let dir = args.next().ok_or(usage)?;
    let num: u64 = args.next().ok_or(usage)?.parse()?;
    let gets: usize = args.next().map_or(Ok(100_000), |s| s.parse())?;
    let warm_first = match args.next().as_deref() {
        None => true,
        Some("cold") => false,
        Some(_) => return Err(usage.into()),
    };
    let opts = Options {
        block_cache_size_bytes: 4 << 30,
        ..Options::default()
    };
    let db = Db::open(&dir, opts)?;
    let ks = db.default_keyspace();
    // As `cellar-bench db` settles a fill before its reads: the WAL's tail flushed and every
    // level within its target.
    db.flush()?;
    db.wait_for_background_work()?;
    if warm_first {
        let warm = Instant::now();
        let ro = ReadOptions::default();
        for k in (0..num).map(key) {
            db.get(&ks, &k, &ro)?;
        }
        println!(
            "warm pass: {num} gets in {:.2} s",
            warm.elapsed().as_secs_f64()
        );
    }
    let mut rng = StdRng::seed_from_u64(42);
    let keys: Vec<Vec<u8>> = (0..gets).map(|_| key(rng.gen_range(0..num))).collect();
    let started = Instant::now();
    let found = timed_gets(&db, &ks, &keys)?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{gets} gets ({found} found) in {secs:.3} s = {:.0} gets/s",
        gets as f64 / secs
    );
    db.close()?;
    Ok(())
}
