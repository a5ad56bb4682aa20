//! Cells as text, shared by the layers that print cells and those that read them back: the
//! timestamp format (`'YYYY-MM-DD HH:MM:SS[.fraction]'` UTC, nanoseconds since the epoch)
//! and the escaping of one TSV field (what SELECT and DUMP print, what LOAD DATA reads).
//! The HQL shell (`cellar-hql`) and bulk loads (`cellar-load`) both use it; it depends on
//! nothing. Formats: `docs/hql.md`, "Output".

mod escape;
mod timestamp;

pub use escape::{escape_output, escape_output_into, hex_value, push_hex_escape, unescape_output};
pub use timestamp::{format_timestamp, format_timestamp_short, parse_timestamp};
