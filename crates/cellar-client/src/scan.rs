//! Scans: the options ([`Scan`]) and the rows as they stream in ([`RowStream`]).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use cellar_proto::v1 as pb;
use tokio_stream::Stream;

use crate::error::{ClientError, Result};
use crate::types::{time_range_proto, Column, RowResult};

/// What a scan reads. The default reads every row of the table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Inclusive (reversed: the upper end); empty = from the first row.
    pub start_row: Vec<u8>,
    /// Exclusive (reversed: the lower end); empty = to the last row.
    pub stop_row: Vec<u8>,
    pub prefix: Vec<u8>,
    pub columns: Vec<Column>,
    pub min_timestamp: u64,
    /// Exclusive; 0 = no upper bound.
    pub max_timestamp: u64,
    /// 0: each family's MAX_VERSIONS.
    pub max_versions: u32,
    /// 0: no limit.
    pub limit: u64,
    pub reverse: bool,
    /// HBase's filter language, e.g. `PrefixFilter('a') AND KeyOnlyFilter()`.
    pub filter: String,
    /// Rows per streamed message; 0 = the server's choice.
    pub batch_rows: u32,
}

impl Scan {
    pub fn new() -> Scan {
        Scan::default()
    }

    pub fn start(mut self, row: impl Into<Vec<u8>>) -> Self {
        self.start_row = row.into();
        self
    }

    pub fn stop(mut self, row: impl Into<Vec<u8>>) -> Self {
        self.stop_row = row.into();
        self
    }

    pub fn prefix(mut self, prefix: impl Into<Vec<u8>>) -> Self {
        self.prefix = prefix.into();
        self
    }

    pub fn columns(mut self, columns: impl IntoIterator<Item = Column>) -> Self {
        self.columns.extend(columns);
        self
    }

    /// Only versions with `min <= timestamp < max` (`max` 0: no upper bound).
    pub fn time_range(mut self, min: u64, max: u64) -> Self {
        self.min_timestamp = min;
        self.max_timestamp = max;
        self
    }

    pub fn max_versions(mut self, n: u32) -> Self {
        self.max_versions = n;
        self
    }

    pub fn limit(mut self, n: u64) -> Self {
        self.limit = n;
        self
    }

    pub fn reverse(mut self) -> Self {
        self.reverse = true;
        self
    }

    pub fn filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = filter.into();
        self
    }

    pub fn batch_rows(mut self, n: u32) -> Self {
        self.batch_rows = n;
        self
    }

    pub(crate) fn to_proto(&self, table: &str) -> pb::ScanRequest {
        pb::ScanRequest {
            table: table.to_string(),
            start_row: self.start_row.clone(),
            stop_row: self.stop_row.clone(),
            prefix: self.prefix.clone(),
            columns: self.columns.iter().map(Column::to_proto).collect(),
            time_range: time_range_proto(self.min_timestamp, self.max_timestamp),
            max_versions: self.max_versions,
            limit: self.limit,
            reverse: self.reverse,
            filter: self.filter.clone(),
            batch_rows: self.batch_rows,
        }
    }
}

/// A scan's rows, in order, as the server streams them. Dropping it ends the scan on the
/// server.
pub struct RowStream {
    inner: tonic::Streaming<pb::ScanResponse>,
    buffered: VecDeque<RowResult>,
    messages: u64,
}

impl std::fmt::Debug for RowStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowStream")
            .field("buffered_rows", &self.buffered.len())
            .field("messages", &self.messages)
            .finish()
    }
}

impl RowStream {
    pub(crate) fn new(inner: tonic::Streaming<pb::ScanResponse>) -> Self {
        RowStream {
            inner,
            buffered: VecDeque::new(),
            messages: 0,
        }
    }

    /// The next row; `None` at the end of the scan.
    pub async fn next_row(&mut self) -> Option<Result<RowResult>> {
        loop {
            if let Some(row) = self.buffered.pop_front() {
                return Some(Ok(row));
            }
            match self.inner.message().await {
                Ok(Some(m)) => self.take(m),
                Ok(None) => return None,
                Err(s) => return Some(Err(ClientError::from(s))),
            }
        }
    }

    /// Reads the rest of the scan.
    pub async fn collect_rows(mut self) -> Result<Vec<RowResult>> {
        let mut rows = Vec::new();
        while let Some(row) = self.next_row().await {
            rows.push(row?);
        }
        Ok(rows)
    }

    /// Messages received so far (each a chunk of whole rows).
    pub fn messages_received(&self) -> u64 {
        self.messages
    }

    fn take(&mut self, m: pb::ScanResponse) {
        self.messages += 1;
        self.buffered
            .extend(m.rows.into_iter().map(RowResult::from_proto));
    }
}

impl Stream for RowStream {
    type Item = Result<RowResult>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(row) = self.buffered.pop_front() {
                return Poll::Ready(Some(Ok(row)));
            }
            match Pin::new(&mut self.inner).poll_next(cx) {
                Poll::Ready(Some(Ok(m))) => self.take(m),
                Poll::Ready(Some(Err(s))) => return Poll::Ready(Some(Err(ClientError::from(s)))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
