//! SVG plots of the report, drawn with `plotters` (SVG backend only: text is left to the
//! viewer's fonts, so nothing here needs a font or image library).
//!
//! * `ycsb-latency-<input>-<variant>.svg`: p50 and p99 per engine for each YCSB workload
//!   (log scale), one file per input and client-thread variant.
//! * `import-writers-<input>.svg`: import rows/ms against parallel writers, durable and
//!   buffered side by side, a line per engine.
//! * `mapfile-buckets-<input>.svg`: `mapfile`'s cold lookups/s against bucket size ("single" is
//!   a bucket of 1; log scale), a line per engine.
//! * `growth-ops-<input>.svg`, `growth-p99-<input>.svg`, `growth-costs-<input>.svg`:
//!   `growth`'s ops/s, p99 and costs (write and space amplification, index and filter bytes
//!   per key, device reads per uncached get, peak RSS per key) against the number of keys,
//!   a panel per workload or cost, a line per engine, keys on a log scale.
//!
//! The plots are drawn from the report's tables (medians where runs repeat), in their
//! order, with fixed sizes and colours, so the same inputs give the same bytes.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::load::Costs;
use super::load::{relative_path, InputFile};
use super::model::{engine_order, import_writers, mapfile_bucket, Family, Row, Table};
use crate::error::{BenchError, Result};

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Values a plot shows; the tables show the rest. Bounded, so that an absurd value in a
/// record cannot stretch an axis (a log axis over 600 decades takes plotters forever).
const LATENCY_US_WINDOW: (f64, f64) = (1e-3, 1e10);
/// x is a count: writers, keys per call, keys in the database.
const X_WINDOW: (f64, f64) = (1.0, 1e13);
const FIGURE_WINDOW: (f64, f64) = (0.0, 1e13);

fn in_window(v: f64, (lo, hi): (f64, f64)) -> bool {
    v.is_finite() && v >= lo && v <= hi
}

/// A plot written, as RESULTS.md links it.
#[derive(Debug, Clone)]
pub struct Plot {
    pub family: Family,
    pub title: String,
    /// Relative to the report when possible.
    pub link: String,
}

const WIDTH: u32 = 960;
const HEIGHT: u32 = 480;
const LEGEND_WIDTH: u32 = 170;
const FONT: &str = "sans-serif";

/// Writes every plot the tables allow into `plots_dir` (created if need be).
pub fn write_all(
    tables: &[Table],
    files: &[InputFile],
    plots_dir: &Path,
    report_dir: &Path,
) -> Result<Vec<Plot>> {
    let mut specs: Vec<Spec> = Vec::new();
    specs.extend(ycsb_specs(tables, files));
    specs.extend(import_specs(tables, files));
    specs.extend(mapfile_specs(tables, files));
    specs.extend(growth_specs(tables, files));
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(plots_dir).map_err(|e| BenchError::io(plots_dir, e))?;
    let mut used: Vec<String> = Vec::new();
    let mut plots = Vec::new();
    for spec in specs {
        let mut name = spec.file_stem.clone();
        let mut n = 1;
        while used.contains(&name) {
            n += 1;
            name = format!("{}-{n}", spec.file_stem);
        }
        used.push(name.clone());
        let file_name = format!("{name}.svg");
        let path = plots_dir.join(&file_name);
        let mut svg = String::new();
        draw(&spec, &mut svg)
            .map_err(|e| BenchError::Invalid(format!("plot {}: {e}", path.display())))?;
        std::fs::write(&path, svg).map_err(|e| BenchError::io(&path, e))?;
        let link = match (report_dir.canonicalize(), path.canonicalize()) {
            (Ok(from), Ok(to)) => relative_path(&from, &to),
            _ => None,
        }
        .unwrap_or_else(|| path.display().to_string());
        plots.push(Plot {
            family: spec.family,
            title: spec.title.clone(),
            link,
        });
    }
    Ok(plots)
}

/// An engine's (category index, p50, p99) points.
type LatencySeries = (String, Vec<(usize, f64, f64)>);
/// An engine's (x, y) points.
type EngineLine = (String, Vec<(f64, f64)>);
/// A panel's caption and lines.
type Panel = (String, Vec<EngineLine>);

/// What to draw: a series per engine, in one or more panels.
struct Spec {
    family: Family,
    file_stem: String,
    title: String,
    kind: Kind,
}

enum Kind {
    /// Categories (YCSB workloads) × engines: (p50, p99) per engine and category.
    Latency {
        categories: Vec<String>,
        /// engine → per category (index) p50 and p99.
        engines: Vec<LatencySeries>,
    },
    /// Panels of lines: x, y per engine.
    Lines {
        x_desc: &'static str,
        y_desc: &'static str,
        log_x: bool,
        panels: Vec<Panel>,
    },
}

fn file_name(files: &[InputFile], i: usize) -> &str {
    files.get(i).map_or("?", |f| f.display.as_str())
}

/// "docs/x/ycsb-200k-t1.jsonl" → "ycsb-200k-t1"; anything but [a-z0-9-] becomes "-".
fn stem(s: &str) -> String {
    let base = s.rsplit('/').next().unwrap_or(s);
    let base = base.strip_suffix(".jsonl").unwrap_or(base);
    let mut out = String::new();
    for c in base.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

fn ycsb_specs(tables: &[Table], files: &[InputFile]) -> Vec<Spec> {
    // (input, variant) → workloads in table order → engine rows
    let mut groups: BTreeMap<(String, String), Vec<&Table>> = BTreeMap::new();
    for t in tables.iter().filter(|t| t.family == Family::Ycsb) {
        let key = (file_name(files, t.file).to_string(), t.group.clone());
        groups.entry(key).or_default().push(t);
    }
    let mut specs = Vec::new();
    for ((file, variant), ts) in groups {
        let categories: Vec<String> = ts.iter().map(|t| t.workload.clone()).collect();
        let mut engines: BTreeMap<String, Vec<(usize, f64, f64)>> = BTreeMap::new();
        for (i, t) in ts.iter().enumerate() {
            for r in &t.rows {
                if let (Some(p50), Some(p99)) = (r.p50_us, r.p99_us) {
                    if in_window(p50, LATENCY_US_WINDOW) && in_window(p99, LATENCY_US_WINDOW) {
                        engines
                            .entry(r.engine.clone())
                            .or_default()
                            .push((i, p50, p99));
                    }
                }
            }
        }
        if engines.is_empty() {
            continue;
        }
        let mut engines: Vec<_> = engines.into_iter().collect();
        engines.sort_by(|a, b| engine_order(&a.0, &b.0));
        let label = if variant.is_empty() {
            String::new()
        } else {
            format!(", {variant}")
        };
        specs.push(Spec {
            family: Family::Ycsb,
            file_stem: ycsb_stem(&file, &variant),
            title: format!("YCSB latency per engine, p50 and p99{label} ({file})"),
            kind: Kind::Latency {
                categories,
                engines,
            },
        });
    }
    specs
}

/// "ycsb-latency-<input>-<variant>", the variant left out when the input's name ends with
/// it already (ycsb-200k-t1.jsonl, t1).
fn ycsb_stem(file: &str, variant: &str) -> String {
    let (file, variant) = (stem(file), stem(variant));
    if variant.is_empty() || file.ends_with(&format!("-{variant}")) {
        format!("ycsb-latency-{file}")
    } else {
        format!("ycsb-latency-{file}-{variant}")
    }
}

/// Lines per engine from the rows of `tables` (one panel per table group), x from each
/// row's variant, y its figure.
fn line_panels(tables: &[&Table], x_of: fn(&str) -> Option<u64>) -> Vec<Panel> {
    let x = |r: &Row| x_of(&r.variant).map(|x| x as f64);
    tables
        .iter()
        .filter_map(|t| engine_lines(t.group.clone(), &t.rows, &x, &|r| r.figure))
        .collect()
}

/// A panel of each engine's (x, y) points of `rows` within the plots' windows, sorted by
/// x, engines in report order; `None` when no row has both.
fn engine_lines(
    caption: String,
    rows: &[Row],
    x: &dyn Fn(&Row) -> Option<f64>,
    y: &dyn Fn(&Row) -> Option<f64>,
) -> Option<Panel> {
    let mut engines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        if let (Some(x), Some(y)) = (x(r), y(r)) {
            if in_window(x, X_WINDOW) && in_window(y, FIGURE_WINDOW) {
                engines.entry(r.engine.clone()).or_default().push((x, y));
            }
        }
    }
    if engines.is_empty() {
        return None;
    }
    let mut engines: Vec<EngineLine> = engines.into_iter().collect();
    for (_, pts) in &mut engines {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    engines.sort_by(|a, b| engine_order(&a.0, &b.0));
    Some((caption, engines))
}

fn by_file<'a>(
    tables: &'a [Table],
    family: Family,
    group: Option<&str>,
) -> BTreeMap<usize, Vec<&'a Table>> {
    let mut out: BTreeMap<usize, Vec<&Table>> = BTreeMap::new();
    for t in tables.iter().filter(|t| t.family == family) {
        if group.is_none_or(|g| g == t.group) {
            out.entry(t.file).or_default().push(t);
        }
    }
    out
}

fn import_specs(tables: &[Table], files: &[InputFile]) -> Vec<Spec> {
    let mut specs = Vec::new();
    for (file, ts) in by_file(tables, Family::Import, None) {
        let panels = line_panels(&ts, import_writers);
        if panels.is_empty() {
            continue;
        }
        let name = file_name(files, file);
        specs.push(Spec {
            family: Family::Import,
            file_stem: format!("import-writers-{}", stem(name)),
            title: format!("Import: rows/ms against parallel writers ({name})"),
            kind: Kind::Lines {
                x_desc: "parallel writers",
                y_desc: "rows/ms",
                log_x: false,
                panels,
            },
        });
    }
    specs
}

fn mapfile_specs(tables: &[Table], files: &[InputFile]) -> Vec<Spec> {
    let mut specs = Vec::new();
    for (file, ts) in by_file(tables, Family::Mapfile, Some("lookup")) {
        let panels = line_panels(&ts, mapfile_bucket);
        if panels.is_empty() {
            continue;
        }
        let name = file_name(files, file);
        specs.push(Spec {
            family: Family::Mapfile,
            file_stem: format!("mapfile-buckets-{}", stem(name)),
            title: format!("MapFile benchmark: cold lookups/s against bucket size ({name})"),
            kind: Kind::Lines {
                x_desc: "keys per call (bucket size, log scale)",
                y_desc: "lookups/s",
                log_x: true,
                panels,
            },
        });
    }
    specs
}

/// A cost panel: its caption, the workload whose rows it reads, and the cost.
type CostPanel = (&'static str, &'static str, fn(&Costs) -> Option<f64>);

/// Which costs the growth cost plot shows, from which workload's rows.
const GROWTH_COSTS: [CostPanel; 5] = [
    ("write amp, fillrandom", "fillrandom", |c| c.write_amp),
    ("space amp, fillrandom", "fillrandom", |c| c.space_amp),
    ("index+filter B/key", "fillrandom", |c| {
        c.index_filter_bytes_per_key
    }),
    ("device reads/get, uncached", "readrandom_uncached", |c| {
        c.device_reads_per_op
    }),
    ("peak RSS B/key, uncached", "readrandom_uncached", |c| {
        c.rss_bytes_per_key
    }),
];

fn growth_specs(tables: &[Table], files: &[InputFile]) -> Vec<Spec> {
    let mut specs = Vec::new();
    for (file, ts) in by_file(tables, Family::Growth, None) {
        let name = file_name(files, file);
        let per_workload = |y: fn(&Row) -> Option<f64>| -> Vec<Panel> {
            ts.iter()
                .filter_map(|t| engine_lines(t.workload.clone(), &t.rows, &growth_keys, &y))
                .collect()
        };
        let kinds: [(&str, &str, &'static str, Vec<Panel>); 3] = [
            ("ops", "ops/s", "ops/s", per_workload(|r| r.figure)),
            ("p99", "p99 latency", "p99 µs", per_workload(|r| r.p99_us)),
            (
                "costs",
                "costs",
                "",
                GROWTH_COSTS
                    .iter()
                    .filter_map(|(caption, workload, cost)| {
                        let table = ts.iter().find(|t| t.workload == *workload)?;
                        let y = |r: &Row| r.costs.as_ref().and_then(cost);
                        engine_lines(caption.to_string(), &table.rows, &growth_keys, &y)
                    })
                    .collect(),
            ),
        ];
        for (kind, what, y_desc, panels) in kinds {
            if panels.is_empty() {
                continue;
            }
            specs.push(Spec {
                family: Family::Growth,
                file_stem: format!("growth-{kind}-{}", stem(name)),
                title: format!("Growth: {what} against keys ({name})"),
                kind: Kind::Lines {
                    x_desc: "keys (log scale)",
                    y_desc,
                    log_x: true,
                    panels,
                },
            });
        }
    }
    specs
}

/// A growth row's keys, for rows of one reader thread (variants with no thread suffix).
fn growth_keys(r: &Row) -> Option<f64> {
    let one_thread = !r.variant.contains(' ');
    r.costs.map(|c| c.keys).filter(|_| one_thread)
}

/// Fixed colours for the engines the harness knows; others get one from a small palette
/// by their name, so an engine has the same colour in every plot.
fn engine_color(engine: &str) -> RGBColor {
    let base = engine.split(" [").next().unwrap_or(engine);
    match base {
        "cellar" => RGBColor(214, 39, 40),
        "rocksdb" => RGBColor(31, 119, 180),
        "lmdb" => RGBColor(44, 160, 44),
        "fjall" => RGBColor(255, 127, 14),
        "sqlite" => RGBColor(148, 103, 189),
        "mapfile" => RGBColor(140, 86, 75),
        "hbase" => RGBColor(127, 127, 127),
        _ => {
            const OTHERS: [RGBColor; 4] = [
                RGBColor(227, 119, 194),
                RGBColor(188, 189, 34),
                RGBColor(23, 190, 207),
                RGBColor(0, 0, 0),
            ];
            let index = base
                .bytes()
                .fold(0usize, |h, b| h.wrapping_mul(31) + b as usize);
            OTHERS[index % OTHERS.len()]
        }
    }
}

/// Axis labels: 1, 2.5, 10, 1K, 1.5M.
fn axis_num(v: f64) -> String {
    let (scaled, suffix) = match v.abs() {
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "K"),
        _ => (v, ""),
    };
    let text = format!("{scaled:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{suffix}")
}

/// Rows and columns for `n` panels: one row of up to three, else rows of three.
fn grid(n: usize) -> (usize, usize) {
    let n = n.max(1);
    if n <= 3 {
        (1, n)
    } else {
        (n.div_ceil(3), 3)
    }
}

fn draw(spec: &Spec, svg: &mut String) -> DrawResult {
    let rows = match &spec.kind {
        Kind::Lines { panels, .. } => grid(panels.len()).0 as u32,
        Kind::Latency { .. } => 1,
    };
    let height = HEIGHT + (rows - 1) * HEIGHT * 3 / 4;
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(&spec.title, (FONT, 18))?;
    let (plot_area, legend_area) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
    match &spec.kind {
        Kind::Latency {
            categories,
            engines,
        } => {
            latency_chart(&plot_area, categories, engines)?;
            let names: Vec<&str> = engines.iter().map(|(e, _)| e.as_str()).collect();
            legend(&legend_area, &names, true)?;
        }
        Kind::Lines {
            x_desc,
            y_desc,
            log_x,
            panels,
        } => {
            let areas = plot_area.split_evenly(grid(panels.len()));
            let mut names: Vec<&str> = Vec::new();
            for (area, (caption, engines)) in areas.iter().zip(panels) {
                let axes = Axes {
                    x_desc,
                    y_desc,
                    log_x: *log_x,
                };
                lines_chart(area, caption, engines, &axes)?;
                for (e, _) in engines {
                    if !names.contains(&e.as_str()) {
                        names.push(e);
                    }
                }
            }
            names.sort_by(|a, b| engine_order(a, b));
            legend(&legend_area, &names, false)?;
        }
    }
    root.present()?;
    Ok(())
}

fn legend(area: &DrawingArea<SVGBackend, Shift>, engines: &[&str], markers: bool) -> DrawResult {
    let style = (FONT, 14).into_font();
    let mut y = 40;
    for e in engines {
        let color = engine_color(e);
        area.draw(&PathElement::new(
            vec![(10, y), (34, y)],
            color.stroke_width(2),
        ))?;
        area.draw(&Circle::new((22, y), 4, color.filled()))?;
        area.draw(&Text::new(e.to_string(), (42, y - 7), style.clone()))?;
        y += 22;
    }
    if markers {
        y += 10;
        area.draw(&Circle::new((22, y), 4, BLACK.filled()))?;
        area.draw(&Text::new("p50", (42, y - 7), style.clone()))?;
        y += 22;
        area.draw(&TriangleMarker::new((22, y), 6, BLACK.filled()))?;
        area.draw(&Text::new("p99", (42, y - 7), style))?;
    }
    Ok(())
}

fn latency_chart(
    area: &DrawingArea<SVGBackend, Shift>,
    categories: &[String],
    engines: &[LatencySeries],
) -> DrawResult {
    let values = engines
        .iter()
        .flat_map(|(_, pts)| pts.iter().flat_map(|&(_, a, b)| [a, b]));
    let lo = values.clone().fold(f64::INFINITY, f64::min) / 1.5;
    let hi = values.fold(0.0, f64::max) * 1.5;
    let n = categories.len();
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo..hi).log_scale())?;
    let label = |x: &f64| -> String {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        categories
            .get(i as usize)
            .map(|c| c.strip_prefix("ycsb_").unwrap_or(c).to_string())
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&label)
        .y_label_formatter(&|v| axis_num(*v))
        .y_desc("latency µs (log scale)")
        .x_desc("workload")
        .label_style((FONT, 13))
        .draw()?;
    let count = engines.len().max(1) as f64;
    for (ei, (engine, pts)) in engines.iter().enumerate() {
        let color = engine_color(engine);
        let dx = -0.3 + 0.6 * (ei as f64 + 0.5) / count;
        chart.draw_series(pts.iter().map(|&(i, p50, p99)| {
            PathElement::new(vec![(i as f64 + dx, p50), (i as f64 + dx, p99)], color)
        }))?;
        chart.draw_series(
            pts.iter()
                .map(|&(i, p50, _)| Circle::new((i as f64 + dx, p50), 4, color.filled())),
        )?;
        chart
            .draw_series(pts.iter().map(|&(i, _, p99)| {
                TriangleMarker::new((i as f64 + dx, p99), 6, color.filled())
            }))?;
    }
    Ok(())
}

/// A line chart's axis titles and scales.
struct Axes<'a> {
    x_desc: &'a str,
    y_desc: &'a str,
    log_x: bool,
}

fn lines_chart(
    area: &DrawingArea<SVGBackend, Shift>,
    caption: &str,
    engines: &[EngineLine],
    axes: &Axes,
) -> DrawResult {
    let (x_desc, y_desc) = (axes.x_desc, axes.y_desc);
    let xs = engines.iter().flat_map(|(_, p)| p.iter().map(|&(x, _)| x));
    let x_min = xs.clone().fold(f64::INFINITY, f64::min);
    let x_max = xs.fold(f64::NEG_INFINITY, f64::max);
    let y_max = engines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(_, y)| y))
        .fold(0.0, f64::max);
    let y_range = 0.0..(y_max * 1.15).max(1e-9);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(caption, (FONT, 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64);
    if axes.log_x {
        let x_range = ((x_min / 2.0).max(0.1)..(x_max * 2.0).max(1.0)).log_scale();
        let mut chart = builder.build_cartesian_2d(x_range, y_range)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| axis_num(*v))
            .y_label_formatter(&|v| axis_num(*v))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style((FONT, 13))
            .draw()?;
        for (engine, pts) in engines {
            let color = engine_color(engine);
            chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?;
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
    } else {
        let x_range = (x_min - 0.5)..(x_max + 0.5);
        let mut chart = builder.build_cartesian_2d(x_range, y_range)?;
        let ticks = (x_max - x_min + 1.0).clamp(1.0, 12.0) as usize;
        chart
            .configure_mesh()
            .x_labels(ticks)
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-6 {
                    format!("{}", v.round())
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| axis_num(*v))
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style((FONT, 13))
            .draw()?;
        for (engine, pts) in engines {
            let color = engine_color(engine);
            chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?;
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_names_and_axis_labels_are_plain() {
        assert_eq!(stem("docs/benchmarks/ycsb-200k-t1.jsonl"), "ycsb-200k-t1");
        assert_eq!(stem("My Run (2).jsonl"), "my-run-2");
        assert_eq!(
            ycsb_stem("ycsb-200k-t1.jsonl", "t1"),
            "ycsb-latency-ycsb-200k-t1"
        );
        assert_eq!(ycsb_stem("ycsb.jsonl", "t4"), "ycsb-latency-ycsb-t4");
        assert_eq!(axis_num(1500.0), "1.5K");
        assert_eq!(axis_num(2_000_000.0), "2M");
        assert_eq!(axis_num(0.25), "0.25");
        assert_eq!(axis_num(10.0), "10");
    }
}
