//! The async client: one HTTP/2 channel per `Client` (clones share it), a bearer token on
//! every request, and bounded retries with backoff for idempotent calls.

use std::future::Future;
use std::time::Duration;

use cellar_proto::v1 as pb;
use cellar_proto::v1::cellar_client::CellarClient;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::error::{ClientError, Result};
use crate::mutator::BufferedMutator;
use crate::scan::{RowStream, Scan};
use crate::types::{
    Durability, HqlOutput, LoadOptions, LoadStats, Mutation, ReadOptions, RowResult, TableSchema,
};

/// Bytes per streamed message of a load.
const LOAD_CHUNK_BYTES: usize = 1 << 20;

type Stub = CellarClient<InterceptedService<Channel, TokenInterceptor>>;

/// The channel for calls made without the generated stub (`BufferedMutator`'s `Mutate`).
pub(crate) type RawGrpc = tonic::client::Grpc<InterceptedService<Channel, TokenInterceptor>>;

/// Adds `authorization: Bearer TOKEN` to every request.
#[derive(Clone)]
pub struct TokenInterceptor(Option<MetadataValue<Ascii>>);

impl Interceptor for TokenInterceptor {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// How to reach a server.
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    endpoint: String,
    token: Option<String>,
    tls_ca_pem: Option<Vec<u8>>,
    tls_domain: Option<String>,
    connect_timeout: Duration,
    request_timeout: Option<Duration>,
    max_retries: u32,
    retry_backoff: Duration,
    max_message_bytes: usize,
}

impl ClientBuilder {
    /// The bearer token the server's `--token-file` holds.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Speak TLS, trusting this CA certificate (PEM).
    pub fn tls_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_ca_pem = Some(pem.into());
        self
    }

    /// The name the server's certificate must carry (default: the endpoint's host).
    pub fn tls_domain(mut self, domain: impl Into<String>) -> Self {
        self.tls_domain = Some(domain.into());
        self
    }

    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }

    /// Deadline of each call (a scan: until it starts streaming).
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.request_timeout = Some(d);
        self
    }

    /// Retries of an idempotent call that met UNAVAILABLE (default 3).
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// The first retry's wait; each next one waits twice as long (default 50 ms).
    pub fn retry_backoff(mut self, d: Duration) -> Self {
        self.retry_backoff = d;
        self
    }

    /// Largest message the client sends or accepts (default 256 MiB; the server has its
    /// own `--max-request-bytes`).
    pub fn max_message_bytes(mut self, n: usize) -> Self {
        self.max_message_bytes = n;
        self
    }

    pub async fn connect(self) -> Result<Client> {
        let tls = self.tls_ca_pem.is_some();
        let url = if self.endpoint.contains("://") {
            self.endpoint.clone()
        } else if tls {
            format!("https://{}", self.endpoint)
        } else {
            format!("http://{}", self.endpoint)
        };
        let transport = |source| ClientError::Transport {
            endpoint: url.clone(),
            source,
        };
        let mut endpoint = Endpoint::from_shared(url.clone())
            .map_err(transport)?
            .connect_timeout(self.connect_timeout)
            .tcp_nodelay(true);
        if let Some(t) = self.request_timeout {
            endpoint = endpoint.timeout(t);
        }
        if let Some(pem) = &self.tls_ca_pem {
            // rustls needs one process-wide crypto provider; a program that also links a
            // second one (object_store's aws-lc-rs) makes it refuse to choose. Ring is the
            // one tonic's `tls-ring` names; a provider installed already is kept.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut cfg = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem));
            if let Some(d) = &self.tls_domain {
                cfg = cfg.domain_name(d.clone());
            }
            endpoint = endpoint.tls_config(cfg).map_err(transport)?;
        }
        let channel = endpoint.connect().await.map_err(transport)?;
        let token = match &self.token {
            Some(t) => Some(
                format!("Bearer {t}")
                    .parse::<MetadataValue<Ascii>>()
                    .map_err(|_| {
                        ClientError::InvalidArgument(
                            "the token must be printable ASCII".to_string(),
                        )
                    })?,
            ),
            None => None,
        };
        let raw = tonic::client::Grpc::new(InterceptedService::new(
            channel.clone(),
            TokenInterceptor(token.clone()),
        ))
        .max_decoding_message_size(self.max_message_bytes)
        .max_encoding_message_size(self.max_message_bytes);
        let stub = CellarClient::with_interceptor(channel, TokenInterceptor(token))
            .max_decoding_message_size(self.max_message_bytes)
            .max_encoding_message_size(self.max_message_bytes);
        Ok(Client {
            stub,
            raw,
            max_retries: self.max_retries,
            retry_backoff: self.retry_backoff,
        })
    }
}

/// A connection to a Cellar server. Cheap to clone: clones share one HTTP/2 channel.
#[derive(Clone)]
pub struct Client {
    stub: Stub,
    raw: RawGrpc,
    max_retries: u32,
    retry_backoff: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("max_retries", &self.max_retries)
            .field("retry_backoff", &self.retry_backoff)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects with default options; `endpoint` is `HOST:PORT` or a URL.
    pub async fn connect(endpoint: impl Into<String>) -> Result<Client> {
        Client::builder(endpoint).connect().await
    }

    pub fn builder(endpoint: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            endpoint: endpoint.into(),
            token: None,
            tls_ca_pem: None,
            tls_domain: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: None,
            max_retries: 3,
            retry_backoff: Duration::from_millis(50),
            max_message_bytes: 256 << 20,
        }
    }

    pub(crate) fn stub(&self) -> Stub {
        self.stub.clone()
    }

    pub(crate) fn raw(&self) -> RawGrpc {
        self.raw.clone()
    }

    /// Runs an idempotent call, retrying it after UNAVAILABLE with exponential backoff.
    pub(crate) async fn retrying<T, F, Fut>(&self, mut call: F) -> Result<T>
    where
        F: FnMut(Stub) -> Fut,
        Fut: Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
    {
        let mut wait = self.retry_backoff;
        let mut attempt = 0;
        loop {
            match call(self.stub()).await {
                Ok(r) => return Ok(r.into_inner()),
                Err(s) => {
                    let e = ClientError::from(s);
                    if !e.is_retryable() || attempt >= self.max_retries {
                        return Err(e);
                    }
                    attempt += 1;
                    tokio::time::sleep(wait).await;
                    wait = wait.saturating_mul(2);
                }
            }
        }
    }

    pub async fn list_tables(&self) -> Result<Vec<String>> {
        let r = self
            .retrying(|mut c| async move { c.list_tables(pb::ListTablesRequest {}).await })
            .await?;
        Ok(r.tables)
    }

    /// Creates a table; with `if_not_exists`, an existing one is left as it is.
    pub async fn create_table(&self, schema: &TableSchema, if_not_exists: bool) -> Result<()> {
        let req = pb::CreateTableRequest {
            schema: Some(schema.to_proto()),
            if_not_exists,
        };
        self.stub().create_table(req).await?;
        Ok(())
    }

    pub async fn drop_table(&self, table: &str, if_exists: bool) -> Result<()> {
        let req = pb::DropTableRequest {
            table: table.to_string(),
            if_exists,
        };
        self.stub().drop_table(req).await?;
        Ok(())
    }

    pub async fn describe_table(&self, table: &str) -> Result<TableSchema> {
        let req = pb::DescribeTableRequest {
            table: table.to_string(),
        };
        let s = self
            .retrying(|mut c| {
                let req = req.clone();
                async move { c.describe_table(req).await }
            })
            .await?;
        Ok(TableSchema::from_proto(s))
    }

    /// Applies puts and deletes on any rows of `table` atomically; returns the puts'
    /// timestamps in order. Not retried: a put without a timestamp is not idempotent.
    pub async fn mutate(
        &self,
        table: &str,
        mutations: impl IntoIterator<Item = Mutation>,
        durability: Durability,
    ) -> Result<Vec<u64>> {
        let req = pb::MutateRequest {
            table: table.to_string(),
            mutations: mutations.into_iter().map(Mutation::into_proto).collect(),
            durability: durability.to_proto(),
        };
        Ok(self.stub().mutate(req).await?.into_inner().put_timestamps)
    }

    /// Adds `amount` to an 8-byte big-endian counter (absent = 0); returns the new value.
    pub async fn increment(
        &self,
        table: &str,
        row: impl Into<Vec<u8>>,
        family: &str,
        qualifier: impl Into<Vec<u8>>,
        amount: i64,
        durability: Durability,
    ) -> Result<i64> {
        let req = pb::IncrementRequest {
            table: table.to_string(),
            row: row.into(),
            family: family.to_string(),
            qualifier: qualifier.into(),
            amount,
            durability: durability.to_proto(),
        };
        Ok(self.stub().increment(req).await?.into_inner().value)
    }

    /// Every visible cell of a row; `None` when it has none.
    pub async fn get(&self, table: &str, row: impl Into<Vec<u8>>) -> Result<Option<RowResult>> {
        self.get_with(table, row, &ReadOptions::default()).await
    }

    pub async fn get_with(
        &self,
        table: &str,
        row: impl Into<Vec<u8>>,
        options: &ReadOptions,
    ) -> Result<Option<RowResult>> {
        let req = pb::GetRequest {
            table: table.to_string(),
            row: row.into(),
            columns: options.columns_proto(),
            time_range: options.time_range_proto(),
            max_versions: options.max_versions,
        };
        let r = self
            .retrying(|mut c| {
                let req = req.clone();
                async move { c.get(req).await }
            })
            .await?;
        Ok(r.row.map(RowResult::from_proto))
    }

    /// The rows that have visible cells, in request order, read as of one instant.
    pub async fn multi_get<R: Into<Vec<u8>>>(
        &self,
        table: &str,
        rows: impl IntoIterator<Item = R>,
        options: &ReadOptions,
    ) -> Result<Vec<RowResult>> {
        let req = pb::MultiGetRequest {
            table: table.to_string(),
            rows: rows.into_iter().map(Into::into).collect(),
            columns: options.columns_proto(),
            time_range: options.time_range_proto(),
            max_versions: options.max_versions,
        };
        let r = self
            .retrying(|mut c| {
                let req = req.clone();
                async move { c.multi_get(req).await }
            })
            .await?;
        Ok(r.rows.into_iter().map(RowResult::from_proto).collect())
    }

    /// Starts a scan; its rows arrive as the returned stream is read (the server reads
    /// ahead only as far as HTTP/2 flow control lets it).
    pub async fn scan(&self, table: &str, scan: &Scan) -> Result<RowStream> {
        let req = scan.to_proto(table);
        let stream = self
            .retrying(|mut c| {
                let req = req.clone();
                async move { c.scan(req).await }
            })
            .await?;
        Ok(RowStream::new(stream))
    }

    /// Row keys that cut `table` into about `parts` pieces of similar size.
    pub async fn split_points(&self, table: &str, parts: u32) -> Result<Vec<Vec<u8>>> {
        let req = pb::SplitPointsRequest {
            table: table.to_string(),
            parts,
        };
        let r = self
            .retrying(|mut c| {
                let req = req.clone();
                async move { c.split_points(req).await }
            })
            .await?;
        Ok(r.rows)
    }

    /// Runs HQL statements on the server and collects what the shell would print. Stops
    /// at the first failed statement unless `keep_going`.
    pub async fn hql(
        &self,
        statements: &str,
        durability: Durability,
        keep_going: bool,
    ) -> Result<HqlOutput> {
        let req = pb::HqlRequest {
            statements: statements.to_string(),
            durability: durability.to_proto(),
            keep_going,
        };
        let mut stream = self.stub().hql(req).await?.into_inner();
        let mut out = HqlOutput::default();
        while let Some(piece) = stream.message().await? {
            out.output.push_str(&piece.output);
            if !piece.error.is_empty() {
                out.errors.push(piece.error);
            }
        }
        Ok(out)
    }

    /// Streams TSV data (a header line naming the columns, then lines) from `data` and has
    /// the server bulk-load it atomically.
    pub async fn load<R>(
        &self,
        table: &str,
        options: &LoadOptions,
        mut data: R,
    ) -> Result<LoadStats>
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let header = pb::LoadHeader {
            table: table.to_string(),
            row_key_column: options.row_key_column.clone().unwrap_or_default(),
            timestamp_column: options.timestamp_column.clone().unwrap_or_default(),
            ignore_unknown_columns: options.ignore_unknown_columns,
            skip_bad_lines: options.skip_bad_lines,
            gzip: options.gzip,
        };
        let (tx, rx) = mpsc::channel(2);
        let first = pb::LoadRequest {
            part: Some(pb::load_request::Part::Header(header)),
        };
        tx.send(first)
            .await
            .map_err(|_| ClientError::InvalidArgument("load stream closed".to_string()))?;
        // The reader feeds the request stream; a read error ends it early and is reported
        // after the call (the server then sees a truncated file and the caller an error).
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; LOAD_CHUNK_BYTES];
            loop {
                let n = data.read(&mut buf).await?;
                if n == 0 {
                    return Ok(());
                }
                let part = pb::load_request::Part::Data(buf[..n].to_vec());
                if tx.send(pb::LoadRequest { part: Some(part) }).await.is_err() {
                    return Ok(());
                }
            }
        });
        let reply = self.stub().load(ReceiverStream::new(rx)).await;
        let read: std::io::Result<()> = reader.await.unwrap_or(Ok(()));
        read.map_err(|source| ClientError::Io {
            what: "reading the data to load".to_string(),
            source,
        })?;
        let r = reply?.into_inner();
        Ok(LoadStats {
            lines: r.lines,
            cells: r.cells,
            bad_lines: r.bad_lines,
            bytes: r.bytes,
        })
    }

    /// Loads a local TSV file (`.gz`: gzip-compressed).
    pub async fn load_file(
        &self,
        table: &str,
        options: &LoadOptions,
        path: impl AsRef<std::path::Path>,
    ) -> Result<LoadStats> {
        let path = path.as_ref();
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|source| ClientError::Io {
                what: format!("cannot open {}", path.display()),
                source,
            })?;
        let mut options = options.clone();
        options.gzip |= path.extension().is_some_and(|e| e == "gz");
        self.load(table, &options, file).await
    }

    /// A write buffer on `table` (12 MiB, the server's default durability).
    pub fn buffered_mutator(&self, table: &str) -> BufferedMutator {
        BufferedMutator::new(self.clone(), table)
    }
}
