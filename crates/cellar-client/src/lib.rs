//! Rust client of Cellar's gRPC API (`cellar serve --grpc`).
