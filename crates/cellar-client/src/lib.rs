//! Rust client of Cellar's gRPC API (`cellar serve --grpc`).
//!
//! - [`Client`] (async, tokio): table admin, [`Client::mutate`] (atomic batches),
//!   [`Client::increment`], [`Client::get`]/[`Client::multi_get`], streaming
//!   [`Client::scan`], [`Client::split_points`], [`Client::hql`], [`Client::load`].
//!   Idempotent reads and admin lookups are retried after UNAVAILABLE with backoff; one
//!   HTTP/2 channel per client, shared by its clones.
//! - [`BufferedMutator`]: a byte-sized write buffer (12 MiB by default).
//! - [`blocking::Client`]: the same API for programs without an async runtime.
//!
//! ```no_run
//! use cellar_client::{Client, Durability, Put, Scan};
//! # async fn demo() -> cellar_client::Result<()> {
//! let client = Client::connect("127.0.0.1:50051").await?;
//! client.mutate("users", [Put::new("alice", "info", "email", "a@example.com").into()], Durability::Default).await?;
//! let mut rows = client.scan("users", &Scan::new().prefix("al")).await?;
//! while let Some(row) = rows.next_row().await {
//!     println!("{:?}", row?.row);
//! }
//! # Ok(())
//! # }
//! ```

pub mod blocking;
mod client;
mod error;
mod mutator;
mod scan;
mod types;

pub use client::{Client, ClientBuilder};
pub use error::{ClientError, Result};
pub use mutator::{BufferedMutator, DEFAULT_BUFFER_BYTES};
pub use scan::{RowStream, Scan};
pub use tonic::Code;
pub use types::{
    Cell, Column, Compression, Delete, Durability, FamilySchema, HqlOutput, LoadOptions, LoadStats,
    Mutation, Put, ReadOptions, RowResult, TableSchema,
};
