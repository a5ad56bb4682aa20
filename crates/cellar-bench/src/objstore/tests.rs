use clap::Parser;

use super::*;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ObjstoreArgs,
}

fn args(flags: &[&str]) -> ObjstoreArgs {
    let argv = std::iter::once("objstore").chain(flags.iter().copied());
    Cli::try_parse_from(argv).unwrap().args
}

#[test]
fn variants_are_named_alone_by_group_or_all_and_unbuilt_ones_are_skipped() {
    let (run, skipped) = select_variants("all").unwrap();
    assert_eq!(run.len() + skipped.len(), 4);
    assert_eq!(run[..3], Variant::ALL[..3]);
    assert_eq!(run.contains(&Variant::SlateDb), cfg!(feature = "slatedb"));
    if !cfg!(feature = "slatedb") {
        assert!(skipped[0].contains("--features slatedb"), "{skipped:?}");
    }
    let (run, _) = select_variants("slatedb,cellar-local,cellar").unwrap();
    assert_eq!(
        run[0],
        Variant::CellarLocal,
        "run order is fixed, not the list's"
    );
    assert_eq!(run.len(), if cfg!(feature = "slatedb") { 4 } else { 3 });
    assert!(select_variants("rocksdb").is_err());
    assert!(select_variants("").is_err());
    let labels: Vec<_> = Variant::ALL
        .iter()
        .map(|v| (v.engine(), v.label()))
        .collect();
    assert_eq!(
        labels,
        [
            ("cellar", "local"),
            ("cellar", "wal-local"),
            ("cellar", "wal-object"),
            ("slatedb", "bucket")
        ]
    );
    assert!(!Variant::CellarLocal.in_bucket() && Variant::CellarWalObject.in_bucket());
}

#[test]
fn quick_defaults_and_explicit_flags_resolve() {
    let (cfg, _) =
        ObjstoreConfig::resolve(&args(&["--quick", "--engines", "cellar-local"])).unwrap();
    assert_eq!(cfg.variants, [Variant::CellarLocal]);
    assert_eq!(
        (cfg.records, cfg.reads, cfg.ycsb_records),
        (20_000, 2_000, 2_000)
    );
    assert_eq!(cfg.durable_seconds, 2.0);
    assert_eq!(cfg.memtable_bytes, 4 << 20);
    assert!(
        cfg.bucket_url.starts_with("s3://cellar-bench/objstore-"),
        "{}",
        cfg.bucket_url
    );
    assert_eq!(cfg.endpoint, "");

    let a = args(&[
        "--engines",
        "cellar",
        "--records",
        "500",
        "--value-size",
        "100",
        "--reads",
        "50",
        "--durable-seconds",
        "0.5",
        "--s3-endpoint",
        "http://127.0.0.1:9000",
        "--bucket",
        "b",
        "--json",
        "out.jsonl",
    ]);
    let (cfg, _) = ObjstoreConfig::resolve(&a).unwrap();
    assert_eq!(cfg.variants.len(), 3);
    assert_eq!((cfg.records, cfg.value_size, cfg.reads), (500, 100, 50));
    assert_eq!(cfg.records, 500);
    assert_eq!(cfg.ycsb_records, 100_000);
    assert_eq!(cfg.endpoint, "http://127.0.0.1:9000");
    assert!(cfg.bucket_url.starts_with("s3://b/objstore-"));
    assert_eq!(a.json.as_deref(), Some(std::path::Path::new("out.jsonl")));

    assert!(ObjstoreConfig::resolve(&args(&["--records", "1"])).is_err());
    assert!(ObjstoreConfig::resolve(&args(&["--value-size", "0"])).is_err());
}

#[test]
fn a_child_config_round_trips_through_json() {
    let (cfg, _) = ObjstoreConfig::resolve(&args(&["--quick"])).unwrap();
    let one = ObjstoreConfig {
        variants: vec![Variant::CellarWalObject],
        phase: Phase::Cold,
        ..cfg
    };
    let json = serde_json::to_string(&one).unwrap();
    assert_eq!(serde_json::from_str::<ObjstoreConfig>(&json).unwrap(), one);
}
