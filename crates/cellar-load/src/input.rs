//! Input files, plain or gzip, read in chunks that end at line boundaries so chunks can be
//! parsed independently.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::LoadError;

/// Target chunk size: big enough to amortize dispatch, small enough to spread over cores.
pub const CHUNK_BYTES: usize = 8 << 20;

pub fn total_size(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// Counts the bytes taken from the underlying file (compressed bytes for gzip).
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A chunk of whole lines.
pub struct Chunk {
    pub bytes: Vec<u8>,
    /// 1-based line number (in the file) of the chunk's first line.
    pub first_line: u64,
    pub lines: u64,
}

pub struct ChunkReader {
    path: PathBuf,
    reader: Box<dyn BufRead + Send>,
    raw_read: Arc<AtomicU64>,
    carry: Vec<u8>,
    next_line: u64,
    has_header: bool,
    header_taken: bool,
    eof: bool,
    chunk_bytes: usize,
}

fn split_header(line: &[u8]) -> Vec<String> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Hypertable writes its header as a comment: "#row<TAB>column...".
    let line = line.strip_prefix(b"#").unwrap_or(line);
    line.split(|b| *b == b'\t')
        .map(|f| String::from_utf8_lossy(f).trim().to_string())
        .collect()
}

fn io_err(path: &Path, e: std::io::Error) -> LoadError {
    LoadError::io(format!("reading {}", path.display()), e)
}

pub fn read_header_file(path: &Path) -> Result<Vec<String>, LoadError> {
    let mut r = ChunkReader::open(path, true, CHUNK_BYTES)?;
    r.header()
}

impl ChunkReader {
    pub fn open(path: &Path, has_header: bool, chunk_bytes: usize) -> Result<Self, LoadError> {
        let f = File::open(path)
            .map_err(|e| LoadError::io(format!("opening {}", path.display()), e))?;
        let raw_read = Arc::new(AtomicU64::new(0));
        let counted = Counting {
            inner: f,
            read: Arc::clone(&raw_read),
        };
        let gz = path.extension().is_some_and(|e| e == "gz");
        let reader: Box<dyn BufRead + Send> = if gz {
            Box::new(BufReader::with_capacity(
                1 << 20,
                flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 20, counted)),
            ))
        } else {
            Box::new(BufReader::with_capacity(1 << 20, counted))
        };
        Ok(ChunkReader {
            path: path.to_path_buf(),
            reader,
            raw_read,
            carry: Vec::new(),
            next_line: 1,
            has_header,
            header_taken: false,
            eof: false,
            chunk_bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes consumed from the file so far.
    pub fn raw_bytes_read(&self) -> u64 {
        self.raw_read.load(Ordering::Relaxed)
    }

    /// The header line's column names (reads the first line).
    pub fn header(&mut self) -> Result<Vec<String>, LoadError> {
        if !self.has_header || self.header_taken {
            return Err(LoadError::InvalidArgument(
                "internal: header requested twice or for a headerless file".into(),
            ));
        }
        self.header_taken = true;
        let mut line = Vec::new();
        self.reader
            .read_until(b'\n', &mut line)
            .map_err(|e| self.io_err(e))?;
        self.next_line += 1;
        if line.is_empty() {
            return Err(LoadError::BadHeader {
                file: self.path.clone(),
                reason: "the file is empty: expected a header line naming the columns".into(),
            });
        }
        Ok(split_header(&line))
    }

    fn io_err(&self, e: std::io::Error) -> LoadError {
        io_err(&self.path, e)
    }

    /// The next chunk of whole lines (the last line may lack its newline), `None` at the end.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, LoadError> {
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.carry);
        let cap = self.chunk_bytes;
        buf.reserve(cap + (1 << 16));
        while buf.len() < cap && !self.eof {
            let data = self.reader.fill_buf().map_err(|e| io_err(&self.path, e))?;
            if data.is_empty() {
                self.eof = true;
                break;
            }
            let take = data.len().min(cap - buf.len());
            buf.extend_from_slice(&data[..take]);
            self.reader.consume(take);
        }
        if !self.eof {
            // Keep the partial last line for the next chunk; a line longer than a chunk
            // keeps growing this one until its end is found.
            loop {
                if let Some(p) = buf.iter().rposition(|b| *b == b'\n') {
                    self.carry.extend_from_slice(&buf[p + 1..]);
                    buf.truncate(p + 1);
                    break;
                }
                let data = self.reader.fill_buf().map_err(|e| io_err(&self.path, e))?;
                if data.is_empty() {
                    self.eof = true;
                    break;
                }
                let n = data.len();
                buf.extend_from_slice(data);
                self.reader.consume(n);
            }
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let newlines = buf.iter().filter(|b| **b == b'\n').count() as u64;
        let lines = newlines + u64::from(buf.last() != Some(&b'\n'));
        let first_line = self.next_line;
        self.next_line += lines;
        Ok(Some(Chunk {
            bytes: buf,
            first_line,
            lines,
        }))
    }
}
