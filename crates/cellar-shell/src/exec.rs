//! Runs one HQL statement against a [`CellStore`] and writes its result.

use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use cellar_engine::Durability;
use cellar_hql::{
    AlterAction, AlterTable, Compression, CreateTable, FamilySpec, LoadData, Statement, TableRef,
};
use cellar_load::{load_into_table, LoadError, LoadSpec, ProgressSink};
use cellar_table::{
    CellStore, FamilyCompression, FamilyOptions, ScanSpec, TableError, TableSchema,
};

/// Why a statement failed.
#[derive(Debug)]
pub enum ExecError {
    Parse(cellar_hql::ParseError),
    Table(TableError),
    Load(LoadError),
    Io(io::Error),
    Invalid(String),
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Parse(e) => write!(f, "syntax error: {e}"),
            // The table layer's messages point at its API; these point at statements.
            ExecError::Table(TableError::TableNotFound(t)) => {
                write!(
                    f,
                    "table {t:?} does not exist (SHOW TABLES lists the tables)"
                )
            }
            ExecError::Table(TableError::FamilyNotFound { table, family }) => write!(
                f,
                "table {table:?} has no column family {family:?} (DESCRIBE TABLE lists them)"
            ),
            ExecError::Table(e) => write!(f, "{e}"),
            ExecError::Load(e) => write!(f, "load failed: {e}"),
            ExecError::Io(e) => write!(f, "{e}"),
            ExecError::Invalid(m) => write!(f, "{m}"),
        }
    }
}

impl From<TableError> for ExecError {
    fn from(e: TableError) -> Self {
        ExecError::Table(e)
    }
}
impl From<io::Error> for ExecError {
    fn from(e: io::Error) -> Self {
        ExecError::Io(e)
    }
}
impl From<LoadError> for ExecError {
    fn from(e: LoadError) -> Self {
        ExecError::Load(e)
    }
}

/// What the shell does after a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

pub struct Session<'a> {
    pub store: &'a CellStore,
    pub durability: Durability,
    /// Progress display for LOAD DATA INFILE.
    pub progress: &'a dyn ProgressSink,
}

const HELP: &str = "\
Statements (end each with ';'; see docs/hql.md):
  CREATE TABLE [IF NOT EXISTS] t (family [MAX_VERSIONS n] [TTL n DAYS] [COMPRESSION lz4|zstd|none] ..., ...)
  DROP TABLE [IF EXISTS] t;  SHOW TABLES;  DESCRIBE TABLE t;  SHOW CREATE TABLE t
  ALTER TABLE t ADD (family ...) | DROP (family, ...)
  INSERT INTO t VALUES ('row', 'family:qualifier', 'value'), ('row', '2024-01-01 10:00:00', 'f:q', 'v')
  SELECT * | f, f:q FROM t [WHERE ROW = 'k' | ROW >= 'a' AND ROW < 'b' | ROW =^ 'p' | TIMESTAMP >= '...']
         [MAX_VERSIONS n] [LIMIT n] [REVERSE] [DISPLAY_TIMESTAMPS]
  DELETE * | f:q FROM t WHERE ROW = 'k' [VERSION ts]
  LOAD DATA INFILE [ROW_KEY_COLUMN=c] [TIMESTAMP_COLUMN=c] [HEADER_FILE='h'] [IGNORE_UNKNOWN_COLUMNS]
         [SKIP_BAD_LINES] 'file.tsv[.gz]' INTO TABLE t
  DUMP TABLE t INTO FILE 'out.tsv'
  QUIT
";

impl Session<'_> {
    pub fn execute(&self, stmt: &Statement, out: &mut dyn Write) -> Result<Flow, ExecError> {
        match stmt {
            Statement::CreateTable(c) => {
                if c.if_not_exists && self.store.list_tables().contains(&c.name) {
                    return Ok(Flow::Continue);
                }
                let mut schema = TableSchema::new(&c.name);
                for f in &c.families {
                    schema = schema.family(&f.name, family_options(f));
                }
                self.store.create_table(schema)?;
            }
            Statement::DropTable(d) => match self.store.drop_table(&d.name) {
                Err(TableError::TableNotFound(_)) if d.if_exists => {}
                r => r?,
            },
            Statement::ShowTables => {
                for t in self.store.list_tables() {
                    writeln!(out, "{}", cellar_hql::escape_output(t.as_bytes()))?;
                }
            }
            Statement::DescribeTable(t) => self.describe_table(t, out)?,
            Statement::ShowCreateTable(t) => {
                let s = self.store.describe(&t.table)?;
                writeln!(out, "{};", create_statement(&s))?;
            }
            Statement::AlterTable(a) => self.alter_table(a)?,
            Statement::Insert(ins) => self.insert(ins)?,
            Statement::Select(sel) => self.select(sel, out)?,
            Statement::Delete(d) => self.delete(d)?,
            Statement::LoadData(l) => self.load_data(l, out)?,
            Statement::DumpTable(d) => {
                let started = std::time::Instant::now();
                let n = self.dump(&d.table, &d.file)?;
                let secs = started.elapsed().as_secs_f64();
                writeln!(out, "Dumped {n} cells to {} in {secs:.2} s", d.file)?;
            }
            Statement::Quit => return Ok(Flow::Quit),
            Statement::Help => out.write_all(HELP.as_bytes())?,
        }
        Ok(Flow::Continue)
    }

    /// DESCRIBE TABLE: one line per family with its options.
    fn describe_table(&self, t: &TableRef, out: &mut dyn Write) -> Result<(), ExecError> {
        let s = self.store.describe(&t.table)?;
        for f in &s.families {
            let o = &f.options;
            writeln!(
                out,
                "{}\tMAX_VERSIONS={}\tTTL={}\tCOMPRESSION={}\tBLOCKSIZE={}\tBLOOMFILTER={}",
                f.name,
                o.max_versions,
                o.ttl.map_or("none".into(), |d| d.as_secs().to_string()),
                o.compression
                    .map_or("default".into(), |c| format!("{c:?}").to_lowercase()),
                o.block_size_bytes
                    .map_or("default".into(), |b| b.to_string()),
                o.bloom_filter
            )?;
        }
        Ok(())
    }

    /// ALTER TABLE ... ADD/DROP families: checked whole before any change is made.
    fn alter_table(&self, a: &AlterTable) -> Result<(), ExecError> {
        match &a.action {
            AlterAction::Add(fams) => {
                // Checked first, so that a family that exists adds none.
                let s = self.store.describe(&a.name)?;
                if let Some(f) = fams.iter().find(|f| s.find_family(&f.name).is_some()) {
                    return Err(ExecError::Table(TableError::FamilyExists {
                        table: a.name.clone(),
                        family: f.name.clone(),
                    }));
                }
                for f in fams {
                    self.store
                        .alter_add_family(&a.name, &f.name, family_options(f))?;
                }
            }
            AlterAction::Drop(fams) => {
                let s = self.store.describe(&a.name)?;
                if let Some(f) = fams.iter().find(|f| s.find_family(f).is_none()) {
                    return Err(ExecError::Table(TableError::FamilyNotFound {
                        table: a.name.clone(),
                        family: f.clone(),
                    }));
                }
                if fams.len() >= s.families.len() {
                    return Err(ExecError::Invalid(format!(
                        "dropping every family of table {:?}: drop the table instead",
                        a.name
                    )));
                }
                for f in fams {
                    self.store.alter_drop_family(&a.name, f)?;
                }
            }
        }
        Ok(())
    }

    /// LOAD DATA INFILE: a bulk load of one file into a table (`cellar_load`).
    fn load_data(&self, l: &LoadData, out: &mut dyn Write) -> Result<(), ExecError> {
        let table = self.store.table(&l.table)?;
        let spec = LoadSpec {
            files: vec![PathBuf::from(&l.file)],
            row_key_column: l.row_key_column.clone(),
            timestamp_column: l.timestamp_column.clone(),
            header_file: l.header_file.as_ref().map(PathBuf::from),
            ignore_unknown_columns: l.ignore_unknown_columns,
            skip_bad_lines: l.skip_bad_lines,
            ..LoadSpec::default()
        };
        let stats = load_into_table(&table, &spec, self.progress)?;
        writeln!(out, "{stats}")?;
        Ok(())
    }

    /// Every version of every cell, in the flat format LOAD DATA INFILE reads back.
    fn dump(&self, table: &str, file: &str) -> Result<u64, ExecError> {
        let table = self.store.table(table)?;
        let f = std::fs::File::create(file)
            .map_err(|e| ExecError::Invalid(format!("cannot create {file}: {e}")))?;
        if file.ends_with(".gz") {
            let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
            let (n, gz) = write_dump(&table, gz)?;
            gz.finish()?.sync_all()?;
            Ok(n)
        } else {
            let (n, f) = write_dump(&table, f)?;
            f.sync_all()?;
            Ok(n)
        }
    }
}

/// Every visible version of every cell, in SELECT order, in the cell shape LOAD DATA INFILE
/// reads back: `#timestamp<TAB>row<TAB>column<TAB>value`.
fn write_dump<W: Write>(table: &cellar_table::Table, w: W) -> Result<(u64, W), ExecError> {
    let mut w = io::BufWriter::with_capacity(1 << 20, w);
    writeln!(w, "#timestamp\trow\tcolumn\tvalue")?;
    let mut n = 0;
    let mut line = String::new();
    for cell in table.scan(ScanSpec::default())? {
        let cell = cell?;
        line.clear();
        line.push_str(&cell.timestamp.to_string());
        line.push('\t');
        format_cell(
            &mut line,
            &cell.row,
            &cell.family,
            &cell.qualifier,
            &cell.value,
        );
        w.write_all(line.as_bytes())?;
        n += 1;
    }
    let w = w.into_inner().map_err(|e| ExecError::Io(e.into_error()))?;
    Ok((n, w))
}

/// `row<TAB>family[:qualifier]<TAB>value<LF>`, bytes escaped as `docs/hql.md` says.
pub(super) fn format_cell(
    line: &mut String,
    row: &[u8],
    family: &str,
    qualifier: &[u8],
    value: &[u8],
) {
    cellar_hql::escape_output_into(row, line);
    line.push('\t');
    line.push_str(family);
    if !qualifier.is_empty() {
        line.push(':');
        cellar_hql::escape_output_into(qualifier, line);
    }
    line.push('\t');
    cellar_hql::escape_output_into(value, line);
    line.push('\n');
}

fn family_options(f: &FamilySpec) -> FamilyOptions {
    let d = FamilyOptions::default();
    FamilyOptions {
        max_versions: f.max_versions.unwrap_or(d.max_versions),
        ttl: f.ttl_seconds.map(Duration::from_secs),
        compression: f.compression.map(|c| match c {
            Compression::None => FamilyCompression::None,
            Compression::Lz4 => FamilyCompression::Lz4,
            Compression::Zstd => FamilyCompression::Zstd,
        }),
        block_size_bytes: f.block_size_bytes.map(|b| b as usize),
        bloom_filter: f.bloom.unwrap_or(d.bloom_filter),
    }
}

/// The CREATE TABLE statement that makes `s` again.
fn create_statement(s: &TableSchema) -> CreateTable {
    CreateTable {
        if_not_exists: false,
        name: s.name.clone(),
        families: s
            .families
            .iter()
            .map(|f| {
                let o = &f.options;
                FamilySpec {
                    name: f.name.clone(),
                    // 0 (every version, which only the library can set) has no HQL
                    // spelling; the largest count is the same in practice.
                    max_versions: match o.max_versions {
                        1 => None,
                        0 => Some(u32::MAX),
                        n => Some(n),
                    },
                    ttl_seconds: o.ttl.map(|d| d.as_secs().max(1)),
                    compression: o.compression.map(|c| match c {
                        FamilyCompression::None => Compression::None,
                        FamilyCompression::Lz4 => Compression::Lz4,
                        FamilyCompression::Zstd => Compression::Zstd,
                    }),
                    block_size_bytes: o.block_size_bytes.map(|b| b as u64),
                    bloom: (!o.bloom_filter).then_some(false),
                }
            })
            .collect(),
    }
}
