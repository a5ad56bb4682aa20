//! Request and cache counters of an [`ObjectVfs`](super::ObjectVfs), by file kind: what an
//! object store bills for (requests, bytes) and what the disk cache saves.

use std::sync::atomic::{AtomicU64, Ordering};

/// The kind of file an object key names, judged from the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    Sst = 0,
    Manifest = 1,
    Wal = 2,
    Other = 3,
}

impl FileKind {
    /// `.sst` → SST; `/manifest/` → manifest; `/wal/` or `.wal` → WAL; else other.
    pub(crate) fn of(key: &str) -> FileKind {
        if key.ends_with(".sst") {
            FileKind::Sst
        } else if key.contains("/manifest/") || key.starts_with("manifest/") {
            FileKind::Manifest
        } else if key.contains("/wal/") || key.starts_with("wal/") || key.ends_with(".wal") {
            FileKind::Wal
        } else {
            FileKind::Other
        }
    }
}

const KINDS: usize = 4;

/// Plain atomic counters; [`Counters::snapshot`] names them.
#[derive(Default)]
pub(crate) struct Counters {
    get_requests: [AtomicU64; KINDS],
    get_bytes: [AtomicU64; KINDS],
    put_requests: [AtomicU64; KINDS],
    put_bytes: [AtomicU64; KINDS],
    pub(crate) head_requests: AtomicU64,
    pub(crate) list_requests: AtomicU64,
    pub(crate) delete_requests: AtomicU64,
    pub(crate) copy_requests: AtomicU64,
    pub(crate) cache_hits: AtomicU64,
    pub(crate) cache_misses: AtomicU64,
}

/// Adds `n` to `counter`.
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    /// Counts one GET of `bytes` bytes of `key`.
    pub(crate) fn get(&self, key: &str, bytes: u64) {
        let kind = FileKind::of(key) as usize;
        add(&self.get_requests[kind], 1);
        add(&self.get_bytes[kind], bytes);
    }

    /// Counts one PUT (or multipart upload) of `bytes` bytes of `key`.
    pub(crate) fn put(&self, key: &str, bytes: u64) {
        let kind = FileKind::of(key) as usize;
        add(&self.put_requests[kind], 1);
        add(&self.put_bytes[kind], bytes);
    }

    /// Every counter by name, plus the disk cache's bytes held.
    pub(crate) fn snapshot(&self, cache_bytes: u64) -> Vec<(&'static str, u64)> {
        const GET_REQ: [&str; KINDS] = [
            "object_get_requests_sst",
            "object_get_requests_manifest",
            "object_get_requests_wal",
            "object_get_requests_other",
        ];
        const GET_BYTES: [&str; KINDS] = [
            "object_get_bytes_sst",
            "object_get_bytes_manifest",
            "object_get_bytes_wal",
            "object_get_bytes_other",
        ];
        const PUT_REQ: [&str; KINDS] = [
            "object_put_requests_sst",
            "object_put_requests_manifest",
            "object_put_requests_wal",
            "object_put_requests_other",
        ];
        const PUT_BYTES: [&str; KINDS] = [
            "object_put_bytes_sst",
            "object_put_bytes_manifest",
            "object_put_bytes_wal",
            "object_put_bytes_other",
        ];
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = Vec::with_capacity(4 * KINDS + 7);
        for (names, values) in [
            (GET_REQ, &self.get_requests),
            (GET_BYTES, &self.get_bytes),
            (PUT_REQ, &self.put_requests),
            (PUT_BYTES, &self.put_bytes),
        ] {
            out.extend(names.iter().zip(values.iter()).map(|(n, v)| (*n, load(v))));
        }
        out.extend([
            ("object_head_requests", load(&self.head_requests)),
            ("object_list_requests", load(&self.list_requests)),
            ("object_delete_requests", load(&self.delete_requests)),
            ("object_copy_requests", load(&self.copy_requests)),
            ("object_cache_hits", load(&self.cache_hits)),
            ("object_cache_misses", load(&self.cache_misses)),
            ("object_cache_bytes", cache_bytes),
        ]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_keys() {
        assert_eq!(FileKind::of("db/000012.sst"), FileKind::Sst);
        assert_eq!(
            FileKind::of("db/manifest/0001.manifest"),
            FileKind::Manifest
        );
        assert_eq!(FileKind::of("db/wal/0001.log"), FileKind::Wal);
        assert_eq!(FileKind::of("db/000001.wal"), FileKind::Wal);
        assert_eq!(FileKind::of("db/CURRENT"), FileKind::Other);
    }
}
