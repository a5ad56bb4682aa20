use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::error::{Error, Result};
use crate::vfs::hints::{assert_contiguous, HintRecorder, Hints};
use crate::vfs::{FaultVfs, IoKind, MemVfs, Vfs};

fn path() -> PathBuf {
    PathBuf::from("db/000001.wal")
}

/// Writes `payloads` as a log on a fresh MemVfs and returns the file's bytes and the
/// offset each record got.
fn write_log(kind: LogKind, payloads: &[Vec<u8>]) -> Result<(Vec<u8>, Vec<u64>)> {
    let vfs = MemVfs::new();
    let p = PathBuf::from("log");
    let mut w = LogWriter::new(vfs.create(&p)?, p.clone(), kind)?;
    let mut offsets = Vec::new();
    for (i, payload) in payloads.iter().enumerate() {
        offsets.push(w.add_record(payload)?);
        if i % 3 == 1 {
            w.flush()?;
        }
    }
    w.sync()?;
    assert_eq!(w.file_size(), vfs.file_size(&p)?);
    Ok((vfs.read_all(&p)?, offsets))
}

fn payloads_of(contents: &LogContents, bytes: &[u8]) -> Vec<Vec<u8>> {
    contents.payloads(bytes).map(|(_, p)| p.to_vec()).collect()
}

fn three() -> Vec<Vec<u8>> {
    vec![b"first record".to_vec(), Vec::new(), vec![7u8; 40]]
}

fn tolerant(bytes: &[u8]) -> Result<LogContents> {
    read_log(bytes, &path(), LogKind::Wal, TailPolicy::TolerateTornTail)
}

fn strict(bytes: &[u8]) -> Result<LogContents> {
    read_log(bytes, &path(), LogKind::Wal, TailPolicy::Strict)
}

proptest! {
    #[test]
    fn round_trip(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..20),
        manifest in any::<bool>(),
    ) {
        let kind = if manifest { LogKind::Manifest } else { LogKind::Wal };
        let (bytes, offsets) = write_log(kind, &payloads)?;
        let c = read_log(&bytes, Path::new("x"), kind, TailPolicy::Strict)?;
        prop_assert_eq!(payloads_of(&c, &bytes), payloads);
        prop_assert_eq!(c.records.iter().map(|r| r.offset).collect::<Vec<_>>(), offsets);
        prop_assert_eq!(c.valid_len, bytes.len() as u64);
        prop_assert_eq!(c.dropped_tail_bytes, 0);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..200),
        with_header in any::<bool>(),
    ) {
        let mut bytes = if with_header { LogKind::Wal.header().to_vec() } else { Vec::new() };
        bytes.extend_from_slice(&tail);
        for policy in [TailPolicy::Strict, TailPolicy::TolerateTornTail] {
            if let Ok(c) = read_log(&bytes, &path(), LogKind::Wal, policy) {
                prop_assert_eq!(c.valid_len + c.dropped_tail_bytes, bytes.len() as u64);
            }
        }
    }

    #[test]
    fn random_damage_in_a_middle_record_is_corruption(
        which in 0usize..1000, xor in 1u8..=255,
    ) {
        let (mut bytes, offsets) = write_log(LogKind::Wal, &three())?;
        // Anywhere in the first two records (header or payload).
        let span = offsets[2] as usize - offsets[0] as usize;
        bytes[offsets[0] as usize + which % span] ^= xor;
        for r in [tolerant(&bytes), strict(&bytes)] {
            prop_assert!(matches!(r, Err(Error::Corruption { .. })), "{:?}", r);
        }
    }
}

#[test]
fn truncation_at_every_offset_gives_a_prefix() -> Result<()> {
    let payloads = three();
    let (bytes, offsets) = write_log(LogKind::Wal, &payloads)?;
    let ends: Vec<u64> = offsets
        .iter()
        .zip(&payloads)
        .map(|(o, p)| o + (RECORD_HEADER_LEN + p.len()) as u64)
        .collect();
    for cut in 0..=bytes.len() {
        let b = &bytes[..cut];
        let c = tolerant(b)?;
        let whole = ends.iter().filter(|&&e| e <= cut as u64).count();
        assert_eq!(
            payloads_of(&c, b),
            payloads[..whole].to_vec(),
            "cut at {cut}"
        );
        assert_eq!(c.valid_len + c.dropped_tail_bytes, cut as u64);
        let at_boundary = cut == 0 || cut == FILE_HEADER_LEN || ends.contains(&(cut as u64));
        assert_eq!(c.dropped_tail_bytes == 0, at_boundary, "cut at {cut}");
        match strict(b) {
            Ok(s) => {
                assert!(at_boundary, "strict accepted a torn cut at {cut}");
                assert_eq!(s, c);
            }
            Err(e) => {
                assert!(!at_boundary, "strict rejected a clean cut at {cut}: {e}");
                assert!(e.is_corruption());
            }
        }
    }
    Ok(())
}

#[test]
fn every_byte_flip_in_a_middle_record_is_corruption() -> Result<()> {
    let (bytes, offsets) = write_log(LogKind::Wal, &three())?;
    for at in offsets[0] as usize..offsets[2] as usize {
        for xor in [0x01u8, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[at] ^= xor;
            match tolerant(&b) {
                Err(Error::Corruption { file, offset, .. }) => {
                    assert!(file.contains("000001.wal"));
                    assert!(offset == offsets[0] || offset == offsets[1], "{offset}");
                }
                other => panic!("flip at {at} ^ {xor:#x}: {other:?}"),
            }
        }
    }
    Ok(())
}

/// A flipped byte anywhere in the last record — payload, checksum or length — is damage,
/// not a torn write: dropping it would silently lose an acknowledged (synced) record.
#[test]
fn damage_in_the_last_record_is_corruption() -> Result<()> {
    let (bytes, offsets) = write_log(LogKind::Wal, &three())?;
    for at in offsets[2] as usize..bytes.len() {
        for x in [0x01u8, 0x10, 0x80] {
            let mut b = bytes.clone();
            b[at] ^= x;
            let err = tolerant(&b).expect_err("damage must not pass as a torn tail");
            assert!(err.is_corruption(), "flip {x:#x} at {at}: {err}");
            assert!(strict(&b).is_err_and(|e| e.is_corruption()));
        }
    }
    Ok(())
}

/// Regression: the last record cut short at any byte is a torn tail, dropped in tolerant mode.
#[test]
fn truncated_last_record_is_a_torn_tail() -> Result<()> {
    let (bytes, offsets) = write_log(LogKind::Wal, &three())?;
    for cut in offsets[2] as usize + 1..bytes.len() {
        let b = &bytes[..cut];
        let c = tolerant(b)?;
        assert_eq!(payloads_of(&c, b), three()[..2].to_vec(), "cut at {cut}");
        assert_eq!(c.dropped_tail_bytes, (cut as u64) - offsets[2]);
    }
    Ok(())
}

#[test]
fn trailing_zeros_are_a_torn_tail() -> Result<()> {
    let (mut bytes, _) = write_log(LogKind::Wal, &three())?;
    let n = bytes.len();
    bytes.resize(n + 4096, 0);
    let c = tolerant(&bytes)?;
    assert_eq!(payloads_of(&c, &bytes), three());
    assert_eq!((c.valid_len, c.dropped_tail_bytes), (n as u64, 4096));
    assert!(strict(&bytes).is_err_and(|e| e.is_corruption()));
    Ok(())
}

#[test]
fn headers() -> Result<()> {
    let empty = LogContents::default();
    assert_eq!(tolerant(&[])?, empty);
    assert_eq!(strict(&[])?, empty);
    let header = LogKind::Wal.header();
    assert_eq!(strict(&header)?.valid_len, FILE_HEADER_LEN as u64);
    // Torn at creation: tolerated as an empty log, rejected by strict.
    let c = tolerant(&header[..5])?;
    assert_eq!(
        (c.records.len(), c.valid_len, c.dropped_tail_bytes),
        (0, 0, 5)
    );
    assert!(strict(&header[..5]).is_err_and(|e| e.is_corruption()));
    let mut zeroed = header;
    zeroed[12..].fill(0);
    assert_eq!(tolerant(&zeroed)?.dropped_tail_bytes, 16);
    assert!(tolerant(b"garbage").is_err_and(|e| e.is_corruption()));
    // The other kind's magic is named in the error.
    let (manifest, _) = write_log(LogKind::Manifest, &three())?;
    match tolerant(&manifest) {
        Err(Error::Corruption { reason, offset, .. }) => {
            assert_eq!(offset, 0);
            assert!(reason.contains("Manifest"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A damaged header with records after it is corruption even when tolerant.
    let (mut bytes, _) = write_log(LogKind::Wal, &three())?;
    bytes[3] ^= 1;
    assert!(tolerant(&bytes).is_err_and(|e| e.is_corruption()));
    bytes[3] ^= 1;
    bytes[9] ^= 1;
    assert!(tolerant(&bytes).is_err_and(|e| e.is_corruption()));
    // A well-formed header of another version.
    let mut v2 = header;
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    let crc = mask_crc(crc32c::crc32c(&v2[..12]));
    v2[12..].copy_from_slice(&crc.to_le_bytes());
    match tolerant(&v2) {
        Err(Error::UnsupportedVersion {
            found, supported, ..
        }) => {
            assert_eq!((found, supported), (2, 1))
        }
        other => panic!("{other:?}"),
    }
    Ok(())
}

#[test]
fn large_records_round_trip_and_tear() -> Result<()> {
    let big: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let payloads = vec![b"small".to_vec(), big.clone()];
    let (bytes, offsets) = write_log(LogKind::Wal, &payloads)?;
    assert_eq!(payloads_of(&strict(&bytes)?, &bytes), payloads);
    let torn = &bytes[..bytes.len() - 1_000_000];
    let c = tolerant(torn)?;
    assert_eq!(payloads_of(&c, torn), payloads[..1].to_vec());
    assert_eq!(c.valid_len, offsets[1]);
    Ok(())
}

#[test]
fn writer_buffers_until_flush() -> Result<()> {
    let mem = MemVfs::new();
    let fv = FaultVfs::new(Arc::new(mem.clone()));
    let p = PathBuf::from("w");
    let mut w = LogWriter::new(fv.create(&p)?, p.clone(), LogKind::Wal)?;
    assert_eq!(w.path(), p.as_path());
    assert_eq!(w.buffered_bytes(), FILE_HEADER_LEN);
    assert_eq!(w.add_record(b"abc")?, FILE_HEADER_LEN as u64);
    assert_eq!(w.add_record(b"de")?, (FILE_HEADER_LEN + 11) as u64);
    assert_eq!(w.file_size(), (FILE_HEADER_LEN + 21) as u64);
    assert_eq!((fv.count(IoKind::Write), mem.file_size(&p)?), (0, 0));
    w.flush()?;
    // One append for everything buffered; an empty flush makes no call.
    assert_eq!(fv.count(IoKind::Write), 1);
    w.flush()?;
    assert_eq!(fv.count(IoKind::Write), 1);
    assert_eq!((w.buffered_bytes(), w.flushed_size()), (0, w.file_size()));
    assert_eq!(mem.crash_clone().file_contents(&p), None);
    assert_eq!(mem.synced_len(&p)?, 0);
    w.sync()?;
    assert_eq!(w.synced_size(), w.file_size());
    assert_eq!(mem.synced_len(&p)?, w.file_size());
    Ok(())
}

#[test]
fn writer_is_poisoned_by_a_failed_append_or_sync() -> Result<()> {
    let mem = MemVfs::new();
    let fv = FaultVfs::new(Arc::new(mem.clone()));
    let p = PathBuf::from("w");
    let mut w = LogWriter::new(fv.create(&p)?, p.clone(), LogKind::Wal)?;
    w.add_record(b"one")?;
    w.flush()?;
    w.add_record(b"two")?;
    fv.fail_nth(IoKind::Write, 1);
    assert!(w.flush().is_err_and(|e| FaultVfs::is_injected(&e)));
    assert!(w.failure().is_some());
    assert!(w.add_record(b"three").is_err());
    assert!(w.sync().is_err());
    let bytes = mem.read_all(&p)?;
    assert_eq!(payloads_of(&strict(&bytes)?, &bytes), vec![b"one".to_vec()]);

    let q = PathBuf::from("q");
    let mut w = LogWriter::new(fv.create(&q)?, q, LogKind::Manifest)?;
    fv.fail_nth(IoKind::Sync, 1);
    assert!(w.sync().is_err());
    assert!(w.flush().is_err());
    Ok(())
}

#[test]
fn writer_rejects_non_empty_files_and_oversized_records() -> Result<()> {
    let mem = MemVfs::new();
    let p = PathBuf::from("w");
    let mut f = mem.create(&p)?;
    f.append(b"x")?;
    assert!(matches!(
        LogWriter::new(f, p.clone(), LogKind::Wal),
        Err(Error::InvalidArgument(_))
    ));
    let mut w = LogWriter::new(mem.create(&p)?, p, LogKind::Wal)?;
    let huge = vec![0u8; MAX_RECORD_LEN + 1];
    assert!(matches!(
        w.add_record(&huge),
        Err(Error::InvalidArgument(_))
    ));
    // Rejecting the record did not poison the writer.
    w.add_record(b"ok")?;
    w.flush()?;
    Ok(())
}

#[test]
fn mask_round_trips() {
    for v in [0u32, 1, 0xdead_beef, u32::MAX] {
        assert_eq!(unmask_crc(mask_crc(v)), v);
        assert_ne!(mask_crc(v), v);
    }
    // docs/format/wal.md quotes this value: zero bytes can never frame a record.
    assert_eq!(record_crc([0; 4], &[]), 0x3a11_7ba6);
}

fn hinted_writer(fail: bool) -> Result<(LogWriter, Hints)> {
    let hints = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let file = HintRecorder {
        inner: MemVfs::new().create(Path::new("hinted"))?,
        hints: Arc::clone(&hints),
        fail,
    };
    Ok((LogWriter::new(Box::new(file), path(), LogKind::Wal)?, hints))
}

/// The WAL asks the OS to write back what it flushed, in order, once per threshold, and
/// nothing a sync already made durable.
#[test]
fn writeback_hints_cover_flushed_bytes_once_per_threshold() -> Result<()> {
    let (mut w, hints) = hinted_writer(false)?;
    for _ in 0..10 {
        w.add_record(&[1u8; 150])?;
        w.flush()?;
    }
    assert!(hints.lock().is_empty(), "hints while writeback is off");

    w.set_writeback_bytes(1000);
    for _ in 0..40 {
        w.add_record(&[2u8; 150])?;
        w.flush()?;
    }
    let got = hints.lock().clone();
    assert!(got.len() >= 5, "{got:?}");
    assert_contiguous(&got, 0, 1000);
    let end = got.last().map_or(0, |(o, l)| o + l);
    assert!(end <= w.flushed_size() && w.flushed_size() - end < 1000 + 160);

    // After a sync, hints start where it ended.
    w.sync()?;
    let synced = w.synced_size();
    for _ in 0..10 {
        w.add_record(&[3u8; 150])?;
        w.flush()?;
    }
    let after: Vec<_> = hints.lock()[got.len()..].to_vec();
    assert_eq!(after.first().map(|h| h.0), Some(synced), "{after:?}");
    Ok(())
}

/// A failed writeback request is an I/O error like a failed write: the log is poisoned.
#[test]
fn a_failed_writeback_poisons_the_log() -> Result<()> {
    let (mut w, _) = hinted_writer(true)?;
    w.set_writeback_bytes(100);
    w.add_record(&[0u8; 200])?;
    assert!(matches!(w.flush(), Err(Error::Io { .. })));
    assert!(w.add_record(b"later").is_err());
    assert!(w.sync().is_err());
    Ok(())
}

/// A log with reserved space: the file runs past its last record in zeros, which the reader
/// takes for space never written; a power loss loses only unsynced records; `finish` cuts
/// the file to its last record, so even the strict reader (older WALs) accepts it.
#[test]
fn reserved_space_reads_as_an_unwritten_tail_and_finish_cuts_it() -> Result<()> {
    let vfs = MemVfs::new();
    vfs.create_dir_all(Path::new("db"))?;
    let p = path();
    let mut w = LogWriter::new(vfs.create(&p)?, p.clone(), LogKind::Wal)?;
    vfs.sync_dir(Path::new("db"))?;
    w.set_preallocate_bytes(4096);
    for i in 0..20u8 {
        w.add_record(&[i; 300])?;
        w.flush()?;
    }
    w.sync()?;
    let end = w.file_size();
    assert!(end > 4096, "grew past the first reservation: {end}");
    let size = vfs.file_size(&p)?;
    assert!(
        size > end && size <= end + 4096 + 308,
        "size {size}, records end {end}"
    );

    let bytes = vfs.read_all(&p)?;
    let c = tolerant(&bytes)?;
    assert_eq!(c.records.len(), 20);
    assert_eq!(c.valid_len, end);
    assert_eq!(c.dropped_tail_bytes, size - end);
    assert!(
        c.unwritten_tail,
        "the reserved zeros are space never written"
    );
    assert!(strict(&bytes).is_err(), "an unfinished log is not complete");

    // Records appended after the last sync are zeros after a power loss.
    w.add_record(&[99; 300])?;
    w.flush()?;
    let crashed = vfs.crash_clone().read_all(&p)?;
    let c = tolerant(&crashed)?;
    assert_eq!(c.records.len(), 20);
    assert_eq!(c.valid_len, end);

    w.finish()?;
    let bytes = vfs.crash_clone().read_all(&p)?;
    assert_eq!(bytes.len() as u64, w.file_size());
    assert_eq!(strict(&bytes)?.records.len(), 21);
    Ok(())
}

/// A failed reservation is an I/O error like a failed write: the log is poisoned.
#[test]
fn a_failed_reservation_poisons_the_log() -> Result<()> {
    let fv = FaultVfs::new(Arc::new(MemVfs::new()));
    let p = PathBuf::from("w");
    let mut w = LogWriter::new(fv.create(&p)?, p, LogKind::Wal)?;
    w.set_preallocate_bytes(1 << 10);
    fv.fail_nth(IoKind::Write, 1);
    w.add_record(b"x")?;
    assert!(matches!(w.flush(), Err(Error::Io { .. })));
    assert!(w.add_record(b"later").is_err());
    assert!(w.finish().is_err());
    Ok(())
}

/// In a log that ends in reserved zeros, the last record's length field made larger leaves
/// a record that seems complete (or runs past the end with zeros in it): it is damage,
/// because the record checksums whole at a shorter length. A record whose later sectors
/// never reached the disk is still a torn write.
#[test]
fn last_length_made_larger_in_reserved_space_is_damage() -> Result<()> {
    let mut with_zeros = vec![5u8; 600];
    with_zeros.resize(700, 0); // a payload may end in zero bytes of its own
    let mut far_zeros = vec![6u8; 100];
    far_zeros.resize(6000, 0); // more than the search tries length by length
    for last_payload in [vec![5u8; 700], with_zeros, far_zeros] {
        let mut payloads = three();
        payloads.push(last_payload.clone());
        let (mut bytes, offsets) = write_log(LogKind::Wal, &payloads)?;
        bytes.resize(bytes.len() + 8192, 0);
        assert_eq!(tolerant(&bytes)?.records.len(), 4);
        let last = offsets[3] as usize;
        let len_at = last + 4..last + 8;
        let true_len = last_payload.len() as u32;
        let deltas: &[u32] = if last_payload.len() > 4096 {
            &[1 << 13, 1 << 14] // single-bit flips: 6000 has both bits clear
        } else {
            &[1, 8, 300, 4099, 8000, 1 << 20]
        };
        for &delta in deltas {
            let mut b = bytes.clone();
            b[len_at.clone()].copy_from_slice(&(true_len + delta).to_le_bytes());
            assert!(
                matches!(tolerant(&b), Err(Error::Corruption { .. })),
                "payload {} delta {delta}: {:?}",
                last_payload.len(),
                tolerant(&b).map(|c| c.records.len())
            );
        }
    }

    // Torn: the last record's first sector is there, the rest reads as reserved zeros.
    let mut payloads = three();
    payloads.push(vec![7u8; 2000]);
    let (mut bytes, offsets) = write_log(LogKind::Wal, &payloads)?;
    bytes.resize(bytes.len() + 8192, 0);
    let cut = (offsets[3] as usize + 8 + 1).div_ceil(512) * 512;
    bytes[cut..].fill(0);
    let c = tolerant(&bytes)?;
    assert_eq!(c.records.len(), 3);
    assert_eq!(c.valid_len, offsets[3]);
    assert!(
        !c.unwritten_tail,
        "a record was cut short, not only zeros dropped"
    );
    Ok(())
}

fn pages_tolerant(bytes: &[u8]) -> Result<LogContents> {
    read_log(
        bytes,
        &path(),
        LogKind::Wal,
        TailPolicy::TolerateUnwrittenPages,
    )
}

/// What a power loss leaves of a log appended through a memory map: a page cut short and
/// zero up to its end, with later pages written. `TolerateUnwrittenPages` drops the
/// records from the cut on and says so (`unwritten_gap`); the other policies call it
/// damage. Damage without such zeros is damage under every policy.
#[test]
fn a_page_left_unwritten_before_later_bytes_is_dropped_only_when_asked() -> Result<()> {
    let payloads: Vec<Vec<u8>> = (1..=14u8).map(|i| vec![i; 1000]).collect();
    let (bytes, offsets) = write_log(LogKind::Wal, &payloads)?;
    assert!(bytes.len() > 3 * 4096);
    let record_of = |at: u64| offsets.iter().rposition(|&o| o <= at).expect("record");
    // (start of the zeros, page boundary they end at): a page cut inside a record, a whole
    // page, a page cut right at a record's header, one zero byte before the boundary.
    let page_ends = [4096u64, 8192, 12288];
    let cases = [
        (2000, page_ends[0]),
        (page_ends[0], page_ends[1]),
        (offsets[9], page_ends[2]),
        (page_ends[1] - 1, page_ends[1]),
    ];
    for (from, to) in cases {
        let mut b = bytes.clone();
        b[from as usize..to as usize].fill(0);
        let first_bad = record_of(from);
        let c = pages_tolerant(&b)?;
        assert!(c.unwritten_gap, "zeros {from}..{to}");
        assert_eq!(c.records.len(), first_bad, "zeros {from}..{to}");
        assert_eq!(c.valid_len, offsets[first_bad]);
        assert_eq!(payloads_of(&c, &b), payloads[..first_bad].to_vec());
        assert!(matches!(tolerant(&b), Err(Error::Corruption { .. })));
        assert!(matches!(strict(&b), Err(Error::Corruption { .. })));
    }

    // The header's page written back before the header was: the whole log is dropped.
    let mut b = bytes.clone();
    b[..4096].fill(0);
    let c = pages_tolerant(&b)?;
    assert!(c.unwritten_gap && c.records.is_empty() && c.valid_len == 0);
    assert!(matches!(tolerant(&b), Err(Error::Corruption { .. })));

    // A flipped byte with no zeros before a page boundary: damage.
    let mut b = bytes.clone();
    b[offsets[5] as usize + 20] ^= 0x40;
    assert!(matches!(pages_tolerant(&b), Err(Error::Corruption { .. })));
    // Zeros that do not reach a page boundary: damage too.
    let mut b = bytes.clone();
    b[5000..5100].fill(0);
    assert!(matches!(pages_tolerant(&b), Err(Error::Corruption { .. })));
    // Zeros from a sector boundary to the end of the file are the plain torn tail.
    let mut b = bytes.clone();
    b[6144..].fill(0);
    let c = pages_tolerant(&b)?;
    assert!(!c.unwritten_gap);
    assert_eq!(c.records.len(), record_of(6144));
    Ok(())
}
