//! Scenario tests of the table layer, one scenario per module, in one test binary (one
//! link instead of one per file).

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod catalog;
mod ddl_faults;
mod drop_table;
mod max_versions;
mod orphans;
mod scan;
mod timestamps;
mod ttl;
mod writer;
