//! `cellar serve`: one process that serves one Cellar database over the network.
//!
//! Three listeners share one [`state::ServerState`] (the open `CellStore`, limits, metrics):
//! - [`thrift`]: HBase's Thrift1 gateway, so `happybase` programs work unchanged (buffered
//!   or framed transport, binary or compact protocol, detected per connection);
//! - [`grpc`]: Cellar's own API (`proto/cellar/v1/cellar.proto`), used by `cellar-client`
//!   and the Python client;
//! - [`http`]: REST, `/metrics` (Prometheus), `/health` and the status page.
//!
//! Engine calls block, so every handler runs them on tokio's blocking pool
//! ([`state::ServerState::run_blocking`]); the reactor threads only move bytes. Flags,
//! protocols, semantics and limits: docs/server.md.

pub mod config;
pub mod filter;
pub mod grpc;
pub mod http;
pub mod metrics;
pub mod recent;
pub mod rows;
pub(crate) mod serve;
pub mod state;
pub mod store_args;
pub mod thrift;

pub use config::{Listen, ServeArgs, ServeConfig};
pub use serve::{serve, ServeError, ServerHandle};
pub use store_args::{ObjectStoreArgs, WalArg};
