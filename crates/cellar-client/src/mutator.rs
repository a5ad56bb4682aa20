//! `BufferedMutator`: HBase's write buffer ("autoflush off"). Puts and deletes collect in
//! memory and go to the server as one atomic `Mutate` once they hold `buffer_bytes`, or
//! on [`BufferedMutator::flush`].

use cellar_proto::v1 as pb;

use crate::client::Client;
use crate::error::Result;
use crate::types::{Delete, Durability, Mutation, Put};

/// Default buffer: 12 MiB, as HBase's `hbase.client.write.buffer` in the seed.
pub const DEFAULT_BUFFER_BYTES: usize = 12 << 20;

/// Buffers mutations of one table.
///
/// Call [`BufferedMutator::flush`] before dropping it: an async drop cannot send, so
/// whatever is still buffered is lost. If a flush fails, the mutations it carried are
/// dropped and the error says why (the server applied none of them).
pub struct BufferedMutator {
    client: Client,
    table: String,
    durability: Durability,
    buffer_bytes: usize,
    pending: Vec<pb::Mutation>,
    pending_bytes: usize,
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

    /// Buffers a mutation; sends the buffer when it is full.
    pub async fn mutate(&mut self, m: Mutation) -> Result<()> {
        self.pending_bytes += m.approx_bytes();
        self.pending.push(m.into_proto());
        if self.pending_bytes >= self.buffer_bytes {
            self.flush().await?;
        }
        Ok(())
    }

    /// Sends everything buffered as one atomic batch.
    pub async fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let req = pb::MutateRequest {
            table: self.table.clone(),
            mutations: std::mem::take(&mut self.pending),
            durability: self.durability.to_proto(),
        };
        self.pending_bytes = 0;
        self.client.stub().mutate(req).await?;
        Ok(())
    }

    /// Bytes buffered and not yet sent (approximate).
    pub fn buffered_bytes(&self) -> usize {
        self.pending_bytes
    }

    pub fn buffered_mutations(&self) -> usize {
        self.pending.len()
    }
}
