//! YCSB's core workloads A–F, its records (keys and values) and the client loop of one
//! thread: pick an operation by the workload's proportions, pick a record by its request
//! distribution, run the operation against the [`Engine`], time it by type.
//!
//! Records as YCSB's core workload builds them:
//! * key: `"user"` followed by the FNV-hashed record number in decimal, zero-padded to 19
//!   digits (YCSB's `insertorder=hashed` with `zeropadding=19`): 23 bytes, and the load
//!   order is scattered over the key space.
//! * value: `fieldcount` fields (`field0`, `field1`, ...) of `fieldlength` random printable
//!   bytes, serialized as YCSB's RocksDB binding stores a record: for each field, a 4-byte
//!   big-endian name length, the name, a 4-byte big-endian value length, the value.
//!   10 × 100 bytes gives 1140 bytes.
//! * updates write the whole record (YCSB's `writeallfields=true`: a key-value store has no
//!   field to update in place); reads read the whole record (`readallfields=true`). The
//!   field YCSB would update is drawn all the same ([`Request::field`]): HBase, which has
//!   columns, writes just that one, and both sides then draw the same sequence.
//!
//! The draws of one client, in order, per operation ([`next_request`]): the operation
//! (`next_f64` against the cumulative proportions); unless it is an insert, the record
//! (the request distribution); then for an update or read-modify-write the field
//! (`below(field_count)`), for a scan its length (uniform 1..=100). An insert takes the next
//! number from the shared [`InsertCounter`] and draws nothing. Client `t` of the workload
//! at position `ordinal` seeds its [`YcsbRng`] with [`client_seed`].

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::gen::{fnv_hash64, InsertCounter, ScrambledZipfian, SkewedLatest, Uniform, YcsbRng};
use crate::engine::{Direction, Engine, Seek};
use crate::error::{BenchError, Result};
use crate::keygen::ValueGen;
use crate::suite::OpLatencies;

/// Digits of the hashed record number in a key.
const KEY_DIGITS: usize = 19;
/// Scan lengths: uniform in 1..=100 (YCSB's `maxscanlength` and
/// `scanlengthdistribution=uniform`).
const SCAN_LENGTH: Uniform = Uniform { min: 1, max: 100 };

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// Scrambled zipfian (θ = 0.99) over the records.
    Zipfian,
    /// The most recently inserted records are the most popular (zipfian by age).
    Latest,
    Uniform,
}

/// One of YCSB's core workloads: operation proportions and the request distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mix {
    pub name: char,
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
    pub distribution: Distribution,
}

const fn mix(name: char, p: [f64; 5], distribution: Distribution) -> Mix {
    Mix {
        name,
        read: p[0],
        update: p[1],
        insert: p[2],
        scan: p[3],
        read_modify_write: p[4],
        distribution,
    }
}

/// The core workloads (workloads/workload[a-f] in YCSB): read, update, insert, scan, rmw.
pub const CORE: [Mix; 6] = [
    mix('a', [0.5, 0.5, 0.0, 0.0, 0.0], Distribution::Zipfian),
    mix('b', [0.95, 0.05, 0.0, 0.0, 0.0], Distribution::Zipfian),
    mix('c', [1.0, 0.0, 0.0, 0.0, 0.0], Distribution::Zipfian),
    mix('d', [0.95, 0.0, 0.05, 0.0, 0.0], Distribution::Latest),
    mix('e', [0.0, 0.0, 0.05, 0.95, 0.0], Distribution::Zipfian),
    mix('f', [0.5, 0.0, 0.0, 0.0, 0.5], Distribution::Zipfian),
];

pub fn core(name: char) -> Option<Mix> {
    CORE.iter().copied().find(|m| m.name == name)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Update => "update",
            Op::Insert => "insert",
            Op::Scan => "scan",
            Op::ReadModifyWrite => "read_modify_write",
        }
    }
}

impl Mix {
    /// The operation for a uniform draw `u` in [0, 1).
    pub fn choose(&self, u: f64) -> Op {
        let steps = [
            (self.read, Op::Read),
            (self.update, Op::Update),
            (self.insert, Op::Insert),
            (self.scan, Op::Scan),
            (self.read_modify_write, Op::ReadModifyWrite),
        ];
        let mut acc = 0.0;
        let mut last = Op::Read;
        for (p, op) in steps {
            if p <= 0.0 {
                continue;
            }
            acc += p;
            last = op;
            if u < acc {
                return op;
            }
        }
        last
    }
}

/// Keys and values of YCSB records.
pub struct RecordShape {
    /// `[len(name) BE][name][len(value) BE]` of each field, the value to follow.
    field_headers: Vec<Vec<u8>>,
    pub field_length: usize,
    values: ValueGen,
}

impl RecordShape {
    pub fn new(field_count: usize, field_length: usize) -> Self {
        let field_headers = (0..field_count)
            .map(|i| {
                let name = format!("field{i}");
                let mut h = Vec::with_capacity(8 + name.len());
                h.extend_from_slice(&(name.len() as u32).to_be_bytes());
                h.extend_from_slice(name.as_bytes());
                h.extend_from_slice(&(field_length as u32).to_be_bytes());
                h
            })
            .collect();
        RecordShape {
            field_headers,
            field_length,
            // Random printable bytes, as YCSB's RandomByteIterator (ratio 1: no repeats).
            values: ValueGen::new(field_length, 1.0),
        }
    }

    /// The same shape drawing values from elsewhere in the buffer (one per thread).
    pub fn fork(&self, t: usize) -> Self {
        RecordShape {
            field_headers: self.field_headers.clone(),
            field_length: self.field_length,
            values: self.values.fork(t),
        }
    }

    pub fn field_count(&self) -> usize {
        self.field_headers.len()
    }

    pub fn key_bytes() -> usize {
        4 + KEY_DIGITS
    }

    pub fn value_bytes(&self) -> usize {
        self.field_headers
            .iter()
            .map(|h| h.len() + self.field_length)
            .sum()
    }

    /// The key of record number `n`.
    pub fn key(n: u64, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(b"user");
        let digits = format!("{:0width$}", fnv_hash64(n), width = KEY_DIGITS);
        out.extend_from_slice(digits.as_bytes());
    }

    /// A record with fresh field values.
    pub fn value(&mut self, out: &mut Vec<u8>) {
        out.clear();
        for h in &self.field_headers {
            out.extend_from_slice(h);
            out.extend_from_slice(self.values.next_value());
        }
    }

    /// Replaces the value of field `i` in `record` (built by [`Self::value`]).
    pub fn set_field(&mut self, record: &mut [u8], i: usize) {
        let start: usize = self.field_headers[..i]
            .iter()
            .map(|h| h.len() + self.field_length)
            .sum::<usize>()
            + self.field_headers[i].len();
        record[start..start + self.field_length].copy_from_slice(self.values.next_value());
    }
}

/// Inserts YCSB sizes a run's zipfian key space for: twice the mean a run of `operations`
/// expects.
pub fn expected_inserts(mix: &Mix, operations: u64) -> u64 {
    (operations as f64 * mix.insert * 2.0) as u64
}

/// Picks record numbers by a workload's request distribution.
#[derive(Clone)]
pub enum KeyChooser {
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
    Uniform,
}

impl KeyChooser {
    /// For a run that starts with `records` records and expects `new_records` inserts.
    pub fn new(d: Distribution, records: u64, new_records: u64) -> Self {
        match d {
            Distribution::Zipfian => {
                KeyChooser::Zipfian(ScrambledZipfian::new(0, records + new_records - 1))
            }
            Distribution::Latest => KeyChooser::Latest(SkewedLatest::new(records - 1)),
            Distribution::Uniform => KeyChooser::Uniform,
        }
    }

    /// A record number below `complete` (all of which exist). As YCSB, a zipfian draw
    /// beyond the inserted records is drawn again.
    pub fn next(&mut self, complete: u64, rng: &mut YcsbRng) -> u64 {
        match self {
            KeyChooser::Zipfian(z) => loop {
                let n = z.next(rng);
                if n < complete {
                    return n;
                }
            },
            KeyChooser::Latest(l) => l.next(complete - 1, rng),
            KeyChooser::Uniform => Uniform {
                min: 0,
                max: complete - 1,
            }
            .next(rng),
        }
    }
}

/// What one client thread did.
#[derive(Default)]
pub struct ClientOut {
    pub latency: OpLatencies,
    pub ops: u64,
    pub reads: u64,
    pub found: u64,
}

/// Everything a client thread of one run shares with the others.
pub struct RunShared<'a> {
    pub engine: &'a dyn Engine,
    pub mix: Mix,
    pub inserts: &'a InsertCounter,
    pub value_bytes: usize,
}

/// The seed of client thread `thread` in the workload at position `ordinal` of the run.
pub fn client_seed(seed: u64, ordinal: u64, thread: u64) -> u64 {
    seed.wrapping_mul(1_000_003)
        .wrapping_add(ordinal * 1000 + thread)
}

/// One operation as drawn, before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    /// The record read, updated, scanned from or (for an insert) claimed.
    pub record: u64,
    /// Update and read-modify-write: the field YCSB changes; otherwise 0.
    pub field: usize,
    /// Scan: records to visit; otherwise 0.
    pub scan_len: usize,
}

impl Request {
    /// Short form of the shared vector: `r12`, `u12.f3`, `i500`, `s12.n40`, `m12.f3`.
    #[cfg(test)]
    pub fn vector_form(&self) -> String {
        match self.op {
            Op::Read => format!("r{}", self.record),
            Op::Update => format!("u{}.f{}", self.record, self.field),
            Op::Insert => format!("i{}", self.record),
            Op::Scan => format!("s{}.n{}", self.record, self.scan_len),
            Op::ReadModifyWrite => format!("m{}.f{}", self.record, self.field),
        }
    }
}

/// The next operation of a client (the draws in the module comment). An insert's record
/// is claimed here; the caller acknowledges it once written.
pub fn next_request(
    mix: &Mix,
    chooser: &mut KeyChooser,
    inserts: &InsertCounter,
    field_count: usize,
    rng: &mut YcsbRng,
) -> Request {
    let op = mix.choose(rng.next_f64());
    let record = match op {
        Op::Insert => inserts.claim(),
        _ => chooser.next(inserts.complete(), rng),
    };
    let (mut field, mut scan_len) = (0, 0);
    match op {
        Op::Update | Op::ReadModifyWrite => field = rng.below(field_count as u64) as usize,
        Op::Scan => scan_len = SCAN_LENGTH.next(rng) as usize,
        Op::Read | Op::Insert => {}
    }
    Request {
        op,
        record,
        field,
        scan_len,
    }
}

/// Client thread `t`: `ops` operations of the run's mix.
pub fn client(
    s: &RunShared,
    mut chooser: KeyChooser,
    mut shape: RecordShape,
    seed: u64,
    ops: u64,
) -> Result<ClientOut> {
    let mut rng = YcsbRng::new(seed);
    let mut out = ClientOut::default();
    let mut key = Vec::with_capacity(RecordShape::key_bytes());
    let mut value = Vec::with_capacity(s.value_bytes);
    // What reads and scans hand back: YCSB's bindings copy every field of a record they read
    // into the caller's result, so each engine's value bytes are read here too.
    let mut read = Vec::with_capacity(s.value_bytes);
    let field_count = shape.field_count();
    for _ in 0..ops {
        let req = next_request(&s.mix, &mut chooser, s.inserts, field_count, &mut rng);
        RecordShape::key(req.record, &mut key);
        let op = req.op;
        match op {
            Op::Read => {
                let t0 = Instant::now();
                let got = s.engine.read_into(&key, &mut read)?;
                out.latency.record(op.name(), t0.elapsed());
                out.count_read(s, &key, got.then_some(read.len()))?;
            }
            Op::Update | Op::Insert => {
                shape.value(&mut value);
                let t0 = Instant::now();
                s.engine.put(&key, &value, false)?;
                out.latency.record(op.name(), t0.elapsed());
                if op == Op::Insert {
                    s.inserts.acknowledge(req.record);
                }
            }
            Op::Scan => {
                let t0 = Instant::now();
                let mut seek = Some(Seek::Key);
                let mut visited = 0usize;
                s.engine.scan(
                    Direction::Forward,
                    req.scan_len,
                    &mut |buf| {
                        let target = seek.take()?;
                        buf.clone_from(&key);
                        Some(target)
                    },
                    &mut |_, v| {
                        read.clear();
                        read.extend_from_slice(v);
                        visited += 1;
                    },
                )?;
                out.latency.record(op.name(), t0.elapsed());
                if visited == 0 {
                    return Err(verify(s, "a scan from an existing key found nothing"));
                }
            }
            Op::ReadModifyWrite => {
                // The record is read whole, then rebuilt as it would be decoded (the value
                // stream stays the one the Java peer draws), and one field changes.
                let t0 = Instant::now();
                let got = s.engine.read_into(&key, &mut read)?;
                shape.value(&mut value);
                shape.set_field(&mut value, req.field);
                s.engine.put(&key, &value, false)?;
                out.latency.record(op.name(), t0.elapsed());
                out.count_read(s, &key, got.then_some(read.len()))?;
            }
        }
        out.ops += 1;
    }
    Ok(out)
}

fn verify(s: &RunShared, what: impl Into<String>) -> BenchError {
    BenchError::Verify {
        engine: s.engine.name(),
        workload: "ycsb",
        what: what.into(),
    }
}

impl ClientOut {
    fn count_read(&mut self, s: &RunShared, key: &[u8], got: Option<usize>) -> Result<()> {
        self.reads += 1;
        match got {
            Some(len) if len == s.value_bytes => {
                self.found += 1;
                Ok(())
            }
            Some(len) => Err(verify(
                s,
                format!(
                    "record {} has {len} bytes, expected {}",
                    String::from_utf8_lossy(key),
                    s.value_bytes
                ),
            )),
            // Counted, not fatal: `found` < `reads` in the record says so.
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_mixes_sum_to_one() {
        for m in CORE {
            let sum = m.read + m.update + m.insert + m.scan + m.read_modify_write;
            assert!((sum - 1.0).abs() < 1e-12, "{}: {sum}", m.name);
        }
        assert_eq!(
            core('d').map(|m| m.distribution),
            Some(Distribution::Latest)
        );
        assert!(core('g').is_none());
    }

    #[test]
    fn choose_follows_the_proportions() {
        let a = core('a').unwrap();
        assert_eq!(a.choose(0.0), Op::Read);
        assert_eq!(a.choose(0.4999), Op::Read);
        assert_eq!(a.choose(0.5), Op::Update);
        assert_eq!(a.choose(0.999_999), Op::Update);
        let e = core('e').unwrap();
        assert_eq!(e.choose(0.01), Op::Insert);
        assert_eq!(e.choose(0.5), Op::Scan);
        let mut rng = YcsbRng::new(1);
        let b = core('b').unwrap();
        let updates = (0..100_000)
            .filter(|_| b.choose(rng.next_f64()) == Op::Update)
            .count();
        assert!((4_500..5_500).contains(&updates), "{updates}");
    }

    #[test]
    fn records_have_ycsb_keys_and_1140_byte_values() {
        let mut k = Vec::new();
        RecordShape::key(0, &mut k);
        assert_eq!(k.len(), RecordShape::key_bytes());
        assert_eq!(&k[..4], b"user");
        assert_eq!(
            std::str::from_utf8(&k[4..])
                .unwrap()
                .parse::<u64>()
                .unwrap(),
            fnv_hash64(0)
        );
        let mut shape = RecordShape::new(10, 100);
        assert_eq!(shape.value_bytes(), 1140);
        let mut v = Vec::new();
        shape.value(&mut v);
        assert_eq!(v.len(), 1140);
        assert_eq!(&v[..10], b"\0\0\0\x06field0");
        assert_eq!(&v[10..14], &100u32.to_be_bytes());
        let before = v.clone();
        shape.set_field(&mut v, 3);
        assert_eq!(v.len(), 1140);
        let third = 3 * 114 + 14;
        assert_eq!(before[..third], v[..third]);
        assert_ne!(before[third..third + 100], v[third..third + 100]);
        assert_eq!(before[third + 100..], v[third + 100..]);
    }

    #[test]
    fn zipfian_chooser_never_picks_uninserted_records() {
        let mut c = KeyChooser::new(Distribution::Zipfian, 100, 50);
        let mut rng = YcsbRng::new(2);
        assert!((0..10_000).all(|_| c.next(100, &mut rng) < 100));
        let mut l = KeyChooser::new(Distribution::Latest, 100, 0);
        assert!((0..10_000).all(|_| l.next(120, &mut rng) < 120));
    }
}
