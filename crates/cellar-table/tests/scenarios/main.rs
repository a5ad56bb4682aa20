//! Scenario tests of the table layer, one scenario per module, in one test binary (one
//! link instead of one per file).

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
