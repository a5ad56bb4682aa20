//! Sorted runs. Parsed cells live in the arenas of the chunks that produced them
//! ("segments"); a run is a list of fixed-size entries pointing into them. Sorting moves
//! only entries, and a run that outgrows the memory budget is sorted and spilled to a
//! temporary file.
//!
//! Spill file format: entries in key order, each `klen:u32le vlen:u32le key value`.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use rayon::prelude::*;

use crate::LoadError;

/// Key bytes an entry carries inline: cell keys of short rows fit whole, so sorting them
/// compares integers and never calls `memcmp` (which took half the load's time when only 8
/// bytes were inline: rows tie there and timestamps differ at the end).
pub const INLINE_KEY_BYTES: usize = 24;

/// One cell: key and value stored back to back at `seg[off..]`.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The key's first `INLINE_KEY_BYTES`, big-endian, zero-padded.
    pub prefix: [u64; 3],
    pub seg: u32,
    pub off: u32,
    pub klen: u32,
    pub vlen: u32,
}

pub fn key_prefix(key: &[u8]) -> [u64; 3] {
    let mut b = [0u8; INLINE_KEY_BYTES];
    let n = key.len().min(INLINE_KEY_BYTES);
    b[..n].copy_from_slice(&key[..n]);
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i * 8..i * 8 + 8]);
        u64::from_be_bytes(w)
    };
    [word(0), word(1), word(2)]
}

/// Byte order of the keys of `a` and `b`; `tail` gives the bytes past the inline prefix.
pub fn compare_keys<'k>(a: &Entry, b: &Entry, tail: impl Fn(&Entry) -> &'k [u8]) -> Ordering {
    a.prefix.cmp(&b.prefix).then_with(|| {
        let inline = INLINE_KEY_BYTES as u32;
        if a.klen <= inline || b.klen <= inline {
            // Zero padding hides a shorter key's end: the shorter one sorts first.
            a.klen.cmp(&b.klen)
        } else {
            tail(a).cmp(tail(b))
        }
    })
}

/// The cells one parsed chunk produced for one family.
#[derive(Default)]
pub struct ChunkCells {
    pub arena: Vec<u8>,
    /// `seg` is filled in when the chunk joins a run.
    pub entries: Vec<Entry>,
}

impl ChunkCells {
    pub fn push(&mut self, key_start: usize, value: &[u8]) {
        let klen = self.arena.len() - key_start;
        let prefix = key_prefix(&self.arena[key_start..]);
        self.arena.extend_from_slice(value);
        self.entries.push(Entry {
            prefix,
            seg: 0,
            off: key_start as u32,
            klen: klen as u32,
            vlen: value.len() as u32,
        });
    }
}

/// An in-memory run of one family.
#[derive(Default)]
pub struct MemRun {
    pub segs: Vec<Vec<u8>>,
    pub entries: Vec<Entry>,
}

impl MemRun {
    pub fn key(&self, e: &Entry) -> &[u8] {
        &self.segs[e.seg as usize][e.off as usize..(e.off + e.klen) as usize]
    }
    pub fn value(&self, e: &Entry) -> &[u8] {
        let start = (e.off + e.klen) as usize;
        &self.segs[e.seg as usize][start..start + e.vlen as usize]
    }
    fn bytes(&self) -> usize {
        self.segs.iter().map(|s| s.capacity()).sum::<usize>()
            + self.entries.capacity() * std::mem::size_of::<Entry>()
    }

    /// Sorts by key; equal keys stay in input order (segment, then offset), so the last
    /// one read is the last one written.
    pub fn sort(&mut self) {
        let segs = &self.segs;
        let tail = |e: &Entry| {
            &segs[e.seg as usize][e.off as usize + INLINE_KEY_BYTES..(e.off + e.klen) as usize]
        };
        self.entries.par_sort_unstable_by(|a, b| {
            compare_keys(a, b, tail).then_with(|| (a.seg, a.off).cmp(&(b.seg, b.off)))
        });
    }

    /// Whether two entries hold the same key.
    pub fn same_key(&self, a: &Entry, b: &Entry) -> bool {
        a.prefix == b.prefix && a.klen == b.klen && self.key(a) == self.key(b)
    }
}

/// Every family's runs: the one being filled and the ones spilled, oldest first.
pub struct RunSet {
    pub mem: Vec<MemRun>,
    pub spilled: Vec<Vec<PathBuf>>,
    dir: PathBuf,
    spills: usize,
    mem_bytes: usize,
}

impl RunSet {
    pub fn new(families: usize, dir: PathBuf) -> Self {
        RunSet {
            mem: (0..families).map(|_| MemRun::default()).collect(),
            spilled: vec![Vec::new(); families],
            dir,
            spills: 0,
            mem_bytes: 0,
        }
    }

    pub fn add(&mut self, family: usize, mut cells: ChunkCells) {
        if cells.entries.is_empty() {
            return;
        }
        let run = &mut self.mem[family];
        let seg = run.segs.len() as u32;
        for e in &mut cells.entries {
            e.seg = seg;
        }
        self.mem_bytes +=
            cells.arena.capacity() + cells.entries.len() * std::mem::size_of::<Entry>();
        run.segs.push(cells.arena);
        run.entries.append(&mut cells.entries);
    }

    pub fn mem_bytes(&self) -> usize {
        self.mem_bytes
    }

    /// Sorts every in-memory run and writes it to a spill file.
    pub fn spill(&mut self) -> Result<(), LoadError> {
        for f in 0..self.mem.len() {
            let mut run = std::mem::take(&mut self.mem[f]);
            if run.entries.is_empty() {
                continue;
            }
            run.sort();
            let path = self.dir.join(format!("run-{:06}-f{f}", self.spills));
            self.spills += 1;
            let io = |e| LoadError::io(format!("writing spill file {}", path.display()), e);
            let mut w = BufWriter::with_capacity(1 << 20, File::create(&path).map_err(io)?);
            for e in &run.entries {
                w.write_all(&e.klen.to_le_bytes()).map_err(io)?;
                w.write_all(&e.vlen.to_le_bytes()).map_err(io)?;
                w.write_all(run.key(e)).map_err(io)?;
                w.write_all(run.value(e)).map_err(io)?;
            }
            w.flush().map_err(io)?;
            self.spilled[f].push(path);
        }
        self.mem_bytes = self.mem.iter().map(|r| r.bytes()).sum();
        Ok(())
    }
}

/// Reads a spill file back in order.
pub struct SpillReader {
    path: PathBuf,
    r: BufReader<File>,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl SpillReader {
    pub fn open(path: PathBuf) -> Result<Self, LoadError> {
        let f = File::open(&path)
            .map_err(|e| LoadError::io(format!("reading spill file {}", path.display()), e))?;
        Ok(SpillReader {
            path,
            r: BufReader::with_capacity(1 << 20, f),
            key: Vec::new(),
            value: Vec::new(),
        })
    }

    /// Loads the next entry; `false` at the end.
    pub fn advance(&mut self) -> Result<bool, LoadError> {
        let mut lens = [0u8; 8];
        let io = |e| LoadError::io(format!("reading spill file {}", self.path.display()), e);
        match self.r.read_exact(&mut lens) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(io(e)),
        }
        let klen = u32::from_le_bytes([lens[0], lens[1], lens[2], lens[3]]) as usize;
        let vlen = u32::from_le_bytes([lens[4], lens[5], lens[6], lens[7]]) as usize;
        self.key.resize(klen, 0);
        self.value.resize(vlen, 0);
        self.r.read_exact(&mut self.key).map_err(io)?;
        self.r.read_exact(&mut self.value).map_err(io)?;
        Ok(true)
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }
    pub fn value(&self) -> &[u8] {
        &self.value
    }
}

/// Orders merge heads: smallest key first, then the older source (kept-last semantics).
pub fn head_order(a: (&[u8], usize), b: (&[u8], usize)) -> Ordering {
    a.0.cmp(b.0).then(a.1.cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..40)
    }

    proptest! {
        /// Inline prefixes, zero padding and tails order keys exactly as bytes do.
        #[test]
        fn entry_order_is_byte_order(keys in proptest::collection::vec(key(), 1..40)) {
            let mut cells = ChunkCells::default();
            for k in &keys {
                let start = cells.arena.len();
                cells.arena.extend_from_slice(k);
                cells.push(start, b"v");
            }
            let mut run = MemRun::default();
            run.segs.push(cells.arena);
            run.entries = cells.entries;
            run.sort();
            let got: Vec<Vec<u8>> = run.entries.iter().map(|e| run.key(e).to_vec()).collect();
            let mut want = keys.clone();
            want.sort();
            prop_assert_eq!(got, want);
            for w in run.entries.windows(2) {
                prop_assert_eq!(run.same_key(&w[0], &w[1]), run.key(&w[0]) == run.key(&w[1]));
            }
        }
    }
}
