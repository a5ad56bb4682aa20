//! `cellar-bench report`: docs/benchmarks/RESULTS.md and its SVG plots, regenerated from
//! the result records ([`crate::record::Record`]) the workload subcommands write (any mix,
//! any number of files); a record's `suite` chooses its table's family and figure.
//!
//! Steps: [`load`] reads the records (a line that is not one is reported as FILE:LINE on stderr,
//! listed at the end of the report, and skipped; `--strict` makes it an error that writes
//! nothing), [`model`] groups them into one table per workload × variant group × input file
//! with the ratio to Cellar, [`machine`] describes the machine and the disk's ceilings,
//! [`plots`] draws the SVGs and [`tables`] writes the Markdown.
//!
//! The output depends only on the inputs' contents, their paths relative to the report, the
//! ceilings file and the machine: files, engines and variants are sorted, numbers have a
//! fixed format, and nothing records the time. Regenerating from the same JSON on the same
//! machine gives the same bytes.

mod causes;
mod fio;
mod load;
pub(crate) mod machine;
mod model;
mod plots;
mod tables;

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::{BenchError, Result};

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// JSON-lines result files (one object per engine × workload × variant), e.g.
    /// docs/benchmarks/*.jsonl.
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    pub json: Vec<PathBuf>,

    /// The Markdown report to write.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "docs/benchmarks/RESULTS.md"
    )]
    pub out: PathBuf,

    /// Where the SVG plots go [default: plots/ beside --out].
    #[arg(long, value_name = "DIR")]
    pub plots_dir: Option<PathBuf>,

    /// The disk's fio ceilings (JSON, see src/results/machine.rs)
    /// [default: fio-ceilings.json beside --out; if it is missing the report says so].
    #[arg(long, value_name = "FILE")]
    pub ceilings: Option<PathBuf>,

    /// The known causes of Cellar's losses, shown beside them (JSON, see
    /// src/results/causes.rs) [default: causes.json beside --out; none if it is missing].
    #[arg(long, value_name = "FILE")]
    pub causes: Option<PathBuf>,

    /// Fail on the first malformed input line instead of skipping it.
    #[arg(long)]
    pub strict: bool,

    /// Measure the ceilings first with short fio runs (O_DIRECT, about 25 s, a 256 MiB
    /// scratch file on --out's filesystem) and write them to the ceilings file.
    #[arg(long)]
    pub fio: bool,
}

pub fn run(args: &ReportArgs) -> Result<()> {
    let report_dir = match args.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&report_dir).map_err(|e| BenchError::io(&report_dir, e))?;
    let plots_dir = args
        .plots_dir
        .clone()
        .unwrap_or_else(|| report_dir.join("plots"));
    let ceilings_path = args
        .ceilings
        .clone()
        .unwrap_or_else(|| report_dir.join("fio-ceilings.json"));

    let input = load::load(&args.json, &report_dir, args.strict)?;
    for s in &input.skipped {
        eprintln!(
            "cellar-bench report: {}:{}: skipped: {}",
            s.file, s.line, s.reason
        );
    }
    if input.records.is_empty() {
        return Err(BenchError::Invalid(
            "no records in the input files: nothing to report".to_string(),
        ));
    }

    if args.fio {
        let measured = fio::measure(&report_dir)?;
        let text = serde_json::to_string_pretty(&measured)
            .map_err(|e| BenchError::Invalid(format!("fio ceilings: {e}")))?;
        std::fs::write(&ceilings_path, text + "\n")
            .map_err(|e| BenchError::io(&ceilings_path, e))?;
    }
    let ceilings = machine::load_ceilings(&ceilings_path)?;
    let ceilings_name = name_from(&report_dir, &ceilings_path);
    let causes_path = args
        .causes
        .clone()
        .unwrap_or_else(|| report_dir.join("causes.json"));
    let causes = causes::load(&causes_path)?;

    let names: Vec<String> = input.files.iter().map(|f| f.display.clone()).collect();
    let tables = model::build_tables(&input.records, &names);
    let plots = plots::write_all(&tables, &input.files, &plots_dir, &report_dir)?;
    let machine = machine::Machine::read();
    let markdown = tables::render(&tables::Doc {
        input: &input,
        tables: &tables,
        machine: &machine,
        ceilings: ceilings.as_ref(),
        ceilings_name: &ceilings_name,
        causes: causes.as_ref(),
        plots: &plots,
    });
    std::fs::write(&args.out, markdown).map_err(|e| BenchError::io(&args.out, e))?;
    eprintln!(
        "cellar-bench report: {} records from {} files ({} lines skipped) -> {}, {} tables, {} plots in {}",
        input.records.len(),
        input.files.len(),
        input.skipped.len(),
        args.out.display(),
        tables.len(),
        plots.len(),
        plots_dir.display()
    );
    Ok(())
}

/// A JSON file beside the report: `Ok(None)` if it is not there, an error if it is there but
/// unreadable or not `T` (a checked-in file that is wrong should be fixed, not ignored).
fn load_optional_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(BenchError::io(path, e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| BenchError::Invalid(format!("{}: {e}", path.display())))
}

/// `path` relative to the report's directory if possible, else as given.
fn name_from(report_dir: &Path, path: &Path) -> String {
    let abs_dir = report_dir.canonicalize();
    let abs_file = path
        .parent()
        .and_then(|p| {
            let p = if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            };
            p.canonicalize().ok()
        })
        .zip(path.file_name())
        .map(|(dir, name)| dir.join(name));
    match (abs_dir, abs_file) {
        (Ok(d), Some(f)) => load::relative_path(&d, &f),
        _ => None,
    }
    .unwrap_or_else(|| path.display().to_string())
}
