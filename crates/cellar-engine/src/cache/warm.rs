//! Cold-start warm-up: once the point reads of one SST (and its iterators' seeks and short
//! walks, random reads too) have spent half as much time waiting on the device as reading
//! the whole file sequentially would take (each read counting at most `MAX_RENT_PER_READ`),
//! read the whole file sequentially into the page cache, in the background, and let later
//! reads find it there.
//!
//! Why: point reads advise the kernel not to read ahead (see `vfs/real.rs`), so a cold
//! database that fits in memory pays one random read per lookup until each block has been
//! read once. Deciding per file when the rent paid reaches the price of buying (the
//! ski-rental rule; the price is half the read's time, see `PRICE_SHARE`) costs at most three
//! times the better of the two choices made in hindsight, and needs no guess of how many
//! reads will come. A file read rarely is warmed only once its few reads have waited that
//! long in all, and one whose reads the page cache already serves hardly ever (they take
//! microseconds, so its rent stays small). The evidence, and what would change these
//! choices: docs/design/cold-start-warm-up.md.
//!
//! Bounds: the bytes warmed and not yet deleted stay within `Options::warm_up_budget_bytes`
//! (a share of RAM), so a database larger than memory warms its most-read files and then
//! stops; one background thread reads one file at a time in chunks with no readahead (each
//! asked of the OS whole with `will_need` while the chunk before it is read, then read whole,
//! which waits for every page of it): `WARM_CHUNK_BYTES` while single gets read cold files,
//! so a get waits behind at most two of them, `LONE_CHUNK_BYTES` once none has for
//! `LONE_AFTER` or while they are one client's ([`ChunkSizer`]). Before each chunk it yields
//! while `BUSY_POINT_READS` point reads of files not yet warm are in flight (for at most
//! twice its last chunk's time, so that it keeps going under any load). While the open files
//! exceed the budget or many single gets wait, its reads are of the idle I/O priority class,
//! which the kernel's I/O scheduler dispatches after the point reads waiting beside them
//! ([`IoClass`]). Warm-up reads only fill the page cache: their bytes are dropped, an error
//! only ends that file's warm-up (the lookup that reads the same bytes reports it), and
//! nothing is written.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::cache::MetadataBudget;
use crate::stats::Counters;
use crate::vfs::RandomAccessFile;

/// One warm-up read while single gets read cold files: what a get queued behind it waits
/// for. Larger chunks warm faster (the rate is bytes in flight over the device's latency)
/// and lengthen that wait: the trade is measured in docs/design/cold-start-warm-up.md.
pub const WARM_CHUNK_BYTES: usize = 256 << 10;

/// One warm-up read once no single get has read a cold file for `LONE_AFTER`: nothing
/// waits behind it but batches, which gain from the warm-up ending sooner.
pub const LONE_CHUNK_BYTES: usize = 2 << 20;

/// How long no single get must have read a cold file before chunks grow to
/// `LONE_CHUNK_BYTES`: gets at 100 a second or more keep them at `WARM_CHUNK_BYTES`.
const LONE_AFTER: Duration = Duration::from_millis(10);

/// A single get of a cold file that starts within this long of the end of the same thread's
/// last one is back to back: between them its thread did nothing but cached reads.
const BACK_TO_BACK_GAP: Duration = Duration::from_micros(50);

/// Single gets of cold files per look at how they come ([`ChunkSizer`]).
const SIZING_WINDOW_GETS: u64 = 32;

thread_local! {
    /// When this thread's last single get of a cold file ended (any database's).
    static LAST_GET_END: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Share of a file's sequential read time its point reads must have waited before it is
/// warmed. Not all of it: the warm-up runs beside the point reads, which go on meanwhile
/// (slower, their misses queued behind its chunks), so buying costs the foreground less than
/// the read's whole duration. Buying at half the price costs at most three times the better
/// choice in hindsight (reads stop right after the warm-up starts) instead of twice, and
/// 1.5 times when reads go on (docs/design/cold-start-warm-up.md).
const PRICE_SHARE: f64 = 0.5;

/// A file's point reads must have waited at least this long before it is warmed, whatever
/// its size: below it, reading the file whole is cheap but so is going on with point reads.
const MIN_RENT: Duration = Duration::from_millis(10);

/// The most rent one point read pays. One cold block read takes a fraction of this on an
/// SSD (0.1-0.5 ms on the benchmark machine); a read that waited longer spent the rest in a
/// queue, behind other reads, the warm-up's own chunks or a disk still writing out a load.
/// Charged in full, those waits bought files within a few reads: a 215 M-record database
/// read at 200 gets/s right after its load warmed 6.3 GB in 30 s, and 1.5 GB in the next
/// 5 s with a p99 of 34 ms (capped: nothing, and 1.5 ms; docs/design/cold-start-warm-up.md,
/// "Rent per read"). A disk whose reads take longer than this warms later: after more
/// reads, never wrongly.
const MAX_RENT_PER_READ: Duration = Duration::from_millis(1);

/// Point reads of not-yet-warm files in flight at which the warm-up yields the disk: it
/// waits before its next chunk (at most twice as long as its last chunk took, so that it still
/// progresses at a third of its pace) while this many or more are outstanding.
const BUSY_POINT_READS: usize = 8;

const COLD: u8 = 0;
const QUEUED: u8 = 1;
const WARM: u8 = 2;
/// A warm-up read failed: the file is not tried again (its budget share is given back).
const FAILED: u8 = 3;
/// The reader was dropped (the file was deleted or the database closed).
const DROPPED: u8 = 4;

/// The warm-up state of one open SST, held by its reader (and by its queued warm-up).
pub struct FileWarmth {
    file: Arc<dyn RandomAccessFile>,
    state: AtomicU8,
    /// Nanoseconds its random reads have spent in `pread` since it was last cold.
    rent_ns: AtomicU64,
    /// Rent at which the file is warmed: the time a sequential read of it should take.
    price_ns: u64,
    warm_up: Arc<WarmUp>,
}

impl FileWarmth {
    /// Whether point reads should be timed (only while the file may still be warmed).
    pub fn is_cold(&self) -> bool {
        self.state.load(Relaxed) == COLD
    }

    /// Whether point reads of this file still go to the disk (it is not warm yet): they
    /// are counted as in flight while they run, so that the warm-up can yield to them.
    pub fn reads_disk(&self) -> bool {
        matches!(self.state.load(Relaxed), COLD | QUEUED)
    }

    /// Counts one point read in flight until the guard drops. `batch`: one of the reads of a
    /// `multi_get`, whose caller waits for all of them together (see [`IoClass`]).
    pub fn point_read(&self, batch: bool) -> InFlight<'_> {
        let shared = &*self.warm_up.shared;
        shared.in_flight.fetch_add(1, Relaxed);
        if !batch {
            if shared.gets_in_flight.fetch_add(1, Relaxed) > 0 {
                shared.gets_beside_others.fetch_add(1, Relaxed);
            }
            shared.gets_started.fetch_add(1, Relaxed);
            let last_end = LAST_GET_END.with(Cell::get);
            if last_end.is_some_and(|t| t.elapsed() < BACK_TO_BACK_GAP) {
                shared.gets_back_to_back.fetch_add(1, Relaxed);
            }
        }
        InFlight { shared, batch }
    }

    /// Adds one point read's wait, at most `MAX_RENT_PER_READ`; queues the file for warm-up
    /// when the rent reaches its price and the budget has room. With no room, the rent
    /// starts over: the file is tried again after as much time again, when deletions may
    /// have freed some budget.
    pub fn pay(self: &Arc<Self>, waited: Duration) {
        if !self.is_cold() {
            return;
        }
        let ns = u64::try_from(waited.min(MAX_RENT_PER_READ).as_nanos()).unwrap_or(u64::MAX);
        let rent = self.rent_ns.fetch_add(ns, Relaxed).saturating_add(ns);
        if rent < self.price_ns {
            return;
        }
        if self
            .state
            .compare_exchange(COLD, QUEUED, Relaxed, Relaxed)
            .is_err()
        {
            return;
        }
        if !self.warm_up.budget.try_charge(self.size_bytes()) {
            self.rent_ns.store(0, Relaxed);
            self.state.store(COLD, Relaxed);
            return;
        }
        self.warm_up.enqueue(Arc::clone(self));
    }

    /// What the file charges to the budget while warm or queued.
    fn size_bytes(&self) -> u64 {
        self.file.size()
    }

    #[cfg(test)]
    pub fn is_warm(&self) -> bool {
        self.state.load(Relaxed) == WARM
    }

    /// Ends a failed warm-up: gives its budget back unless the reader already did.
    fn fail(&self) {
        if self
            .state
            .compare_exchange(QUEUED, FAILED, Relaxed, Relaxed)
            .is_ok()
        {
            self.warm_up.budget.release(self.size_bytes());
        }
    }
}

/// Marks the reader gone, so that a queued or running warm-up of its file stops (the job's
/// own `Arc` keeps the state alive until then). Held by the SST reader.
pub struct WarmthHandle(pub Arc<FileWarmth>);

impl Drop for WarmthHandle {
    fn drop(&mut self) {
        let shared = &self.0.warm_up.shared;
        shared.tracked_bytes.fetch_sub(self.0.size_bytes(), Relaxed);
        let prev = self.0.state.swap(DROPPED, Relaxed);
        if matches!(prev, QUEUED | WARM) {
            self.0.warm_up.budget.release(self.0.size_bytes());
        }
    }
}

/// One point read in flight (see [`FileWarmth::point_read`]).
pub struct InFlight<'a> {
    shared: &'a Shared,
    batch: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.shared.in_flight.fetch_sub(1, Relaxed);
        if !self.batch {
            self.shared.gets_in_flight.fetch_sub(1, Relaxed);
            LAST_GET_END.with(|t| t.set(Some(Instant::now())));
        }
    }
}

/// A file queued for warm-up.
type Job = Arc<FileWarmth>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    stopping: bool,
}

struct Shared {
    /// Point reads of files not yet warm, running now.
    in_flight: AtomicUsize,
    /// Those of them that are single gets' reads, not a batch's.
    gets_in_flight: AtomicUsize,
    /// Single gets' reads of cold files started so far: whether any came since a chunk.
    gets_started: AtomicU64,
    /// Those of them that started back to back with their thread's last one
    /// (`BACK_TO_BACK_GAP`).
    gets_back_to_back: AtomicU64,
    /// Those of them that started while another was in flight.
    gets_beside_others: AtomicU64,
    /// `LONE_AFTER`, or another quiet time in tests.
    lone_after: Duration,
    /// Bytes of the files tracked now (open SSTs), and the budget's size: whether the
    /// warm-up could hold all of them (see [`IoClass`]).
    tracked_bytes: AtomicU64,
    budget_bytes: u64,
    queue: Mutex<Queue>,
    wake: Condvar,
    counters: Arc<Counters>,
}

/// The database's warm-up: its budget, its queue and its one thread (started on the first
/// file to warm, stopped by [`WarmUp::shutdown`] or on drop).
pub struct WarmUp {
    budget: MetadataBudget,
    /// Sequential read rate the price of a file assumes (`Options::warm_up_read_bytes_per_sec`).
    read_bytes_per_sec: u64,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl WarmUp {
    pub fn new(budget_bytes: u64, read_bytes_per_sec: u64, counters: Arc<Counters>) -> Self {
        Self::with_lone_after(budget_bytes, read_bytes_per_sec, counters, LONE_AFTER)
    }

    /// [`new`](Self::new) with chunks that grow after `lone_after` without a get.
    fn with_lone_after(
        budget_bytes: u64,
        read_bytes_per_sec: u64,
        counters: Arc<Counters>,
        lone_after: Duration,
    ) -> Self {
        WarmUp {
            budget: MetadataBudget::new(budget_bytes),
            read_bytes_per_sec: read_bytes_per_sec.max(1),
            shared: Arc::new(Shared {
                in_flight: AtomicUsize::new(0),
                gets_in_flight: AtomicUsize::new(0),
                gets_started: AtomicU64::new(0),
                gets_back_to_back: AtomicU64::new(0),
                gets_beside_others: AtomicU64::new(0),
                lone_after,
                tracked_bytes: AtomicU64::new(0),
                budget_bytes,
                queue: Mutex::new(Queue::default()),
                wake: Condvar::new(),
                counters,
            }),
            thread: Mutex::new(None),
        }
    }

    /// Point reads in flight now, and how many of them are single gets' reads.
    #[cfg(test)]
    pub(crate) fn reads_in_flight(&self) -> (usize, usize) {
        let s = &self.shared;
        (s.in_flight.load(Relaxed), s.gets_in_flight.load(Relaxed))
    }

    /// The state of a newly opened file: cold, with its price.
    pub fn track(self: &Arc<Self>, file: &Arc<dyn RandomAccessFile>) -> WarmthHandle {
        let secs = PRICE_SHARE * file.size() as f64 / self.read_bytes_per_sec as f64;
        let price = Duration::from_secs_f64(secs.min(1e6)).max(MIN_RENT);
        self.shared.tracked_bytes.fetch_add(file.size(), Relaxed);
        WarmthHandle(Arc::new(FileWarmth {
            file: Arc::clone(file),
            state: AtomicU8::new(COLD),
            rent_ns: AtomicU64::new(0),
            price_ns: u64::try_from(price.as_nanos()).unwrap_or(u64::MAX),
            warm_up: Arc::clone(self),
        }))
    }

    /// Bytes of live files warmed or queued (what the budget holds).
    pub fn used_bytes(&self) -> u64 {
        self.budget.used_bytes()
    }

    fn enqueue(&self, job: Job) {
        let mut q = self.shared.queue.lock();
        if q.stopping {
            drop(q);
            job.fail();
            return;
        }
        q.jobs.push_back(job);
        self.shared.wake.notify_one();
        drop(q);
        let mut t = self.thread.lock();
        if t.is_none() {
            let shared = Arc::clone(&self.shared);
            match std::thread::Builder::new()
                .name("cellar-warm-up".into())
                .spawn(move || run(&shared))
            {
                Ok(h) => *t = Some(h),
                // Without a thread nothing is warmed; the queued files stay queued (their
                // budget share held) until the reader drops them. Reads are unaffected.
                Err(_) => self.shared.queue.lock().stopping = true,
            }
        }
    }

    /// Stops the thread after the chunk it is reading and waits for it; queued files are
    /// left unwarmed. Later files are not warmed.
    pub fn shutdown(&self) {
        let jobs = {
            let mut q = self.shared.queue.lock();
            q.stopping = true;
            self.shared.wake.notify_all();
            std::mem::take(&mut q.jobs)
        };
        for job in jobs {
            job.fail();
        }
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

impl Drop for WarmUp {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for WarmUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmUp")
            .field("budget", &self.budget)
            .field("read_bytes_per_sec", &self.read_bytes_per_sec)
            .finish()
    }
}

fn run(shared: &Shared) {
    let mut class = IoClass { idle: false };
    let mut sizer = ChunkSizer::new(shared);
    let mut buf = vec![0u8; LONE_CHUNK_BYTES];
    loop {
        let job = {
            let mut q = shared.queue.lock();
            loop {
                if q.stopping {
                    return;
                }
                if let Some(j) = q.jobs.pop_front() {
                    break j;
                }
                shared.wake.wait(&mut q);
            }
        };
        warm_file(shared, &job, &mut buf, &mut class, &mut sizer);
    }
}

/// The warm-up thread's I/O class, set before each chunk: the idle class, which the disk
/// serves only when no point read is outstanding, while the open files exceed the warm-up's
/// budget or while `BUSY_POINT_READS` single gets of cold files were still waiting after the
/// yield before the chunk; the default class otherwise.
///
/// Why: a database larger than the budget is read partly from the disk for good, and a
/// warm-up that competes with those reads makes them wait, which raises every file's rent
/// and buys more files: at 215 M records the highest rate with p99 <= 10 ms was 11.2 K
/// gets/s at the idle class against 6.0 K at the default one. A database the budget holds
/// whole is best warmed at once, and at the idle class one thread's back-to-back lookups,
/// which keep a read in flight nearly all the time, leave the warm-up barely moving:
/// `mapfile`'s cold lookups at 10 M records ran at 0.75x the default class's rate. Many
/// independent gets waiting are each a request whose latency counts, and each queued behind
/// a chunk: at 89.6 K cold gets/s on a 0.6 GB database, 6 of 8 phases at the default class
/// had a p99 over 10 ms, 1 of 8 at the idle class while gets wait. A batch's reads do not
/// count: its caller waits for all of them, and a warm-up that ends sooner serves the next
/// batch from memory (docs/design/cold-start-warm-up.md, "I/O priority").
struct IoClass {
    idle: bool,
}

impl IoClass {
    /// `gets_waiting`: single gets kept the disk busy through the last yield
    /// (`yield_to_point_reads`).
    fn follow(&mut self, shared: &Shared, gets_waiting: bool) {
        let idle = gets_waiting || shared.tracked_bytes.load(Relaxed) > shared.budget_bytes;
        if idle != self.idle {
            crate::vfs::set_idle_io_priority_for_this_thread(idle);
            self.idle = idle;
        }
    }
}

/// Waits while the disk is busy with point reads, at most twice `last_chunk`: a lookup that
/// queues behind a warm-up chunk waits for it, and under a heavy random load that wait is
/// what the tail latency is made of (docs/design/cold-start-warm-up.md).
/// Returns whether single gets still kept the disk busy when it stopped waiting.
fn yield_to_point_reads(shared: &Shared, last_chunk: Duration) -> bool {
    let limit = last_chunk * 2;
    let started = Instant::now();
    while shared.in_flight.load(Relaxed) >= BUSY_POINT_READS && started.elapsed() < limit {
        std::thread::sleep(Duration::from_micros(100));
    }
    shared.gets_in_flight.load(Relaxed) >= BUSY_POINT_READS
}

/// Reads `job`'s file front to back, stopping early if the reader is dropped or the
/// database shuts down.
///
/// Each chunk is asked of the OS with `will_need` one chunk ahead, so the device has the
/// next chunk while the current one is read, and is then read whole. The hint alone is no
/// wait: the kernel may cap it (at the device's readahead size) or drop it (under memory
/// pressure), and a device that splits the request completes its parts in any order. The
/// whole read waits for every page of the chunk and reads any the hint left out.
///
/// A chunk the page cache already holds whole (`RandomAccessFile::is_cached`) is neither
/// hinted nor read: reading it would only copy it, beside the lookups, and a database read
/// right after it was written is all cached (docs/design/cold-start-warm-up.md, "Chunks
/// already cached").
fn warm_file(
    shared: &Shared,
    job: &FileWarmth,
    buf: &mut [u8],
    class: &mut IoClass,
    sizer: &mut ChunkSizer,
) {
    let size = job.size_bytes();
    let mut offset = 0u64;
    sizer.start_file();
    let mut n = sizer.next(shared, size, false);
    let mut last_chunk = Duration::ZERO;
    class.follow(shared, false);
    let mut cached = size > 0 && ask_unless_cached(&job.file, 0, n);
    while offset < size {
        let gets_waiting = yield_to_point_reads(shared, last_chunk);
        class.follow(shared, gets_waiting);
        if job.state.load(Relaxed) != QUEUED || shared.queue.lock().stopping {
            job.fail();
            return;
        }
        let started = Instant::now();
        let next = offset + n;
        let next_n = sizer.next(shared, size - next, gets_waiting);
        let this_cached = cached;
        cached = next < size && ask_unless_cached(&job.file, next, next_n);
        if this_cached {
            Counters::add(&shared.counters.warm_up_cached_bytes, n);
        } else {
            if job
                .file
                .read_exact_at(&mut buf[..n as usize], offset)
                .is_err()
            {
                job.fail();
                return;
            }
            Counters::add(&shared.counters.warm_up_bytes, n);
        }
        last_chunk = started.elapsed();
        offset = next;
        n = next_n;
    }
    if job
        .state
        .compare_exchange(QUEUED, WARM, Relaxed, Relaxed)
        .is_ok()
    {
        Counters::add(&shared.counters.warm_ups, 1);
    }
}

/// Chooses each chunk's length as it is asked for: `LONE_CHUNK_BYTES` once no single get
/// has read a cold file for `Shared::lone_after` (seen between chunks), or while the last
/// `SIZING_WINDOW_GETS` single gets were one client's (nine in ten came back to back,
/// `BACK_TO_BACK_GAP`, and nine in ten with no other in flight) and fewer than
/// `BUSY_POINT_READS` wait; `WARM_CHUNK_BYTES` otherwise. A file's first chunk is never
/// longer than a get's wait should be.
///
/// Why one client: a thread whose next get follows its last at once waits on nothing but
/// the database, so what it loses is the time until the file is warm, and longer chunks end
/// that sooner. Gets that come with gaps are each a request whose own latency counts (an
/// open loop: a server's clients), and a long chunk is what one of them waits behind; so are
/// many threads' gets, which come back to back too once they queue. `mapfile`'s single
/// lookups (one thread) ran 3-11 % faster with 2 MiB chunks, while `elliptics`' open-loop
/// steps at 1 600-6 400 gets/s had a p99 of 0.3-1.4 ms with 256 KiB chunks and 1.1-3.5 ms
/// with 2 MiB ones (docs/design/cold-start-warm-up.md, "Chunk length: one client").
struct ChunkSizer {
    gets_seen: u64,
    last_get: Instant,
    /// Counts at the start of the current window of gets.
    window_gets: u64,
    window_back_to_back: u64,
    window_beside_others: u64,
    /// Whether the last window's gets were one client's: nine in ten came back to back,
    /// nine in ten alone.
    one_client: bool,
    /// The next chunk is a file's first.
    first: bool,
}

impl ChunkSizer {
    fn new(shared: &Shared) -> Self {
        let gets = shared.gets_started.load(Relaxed);
        ChunkSizer {
            gets_seen: gets,
            last_get: Instant::now(),
            window_gets: gets,
            window_back_to_back: shared.gets_back_to_back.load(Relaxed),
            window_beside_others: shared.gets_beside_others.load(Relaxed),
            one_client: false,
            first: true,
        }
    }

    /// Makes the next chunk a file's first.
    fn start_file(&mut self) {
        self.first = true;
    }

    /// The next chunk's length, at most `remaining`. `gets_waiting`: what the last yield
    /// returned (`yield_to_point_reads`).
    fn next(&mut self, shared: &Shared, remaining: u64, gets_waiting: bool) -> u64 {
        let gets = shared.gets_started.load(Relaxed);
        if gets != self.gets_seen {
            self.gets_seen = gets;
            self.last_get = Instant::now();
        }
        let window = gets.wrapping_sub(self.window_gets);
        if window >= SIZING_WINDOW_GETS {
            let b2b = shared.gets_back_to_back.load(Relaxed);
            let beside = shared.gets_beside_others.load(Relaxed);
            let window_b2b = b2b.wrapping_sub(self.window_back_to_back);
            let window_beside = beside.wrapping_sub(self.window_beside_others);
            self.one_client = window_b2b.saturating_mul(10) >= window.saturating_mul(9)
                && window_beside.saturating_mul(10) <= window;
            self.window_gets = gets;
            self.window_back_to_back = b2b;
            self.window_beside_others = beside;
        }
        let lone = self.last_get.elapsed() >= shared.lone_after;
        let long = !self.first && (lone || (self.one_client && !gets_waiting));
        self.first = false;
        let len = if long {
            LONE_CHUNK_BYTES
        } else {
            WARM_CHUNK_BYTES
        };
        remaining.min(len as u64)
    }
}

/// Whether the page cache holds the `len` bytes at `offset` whole; if not, asks the OS to
/// start reading them.
fn ask_unless_cached(file: &Arc<dyn RandomAccessFile>, offset: u64, len: u64) -> bool {
    if file.is_cached(offset, len) == Some(true) {
        return true;
    }
    file.will_need(offset, len);
    false
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Instant;

    use super::*;
    use crate::error::{Error, Result};

    /// A file of `size` bytes whose reads are counted, fail if `failing`, and take `delay`;
    /// it takes `will_need` hints if `takes_hints`, counting their bytes, and says its bytes
    /// before `cached_below` are in the page cache.
    struct TestFile {
        size: u64,
        reads: AtomicUsize,
        read_bytes: AtomicU64,
        failing: bool,
        delay: Duration,
        takes_hints: bool,
        hinted_bytes: AtomicU64,
        cached_below: u64,
    }

    impl RandomAccessFile for TestFile {
        fn is_cached(&self, offset: u64, len: u64) -> Option<bool> {
            Some(offset + len <= self.cached_below)
        }
        fn will_need(&self, _offset: u64, len: u64) -> bool {
            if self.takes_hints {
                self.hinted_bytes.fetch_add(len, Relaxed);
            }
            self.takes_hints
        }
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
            self.reads.fetch_add(1, Relaxed);
            self.read_bytes.fetch_add(buf.len() as u64, Relaxed);
            std::thread::sleep(self.delay);
            if self.failing || offset + buf.len() as u64 > self.size {
                return Err(Error::Io {
                    path: "test".into(),
                    source: Arc::new(std::io::Error::other("test read error")),
                });
            }
            buf.fill(7);
            Ok(())
        }
        fn size(&self) -> u64 {
            self.size
        }
    }

    fn test_file(size: u64, failing: bool, takes_hints: bool) -> TestFile {
        TestFile {
            size,
            reads: AtomicUsize::new(0),
            read_bytes: AtomicU64::new(0),
            failing,
            delay: Duration::ZERO,
            takes_hints,
            hinted_bytes: AtomicU64::new(0),
            cached_below: 0,
        }
    }

    fn file(size: u64, failing: bool) -> Arc<dyn RandomAccessFile> {
        Arc::new(test_file(size, failing, false))
    }

    fn warm_up(budget: u64) -> (Arc<WarmUp>, Arc<Counters>) {
        // Chunks never grow: the tests count reads of `WARM_CHUNK_BYTES`.
        warm_up_growing_after(budget, Duration::MAX)
    }

    /// [`warm_up`] whose chunks grow after `quiet` without a get.
    fn warm_up_growing_after(budget: u64, quiet: Duration) -> (Arc<WarmUp>, Arc<Counters>) {
        let counters = Arc::new(Counters::default());
        // 1 MB/s: a file's price is half a second of rent per MB.
        let w = WarmUp::with_lone_after(budget, 1_000_000, Arc::clone(&counters), quiet);
        (Arc::new(w), counters)
    }

    /// Tracks `tf`, pays its whole price and waits until the warm-up has read it; the
    /// reader's handle, which keeps the file tracked.
    fn warm_whole(w: &Arc<WarmUp>, tf: &Arc<TestFile>) -> WarmthHandle {
        let f: Arc<dyn RandomAccessFile> = tf.clone();
        let h = w.track(&f);
        pay_reads(&h.0, Duration::from_secs(60));
        wait_until("warm", || h.0.is_warm());
        h
    }

    /// Point reads of a millisecond each (`MAX_RENT_PER_READ`) until `total` is paid.
    fn pay_reads(f: &Arc<FileWarmth>, total: Duration) {
        let reads = total.as_nanos().div_ceil(MAX_RENT_PER_READ.as_nanos());
        for _ in 0..reads {
            f.pay(MAX_RENT_PER_READ);
        }
    }

    #[test]
    fn one_read_pays_at_most_max_rent_per_read() {
        let (w, _) = warm_up(1 << 30);
        // 20 KB at 1 MB/s: a price of 10 ms (MIN_RENT).
        let f = file(20_000, false);
        let h = w.track(&f);
        assert_eq!(h.0.price_ns, 10_000_000);
        // A read that queued for a second pays one millisecond, as nine more reads do.
        h.0.pay(Duration::from_secs(1));
        for _ in 0..8 {
            h.0.pay(Duration::from_millis(50));
        }
        assert!(h.0.is_cold(), "nine reads paid 9 ms of a 10 ms price");
        h.0.pay(Duration::from_secs(1));
        wait_until("warm", || h.0.is_warm());
        w.shutdown();
    }

    fn wait_until(what: &str, done: impl Fn() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out: {what}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_file_is_warmed_once_its_rent_reaches_its_price() {
        let (w, counters) = warm_up(1 << 30);
        let size = (3 << 20) + 5;
        let f = file(size, false);
        let h = w.track(&f);
        assert_eq!(h.0.price_ns, 1_572_866_500);
        // Rent below the price: nothing happens.
        pay_reads(&h.0, Duration::from_secs(1));
        assert!(h.0.is_cold());
        assert_eq!(w.used_bytes(), 0);
        pay_reads(&h.0, Duration::from_millis(573));
        wait_until("warm", || h.0.is_warm());
        assert_eq!(counters.warm_ups.load(Relaxed), 1);
        assert_eq!(counters.warm_up_bytes.load(Relaxed), size);
        assert_eq!(w.used_bytes(), size);
        // A warm file is not timed nor warmed again.
        pay_reads(&h.0, Duration::from_secs(10));
        assert_eq!(counters.warm_ups.load(Relaxed), 1);
        drop(h);
        assert_eq!(w.used_bytes(), 0, "deleting a warm file frees its budget");
        w.shutdown();
    }

    /// Each read records the reading thread's I/O priority (`ioprio_get`).
    #[cfg(target_os = "linux")]
    struct ClassRecorder {
        seen: Mutex<Vec<libc::c_long>>,
    }

    #[cfg(target_os = "linux")]
    impl RandomAccessFile for ClassRecorder {
        fn is_cached(&self, _offset: u64, _len: u64) -> Option<bool> {
            Some(false)
        }
        fn read_exact_at(&self, buf: &mut [u8], _offset: u64) -> Result<()> {
            self.seen.lock().push(crate::vfs::this_thread_io_priority());
            buf.fill(7);
            Ok(())
        }
        fn size(&self) -> u64 {
            100
        }
    }

    /// A file of 100 bytes warmed now: the I/O priority of each of its warm-up reads.
    #[cfg(target_os = "linux")]
    fn warm_up_classes(w: &Arc<WarmUp>) -> Vec<libc::c_long> {
        let f = Arc::new(ClassRecorder {
            seen: Mutex::new(Vec::new()),
        });
        let h = w.track(&(Arc::clone(&f) as Arc<dyn RandomAccessFile>));
        pay_reads(&h.0, Duration::from_millis(10));
        wait_until("warm", || h.0.is_warm());
        let seen = f.seen.lock().clone();
        seen
    }

    /// The warm-up reads at the idle class while the open files exceed its budget, at the
    /// default class while it could hold them all, and switches both ways.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_warm_up_reads_at_the_idle_class_only_while_the_files_exceed_its_budget() {
        let idle: libc::c_long = 3 << 13;
        let (w, _) = warm_up(10_000);
        let within = warm_up_classes(&w);
        // Open (tracked, never read) files that take the total past the budget.
        let big = w.track(&file(9_950, false));
        let over = warm_up_classes(&w);
        drop(big);
        let within_again = warm_up_classes(&w);
        w.shutdown();
        assert!(
            !within.is_empty() && within.iter().all(|&c| c != idle),
            "{within:?}"
        );
        assert!(
            !over.is_empty() && over.iter().all(|&c| c == idle),
            "{over:?}"
        );
        let again = &within_again;
        assert!(
            !again.is_empty() && again.iter().all(|&c| c != idle),
            "{again:?}"
        );
    }

    /// With a budget that holds every file, the warm-up reads at the idle class while
    /// `BUSY_POINT_READS` single gets are waiting, and at the default class while as many
    /// reads of batches are.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_warm_up_reads_at_the_idle_class_while_gets_wait_but_not_batches() {
        let idle: libc::c_long = 3 << 13;
        let (w, _) = warm_up(1 << 30);
        let reader = w.track(&file(100, false));
        let gets: Vec<_> = (0..BUSY_POINT_READS)
            .map(|_| reader.0.point_read(false))
            .collect();
        let behind_gets = warm_up_classes(&w);
        drop(gets);
        let batch: Vec<_> = (0..BUSY_POINT_READS)
            .map(|_| reader.0.point_read(true))
            .collect();
        let behind_batch = warm_up_classes(&w);
        drop(batch);
        assert_eq!(w.shared.in_flight.load(Relaxed), 0);
        assert_eq!(w.shared.gets_in_flight.load(Relaxed), 0);
        w.shutdown();
        let gets = &behind_gets;
        assert!(
            !gets.is_empty() && gets.iter().all(|&c| c == idle),
            "{gets:?}"
        );
        let batch = &behind_batch;
        assert!(
            !batch.is_empty() && batch.iter().all(|&c| c != idle),
            "{batch:?}"
        );
    }

    #[test]
    fn the_warm_up_yields_to_busy_point_reads_for_a_bounded_time() {
        let (w, _) = warm_up(1 << 30);
        let h = w.track(&file(100, false));
        let shared = &w.shared;
        // Idle disk: no wait.
        let t = Instant::now();
        yield_to_point_reads(shared, Duration::from_secs(5));
        assert!(t.elapsed() < Duration::from_secs(1));
        // Busy: waits, but at most twice the last chunk's time.
        let guards: Vec<_> = (0..BUSY_POINT_READS)
            .map(|_| h.0.point_read(false))
            .collect();
        assert_eq!(shared.in_flight.load(Relaxed), BUSY_POINT_READS);
        let t = Instant::now();
        yield_to_point_reads(shared, Duration::from_millis(20));
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(40), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        drop(guards);
        assert_eq!(shared.in_flight.load(Relaxed), 0);
        w.shutdown();
    }

    #[test]
    fn small_files_pay_the_minimum_rent() {
        let (w, _) = warm_up(1 << 30);
        let h = w.track(&file(100, false));
        assert_eq!(h.0.price_ns, MIN_RENT.as_nanos() as u64);
    }

    #[test]
    fn a_file_over_the_budget_is_not_warmed_and_its_rent_starts_over() {
        let (w, counters) = warm_up(1000);
        let f = file(2000, false);
        let h = w.track(&f);
        pay_reads(&h.0, Duration::from_secs(1));
        assert!(h.0.is_cold());
        assert_eq!(h.0.rent_ns.load(Relaxed), 0);
        assert_eq!(w.used_bytes(), 0);
        // Another file that fits is warmed.
        let g = file(900, false);
        let hg = w.track(&g);
        pay_reads(&hg.0, Duration::from_secs(1));
        wait_until("warm", || hg.0.is_warm());
        assert_eq!(w.used_bytes(), 900);
        assert_eq!(counters.warm_ups.load(Relaxed), 1);
        w.shutdown();
    }

    #[test]
    fn a_failed_read_ends_the_warm_up_and_gives_the_budget_back() {
        let (w, counters) = warm_up(1 << 30);
        let f = file(5000, true);
        let h = w.track(&f);
        pay_reads(&h.0, Duration::from_secs(1));
        wait_until("failed", || h.0.state.load(Relaxed) == FAILED);
        assert_eq!(w.used_bytes(), 0);
        assert_eq!(counters.warm_ups.load(Relaxed), 0);
        // Not tried again.
        pay_reads(&h.0, Duration::from_secs(1));
        assert_eq!(h.0.state.load(Relaxed), FAILED);
        drop(h);
        assert_eq!(w.used_bytes(), 0, "released once, not twice");
        w.shutdown();
    }

    #[test]
    fn after_shutdown_nothing_is_warmed_and_nothing_is_held() {
        let (w, counters) = warm_up(1 << 30);
        w.shutdown();
        let f = file(5000, false);
        let h = w.track(&f);
        pay_reads(&h.0, Duration::from_secs(1));
        assert_eq!(h.0.state.load(Relaxed), FAILED);
        assert_eq!(w.used_bytes(), 0);
        assert_eq!(counters.warm_up_bytes.load(Relaxed), 0);
    }

    #[test]
    fn a_dropped_reader_stops_its_warm_up() {
        let (w, _) = warm_up(1 << 30);
        // Ten chunks of 100 ms each: the handle is dropped long before the last.
        let size = 10 * WARM_CHUNK_BYTES as u64;
        let slow = Arc::new(TestFile {
            delay: Duration::from_millis(100),
            ..test_file(size, false, false)
        });
        let f: Arc<dyn RandomAccessFile> = slow.clone();
        let h = w.track(&f);
        let warmth = Arc::clone(&h.0);
        pay_reads(&h.0, Duration::from_secs(100));
        assert_eq!(w.used_bytes(), size);
        wait_until("the first chunk", || slow.reads.load(Relaxed) >= 1);
        drop(h);
        assert_eq!(w.used_bytes(), 0);
        wait_until("the job ends", || Arc::strong_count(&warmth) == 1);
        assert_eq!(
            slow.reads.load(Relaxed),
            1,
            "stopped after the chunk it was reading"
        );
        assert!(!warmth.is_warm());
        assert_eq!(w.used_bytes(), 0, "the job's end does not release again");
        w.shutdown();
    }

    /// Where the OS takes hints, each chunk is asked for whole before it is read whole: the
    /// hint alone does not say that the chunk's pages are in the page cache.
    #[test]
    fn a_file_that_takes_hints_is_asked_for_and_read_whole() {
        let (w, counters) = warm_up(u64::MAX);
        let size = 10 * WARM_CHUNK_BYTES as u64 + 5;
        let tf = Arc::new(test_file(size, false, true));
        let _reader = warm_whole(&w, &tf);
        assert_eq!(tf.hinted_bytes.load(Relaxed), size);
        assert_eq!(tf.reads.load(Relaxed), 11);
        assert_eq!(tf.read_bytes.load(Relaxed), size);
        assert_eq!(counters.warm_up_bytes.load(Relaxed), size);
    }

    /// Chunks grow to `LONE_CHUNK_BYTES` once no single get has read a cold file for the
    /// quiet time, a get keeps them short, and a batch's reads do not.
    #[test]
    fn chunks_grow_while_no_single_get_reads_a_cold_file() {
        let quiet = Duration::from_millis(200);
        let (w, _) = warm_up_growing_after(1 << 30, quiet);
        let reader = w.track(&file(100, false));
        let shared = &w.shared;
        let left = u64::MAX;
        let mut sizer = ChunkSizer::new(shared);
        assert_eq!(
            sizer.next(shared, left, false),
            WARM_CHUNK_BYTES as u64,
            "a file starts short"
        );
        std::thread::sleep(quiet + Duration::from_millis(50));
        assert_eq!(
            sizer.next(shared, left, false),
            LONE_CHUNK_BYTES as u64,
            "no get: long"
        );
        drop(reader.0.point_read(true));
        assert_eq!(
            sizer.next(shared, left, false),
            LONE_CHUNK_BYTES as u64,
            "a batch: long"
        );
        drop(reader.0.point_read(false));
        assert_eq!(
            sizer.next(shared, left, false),
            WARM_CHUNK_BYTES as u64,
            "a get: short"
        );
        assert_eq!(sizer.next(shared, 5, false), 5, "never past the file's end");
        w.shutdown();
    }

    /// Chunks grow while nine in ten single gets of cold files come back to back with their
    /// thread's last one and alone, unless many wait; gets with gaps between them, or beside
    /// other gets, keep chunks short.
    #[test]
    fn chunks_grow_while_single_gets_come_back_to_back() {
        let (w, _) = warm_up(1 << 30);
        let reader = w.track(&file(100, false));
        let shared = &w.shared;
        let left = u64::MAX;
        let mut sizer = ChunkSizer::new(shared);
        let short = WARM_CHUNK_BYTES as u64;
        let long = LONE_CHUNK_BYTES as u64;
        // A fresh thread: its first get follows none.
        let back_to_back = || {
            std::thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..10 * SIZING_WINDOW_GETS {
                        drop(reader.0.point_read(false));
                    }
                });
            })
        };
        back_to_back();
        assert_eq!(
            sizer.next(shared, left, false),
            short,
            "a file starts short"
        );
        assert_eq!(sizer.next(shared, left, false), long, "back to back: long");
        assert_eq!(sizer.next(shared, left, true), short, "unless many wait");
        sizer.start_file();
        assert_eq!(
            sizer.next(shared, left, false),
            short,
            "a file starts short"
        );
        for _ in 0..SIZING_WINDOW_GETS {
            drop(reader.0.point_read(false));
            std::thread::sleep(BACK_TO_BACK_GAP * 3);
        }
        assert_eq!(sizer.next(shared, left, false), short, "gaps: short");
        back_to_back();
        assert_eq!(sizer.next(shared, left, false), long, "back to back again");
        let held = reader.0.point_read(false);
        back_to_back();
        drop(held);
        assert_eq!(
            sizer.next(shared, left, false),
            short,
            "back to back beside another get: short"
        );
        w.shutdown();
    }

    /// Without gets a file is read in long chunks, each asked for and read whole.
    #[test]
    fn a_file_no_get_reads_is_warmed_in_long_chunks() {
        let (w, _) = warm_up_growing_after(u64::MAX, Duration::ZERO);
        let size = 3 * LONE_CHUNK_BYTES as u64 + 5;
        let tf = Arc::new(test_file(size, false, true));
        let _reader = warm_whole(&w, &tf);
        assert_eq!(tf.reads.load(Relaxed), 4);
        assert_eq!(tf.read_bytes.load(Relaxed), size);
        assert_eq!(tf.hinted_bytes.load(Relaxed), size);
        w.shutdown();
    }

    /// Chunks the page cache holds whole are neither asked for nor read, only counted; a
    /// chunk partly cached is read whole.
    #[test]
    fn chunks_already_cached_are_skipped() {
        let (w, counters) = warm_up(u64::MAX);
        let chunk = WARM_CHUNK_BYTES as u64;
        let size = 4 * chunk + 5;
        let tf = Arc::new(TestFile {
            cached_below: 2 * chunk + 1,
            ..test_file(size, false, true)
        });
        let _reader = warm_whole(&w, &tf);
        assert_eq!(tf.hinted_bytes.load(Relaxed), 2 * chunk + 5);
        assert_eq!(tf.reads.load(Relaxed), 3);
        assert_eq!(tf.read_bytes.load(Relaxed), 2 * chunk + 5);
        assert_eq!(counters.warm_up_bytes.load(Relaxed), 2 * chunk + 5);
        assert_eq!(counters.warm_up_cached_bytes.load(Relaxed), 2 * chunk);
        assert_eq!(counters.warm_ups.load(Relaxed), 1);
    }
}
