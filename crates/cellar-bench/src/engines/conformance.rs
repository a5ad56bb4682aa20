//! Every compiled-in engine behind the same [`Engine`] contract: the answers a workload
//! relies on (values, missing keys, scan order and limits in both directions, batches,
//! durable writes, reopen, concurrent threads).

use std::path::Path;
use std::time::Duration;

use super::{is_built, open, KNOWN};
use crate::engine::{Direction, Engine, OpenConfig, Seek};

fn cfg(index_filter_in_cache: bool) -> OpenConfig {
    OpenConfig {
        block_cache_bytes: 8 << 20,
        memtable_bytes: 4 << 20,
        direct_reads: false,
        rocksdb_statistics: index_filter_in_cache,
        rocksdb_index_filter_in_cache: index_filter_in_cache,
        object_store: None,
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    vec![b'a' + (i % 26) as u8; 10 + (i % 7) as usize]
}

/// Keys visited by one seek to `target` (`Seek::Key` positions on `from`).
fn scan(e: &dyn Engine, dir: Direction, target: Seek, from: &[u8], limit: usize) -> Vec<Vec<u8>> {
    let mut once = Some(target);
    let mut got = Vec::new();
    e.scan(
        dir,
        limit,
        &mut |buf| {
            let t = once.take()?;
            buf.clear();
            buf.extend_from_slice(from);
            Some(t)
        },
        &mut |k, v| {
            let i: u32 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            assert_eq!(v, value(i).as_slice(), "value of {i}");
            got.push(k.to_vec());
        },
    )
    .unwrap();
    got
}

fn check_engine(name: &str, dir: &Path, cfg: &OpenConfig) {
    let e = open(name, dir, cfg).unwrap();
    assert_eq!(e.name(), name);
    // Even keys 0..200 one by one, odd ones in one batch.
    for i in (0..200).step_by(2) {
        e.put(&key(i), &value(i), i % 20 == 0).unwrap();
    }
    let odd: Vec<(Vec<u8>, Vec<u8>)> = (1..200).step_by(2).map(|i| (key(i), value(i))).collect();
    let refs: Vec<(&[u8], &[u8])> = odd.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    e.put_batch(&refs, false).unwrap();
    e.put_batch(&refs[..3], true).unwrap();

    assert_eq!(e.get(&key(7)).unwrap(), Some(value(7).len()));
    assert_eq!(e.get(b"nope").unwrap(), None);
    // `read_into` hands back the bytes, replacing what the buffer held, and empties it for a
    // missing key.
    let mut buf = b"stale".to_vec();
    assert!(e.read_into(&key(7), &mut buf).unwrap());
    assert_eq!(buf, value(7));
    assert!(!e.read_into(b"nope", &mut buf).unwrap());
    assert!(buf.is_empty());
    let got = e
        .multi_get(&[&key(0), b"missing", &key(199), &key(42)])
        .unwrap();
    assert_eq!(
        got,
        [
            Some(value(0).len()),
            None,
            Some(value(199).len()),
            Some(value(42).len())
        ]
    );

    // Overwrite changes the value.
    e.put(&key(5), &value(6), false).unwrap();
    assert_eq!(e.get(&key(5)).unwrap(), Some(value(6).len()));
    assert!(e.read_into(&key(5), &mut buf).unwrap());
    assert_eq!(buf, value(6));
    e.put(&key(5), &value(5), false).unwrap();

    let fwd = scan(e.as_ref(), Direction::Forward, Seek::Key, b"k000010x", 5);
    assert_eq!(fwd, (11..16).map(key).collect::<Vec<_>>());
    let back = scan(e.as_ref(), Direction::Reverse, Seek::Key, b"k000010x", 3);
    assert_eq!(back, [key(10), key(9), key(8)]);
    let all = scan(e.as_ref(), Direction::Forward, Seek::First, b"", usize::MAX);
    assert_eq!(all, (0..200).map(key).collect::<Vec<_>>());
    let last = scan(e.as_ref(), Direction::Reverse, Seek::Last, b"", 2);
    assert_eq!(last, [key(199), key(198)]);
    assert!(scan(e.as_ref(), Direction::Forward, Seek::Key, b"z", 10).is_empty());

    // Several seeks on one scan call.
    let mut seeks = vec![key(100), key(150)].into_iter();
    let mut firsts = Vec::new();
    let mut n = 0;
    e.scan(
        Direction::Forward,
        2,
        &mut |buf| {
            let k = seeks.next()?;
            *buf = k;
            Some(Seek::Key)
        },
        &mut |k, _| {
            if n % 2 == 0 {
                firsts.push(k.to_vec());
            }
            n += 1;
        },
    )
    .unwrap();
    assert_eq!(firsts, [key(100), key(150)]);

    e.flush().unwrap();
    e.wait_for_background(Duration::from_secs(60)).unwrap();
    e.close().unwrap();

    // Everything is there after a reopen; threads write and read at once.
    let e = open(name, dir, cfg).unwrap();
    assert_eq!(e.get(&key(199)).unwrap(), Some(value(199).len()));
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let e = e.as_ref();
            s.spawn(move || {
                for i in 0..100 {
                    let i = 1000 + t * 100 + i;
                    e.put(&key(i), &value(i), i % 50 == 0).unwrap();
                    assert_eq!(e.get(&key(i)).unwrap(), Some(value(i).len()));
                    assert!(e.get(&key(i % 200)).unwrap().is_some());
                }
            });
        }
    });
    let all = scan(e.as_ref(), Direction::Forward, Seek::First, b"", usize::MAX);
    assert_eq!(all.len(), 600);
    e.compact().unwrap();
    e.wait_for_background(Duration::from_secs(60)).unwrap();
    assert_eq!(e.get(&key(1399)).unwrap(), Some(value(1399).len()));
    e.close().unwrap();
}

#[test]
fn every_built_engine_honours_the_engine_contract() {
    let mut checked = Vec::new();
    for name in KNOWN.iter().copied().filter(|n| is_built(n)) {
        let dir = tempfile::tempdir().unwrap();
        check_engine(name, &dir.path().join(name), &cfg(false));
        checked.push(name);
    }
    for peer in ["lmdb", "fjall", "sqlite", "slatedb"] {
        assert_eq!(checked.contains(&peer), is_built(peer));
    }
    assert!(checked.contains(&"cellar"));
}

/// RocksDB's other placement of index and filter blocks (partitioned, in the block cache,
/// with statistics on) keeps the same contract.
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_with_partitioned_index_and_filters_honours_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    check_engine("rocksdb", &dir.path().join("rocksdb"), &cfg(true));
}
