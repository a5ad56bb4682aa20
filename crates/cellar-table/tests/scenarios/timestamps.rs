//! The timestamp oracle hands out strictly increasing timestamps near the wall clock, from
//! any thread.

use cellar_table::next_timestamp;
use cellar_table::timestamp::now_nanos;

#[test]
fn timestamps_strictly_increase_across_threads() {
    let before = now_nanos();
    let threads: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(|| (0..20_000).map(|_| next_timestamp()).collect::<Vec<u64>>()))
        .collect();
    let mut all = Vec::new();
    for t in threads {
        let stamps = t.join().expect("thread");
        assert!(
            stamps.windows(2).all(|w| w[0] < w[1]),
            "increasing within a thread"
        );
        all.extend(stamps);
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "no timestamp handed out twice");
    assert!(all[0] >= before);
    // The oracle runs ahead of the clock only by one nanosecond per stamp handed out
    // faster than the clock ticks (other tests of this process take stamps too).
    assert!(all[n - 1] <= now_nanos() + 1_000_000_000);
}
