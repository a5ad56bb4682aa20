//! The WAL new writes go to, the older ones whose memtables wait for their flush, and when
//! each is synced (docs/durability.md, "Switching WALs").
//!
//! In a directory database a WAL that no write has asked to sync is not synced when its
//! memtable freezes: its records were handed to the OS, which keeps them through a process
//! crash, and its memtable's flush makes them durable in an SST soon after, when the WAL is
//! deleted, usually before the kernel ever writes it back. Syncing it instead wrote every
//! WAL byte to the disk and held every writer for that fdatasync: a load of records in key
//! order then wrote twice what it stored, at the disk's speed (docs/design/wal-switch.md).
//!
//! What a power loss leaves must still be a prefix of the writes, so a `Sync` write (or
//! anything else that syncs: ingestion, `close`) first syncs the older WALs still kept here,
//! then its own. The first sync of each WAL also writes a *synced-predecessors record* (an
//! empty batch) to it: once that record is durable, every older WAL is whole. Recovery
//! replays WALs in order and stops at the first one cut short, unless a later WAL holds that
//! record, which makes the cut damage (`open::replay_wals`).

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::log::{LogWriter, FILE_HEADER_LEN};
use crate::options::{Options, StorageLayout};
use crate::types::SeqNo;

pub(crate) struct WalState {
    pub writer: LogWriter,
    pub number: u64,
    /// Last sequence number handed out (may be ahead of what readers see).
    pub last_seq: SeqNo,
    /// Older WALs with records not yet synced, by number, whose memtables are not flushed.
    unsynced_older: Vec<(u64, LogWriter)>,
    /// Whether WALs are synced when their memtable freezes, reserve space and ask for
    /// writeback: from the first sync on in a directory database, always in the others.
    syncing: bool,
    /// Whether synced-predecessors records are written (directory databases), and whether
    /// the current WAL has one.
    marks: bool,
    marked: bool,
}

impl WalState {
    pub fn new(mut writer: LogWriter, number: u64, last_seq: SeqNo, opts: &Options) -> Self {
        let syncing = !matches!(opts.storage, StorageLayout::Directory);
        if syncing {
            tune_for_sync(&mut writer, opts);
        }
        WalState {
            writer,
            number,
            last_seq,
            unsynced_older: Vec::new(),
            syncing,
            marks: !syncing,
            marked: false,
        }
    }

    /// Makes every record of every WAL durable, older WALs first. `next_seq` is the
    /// sequence number the next write will get (a synced-predecessors record takes none).
    pub fn sync(&mut self, opts: &Options, next_seq: SeqNo) -> Result<()> {
        self.before_sync(opts, next_seq)?;
        self.writer.sync()
    }

    /// `sync`, with the current WAL cut back to its last record (`LogWriter::finish`): the
    /// database is closing.
    pub fn finish(&mut self, opts: &Options, next_seq: SeqNo) -> Result<()> {
        self.before_sync(opts, next_seq)?;
        self.writer.finish()
    }

    /// What must precede the current WAL's fdatasync: the older WALs synced, and its
    /// synced-predecessors record written.
    fn before_sync(&mut self, opts: &Options, next_seq: SeqNo) -> Result<()> {
        for (_, w) in &mut self.unsynced_older {
            w.sync()?;
        }
        self.unsynced_older.clear();
        // A WAL without writes has nothing a cut could lose: it gets the record with its
        // first write's sync (and a closed database's WAL stays empty).
        let has_writes = self.writer.file_size() > FILE_HEADER_LEN as u64;
        if self.marks && !self.marked && has_writes {
            self.writer
                .add_record(WriteBatch::synced_predecessors().encode_with_seq(next_seq))?;
            self.marked = true;
        }
        if !self.syncing {
            // A database that syncs once is likely to again: from now on its WALs keep the
            // next fdatasync short.
            self.syncing = true;
            tune_for_sync(&mut self.writer, opts);
        }
        Ok(())
    }

    /// Ends the current WAL, whose memtable is being frozen: synced and cut back to its
    /// last record once the database syncs, otherwise handed to the OS and cut back
    /// unsynced.
    pub fn end_current(&mut self) -> Result<()> {
        if self.syncing {
            self.writer.finish()
        } else {
            self.writer.finish_unsynced()
        }
    }

    /// Whether the next WAL is appended through a memory map (`Vfs::create_mapped`): while
    /// nothing syncs, every write hands its record to the OS on its own, and a copy into a
    /// mapped page costs a fraction of a `write(2)` (docs/design/mapped-wal.md). A database
    /// that syncs gets written WALs, whose fdatasync the reserved space and writeback
    /// requests already keep short.
    pub fn maps_next(&self) -> bool {
        !self.syncing
    }

    /// Makes `writer` (WAL `number`, created for the next memtable) the current WAL; the
    /// ended one is kept until it is synced or its memtable is flushed.
    pub fn switch_to(&mut self, mut writer: LogWriter, number: u64, opts: &Options) {
        if self.syncing {
            tune_for_sync(&mut writer, opts);
        }
        let old = std::mem::replace(&mut self.writer, writer);
        let old_number = std::mem::replace(&mut self.number, number);
        self.marked = false;
        if old.has_unsynced() {
            self.unsynced_older.push((old_number, old));
        }
    }

    /// Drops the older WALs up to `number`, whose memtables are flushed (their files are
    /// being deleted).
    pub fn forget_through(&mut self, number: u64) {
        self.unsynced_older.retain(|(n, _)| *n > number);
    }

    #[cfg(test)]
    pub fn unsynced_older(&self) -> Vec<u64> {
        self.unsynced_older.iter().map(|(n, _)| *n).collect()
    }
}

/// Reserved space and writeback requests make a `Sync` write's fdatasync cheaper; for a WAL
/// nobody syncs they only send its bytes to the disk.
fn tune_for_sync(w: &mut LogWriter, opts: &Options) {
    w.set_writeback_bytes(opts.wal_writeback_bytes);
    w.set_preallocate_bytes(opts.wal_reserve_bytes());
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::log::{read_log, LogKind, TailPolicy};
    use crate::vfs::{MemVfs, Vfs};

    /// A new WAL `name` whose directory entry is durable, as the engine makes it.
    fn writer(vfs: &MemVfs, name: &str) -> LogWriter {
        let path = Path::new(name).to_path_buf();
        let file = vfs.create(&path).expect("create");
        vfs.sync_dir(Path::new("")).expect("sync dir");
        LogWriter::new(file, path, LogKind::Wal).expect("writer")
    }

    fn records(vfs: &MemVfs, name: &str) -> Vec<Vec<u8>> {
        let path = Path::new(name);
        let bytes = vfs.file_contents(path).expect("file");
        // The current WAL may end in space reserved ahead.
        let log = read_log(&bytes, path, LogKind::Wal, TailPolicy::TolerateTornTail).expect("log");
        log.payloads(&bytes).map(|(_, r)| r.to_vec()).collect()
    }

    /// A WAL frozen before any sync is handed to the OS, not synced; the first sync makes
    /// it durable before the current one and marks the current one, once.
    #[test]
    fn older_wals_are_synced_by_the_next_sync_first() {
        let vfs = MemVfs::new();
        let opts = Options::default();
        let mut wal = WalState::new(writer(&vfs, "1.wal"), 1, 0, &opts);
        let record = |seq: u64| {
            let mut b = WriteBatch::new();
            let ks = crate::batch::Keyspace {
                id: 0,
                name: "default".into(),
            };
            b.put(&ks, b"k", b"v");
            b.encode_with_seq(seq).to_vec()
        };
        wal.writer.add_record(&record(1)).expect("add");
        wal.last_seq = 1;
        wal.end_current().expect("end");
        wal.switch_to(writer(&vfs, "2.wal"), 2, &opts);
        let len = vfs.file_contents(Path::new("1.wal")).expect("file").len() as u64;
        let synced = vfs.synced_len(Path::new("1.wal")).expect("file");
        assert!(synced < len, "frozen without a sync");
        assert_eq!(wal.unsynced_older(), vec![1]);

        wal.writer.add_record(&record(2)).expect("add");
        wal.last_seq = 2;
        wal.sync(&opts, 3).expect("sync");
        assert!(wal.unsynced_older().is_empty());
        // What a power loss now leaves: both WALs whole.
        let image = vfs.crash_clone();
        assert_eq!(records(&image, "1.wal").len(), 1);
        let second = records(&image, "2.wal");
        assert_eq!(
            second.len(),
            2,
            "the write and the synced-predecessors record"
        );
        let marker = crate::batch::decode_batch(&second[1], Path::new("2.wal"), 0).expect("batch");
        assert!(marker.is_synced_predecessors());
        assert_eq!(marker.seq, 3);

        wal.sync(&opts, 3).expect("sync again");
        assert_eq!(records(&vfs, "2.wal").len(), 2, "one record per WAL");
        // From the first sync on, a frozen WAL is synced at the switch.
        wal.end_current().expect("end");
        wal.switch_to(writer(&vfs, "3.wal"), 3, &opts);
        assert!(wal.unsynced_older().is_empty());
    }

    /// Until the database syncs, its WALs are mapped; a frozen one is cut back to its last
    /// record without a sync. From the first sync on, new WALs are written.
    #[test]
    fn unsynced_wals_are_mapped_and_cut_back_when_frozen() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| crate::error::Error::io("tempdir", e))?;
        let vfs = crate::vfs::RealVfs;
        let opts = Options::default();
        let path = dir.path().join("000001.wal");
        let w = LogWriter::new(vfs.create_mapped(&path)?, path.clone(), LogKind::Wal)?;
        let mut wal = WalState::new(w, 1, 0, &opts);
        assert!(wal.maps_next());
        wal.writer.add_record(b"a record")?;
        wal.writer.flush()?;
        let reserved = vfs.file_size(&path)?;
        assert!(
            reserved > wal.writer.file_size(),
            "the mapped WAL reserves ahead"
        );
        wal.end_current()?;
        assert_eq!(vfs.file_size(&path)?, wal.writer.file_size(), "cut back");
        assert!(wal.writer.has_unsynced(), "without a sync");
        let next = dir.path().join("000002.wal");
        let w = LogWriter::new(vfs.create_mapped(&next)?, next, LogKind::Wal)?;
        wal.switch_to(w, 2, &opts);
        wal.sync(&opts, 1)?;
        assert!(!wal.maps_next(), "a database that synced writes its WALs");
        Ok(())
    }

    #[test]
    fn flushed_wals_are_forgotten() {
        let vfs = MemVfs::new();
        let opts = Options::default();
        let mut wal = WalState::new(writer(&vfs, "1.wal"), 1, 0, &opts);
        for n in 2..5u64 {
            wal.writer.add_record(b"x").expect("add");
            wal.end_current().expect("end");
            wal.switch_to(writer(&vfs, &format!("{n}.wal")), n, &opts);
        }
        assert_eq!(wal.unsynced_older(), vec![1, 2, 3]);
        wal.forget_through(2);
        assert_eq!(wal.unsynced_older(), vec![3]);
    }
}
