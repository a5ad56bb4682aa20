//! Parses a whole log file and applies the torn-tail rule of `docs/format/wal.md`.
//!
//! A record that does not check out is either a *torn tail* (the last write before a crash
//! reached the disk only in part) or *damage* (bytes that were once good went bad). They
//! are told apart by what follows: a torn write is always the end of the file, so if a
//! valid record can be found anywhere after the bad one, the bad one is damage and the read
//! fails, whatever the policy. Mid-file damage is never skipped silently.

use std::ops::Range;
use std::path::Path;

use super::{
    mask_crc, record_crc, LogKind, FILE_HEADER_LEN, FORMAT_VERSION, MAX_RECORD_LEN,
    RECORD_HEADER_LEN,
};
use crate::coding::get_u32;
use crate::error::{Error, Result};

/// What to do with a torn tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailPolicy {
    /// Drop it and report its size in [`LogContents::dropped_tail_bytes`]: right for
    /// recovery, where a torn tail is a write that was never acknowledged as durable.
    TolerateTornTail,
    /// Report it as corruption: right for checking a file that must be complete.
    Strict,
    /// `TolerateTornTail`, and also drop the records from a page left unwritten before
    /// later bytes ([`LogContents::unwritten_gap`]): what a power loss leaves of a WAL
    /// appended through a memory map. Only for a caller that then checks nothing in the
    /// log was ever synced (WAL recovery) or that reports what it found (`cellar check`).
    TolerateUnwrittenPages,
}

/// One record: where its header starts in the file and where its payload lies in the
/// buffer that was parsed (ranges instead of copies, so recovering a large WAL does not
/// hold every payload twice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Offset in the file of the record's header.
    pub offset: u64,
    /// Where the payload lies in the parsed buffer.
    pub payload: Range<usize>,
}

impl LogRecord {
    /// The payload, given the same buffer that was passed to [`read_log`].
    pub fn payload<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        bytes.get(self.payload.clone()).unwrap_or(&[])
    }
}

/// What [`read_log`] found in a log file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogContents {
    /// The whole, valid records, in file order.
    pub records: Vec<LogRecord>,
    /// Length of the prefix made of the header and whole valid records: where a writer
    /// could continue, and what a repair would truncate the file to.
    pub valid_len: u64,
    /// Bytes after `valid_len` dropped as a torn tail (always 0 under `Strict`).
    pub dropped_tail_bytes: u64,
    /// The dropped tail is all zero bytes: space never written — reserved ahead of the
    /// records (the newest WAL, `LogWriter::set_preallocate_bytes`) or allocated by a file
    /// system that crashed before the data reached it — rather than a write cut short.
    pub unwritten_tail: bool,
    /// The dropped tail starts where a page the file was written through was left
    /// unwritten while later bytes were written (a log appended through a memory map is
    /// written back a page at a time, in any order: [`runs_into_unwritten_page`]). Only
    /// under `TolerateTornTail`, and only a caller that knows nothing in the log was
    /// synced may take it for a torn tail; every other caller reports it as damage.
    pub unwritten_gap: bool,
}

impl LogContents {
    /// `(record offset, payload)` pairs, given the buffer that was parsed.
    pub fn payloads<'a>(&'a self, bytes: &'a [u8]) -> impl Iterator<Item = (u64, &'a [u8])> {
        self.records
            .iter()
            .map(move |r| (r.offset, r.payload(bytes)))
    }

    fn empty(bytes: &[u8]) -> LogContents {
        LogContents {
            records: Vec::new(),
            valid_len: 0,
            dropped_tail_bytes: bytes.len() as u64,
            unwritten_tail: !bytes.is_empty() && zero_suffix_start(bytes) == 0,
            unwritten_gap: false,
        }
    }
}

/// Parses the log held in `bytes` (the whole file). `path` and `kind` are for checking the
/// header and naming the file in errors.
pub fn read_log(bytes: &[u8], path: &Path, kind: LogKind, tail: TailPolicy) -> Result<LogContents> {
    if let Some(early) = check_header(bytes, path, kind, tail)? {
        return Ok(early);
    }
    let mut records = Vec::new();
    let mut pos = FILE_HEADER_LEN;
    while pos < bytes.len() {
        let reason = match parse_record(bytes, pos) {
            Ok(payload) => {
                let next = payload.end;
                records.push(LogRecord {
                    offset: pos as u64,
                    payload,
                });
                pos = next;
                continue;
            }
            Err(reason) => reason,
        };
        let zeros_from = zero_suffix_start(bytes);
        let torn = is_torn_tail(bytes, pos, zeros_from);
        let gap = !torn
            && tail == TailPolicy::TolerateUnwrittenPages
            && runs_into_unwritten_page(bytes, pos, zeros_from);
        return match (torn || gap, tail) {
            (true, TailPolicy::TolerateTornTail | TailPolicy::TolerateUnwrittenPages) => {
                Ok(LogContents {
                    records,
                    valid_len: pos as u64,
                    dropped_tail_bytes: (bytes.len() - pos) as u64,
                    unwritten_tail: zeros_from <= pos,
                    unwritten_gap: gap,
                })
            }
            (true, TailPolicy::Strict) => Err(Error::corruption(
                path,
                pos as u64,
                format!("torn tail: {reason}"),
            )),
            (false, _) => Err(Error::corruption(path, pos as u64, reason)),
        };
    }
    Ok(LogContents {
        records,
        valid_len: pos as u64,
        dropped_tail_bytes: 0,
        unwritten_tail: false,
        unwritten_gap: false,
    })
}

/// `Ok(None)`: the header is good, parse records after it. `Ok(Some(_))`: the file is an
/// empty log (no bytes, or a header torn at creation under the tolerant policy).
fn check_header(
    bytes: &[u8],
    path: &Path,
    kind: LogKind,
    tail: TailPolicy,
) -> Result<Option<LogContents>> {
    let expected = kind.header();
    let have = bytes.get(..FILE_HEADER_LEN).unwrap_or(bytes);
    if have.len() == FILE_HEADER_LEN && have == expected {
        return Ok(None);
    }
    if bytes.is_empty() {
        // Created but never written: nothing was torn.
        return Ok(Some(LogContents::empty(bytes)));
    }
    // Torn at creation: every header byte present is the expected one or still zero (never
    // written). A header written by someone else or damaged by bit rot has other bytes.
    let torn_like = have.iter().zip(expected).all(|(&b, e)| b == e || b == 0);
    let nothing_after = bytes
        .get(FILE_HEADER_LEN..)
        .is_none_or(|rest| rest.iter().all(|&b| b == 0));
    if torn_like && tail != TailPolicy::Strict && nothing_after {
        return Ok(Some(LogContents::empty(bytes)));
    }
    // The first page of a mapped log written back before its header was, and later pages
    // after it: the header page is zero after the header's written bytes.
    let first_page_rest = bytes.get(FILE_HEADER_LEN..PAGE_BYTES.min(bytes.len()));
    if torn_like
        && tail == TailPolicy::TolerateUnwrittenPages
        && first_page_rest.is_some_and(|rest| rest.iter().all(|&b| b == 0))
    {
        return Ok(Some(LogContents {
            unwritten_tail: false,
            unwritten_gap: true,
            ..LogContents::empty(bytes)
        }));
    }
    if have.len() < FILE_HEADER_LEN {
        let reason = if torn_like {
            "truncated file header"
        } else {
            "bad magic in truncated file header"
        };
        return Err(Error::corruption(path, 0, reason));
    }
    let magic = have.get(..8).unwrap_or(&[]);
    if magic != kind.magic() {
        let other = match kind {
            LogKind::Wal => LogKind::Manifest,
            LogKind::Manifest => LogKind::Wal,
        };
        let reason = if magic == other.magic() {
            format!("file is a {other:?} log, expected a {kind:?} log")
        } else {
            format!("bad magic, expected a {kind:?} log")
        };
        return Err(Error::corruption(path, 0, reason));
    }
    // The CRC is checked before the version: every version keeps this 16-byte header with
    // its CRC at byte 12, so a good CRC with another version is a real newer file, while a
    // bad CRC means the version field itself may be garbage.
    let stored = get_u32(have, 12).unwrap_or(0);
    if mask_crc(crc32c::crc32c(have.get(..12).unwrap_or(&[]))) != stored {
        return Err(Error::corruption(path, 12, "file header checksum mismatch"));
    }
    let version = get_u32(have, 8).unwrap_or(0);
    if version != FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            file: path.display().to_string(),
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    Err(Error::corruption(path, 0, "unexpected file header"))
}

/// The payload range of the record at `pos`, or why there is no valid record there.
fn parse_record(bytes: &[u8], pos: usize) -> Result<Range<usize>, &'static str> {
    let (crc, len) = match (get_u32(bytes, pos), get_u32(bytes, pos + 4)) {
        (Some(crc), Some(len)) => (crc, len),
        _ => return Err("record header runs past end of file"),
    };
    let len_field = len.to_le_bytes();
    let len = len as usize;
    if len > MAX_RECORD_LEN {
        return Err("record length above the limit");
    }
    let start = pos + RECORD_HEADER_LEN;
    let end = start.saturating_add(len);
    let payload = bytes
        .get(start..end)
        .ok_or("record payload runs past end of file")?;
    if record_crc(len_field, payload) != crc {
        return Err("record checksum mismatch");
    }
    Ok(start..end)
}

/// Sector size assumed for torn appends: a power loss writes whole sectors or none.
const SECTOR_BYTES: usize = 512;

/// Where the file's all-zero suffix starts (its length if it ends in a non-zero byte). Zeros
/// are what space allocated or reserved but never written reads as, and never form a record
/// (masked CRCs are non-zero).
fn zero_suffix_start(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
}

/// A complete record is still a torn append when the file is zero from a sector boundary
/// inside its payload to the end: the sectors holding its start reached the disk, the later
/// ones never did (the file system had already extended the file). Bytes are lost a sector
/// at a time, so a zero run that begins inside the last sector of the payload is data, and a
/// checksum failure there is damage.
fn ends_in_unwritten_sectors(zeros_from: usize, payload_start: usize, payload_end: usize) -> bool {
    if zeros_from >= payload_end {
        return false;
    }
    let boundary = zeros_from.max(payload_start).div_ceil(SECTOR_BYTES) * SECTOR_BYTES;
    boundary < payload_end
}

/// Whether the bad record at `pos` is what an interrupted append leaves: the file ends
/// inside it (a short write or a crash before the data reached the disk), or everything from
/// `pos` on is zero (space allocated but never written). A *complete* record that fails its
/// checksum is damage, whatever follows it: an append is synced whole before it is
/// acknowledged, so a torn write can only shorten the file. A record that seems to run past
/// the end but whose bytes checksum as a whole record is damage too (its length field flipped).
/// `zeros_from` is [`zero_suffix_start`] of `bytes`.
fn is_torn_tail(bytes: &[u8], pos: usize, zeros_from: usize) -> bool {
    if zeros_from <= pos || bytes.len().saturating_sub(pos) < RECORD_HEADER_LEN {
        return true;
    }
    let (Some(crc), Some(len)) = (get_u32(bytes, pos), get_u32(bytes, pos + 4)) else {
        return true;
    };
    let start = pos + RECORD_HEADER_LEN;
    if start.saturating_add(len as usize) <= bytes.len() {
        // A length field flipped to a larger value can reach into zeros too when the file
        // ends in reserved space (a WAL, see docs/format/wal.md): the whole records after
        // it give it away, as below.
        return ends_in_unwritten_sectors(zeros_from, start, start + len as usize)
            && matches!(find_record_after(bytes, pos, zeros_from), Scan::Nothing)
            && !checksums_shorter(bytes, pos, crc, len as usize, zeros_from);
    }
    // A middle record whose length field flipped also seems to run past the end: the
    // records after it give it away.
    if !matches!(find_record_after(bytes, pos, zeros_from), Scan::Nothing) {
        return false;
    }
    let payload = &bytes[start..];
    match u32::try_from(payload.len()) {
        Ok(n) => {
            record_crc(n.to_le_bytes(), payload) != crc
                && !checksums_shorter(bytes, pos, crc, len as usize, zeros_from)
        }
        Err(_) => true,
    }
}

/// The page size of the file systems a log is mapped from: a mapped file is written back a
/// page at a time.
const PAGE_BYTES: usize = 4096;

/// Whether the bad record at `pos` runs into a page a power loss left older than the
/// bytes after it. A log appended through a shared memory map (`Vfs::create_mapped`) has
/// its pages written back one by one, in any order, and a page may have been written back
/// once before its last records were copied into it. So what a power loss leaves is, page
/// by page, some earlier state of it: the page's final bytes cut short and zeros after
/// them up to the page's end, while later pages may be whole. Its signature: in a page the
/// record reaches, the record's last byte there and everything after it up to the page's
/// end are zero, with more of the file after that page. The record's header need not be
/// intact (its length may be garbage), so the page holding `pos` is always looked at. A
/// record damaged in some other way matches only if its bytes end in zeros at a page
/// boundary, which is why only a log known never to have been synced may be cut there
/// ([`LogContents::unwritten_gap`]). `zeros_from` is [`zero_suffix_start`] of `bytes`:
/// zeros up to the end are the other rules' business.
fn runs_into_unwritten_page(bytes: &[u8], pos: usize, zeros_from: usize) -> bool {
    let len = get_u32(bytes, pos + 4).map_or(0, |l| l as usize);
    let record_end = pos
        .saturating_add(RECORD_HEADER_LEN)
        .saturating_add(len)
        .min(zeros_from);
    let mut page = pos / PAGE_BYTES * PAGE_BYTES;
    while page < record_end && page + PAGE_BYTES < zeros_from {
        let page_end = page + PAGE_BYTES;
        let last_here = record_end.min(page_end) - 1;
        if bytes[last_here.max(pos)..page_end].iter().all(|&b| b == 0) {
            return true;
        }
        page = page_end;
    }
    false
}

/// Trailing zero bytes of a payload that [`checksums_shorter`] tries every length over.
const TRAILING_ZERO_SEARCH: usize = 4096;

/// Whether the record at `pos` (stored CRC `crc`, stored length `len`), which runs into the
/// file's all-zero suffix, checksums as a whole record at a *shorter* length ending inside
/// that suffix. Then its length field was damaged (made larger) and its whole payload is
/// there, which a torn write never leaves: damage. This is the last record's case of a
/// length flipped larger when the file ends in reserved zeros (a WAL): the record no longer
/// runs past the end of the file, or runs past it with zeros in its bytes, so the
/// whole-record checksum in `is_torn_tail` misses it. Every length up to
/// [`TRAILING_ZERO_SEARCH`] bytes into the suffix is tried (a payload may end in zero bytes
/// of its own), and beyond that every single-bit change of `len`; only lengths the file
/// holds.
fn checksums_shorter(bytes: &[u8], pos: usize, crc: u32, len: usize, zeros_from: usize) -> bool {
    let start = pos + RECORD_HEADER_LEN;
    let min_len = zeros_from.saturating_sub(start);
    let Some(head) = bytes.get(start..start + min_len) else {
        return false;
    };
    // CRC-32C of (length field, payload) from the payload's own CRC, without rehashing it
    // for every candidate length.
    let whole = |l: usize, payload_crc: u32| -> bool {
        u32::try_from(l).is_ok_and(|l32| {
            let len_crc = crc32c::crc32c(&l32.to_le_bytes());
            mask_crc(crc32c::crc32c_combine(len_crc, payload_crc, l)) == crc
        })
    };
    let head_crc = crc32c::crc32c(head);
    let avail = bytes.len().saturating_sub(start);
    let near_end = len
        .min(min_len.saturating_add(TRAILING_ZERO_SEARCH))
        .min(avail + 1);
    let mut c = head_crc;
    for l in min_len..near_end {
        if whole(l, c) {
            return true;
        }
        c = crc32c::crc32c_append(c, &[0]);
    }
    let zeros = [0u8; 4096];
    (0..usize::BITS)
        .map(|b| len ^ (1usize << b))
        .filter(|&l| l >= near_end && l < len && l <= avail)
        .any(|l| {
            let mut c = head_crc;
            let mut left = l - min_len;
            while left > 0 {
                let n = left.min(zeros.len());
                c = crc32c::crc32c_append(c, &zeros[..n]);
                left -= n;
            }
            whole(l, c)
        })
}

enum Scan {
    Found,
    Nothing,
    /// The CRC budget ran out before every candidate was checked.
    Undecided,
}

/// Bytes of candidate payload the scan may checksum before giving up. Only reached by
/// adversarial data: candidates must first pass the cheap chain test below.
const SCAN_CRC_BUDGET: usize = 1 << 30;

/// Looks for a valid record starting anywhere after `after` (`zeros_from` is
/// [`zero_suffix_start`] of `bytes`).
///
/// Checksumming a candidate at every offset would cost O(n^2) on a large torn tail, so a
/// candidate must first be *plausible*: following record lengths from it lands exactly on
/// the end of the file or inside its all-zero suffix, as the records after a damaged one
/// do. That test is O(1) per offset with memoisation (right to left), and random bytes
/// almost never pass it. Plausible candidates are then checked by CRC. The price: damage
/// followed by valid records followed by a torn tail is reported as a torn tail at the
/// damage (two independent failures in one file).
fn find_record_after(bytes: &[u8], after: usize, zeros_from: usize) -> Scan {
    let n = bytes.len();
    let first = after + 1;
    if zeros_from <= first {
        return Scan::Nothing;
    }
    let count = zeros_from - first;
    let mut plausible = vec![0u64; count.div_ceil(64)];
    let is_set = |bits: &[u64], i: usize| bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1);
    for s in (first..zeros_from).rev() {
        let Some(len) = get_u32(bytes, s + 4) else {
            continue;
        };
        let len = len as usize;
        if len > MAX_RECORD_LEN {
            continue;
        }
        let next = (s + RECORD_HEADER_LEN).saturating_add(len);
        let ok = next <= n && (next >= zeros_from || is_set(&plausible, next - first));
        if ok {
            if let Some(w) = plausible.get_mut((s - first) / 64) {
                *w |= 1 << ((s - first) % 64);
            }
        }
    }
    let mut budget = SCAN_CRC_BUDGET;
    for s in first..zeros_from {
        if !is_set(&plausible, s - first) {
            continue;
        }
        let len = get_u32(bytes, s + 4).unwrap_or(0) as usize;
        if len > budget {
            return Scan::Undecided;
        }
        budget -= len;
        if parse_record(bytes, s).is_ok() {
            return Scan::Found;
        }
    }
    Scan::Nothing
}
