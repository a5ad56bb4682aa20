//! An in-memory [`Vfs`] that can show what a crash would leave behind (the "crash-cloning"
//! file system idea from Pebble).
//!
//! Two views of the namespace are kept side by side:
//! - the *live* namespace: what the running process (and the OS) sees right now;
//! - the *durable* namespace: what a power loss would leave. A creation, rename or removal
//!   reaches it only when the parent directory is `sync_dir`ed, as on POSIX.
//!
//! Every file's bytes live in one shared node (hard links point at the same node), which
//! records both everything appended ("the OS has it") and the length covered by the last
//! `sync` ("the disk has it"). [`MemVfs::crash_clone`] keeps the durable namespace with
//! every file cut to its synced length; [`MemVfs::process_crash_clone`] keeps everything.
//!
//! Simplifications, each chosen so tests stay deterministic:
//! - Directories are durable as soon as `create_dir_all` returns, and cannot be removed or
//!   renamed (the engine never does either).
//! - `create` over an existing file truncates it in place, as `O_TRUNC` does (hard links
//!   see the truncation), and the truncation counts as durable at once.
//! - A crash keeps a synced prefix exactly; real disks may also keep some unsynced bytes,
//!   which the log reader's torn-tail rule has to handle anyway.
//! - Reserved space (`WritableFile::preallocate`) is zeros in `data` past the appended bytes;
//!   a crash keeps the synced prefix, then zeros up to the size the last sync saw, so an
//!   unsynced append into reserved space reads back as zeros.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::{CreateOutcome, FileLock, RandomAccessFile, Vfs, WritableFile};
use crate::error::{Error, Result};

/// One file's bytes, shared by every name (hard link) and open handle that refers to it.
#[derive(Debug, Default)]
struct FileData {
    data: Vec<u8>,
    /// Prefix of `data` that a power loss keeps.
    synced_len: usize,
    /// The file's size at the last sync: with reserved space it runs past `synced_len`, and
    /// a power loss keeps zeros up to it.
    synced_size: usize,
}

impl FileData {
    /// What a power loss leaves of this file.
    fn after_power_loss(&self) -> FileData {
        let mut data = self
            .data
            .get(..self.synced_len)
            .unwrap_or(&self.data)
            .to_vec();
        if data.len() < self.synced_size {
            data.resize(self.synced_size, 0);
        }
        FileData {
            synced_len: data.len().min(self.synced_len),
            synced_size: data.len(),
            data,
        }
    }
}

type Node = Arc<RwLock<FileData>>;

#[derive(Debug, Clone)]
enum Entry {
    Dir,
    File(Node),
}

#[derive(Debug, Default)]
struct State {
    live: BTreeMap<PathBuf, Entry>,
    durable: BTreeMap<PathBuf, Entry>,
    locks: HashSet<PathBuf>,
}

/// An in-memory file system. Cloning it shares the state (use [`MemVfs::crash_clone`] for
/// an independent copy).
#[derive(Debug, Clone, Default)]
pub struct MemVfs {
    state: Arc<Mutex<State>>,
}

fn io_err(path: &Path, kind: ErrorKind, msg: &str) -> Error {
    Error::io(path, std::io::Error::new(kind, msg.to_string()))
}

/// Paths with no parent ("", "/", or a bare relative name's "") always exist, like the
/// working directory and the root do.
fn is_root(p: &Path) -> bool {
    p.as_os_str().is_empty() || p.parent().is_none()
}

impl State {
    fn dir_exists(&self, dir: &Path) -> bool {
        is_root(dir) || matches!(self.live.get(dir), Some(Entry::Dir))
    }

    fn check_parent(&self, path: &Path) -> Result<()> {
        match path.parent() {
            Some(parent) if !self.dir_exists(parent) => Err(io_err(
                path,
                ErrorKind::NotFound,
                "parent directory does not exist",
            )),
            _ => Ok(()),
        }
    }

    fn file(&self, path: &Path) -> Result<Node> {
        match self.live.get(path) {
            Some(Entry::File(node)) => Ok(node.clone()),
            Some(Entry::Dir) => Err(io_err(path, ErrorKind::Other, "is a directory")),
            None => Err(io_err(path, ErrorKind::NotFound, "no such file")),
        }
    }

    /// Copies both namespaces. Nodes shared between names (hard links) or between the two
    /// views stay shared in the copy; `cut` picks how much of each file survives.
    fn copy(&self, durable_only: bool, cut: impl Fn(&FileData) -> FileData) -> State {
        let mut copied: HashMap<*const RwLock<FileData>, Node> = HashMap::new();
        let mut copy_map = |m: &BTreeMap<PathBuf, Entry>| -> BTreeMap<PathBuf, Entry> {
            m.iter()
                .map(|(p, e)| {
                    let e = match e {
                        Entry::Dir => Entry::Dir,
                        Entry::File(node) => Entry::File(
                            copied
                                .entry(Arc::as_ptr(node))
                                .or_insert_with(|| Arc::new(RwLock::new(cut(&node.read()))))
                                .clone(),
                        ),
                    };
                    (p.clone(), e)
                })
                .collect()
        };
        let durable = copy_map(&self.durable);
        let live = if durable_only {
            durable.clone()
        } else {
            copy_map(&self.live)
        };
        State {
            live,
            durable,
            locks: HashSet::new(),
        }
    }
}

impl MemVfs {
    /// An empty file system.
    pub fn new() -> MemVfs {
        MemVfs::default()
    }

    /// What survives a power loss now: only durable directory entries, each file cut to
    /// its synced length. The clone is independent of `self`.
    pub fn crash_clone(&self) -> MemVfs {
        let st = self.state.lock();
        let copy = st.copy(true, FileData::after_power_loss);
        MemVfs {
            state: Arc::new(Mutex::new(copy)),
        }
    }

    /// What survives the process dying now: the OS keeps every appended byte and every
    /// namespace change. Durability bookkeeping is copied too, so a later `crash_clone` of
    /// the result still models a power loss that follows the process crash. Locks are
    /// released (they die with the process).
    pub fn process_crash_clone(&self) -> MemVfs {
        let st = self.state.lock();
        let copy = st.copy(false, |f| FileData {
            data: f.data.clone(),
            synced_len: f.synced_len,
            synced_size: f.synced_size,
        });
        MemVfs {
            state: Arc::new(Mutex::new(copy)),
        }
    }

    /// Every live file with its length, sorted by path.
    pub fn list_all(&self) -> Vec<(PathBuf, u64)> {
        let st = self.state.lock();
        st.live
            .iter()
            .filter_map(|(p, e)| match e {
                Entry::File(n) => Some((p.clone(), n.read().data.len() as u64)),
                Entry::Dir => None,
            })
            .collect()
    }

    /// The live contents of a file, or `None` if it does not exist.
    pub fn file_contents(&self, path: &Path) -> Option<Vec<u8>> {
        let node = self.state.lock().file(path).ok()?;
        let data = node.read().data.clone();
        Some(data)
    }

    /// Length of the prefix of `path` that a power loss would keep (ignoring whether its
    /// directory entry is durable).
    pub fn synced_len(&self, path: &Path) -> Result<u64> {
        let node = self.state.lock().file(path)?;
        let n = node.read().synced_len as u64;
        Ok(n)
    }

    /// XORs one byte of a file with `xor` (tests simulate bit rot with it).
    pub fn corrupt_byte(&self, path: &Path, offset: u64, xor: u8) -> Result<()> {
        let node = self.state.lock().file(path)?;
        let mut f = node.write();
        let b = usize::try_from(offset)
            .ok()
            .and_then(|o| f.data.get_mut(o))
            .ok_or_else(|| io_err(path, ErrorKind::UnexpectedEof, "offset past end of file"))?;
        *b ^= xor;
        Ok(())
    }

    /// Cuts a file to `len` bytes (tests simulate torn writes with it).
    pub fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let node = self.state.lock().file(path)?;
        let mut f = node.write();
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(f.data.len());
        f.data.truncate(len);
        f.synced_len = f.synced_len.min(len);
        f.synced_size = f.synced_size.min(len);
        Ok(())
    }
}

struct MemWritable {
    node: Node,
    len: u64,
}

impl WritableFile for MemWritable {
    /// Writes at the append position, over reserved zeros or past the end.
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut f = self.node.write();
        let start = usize::try_from(self.len).unwrap_or(usize::MAX);
        let end = start.saturating_add(data.len());
        if f.data.len() < end {
            f.data.resize(end, 0);
        }
        if let Some(dst) = f.data.get_mut(start..end) {
            dst.copy_from_slice(data);
        }
        self.len += data.len() as u64;
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        let mut f = self.node.write();
        f.synced_len = usize::try_from(self.len)
            .unwrap_or(usize::MAX)
            .min(f.data.len());
        f.synced_size = f.data.len();
        Ok(())
    }
    fn preallocate(&mut self, len: u64) -> Result<()> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let mut f = self.node.write();
        if f.data.len() < len {
            f.data.resize(len, 0);
        }
        Ok(())
    }
    /// Durable at the next sync: until then a power loss brings the zeros back.
    fn trim(&mut self) -> Result<()> {
        let len = usize::try_from(self.len).unwrap_or(usize::MAX);
        let mut f = self.node.write();
        f.data.truncate(len);
        f.synced_len = f.synced_len.min(len);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
}

struct MemReadable {
    node: Node,
    path: PathBuf,
    /// Size when opened, as `RealVfs` reports it.
    size: u64,
}

impl RandomAccessFile for MemReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let f = self.node.read();
        let src = usize::try_from(offset)
            .ok()
            .and_then(|start| f.data.get(start..start.checked_add(buf.len())?))
            .ok_or_else(|| {
                io_err(
                    &self.path,
                    ErrorKind::UnexpectedEof,
                    "read past end of file",
                )
            })?;
        buf.copy_from_slice(src);
        Ok(())
    }
    /// Every byte is in memory.
    fn is_cached(&self, _offset: u64, _len: u64) -> Option<bool> {
        Some(true)
    }
    /// A copy of the file as it is now: the files mapped are never written again.
    fn map_whole(&self) -> Option<bytes::Bytes> {
        let f = self.node.read();
        let size = usize::try_from(self.size).ok()?;
        f.data.get(..size).map(bytes::Bytes::copy_from_slice)
    }
    fn size(&self) -> u64 {
        self.size
    }
}

struct MemLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

impl Vfs for MemVfs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut st = self.state.lock();
        st.check_parent(path)?;
        let node = match st.live.get(path) {
            Some(Entry::Dir) => return Err(io_err(path, ErrorKind::Other, "is a directory")),
            Some(Entry::File(node)) => {
                let mut f = node.write();
                f.data.clear();
                f.synced_len = 0;
                f.synced_size = 0;
                node.clone()
            }
            None => {
                let node = Node::default();
                st.live
                    .insert(path.to_path_buf(), Entry::File(node.clone()));
                node
            }
        };
        Ok(Box::new(MemWritable { node, len: 0 }))
    }

    fn open_read(&self, path: &Path, _direct: bool) -> Result<Arc<dyn RandomAccessFile>> {
        let node = self.state.lock().file(path)?;
        let size = node.read().data.len() as u64;
        Ok(Arc::new(MemReadable {
            node,
            path: path.to_path_buf(),
            size,
        }))
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let node = self.state.lock().file(path)?;
        let data = node.read().data.clone();
        Ok(data)
    }

    fn create_if_absent(&self, path: &Path, data: &[u8]) -> Result<CreateOutcome> {
        let mut st = self.state.lock();
        st.check_parent(path)?;
        if st.live.contains_key(path) {
            return Ok(CreateOutcome::AlreadyExists);
        }
        let node = Node::default();
        {
            let mut f = node.write();
            f.data = data.to_vec();
            f.synced_len = data.len();
            f.synced_size = data.len();
        }
        st.live
            .insert(path.to_path_buf(), Entry::File(node.clone()));
        st.durable.insert(path.to_path_buf(), Entry::File(node));
        Ok(CreateOutcome::Created)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.state.lock();
        let node = st.file(from)?;
        st.check_parent(to)?;
        if matches!(st.live.get(to), Some(Entry::Dir)) {
            return Err(io_err(to, ErrorKind::Other, "is a directory"));
        }
        st.live.remove(from);
        st.live.insert(to.to_path_buf(), Entry::File(node));
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.file(path)?;
        st.live.remove(path);
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.state.lock();
        let node = st.file(from)?;
        st.check_parent(to)?;
        if st.live.contains_key(to) {
            return Err(io_err(to, ErrorKind::AlreadyExists, "file exists"));
        }
        st.live.insert(to.to_path_buf(), Entry::File(node));
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let st = self.state.lock();
        if !st.dir_exists(dir) {
            return Err(io_err(dir, ErrorKind::NotFound, "no such directory"));
        }
        // BTreeMap order is by path components, so names come out sorted like RealVfs's.
        let mut names: Vec<String> = st
            .live
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        let mut todo: Vec<&Path> = dir.ancestors().filter(|p| !is_root(p)).collect();
        todo.reverse();
        for d in todo {
            match st.live.get(d) {
                Some(Entry::Dir) => {}
                Some(Entry::File(_)) => return Err(io_err(d, ErrorKind::Other, "not a directory")),
                None => {
                    st.live.insert(d.to_path_buf(), Entry::Dir);
                    st.durable.insert(d.to_path_buf(), Entry::Dir);
                }
            }
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        if !st.dir_exists(dir) {
            return Err(io_err(dir, ErrorKind::NotFound, "no such directory"));
        }
        let in_dir = |p: &Path| p.parent() == Some(dir);
        // The durable view of `dir` becomes exactly the live view of it.
        let State { live, durable, .. } = &mut *st;
        durable.retain(|p, e| matches!(e, Entry::Dir) || !in_dir(p));
        for (p, e) in live.iter() {
            if let Entry::File(n) = e {
                if in_dir(p) {
                    durable.insert(p.clone(), Entry::File(n.clone()));
                }
            }
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let st = self.state.lock();
        is_root(path) || st.live.contains_key(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let node = self.state.lock().file(path)?;
        let n = node.read().data.len() as u64;
        Ok(n)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut st = self.state.lock();
        if st.locks.contains(path) {
            return Err(Error::Locked(path.display().to_string()));
        }
        // Like RealVfs, locking creates the (empty) lock file if it is missing.
        match st.live.get(path) {
            Some(Entry::File(_)) => {}
            Some(Entry::Dir) => return Err(io_err(path, ErrorKind::Other, "is a directory")),
            None => {
                st.check_parent(path)?;
                st.live
                    .insert(path.to_path_buf(), Entry::File(Node::default()));
            }
        }
        st.locks.insert(path.to_path_buf());
        Ok(Box::new(MemLock {
            state: self.state.clone(),
            path: path.to_path_buf(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    fn write(vfs: &MemVfs, path: &str, data: &[u8], sync: bool) -> Result<()> {
        let mut f = vfs.create(&p(path))?;
        f.append(data)?;
        if sync {
            f.sync()?;
        }
        Ok(())
    }

    /// Reserved space is zeros that a sync makes durable; an unsynced append into it reads
    /// back as zeros after a power loss, and so does a trim not yet synced.
    #[test]
    fn reserved_space_survives_a_crash_as_zeros() -> Result<()> {
        let vfs = MemVfs::new();
        vfs.create_dir_all(&p("db"))?;
        let mut f = vfs.create(&p("db/w"))?;
        vfs.sync_dir(&p("db"))?;
        f.append(b"synced")?;
        f.preallocate(32)?;
        f.sync()?;
        f.append(b"-lost")?;
        assert_eq!(f.len(), 11);
        let live = vfs.file_contents(&p("db/w")).unwrap_or_default();
        assert_eq!(&live[..11], b"synced-lost");
        assert_eq!(live.len(), 32);

        let crashed = vfs.crash_clone().read_all(&p("db/w"))?;
        let mut want = b"synced".to_vec();
        want.resize(32, 0);
        assert_eq!(crashed, want);
        assert_eq!(vfs.process_crash_clone().read_all(&p("db/w"))?, live);

        f.trim()?;
        assert_eq!(vfs.read_all(&p("db/w"))?, b"synced-lost");
        assert_eq!(
            vfs.crash_clone().read_all(&p("db/w"))?,
            want,
            "trim not synced"
        );
        f.sync()?;
        assert_eq!(vfs.crash_clone().read_all(&p("db/w"))?, b"synced-lost");
        Ok(())
    }

    #[test]
    fn crash_clone_drops_unsynced_tail() -> Result<()> {
        let vfs = MemVfs::new();
        vfs.create_dir_all(&p("db"))?;
        let mut f = vfs.create(&p("db/a"))?;
        vfs.sync_dir(&p("db"))?;
        f.append(b"hello ")?;
        f.sync()?;
        f.append(b"world")?;
        assert_eq!(f.len(), 11);
        assert_eq!(vfs.read_all(&p("db/a"))?, b"hello world");

        let crashed = vfs.crash_clone();
        assert_eq!(crashed.read_all(&p("db/a"))?, b"hello ");
        // The clone is independent: later writes to the original do not show up in it.
        f.sync()?;
        assert_eq!(crashed.read_all(&p("db/a"))?, b"hello ");
        assert_eq!(vfs.crash_clone().read_all(&p("db/a"))?, b"hello world");
        Ok(())
    }

    #[test]
    fn crash_clone_needs_dir_sync_for_creation() -> Result<()> {
        let vfs = MemVfs::new();
        vfs.create_dir_all(&p("db"))?;
        write(&vfs, "db/synced-file-unsynced-dir", b"x", true)?;
        assert!(!vfs.crash_clone().exists(&p("db/synced-file-unsynced-dir")));
        vfs.sync_dir(&p("db"))?;
        let c = vfs.crash_clone();
        assert_eq!(c.read_all(&p("db/synced-file-unsynced-dir"))?, b"x");
        assert_eq!(
            c.list(&p("db"))?,
            vec!["synced-file-unsynced-dir".to_string()]
        );
        // Syncing another directory does not help.
        vfs.create_dir_all(&p("other"))?;
        write(&vfs, "db/b", b"y", true)?;
        vfs.sync_dir(&p("other"))?;
        assert!(!vfs.crash_clone().exists(&p("db/b")));
        Ok(())
    }

    #[test]
    fn removal_needs_dir_sync() -> Result<()> {
        let vfs = MemVfs::new();
        vfs.create_dir_all(&p("db"))?;
        write(&vfs, "db/a", b"abc", true)?;
        vfs.sync_dir(&p("db"))?;
        vfs.remove(&p("db/a"))?;
        assert!(!vfs.exists(&p("db/a")));
        assert_eq!(vfs.crash_clone().read_all(&p("db/a"))?, b"abc");
        vfs.sync_dir(&p("db"))?;
        assert!(!vfs.crash_clone().exists(&p("db/a")));
        Ok(())
    }

    #[test]
    fn rename_durability() -> Result<()> {
        let vfs = MemVfs::new();
        vfs.create_dir_all(&p("db"))?;
        write(&vfs, "db/CURRENT", b"old", true)?;
        vfs.sync_dir(&p("db"))?;
        write(&vfs, "db/CURRENT.tmp", b"new", true)?;
        vfs.rename(&p("db/CURRENT.tmp"), &p("db/CURRENT"))?;
        assert_eq!(vfs.read_all(&p("db/CURRENT"))?, b"new");
        assert!(!vfs.exists(&p("db/CURRENT.tmp")));
        // Before the directory sync a power loss brings the old name binding back.
        let c = vfs.crash_clone();
        assert_eq!(c.read_all(&p("db/CURRENT"))?, b"old");
        assert!(!c.exists(&p("db/CURRENT.tmp")));
        vfs.sync_dir(&p("db"))?;
        let c = vfs.crash_clone();
        assert_eq!(c.read_all(&p("db/CURRENT"))?, b"new");
        assert_eq!(c.list(&p("db"))?, vec!["CURRENT".to_string()]);
        Ok(())
    }

    #[test]
    fn process_crash_clone_keeps_everything() -> Result<()> {
        let vfs = MemVfs::new();
        vfs.create_dir_all(&p("db"))?;
        write(&vfs, "db/a", b"unsynced", false)?;
        write(&vfs, "db/b", b"gone", true)?;
        vfs.sync_dir(&p("db"))?;
        vfs.remove(&p("db/b"))?;
        let pc = vfs.process_crash_clone();
        assert_eq!(pc.read_all(&p("db/a"))?, b"unsynced");
        assert!(!pc.exists(&p("db/b")));
        // Durability bookkeeping carries over: a power loss after the process crash still
        // loses the unsynced bytes and resurrects the un-dir-synced removal.
        let c = pc.crash_clone();
        assert_eq!(c.read_all(&p("db/a"))?, b"");
        assert_eq!(c.read_all(&p("db/b"))?, b"gone");
        Ok(())
    }

    #[test]
    fn hard_links_share_contents() -> Result<()> {
        let vfs = MemVfs::new();
        vfs.create_dir_all(&p("db"))?;
        vfs.create_dir_all(&p("ckpt"))?;
        let mut f = vfs.create(&p("db/1.sst"))?;
        f.append(b"abc")?;
        vfs.hard_link(&p("db/1.sst"), &p("ckpt/1.sst"))?;
        f.append(b"def")?;
        f.sync()?;
        assert_eq!(vfs.read_all(&p("ckpt/1.sst"))?, b"abcdef");
        vfs.remove(&p("db/1.sst"))?;
        assert_eq!(vfs.read_all(&p("ckpt/1.sst"))?, b"abcdef");
        vfs.sync_dir(&p("db"))?;
        vfs.sync_dir(&p("ckpt"))?;
        let c = vfs.crash_clone();
        assert_eq!(c.list_all(), vec![(p("ckpt/1.sst"), 6)]);
        assert!(vfs.hard_link(&p("ckpt/1.sst"), &p("ckpt/1.sst")).is_err());
        Ok(())
    }

    #[test]
    fn reads_and_errors() -> Result<()> {
        let vfs = MemVfs::new();
        assert!(vfs.create(&p("nodir/a")).is_err());
        vfs.create_dir_all(&p("/x/y"))?;
        write(&vfs, "/x/y/f", b"0123456789", false)?;
        let r = vfs.open_read(&p("/x/y/f"), true)?;
        assert_eq!(r.size(), 10);
        let mut buf = [0u8; 4];
        r.read_exact_at(&mut buf, 6)?;
        assert_eq!(&buf, b"6789");
        match r.read_exact_at(&mut buf, 7) {
            Err(Error::Io { source, .. }) => assert_eq!(source.kind(), ErrorKind::UnexpectedEof),
            other => panic!("expected UnexpectedEof, got {other:?}"),
        }
        assert!(r.read_exact_at(&mut buf, u64::MAX).is_err());
        assert!(vfs.read_all(&p("/x/y/missing")).is_err());
        assert!(vfs.remove(&p("/x/y/missing")).is_err());
        assert_eq!(vfs.file_size(&p("/x/y/f"))?, 10);
        assert_eq!(vfs.list(&p("/x"))?, vec!["y".to_string()]);
        assert!(vfs.list(&p("/nope")).is_err());
        vfs.corrupt_byte(&p("/x/y/f"), 0, 0xff)?;
        assert_eq!(
            vfs.file_contents(&p("/x/y/f")).map(|d| d[0]),
            Some(b'0' ^ 0xff)
        );
        assert!(vfs.corrupt_byte(&p("/x/y/f"), 10, 1).is_err());
        vfs.truncate(&p("/x/y/f"), 3)?;
        assert_eq!(vfs.file_size(&p("/x/y/f"))?, 3);
        Ok(())
    }

    #[test]
    fn lock_is_exclusive_until_dropped() -> Result<()> {
        let vfs = MemVfs::new();
        vfs.create_dir_all(&p("db"))?;
        let g = vfs.lock(&p("db/LOCK"))?;
        assert!(vfs.exists(&p("db/LOCK")));
        let shared: Arc<dyn Vfs> = Arc::new(vfs.clone());
        assert!(matches!(shared.lock(&p("db/LOCK")), Err(Error::Locked(_))));
        drop(g);
        let _g = shared.lock(&p("db/LOCK"))?;
        // A crash releases locks.
        let _g2 = vfs.process_crash_clone().lock(&p("db/LOCK"))?;
        Ok(())
    }

    #[test]
    fn create_truncates_in_place() -> Result<()> {
        let vfs = MemVfs::new();
        write(&vfs, "a", b"long contents", true)?;
        vfs.sync_dir(&p(""))?;
        write(&vfs, "a", b"new", false)?;
        assert_eq!(vfs.read_all(&p("a"))?, b"new");
        assert_eq!(vfs.crash_clone().read_all(&p("a"))?, b"");
        Ok(())
    }
}
