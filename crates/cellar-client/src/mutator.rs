//! `BufferedMutator`: HBase's write buffer ("autoflush off"). Puts and deletes collect in
//! memory and go to the server as one atomic `Mutate` once they hold `buffer_bytes`, or
//! on [`BufferedMutator::flush`].
//!
//! A full buffer is sent in the background, as HBase's `BufferedMutator` does: `put`
//! returns while the server applies the batch, and the caller fills the next buffer
//! meanwhile. At most one batch is in flight; the next full buffer first waits for it
//! (docs/design/server-write-path.md).
//!
//! The buffer holds the request's bytes: each mutation is encoded as it is buffered
//! ([`cellar_proto::wire`]), so buffering allocates nothing per mutation, and the send
//! only copies the bytes into the call. Two buffers take turns: the one in flight comes
//! back for reuse once its bytes are copied.

use std::sync::{Arc, Mutex};

use cellar_proto::v1 as pb;
use cellar_proto::wire::{encode_request_header, MutationRef, PutRef};
use tokio::task::JoinHandle;
use tonic::codec::{Codec, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::{GrpcMethod, Status};
use tonic_prost::ProstDecoder;

use crate::client::Client;
use crate::error::{ClientError, Result};
use crate::types::{Delete, Durability, Mutation, Put};

/// Default buffer: 12 MiB, as HBase's `hbase.client.write.buffer` in the seed.
pub const DEFAULT_BUFFER_BYTES: usize = 12 << 20;

/// The most a buffer reserves up front.
const MAX_RESERVE_BYTES: usize = 64 << 20;

/// Buffers mutations of one table.
///
/// Call [`BufferedMutator::flush`] before dropping it: an async drop cannot send, so
/// whatever is still buffered is lost (a batch already in flight still completes). If a
/// batch fails, the mutations it carried are dropped (the server applied none of them)
/// and the error is returned by the next call that sends or waits: the `put`/`delete`
/// that fills the buffer again, or `flush`.
pub struct BufferedMutator {
    client: Client,
    table: String,
    durability: Durability,
    buffer_bytes: usize,
    /// The buffered mutations, as `MutateRequest.mutations` entries.
    pending: Vec<u8>,
    pending_count: usize,
    /// A sent buffer, back for reuse.
    spare: Arc<Mutex<Option<Vec<u8>>>>,
    in_flight: Option<JoinHandle<Result<()>>>,
}

impl BufferedMutator {
    pub(crate) fn new(client: Client, table: &str) -> Self {
        BufferedMutator {
            client,
            table: table.to_string(),
            durability: Durability::Default,
            buffer_bytes: DEFAULT_BUFFER_BYTES,
            pending: Vec::new(),
            pending_count: 0,
            spare: Arc::default(),
            in_flight: None,
        }
    }

    /// Sends once this many bytes are buffered.
    pub fn with_buffer_bytes(mut self, n: usize) -> Self {
        self.set_buffer_bytes(n);
        self
    }

    pub fn set_buffer_bytes(&mut self, n: usize) {
        self.buffer_bytes = n.max(1);
    }

    /// The durability of every batch this mutator sends.
    pub fn with_durability(mut self, d: Durability) -> Self {
        self.set_durability(d);
        self
    }

    pub fn set_durability(&mut self, d: Durability) {
        self.durability = d;
    }

    pub async fn put(&mut self, put: Put) -> Result<()> {
        self.mutate(Mutation::Put(put)).await
    }

    /// A put of one cell from borrowed bytes, with the server's timestamp: the same as
    /// `put(Put::new(row, family, qualifier, value))` without building the `Put`.
    pub async fn put_cell(
        &mut self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        value: &[u8],
    ) -> Result<()> {
        self.push(cell(row, family, qualifier, value)).await
    }

    pub async fn delete(&mut self, delete: Delete) -> Result<()> {
        self.mutate(Mutation::Delete(delete)).await
    }

    /// Buffers a mutation; when the buffer is full, waits for the batch in flight (if
    /// any) and sends this one in the background.
    pub async fn mutate(&mut self, m: Mutation) -> Result<()> {
        self.push(m.as_wire()).await
    }

    async fn push(&mut self, m: MutationRef<'_>) -> Result<()> {
        if self.buffer(m) {
            self.send_full().await?;
        }
        Ok(())
    }

    /// Adds `m` to the buffer; true when the buffer is now full ([`Self::send_full`]).
    pub(crate) fn buffer(&mut self, m: MutationRef<'_>) -> bool {
        if self.pending.capacity() == 0 {
            let spare = self.spare.lock().ok().and_then(|mut s| s.take());
            self.pending = spare.unwrap_or_default();
            // A full buffer overshoots by at most one mutation; a very large buffer grows as
            // it fills instead of reserving it all.
            let room = self.buffer_bytes.min(MAX_RESERVE_BYTES);
            self.pending.reserve(room.saturating_add(m.entry_len()));
        }
        m.encode_entry(&mut self.pending);
        self.pending_count += 1;
        self.pending.len() >= self.buffer_bytes
    }

    /// Waits for the batch in flight, then starts sending the buffer.
    pub(crate) async fn send_full(&mut self) -> Result<()> {
        self.wait_in_flight().await?;
        self.send_pending();
        Ok(())
    }

    /// Sends everything buffered and waits until the server has applied every batch
    /// (each one atomically).
    pub async fn flush(&mut self) -> Result<()> {
        self.send_full().await?;
        self.wait_in_flight().await
    }

    /// Starts sending the buffer as one `Mutate`, without waiting for the reply.
    fn send_pending(&mut self) {
        if self.pending_count == 0 {
            return;
        }
        let mut header = Vec::new();
        encode_request_header(&self.table, self.durability.to_proto(), &mut header);
        let request = EncodedRequest {
            header,
            mutations: std::mem::take(&mut self.pending),
        };
        self.pending_count = 0;
        let codec = MutateCodec {
            spare: Arc::clone(&self.spare),
        };
        let mut grpc = self.client.raw();
        self.in_flight = Some(tokio::spawn(async move {
            grpc.ready()
                .await
                .map_err(|e| Status::unknown(format!("the connection is not ready: {e}")))?;
            let mut req = tonic::Request::new(request);
            req.extensions_mut()
                .insert(GrpcMethod::new("cellar.v1.Cellar", "Mutate"));
            let path = PathAndQuery::from_static("/cellar.v1.Cellar/Mutate");
            grpc.unary(req, path, codec).await?;
            Ok(())
        }));
    }

    /// The result of the batch in flight, once the server has answered.
    async fn wait_in_flight(&mut self) -> Result<()> {
        match self.in_flight.take() {
            None => Ok(()),
            Some(task) => task.await.map_err(|e| {
                ClientError::Status(Box::new(Status::internal(format!(
                    "the task sending a batch failed: {e}"
                ))))
            })?,
        }
    }

    /// Bytes buffered and not yet sent (as encoded for the request).
    pub fn buffered_bytes(&self) -> usize {
        self.pending.len()
    }

    pub fn buffered_mutations(&self) -> usize {
        self.pending_count
    }
}

pub(crate) fn cell<'a>(
    row: &'a [u8],
    family: &'a str,
    qualifier: &'a [u8],
    value: &'a [u8],
) -> MutationRef<'a> {
    MutationRef::Put(PutRef {
        row,
        family,
        qualifier,
        timestamp: None,
        value,
    })
}

/// A `MutateRequest` as bytes: its own fields, then its mutations' entries.
struct EncodedRequest {
    header: Vec<u8>,
    mutations: Vec<u8>,
}

/// Sends an [`EncodedRequest`] as it is; decodes the reply with prost.
struct MutateCodec {
    spare: Arc<Mutex<Option<Vec<u8>>>>,
}

impl Codec for MutateCodec {
    type Encode = EncodedRequest;
    type Decode = pb::MutateResponse;
    type Encoder = RequestEncoder;
    type Decoder = ProstDecoder<pb::MutateResponse>;

    fn encoder(&mut self) -> Self::Encoder {
        RequestEncoder {
            spare: Arc::clone(&self.spare),
        }
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder::default()
    }
}

struct RequestEncoder {
    spare: Arc<Mutex<Option<Vec<u8>>>>,
}

impl Encoder for RequestEncoder {
    type Item = EncodedRequest;
    type Error = Status;

    fn encode(&mut self, item: EncodedRequest, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        use prost::bytes::BufMut;
        buf.reserve(item.header.len() + item.mutations.len());
        buf.put_slice(&item.header);
        buf.put_slice(&item.mutations);
        let mut done = item.mutations;
        done.clear();
        if let Ok(mut spare) = self.spare.lock() {
            *spare = Some(done);
        }
        Ok(())
    }
}
