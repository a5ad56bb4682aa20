use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::error::Error;
use crate::log::{LogWriter, FILE_HEADER_LEN};
use crate::vfs::{FaultVfs, IoKind, MemVfs, Vfs};

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn file_meta() -> impl Strategy<Value = FileMeta> {
    (
        any::<u64>(),
        any::<u64>(),
        bytes(24),
        bytes(24),
        any::<[u64; 4]>(),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(
            |(number, size, smallest, largest, s, global_seq)| FileMeta {
                number,
                size,
                smallest,
                largest,
                min_seq: s[0],
                max_seq: s[1],
                num_entries: s[2],
                num_deletions: s[3],
                global_seq,
            },
        )
}

fn tombstone() -> impl Strategy<Value = (u32, RangeTombstone)> {
    (any::<u32>(), bytes(12), bytes(12), any::<u64>())
        .prop_map(|(ks, start, end, seq)| (ks, RangeTombstone { start, end, seq }))
}

fn version_edit() -> impl Strategy<Value = VersionEdit> {
    use proptest::collection::vec;
    (
        (
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(any::<u64>()),
        ),
        vec((any::<u32>(), ".{0,12}"), 0..3),
        vec(any::<u32>(), 0..3),
        vec((any::<u32>(), any::<u32>(), file_meta()), 0..4),
        vec((any::<u32>(), any::<u32>(), any::<u64>()), 0..4),
        vec(tombstone(), 0..3),
        vec(tombstone(), 0..3),
        vec((any::<u32>(), keyspace_options()), 0..3),
    )
        .prop_map(
            |(s, created, dropped, added, deleted, add_rt, del_rt, ks_opts)| VersionEdit {
                log_number: s.0,
                next_file_number: s.1,
                last_sequence: s.2,
                next_keyspace_id: s.3,
                writer_epoch: s.4,
                wal_placement: s.5,
                created_keyspaces: created,
                dropped_keyspaces: dropped,
                added_files: added,
                deleted_files: deleted,
                added_range_tombstones: add_rt,
                deleted_range_tombstones: del_rt,
                keyspace_options: ks_opts,
            },
        )
}

fn keyspace_options() -> impl Strategy<Value = crate::options::KeyspaceOptions> {
    use crate::options::Compression;
    (
        proptest::option::of(prop_oneof![
            Just(Compression::None),
            Just(Compression::Lz4),
            Just(Compression::Zstd)
        ]),
        proptest::option::of(1usize..1 << 20),
        proptest::option::of(any::<u32>()),
    )
        .prop_map(|(compression, block_size_bytes, bloom_bits_per_key)| {
            crate::options::KeyspaceOptions {
                compression,
                block_size_bytes,
                bloom_bits_per_key,
            }
        })
}

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

proptest! {
    #[test]
    fn edit_round_trips(e in version_edit()) {
        let enc = e.encode();
        prop_assert_eq!(VersionEdit::decode(&enc, Path::new("m"), 0)?, e);
    }

    #[test]
    fn decode_never_panics(b in bytes(200)) {
        let _ = VersionEdit::decode(&b, Path::new("m"), 0);
    }

    #[test]
    fn damaged_encodings_never_panic(e in version_edit(), at in any::<usize>(), xor in 1u8..=255, cut in any::<usize>()) {
        let mut enc = e.encode();
        if !enc.is_empty() {
            let i = at % enc.len();
            enc[i] ^= xor;
            let _ = VersionEdit::decode(&enc, Path::new("m"), 0);
            enc.truncate(cut % enc.len());
            let _ = VersionEdit::decode(&enc, Path::new("m"), 0);
        }
    }
}

#[test]
fn decode_errors_name_file_and_offset() {
    let check = |b: &[u8], want_offset: u64, want: &str| match VersionEdit::decode(
        b,
        Path::new("db/MANIFEST-000003"),
        100,
    ) {
        Err(Error::Corruption {
            file,
            offset,
            reason,
        }) => {
            assert_eq!(file, "db/MANIFEST-000003");
            assert_eq!(offset, want_offset, "{reason}");
            assert!(reason.contains(want), "{reason}");
        }
        other => panic!("{other:?}"),
    };
    // log_number = 5, then tag 99.
    check(&[1, 5, 99], 102, "unknown version edit tag 99");
    check(&[1, 5, 1, 6], 102, "appears twice");
    // next_keyspace_id = 2^32 does not fit a u32.
    check(&[4, 0x80, 0x80, 0x80, 0x80, 0x10], 101, "out of range");
    // created keyspace with an invalid UTF-8 name.
    check(&[5, 1, 2, 0xff, 0xfe], 102, "UTF-8");
    // added file cut short.
    check(&[7, 0, 0, 1], 104, "file size");
    assert_eq!(
        VersionEdit::decode(&[], Path::new("m"), 0).ok(),
        Some(VersionEdit::default())
    );
}

#[test]
fn file_names() {
    assert_eq!(manifest_file_name(7), "MANIFEST-000007");
    assert_eq!(wal_file_name(12), "000012.wal");
    assert_eq!(sst_file_name(12), "000012.sst");
    assert_eq!(sst_file_name(12_345_678), "12345678.sst");
    let cases = [
        ("MANIFEST-000007", Some(FileKind::Manifest(7))),
        ("000012.wal", Some(FileKind::Wal(12))),
        ("000012.sst", Some(FileKind::Sst(12))),
        ("12345678.sst", Some(FileKind::Sst(12_345_678))),
        ("CURRENT", Some(FileKind::Current)),
        ("LOCK", Some(FileKind::Lock)),
        ("CURRENT.tmp", Some(FileKind::Temp)),
        ("000012.sst.tmp", Some(FileKind::Temp)),
        ("12.sst", None),
        ("+00012.sst", None),
        ("000012.log", None),
        ("MANIFEST-", None),
        ("MANIFEST-00000x", None),
        ("99999999999999999999.sst", None),
        ("current", None),
        ("", None),
    ];
    for (name, want) in cases {
        assert_eq!(parse_file_name(name), want, "{name}");
    }
    for n in [0, 1, 999_999, 1_000_000, u64::MAX] {
        assert_eq!(
            parse_file_name(&manifest_file_name(n)),
            Some(FileKind::Manifest(n))
        );
        assert_eq!(parse_file_name(&wal_file_name(n)), Some(FileKind::Wal(n)));
        assert_eq!(parse_file_name(&sst_file_name(n)), Some(FileKind::Sst(n)));
    }
}

#[test]
fn current_round_trip_and_malformed() -> crate::Result<()> {
    let vfs = MemVfs::new();
    let dir = p("db");
    vfs.create_dir_all(&dir)?;
    assert_eq!(read_current(&vfs, &dir)?, None);
    write_current(&vfs, &dir, 7)?;
    assert_eq!(read_current(&vfs, &dir)?, Some(7));
    assert_eq!(vfs.read_all(&dir.join(CURRENT_FILE))?, b"MANIFEST-000007\n");
    assert!(!vfs.exists(&dir.join("CURRENT.tmp")));
    for bad in [
        &b"MANIFEST-000007"[..],
        b"MANIFEST-7\n",
        b"",
        b"\xff\n",
        b"000007.sst\n",
    ] {
        let mut f = vfs.create(&dir.join(CURRENT_FILE))?;
        f.append(bad)?;
        match read_current(&vfs, &dir) {
            Err(Error::Corruption { file, .. }) => assert!(file.ends_with("CURRENT")),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    Ok(())
}

/// Whatever step of `write_current` fails, a power loss afterwards leaves CURRENT naming
/// the old manifest (never a half-written one, never nothing); only a `write_current` that
/// returned `Ok` guarantees the new one.
#[test]
fn current_switch_is_durable_only_after_write_current_returns() -> crate::Result<()> {
    let dir = p("db");
    let steps = [
        (IoKind::Create, 1),
        (IoKind::Write, 1),
        (IoKind::Sync, 1),
        (IoKind::Rename, 1),
        (IoKind::Sync, 2),
    ];
    for (kind, n) in steps {
        let mem = MemVfs::new();
        mem.create_dir_all(&dir)?;
        write_current(&mem, &dir, 5)?;
        let fv = FaultVfs::new(Arc::new(mem.clone()));
        fv.fail_nth(kind, n);
        assert!(write_current(&fv, &dir, 6).is_err(), "{kind:?} #{n}");
        assert_eq!(
            read_current(&mem.crash_clone(), &dir)?,
            Some(5),
            "{kind:?} #{n}"
        );
        // The live file system names the old or the new manifest, nothing else.
        let live = read_current(&mem, &dir)?;
        assert!(
            live == Some(5) || live == Some(6),
            "{kind:?} #{n}: {live:?}"
        );
        fv.clear();
        write_current(&fv, &dir, 6)?;
        assert_eq!(read_current(&mem.crash_clone(), &dir)?, Some(6));
    }
    // A first CURRENT whose directory entry was never synced does not survive.
    let mem = MemVfs::new();
    mem.create_dir_all(&dir)?;
    let fv = FaultVfs::new(Arc::new(mem.clone()));
    fv.fail_nth(IoKind::Sync, 2);
    assert!(write_current(&fv, &dir, 1).is_err());
    assert_eq!(read_current(&mem.crash_clone(), &dir)?, None);
    assert_eq!(read_current(&mem.process_crash_clone(), &dir)?, Some(1));
    Ok(())
}

fn sample_edits() -> Vec<VersionEdit> {
    let first = VersionEdit {
        log_number: Some(1),
        next_file_number: Some(2),
        last_sequence: Some(0),
        next_keyspace_id: Some(1),
        created_keyspaces: vec![(0, "default".to_string())],
        ..VersionEdit::default()
    };
    let flush = VersionEdit {
        log_number: Some(3),
        last_sequence: Some(100),
        added_files: vec![(
            0,
            0,
            FileMeta {
                number: 2,
                size: 4096,
                smallest: b"a\x01\0\0\0\0\0\0\0".to_vec(),
                largest: b"z\x01\x64\0\0\0\0\0\0".to_vec(),
                min_seq: 1,
                max_seq: 100,
                num_entries: 100,
                num_deletions: 3,
                global_seq: None,
            },
        )],
        ..VersionEdit::default()
    };
    let compaction = VersionEdit {
        deleted_files: vec![(0, 0, 2)],
        added_range_tombstones: vec![(
            0,
            RangeTombstone {
                start: b"b".to_vec(),
                end: b"c".to_vec(),
                seq: 50,
            },
        )],
        ..VersionEdit::default()
    };
    vec![first, flush, compaction]
}

fn write_manifest(vfs: &MemVfs, path: &Path, edits: &[VersionEdit]) -> crate::Result<Vec<u64>> {
    let mut w = LogWriter::new(
        vfs.create(path)?,
        path.to_path_buf(),
        crate::log::LogKind::Manifest,
    )?;
    let mut offsets = Vec::new();
    for e in edits {
        offsets.push(w.add_record(&e.encode())?);
        w.sync()?;
    }
    Ok(offsets)
}

#[test]
fn manifest_round_trip_and_torn_last_edit() -> crate::Result<()> {
    let vfs = MemVfs::new();
    let path = p("MANIFEST-000001");
    let edits = sample_edits();
    let offsets = write_manifest(&vfs, &path, &edits)?;
    assert_eq!(read_manifest(&vfs, &path)?, edits);

    let full = vfs.file_size(&path)?;
    for cut in offsets[2] + 1..full {
        let v = vfs.process_crash_clone();
        v.truncate(&path, cut)?;
        let c = read_manifest_contents(&v, &path)?;
        assert_eq!(c.edits, edits[..2].to_vec(), "cut at {cut}");
        assert_eq!(
            (c.valid_len, c.dropped_tail_bytes),
            (offsets[2], cut - offsets[2])
        );
    }
    // A manifest torn right after creation is an empty manifest.
    let v = vfs.process_crash_clone();
    v.truncate(&path, FILE_HEADER_LEN as u64 - 3)?;
    assert_eq!(read_manifest(&v, &path)?, Vec::new());
    Ok(())
}

#[test]
fn manifest_damage_is_corruption() -> crate::Result<()> {
    let vfs = MemVfs::new();
    let path = p("MANIFEST-000001");
    let offsets = write_manifest(&vfs, &path, &sample_edits())?;
    vfs.corrupt_byte(&path, offsets[1] + 12, 0x40)?;
    match read_manifest(&vfs, &path) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, "MANIFEST-000001");
            assert_eq!(offset, offsets[1]);
        }
        other => panic!("{other:?}"),
    }
    // A record whose checksum is fine but whose payload is not an edit.
    let bad = p("MANIFEST-000002");
    let mut w = LogWriter::new(
        vfs.create(&bad)?,
        bad.clone(),
        crate::log::LogKind::Manifest,
    )?;
    w.add_record(&sample_edits()[0].encode())?;
    let at = w.add_record(&[42])?;
    w.sync()?;
    match read_manifest(&vfs, &bad) {
        Err(Error::Corruption { offset, reason, .. }) => {
            assert_eq!(offset, at + 8, "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A WAL is not a manifest.
    let wal = p("000001.wal");
    let mut w = LogWriter::new(vfs.create(&wal)?, wal.clone(), crate::log::LogKind::Wal)?;
    w.sync()?;
    assert!(read_manifest(&vfs, &wal).is_err_and(|e| e.is_corruption()));
    Ok(())
}
