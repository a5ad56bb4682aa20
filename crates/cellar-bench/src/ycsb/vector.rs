//! The shared vector of the YCSB generators: bench/java/ycsb_vector.txt holds the first
//! draws of each generator and the first requests of each core workload for fixed seeds.
//! [`vector_lines`] computes them here; YcsbVector.java computes them in the Java peer
//! (checked by YcsbVectorTest, `mvn test`). Both must equal the file, so the HBase peer
//! asks for the same records as the Rust engines do.
//!
//! pow is the one operation whose last bit may differ between the two sides (glibc's `pow`
//! and Java's `StrictMath.pow`); the ζ lines pin it for the sizes below.

use super::gen::{
    fnv_hash64, zeta, InsertCounter, ScrambledZipfian, SkewedLatest, Uniform, YcsbRng, Zipfian,
    ZIPFIAN_CONSTANT,
};
use super::workload::{
    client_seed, core, expected_inserts, next_request, Distribution, KeyChooser, RecordShape,
};

pub const VECTOR_FILE: &str = include_str!("../../../../bench/java/ycsb_vector.txt");

const DRAWS: usize = 20;
const REQUESTS: usize = 30;

fn join(v: impl IntoIterator<Item = u64>) -> String {
    v.into_iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The lines as this side computes them.
pub fn vector_lines() -> Vec<String> {
    let mut out = Vec::new();
    let mut r = YcsbRng::new(1);
    let words: Vec<String> = (0..4).map(|_| format!("{:016x}", r.next_u64())).collect();
    out.push(format!("rng seed=1: {}", words.join(" ")));
    let mut r = YcsbRng::new(u64::MAX);
    out.push(format!(
        "rng below=100 seed=18446744073709551615: {}",
        join((0..DRAWS).map(|_| r.below(100)))
    ));
    let mut r = YcsbRng::new(5);
    let bits: Vec<String> = (0..4)
        .map(|_| format!("{:016x}", r.next_f64().to_bits()))
        .collect();
    out.push(format!("rng f64 bits seed=5: {}", bits.join(" ")));
    out.push(format!(
        "fnv64 0 1 2 999999 18446744073709551615: {}",
        join([0, 1, 2, 999_999, u64::MAX].map(fnv_hash64))
    ));
    let mut key = Vec::new();
    for n in [0u64, 1, 4999] {
        RecordShape::key(n, &mut key);
        out.push(format!("key n={n}: {}", String::from_utf8_lossy(&key)));
    }
    for n in [2u64, 1000, 100_000] {
        out.push(format!(
            "zeta n={n} bits: {:016x}",
            zeta(n, ZIPFIAN_CONSTANT).to_bits()
        ));
    }
    let z = Zipfian::new(1000);
    let mut r = YcsbRng::new(7);
    out.push(format!(
        "zipfian items=1000 seed=7: {}",
        join((0..DRAWS).map(|_| z.next(&mut r)))
    ));
    let mut z = Zipfian::new(1000);
    let mut r = YcsbRng::new(7);
    out.push(format!(
        "zipfian items=1000 grown=5000 seed=7: {}",
        join((0..DRAWS).map(|_| z.next_below(5000, &mut r)))
    ));
    let s = ScrambledZipfian::new(0, 99_999);
    let mut r = YcsbRng::new(7);
    out.push(format!(
        "scrambled_zipfian min=0 max=99999 seed=7: {}",
        join((0..DRAWS).map(|_| s.next(&mut r)))
    ));
    let mut l = SkewedLatest::new(9999);
    let mut r = YcsbRng::new(7);
    out.push(format!(
        "latest newest=9999 seed=7: {}",
        join((0..DRAWS).map(|_| l.next(9999, &mut r)))
    ));
    out.push(format!(
        "latest newest=9999 then=10100 seed=7: {}",
        join((0..DRAWS).map(|_| l.next(10_100, &mut r)))
    ));
    let u = Uniform { min: 1, max: 100 };
    let mut r = YcsbRng::new(7);
    out.push(format!(
        "uniform min=1 max=100 seed=7: {}",
        join((0..DRAWS).map(|_| u.next(&mut r)))
    ));
    let (records, operations, fields) = (1000u64, 1000u64, 10usize);
    let runs = [
        ('a', None),
        ('b', None),
        ('c', None),
        ('d', None),
        ('e', None),
        ('f', None),
        ('a', Some(Distribution::Uniform)),
        ('e', Some(Distribution::Latest)),
    ];
    for (ordinal, (name, dist)) in runs.into_iter().enumerate() {
        let Some(mut mix) = core(name) else {
            continue;
        };
        if let Some(d) = dist {
            mix.distribution = d;
        }
        let seed = client_seed(1, ordinal as u64, 0);
        let mut chooser = KeyChooser::new(
            mix.distribution,
            records,
            expected_inserts(&mix, operations),
        );
        let inserts = InsertCounter::new(records);
        let mut r = YcsbRng::new(seed);
        let reqs: Vec<String> = (0..REQUESTS)
            .map(|_| {
                let q = next_request(&mix, &mut chooser, &inserts, fields, &mut r);
                if q.op == super::workload::Op::Insert {
                    inserts.acknowledge(q.record);
                }
                q.vector_form()
            })
            .collect();
        out.push(format!(
            "workload {name} distribution={} records={records} operations={operations} \
             fields={fields} seed={seed}: {}",
            dist_name(mix.distribution),
            reqs.join(" ")
        ));
    }
    out
}

fn dist_name(d: Distribution) -> &'static str {
    match d {
        Distribution::Zipfian => "zipfian",
        Distribution::Latest => "latest",
        Distribution::Uniform => "uniform",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `CELLAR_BLESS_VECTOR=1` rewrites the file's data lines (after a deliberate change to
    /// a generator; the Java side must then be changed to match).
    #[test]
    fn ycsb_generators_match_the_shared_vector() {
        if std::env::var_os("CELLAR_BLESS_VECTOR").is_some() {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../bench/java/ycsb_vector.txt"
            );
            let mut text: String = VECTOR_FILE
                .lines()
                .filter(|l| l.starts_with('#'))
                .map(|l| format!("{l}\n"))
                .collect();
            for l in vector_lines() {
                text.push_str(&l);
                text.push('\n');
            }
            std::fs::write(path, text).unwrap();
            return;
        }
        let want: Vec<&str> = VECTOR_FILE
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .collect();
        let got = vector_lines();
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(w, g, "line {i} of ycsb_vector.txt");
        }
        assert_eq!(want.len(), got.len(), "line count of ycsb_vector.txt");
    }
}
