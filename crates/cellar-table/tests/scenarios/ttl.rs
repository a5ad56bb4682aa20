//! TTL: cells older than `now - ttl` are invisible. Timestamps in the past stand in for
//! waiting.

use std::time::Duration;

use cellar_engine::vfs::MemVfs;
use cellar_engine::Durability;
use cellar_table::timestamp::now_nanos;
use cellar_table::{FamilyOptions, ScanSpec, TableSchema, TimeRange};

use crate::common::{collect, open_store};

const HOUR_NS: u64 = 3600 * 1_000_000_000;
const MINUTE_NS: u64 = 60 * 1_000_000_000;

#[test]
fn ttl_hides_cells_older_than_now_minus_ttl() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    let ttl = Some(Duration::from_secs(3600));
    store
        .create_table(
            TableSchema::new("events")
                .family(
                    "recent",
                    FamilyOptions {
                        max_versions: 0,
                        ttl,
                        ..Default::default()
                    },
                )
                .family(
                    "forever",
                    FamilyOptions {
                        max_versions: 0,
                        ..Default::default()
                    },
                ),
        )
        .expect("create");
    let t = store.table("events").expect("table");
    let now = now_nanos();
    let d = Durability::Flush;
    for family in ["recent", "forever"] {
        t.put(b"r", family, b"old", Some(now - 2 * HOUR_NS), b"2h", d)
            .expect("put");
        t.put(b"r", family, b"new", Some(now - 30 * MINUTE_NS), b"30m", d)
            .expect("put");
        t.put(b"r", family, b"new", None, b"auto", d).expect("put");
        t.put(b"r", family, b"mixed", Some(now - 3 * HOUR_NS), b"3h", d)
            .expect("put");
        t.put(
            b"r",
            family,
            b"mixed",
            Some(now - 10 * MINUTE_NS),
            b"10m",
            d,
        )
        .expect("put");
    }
    let cells = t.get_row(b"r").expect("get row");
    let values: Vec<(&str, &[u8], &[u8])> = cells
        .iter()
        .map(|c| (&*c.family, c.qualifier.as_slice(), c.value.as_slice()))
        .collect();
    assert_eq!(
        values,
        vec![
            ("recent", &b"mixed"[..], &b"10m"[..]),
            ("recent", b"new", b"auto"),
            ("recent", b"new", b"30m"),
            ("forever", b"mixed", b"10m"),
            ("forever", b"mixed", b"3h"),
            ("forever", b"new", b"auto"),
            ("forever", b"new", b"30m"),
            ("forever", b"old", b"2h"),
        ]
    );
    // A time range reaching further back does not bring expired cells back.
    let spec = ScanSpec {
        time_range: TimeRange { min: 0, max: now },
        ..ScanSpec::row(b"r")
    };
    let recent: Vec<_> = collect(t.scan(spec).expect("scan"))
        .into_iter()
        .filter(|c| c.1 == "recent")
        .map(|c| c.4)
        .collect();
    assert_eq!(recent, vec![b"10m".to_vec(), b"30m".to_vec()]);
}

#[test]
fn ttl_and_max_versions_count_only_live_versions() {
    let vfs = MemVfs::new();
    let store = open_store(&vfs);
    let options = FamilyOptions {
        max_versions: 2,
        ttl: Some(Duration::from_secs(3600)),
        ..Default::default()
    };
    store
        .create_table(TableSchema::new("t").family("f", options))
        .expect("create");
    let t = store.table("t").expect("table");
    let now = now_nanos();
    for (age, v) in [
        (5 * HOUR_NS, "5h"),
        (2 * HOUR_NS, "2h"),
        (20 * MINUTE_NS, "20m"),
    ] {
        t.put(
            b"r",
            "f",
            b"q",
            Some(now - age),
            v.as_bytes(),
            Durability::Flush,
        )
        .expect("put");
    }
    store.db().flush().expect("flush");
    let values: Vec<Vec<u8>> = t
        .get_row(b"r")
        .expect("get row")
        .into_iter()
        .map(|c| c.value)
        .collect();
    assert_eq!(values, vec![b"20m".to_vec()]);
}
