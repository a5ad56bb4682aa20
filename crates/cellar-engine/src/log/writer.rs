//! Appends framed records to a log file.
//!
//! Records are framed into an in-process buffer (`add_record`, no syscall), handed to the OS
//! in one `append` (`flush`), and made durable by `sync`. The split lets the write path pick
//! a durability level per write and lets group commit cover many records with one syscall.

use std::path::PathBuf;

use super::{record_crc, LogKind, MAX_RECORD_LEN};
use crate::error::{Error, Result};
use crate::vfs::WritableFile;

/// Shrink the buffer back after a flush when an unusually large record grew it past this,
/// so one 70 MB batch does not pin 70 MB for the life of the log.
const KEEP_BUFFER_CAPACITY: usize = 4 << 20;

pub struct LogWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    buf: Vec<u8>,
    /// Bytes handed to the OS.
    flushed: u64,
    /// Bytes covered by the last successful sync.
    synced: u64,
    /// Once this many flushed bytes are not yet handed to `start_writeback`, they are
    /// (0: never). See [`LogWriter::set_writeback_bytes`].
    writeback_bytes: u64,
    /// Flushed bytes already handed to `start_writeback` (or synced).
    written_back: u64,
    /// Space is reserved this many bytes past the end of what a flush appends, whenever it
    /// would run past the reserved space (0: never). See [`LogWriter::set_preallocate_bytes`].
    preallocate_bytes: u64,
    /// The file's space is reserved up to here.
    reserved: u64,
    /// The first write or sync failure. After one, what reached the file is unknown (a
    /// partial write, or pages a failed fsync dropped), so every later call fails with it
    /// instead of appending after possibly torn bytes.
    failed: Option<Error>,
}

impl LogWriter {
    /// Starts a log in `file`, which must be empty (freshly created). The file header goes
    /// into the buffer and reaches the OS with the first `flush`.
    pub fn new(file: Box<dyn WritableFile>, path: PathBuf, kind: LogKind) -> Result<LogWriter> {
        if !file.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "log writer for {} needs an empty file, found {} bytes",
                path.display(),
                file.len()
            )));
        }
        Ok(LogWriter {
            file,
            path,
            buf: kind.header().to_vec(),
            flushed: 0,
            synced: 0,
            writeback_bytes: 0,
            written_back: 0,
            preallocate_bytes: 0,
            reserved: 0,
            failed: None,
        })
    }

    /// Has the OS start writing the log to the disk every `bytes` flushed bytes (0: off).
    /// Without it, a log written with `flush` alone stays dirty in the page cache until
    /// the next `sync`, which then writes all of it while its caller waits: the WAL's sync
    /// at a memtable switch would hold every writer while tens of MiB of dirty log go out
    /// (docs/design/write-paths.md).
    pub fn set_writeback_bytes(&mut self, bytes: u64) {
        self.writeback_bytes = bytes;
    }

    /// Reserves the log's space `bytes` at a time ahead of its appends (0: off), so that
    /// syncs write the records alone instead of also committing a new file size (see
    /// `WritableFile::preallocate`). The file then ends in zeros past its last record until
    /// [`LogWriter::finish`] cuts them off; the log reader takes an all-zero tail for space
    /// never written (docs/format/wal.md).
    pub fn set_preallocate_bytes(&mut self, bytes: u64) {
        self.preallocate_bytes = bytes;
    }

    /// Frames `payload` into the in-process buffer and returns the file offset of the
    /// record. Nothing reaches the OS until `flush` or `sync`.
    pub fn add_record(&mut self, payload: &[u8]) -> Result<u64> {
        self.check_failed()?;
        if payload.len() > MAX_RECORD_LEN {
            return Err(Error::InvalidArgument(format!(
                "log record of {} bytes exceeds the {MAX_RECORD_LEN}-byte limit",
                payload.len()
            )));
        }
        let offset = self.file_size();
        // MAX_RECORD_LEN < 2^32, so the length always fits.
        let len_field = (payload.len() as u32).to_le_bytes();
        self.buf.reserve(super::RECORD_HEADER_LEN + payload.len());
        self.buf
            .extend_from_slice(&record_crc(len_field, payload).to_le_bytes());
        self.buf.extend_from_slice(&len_field);
        self.buf.extend_from_slice(payload);
        Ok(offset)
    }

    /// Hands every buffered byte to the OS in one `append`. No syscall if nothing is
    /// buffered.
    pub fn flush(&mut self) -> Result<()> {
        self.check_failed()?;
        if self.buf.is_empty() {
            return Ok(());
        }
        let end = self.flushed + self.buf.len() as u64;
        if self.preallocate_bytes > 0 && end > self.reserved {
            let target = end.saturating_add(self.preallocate_bytes);
            if let Err(e) = self.file.preallocate(target) {
                self.failed = Some(e.clone());
                return Err(e);
            }
            self.reserved = target;
        }
        if let Err(e) = self.file.append(&self.buf) {
            self.failed = Some(e.clone());
            return Err(e);
        }
        self.flushed += self.buf.len() as u64;
        self.buf.clear();
        let pending = self.flushed - self.written_back;
        if self.writeback_bytes > 0 && pending >= self.writeback_bytes {
            if let Err(e) = self.file.start_writeback(self.written_back, pending) {
                self.failed = Some(e.clone());
                return Err(e);
            }
            self.written_back = self.flushed;
        }
        if self.buf.capacity() > KEEP_BUFFER_CAPACITY {
            self.buf = Vec::new();
        }
        Ok(())
    }

    /// `flush`, then make the file durable.
    pub fn sync(&mut self) -> Result<()> {
        self.flush()?;
        if let Err(e) = self.file.sync() {
            self.failed = Some(e.clone());
            return Err(e);
        }
        self.synced = self.flushed;
        self.written_back = self.flushed;
        Ok(())
    }

    /// `sync`, then cuts off the space reserved past the last record and syncs that: a log
    /// that will get no more records (the WAL of a frozen memtable, or at close) ends at
    /// its last record, as the reader expects of every WAL but the newest. Without reserved
    /// space this is `sync` alone.
    pub fn finish(&mut self) -> Result<()> {
        self.sync()?;
        if self.reserved <= self.flushed && !self.file.reserves_ahead() {
            return Ok(());
        }
        let r = self.file.trim().and_then(|()| self.file.sync());
        if let Err(e) = r {
            self.failed = Some(e.clone());
            return Err(e);
        }
        self.reserved = self.flushed;
        Ok(())
    }

    /// `flush`, then cuts off the space the file reserved by itself past the last record
    /// (`WritableFile::reserves_ahead`), without a sync: a log that will get no more records
    /// and that nobody syncs. Its size change reaches the disk with the kernel's writeback.
    pub fn finish_unsynced(&mut self) -> Result<()> {
        self.flush()?;
        if !self.file.reserves_ahead() {
            return Ok(());
        }
        if let Err(e) = self.file.trim() {
            self.failed = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    /// Bytes framed but not yet handed to the OS.
    pub fn buffered_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Size of the log including buffered bytes (the offset the next record gets).
    pub fn file_size(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// Bytes the OS has (they survive a process crash).
    #[cfg(test)]
    pub fn flushed_size(&self) -> u64 {
        self.flushed
    }

    /// Bytes the last successful `sync` made durable (they survive power loss).
    #[cfg(test)]
    pub fn synced_size(&self) -> u64 {
        self.synced
    }

    /// Whether records were added since the last successful `sync`.
    pub fn has_unsynced(&self) -> bool {
        !self.buf.is_empty() || self.flushed > self.synced
    }

    #[cfg(test)]
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The error that poisoned this writer, if any.
    #[cfg(test)]
    pub fn failure(&self) -> Option<&Error> {
        self.failed.as_ref()
    }

    fn check_failed(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("path", &self.path)
            .field("flushed", &self.flushed)
            .field("buffered", &self.buf.len())
            .field("synced", &self.synced)
            .field("failed", &self.failed)
            .finish()
    }
}
