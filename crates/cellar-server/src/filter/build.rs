//! A named filter and its arguments to a [`Leaf`], with HBase's argument rules (count,
//! types) and an error naming the filter when they are broken.

use super::compare::{Compare, CompareOp};
use super::eval::{Leaf, SingleColumnValue};
use super::{FilterError, MAX_PATTERNS};

/// The filters this module implements, as HBase spells them.
pub const SUPPORTED: &[&str] = &[
    "PrefixFilter",
    "KeyOnlyFilter",
    "FirstKeyOnlyFilter",
    "ColumnPrefixFilter",
    "MultipleColumnPrefixFilter",
    "SingleColumnValueFilter",
    "PageFilter",
    "RowFilter",
    "QualifierFilter",
    "ValueFilter",
];

/// One argument as written, with its byte offset.
#[derive(Debug, Clone)]
pub struct Arg {
    pub at: usize,
    pub value: ArgValue,
}

#[derive(Debug, Clone)]
pub enum ArgValue {
    Quoted(Vec<u8>),
    Op(CompareOp),
    /// Unquoted: a number or a boolean.
    Word(String),
}

/// Checks a filter's arguments on its behalf.
struct Args<'a> {
    filter: &'static str,
    at: usize,
    args: &'a [Arg],
}

/// The leaf for filter `name` (at byte `at`) called with `args`. `patterns_left`: how
/// many more `regexstring`/`substring` comparators the filter string may compile.
pub fn build_leaf(
    at: usize,
    name: &str,
    args: Vec<Arg>,
    patterns_left: &mut usize,
) -> Result<Leaf, FilterError> {
    let Some(&filter) = SUPPORTED.iter().find(|s| **s == name) else {
        return Err(unknown(name));
    };
    if matches!(
        filter,
        "RowFilter" | "QualifierFilter" | "ValueFilter" | "SingleColumnValueFilter"
    ) {
        let patterns = args.iter().filter(|a| is_pattern(&a.value)).count();
        *patterns_left =
            patterns_left
                .checked_sub(patterns)
                .ok_or(FilterError::TooManyPatterns {
                    at,
                    max: MAX_PATTERNS,
                })?;
    }
    let a = Args {
        filter,
        at,
        args: &args,
    };
    Ok(match filter {
        "PrefixFilter" => {
            a.count(1, 1)?;
            Leaf::Prefix(a.quoted(0, "the row prefix")?)
        }
        "KeyOnlyFilter" => {
            a.count(0, 1)?;
            let length_as_value = !args.is_empty() && a.boolean(0, "lenAsVal")?;
            Leaf::KeyOnly { length_as_value }
        }
        "FirstKeyOnlyFilter" => {
            a.count(0, 0)?;
            Leaf::FirstKeyOnly
        }
        "ColumnPrefixFilter" => {
            a.count(1, 1)?;
            Leaf::ColumnPrefix(vec![a.quoted(0, "the qualifier prefix")?])
        }
        "MultipleColumnPrefixFilter" => {
            a.count(1, usize::MAX)?;
            let prefixes = (0..args.len())
                .map(|i| a.quoted(i, "a qualifier prefix"))
                .collect::<Result<_, _>>()?;
            Leaf::ColumnPrefix(prefixes)
        }
        "SingleColumnValueFilter" => Leaf::SingleColumnValue(single_column_value(&a)?),
        "PageFilter" => {
            a.count(1, 1)?;
            Leaf::Page {
                limit: a.page_size(0)?,
                returned: 0,
                passed_this_row: false,
            }
        }
        "RowFilter" => Leaf::Row(a.op_and_comparator()?),
        "QualifierFilter" => Leaf::Qualifier(a.op_and_comparator()?),
        _ => Leaf::Value(a.op_and_comparator()?),
    })
}

/// Whether an argument is a comparator compiled to a regex.
fn is_pattern(value: &ArgValue) -> bool {
    matches!(value, ArgValue::Quoted(b) if b.starts_with(b"regexstring:") || b.starts_with(b"substring:"))
}

fn unknown(name: &str) -> FilterError {
    match SUPPORTED.iter().find(|s| s.eq_ignore_ascii_case(name)) {
        Some(&expected) => FilterError::NameCase {
            given: name.to_string(),
            expected,
        },
        None => FilterError::Unsupported(name.to_string()),
    }
}

fn single_column_value(a: &Args) -> Result<SingleColumnValue, FilterError> {
    if a.args.len() != 4 && a.args.len() != 6 {
        return Err(a.error(
            a.at,
            format!(
                "takes 4 or 6 arguments ('family', 'qualifier', op, 'type:operand' \
                 [, filterIfColumnMissing, latestVersionOnly]), got {}",
                a.args.len()
            ),
        ));
    }
    let (filter_if_missing, latest_version_only) = match a.args.len() {
        6 => (
            a.boolean(4, "filterIfColumnMissing")?,
            a.boolean(5, "latestVersionOnly")?,
        ),
        _ => (false, true),
    };
    Ok(SingleColumnValue {
        family: a.quoted(0, "the family")?,
        qualifier: a.quoted(1, "the qualifier")?,
        compare: a.comparison(2)?,
        filter_if_missing,
        latest_version_only,
    })
}

impl Args<'_> {
    fn error(&self, at: usize, reason: impl Into<String>) -> FilterError {
        FilterError::BadArguments {
            filter: self.filter,
            at,
            reason: reason.into(),
        }
    }

    fn count(&self, min: usize, max: usize) -> Result<(), FilterError> {
        let n = self.args.len();
        if (min..=max).contains(&n) {
            return Ok(());
        }
        let wanted = match (min, max) {
            (0, 0) => "no arguments".to_string(),
            (m, usize::MAX) => format!("at least {m} argument{}", plural(m)),
            (m, n) if m == n => format!("{m} argument{}", plural(m)),
            (m, n) => format!("{m} to {n} arguments"),
        };
        Err(self.error(self.at, format!("takes {wanted}, got {n}")))
    }

    fn quoted(&self, i: usize, what: &str) -> Result<Vec<u8>, FilterError> {
        match &self.args[i].value {
            ArgValue::Quoted(bytes) => Ok(bytes.clone()),
            _ => Err(self.error(
                self.args[i].at,
                format!("argument {}: {what} must be a quoted string", i + 1),
            )),
        }
    }

    fn boolean(&self, i: usize, what: &str) -> Result<bool, FilterError> {
        match &self.args[i].value {
            ArgValue::Word(w) if w.eq_ignore_ascii_case("true") => Ok(true),
            ArgValue::Word(w) if w.eq_ignore_ascii_case("false") => Ok(false),
            _ => Err(self.error(
                self.args[i].at,
                format!("argument {}: {what} must be true or false", i + 1),
            )),
        }
    }

    fn page_size(&self, i: usize) -> Result<u64, FilterError> {
        let bad = || {
            self.error(
                self.args[i].at,
                format!(
                    "argument {}: the page size must be a whole number from 0 to {}",
                    i + 1,
                    i64::MAX
                ),
            )
        };
        match &self.args[i].value {
            ArgValue::Word(w) => {
                let n: i64 = w.parse().map_err(|_| bad())?;
                u64::try_from(n).map_err(|_| bad())
            }
            _ => Err(bad()),
        }
    }

    /// Arguments `i` and `i + 1`: an operator and a quoted comparator.
    fn comparison(&self, i: usize) -> Result<Compare, FilterError> {
        let ArgValue::Op(op) = self.args[i].value else {
            return Err(self.error(
                self.args[i].at,
                format!(
                    "argument {}: expected a comparison operator (<, <=, =, !=, >=, >)",
                    i + 1
                ),
            ));
        };
        let text = self.quoted(i + 1, "the comparator ('type:operand')")?;
        Compare::new(op, &text).map_err(|reason| {
            self.error(self.args[i + 1].at, format!("argument {}: {reason}", i + 2))
        })
    }

    fn op_and_comparator(&self) -> Result<Compare, FilterError> {
        self.count(2, 2)?;
        self.comparison(0)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
