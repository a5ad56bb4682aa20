//! Cellar's gRPC API, generated from `proto/cellar/v1/cellar.proto` (the contract shared
//! with the Python client in `clients/python`). Semantics: docs/server.md.

/// Package `cellar.v1`.
#[allow(missing_docs, clippy::all)]
pub mod v1 {
    tonic::include_proto!("cellar.v1");
}

pub mod wire;
