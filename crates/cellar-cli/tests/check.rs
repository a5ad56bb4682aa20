//! `cellar check`: a good database passes; one flipped byte in an SST data block, in the
//! manifest or in a middle WAL record fails it, naming the file and the offset.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use cellar_engine::tools::log::{read_log, LogKind, TailPolicy};
use cellar_engine::tools::sst::SstFile;
use cellar_engine::vfs::RealVfs;

use common::{
    build_db, build_db_with, cellar, files_with_ext, flip_byte, manifest_path, partitioned_options,
    stderr, stdout,
};

fn fresh_db() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    build_db(&dir);
    (tmp, dir)
}

fn check(dir: &Path) -> (Option<i32>, String) {
    let out = cellar(&["check", "--db", dir.to_str().expect("utf-8")]);
    (out.status.code(), stdout(&out) + &stderr(&out))
}

/// Every byte of the directory, to show `check` and `inspect` leave it untouched.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| {
            let p = e.expect("entry").path();
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("read"))
        })
        .collect();
    v.sort();
    v
}

fn open_sst(sst: &Path) -> SstFile {
    SstFile::read(&RealVfs, sst).expect("read sst")
}

#[test]
fn good_database_passes_and_nothing_is_modified() {
    let (_tmp, dir) = fresh_db();
    let before = snapshot(&dir);
    let (code, out) = check(&dir);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("0 corrupt, 0 missing, 0 warnings: OK"),
        "{out}"
    );
    let d = dir.to_str().expect("utf-8");
    for args in [
        vec!["inspect", "lsm", "--db", d],
        vec!["inspect", "manifest", "--db", d],
    ] {
        assert_eq!(cellar(&args).status.code(), Some(0));
    }
    for sst in files_with_ext(&dir, "sst") {
        let o = cellar(&["inspect", "sst", sst.to_str().expect("utf-8"), "--entries"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    for wal in files_with_ext(&dir, "wal") {
        let o = cellar(&["inspect", "wal", wal.to_str().expect("utf-8")]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_eq!(
        before,
        snapshot(&dir),
        "a read-only command changed the database"
    );
}

#[test]
fn flipped_byte_in_an_sst_data_block_is_reported() {
    let (_tmp, dir) = fresh_db();
    let sst = files_with_ext(&dir, "sst").remove(0);
    let f = open_sst(&sst);
    let index = f.index(&f.footer().expect("footer")).expect("index");
    let handles: Vec<_> = (0..index.len())
        .map(|i| index.handle(i).expect("handle"))
        .collect();
    drop(f);
    let block = handles[handles.len() / 2];
    flip_byte(&sst, block.offset + block.size / 2);

    let (code, out) = check(&dir);
    assert_eq!(code, Some(1), "{out}");
    let line = format!("CORRUPT {}: ", sst.display());
    assert!(out.contains(&line), "{out}");
    assert!(
        out.contains(&format!("at offset {}", block.offset)),
        "the error should give the block's offset {}: {out}",
        block.offset
    );
    assert!(out.contains("1 corrupt"), "{out}");
    assert!(out.contains("DAMAGED"), "{out}");

    // `inspect sst` shows the damage too, and exits 1.
    let o = cellar(&["inspect", "sst", sst.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("ERROR corruption in"), "{}", stdout(&o));
}

/// In a partitioned file, a flipped byte in an index partition or a filter partition fails
/// `check`, naming the file and the partition's offset.
#[test]
fn flipped_byte_in_an_sst_partition_is_reported() {
    for which in ["index", "filter"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("db");
        build_db_with(&dir, partitioned_options());
        let (code, out) = check(&dir);
        assert_eq!(code, Some(0), "{out}");
        let sst = files_with_ext(&dir, "sst").remove(0);
        let f = open_sst(&sst);
        let footer = f.footer().expect("footer");
        assert!(footer.is_partitioned(), "a partitioned file");
        let props = f.properties(&footer).expect("properties");
        let (top, filters) = f.top_level_index(&footer, &props).expect("top level");
        assert!(top.len() > 2, "{} partitions", top.len());
        let part = top.len() / 2;
        let h = match which {
            "index" => top.handle(part).expect("handle"),
            _ => filters[part],
        };
        drop(f);
        flip_byte(&sst, h.offset + h.size / 2);

        let (code, out) = check(&dir);
        assert_eq!(code, Some(1), "{which}: {out}");
        assert!(
            out.contains(&format!("CORRUPT {}: ", sst.display())),
            "{out}"
        );
        assert!(
            out.contains(&format!("at offset {}", h.offset)),
            "{which}: {out}"
        );
    }
}

#[test]
fn flipped_byte_in_the_manifest_is_reported() {
    let (_tmp, dir) = fresh_db();
    let manifest = manifest_path(&dir);
    let bytes = std::fs::read(&manifest).expect("read");
    let log = read_log(&bytes, &manifest, LogKind::Manifest, TailPolicy::Strict).expect("log");
    assert!(log.records.len() >= 3);
    let rec = &log.records[1];
    flip_byte(&manifest, rec.payload.start as u64 + 1);

    let (code, out) = check(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!("CORRUPT {}: ", manifest.display())),
        "{out}"
    );
    assert!(out.contains(&format!("at offset {}", rec.offset)), "{out}");

    let d = dir.to_str().expect("utf-8");
    let o = cellar(&["inspect", "manifest", "--db", d]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(text.contains("edit #0 offset 16"), "{text}");
    assert!(
        text.contains(&format!("at offset {}", rec.offset)),
        "{text}"
    );
    let o = cellar(&["inspect", "lsm", "--db", d]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&format!("at offset {}", rec.offset)));
}

#[test]
fn flipped_byte_in_a_middle_wal_record_is_reported() {
    let (_tmp, dir) = fresh_db();
    let wal = files_with_ext(&dir, "wal").remove(0);
    let bytes = std::fs::read(&wal).expect("read");
    let log = read_log(&bytes, &wal, LogKind::Wal, TailPolicy::Strict).expect("log");
    // Three writes, then the synced-predecessors record of `close`.
    assert_eq!(log.records.len(), 4);
    let rec = &log.records[1];
    flip_byte(&wal, rec.payload.start as u64 + 3);

    let (code, out) = check(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!("CORRUPT {}: ", wal.display())),
        "{out}"
    );
    assert!(out.contains(&format!("at offset {}", rec.offset)), "{out}");

    let o = cellar(&["inspect", "wal", wal.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    // The record before the damage is still shown, then the error.
    assert!(text.contains("record #0 offset 16"), "{text}");
    assert!(
        text.contains(&format!("ERROR corruption in {}", wal.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("at offset {}", rec.offset)),
        "{text}"
    );
}

#[test]
fn torn_tail_of_the_newest_wal_is_a_warning() {
    let (_tmp, dir) = fresh_db();
    let wal = files_with_ext(&dir, "wal").remove(0);
    let bytes = std::fs::read(&wal).expect("read");
    let log = read_log(&bytes, &wal, LogKind::Wal, TailPolicy::Strict).expect("log");
    let last = log.records[3].offset;
    let len = bytes.len() as u64;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .expect("open");
    f.set_len(len - 5).expect("truncate");
    drop(f);

    let (code, out) = check(&dir);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!("WARN {}: torn tail", wal.display())),
        "{out}"
    );
    assert!(
        out.contains("0 corrupt, 0 missing, 1 warnings: OK"),
        "{out}"
    );

    let o = cellar(&["inspect", "wal", wal.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("records: 3"), "{}", stdout(&o));
    let torn = format!(
        "torn tail: {} bytes dropped at offset {last}",
        len - 5 - last
    );
    assert!(stdout(&o).contains(&torn), "{}", stdout(&o));
}

/// The newest WAL ending in zeros (space it reserved ahead of its records, as a database
/// that was not closed leaves it) is no warning for `check`, and `inspect wal` calls it an
/// unwritten tail, not a torn write.
#[test]
fn reserved_zeros_after_the_newest_wal_are_not_a_torn_tail() {
    let (_tmp, dir) = fresh_db();
    let wal = files_with_ext(&dir, "wal").remove(0);
    let len = std::fs::metadata(&wal).expect("stat").len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .expect("open");
    f.set_len(len + 4096).expect("extend with zeros");
    drop(f);

    let (code, out) = check(&dir);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("0 corrupt, 0 missing, 0 warnings: OK"),
        "{out}"
    );

    let o = cellar(&["inspect", "wal", wal.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains(&format!("unwritten tail: 4096 zero bytes at offset {len}")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn missing_sst_is_an_error_and_stray_files_are_warnings() {
    let (_tmp, dir) = fresh_db();
    let ssts = files_with_ext(&dir, "sst");
    std::fs::remove_file(&ssts[0]).expect("remove");
    std::fs::write(dir.join("999999.sst"), b"junk").expect("write");
    std::fs::write(dir.join("notes.txt"), b"hello").expect("write");

    let (code, out) = check(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!("MISSING {}: ", ssts[0].display())),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "WARN {}: unreferenced",
            dir.join("999999.sst").display()
        )),
        "{out}"
    );
    assert!(out.contains("notes.txt: not a Cellar file"), "{out}");
    assert!(out.contains("1 missing"), "{out}");
}

#[test]
fn damaged_current_is_reported() {
    let (_tmp, dir) = fresh_db();
    std::fs::write(dir.join("CURRENT"), b"garbage").expect("write");
    let (code, out) = check(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!("CORRUPT {}: ", dir.join("CURRENT").display())),
        "{out}"
    );
}
