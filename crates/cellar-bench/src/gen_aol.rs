//! `cellar-bench gen aol`: a lookalike of the AOL 2006 query log, the input of Hypertable's
//! insert/scan test (docs/hql.md, "The AOL query-log test").
//!
//! Output: `DIR/a.tsv`, `b.tsv`, ... (`--pieces`, consecutive runs of lines), each starting
//! with the header `AnonID\tQuery\tQueryTime\tItemRank\tClickURL`. Every line has the five
//! fields; ItemRank and ClickURL are both set (a click) or both empty. Lines are in time
//! order, so AnonIDs come unordered.
//!
//! What is mimicked, and the figures Hypertable's test reports (avg key 7.0–7.1 B, avg value ~15.2 B,
//! 75.3M cells from 36.4M lines, so ~53% of lines carry a click):
//! - AnonID: 657,426 users (as in the real log) with Zipf–Mandelbrot activity (a few users
//!   issue tens of thousands of queries, most a handful), each user mapped to a fixed
//!   pseudo-random id in 1..=11,999,989: ~7.07 decimal digits on average. (Real ids of the
//!   first collection file stop near 2.5M, but ids that small average ~6.6 bytes; the key
//!   size is what the benchmark must reproduce.)
//! - Query: 1–4 words from a built-in vocabulary drawn Zipf-like, or a navigational query
//!   (`www.homesforsale.com`, `schwablearning.com`); ~15 bytes on average.
//! - QueryTime: from 2006-03-01 00:01:04 on, ~0.22 s per line (the real log's rate), never
//!   decreasing.
//! - ItemRank 1–10 (rank 1 most often) and ClickURL `http://www.<domain>.com`; the domain
//!   is the query's own for navigational queries.
//!
//! Deterministic for a given seed (the generator is rand 0.8's `StdRng`, ChaCha12). Lines
//! are written into one reused buffer: no allocation per line.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::{BenchError, Result};

pub const HEADER: &str = "AnonID\tQuery\tQueryTime\tItemRank\tClickURL";
const HEADER_NO_TIME: &str = "AnonID\tQuery\tItemRank\tClickURL";

/// Distinct users of the real log.
const USERS: u64 = 657_426;
/// Users' activity: weight of the user of rank r (from 1) is 1 / (r + USER_FLATTEN).
const USER_FLATTEN: f64 = 50.0;
/// Ids are 1..=ID_PRIME (a prime, so that rank × ID_MULTIPLIER mod ID_PRIME is a bijection).
const ID_PRIME: u64 = 11_999_989;
const ID_MULTIPLIER: u64 = 7_368_787;
/// Word popularity: weight of the word of rank r is 1 / (r + WORD_FLATTEN).
const WORD_FLATTEN: f64 = 20.0;
/// Share of lines with a click, in percent (75.27M cells / 36.39M lines = 1 + 2 × 0.534).
const CLICK_PERCENT: u32 = 53;
/// Percent of lines whose query time moves on by one second (~0.22 s per line).
const SECOND_STEP_PERCENT: u32 = 22;
/// 2006-03-01 00:01:04 UTC.
const START_EPOCH_SECONDS: u64 = 1_141_171_264;
/// Cumulative weights of ItemRank 1..=10, out of 100.
const RANK_CUMULATIVE: [u32; 10] = [42, 56, 66, 74, 80, 85, 89, 93, 97, 100];
const FLUSH_BYTES: usize = 4 << 20;

#[derive(Debug, Clone, Args)]
pub struct AolArgs {
    /// Lines to write in all (header lines not counted).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub lines: u64,

    /// Directory of the pieces (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Number of files, named a.tsv, b.tsv, ... (at most 26); piece i gets consecutive
    /// lines.
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub pieces: u32,

    /// Seed of every random choice: the same seed gives the same files.
    #[arg(long, default_value_t = 2006)]
    pub seed: u64,

    /// Leave out the QueryTime column, so that Hypertable's exact `LOAD DATA INFILE
    /// ROW_KEY_COLUMN=AnonID` finds only the table's families.
    #[arg(long)]
    pub no_query_time: bool,
}

/// Byte counts of what was written, for the summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct AolStats {
    pub lines: u64,
    pub bytes: u64,
    pub id_bytes: u64,
    /// Row-key bytes summed over cells (a line's AnonID once per cell it makes).
    pub key_bytes: u64,
    pub query_bytes: u64,
    pub clicks: u64,
    pub rank_bytes: u64,
    pub url_bytes: u64,
}

impl AolStats {
    /// Cells a load makes: Query always, ItemRank and ClickURL with a click.
    pub fn cells(&self) -> u64 {
        self.lines + 2 * self.clicks
    }

    pub fn value_bytes(&self) -> u64 {
        self.query_bytes + self.rank_bytes + self.url_bytes
    }
}

pub fn run(args: &AolArgs) -> Result<()> {
    if !(1..=26).contains(&args.pieces) {
        return Err(BenchError::Invalid(format!(
            "--pieces must be 1 to 26, got {}",
            args.pieces
        )));
    }
    std::fs::create_dir_all(&args.out).map_err(|e| BenchError::io(&args.out, e))?;
    let started = Instant::now();
    let mut generator = AolGenerator::new(args.seed, !args.no_query_time);
    let mut stats = AolStats::default();
    let mut buf = Vec::with_capacity(FLUSH_BYTES + 4096);
    let pieces = u64::from(args.pieces);
    for piece in 0..pieces {
        let path = piece_path(&args.out, piece);
        // u128: lines × pieces must not overflow.
        let split = |k: u64| (u128::from(args.lines) * u128::from(k) / u128::from(pieces)) as u64;
        let (first, end) = (split(piece), split(piece + 1));
        write_piece(&path, &mut generator, end - first, &mut buf, &mut stats)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    print_summary(args, &stats, seconds);
    Ok(())
}

/// `DIR/a.tsv` for piece 0, `b.tsv` for piece 1, ...
fn piece_path(dir: &Path, piece: u64) -> PathBuf {
    let letter = char::from(b'a' + (piece % 26) as u8);
    dir.join(format!("{letter}.tsv"))
}

fn write_piece(
    path: &Path,
    generator: &mut AolGenerator,
    lines: u64,
    buf: &mut Vec<u8>,
    stats: &mut AolStats,
) -> Result<()> {
    let mut file = File::create(path).map_err(|e| BenchError::io(path, e))?;
    buf.clear();
    buf.extend_from_slice(generator.header().as_bytes());
    buf.push(b'\n');
    stats.bytes += buf.len() as u64;
    for _ in 0..lines {
        let before = buf.len();
        generator.write_line(buf, stats);
        stats.bytes += (buf.len() - before) as u64;
        if buf.len() >= FLUSH_BYTES {
            file.write_all(buf).map_err(|e| BenchError::io(path, e))?;
            buf.clear();
        }
    }
    file.write_all(buf).map_err(|e| BenchError::io(path, e))?;
    buf.clear();
    Ok(())
}

fn print_summary(args: &AolArgs, stats: &AolStats, seconds: f64) {
    let per_line = |n: u64| n as f64 / stats.lines.max(1) as f64;
    let last = piece_path(&args.out, u64::from(args.pieces) - 1);
    println!(
        "gen aol: {} lines, {} bytes in {} pieces ({} .. {}), {:.1} s ({:.0} lines/s)",
        stats.lines,
        stats.bytes,
        args.pieces,
        piece_path(&args.out, 0).display(),
        last.display(),
        seconds,
        stats.lines as f64 / seconds.max(1e-9)
    );
    println!(
        "  avg AnonID {:.2} bytes, avg Query {:.2} bytes, lines with a click {:.1}%",
        per_line(stats.id_bytes),
        per_line(stats.query_bytes),
        100.0 * per_line(stats.clicks)
    );
    println!(
        "  cells {} ({:.2} per line), avg value {:.2} bytes/cell, avg key {:.2} bytes/cell",
        stats.cells(),
        per_line(stats.cells()),
        stats.value_bytes() as f64 / stats.cells().max(1) as f64,
        stats.key_bytes as f64 / stats.cells().max(1) as f64
    );
}

/// Inverse-transform sampling of a Zipf–Mandelbrot law over ranks 0..n: rank r (from 1)
/// weighs ~1 / (r + flatten), approximated by the continuous density, which is exact enough
/// once `flatten` keeps the head from dominating.
#[derive(Debug, Clone, Copy)]
struct PowerLaw {
    n: u64,
    flatten: f64,
    log_span: f64,
}

impl PowerLaw {
    /// REQUIRES: n >= 1, flatten >= 0.
    fn new(n: u64, flatten: f64) -> Self {
        debug_assert!(n >= 1 && flatten >= 0.0);
        let log_span = ((n as f64 + 1.0 + flatten) / (1.0 + flatten)).ln();
        PowerLaw {
            n,
            flatten,
            log_span,
        }
    }

    /// A rank in 0..n.
    fn sample(&self, rng: &mut StdRng) -> u64 {
        let u: f64 = rng.gen();
        let x = (1.0 + self.flatten) * (u * self.log_span).exp() - self.flatten;
        (x as u64).clamp(1, self.n) - 1
    }
}

/// Writes lines one after the other; holds the clock and the laws.
struct AolGenerator {
    rng: StdRng,
    users: PowerLaw,
    words: PowerLaw,
    /// VOCABULARY's words, most popular first.
    vocabulary: Vec<&'static str>,
    id_offset: u64,
    with_time: bool,
    epoch_seconds: u64,
    time_text: [u8; 19],
}

impl AolGenerator {
    fn new(seed: u64, with_time: bool) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let id_offset = rng.gen_range(0..ID_PRIME);
        let vocabulary: Vec<&'static str> = VOCABULARY.split_ascii_whitespace().collect();
        let mut generator = AolGenerator {
            rng,
            users: PowerLaw::new(USERS, USER_FLATTEN),
            words: PowerLaw::new(vocabulary.len() as u64, WORD_FLATTEN),
            vocabulary,
            id_offset,
            with_time,
            epoch_seconds: START_EPOCH_SECONDS,
            time_text: [0; 19],
        };
        generator.format_time();
        generator
    }

    fn header(&self) -> &'static str {
        if self.with_time {
            HEADER
        } else {
            HEADER_NO_TIME
        }
    }

    /// Appends one line, '\n' included.
    fn write_line(&mut self, out: &mut Vec<u8>, stats: &mut AolStats) {
        let rank = self.users.sample(&mut self.rng);
        let id = 1 + (rank * ID_MULTIPLIER + self.id_offset) % ID_PRIME;
        let start = out.len();
        write_decimal(id, out);
        let id_bytes = (out.len() - start) as u64;
        stats.id_bytes += id_bytes;
        stats.key_bytes += id_bytes;
        out.push(b'\t');

        let start = out.len();
        let domain = self.write_query(out);
        stats.query_bytes += (out.len() - start) as u64;
        out.push(b'\t');

        if self.with_time {
            if self.rng.gen_range(0..100) < SECOND_STEP_PERCENT {
                self.epoch_seconds += 1;
                self.format_time();
            }
            out.extend_from_slice(&self.time_text);
            out.push(b'\t');
        }

        if self.rng.gen_range(0..100) < CLICK_PERCENT {
            let roll = self.rng.gen_range(0..100);
            let item_rank = RANK_CUMULATIVE.iter().take_while(|&&c| c <= roll).count() + 1;
            let start = out.len();
            write_decimal(item_rank as u64, out);
            stats.rank_bytes += (out.len() - start) as u64;
            out.push(b'\t');
            let start = out.len();
            out.extend_from_slice(b"http://www.");
            match domain {
                Some((from, to)) => out.extend_from_within(from..to),
                None => self.write_domain(out, true),
            }
            out.extend_from_slice(b".com");
            stats.url_bytes += (out.len() - start) as u64;
            stats.key_bytes += 2 * id_bytes;
            stats.clicks += 1;
        } else {
            out.push(b'\t');
        }
        out.push(b'\n');
        stats.lines += 1;
    }

    /// Appends a query; for a navigational one, returns where its domain name is in `out`.
    fn write_query(&mut self, out: &mut Vec<u8>) -> Option<(usize, usize)> {
        let kind = self.rng.gen_range(0..100);
        if kind < 20 {
            // Navigational: "www.<domain>.com" or "<domain>.com".
            if kind < 11 {
                out.extend_from_slice(b"www.");
            }
            let from = out.len();
            self.write_domain(out, false);
            let to = out.len();
            out.extend_from_slice(b".com");
            return Some((from, to));
        }
        let words = match self.rng.gen_range(0..100) {
            0..=24 => 1,
            25..=61 => 2,
            62..=85 => 3,
            _ => 4,
        };
        for i in 0..words {
            if i > 0 {
                out.push(b' ');
            }
            self.write_word(out);
        }
        None
    }

    /// One to three words run together: "schwablearning". Domains of clicked results
    /// (`for_url`) are longer than those people type: two or three words.
    fn write_domain(&mut self, out: &mut Vec<u8>, for_url: bool) {
        let words = match (for_url, self.rng.gen_range(0..100)) {
            (false, 0..=14) => 1,
            (false, 15..=74) | (true, 0..=39) => 2,
            _ => 3,
        };
        for _ in 0..words {
            self.write_word(out);
        }
    }

    fn write_word(&mut self, out: &mut Vec<u8>) {
        let rank = self.words.sample(&mut self.rng) as usize;
        if let Some(word) = self.vocabulary.get(rank) {
            out.extend_from_slice(word.as_bytes());
        }
    }

    fn format_time(&mut self) {
        let (days, in_day) = (self.epoch_seconds / 86_400, self.epoch_seconds % 86_400);
        let (year, month, day) = civil_from_days(days);
        let fields = [
            (0, year, 4),
            (5, month, 2),
            (8, day, 2),
            (11, in_day / 3600, 2),
            (14, in_day / 60 % 60, 2),
            (17, in_day % 60, 2),
        ];
        self.time_text = *b"0000-00-00 00:00:00";
        for (at, mut value, width) in fields {
            for i in (at..at + width).rev() {
                self.time_text[i] = b'0' + (value % 10) as u8;
                value /= 10;
            }
        }
    }
}

/// Year, month, day of a count of days since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + u64::from(month <= 2), month, day)
}

fn write_decimal(mut n: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Query words, most popular first (the order sets the Zipf ranks), separated by blanks.
const VOCABULARY: &str = "\
google yahoo ebay free mapquest myspace new county music lyrics pictures school home \
weather bank online sale games news florida texas state city real estate high jobs \
university american black women cars best pics sex hotel house health how center \
department park car york california travel recipes used dog the radio hotmail white \
church map girls tickets airlines photos of wedding lottery homes baby insurance \
chicago beach movie movies in video college public book cheap shoes christian horse \
club and world ohio tv party blue red green cancer water for art dell target walmart \
sears craigslist idol funny song to love history auto parts florist court law police \
medical com disease symptoms recipe chicken food restaurant pizza coupons golf boats \
fishing hunting camping rental apartments mortgage loan credit card federal government \
tax forms irs social security office supply computer software windows internet email \
download ringtones cell phone verizon cingular sprint cable direct dish network channel \
show star stars nba nfl football basketball baseball soccer tennis racing nascar \
wrestling poker casino vegas las hotels resort cruise vacation flights airport \
southwest delta continental united jersey virginia carolina north south west east \
georgia michigan illinois arizona colorado oregon washington boston houston dallas \
atlanta miami denver seattle phoenix orlando tampa pennsylvania kentucky tennessee \
alabama indiana missouri wisconsin minnesota iowa kansas oklahoma louisiana maryland \
massachusetts connecticut dictionary encyclopedia translation spanish english french \
german chinese japanese bible verses prayer quotes poems birthday cards christmas \
easter halloween valentine gifts flowers jewelry diamond rings watches clothing dresses \
prom bridal furniture kitchen bathroom garden landscaping pools roofing plumbing repair \
tools hardware lowes depot costco kmart macys penney kohls amazon barnes noble netflix \
blockbuster itunes ipod apple sony nintendo xbox playstation cheats codes zip area \
directory yellow pages people search finder address lookup obituaries records genealogy \
family tree kids teen children parenting pregnancy diet weight loss fitness exercise \
yoga vitamins drug pharmacy doctor dentist hospital clinic nursing care services \
company corporation business small employment resume salary schwab learning education \
elementary middle academy library museum zoo aquarium theater concert band guitar piano \
chords tabs anime cartoon coloring clip wallpaper backgrounds layouts themes property \
sales foreclosure listings realtor land farm ranch tractor truck motorcycle harley \
honda toyota ford chevy dodge nissan bmw mercedes dealers kelley value price prices";

#[cfg(test)]
mod tests {
    use super::*;

    fn is_prime(n: u64) -> bool {
        n >= 2
            && (2..)
                .take_while(|d| d * d <= n)
                .all(|d| !n.is_multiple_of(d))
    }

    #[test]
    fn id_mapping_is_a_bijection() {
        assert!(is_prime(ID_PRIME));
        assert!(!ID_MULTIPLIER.is_multiple_of(ID_PRIME));
    }

    #[test]
    fn time_text_matches_the_calendar() {
        let mut g = AolGenerator::new(1, true);
        assert_eq!(&g.time_text, b"2006-03-01 00:01:04");
        g.epoch_seconds = 1_141_197_432;
        g.format_time();
        assert_eq!(&g.time_text, b"2006-03-01 07:17:12");
    }

    #[test]
    fn power_law_stays_in_range_and_favours_the_head() {
        let law = PowerLaw::new(1000, 5.0);
        let mut rng = StdRng::seed_from_u64(3);
        let mut head = 0;
        for _ in 0..10_000 {
            let r = law.sample(&mut rng);
            assert!(r < 1000);
            head += u32::from(r < 10);
        }
        // Ranks 0..10 hold ln(16/6)/ln(1006/6) ≈ 19% of the weight.
        assert!((1500..2400).contains(&head), "{head}");
    }

    #[test]
    fn vocabulary_words_are_distinct() {
        let words: Vec<&str> = VOCABULARY.split_ascii_whitespace().collect();
        let mut sorted = words.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), words.len());
        assert!(words.len() > 300);
    }

    #[test]
    fn write_decimal_writes_every_digit() {
        let mut out = Vec::new();
        for n in [0, 7, 10, 11_999_989, u64::MAX] {
            out.clear();
            write_decimal(n, &mut out);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }
}
