//! The blocking client: the async [`crate::Client`] driven by a small runtime of its own,
//! for programs without tokio. Do not call it from inside an async runtime (it blocks the
//! thread; use the async client there).

use std::path::Path;
use std::sync::Arc;

use cellar_proto::wire::MutationRef;
use tokio::runtime::Runtime;

use crate::error::{ClientError, Result};
use crate::mutator::cell;
use crate::scan::{RowStream, Scan};
use crate::types::{
    Delete, Durability, HqlOutput, LoadOptions, LoadStats, Mutation, Put, ReadOptions, RowResult,
    TableSchema,
};

/// A blocking connection to a Cellar server. Cheap to clone; usable from many threads.
#[derive(Clone, Debug)]
pub struct Client {
    runtime: Arc<Runtime>,
    inner: crate::Client,
}

fn runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("cellar-client")
        .enable_all()
        .build()
        .map_err(|source| ClientError::Io {
            what: "cannot start the blocking client's runtime".to_string(),
            source,
        })
}

impl Client {
    /// Connects with default options; `endpoint` is `HOST:PORT` or a URL.
    pub fn connect(endpoint: impl Into<String>) -> Result<Client> {
        Client::connect_with(crate::Client::builder(endpoint))
    }

    /// Connects with the options of an async client's builder.
    pub fn connect_with(builder: crate::ClientBuilder) -> Result<Client> {
        let runtime = runtime()?;
        let inner = runtime.block_on(builder.connect())?;
        Ok(Client {
            runtime: Arc::new(runtime),
            inner,
        })
    }

    /// The async client underneath (sharing the connection).
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    pub fn list_tables(&self) -> Result<Vec<String>> {
        self.runtime.block_on(self.inner.list_tables())
    }

    pub fn create_table(&self, schema: &TableSchema, if_not_exists: bool) -> Result<()> {
        self.runtime
            .block_on(self.inner.create_table(schema, if_not_exists))
    }

    pub fn drop_table(&self, table: &str, if_exists: bool) -> Result<()> {
        self.runtime
            .block_on(self.inner.drop_table(table, if_exists))
    }

    pub fn describe_table(&self, table: &str) -> Result<TableSchema> {
        self.runtime.block_on(self.inner.describe_table(table))
    }

    pub fn mutate(
        &self,
        table: &str,
        mutations: impl IntoIterator<Item = Mutation>,
        durability: Durability,
    ) -> Result<Vec<u64>> {
        self.runtime
            .block_on(self.inner.mutate(table, mutations, durability))
    }

    pub fn put(&self, table: &str, put: Put, durability: Durability) -> Result<u64> {
        let ts = self.mutate(table, [Mutation::Put(put)], durability)?;
        Ok(ts.first().copied().unwrap_or_default())
    }

    pub fn delete(&self, table: &str, delete: Delete, durability: Durability) -> Result<()> {
        self.mutate(table, [Mutation::Delete(delete)], durability)?;
        Ok(())
    }

    pub fn increment(
        &self,
        table: &str,
        row: impl Into<Vec<u8>>,
        family: &str,
        qualifier: impl Into<Vec<u8>>,
        amount: i64,
        durability: Durability,
    ) -> Result<i64> {
        self.runtime.block_on(
            self.inner
                .increment(table, row, family, qualifier, amount, durability),
        )
    }

    pub fn get(&self, table: &str, row: impl Into<Vec<u8>>) -> Result<Option<RowResult>> {
        self.runtime.block_on(self.inner.get(table, row))
    }

    pub fn get_with(
        &self,
        table: &str,
        row: impl Into<Vec<u8>>,
        options: &ReadOptions,
    ) -> Result<Option<RowResult>> {
        self.runtime
            .block_on(self.inner.get_with(table, row, options))
    }

    pub fn multi_get<R: Into<Vec<u8>>>(
        &self,
        table: &str,
        rows: impl IntoIterator<Item = R>,
        options: &ReadOptions,
    ) -> Result<Vec<RowResult>> {
        self.runtime
            .block_on(self.inner.multi_get(table, rows, options))
    }

    /// A scan's rows, read as the iterator advances.
    pub fn scan(&self, table: &str, scan: &Scan) -> Result<RowIter> {
        let stream = self.runtime.block_on(self.inner.scan(table, scan))?;
        Ok(RowIter {
            runtime: Arc::clone(&self.runtime),
            stream,
        })
    }

    pub fn split_points(&self, table: &str, parts: u32) -> Result<Vec<Vec<u8>>> {
        self.runtime.block_on(self.inner.split_points(table, parts))
    }

    pub fn hql(
        &self,
        statements: &str,
        durability: Durability,
        keep_going: bool,
    ) -> Result<HqlOutput> {
        self.runtime
            .block_on(self.inner.hql(statements, durability, keep_going))
    }

    pub fn load_file(
        &self,
        table: &str,
        options: &LoadOptions,
        path: impl AsRef<Path>,
    ) -> Result<LoadStats> {
        self.runtime
            .block_on(self.inner.load_file(table, options, path))
    }

    pub fn load_bytes(
        &self,
        table: &str,
        options: &LoadOptions,
        data: Vec<u8>,
    ) -> Result<LoadStats> {
        self.runtime
            .block_on(self.inner.load(table, options, std::io::Cursor::new(data)))
    }

    /// A write buffer on `table` (12 MiB, the server's default durability).
    pub fn buffered_mutator(&self, table: &str) -> BufferedMutator {
        BufferedMutator {
            runtime: Arc::clone(&self.runtime),
            inner: self.inner.buffered_mutator(table),
        }
    }
}

/// The rows of a blocking scan.
#[derive(Debug)]
pub struct RowIter {
    runtime: Arc<Runtime>,
    stream: RowStream,
}

impl RowIter {
    /// Messages received so far (each a chunk of whole rows).
    pub fn messages_received(&self) -> u64 {
        self.stream.messages_received()
    }
}

impl Iterator for RowIter {
    type Item = Result<RowResult>;

    fn next(&mut self) -> Option<Self::Item> {
        self.runtime.block_on(self.stream.next_row())
    }
}

/// The blocking [`crate::BufferedMutator`]. Dropping it flushes what is buffered, but
/// cannot report an error: call [`BufferedMutator::flush`] first to know.
pub struct BufferedMutator {
    runtime: Arc<Runtime>,
    inner: crate::BufferedMutator,
}

impl BufferedMutator {
    pub fn with_buffer_bytes(mut self, n: usize) -> Self {
        self.inner.set_buffer_bytes(n);
        self
    }

    pub fn with_durability(mut self, d: Durability) -> Self {
        self.inner.set_durability(d);
        self
    }

    // A mutation that leaves the buffer short of full only appends bytes, without
    // entering the runtime.
    pub fn put(&mut self, put: Put) -> Result<()> {
        self.mutate(Mutation::Put(put))
    }

    /// See [`crate::BufferedMutator::put_cell`].
    pub fn put_cell(
        &mut self,
        row: &[u8],
        family: &str,
        qualifier: &[u8],
        value: &[u8],
    ) -> Result<()> {
        self.push(cell(row, family, qualifier, value))
    }

    pub fn delete(&mut self, delete: Delete) -> Result<()> {
        self.mutate(Mutation::Delete(delete))
    }

    pub fn mutate(&mut self, m: Mutation) -> Result<()> {
        self.push(m.as_wire())
    }

    fn push(&mut self, m: MutationRef<'_>) -> Result<()> {
        if self.inner.buffer(m) {
            self.runtime.block_on(self.inner.send_full())?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<()> {
        self.runtime.block_on(self.inner.flush())
    }

    pub fn buffered_bytes(&self) -> usize {
        self.inner.buffered_bytes()
    }
}

impl Drop for BufferedMutator {
    fn drop(&mut self) {
        if self.inner.buffered_mutations() > 0 {
            let _ = self.runtime.block_on(self.inner.flush());
        }
    }
}
