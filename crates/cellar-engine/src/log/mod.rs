//! The record log: one framing shared by the write-ahead log and the manifest (LevelDB's
//! idea). The byte layout and the torn-tail rule are specified in `docs/format/wal.md`.
//!
//! ```text
//! file   := header record*
//! header := magic[8] version:u32 header_crc:u32          (16 bytes)
//! record := crc:u32 len:u32 payload[len]                 (8-byte record header)
//! ```
//!
//! All integers are little-endian; `crc` is the masked CRC-32C of `len` (its 4 bytes)
//! followed by the payload. There is no block structure: a record is one contiguous run of
//! bytes however large, because a torn or damaged record is found by its length and CRC,
//! not by block alignment.

pub mod objects;
mod reader;
mod writer;

pub use reader::{read_log, LogContents, LogRecord, TailPolicy};
pub use writer::LogWriter;

/// Which log a file holds; each kind has its own magic so one is never read as the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogKind {
    /// A write-ahead log (`NNNNNN.wal`).
    Wal,
    /// A manifest (`MANIFEST-NNNNNN`).
    Manifest,
}

impl LogKind {
    /// The 8 magic bytes that open a file of this kind.
    pub fn magic(self) -> [u8; 8] {
        match self {
            LogKind::Wal => *b"CELLAR-W",
            LogKind::Manifest => *b"CELLAR-M",
        }
    }

    /// The exact 16 header bytes every log of this kind starts with (the header has no
    /// variable fields in version 1).
    pub fn header(self) -> [u8; FILE_HEADER_LEN] {
        let mut h = [0u8; FILE_HEADER_LEN];
        h[..8].copy_from_slice(&self.magic());
        h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        let crc = mask_crc(crc32c::crc32c(&h[..12]));
        h[12..].copy_from_slice(&crc.to_le_bytes());
        h
    }
}

/// Format version written into (and accepted from) the file header.
pub const FORMAT_VERSION: u32 = 1;
/// Length of a log's file header: magic (8), format version (4), masked crc (4).
pub const FILE_HEADER_LEN: usize = 16;
/// crc (4) + payload length (4).
pub const RECORD_HEADER_LEN: usize = 8;
/// Largest payload a record may carry. Far above the largest write batch the engine builds
/// (~70 MB), and small enough that a damaged length field is usually implausible.
pub const MAX_RECORD_LEN: usize = 1 << 30;

const MASK_DELTA: u32 = 0xa282_ead8;

/// LevelDB's CRC mask: rotating and offsetting the CRC means a CRC computed over bytes that
/// themselves contain CRCs (a log stored as a value, say) does not validate by accident, and
/// that an all-zero record header never carries a valid CRC.
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

#[cfg(test)]
pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// The stored CRC of a record: CRC-32C over the length field's 4 bytes and the payload.
pub(crate) fn record_crc(len_field: [u8; 4], payload: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c_append(crc32c::crc32c(&len_field), payload))
}

/// A whole log holding `payloads` as its records, framed as `LogWriter` frames them: for
/// logs written in one piece (an object-store manifest snapshot or WAL object).
pub fn encode_log<'a>(kind: LogKind, payloads: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = kind.header().to_vec();
    for p in payloads {
        let len = u32::try_from(p.len()).unwrap_or(u32::MAX).to_le_bytes();
        out.extend_from_slice(&record_crc(len, p).to_le_bytes());
        out.extend_from_slice(&len);
        out.extend_from_slice(p);
    }
    out
}

#[cfg(test)]
mod tests;
