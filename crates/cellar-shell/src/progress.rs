//! Load progress on stderr: a bar on a terminal, a plain line every few seconds otherwise.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cellar_load::{Phase, Progress, ProgressSink};
use indicatif::{ProgressBar, ProgressStyle};

const PLAIN_EVERY: Duration = Duration::from_secs(5);

pub enum LoadProgress {
    Bar(Mutex<Option<(ProgressBar, Instant)>>),
    Plain(Mutex<(Instant, Instant)>),
    Quiet,
}

impl LoadProgress {
    /// A bar when stderr is a terminal, plain lines otherwise; nothing when `quiet`.
    pub fn new(quiet: bool) -> Self {
        if quiet {
            LoadProgress::Quiet
        } else if std::io::stderr().is_terminal() {
            LoadProgress::Bar(Mutex::new(None))
        } else {
            let now = Instant::now();
            LoadProgress::Plain(Mutex::new((now, now)))
        }
    }
}

fn rate(n: u64, secs: f64) -> f64 {
    n as f64 / secs.max(1e-3)
}

impl ProgressSink for LoadProgress {
    fn update(&self, p: &Progress) {
        match self {
            LoadProgress::Quiet => {}
            LoadProgress::Bar(slot) => {
                let Ok(mut slot) = slot.lock() else { return };
                let (bar, started) = slot.get_or_insert_with(|| {
                    let bar = ProgressBar::new(p.input_bytes_total.max(1));
                    bar.set_style(
                        ProgressStyle::with_template(
                            "{spinner} [{elapsed_precise}] {bar:30} {bytes}/{total_bytes} \
                             {bytes_per_sec} ETA {eta} {msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    (bar, Instant::now())
                });
                let secs = started.elapsed().as_secs_f64();
                bar.set_position(p.input_bytes_read);
                match p.phase {
                    Phase::Parsing => bar.set_message(format!(
                        "{} lines, {:.0} cells/s",
                        p.lines,
                        rate(p.cells, secs)
                    )),
                    Phase::Writing => bar.set_message(format!(
                        "sorting and writing: {}/{} cells",
                        p.cells_written, p.cells
                    )),
                    Phase::Ingesting => bar.set_message("ingesting"),
                    Phase::Done => {
                        bar.finish_and_clear();
                        *slot = None;
                    }
                }
            }
            LoadProgress::Plain(times) => {
                let Ok(mut t) = times.lock() else { return };
                let (started, last) = &mut *t;
                if p.phase != Phase::Done && last.elapsed() < PLAIN_EVERY {
                    return;
                }
                *last = Instant::now();
                let secs = started.elapsed().as_secs_f64();
                let mb = p.input_bytes_read as f64 / 1e6;
                let pct = 100.0 * p.input_bytes_read as f64 / p.input_bytes_total.max(1) as f64;
                eprintln!(
                    "load: {:?} {:.0}% {mb:.1} MB, {} lines, {} cells, {:.0} cells/s, {:.1} MB/s, {} written",
                    p.phase,
                    pct,
                    p.lines,
                    p.cells,
                    rate(p.cells, secs),
                    mb / secs.max(1e-3),
                    p.cells_written
                );
            }
        }
    }
}
