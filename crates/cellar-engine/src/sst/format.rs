//! On-disk framing shared by every SST block: block handles, the 5-byte block trailer
//! (compression type + masked crc32c), per-block compression, the fixed 64-byte footer and
//! the properties record. See `docs/format/sstable.md` for the byte-by-byte layout.

use std::path::Path;

use crate::coding::{self, Decoder};
use crate::error::{Error, Result};
use crate::options::Compression;

/// compression type (1 byte) + masked crc32c (4 bytes) after every block payload.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Length of the footer: three block handles, the format version, a crc and the magic.
pub const FOOTER_LEN: usize = 64;
/// Version of a file with one index block and at most one filter block.
pub const FORMAT_VERSION: u32 = 1;
/// Version of a file with a partitioned index and filter (top-level index in the footer's
/// index handle, no footer filter handle). Written only when the index is partitioned, so
/// files that need no partitions stay readable by builds that know only version 1.
pub const FORMAT_VERSION_PARTITIONED: u32 = 2;
/// The last 8 bytes of every SST read "CELLRSST" in a hex dump.
pub const MAGIC: u64 = u64::from_le_bytes(*b"CELLRSST");
/// Upper bound on a block payload or its uncompressed form. A block holds at most one entry
/// past `block_size_bytes`, and values are capped at 64 MiB, so anything larger is garbage;
/// the bound keeps a damaged length from turning into a huge allocation.
pub const MAX_BLOCK_LEN: u64 = 256 << 20;
/// zstd level: the library default, a good ratio at flush/compaction speed.
const ZSTD_LEVEL: i32 = 3;
const CRC_MASK_DELTA: u32 = 0xa282_ead8;

/// Where a block's payload lives: `size` excludes the 5-byte trailer that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct BlockHandle {
    /// Offset of the payload in the file.
    pub offset: u64,
    /// Payload length, without the trailer.
    pub size: u64,
}

impl BlockHandle {
    /// A handle of `size` bytes at `offset`.
    pub fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }

    /// Varint offset, varint size (the form used inside index entries).
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        coding::put_varint(dst, self.offset);
        coding::put_varint(dst, self.size);
    }

    /// Reads what [`encode_to`](Self::encode_to) wrote; `None` if truncated.
    pub fn decode_from(d: &mut Decoder<'_>) -> Option<Self> {
        Some(BlockHandle {
            offset: d.varint()?,
            size: d.varint()?,
        })
    }

    /// Offset just past the block's trailer; saturates so damaged handles fail range checks.
    pub fn end(&self) -> u64 {
        self.offset
            .saturating_add(self.size)
            .saturating_add(BLOCK_TRAILER_LEN as u64)
    }

    /// Bytes to read from disk: payload + trailer.
    pub fn len_with_trailer(&self) -> u64 {
        self.size.saturating_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// Masking (as LevelDB does) keeps the stored crc from being the crc of data that itself
/// embeds crcs, which is weak; it costs nothing.
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(CRC_MASK_DELTA)
}

pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(CRC_MASK_DELTA).rotate_left(15)
}

/// crc32c over the payload followed by the type byte.
pub fn block_crc(payload: &[u8], ty: u8) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(payload), &[ty])
}

/// Appends the payload of block `raw` to `out` and returns the codec it is stored with:
/// compressed payloads are `varint uncompressed_len ++ codec output`, kept only if they save
/// at least 1/8; otherwise the payload is `raw` itself. LZ4 writes straight into `out` (the
/// SST builder's write buffer), not through a vector of its own.
pub fn compress_block(raw: &[u8], codec: Compression, out: &mut Vec<u8>) -> Compression {
    let start = out.len();
    let compressed = match codec {
        Compression::None => None,
        Compression::Lz4 => {
            coding::put_varint(out, raw.len() as u64);
            let at = out.len();
            out.resize(at + lz4_flex::block::get_maximum_output_size(raw.len()), 0);
            match lz4_flex::block::compress_into(raw, &mut out[at..]) {
                Ok(n) => {
                    out.truncate(at + n);
                    Some(codec)
                }
                Err(_) => None,
            }
        }
        Compression::Zstd => {
            coding::put_varint(out, raw.len() as u64);
            match zstd::bulk::compress(raw, ZSTD_LEVEL) {
                Ok(c) => {
                    out.extend_from_slice(&c);
                    Some(codec)
                }
                Err(_) => None,
            }
        }
    };
    match compressed {
        Some(c) if out.len() - start <= raw.len() - raw.len() / 8 => c,
        _ => {
            out.truncate(start);
            out.extend_from_slice(raw);
            Compression::None
        }
    }
}

/// Checks the trailer of `raw` (= payload ++ type ++ crc) and returns the codec. `offset`
/// is the block's file offset, for the error message.
pub fn check_block(path: &Path, offset: u64, raw: &[u8]) -> Result<Compression> {
    let corrupt = |why: &str| Error::corruption(path, offset, why.to_string());
    let plen = raw
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or_else(|| corrupt("block shorter than its trailer"))?;
    let ty = raw[plen];
    let stored = coding::get_u32(raw, plen + 1).ok_or_else(|| corrupt("truncated block"))?;
    if unmask_crc(stored) != block_crc(&raw[..plen], ty) {
        return Err(corrupt("block checksum mismatch"));
    }
    Compression::from_u8(ty).ok_or_else(|| corrupt("unknown compression type"))
}

/// Verifies and decompresses one block read from disk (payload ++ trailer), returning the
/// uncompressed contents. Takes the buffer by value so an uncompressed block costs no copy.
pub fn decode_block(path: &Path, offset: u64, mut raw: Vec<u8>) -> Result<Vec<u8>> {
    let codec = check_block(path, offset, &raw)?;
    let plen = raw.len() - BLOCK_TRAILER_LEN;
    if codec == Compression::None {
        raw.truncate(plen);
        return Ok(raw);
    }
    uncompress(path, offset, codec, &raw[..plen])
}

/// Same as [`decode_block`] for a block that is a slice of a larger (coalesced) read.
pub fn decode_block_slice(path: &Path, offset: u64, raw: &[u8]) -> Result<Vec<u8>> {
    let codec = check_block(path, offset, raw)?;
    let payload = &raw[..raw.len() - BLOCK_TRAILER_LEN];
    if codec == Compression::None {
        return Ok(payload.to_vec());
    }
    uncompress(path, offset, codec, payload)
}

fn uncompress(path: &Path, offset: u64, codec: Compression, payload: &[u8]) -> Result<Vec<u8>> {
    let corrupt = |why: String| Error::corruption(path, offset, why);
    let mut d = Decoder::new(payload);
    let want = d
        .varint()
        .ok_or_else(|| corrupt("bad uncompressed length".into()))?;
    if want > MAX_BLOCK_LEN {
        return Err(corrupt(format!("uncompressed length {want} too large")));
    }
    let want = want as usize;
    let body = d.remaining();
    let out = match codec {
        Compression::Lz4 => lz4_flex::block::decompress(body, want)
            .map_err(|e| corrupt(format!("lz4 decompression failed: {e}")))?,
        Compression::Zstd => zstd::bulk::decompress(body, want)
            .map_err(|e| corrupt(format!("zstd decompression failed: {e}")))?,
        Compression::None => body.to_vec(),
    };
    if out.len() != want {
        return Err(corrupt(format!(
            "decompressed {} bytes, expected {want}",
            out.len()
        )));
    }
    Ok(out)
}

/// The fixed-size tail of the file. A filter handle of (0, 0) means "no filter".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The index block (the top-level index of a partitioned file).
    pub index: BlockHandle,
    /// The filter block; (0, 0) for none.
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// The file's format version.
    pub version: u32,
}

impl Footer {
    /// The footer's bytes (docs/format/sst.md).
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = Vec::with_capacity(FOOTER_LEN);
        for h in [self.index, self.filter, self.properties] {
            coding::put_u64(&mut b, h.offset);
            coding::put_u64(&mut b, h.size);
        }
        coding::put_u32(&mut b, self.version);
        let crc = mask_crc(crc32c::crc32c(&b));
        coding::put_u32(&mut b, crc);
        coding::put_u64(&mut b, MAGIC);
        let mut out = [0u8; FOOTER_LEN];
        out.copy_from_slice(&b);
        out
    }

    /// Checks magic, then crc, then version: a damaged version field must read as
    /// corruption, not as a file from a future build.
    pub fn decode(path: &Path, offset: u64, b: &[u8]) -> Result<Footer> {
        let corrupt = |why: &str| Error::corruption(path, offset, why.to_string());
        if b.len() != FOOTER_LEN {
            return Err(corrupt("footer has the wrong length"));
        }
        if coding::get_u64(b, 56) != Some(MAGIC) {
            return Err(corrupt("bad magic number: not a Cellar SST"));
        }
        let stored = coding::get_u32(b, 52).ok_or_else(|| corrupt("truncated footer"))?;
        if unmask_crc(stored) != crc32c::crc32c(&b[..52]) {
            return Err(corrupt("footer checksum mismatch"));
        }
        let mut d = Decoder::new(b);
        let mut handles = [BlockHandle::default(); 3];
        for h in handles.iter_mut() {
            let (Some(offset), Some(size)) = (d.u64(), d.u64()) else {
                return Err(corrupt("truncated footer"));
            };
            *h = BlockHandle { offset, size };
        }
        let version = d.u32().ok_or_else(|| corrupt("truncated footer"))?;
        if version != FORMAT_VERSION && version != FORMAT_VERSION_PARTITIONED {
            return Err(Error::UnsupportedVersion {
                file: path.display().to_string(),
                found: version,
                supported: FORMAT_VERSION_PARTITIONED,
            });
        }
        Ok(Footer {
            index: handles[0],
            filter: handles[1],
            properties: handles[2],
            version,
        })
    }

    /// A single filter block (version 1); partitioned files keep theirs in the top level.
    pub fn has_filter(&self) -> bool {
        self.filter != BlockHandle::default()
    }

    /// Whether the index and filter are partitioned (format version 2).
    pub fn is_partitioned(&self) -> bool {
        self.version == FORMAT_VERSION_PARTITIONED
    }
}

/// Statistics and settings recorded when the file was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Properties {
    /// Entries, tombstones included.
    pub num_entries: u64,
    /// Point tombstones among the entries.
    pub num_deletions: u64,
    /// Smallest sequence number in the file.
    pub min_seq: u64,
    /// Largest sequence number in the file.
    pub max_seq: u64,
    /// Internal keys; empty for a file with no entries.
    pub smallest: Vec<u8>,
    /// Largest internal key; empty for a file with no entries.
    pub largest: Vec<u8>,
    /// Sum of internal key / value lengths as added (before prefix compression).
    pub raw_key_bytes: u64,
    /// Sum of the value lengths as added.
    pub raw_value_bytes: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// Codec asked for; individual blocks may still be stored uncompressed.
    pub compression: Compression,
    /// Bloom filter bits per key; 0 for no filter.
    pub bloom_bits_per_key: u32,
    /// Target uncompressed size of a data block.
    pub block_size_bytes: u64,
    /// Entries between restart points in a data block.
    pub block_restart_interval: u64,
    /// On-disk bytes (with trailers) of all data blocks, of the index and of the filter.
    pub data_bytes: u64,
    /// On-disk bytes of the index.
    pub index_bytes: u64,
    /// On-disk bytes of the filter.
    pub filter_bytes: u64,
    /// Seconds since the Unix epoch when the builder finished (0 if the clock failed).
    pub creation_time: u64,
    /// Index partitions of a version 2 file; 0 for an unpartitioned one (and for files
    /// written before the field existed, which are all unpartitioned).
    pub num_index_partitions: u64,
}

impl Properties {
    /// Empty properties of a file written with `compression`.
    pub fn new(compression: Compression) -> Self {
        Properties {
            num_entries: 0,
            num_deletions: 0,
            min_seq: 0,
            max_seq: 0,
            smallest: Vec::new(),
            largest: Vec::new(),
            raw_key_bytes: 0,
            raw_value_bytes: 0,
            num_data_blocks: 0,
            compression,
            bloom_bits_per_key: 0,
            block_size_bytes: 0,
            block_restart_interval: 0,
            data_bytes: 0,
            index_bytes: 0,
            filter_bytes: 0,
            creation_time: 0,
            num_index_partitions: 0,
        }
    }

    /// Fields in a fixed order; a reader ignores bytes after the ones it knows, so later
    /// versions may append fields without a format version bump.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.smallest.len() + self.largest.len());
        for v in [
            self.num_entries,
            self.num_deletions,
            self.min_seq,
            self.max_seq,
        ] {
            coding::put_varint(&mut b, v);
        }
        coding::put_bytes(&mut b, &self.smallest);
        coding::put_bytes(&mut b, &self.largest);
        for v in [
            self.raw_key_bytes,
            self.raw_value_bytes,
            self.num_data_blocks,
        ] {
            coding::put_varint(&mut b, v);
        }
        b.push(self.compression as u8);
        for v in [
            u64::from(self.bloom_bits_per_key),
            self.block_size_bytes,
            self.block_restart_interval,
            self.data_bytes,
            self.index_bytes,
            self.filter_bytes,
            self.creation_time,
        ] {
            coding::put_varint(&mut b, v);
        }
        // Only version 2 files carry the partition count, so version 1 files stay byte for
        // byte what builds before partitioning wrote.
        if self.num_index_partitions > 0 {
            coding::put_varint(&mut b, self.num_index_partitions);
        }
        b
    }

    /// Decodes a properties block read from `path` at `offset`; a malformed one is corruption.
    pub fn decode(path: &Path, offset: u64, b: &[u8]) -> Result<Properties> {
        let corrupt = || Error::corruption(path, offset, "malformed properties block");
        let mut d = Decoder::new(b);
        let mut v = || d.varint().ok_or_else(corrupt);
        let (num_entries, num_deletions, min_seq, max_seq) = (v()?, v()?, v()?, v()?);
        let smallest = d.bytes().ok_or_else(corrupt)?.to_vec();
        let largest = d.bytes().ok_or_else(corrupt)?.to_vec();
        let mut v = || d.varint().ok_or_else(corrupt);
        let (raw_key_bytes, raw_value_bytes, num_data_blocks) = (v()?, v()?, v()?);
        let compression = d.u8().and_then(Compression::from_u8).ok_or_else(corrupt)?;
        let mut v = || d.varint().ok_or_else(corrupt);
        let bloom_bits_per_key = u32::try_from(v()?).map_err(|_| corrupt())?;
        let (block_size_bytes, block_restart_interval) = (v()?, v()?);
        let (data_bytes, index_bytes, filter_bytes, creation_time) = (v()?, v()?, v()?, v()?);
        // Appended later: absent in files written before partitioning existed.
        let num_index_partitions = if d.remaining().is_empty() {
            0
        } else {
            d.varint().ok_or_else(corrupt)?
        };
        Ok(Properties {
            num_entries,
            num_deletions,
            min_seq,
            max_seq,
            smallest,
            largest,
            raw_key_bytes,
            raw_value_bytes,
            num_data_blocks,
            compression,
            bloom_bits_per_key,
            block_size_bytes,
            block_restart_interval,
            data_bytes,
            index_bytes,
            filter_bytes,
            creation_time,
            num_index_partitions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trips_and_checks() {
        let f = Footer {
            index: BlockHandle::new(100, 20),
            filter: BlockHandle::new(0, 0),
            properties: BlockHandle::new(125, 30),
            version: FORMAT_VERSION,
        };
        let b = f.encode();
        let p = Path::new("x.sst");
        assert_eq!(Footer::decode(p, 0, &b).ok(), Some(f));
        for i in 0..FOOTER_LEN {
            let mut c = b;
            c[i] ^= 0x40;
            assert!(matches!(
                Footer::decode(p, 0, &c),
                Err(Error::Corruption { .. })
            ));
        }
        // A well-formed footer from a newer build is a version error, not corruption.
        let mut newer = f;
        newer.version = 3;
        let r = Footer::decode(p, 0, &newer.encode());
        assert!(matches!(r, Err(Error::UnsupportedVersion { found: 3, .. })));
        newer.version = FORMAT_VERSION_PARTITIONED;
        assert_eq!(Footer::decode(p, 0, &newer.encode()).ok(), Some(newer));
    }

    #[test]
    fn blocks_round_trip_through_every_codec() {
        let raw: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let mut payload = Vec::new();
            let used = compress_block(&raw, codec, &mut payload);
            assert_eq!(used, codec);
            let crc = mask_crc(block_crc(&payload, used as u8));
            payload.push(used as u8);
            payload.extend_from_slice(&crc.to_le_bytes());
            let p = Path::new("x.sst");
            assert_eq!(decode_block(p, 0, payload.clone()).ok(), Some(raw.clone()));
            assert_eq!(decode_block_slice(p, 0, &payload).ok(), Some(raw.clone()));
        }
        // Incompressible input is stored as is.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        let mut out = b"before".to_vec();
        assert_eq!(
            compress_block(&noise, Compression::Lz4, &mut out),
            Compression::None
        );
        assert_eq!(out[..6], *b"before", "what `out` held stays");
        assert_eq!(out[6..], noise);
    }

    #[test]
    fn properties_round_trip() {
        let mut p = Properties::new(Compression::Zstd);
        p.num_entries = 7;
        p.smallest = b"a\0\0\0\0\0\0\0\0".to_vec();
        p.largest = b"z\x01\0\0\0\0\0\0\0".to_vec();
        p.creation_time = 1_700_000_000;
        p.num_index_partitions = 300;
        let enc = p.encode();
        assert_eq!(
            Properties::decode(Path::new("x"), 0, &enc).ok(),
            Some(p.clone())
        );
        // Without the partition count (a file from an older build) it reads as 0; every
        // shorter cut is damage.
        let older = &enc[..enc.len() - 2];
        let mut want = p;
        want.num_index_partitions = 0;
        assert_eq!(
            Properties::decode(Path::new("x"), 0, older).ok(),
            Some(want)
        );
        for cut in 0..older.len() {
            assert!(Properties::decode(Path::new("x"), 0, &enc[..cut]).is_err());
        }
    }
}
