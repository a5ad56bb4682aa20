//! `BufferedMutator`: HBase's write buffer ("autoflush off"). Puts and deletes collect in
//! memory and go to the server as one atomic `Mutate` once they hold `buffer_bytes`, or
//! on [`BufferedMutator::flush`].
//!
//! A full buffer is sent in the background, as HBase's `BufferedMutator` does: `put`
//! returns while the server applies the batch, and the caller fills the next buffer
//! meanwhile. At most one batch is in flight; the next full buffer first waits for it
//! (docs/design/server-write-path.md).

use cellar_proto::v1 as pb;
use tokio::task::JoinHandle;

use crate::client::Client;
use crate::error::{ClientError, Result};
use crate::types::{Delete, Durability, Mutation, Put};

/// Default buffer: 12 MiB, as HBase's `hbase.client.write.buffer` in the seed.
pub const DEFAULT_BUFFER_BYTES: usize = 12 << 20;

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
    pending: Vec<pb::Mutation>,
    pending_bytes: usize,
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
            pending_bytes: 0,
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

    pub async fn delete(&mut self, delete: Delete) -> Result<()> {
        self.mutate(Mutation::Delete(delete)).await
    }

    /// Buffers a mutation; when the buffer is full, waits for the batch in flight (if
    /// any) and sends this one in the background.
    pub async fn mutate(&mut self, m: Mutation) -> Result<()> {
        self.pending_bytes += m.approx_bytes();
        self.pending.push(m.into_proto());
        if self.pending_bytes >= self.buffer_bytes {
            self.wait_in_flight().await?;
            self.send_pending();
        }
        Ok(())
    }

    /// Sends everything buffered and waits until the server has applied every batch
    /// (each one atomically).
    pub async fn flush(&mut self) -> Result<()> {
        self.wait_in_flight().await?;
        self.send_pending();
        self.wait_in_flight().await
    }

    /// Starts sending the buffer as one `Mutate`, without waiting for the reply.
    fn send_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let req = pb::MutateRequest {
            table: self.table.clone(),
            mutations: std::mem::take(&mut self.pending),
            durability: self.durability.to_proto(),
        };
        self.pending_bytes = 0;
        let mut stub = self.client.stub();
        self.in_flight = Some(tokio::spawn(async move {
            stub.mutate(req).await?;
            Ok(())
        }));
    }

    /// The result of the batch in flight, once the server has answered.
    async fn wait_in_flight(&mut self) -> Result<()> {
        match self.in_flight.take() {
            None => Ok(()),
            Some(task) => task.await.map_err(|e| {
                ClientError::Status(Box::new(tonic::Status::internal(format!(
                    "the task sending a batch failed: {e}"
                ))))
            })?,
        }
    }

    /// Bytes buffered and not yet sent (approximate).
    pub fn buffered_bytes(&self) -> usize {
        self.pending_bytes
    }

    pub fn buffered_mutations(&self) -> usize {
        self.pending.len()
    }
}
