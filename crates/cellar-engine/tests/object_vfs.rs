//! The `Vfs` contract of `ObjectVfs`, against `InMemory` and against a real SeaweedFS
//! (`cellar-testkit`), plus its request accounting, disk cache and fault handling.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use cellar_engine::vfs::object::fault::{FaultObjectStore, IgnoresConditions};
use cellar_engine::vfs::object::object_store::memory::InMemory;
use cellar_engine::vfs::object::object_store::ObjectStore;
use cellar_engine::vfs::object::{DiskCacheConfig, ObjectVfs};
use cellar_engine::vfs::{CreateOutcome, Vfs};
use cellar_engine::{Error, ObjectStoreOptions};
use cellar_testkit::SeaweedFs;

fn memory_vfs(store: Arc<dyn ObjectStore>, cache: Option<&Path>) -> ObjectVfs {
    let cache = cache.map(|dir| DiskCacheConfig {
        dir: dir.to_path_buf(),
        bytes: 1 << 30,
    });
    ObjectVfs::new(store, "memory", cache).unwrap()
}

fn seaweed_vfs(server: &SeaweedFs, cache: Option<&Path>) -> ObjectVfs {
    let options = ObjectStoreOptions {
        endpoint: Some(server.endpoint()),
        access_key_id: Some(server.access_key().to_string()),
        secret_access_key: Some(server.secret_key().to_string()),
        ..ObjectStoreOptions::default()
    };
    ObjectVfs::connect(&server.url("x"), &options, cache).unwrap()
}

fn seaweed() -> &'static SeaweedFs {
    SeaweedFs::shared().unwrap()
}

fn counter(vfs: &ObjectVfs, name: &str) -> u64 {
    vfs.counters()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap()
        .1
}

fn write(vfs: &ObjectVfs, path: &Path, data: &[u8]) {
    let mut file = vfs.create(path).unwrap();
    for chunk in data.chunks(1000) {
        file.append(chunk).unwrap();
    }
    file.sync().unwrap();
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn is_not_found(err: &Error) -> bool {
    matches!(err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// The file operations the engine uses, on one backend under `prefix`.
fn contract(vfs: &ObjectVfs, prefix: &str) {
    let dir = PathBuf::from(prefix);
    let data = contract_write_and_read(vfs, &dir);
    contract_names(vfs, &dir, &data);
}

/// Writes `dir/000012.sst` and reads it back by range and whole; its bytes.
fn contract_write_and_read(vfs: &ObjectVfs, dir: &Path) -> Vec<u8> {
    let sst = dir.join("000012.sst");
    let data = pattern(10_000);
    let mut file = vfs.create(&sst).unwrap();
    file.append(&data[..4000]).unwrap();
    file.append(&data[4000..]).unwrap();
    assert_eq!(file.len(), 10_000);
    assert!(!vfs.exists(&sst), "nothing is uploaded before sync");
    file.sync().unwrap();
    drop(file);
    assert!(vfs.exists(&sst));
    assert_eq!(vfs.file_size(&sst).unwrap(), 10_000);
    let reader = vfs.open_read(&sst, false).unwrap();
    assert_eq!(reader.size(), 10_000);
    let mut buf = vec![0u8; 300];
    reader.read_exact_at(&mut buf, 1234).unwrap();
    assert_eq!(buf, &data[1234..1534]);
    reader.read_exact_at_scan(&mut buf, 9700).unwrap();
    assert_eq!(buf, &data[9700..]);
    assert!(
        reader.read_exact_at(&mut buf, 9800).is_err(),
        "past the end"
    );
    assert_eq!(vfs.read_all(&sst).unwrap(), data);

    data
}

/// Conditional creates, listing, links, removal and counters, after `contract_write_and_read`.
fn contract_names(vfs: &ObjectVfs, dir: &Path, data: &[u8]) {
    let sst = dir.join("000012.sst");
    let manifest = dir.join("manifest/00000000000000000001.manifest");
    assert_eq!(
        vfs.create_if_absent(&manifest, b"first").unwrap(),
        CreateOutcome::Created
    );
    assert_eq!(
        vfs.create_if_absent(&manifest, b"second").unwrap(),
        CreateOutcome::AlreadyExists
    );
    assert_eq!(vfs.read_all(&manifest).unwrap(), b"first");

    let mut names = vfs.list(dir).unwrap();
    names.sort();
    assert_eq!(
        names,
        vec!["000012.sst".to_string()],
        "objects directly under the dir"
    );
    assert_eq!(
        vfs.list(&dir.join("manifest")).unwrap(),
        vec!["00000000000000000001.manifest"]
    );

    let link = dir.join("checkpoint/000012.sst");
    vfs.hard_link(&sst, &link).unwrap();
    assert_eq!(vfs.read_all(&link).unwrap(), data);
    assert!(matches!(
        vfs.rename(&sst, &dir.join("y")),
        Err(Error::ObjectStore(_))
    ));
    vfs.create_dir_all(&dir.join("wal")).unwrap();
    vfs.sync_dir(dir).unwrap();
    drop(vfs.lock(&dir.join("LOCK")).unwrap());

    vfs.remove(&sst).unwrap();
    assert!(!vfs.exists(&sst));
    assert!(is_not_found(&vfs.read_all(&sst).unwrap_err()));
    assert!(is_not_found(&vfs.file_size(&sst).unwrap_err()));
    assert!(vfs.open_read(&sst, false).is_err());
    assert_eq!(
        vfs.read_all(&link).unwrap(),
        data,
        "the link outlives its source"
    );

    let mut dropped = vfs.create(&dir.join("unsynced.sst")).unwrap();
    dropped.append(b"lost").unwrap();
    drop(dropped);
    assert!(!vfs.exists(&dir.join("unsynced.sst")));
    assert_eq!(
        counter(vfs, "object_put_requests_sst"),
        1,
        "the unsynced file never went up"
    );
    assert!(counter(vfs, "object_put_requests_manifest") == 2);
    assert!(counter(vfs, "object_head_requests") > 0);
    assert!(counter(vfs, "object_list_requests") == 2);
    assert!(counter(vfs, "object_delete_requests") == 1);
}

#[test]
fn contract_in_memory() {
    let cache = tempfile::tempdir().unwrap();
    contract(
        &memory_vfs(Arc::new(InMemory::new()), Some(cache.path())),
        "db",
    );
    contract(&memory_vfs(Arc::new(InMemory::new()), None), "a/b");
}

#[test]
fn contract_on_seaweedfs() {
    let server = seaweed();
    let cache = tempfile::tempdir().unwrap();
    contract(
        &seaweed_vfs(server, Some(cache.path())),
        &server.fresh_prefix("contract"),
    );
    contract(&seaweed_vfs(server, None), &server.fresh_prefix("nocache"));
}

/// Two threads race `create_if_absent` of one key: exactly one wins, its bytes stay.
fn race_creates(vfs: Arc<ObjectVfs>, path: PathBuf) {
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = [b"one", b"two"]
        .into_iter()
        .map(|data| {
            let (vfs, path, barrier) = (vfs.clone(), path.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                (vfs.create_if_absent(&path, data).unwrap(), data)
            })
        })
        .collect();
    let outcomes: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let winners: Vec<_> = outcomes
        .iter()
        .filter(|(o, _)| *o == CreateOutcome::Created)
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    assert_eq!(vfs.read_all(&path).unwrap(), winners[0].1);
}

#[test]
fn exactly_one_concurrent_create_wins() {
    let memory = Arc::new(memory_vfs(Arc::new(InMemory::new()), None));
    let server = seaweed();
    let s3 = Arc::new(seaweed_vfs(server, None));
    let prefix = server.fresh_prefix("race");
    for round in 0..5 {
        race_creates(
            memory.clone(),
            PathBuf::from(format!("db/manifest/{round}")),
        );
        race_creates(
            s3.clone(),
            PathBuf::from(format!("{prefix}/manifest/{round}")),
        );
    }
}

#[test]
fn probe_accepts_enforcing_stores_and_refuses_others() {
    let server = seaweed();
    let s3 = seaweed_vfs(server, None);
    let prefix = PathBuf::from(server.fresh_prefix("probe"));
    s3.probe_conditional_create(&prefix).unwrap();
    assert_eq!(
        s3.list(&prefix.join("_probe")).unwrap(),
        Vec::<String>::new(),
        "keys deleted"
    );
    let memory = memory_vfs(Arc::new(InMemory::new()), None);
    memory.probe_conditional_create(Path::new("db")).unwrap();
    let ignoring = memory_vfs(
        Arc::new(IgnoresConditions::new(Arc::new(InMemory::new()))),
        None,
    );
    match ignoring.probe_conditional_create(Path::new("db")) {
        Err(Error::ObjectStore(msg)) => {
            assert!(
                msg.contains("does not enforce conditional creates"),
                "{msg}"
            );
            assert!(msg.contains("assume_single_writer"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_point_read_is_one_get_of_its_bytes_then_cached() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    write(
        &memory_vfs(store.clone(), None),
        Path::new("db/1.sst"),
        &pattern(100_000),
    );
    let cache = tempfile::tempdir().unwrap();
    let vfs = memory_vfs(store, Some(cache.path()));
    let reader = vfs.open_read(Path::new("db/1.sst"), false).unwrap();
    let mut buf = vec![0u8; 4096];
    reader.read_exact_at(&mut buf, 50_000).unwrap();
    assert_eq!(buf, &pattern(100_000)[50_000..54_096]);
    assert_eq!(counter(&vfs, "object_get_requests_sst"), 1);
    assert_eq!(counter(&vfs, "object_get_bytes_sst"), 4096);
    assert_eq!(counter(&vfs, "object_cache_misses"), 1);
    reader.read_exact_at(&mut buf, 50_000).unwrap();
    reader.read_exact_at(&mut buf[..100], 51_000).unwrap();
    assert_eq!(
        counter(&vfs, "object_get_requests_sst"),
        1,
        "served from the disk cache"
    );
    assert_eq!(counter(&vfs, "object_cache_hits"), 2);
    assert_eq!(counter(&vfs, "object_cache_bytes"), 4096);
}

#[test]
fn a_scan_read_fetches_a_window() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let data = pattern(10 << 20);
    write(
        &memory_vfs(store.clone(), None),
        Path::new("db/2.sst"),
        &data,
    );
    for cache in [Some(tempfile::tempdir().unwrap()), None] {
        let vfs = memory_vfs(store.clone(), cache.as_ref().map(|d| d.path()));
        let reader = vfs.open_read(Path::new("db/2.sst"), false).unwrap();
        let mut buf = vec![0u8; 4096];
        for offset in (5 << 20..6 << 20).step_by(4096) {
            reader.read_exact_at_scan(&mut buf, offset).unwrap();
            assert_eq!(buf, &data[offset as usize..offset as usize + 4096]);
        }
        assert_eq!(counter(&vfs, "object_get_requests_sst"), 1);
        assert_eq!(counter(&vfs, "object_get_bytes_sst"), 4 << 20);
        // The last window is clipped to the object.
        reader
            .read_exact_at_scan(&mut buf, (10 << 20) - 4096)
            .unwrap();
        assert_eq!(counter(&vfs, "object_get_bytes_sst"), (4 << 20) + (2 << 20));
    }
}

#[test]
fn a_restarted_vfs_serves_cached_ranges_without_gets() {
    let server = seaweed();
    let prefix = PathBuf::from(server.fresh_prefix("restart"));
    let sst = prefix.join("3.sst");
    let data = pattern(200_000);
    write(&seaweed_vfs(server, None), &sst, &data);
    let cache = tempfile::tempdir().unwrap();
    let mut buf = vec![0u8; 5000];
    {
        let vfs = seaweed_vfs(server, Some(cache.path()));
        vfs.open_read(&sst, false)
            .unwrap()
            .read_exact_at(&mut buf, 70_000)
            .unwrap();
        assert_eq!(counter(&vfs, "object_get_requests_sst"), 1);
    }
    let vfs = seaweed_vfs(server, Some(cache.path()));
    let reader = vfs.open_read(&sst, false).unwrap();
    buf.fill(0);
    reader.read_exact_at(&mut buf, 70_000).unwrap();
    assert_eq!(buf, &data[70_000..75_000]);
    assert_eq!(counter(&vfs, "object_get_requests_sst"), 0);
    assert_eq!(counter(&vfs, "object_cache_hits"), 1);
    // A recreated object of the same name is not served from the old one's chunks.
    vfs.remove(&sst).unwrap();
    write(
        &seaweed_vfs(server, None),
        &sst,
        &pattern(300_000)[100_000..],
    );
    let reader = vfs.open_read(&sst, false).unwrap();
    reader.read_exact_at(&mut buf, 70_000).unwrap();
    assert_eq!(buf, &pattern(300_000)[170_000..175_000]);
    assert_eq!(counter(&vfs, "object_get_requests_sst"), 1);
}

#[test]
fn a_new_object_is_read_from_the_cache_and_large_ones_upload_in_parts() {
    let server = seaweed();
    let prefix = PathBuf::from(server.fresh_prefix("large"));
    let cache = tempfile::tempdir().unwrap();
    let vfs = seaweed_vfs(server, Some(cache.path()));
    let data = pattern(20 << 20);
    write(&vfs, &prefix.join("4.sst"), &data);
    assert_eq!(counter(&vfs, "object_put_bytes_sst"), 20 << 20);
    let reader = vfs.open_read(&prefix.join("4.sst"), false).unwrap();
    let mut buf = vec![0u8; 8192];
    reader.read_exact_at(&mut buf, 17 << 20).unwrap();
    assert_eq!(buf, &data[17 << 20..(17 << 20) + 8192]);
    assert_eq!(
        counter(&vfs, "object_get_requests_sst"),
        0,
        "written through the cache"
    );
    assert_eq!(
        counter(&vfs, "object_head_requests"),
        0,
        "this process wrote it"
    );
    assert_eq!(
        seaweed_vfs(server, None)
            .read_all(&prefix.join("4.sst"))
            .unwrap(),
        data
    );
    // The upload's ETag is the one a HEAD reports: a restart finds the chunk sync cached.
    write(&vfs, &prefix.join("5.sst"), &data[..1 << 20]);
    drop((reader, vfs));
    let vfs = seaweed_vfs(server, Some(cache.path()));
    for (name, at) in [("4.sst", 17 << 20), ("5.sst", 1000)] {
        let reader = vfs.open_read(&prefix.join(name), false).unwrap();
        reader.read_exact_at(&mut buf, at).unwrap();
        assert_eq!(buf, &data[at as usize..at as usize + 8192]);
    }
    assert_eq!(
        counter(&vfs, "object_get_requests_sst"),
        0,
        "served from the cache"
    );
}

#[test]
fn a_short_get_is_an_error_naming_the_object() {
    let store = Arc::new(FaultObjectStore::new(Arc::new(InMemory::new())));
    let vfs = memory_vfs(store.clone(), None);
    write(&vfs, Path::new("db/5.sst"), &pattern(10_000));
    let reader = vfs.open_read(Path::new("db/5.sst"), false).unwrap();
    store.short_nth_get(1);
    let mut buf = vec![0u8; 1000];
    let err = reader.read_exact_at(&mut buf, 100).unwrap_err();
    assert!(err.to_string().contains("db/5.sst"), "{err}");
    reader.read_exact_at(&mut buf, 100).unwrap();
}

#[test]
fn failed_ambiguous_and_throttled_requests_are_errors() {
    let store = Arc::new(FaultObjectStore::new(Arc::new(InMemory::new())));
    let vfs = memory_vfs(store.clone(), None);
    let path = Path::new("db/manifest/1");
    store.ambiguous_nth_put(1);
    assert!(vfs.create_if_absent(path, b"x").is_err(), "outcome unknown");
    assert_eq!(vfs.read_all(path).unwrap(), b"x", "yet it was created");
    let (puts, _) = store.requests();
    assert_eq!(puts, 1, "a conditional create is never retried");
    store.fail_nth_put(1);
    assert!(vfs
        .create_if_absent(Path::new("db/manifest/2"), b"y")
        .is_err());
    assert!(!vfs.exists(Path::new("db/manifest/2")));
    store.throttle_nth_put(1);
    let err = vfs
        .create(Path::new("db/6.sst"))
        .unwrap()
        .sync()
        .unwrap_err();
    assert!(err.to_string().contains("SlowDown"), "{err}");
    store.fail_nth_get(1);
    assert!(vfs.read_all(path).is_err());
    store.throttle_nth_get(1);
    let err = vfs.read_all(path).unwrap_err();
    assert!(err.to_string().contains("SlowDown"), "{err}");
    store.set_delay(std::time::Duration::from_millis(20));
    assert_eq!(vfs.read_all(path).unwrap(), b"x");
}

#[test]
fn works_from_inside_a_tokio_runtime() {
    let server = seaweed();
    let prefix = PathBuf::from(server.fresh_prefix("tokio"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let vfs = Arc::new(seaweed_vfs(server, None));
    let in_task = vfs.clone();
    let read = runtime.block_on(async move {
        tokio::spawn(async move {
            let path = prefix.join("m");
            assert_eq!(
                in_task.create_if_absent(&path, b"hi").unwrap(),
                CreateOutcome::Created
            );
            let data = in_task.read_all(&path).unwrap();
            drop(in_task);
            data
        })
        .await
        .unwrap()
    });
    assert_eq!(read, b"hi");
    // Dropping the last handle inside a runtime thread must not panic either.
    runtime.block_on(async move { tokio::spawn(async move { drop(vfs) }).await.unwrap() });
}

#[test]
fn large_objects_upload_in_parts_small_ones_in_one_put() {
    let store = Arc::new(FaultObjectStore::new(Arc::new(InMemory::new())));
    let cache = tempfile::tempdir().unwrap();
    let vfs = memory_vfs(store.clone(), Some(cache.path()));
    let large = pattern(20 << 20);
    write(&vfs, Path::new("db/7.sst"), &large);
    assert_eq!(store.requests().0, 0, "no single PUT: a multipart upload");
    write(&vfs, Path::new("db/8.sst"), &large[..1 << 20]);
    assert_eq!(store.requests().0, 1);
    let fresh = memory_vfs(store.clone(), None);
    assert_eq!(fresh.read_all(Path::new("db/7.sst")).unwrap(), large);
    assert_eq!(
        fresh.read_all(Path::new("db/8.sst")).unwrap(),
        &large[..1 << 20]
    );
}
