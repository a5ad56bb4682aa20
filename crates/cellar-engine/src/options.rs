//! Tuning knobs, with defaults chosen for small records (keys 7–64 B, values 15–200 B).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::vfs::{RealVfs, Vfs};

/// Per-block compression codec. The byte value is stored in every block trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Compression {
    /// Stored as written.
    None = 0,
    /// LZ4: fast, a moderate ratio.
    Lz4 = 1,
    /// zstd: a better ratio for more CPU.
    Zstd = 2,
}

impl Compression {
    /// The codec of a stored byte, or `None` for an unknown one.
    pub fn from_u8(b: u8) -> Option<Self> {
        match b {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            2 => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// How far a write must travel before it is acknowledged (see `docs/durability.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Kept in the process's WAL buffer; lost if the process crashes before a later
    /// `Flush`/`Sync` write or a buffer spill pushes it to the OS.
    Buffered,
    /// Handed to the operating system (copied into the memory-mapped WAL, or `write(2)`):
    /// survives a process crash.
    #[default]
    Flush,
    /// `fdatasync` before acknowledging: survives power loss. Concurrent `Sync` writers
    /// share one fsync (group commit).
    Sync,
}

/// Per-keyspace overrides of how its sorted files are written; `None` takes the
/// database's `Options`. Stored in the manifest with the keyspace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyspaceOptions {
    /// Block codec.
    pub compression: Option<Compression>,
    /// Uncompressed size at which a data block is cut.
    pub block_size_bytes: Option<usize>,
    /// 0 disables the bloom filter for this keyspace's files.
    pub bloom_bits_per_key: Option<u32>,
}

/// How one write is made durable.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// When the write is acknowledged: see [`Durability`].
    pub durability: Durability,
}

impl WriteOptions {
    /// Options with the given durability.
    pub fn new(durability: Durability) -> Self {
        WriteOptions { durability }
    }
}

/// How the files of a database are laid out in `Options::vfs`.
#[derive(Clone, Default)]
pub enum StorageLayout {
    /// A directory on a file system: a manifest log named by `CURRENT`, renamed into place,
    /// and the WALs beside the SSTs (`docs/format/manifest.md`).
    #[default]
    Directory,
    /// An object-store prefix: nothing is renamed or appended to. Each manifest change is a
    /// new numbered snapshot object written create-if-absent and carrying the writer's
    /// epoch, which fences an older writer; SSTs are immutable objects; the WAL lives where
    /// `wal` says (`docs/object-storage.md`).
    Objects {
        /// Where the WAL lives.
        wal: WalLocation,
    },
}

/// Where the WAL of a database in an object store lives.
#[derive(Clone)]
pub enum WalLocation {
    /// On a local file system: writes are as fast as on a local database, and an
    /// acknowledged write survives a process crash (and with `Sync`, a power cut) but not
    /// the loss of the machine. Each writer epoch logs under its own subdirectory of `dir`,
    /// so a later writer never replays a fenced one's log.
    Local {
        /// The local file system.
        vfs: Arc<dyn Vfs>,
        /// The directory (it is created).
        dir: PathBuf,
    },
    /// In the object store, as numbered WAL objects written create-if-absent (group
    /// commit): a write acknowledged with `Sync` survives the loss of the machine.
    Object,
}

/// Which WAL placement a `s3://` database opened by URL uses (`wal=local` or `wal=object`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalMode {
    /// The WAL on local disk, under the cache directory ([`WalLocation::Local`]).
    #[default]
    Local,
    /// The WAL in the bucket ([`WalLocation::Object`]).
    Object,
}

/// Settings of a database opened by URL in an S3-compatible object store
/// (`s3://bucket/prefix`); a local directory ignores them. Credentials, region and endpoint
/// default to what AWS tools read: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_REGION`, `AWS_ENDPOINT_URL`.
#[derive(Debug, Clone)]
pub struct ObjectStoreOptions {
    /// Where the WAL lives.
    pub wal: WalMode,
    /// Local directory for the disk cache of SST data and, with `WalMode::Local`, the
    /// WAL. Default: `$XDG_CACHE_HOME/cellar/<bucket>/<prefix>` (else `~/.cache/...`).
    pub cache_dir: Option<PathBuf>,
    /// Byte budget of the disk cache of SST data (it survives restarts).
    pub cache_bytes: u64,
    /// The S3 endpoint (`http://127.0.0.1:8333`); overrides `AWS_ENDPOINT_URL`.
    pub endpoint: Option<String>,
    /// The region; overrides `AWS_REGION` (default `us-east-1`).
    pub region: Option<String>,
    /// Access key id; overrides `AWS_ACCESS_KEY_ID`.
    pub access_key_id: Option<String>,
    /// Secret access key; overrides `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: Option<String>,
    /// Open a store that does not enforce conditional creates (`If-None-Match: *`) anyway:
    /// the caller guarantees that only one writer ever opens the prefix. Without it such a
    /// store is refused at open, because two writers could overwrite each other's objects.
    pub assume_single_writer: bool,
    /// With `WalMode::Object`: the longest a write without `Sync` waits before its WAL
    /// object is written (writes with `Sync` are written at once, batched with whatever
    /// else is waiting).
    pub wal_flush_interval: Duration,
    /// How long an SST retired by a compaction stays before it may be deleted: a follower
    /// that has just listed the snapshots registers its lease within it.
    pub gc_grace: Duration,
    /// A follower's lease on the snapshot it reads lasts this long past each renewal
    /// (renewed at every poll); it must exceed the clock skew between machines by far.
    pub follower_lease: Duration,
    /// How often a follower polls for a newer snapshot (and WAL objects).
    pub follow_interval: Duration,
}

impl Default for ObjectStoreOptions {
    fn default() -> Self {
        ObjectStoreOptions {
            wal: WalMode::Local,
            cache_dir: None,
            cache_bytes: 8 << 30,
            endpoint: None,
            region: None,
            access_key_id: None,
            secret_access_key: None,
            assume_single_writer: false,
            wal_flush_interval: Duration::from_millis(100),
            gc_grace: Duration::from_secs(60),
            follower_lease: Duration::from_secs(300),
            follow_interval: Duration::from_secs(1),
        }
    }
}

/// How a database is opened and tuned. The defaults suit small records.
#[derive(Clone)]
pub struct Options {
    /// Where the files live: the real file system by default.
    pub vfs: Arc<dyn Vfs>,
    /// How the files are laid out in `vfs`: a directory (the default), or an object-store
    /// prefix. `Db::open` of an `s3://` URL sets this and `vfs` itself.
    pub storage: StorageLayout,
    /// Settings for opening an `s3://` URL.
    pub object_store: ObjectStoreOptions,
    /// Create the database when the directory holds none.
    pub create_if_missing: bool,
    /// Fail to open when the directory holds a database already.
    pub error_if_exists: bool,
    /// Active memtable size at which it is frozen and flushed.
    pub memtable_size_bytes: usize,
    /// Bytes of bloom filter over each memtable's keys per MiB of `memtable_size_bytes`
    /// (0: none). A lookup of a key a memtable does not hold then reads one cache line
    /// instead of searching the skiplist. The default, 16 KiB per MiB (1/64), gives ~19 bits
    /// per key to 150-byte entries. The filter's memory comes on top of the memtable's (1 MiB
    /// per 64 MiB memtable, for the active and each frozen one).
    pub memtable_filter_bytes_per_mib: usize,
    /// How many frozen memtables may wait for flush before writers stop.
    pub max_immutable_memtables: usize,
    /// Uncompressed size at which a data block is cut.
    pub block_size_bytes: usize,
    /// Entries between restart points in a data block (full keys, binary-searchable).
    pub block_restart_interval: usize,
    /// Codec of data blocks.
    pub compression: Compression,
    /// Bloom filter bits per key of the files flushes and ingestion write; 0 disables
    /// filters. Compactions shift it by `bloom_bits_skew`.
    pub bloom_bits_per_key: u32,
    /// Bits per key moved from the bottom of the tree to the levels above it: a compaction
    /// whose output is the deepest data of its key range writes filters of
    /// `bloom_bits_per_key - skew` bits per key (at least 1), one with data below it
    /// `bloom_bits_per_key + skew`. The bottom level holds most keys, and a lookup that
    /// finds its key there never needed that level's filter, while each level above costs
    /// every lookup its false positives. At the default (10 ± 2) the bottom level's filters
    /// take a fifth less memory, and a lookup of a key in the bottom level, past two level-0
    /// files and two levels above it, reads 2.8 % extra blocks instead of 3.9 %. See
    /// docs/design/resident-metadata.md.
    pub bloom_bits_skew: u32,
    /// Size of the cache of uncompressed blocks shared by every file.
    pub block_cache_size_bytes: usize,
    /// Target size of one index partition. A file whose index would be larger than this is
    /// written with a partitioned index and filter (format version 2): index partitions of
    /// about this size, one bloom filter partition per index partition, and a small
    /// top-level index over them. 0 writes every file with one index and one filter.
    pub index_partition_bytes: usize,
    /// Budget for SST metadata held in memory for the life of each open file: the indexes
    /// and filters of unpartitioned files and the top levels of partitioned ones always
    /// count; index and filter partitions are pinned at open while the total stays within
    /// it, and otherwise are read on demand through the block cache. At ~2 bytes per key,
    /// the 1 GiB default pins the metadata of ~500M records.
    pub max_resident_metadata_bytes: u64,
    /// Read SST blocks with O_DIRECT, bypassing the page cache (no warm-up then).
    pub use_direct_reads: bool,
    /// Map each SST into memory and let point reads and iterators read its blocks there while
    /// the page cache holds the whole file (`sst/mapped.rs`): no system call and no copy, and
    /// a block stored uncompressed is read in place instead of through the block cache. Off reads
    /// every block with `pread`. A device error while reading a mapped page stops the
    /// process (`SIGBUS`) instead of failing the read; the map is used only for files the
    /// page cache held whole when last checked. Ignored with `use_direct_reads`. Default on
    /// (docs/design/mapped-reads.md).
    pub mapped_reads: bool,
    /// Keep a data block a point read missed in the block cache only on its second miss
    /// within a recent window (`cache/admission.rs`): blocks read once are then not copied
    /// into fresh cache memory, and do not evict blocks read more often. Off keeps every
    /// block read. Ignored with `use_direct_reads` (a second read would go to the device).
    /// Default on (docs/design/block-cache-admission.md).
    pub block_cache_doorkeeper: bool,
    /// Cold-start warm-up (`cache/warm.rs`): once an SST's point reads have waited half as long
    /// in `pread` as reading the file whole should take (its size at
    /// `warm_up_read_bytes_per_sec`), a background thread reads it sequentially into the
    /// page cache. A freshly started or cache-dropped database that fits in memory then
    /// serves lookups from memory after a bounded number of device reads, instead of one
    /// random read per block until every block has been read. This bounds the size of the
    /// live files warmed at a time; 0 turns warm-up off. Default: a quarter of the machine's
    /// RAM (0 where it cannot be read).
    pub warm_up_budget_bytes: u64,
    /// The sequential read rate the warm-up's price assumes (see `warm_up_budget_bytes`):
    /// lower warms later, higher sooner. Default 1 GiB/s: set it to the device's sequential
    /// read rate (docs/design/cold-start-warm-up.md).
    pub warm_up_read_bytes_per_sec: u64,
    /// L0 file count at which L0 becomes due for compaction.
    pub l0_compaction_trigger: usize,
    /// L0 file count at which writers start being delayed, gradually more as it grows.
    pub l0_slowdown_trigger: usize,
    /// L0 file count at which writers wait for compaction.
    pub l0_stop_trigger: usize,
    /// Compaction target of level 1 while no level below holds data (then it is sized from
    /// the L0 batch and the level below, at most a third of that level); each deeper
    /// level's is `level_size_ratio` times the one above, but at most 1/`level_size_ratio`
    /// of the next non-empty level below (docs/design/level-target-cap.md).
    pub level1_size_bytes: u64,
    /// How much larger each level's target is than the one above.
    pub level_size_ratio: u64,
    /// Number of levels, L0 included.
    pub num_levels: usize,
    /// Size at which compaction cuts an output file.
    pub target_file_size_bytes: u64,
    /// WAL bytes buffered in-process for `Buffered` writes before they spill to the OS.
    pub wal_buffer_bytes: usize,
    /// Every this many WAL bytes handed to the OS, ask it to start writing them to the disk
    /// (`sync_file_range`), so the `fdatasync` at a memtable switch or a `Sync` write finds
    /// little left to write. Durability is unchanged. In a directory database it applies
    /// from the first sync on (before it, WALs stay off the disk: docs/durability.md,
    /// "Switching WALs"). 0: leave it to the kernel.
    pub wal_writeback_bytes: u64,
    /// Every this many bytes of an SST written (flush or compaction output), ask the OS to
    /// start writing them to the disk, so the `fdatasync` that ends the file finds little
    /// left to write and the flush is not held up by it (docs/design/sst-writeback.md).
    /// Durability is unchanged. 0: leave it to the kernel.
    pub sst_writeback_bytes: u64,
    /// The WAL reserves its file's space this many bytes ahead of its records (at most
    /// `memtable_size_bytes`: a WAL holds about one memtable), so a `Sync` write's
    /// `fdatasync` does not also have to commit a new file size (one journal write fewer on
    /// ext4; docs/durability.md). Older WALs are cut back to their last record when their
    /// memtable is frozen. In a directory database it applies from the first sync on, like
    /// `wal_writeback_bytes`. 0: grow the file with each write.
    pub wal_preallocate_bytes: u64,
    /// Threads that serve one `multi_get` in parallel (contiguous runs of its sorted keys).
    /// More threads than cores pays off when lookups wait on the disk: the device serves
    /// several reads at once, and each thread keeps one read outstanding, so this is the
    /// queue depth a cold batch reaches (an SSD's random-read rate keeps rising to ~32).
    /// Idle threads cost nothing but their stacks. 0 or 1: every batch is served by the
    /// calling thread.
    pub multi_get_threads: usize,
    /// Run flush and compaction on background threads. When off, the writer that fills the
    /// memtable flushes it and runs the compactions it triggers itself (deterministic).
    pub background_work: bool,
    /// Background threads that flush frozen memtables (at least 1). With two, the two
    /// oldest frozen memtables are written at once and installed in the order they froze:
    /// a writer faster than one flush (compressing its blocks) then waits half as long when
    /// a core is free (docs/design/parallel-flush.md).
    pub flush_threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            vfs: Arc::new(RealVfs),
            storage: StorageLayout::Directory,
            object_store: ObjectStoreOptions::default(),
            create_if_missing: true,
            error_if_exists: false,
            memtable_size_bytes: 64 << 20,
            memtable_filter_bytes_per_mib: 16 << 10,
            max_immutable_memtables: 2,
            block_size_bytes: 4096,
            block_restart_interval: 16,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            bloom_bits_skew: 2,
            block_cache_size_bytes: 256 << 20,
            index_partition_bytes: 4096,
            max_resident_metadata_bytes: 1 << 30,
            use_direct_reads: false,
            mapped_reads: true,
            block_cache_doorkeeper: true,
            warm_up_budget_bytes: physical_memory_bytes() / 4,
            warm_up_read_bytes_per_sec: 1 << 30,
            l0_compaction_trigger: 4,
            l0_slowdown_trigger: 12,
            l0_stop_trigger: 24,
            level1_size_bytes: 256 << 20,
            level_size_ratio: 10,
            num_levels: 7,
            target_file_size_bytes: 64 << 20,
            wal_buffer_bytes: 64 << 10,
            wal_writeback_bytes: 1 << 20,
            sst_writeback_bytes: 1 << 20,
            wal_preallocate_bytes: 1 << 20,
            multi_get_threads: 32,
            background_work: true,
            flush_threads: 2,
        }
    }
}

impl Options {
    /// Bytes of each memtable's key filter (see `memtable_filter_bytes_per_mib`).
    pub(crate) fn memtable_filter_bytes(&self) -> usize {
        let product = self.memtable_size_bytes as u128 * self.memtable_filter_bytes_per_mib as u128;
        let bytes = product >> 20;
        usize::try_from(bytes).unwrap_or(usize::MAX)
    }

    /// How far ahead of its records the WAL reserves space (see `wal_preallocate_bytes`).
    pub(crate) fn wal_reserve_bytes(&self) -> u64 {
        self.wal_preallocate_bytes
            .min(u64::try_from(self.memtable_size_bytes).unwrap_or(u64::MAX))
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("memtable_size_bytes", &self.memtable_size_bytes)
            .field("block_size_bytes", &self.block_size_bytes)
            .field("compression", &self.compression)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("bloom_bits_skew", &self.bloom_bits_skew)
            .field("block_cache_size_bytes", &self.block_cache_size_bytes)
            .field("index_partition_bytes", &self.index_partition_bytes)
            .field(
                "max_resident_metadata_bytes",
                &self.max_resident_metadata_bytes,
            )
            .field("use_direct_reads", &self.use_direct_reads)
            .field("mapped_reads", &self.mapped_reads)
            .field("block_cache_doorkeeper", &self.block_cache_doorkeeper)
            .field("flush_threads", &self.flush_threads)
            .finish_non_exhaustive()
    }
}

/// The machine's RAM, or 0 where `sysconf` cannot tell.
#[allow(unsafe_code)] // `sysconf` through libc
fn physical_memory_bytes() -> u64 {
    // SAFETY: sysconf only reads its argument.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    match (u64::try_from(pages), u64::try_from(page_size)) {
        (Ok(p), Ok(s)) => p.saturating_mul(s),
        _ => 0,
    }
}
