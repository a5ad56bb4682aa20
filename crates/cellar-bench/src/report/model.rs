//! From records to comparison tables: which subcommand a workload belongs to, how its
//! variants group into tables, the median of repeated runs, and the ratio to Cellar.
//!
//! Engines are compared only within one run: a table holds the records of one input file
//! (and one `command`, if records carry it) for one workload and one variant group. Rows
//! are one per variant × engine; several records for the same row (three runs of `mapfile` in one file)
//! become one row of medians. The ratio of a row is its figure over Cellar's figure for the
//! same variant in the same table, so Cellar's own row is 1.00 and a ratio above 1 means
//! the engine was faster than Cellar there.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use super::load::{Costs, Record};

/// The subcommand that writes a workload, which decides the table's figure and grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    Db,
    Mapfile,
    /// `cellar-bench elliptics`.
    Elliptics,
    Ycsb,
    Import,
    /// The import over the network: `cellar-bench server` (workloads `server` and
    /// `server_targets`).
    Server,
    Dfsio,
    Hypertable,
    /// `cellar-bench objstore`: databases in an S3-compatible bucket.
    Objstore,
    /// `cellar-bench growth`: `db` workloads at several sizes (variant: the size).
    Growth,
    /// A workload this report does not know: a generic ops/s table.
    Other,
}

/// `cellar-bench db`'s workloads, in the order it runs them.
const DB_WORKLOADS: [&str; 12] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "fillsync",
    "readrandom",
    "readrandom_uncached",
    "multireadrandom",
    "multireadrandom_uncached",
    "seekrandom",
    "readseq",
    "readreverse",
    "readwhilewriting",
];

/// `cellar-bench ycsb`'s workloads, in the order it runs them (D and E insert, so last).
const YCSB_WORKLOADS: [&str; 7] = [
    "ycsb_load",
    "ycsb_a",
    "ycsb_b",
    "ycsb_c",
    "ycsb_f",
    "ycsb_d",
    "ycsb_e",
];

pub const ALL_FAMILIES: [Family; 11] = [
    Family::Db,
    Family::Growth,
    Family::Mapfile,
    Family::Elliptics,
    Family::Ycsb,
    Family::Import,
    Family::Server,
    Family::Dfsio,
    Family::Hypertable,
    Family::Objstore,
    Family::Other,
];

impl Family {
    /// The family of a record's `suite` (the subcommand that measured it).
    pub fn of(suite: &str) -> Family {
        match suite {
            "db" => Family::Db,
            "mapfile" => Family::Mapfile,
            "elliptics" => Family::Elliptics,
            "ycsb" => Family::Ycsb,
            "import" => Family::Import,
            "server" => Family::Server,
            "dfsio" => Family::Dfsio,
            "hypertable" => Family::Hypertable,
            "objstore" => Family::Objstore,
            "growth" => Family::Growth,
            _ => Family::Other,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Family::Db => "Key-value workloads, db_bench names (`cellar-bench db`)",
            Family::Mapfile => {
                "Hadoop MapFile against HBase, cold lookups (`cellar-bench mapfile`)"
            }
            Family::Elliptics => "Elliptics vs HBase, cold random reads (`cellar-bench elliptics`)",
            Family::Ycsb => "YCSB core workloads (`cellar-bench ycsb`)",
            Family::Import => "Importing into HBase, rows of 6 integers (`cellar-bench import`)",
            Family::Server => {
                "Importing into HBase over the network: Cellar's server beside HBase's Thrift \
                 gateway and native client (`cellar-bench server`)"
            }
            Family::Dfsio => "Hadoop TestDFSIO through Cellar's Vfs (`cellar-bench dfsio`)",
            Family::Hypertable => "Hypertable's AOL query-log test (`cellar-bench hypertable`)",
            Family::Objstore => {
                "Databases in S3-compatible object storage, one local SeaweedFS: Cellar in the \
                 bucket (wal-local, wal-object) beside Cellar on local disk and SlateDB; a \
                 peer's ratio is to Cellar wal-object (`cellar-bench objstore`)"
            }
            Family::Growth => {
                "Cost growth with the data: `db` workloads at each size, 16-byte keys and \
                 100-byte values; the note gives write and space amplification, index and \
                 filter memory, peak RSS and device reads per operation (`cellar-bench growth`)"
            }
            Family::Other => "Other workloads",
        }
    }

    /// The unit of the table's absolute figure.
    pub fn figure_unit(self) -> &'static str {
        match self {
            Family::Import => "rows/ms",
            Family::Dfsio => "MB/s",
            Family::Hypertable => "cells/s",
            _ => "ops/s",
        }
    }

    /// The figure of a record: rows/ms for import (`rows_per_ms`, else ops/s ÷ 1000),
    /// TestDFSIO's throughput for dfsio (`mb_per_sec`), `ops_per_sec` for the rest (for
    /// hypertable that is cells/s, or what its note says).
    fn figure(self, r: &Record) -> Option<f64> {
        match self {
            Family::Import => r.rows_per_ms.or(r.ops_per_sec.map(|v| v / 1000.0)),
            Family::Dfsio => r.mb_per_sec.or(r.ops_per_sec),
            Family::Server if r.workload == SERVER_TARGETS => r.value,
            _ => r.ops_per_sec,
        }
    }

    /// Hypertable's measurements have no latency but a duration worth showing; dfsio's
    /// is TestDFSIO's exec time.
    pub fn shows_seconds(self) -> bool {
        matches!(self, Family::Hypertable | Family::Dfsio)
    }

    fn workload_rank(self, workload: &str) -> usize {
        let list: &[&str] = match self {
            Family::Db | Family::Growth => &DB_WORKLOADS,
            Family::Ycsb => &YCSB_WORKLOADS,
            Family::Objstore => &OBJSTORE_WORKLOADS,
            _ => &[],
        };
        list.iter()
            .position(|w| *w == workload)
            .unwrap_or(list.len())
    }

    /// Which table of its workload a variant goes to.
    pub fn variant_group(self, variant: &str) -> String {
        match self {
            // "durable/w4" → "durable"
            Family::Import => variant.split('/').next().unwrap_or("").to_string(),
            // "lookup bucket=10" → "lookup", "insert durable" → "insert"
            Family::Mapfile => variant.split(' ').next().unwrap_or("").to_string(),
            // "t1", "t4": one table per client-thread count
            Family::Ycsb => variant.to_string(),
            // "load" (records/s, latency per batch), "fixed rps=200" and "max rate ..." (gets
            // from cold, latency from the due time), "range seek+10" (seeks/s)
            Family::Elliptics => elliptics_group(variant).to_string(),
            // "thrift/w6" → "thrift"; the targets' variants have no '/'
            Family::Server => match variant.split_once('/') {
                Some((group, _)) => group.to_string(),
                None => String::new(),
            },
            _ => String::new(),
        }
    }

    fn group_rank(self, group: &str) -> usize {
        match (self, group) {
            (Family::Import, "durable") | (Family::Mapfile, "insert") => 0,
            (Family::Import, "buffered") | (Family::Mapfile, "lookup") => 1,
            (Family::Server, g) => SERVER_GROUPS
                .iter()
                .position(|x| *x == g)
                .unwrap_or(SERVER_GROUPS.len()),
            (Family::Elliptics, g) => match g {
                "load" => 0,
                "random reads" => 1,
                _ => 2,
            },
            _ => 2,
        }
    }

    /// Rows sort by this, then by engine. `first_line`: where the variant first appears in
    /// its file; hypertable's and unknown workloads' variants keep the order they ran in.
    fn variant_key(self, variant: &str, first_line: usize) -> (u64, Vec<NaturalChunk>) {
        match self {
            Family::Mapfile => (mapfile_bucket(variant).unwrap_or(0), natural_key(variant)),
            // "1M", "200M t4": by the number of keys.
            Family::Growth => (growth_keys(variant).unwrap_or(0), natural_key(variant)),
            Family::Hypertable | Family::Elliptics | Family::Dfsio | Family::Other => {
                (first_line as u64, Vec::new())
            }
            _ => (0, natural_key(variant)),
        }
    }
}

/// `cellar-bench objstore`'s workloads, in report order.
const OBJSTORE_WORKLOADS: [&str; 13] = [
    "fillseq",
    "fillrandom",
    "readrandom_warm",
    "readrandom_cold",
    "durable_puts_t1",
    "durable_puts_t16",
    "ycsb_load",
    "ycsb_a",
    "ycsb_b",
    "ycsb_c",
    "ycsb_d",
    "ycsb_e",
    "ycsb_f",
];

/// The Cellar variant a peer's row of `family` is compared with; `None`: the same variant.
fn baseline_variant(family: Family) -> Option<&'static str> {
    match family {
        // SlateDB keeps its WAL in the bucket too.
        Family::Objstore => Some("wal-object"),
        _ => None,
    }
}

/// The workload of `cellar-bench server`'s target lines (one table of its own).
pub const SERVER_TARGETS: &str = "server_targets";

/// The keys of a growth variant: "200M t4" → 200000000.
pub fn growth_keys(variant: &str) -> Option<u64> {
    crate::growth::parse_size(variant.split(' ').next()?)
}

/// `cellar-bench server`'s variant groups, in report order.
const SERVER_GROUPS: [&str; 6] = [
    "embedded",
    "thrift",
    "native",
    "grpc-python",
    "get-grpc",
    "get-thrift",
];

/// `elliptics`' tables: the load, the random gets, the range reads.
pub fn elliptics_group(variant: &str) -> &'static str {
    if variant.starts_with("load") {
        "load"
    } else if variant.starts_with("range") {
        "range reads"
    } else {
        "random reads"
    }
}

/// `mapfile`'s lookups: "lookup single" is a bucket of 1, "lookup bucket=N" of N.
pub fn mapfile_bucket(variant: &str) -> Option<u64> {
    let rest = variant.strip_prefix("lookup ")?;
    if rest == "single" {
        return Some(1);
    }
    rest.strip_prefix("bucket=")?.parse().ok()
}

/// Import's parallel writers: "durable/w4" → 4.
pub fn import_writers(variant: &str) -> Option<u64> {
    variant.split('/').nth(1)?.strip_prefix('w')?.parse().ok()
}

/// Sorts "w2" before "w10": digit runs compare as numbers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum NaturalChunk {
    Number(u64),
    Text(String),
}

pub fn natural_key(s: &str) -> Vec<NaturalChunk> {
    let mut chunks = Vec::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let is_digit = c.is_ascii_digit();
        let end = rest
            .find(|ch: char| ch.is_ascii_digit() != is_digit)
            .unwrap_or(rest.len());
        let (chunk, tail) = rest.split_at(end);
        chunks.push(match chunk.parse() {
            Ok(n) if is_digit => NaturalChunk::Number(n),
            _ => NaturalChunk::Text(chunk.to_string()),
        });
        rest = tail;
    }
    chunks
}

pub fn is_cellar(engine: &str) -> bool {
    engine.eq_ignore_ascii_case("cellar")
}

/// Cellar first, then by name.
pub fn engine_order(a: &str, b: &str) -> Ordering {
    (!is_cellar(a), a).cmp(&(!is_cellar(b), b))
}

/// One variant × engine of a table.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub variant: String,
    pub engine: String,
    pub figure: Option<f64>,
    /// Lowest and highest figure when the row is the median of several runs.
    pub figure_range: Option<(f64, f64)>,
    /// Records that went into the row (skipped ones not counted).
    pub runs: usize,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub latency_unit: String,
    pub seconds: Option<f64>,
    pub note: String,
    pub skipped: Option<String>,
    /// figure ÷ Cellar's figure for the same variant; `None` without a Cellar figure.
    pub ratio: Option<f64>,
    /// dfsio: total MB over the exec time, and fio's aggregate ceiling for the pattern.
    pub aggregate: Option<f64>,
    pub ceiling: Option<f64>,
    /// dfsio: TestDFSIO's average IO rate and its standard deviation.
    pub io_rate: Option<f64>,
    pub io_rate_std_dev: Option<f64>,
    /// server_targets: the goal (">= 3"), whether it was met, the figures it comes from,
    /// and the unit of the figure ("x" for a ratio).
    pub goal: String,
    pub met: Option<bool>,
    pub inputs: String,
    pub unit: String,
    /// growth: the costs of the row's (first) record.
    pub costs: Option<Costs>,
}

impl Row {
    /// Slower than this engine: the ratio rounds (as printed) to more than 1.00.
    pub fn beats_cellar(&self) -> bool {
        self.ratio.is_some_and(|r| r >= 1.005)
    }
}

#[derive(Debug, Clone)]
pub struct Table {
    pub family: Family,
    pub workload: String,
    pub group: String,
    /// Index into the input files.
    pub file: usize,
    pub command: Option<String>,
    pub commits: Vec<String>,
    /// The days its records were measured (`date`).
    pub dates: Vec<String>,
    /// Engines run with options (`engine_options`), one set each in this table.
    pub engine_options: Vec<(String, String)>,
    pub rows: Vec<Row>,
}

type TableKey = (Family, usize, String, usize, String, usize, Option<String>);

/// Groups records into tables, in report order: family, workload, variant group, file.
pub fn build_tables(records: &[Record], file_names: &[String]) -> Vec<Table> {
    let mut groups: BTreeMap<TableKey, Vec<&Record>> = BTreeMap::new();
    for r in records {
        let family = Family::of(&r.suite);
        let group = family.variant_group(&r.variant);
        let key = (
            family,
            family.workload_rank(&r.workload),
            r.workload.clone(),
            family.group_rank(&group),
            group,
            r.file,
            r.command.clone(),
        );
        groups.entry(key).or_default().push(r);
    }
    let mut tables: Vec<Table> = groups
        .into_iter()
        .map(|((family, _, workload, _, group, file, command), recs)| {
            build_table(family, workload, group, file, command, &recs)
        })
        .collect();
    // Files by name, not by index: stable whatever order they were given in.
    tables.sort_by(|a, b| {
        let name = |t: &Table| file_names.get(t.file).cloned().unwrap_or_default();
        (
            a.family,
            a.family.workload_rank(&a.workload),
            &a.workload,
            a.family.group_rank(&a.group),
            &a.group,
            name(a),
            &a.command,
        )
            .cmp(&(
                b.family,
                b.family.workload_rank(&b.workload),
                &b.workload,
                b.family.group_rank(&b.group),
                &b.group,
                name(b),
                &b.command,
            ))
    });
    tables
}

fn build_table(
    family: Family,
    workload: String,
    group: String,
    file: usize,
    command: Option<String>,
    recs: &[&Record],
) -> Table {
    // An engine run with more than one set of options in one table is one row per set.
    let mut options: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in recs {
        options
            .entry(&r.engine)
            .or_default()
            .insert(&r.engine_options);
    }
    let label = |r: &Record| -> String {
        let split = options.get(r.engine.as_str()).is_some_and(|o| o.len() > 1);
        if split && !r.engine_options.is_empty() {
            format!("{} [{}]", r.engine, r.engine_options)
        } else {
            r.engine.clone()
        }
    };
    let engine_options = options
        .iter()
        .filter(|(_, o)| o.len() == 1)
        .filter_map(|(e, o)| o.first().filter(|s| !s.is_empty()).map(|s| (*e, *s)))
        .map(|(e, s)| (e.to_string(), s.to_string()))
        .collect();

    let mut cells: BTreeMap<(String, String), Vec<&Record>> = BTreeMap::new();
    for r in recs {
        cells
            .entry((r.variant.clone(), label(r)))
            .or_default()
            .push(r);
    }
    let mut rows: Vec<Row> = cells
        .into_iter()
        .map(|((variant, engine), rs)| build_row(family, variant, engine, &rs))
        .collect();
    let mut first_line: BTreeMap<&str, usize> = BTreeMap::new();
    for r in recs {
        let line = first_line.entry(&r.variant).or_insert(r.line);
        *line = (*line).min(r.line);
    }
    let key = |row: &Row| {
        let line = first_line.get(row.variant.as_str()).copied().unwrap_or(0);
        family.variant_key(&row.variant, line)
    };
    rows.sort_by(|a, b| {
        key(a)
            .cmp(&key(b))
            .then_with(|| a.variant.cmp(&b.variant))
            .then_with(|| engine_order(&a.engine, &b.engine))
    });
    let cellar: BTreeMap<String, f64> = rows
        .iter()
        .filter(|r| is_cellar(&r.engine))
        .filter_map(|r| Some((r.variant.clone(), r.figure.filter(|f| *f > 0.0)?)))
        .collect();
    for row in &mut rows {
        let base_variant = match baseline_variant(family) {
            Some(v) if !is_cellar(&row.engine) => v,
            _ => row.variant.as_str(),
        };
        if let (Some(f), Some(base)) = (row.figure.filter(|f| *f >= 0.0), cellar.get(base_variant))
        {
            row.ratio = Some(f / base);
        }
    }
    let commits: BTreeSet<String> = recs.iter().filter_map(|r| r.commit.clone()).collect();
    let dates: BTreeSet<String> = recs.iter().filter_map(|r| r.date.clone()).collect();
    Table {
        family,
        workload,
        group,
        file,
        command,
        commits: commits.into_iter().collect(),
        dates: dates.into_iter().collect(),
        engine_options,
        rows,
    }
}

fn build_row(family: Family, variant: String, engine: String, recs: &[&Record]) -> Row {
    let ran: Vec<&Record> = recs
        .iter()
        .copied()
        .filter(|r| r.skipped.is_none())
        .collect();
    if ran.is_empty() {
        let reasons: BTreeSet<&str> = recs.iter().filter_map(|r| r.skipped.as_deref()).collect();
        return Row {
            variant,
            engine,
            skipped: Some(reasons.into_iter().collect::<Vec<_>>().join("; ")),
            ..Row::default()
        };
    }
    let figures: Vec<f64> = ran.iter().filter_map(|r| family.figure(r)).collect();
    let figure_range = (figures.len() > 1).then(|| {
        let lo = figures.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = figures.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    });
    let distinct = |f: fn(&Record) -> &str| -> String {
        let mut seen: Vec<&str> = Vec::new();
        for r in &ran {
            let s = f(r);
            if !s.is_empty() && !seen.contains(&s) {
                seen.push(s);
            }
        }
        seen.join("; ")
    };
    Row {
        figure: median(figures),
        figure_range,
        runs: ran.len(),
        p50_us: median(ran.iter().filter_map(|r| r.p50_us).collect()),
        p99_us: median(ran.iter().filter_map(|r| r.p99_us).collect()),
        seconds: median(ran.iter().filter_map(|r| r.seconds).collect()),
        latency_unit: distinct(|r| &r.latency_unit),
        note: distinct(|r| &r.note),
        aggregate: median(ran.iter().filter_map(|r| r.aggregate_mb_per_sec).collect()),
        ceiling: median(ran.iter().filter_map(|r| r.fio_mb_per_sec).collect()),
        io_rate: median(
            ran.iter()
                .filter_map(|r| r.average_io_rate_mb_per_sec)
                .collect(),
        ),
        io_rate_std_dev: median(ran.iter().filter_map(|r| r.io_rate_std_dev).collect()),
        goal: distinct(|r| &r.goal),
        met: ran
            .iter()
            .map(|r| r.met)
            .collect::<Option<Vec<bool>>>()
            .map(|m| m.iter().all(|x| *x)),
        inputs: distinct(|r| &r.inputs),
        unit: distinct(|r| &r.unit),
        costs: ran.iter().find_map(|r| r.costs),
        variant,
        engine,
        ..Row::default()
    }
}

/// The middle value; the mean of the two middle ones for an even count.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(engine: &str, variant: &str, ops: f64) -> Record {
        Record {
            suite: "mapfile".into(),
            engine: engine.into(),
            workload: "mapfile".into(),
            variant: variant.into(),
            ops_per_sec: Some(ops),
            ..Record::default()
        }
    }

    #[test]
    fn model_median_of_odd_and_even_counts() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn model_natural_order_compares_numbers() {
        let mut v = vec!["w10", "w2", "w1", "bucket=1000", "bucket=10"];
        v.sort_by_key(|s| natural_key(s));
        assert_eq!(v, ["bucket=10", "bucket=1000", "w1", "w2", "w10"]);
    }

    #[test]
    fn model_runs_become_medians_and_ratios_are_to_cellar() {
        let recs = vec![
            rec("rocksdb", "lookup single", 50.0),
            rec("cellar", "lookup single", 90.0),
            rec("cellar", "lookup single", 100.0),
            rec("cellar", "lookup single", 400.0),
            rec("hbase", "lookup bucket=10", 10.0),
        ];
        let tables = build_tables(&recs, &["f".into()]);
        assert_eq!(tables.len(), 1);
        let rows = &tables[0].rows;
        // bucket size order: single (1) before bucket=10; cellar first within a variant
        let names: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.variant.as_str(), r.engine.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("lookup single", "cellar"),
                ("lookup single", "rocksdb"),
                ("lookup bucket=10", "hbase")
            ]
        );
        assert_eq!(rows[0].figure, Some(100.0));
        assert_eq!(rows[0].figure_range, Some((90.0, 400.0)));
        assert_eq!(rows[0].ratio, Some(1.0));
        assert_eq!(rows[1].ratio, Some(0.5));
        assert_eq!(rows[2].ratio, None);
    }

    #[test]
    fn model_groups_variants_per_family() {
        assert_eq!(Family::Import.variant_group("durable/w4"), "durable");
        assert_eq!(import_writers("durable/w4"), Some(4));
        assert_eq!(Family::Mapfile.variant_group("lookup bucket=10"), "lookup");
        assert_eq!(mapfile_bucket("lookup bucket=10"), Some(10));
        assert_eq!(mapfile_bucket("lookup single"), Some(1));
        assert_eq!(Family::of("ycsb"), Family::Ycsb);
        assert_eq!(Family::of("db"), Family::Db);
        assert_eq!(Family::of("something_new"), Family::Other);
        assert_eq!(Family::of("elliptics"), Family::Elliptics);
        assert_eq!(
            Family::Elliptics.variant_group("max rate p50<100ms"),
            "random reads"
        );
        assert_eq!(
            Family::Elliptics.variant_group("range seek+10"),
            "range reads"
        );
        assert_eq!(Family::Elliptics.variant_group("load"), "load");
        assert_eq!(Family::of("server"), Family::Server);
        assert_eq!(Family::Server.variant_group("thrift/w6"), "thrift");
        assert_eq!(Family::Server.variant_group("get-grpc/r10000"), "get-grpc");
        assert_eq!(
            Family::Server.variant_group("rust client ÷ embedded import, w1"),
            ""
        );
        assert!(Family::Server.group_rank("embedded") < Family::Server.group_rank("get-thrift"));
    }
}
