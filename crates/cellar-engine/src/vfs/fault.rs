//! A [`Vfs`] wrapper that fails chosen operations, to test every error path of the engine
//! (a failed fsync must poison the write path, a failed manifest write must not install a
//! version, ...).
//!
//! Operations are counted per [`IoKind`]. [`FaultVfs::fail_nth`] fails exactly one future
//! operation of a kind; [`FaultVfs::fail_after`] fails every operation of a kind from some
//! point on (a dead disk). Files returned by `create` and `open_read` are wrapped, so their
//! `append`, `sync` and `read_exact_at` are counted and can fail too.
//!
//! [`FaultVfs::hold_next`] makes one operation on a file wait until the test lets it go, to
//! order the engine's threads (a flush that is slower than the one after it).
//!
//! A failed operation never reaches the inner Vfs: a failed `append` writes nothing and a
//! failed `sync` syncs nothing. (A real disk may write part of a failed write; the engine
//! must treat the file as unusable after any failure either way, and an all-or-nothing
//! fault keeps tests deterministic.)

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::{CreateOutcome, FileLock, RandomAccessFile, Vfs, WritableFile};
use crate::error::{Error, Result};

/// The kinds of operation a [`FaultVfs`] counts and can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoKind {
    /// `read_all` and `RandomAccessFile::read_exact_at`.
    Read,
    /// `WritableFile::append`, `preallocate` and `trim`.
    Write,
    /// `WritableFile::sync` and `Vfs::sync_dir`.
    Sync,
    /// `Vfs::create`.
    Create,
    /// `Vfs::rename`.
    Rename,
    /// `Vfs::remove`.
    Remove,
    /// `Vfs::create_if_absent`.
    CreateIfAbsent,
    /// `open_read`, `hard_link`, `list`, `create_dir_all`, `file_size`, `lock`.
    /// (`exists` cannot fail and is not counted.)
    Other,
}

/// How every injected error's message starts, so tests can tell injected faults from real
/// ones.
const INJECTED_FAULT: &str = "injected fault";

#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Fail the operation whose 1-based ordinal equals this.
    Exactly(u64),
    /// Fail every operation whose ordinal is at least this.
    From(u64),
    /// Let the operation whose ordinal equals this take effect, then report an error: a
    /// request that timed out after the store acted on it.
    AmbiguousAt(u64),
}

#[derive(Debug, Default)]
struct Faults {
    counts: HashMap<IoKind, u64>,
    rules: HashMap<IoKind, Rule>,
    /// How long each file sync takes before it reaches the inner Vfs.
    sync_delay: Duration,
    /// Operations to hold: the next one of the kind on a path ending in the suffix.
    holds: Vec<(IoKind, String, Arc<Gate>)>,
}

/// Where a held operation waits.
#[derive(Debug, Default)]
struct Gate {
    /// (reached, released)
    state: Mutex<(bool, bool)>,
    cv: Condvar,
}

impl Gate {
    fn pass(&self) {
        let mut s = self.state.lock();
        s.0 = true;
        self.cv.notify_all();
        while !s.1 {
            self.cv.wait(&mut s);
        }
    }

    fn release(&self) {
        self.state.lock().1 = true;
        self.cv.notify_all();
    }
}

/// One held operation (`FaultVfs::hold_next`). Dropping it lets the operation go, so a
/// failing test does not leave an engine thread waiting forever.
#[derive(Debug)]
pub struct Hold {
    gate: Arc<Gate>,
}

impl Hold {
    /// Waits up to `timeout` for the operation to arrive; true once it waits here.
    pub fn wait_reached(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut s = self.gate.state.lock();
        while !s.0 {
            if self.gate.cv.wait_until(&mut s, deadline).timed_out() {
                return s.0;
            }
        }
        true
    }

    /// Lets the operation go on.
    pub fn release(&self) {
        self.gate.release();
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.gate.release();
    }
}

/// Waits at a hold set for this operation, if there is one (it fires once).
fn hold_point(faults: &Mutex<Faults>, kind: IoKind, path: &Path) {
    let gate = {
        let mut f = faults.lock();
        let name = path.to_string_lossy();
        let Some(i) = f
            .holds
            .iter()
            .position(|(k, suffix, _)| *k == kind && name.ends_with(suffix.as_str()))
        else {
            return;
        };
        f.holds.remove(i).2
    };
    gate.pass();
}

/// Wraps another Vfs and fails chosen operations. Clones share counters and rules.
#[derive(Clone)]
pub struct FaultVfs {
    inner: Arc<dyn Vfs>,
    faults: Arc<Mutex<Faults>>,
}

impl std::fmt::Debug for FaultVfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultVfs")
            .field("faults", &*self.faults.lock())
            .finish_non_exhaustive()
    }
}

/// What to do with one operation.
enum Verdict {
    Pass,
    Fail(Error),
    /// Do it, then fail with this error.
    DoThenFail(Error),
}

/// Counts one operation and says what to do with it.
fn judge(faults: &Mutex<Faults>, kind: IoKind, path: &Path) -> Verdict {
    hold_point(faults, kind, path);
    let mut f = faults.lock();
    let n = f.counts.entry(kind).or_insert(0);
    *n += 1;
    let n = *n;
    let err = || {
        Error::io(
            path,
            std::io::Error::other(format!("{INJECTED_FAULT} ({kind:?} #{n})")),
        )
    };
    match f.rules.get(&kind) {
        Some(Rule::Exactly(at)) if n == *at => Verdict::Fail(err()),
        Some(Rule::From(at)) if n >= *at => Verdict::Fail(err()),
        Some(Rule::AmbiguousAt(at)) if n == *at => Verdict::DoThenFail(err()),
        _ => Verdict::Pass,
    }
}

/// Counts one operation and says whether it must fail (an ambiguous rule fails it too, for
/// operations without an effect to keep).
fn tick(faults: &Mutex<Faults>, kind: IoKind, path: &Path) -> Result<()> {
    match judge(faults, kind, path) {
        Verdict::Pass => Ok(()),
        Verdict::Fail(e) | Verdict::DoThenFail(e) => Err(e),
    }
}

impl FaultVfs {
    /// A wrapper of `inner` that injects no fault until told to.
    pub fn new(inner: Arc<dyn Vfs>) -> FaultVfs {
        FaultVfs {
            inner,
            faults: Arc::new(Mutex::new(Faults::default())),
        }
    }

    /// Fails the `n`-th operation of `kind` from now on (1-based: `n == 1` fails the next
    /// one), and only that one. Replaces any earlier rule for `kind`.
    pub fn fail_nth(&self, kind: IoKind, n: u64) {
        let mut f = self.faults.lock();
        let base = f.counts.get(&kind).copied().unwrap_or(0);
        f.rules
            .insert(kind, Rule::Exactly(base.saturating_add(n.max(1))));
    }

    /// Fails the `n`-th operation of `kind` from now on and every one after it.
    pub fn fail_after(&self, kind: IoKind, n: u64) {
        let mut f = self.faults.lock();
        let base = f.counts.get(&kind).copied().unwrap_or(0);
        f.rules
            .insert(kind, Rule::From(base.saturating_add(n.max(1))));
    }

    /// Lets the `n`-th operation of `kind` from now on take effect and then fails it: the
    /// caller cannot tell whether it happened (a timed-out request to an object store).
    pub fn ambiguous_nth(&self, kind: IoKind, n: u64) {
        let mut f = self.faults.lock();
        let base = f.counts.get(&kind).copied().unwrap_or(0);
        f.rules
            .insert(kind, Rule::AmbiguousAt(base.saturating_add(n.max(1))));
    }

    /// Makes every file sync take `delay` first, as a device's flush does (an in-memory
    /// Vfs syncs instantly). Tests of what happens while a sync is in flight, such as
    /// group commit, need it to be in flight for a while.
    pub fn delay_syncs(&self, delay: Duration) {
        self.faults.lock().sync_delay = delay;
    }

    /// Makes the next operation of `kind` on a path ending in `suffix` wait (before it is
    /// counted or reaches the inner Vfs) until the returned [`Hold`] is released or dropped.
    pub fn hold_next(&self, kind: IoKind, suffix: &str) -> Hold {
        let gate = Arc::new(Gate::default());
        self.faults
            .lock()
            .holds
            .push((kind, suffix.to_string(), Arc::clone(&gate)));
        Hold { gate }
    }

    /// Removes every rule; counters keep counting.
    pub fn clear(&self) {
        self.faults.lock().rules.clear();
    }

    /// Operations of `kind` seen so far, failed ones included.
    pub fn count(&self, kind: IoKind) -> u64 {
        self.faults.lock().counts.get(&kind).copied().unwrap_or(0)
    }

    /// True if `err` was produced by a `FaultVfs` rule rather than by the inner Vfs.
    pub fn is_injected(err: &Error) -> bool {
        match err {
            Error::Io { source, .. } => source.to_string().starts_with(INJECTED_FAULT),
            _ => false,
        }
    }

    /// The wrapped Vfs.
    pub fn inner(&self) -> &Arc<dyn Vfs> {
        &self.inner
    }

    fn tick(&self, kind: IoKind, path: &Path) -> Result<()> {
        tick(&self.faults, kind, path)
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    faults: Arc<Mutex<Faults>>,
    path: std::path::PathBuf,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        tick(&self.faults, IoKind::Write, &self.path)?;
        self.inner.append(data)
    }
    fn sync(&mut self) -> Result<()> {
        tick(&self.faults, IoKind::Sync, &self.path)?;
        let delay = self.faults.lock().sync_delay;
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        self.inner.sync()
    }
    fn start_writeback(&mut self, offset: u64, len: u64) -> Result<()> {
        self.inner.start_writeback(offset, len)
    }
    fn preallocate(&mut self, len: u64) -> Result<()> {
        tick(&self.faults, IoKind::Write, &self.path)?;
        self.inner.preallocate(len)
    }
    fn trim(&mut self) -> Result<()> {
        tick(&self.faults, IoKind::Write, &self.path)?;
        self.inner.trim()
    }
    fn reserves_ahead(&self) -> bool {
        self.inner.reserves_ahead()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

struct FaultReadable {
    inner: Arc<dyn RandomAccessFile>,
    faults: Arc<Mutex<Faults>>,
    path: std::path::PathBuf,
}

impl RandomAccessFile for FaultReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        tick(&self.faults, IoKind::Read, &self.path)?;
        self.inner.read_exact_at(buf, offset)
    }
    fn read_exact_at_scan(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        tick(&self.faults, IoKind::Read, &self.path)?;
        self.inner.read_exact_at_scan(buf, offset)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl Vfs for FaultVfs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.tick(IoKind::Create, path)?;
        let inner = self.inner.create(path)?;
        Ok(Box::new(FaultWritable {
            inner,
            faults: self.faults.clone(),
            path: path.to_path_buf(),
        }))
    }

    fn create_mapped(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.tick(IoKind::Create, path)?;
        let inner = self.inner.create_mapped(path)?;
        Ok(Box::new(FaultWritable {
            inner,
            faults: self.faults.clone(),
            path: path.to_path_buf(),
        }))
    }

    fn open_read(&self, path: &Path, direct: bool) -> Result<Arc<dyn RandomAccessFile>> {
        self.tick(IoKind::Other, path)?;
        let inner = self.inner.open_read(path, direct)?;
        Ok(Arc::new(FaultReadable {
            inner,
            faults: self.faults.clone(),
            path: path.to_path_buf(),
        }))
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        self.tick(IoKind::Read, path)?;
        self.inner.read_all(path)
    }

    fn create_if_absent(&self, path: &Path, data: &[u8]) -> Result<CreateOutcome> {
        match judge(&self.faults, IoKind::CreateIfAbsent, path) {
            Verdict::Pass => self.inner.create_if_absent(path, data),
            Verdict::Fail(e) => Err(e),
            Verdict::DoThenFail(e) => {
                let _ = self.inner.create_if_absent(path, data);
                Err(e)
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.counters()
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.tick(IoKind::Rename, from)?;
        self.inner.rename(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.tick(IoKind::Remove, path)?;
        self.inner.remove(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        self.tick(IoKind::Other, to)?;
        self.inner.hard_link(from, to)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.tick(IoKind::Other, dir)?;
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.tick(IoKind::Other, dir)?;
        self.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.tick(IoKind::Sync, dir)?;
        self.inner.sync_dir(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.tick(IoKind::Other, path)?;
        self.inner.file_size(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.tick(IoKind::Other, path)?;
        self.inner.lock(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemVfs;
    use std::path::PathBuf;

    fn setup() -> (MemVfs, FaultVfs) {
        let mem = MemVfs::new();
        let fault = FaultVfs::new(Arc::new(mem.clone()));
        (mem, fault)
    }

    #[test]
    fn fails_exactly_the_nth() -> Result<()> {
        let (mem, fv) = setup();
        let mut f = fv.create(&PathBuf::from("a"))?;
        f.append(b"0")?;
        fv.fail_nth(IoKind::Write, 3);
        f.append(b"1")?;
        f.append(b"2")?;
        let err = f.append(b"3").err();
        assert!(err.as_ref().is_some_and(FaultVfs::is_injected), "{err:?}");
        f.append(b"4")?;
        f.append(b"5")?;
        // The failed append wrote nothing.
        assert_eq!(mem.read_all(&PathBuf::from("a"))?, b"01245");
        assert_eq!(fv.count(IoKind::Write), 6);
        assert_eq!(fv.count(IoKind::Create), 1);
        assert_eq!(f.len(), 5);
        Ok(())
    }

    #[test]
    fn fail_after_is_a_dead_disk_until_cleared() -> Result<()> {
        let (_mem, fv) = setup();
        let mut f = fv.create(&PathBuf::from("a"))?;
        fv.fail_after(IoKind::Sync, 2);
        f.sync()?;
        assert!(f.sync().is_err());
        assert!(fv.sync_dir(&PathBuf::from("")).is_err());
        assert!(f.sync().is_err());
        fv.clear();
        f.sync()?;
        fv.sync_dir(&PathBuf::from(""))?;
        assert_eq!(fv.count(IoKind::Sync), 6);
        Ok(())
    }

    #[test]
    fn every_kind_is_counted_and_can_fail() -> Result<()> {
        let (_mem, fv) = setup();
        let shared: Arc<dyn Vfs> = Arc::new(fv.clone());
        let a = PathBuf::from("a");
        let b = PathBuf::from("b");
        fv.fail_nth(IoKind::Create, 1);
        assert!(shared.create(&a).is_err());
        assert!(!shared.exists(&a));
        shared.create(&a)?.append(b"xyz")?;

        let r = shared.open_read(&a, false)?;
        fv.fail_nth(IoKind::Read, 2);
        let mut buf = [0u8; 2];
        r.read_exact_at(&mut buf, 0)?;
        assert!(r.read_exact_at(&mut buf, 0).is_err());
        assert_eq!(shared.read_all(&a)?, b"xyz");
        assert_eq!(fv.count(IoKind::Read), 3);

        fv.fail_nth(IoKind::Rename, 1);
        assert!(shared.rename(&a, &b).is_err());
        assert!(shared.exists(&a));
        shared.rename(&a, &b)?;

        fv.fail_nth(IoKind::Remove, 1);
        assert!(shared.remove(&b).is_err());
        assert!(shared.exists(&b));
        shared.remove(&b)?;

        fv.fail_nth(IoKind::Other, 1);
        assert!(shared.list(&PathBuf::from("")).is_err());
        assert!(shared.list(&PathBuf::from(""))?.is_empty());
        Ok(())
    }
}
