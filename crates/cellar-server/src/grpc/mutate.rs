//! `Mutate`: a request's mutations go straight from its bytes into one table batch.
//!
//! [`serve`] answers `/cellar.v1.Cellar/Mutate` ahead of the generated service (the guard,
//! `auth.rs`, hands the call over). Its codec yields the request's bytes as they arrived
//! (one contiguous buffer, not copied), and [`cellar_proto::wire`] reads the mutations in
//! place, so a 12 MiB batch of ~200 K puts builds no message tree and frees nothing per put
//! (docs/design/server-write-path.md). The generated service's `mutate` is never reached.

use std::convert::Infallible;
use std::sync::Arc;

use cellar_proto::v1 as pb;
use cellar_proto::wire::{MutateRequestRef, MutationRef};
use cellar_table::MutationBatch;
use prost::bytes::{Buf, Bytes};
use prost::Message;
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic::codegen::{http, BoxFuture};
use tonic::server::UnaryService;
use tonic::{Request, Response, Status};
use tonic_prost::ProstEncoder;

use super::convert::{self, invalid, ApiError};
use crate::metrics::Protocol;
use crate::state::ServerState;

/// The method's HTTP/2 path.
pub const PATH: &str = "/cellar.v1.Cellar/Mutate";

/// Checks every mutation of `req` into one batch, then writes it atomically; returns the
/// puts' timestamps in order. `bytes` (the request's size) sizes the batch's buffer.
fn apply(
    state: &ServerState,
    req: MutateRequestRef<'_>,
    bytes: usize,
) -> Result<pb::MutateResponse, ApiError> {
    convert::require_table(req.table)?;
    let durability = convert::durability(req.durability, state)?;
    let table = state.table(req.table)?;
    let mut batch = table.mutation_batch(bytes);
    for (i, m) in req.mutations().enumerate() {
        let m = m.map_err(|e| invalid(e.to_string()))?;
        add(&mut batch, m, i)?;
    }
    let put_timestamps = batch.write(durability)?;
    Ok(pb::MutateResponse { put_timestamps })
}

/// Adds mutation `index` to `batch`, or says why it cannot be written.
fn add(
    batch: &mut MutationBatch<'_>,
    m: Option<MutationRef<'_>>,
    index: usize,
) -> Result<(), ApiError> {
    match m {
        Some(MutationRef::Put(p)) => {
            if p.family.is_empty() {
                return Err(invalid(format!("mutation {index}: a put needs a family")).into());
            }
            batch.put(p.row, p.family, p.qualifier, p.timestamp, p.value)?;
        }
        Some(MutationRef::Delete(d)) => match (d.family.is_empty(), d.qualifier, d.timestamp) {
            (true, None, None) => batch.delete_row(d.row)?,
            (true, _, _) => {
                return Err(invalid(format!(
                    "mutation {index}: a delete with a qualifier or timestamp needs a family"
                ))
                .into())
            }
            (false, None, None) => batch.delete_family(d.row, d.family)?,
            (false, None, Some(_)) => {
                return Err(invalid(format!(
                    "mutation {index}: a delete with a timestamp needs a qualifier (it deletes \
                     one version of one column)"
                ))
                .into())
            }
            (false, Some(q), None) => batch.delete_column(d.row, d.family, q)?,
            (false, Some(q), Some(ts)) => batch.delete_version(d.row, d.family, q, ts)?,
        },
        None => {
            return Err(invalid(format!("mutation {index} is neither a put nor a delete")).into())
        }
    }
    Ok(())
}

/// Serves one `Mutate` call (the guard has admitted it).
pub fn serve(
    state: Arc<ServerState>,
    req: http::Request<Body>,
) -> BoxFuture<http::Response<Body>, Infallible> {
    Box::pin(async move {
        let limits = &state.config.limits;
        // The limits the generated service applies (grpc/mod.rs); no compression, as there.
        let mut grpc = tonic::server::Grpc::new(WireCodec).apply_max_message_size_config(
            Some(limits.max_request_bytes),
            Some(limits.max_request_bytes.max(limits.max_reply_bytes * 2)),
        );
        Ok(grpc.unary(Method(Arc::clone(&state)), req).await)
    })
}

/// The `Mutate` handler over a request's bytes.
struct Method(Arc<ServerState>);

impl UnaryService<Bytes> for Method {
    type Response = pb::MutateResponse;
    type Future = BoxFuture<Response<pb::MutateResponse>, Status>;

    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        let state = Arc::clone(&self.0);
        Box::pin(async move {
            let bytes = request.into_inner();
            state.metrics.received(Protocol::Grpc, bytes.len());
            let reply = state
                .run_blocking(Protocol::Grpc, "Mutate", move |state| {
                    let req =
                        MutateRequestRef::parse(&bytes).map_err(|e| invalid(e.to_string()))?;
                    apply(state, req, bytes.len())
                })
                .await?;
            state.metrics.sent(Protocol::Grpc, reply.encoded_len());
            Ok(Response::new(reply))
        })
    }
}

/// Requests as their bytes; replies through prost.
struct WireCodec;

impl Codec for WireCodec {
    type Encode = pb::MutateResponse;
    type Decode = Bytes;
    type Encoder = ProstEncoder<pb::MutateResponse>;
    type Decoder = WireDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        WireDecoder
    }
}

struct WireDecoder;

impl Decoder for WireDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        // tonic holds a whole message in one buffer: this splits it off without a copy.
        Ok(Some(buf.copy_to_bytes(buf.remaining())))
    }
}
