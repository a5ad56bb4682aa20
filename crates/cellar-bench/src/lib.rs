//! `cellar-bench` as a library: the [`engine::Engine`] trait and its adapters
//! ([`engines`]), the suites (each a subcommand of the binary, in a module of its own), the
//! one child-process protocol ([`child`]), the one result record every suite writes
//! ([`record::Record`]) and the report that reads it ([`report`]). The binary (`main.rs`)
//! is only the command line. See docs/benchmarks.md.

pub mod child;
mod command;
pub mod db;
pub mod dfsio;
pub mod elliptics;
pub mod engine;
pub mod engines;
pub mod error;
mod fio;
pub mod gen_aol;
pub mod growth;
pub mod hypertable;
pub mod import;
mod java;
mod keygen;
pub mod mapfile;
mod measure;
pub mod objstore;
mod peer_keys;
pub mod peers;
mod procfs;
pub mod record;
pub mod report;
pub mod server;
mod suite;
pub mod ycsb;

pub use crate::command::command_line;
