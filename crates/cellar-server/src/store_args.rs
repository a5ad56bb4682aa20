//! The command-line flags that say how to reach a database in an object store
//! (`--db s3://bucket/prefix`), shared by every `cellar` subcommand that opens one.
//! Credentials come from the environment, as AWS tools read them (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`); the flags override region
//! and endpoint. A local directory ignores them all.

use std::path::PathBuf;

use cellar_engine::{ObjectStoreOptions, Options, WalMode};

/// Where the WAL of a database in an object store lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WalArg {
    /// On this machine's disk: fast; an acknowledged write survives a crash or a power
    /// cut but not the loss of the machine
    #[default]
    Local,
    /// In the bucket (group commit): a write acknowledged with sync survives the loss of
    /// the machine
    Object,
}

/// Flags for `--db s3://bucket/prefix`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ObjectStoreArgs {
    /// With --db s3://...: where the WAL lives (`local` or `object`)
    #[arg(long, value_enum, default_value = "local")]
    pub wal: WalArg,
    /// With --db s3://...: local directory for the disk cache of SST data and the local
    /// WAL; one per database [default: ~/.cache/cellar/BUCKET/PREFIX]
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// With --db s3://...: the disk cache's budget, in MiB
    #[arg(long, value_name = "MIB", default_value_t = 8192)]
    pub cache_mb: u64,
    /// The S3 endpoint, e.g. http://127.0.0.1:8333 (overrides AWS_ENDPOINT_URL)
    #[arg(long, value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// The S3 region (overrides AWS_REGION; default us-east-1)
    #[arg(long, value_name = "REGION")]
    pub s3_region: Option<String>,
    /// Open a store that does not enforce conditional creates (If-None-Match: *) anyway.
    /// Only if nothing else ever writes this prefix: two writers would corrupt it
    #[arg(long)]
    pub assume_single_writer: bool,
}

impl ObjectStoreArgs {
    /// Engine options carrying these settings (the defaults otherwise).
    pub fn options(&self) -> Options {
        Options {
            object_store: ObjectStoreOptions {
                wal: match self.wal {
                    WalArg::Local => WalMode::Local,
                    WalArg::Object => WalMode::Object,
                },
                cache_dir: self.cache_dir.clone(),
                cache_bytes: self.cache_mb.saturating_mul(1 << 20),
                endpoint: self.s3_endpoint.clone(),
                region: self.s3_region.clone(),
                assume_single_writer: self.assume_single_writer,
                ..ObjectStoreOptions::default()
            },
            ..Options::default()
        }
    }
}
