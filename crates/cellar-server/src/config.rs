//! `cellar serve`'s flags ([`ServeArgs`]) and the checked configuration they become
//! ([`ServeConfig`]). Every limit has a flag, a default meant for production, and a metric
//! that shows when it is hit (docs/server.md, "Limits").

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use cellar_engine::Durability;

/// The database directory the shell, `cellar load` and `cellar serve` use by default.
pub const DEFAULT_DB: &str = "./cellar-data";

/// Where one listener listens, or that it is turned off (`none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    Off,
    At(SocketAddr),
}

impl std::str::FromStr for Listen {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("none") {
            return Ok(Listen::Off);
        }
        s.parse::<SocketAddr>().map(Listen::At).map_err(|e| {
            format!("{s:?} is not an address (HOST:PORT, e.g. 127.0.0.1:9090) or `none`: {e}")
        })
    }
}

impl Listen {
    pub fn addr(&self) -> Option<SocketAddr> {
        match self {
            Listen::Off => None,
            Listen::At(a) => Some(*a),
        }
    }
}

/// How writes that do not name a durability are made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DurabilityArg {
    /// In the server process: lost if it crashes
    Buffered,
    /// Written to the OS before the reply: survives a crash of the server
    Flush,
    /// fdatasync'd before the reply: survives power loss
    Sync,
}

impl From<DurabilityArg> for Durability {
    fn from(d: DurabilityArg) -> Durability {
        match d {
            DurabilityArg::Buffered => Durability::Buffered,
            DurabilityArg::Flush => Durability::Flush,
            DurabilityArg::Sync => Durability::Sync,
        }
    }
}

/// The flags of `cellar serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Database directory (created if missing), or s3://bucket/prefix for a database in an
    /// S3-compatible object store; the one `cellar shell` and `cellar load` use
    #[arg(long, value_name = "PATH|URL", default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// Serve a read-only follower of the s3:// database: it polls the writer's manifest
    /// (and, with --wal object, its WAL) and refuses writes
    #[arg(long)]
    pub follow: bool,
    #[command(flatten)]
    pub store: crate::store_args::ObjectStoreArgs,
    /// HBase Thrift1 gateway (happybase): HOST:PORT or `none`
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9090")]
    pub thrift: Listen,
    /// gRPC API (cellar-client, the Python client): HOST:PORT or `none`
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    pub grpc: Listen,
    /// REST, /metrics, /health and the status page: HOST:PORT or `none`
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub http: Listen,
    /// File holding the bearer token gRPC and HTTP requests must carry
    /// (`authorization: Bearer TOKEN`); required to listen beyond loopback
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Allow the Thrift gateway on a non-loopback address (Thrift1 has no credentials)
    #[arg(long)]
    pub thrift_insecure: bool,
    /// TLS certificate chain (PEM) for gRPC and HTTP; needs --tls-key
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) for gRPC and HTTP; needs --tls-cert
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Durability of writes that do not choose one (happybase's writeToWAL=true included)
    #[arg(long, value_enum, default_value = "flush")]
    pub durability: DurabilityArg,
    /// On SIGTERM/SIGINT, how long in-flight requests may take before the server closes
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub shutdown_timeout: u64,
    /// Log a line for every request slower than this
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub slow_ms: u64,
    /// Open connections, all protocols together; more are refused with a clear error
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_connections: usize,
    /// Largest Thrift message, gRPC request or REST body accepted
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub max_request_bytes: usize,
    /// Open scanners per Thrift connection
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_scanners_per_connection: usize,
    /// Open scanners in the whole server
    #[arg(long, value_name = "N", default_value_t = 16384)]
    pub max_scanners: usize,
    /// A scanner not read for this long is closed (its next read gets an IllegalArgument)
    #[arg(long, value_name = "SECS", default_value_t = 3600)]
    pub scanner_idle_timeout: u64,
    /// Bytes of rows one scannerGetList reply or gRPC scan message carries at most (a
    /// reply holds fewer rows rather than grow past it; at least one row is returned)
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    pub max_reply_bytes: usize,
    /// Deadline of one gRPC or REST request (a streamed scan: of each message)
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub request_timeout: u64,
    /// Close a Thrift or HTTP connection that sends nothing for this long (0 = never)
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    pub idle_timeout: u64,
}

/// The checked configuration of a server.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub db: PathBuf,
    /// How to reach a database in an object store.
    pub store: crate::store_args::ObjectStoreArgs,
    /// Serve a read-only follower (`CellStore::open_follower`).
    pub follow: bool,
    pub thrift: Listen,
    pub grpc: Listen,
    pub http: Listen,
    /// The bearer token gRPC and HTTP require, if any.
    pub token: Option<String>,
    pub tls: Option<TlsFiles>,
    pub durability: Durability,
    pub shutdown_timeout: Duration,
    pub slow: Duration,
    pub limits: Limits,
}

#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Bounds on what one client can make the server hold.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub max_request_bytes: usize,
    pub max_scanners_per_connection: usize,
    pub max_scanners: usize,
    pub scanner_idle_timeout: Duration,
    pub max_reply_bytes: usize,
    pub request_timeout: Duration,
    /// `None`: connections are never cut for being idle.
    pub idle_timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            max_request_bytes: 64 << 20,
            max_scanners_per_connection: 256,
            max_scanners: 16384,
            scanner_idle_timeout: Duration::from_secs(3600),
            max_reply_bytes: 4 << 20,
            request_timeout: Duration::from_secs(300),
            idle_timeout: None,
        }
    }
}

/// A configuration that cannot be served, and what to change.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "{listener} would listen on {addr}, beyond loopback: give --token-file so that every \
         request must carry a token (or listen on 127.0.0.1)"
    )]
    NeedsToken {
        listener: &'static str,
        addr: SocketAddr,
    },
    #[error(
        "the Thrift gateway would listen on {0}, beyond loopback, and Thrift1 has no \
         credentials: add --thrift-insecure to accept that (and --token-file), or listen \
         on 127.0.0.1"
    )]
    ThriftInsecure(SocketAddr),
    #[error("cannot read the token file {path}: {source}")]
    TokenFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the token file {0} is empty")]
    EmptyToken(PathBuf),
    #[error("every listener is `none`: nothing to serve")]
    NothingToServe,
    #[error("{0} must be at least 1")]
    Zero(&'static str),
}

impl ServeArgs {
    /// Checks the flags and reads the token file.
    pub fn into_config(self) -> Result<ServeConfig, ConfigError> {
        if [self.thrift, self.grpc, self.http]
            .iter()
            .all(|l| *l == Listen::Off)
        {
            return Err(ConfigError::NothingToServe);
        }
        let token = match &self.token_file {
            Some(path) => Some(read_token(path)?),
            None => None,
        };
        for (listener, l) in [
            ("the Thrift gateway", self.thrift),
            ("gRPC", self.grpc),
            ("HTTP", self.http),
        ] {
            let Some(addr) = l.addr() else { continue };
            if addr.ip().is_loopback() {
                continue;
            }
            if token.is_none() {
                return Err(ConfigError::NeedsToken { listener, addr });
            }
        }
        if let Some(addr) = self.thrift.addr() {
            if !addr.ip().is_loopback() && !self.thrift_insecure {
                return Err(ConfigError::ThriftInsecure(addr));
            }
        }
        for (name, v) in [
            ("--max-connections", self.max_connections),
            ("--max-request-bytes", self.max_request_bytes),
            (
                "--max-scanners-per-connection",
                self.max_scanners_per_connection,
            ),
            ("--max-scanners", self.max_scanners),
            ("--max-reply-bytes", self.max_reply_bytes),
        ] {
            if v == 0 {
                return Err(ConfigError::Zero(name));
            }
        }
        let tls = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            _ => None,
        };
        Ok(ServeConfig {
            db: self.db,
            store: self.store,
            follow: self.follow,
            thrift: self.thrift,
            grpc: self.grpc,
            http: self.http,
            token,
            tls,
            durability: self.durability.into(),
            shutdown_timeout: Duration::from_secs(self.shutdown_timeout),
            slow: Duration::from_millis(self.slow_ms),
            limits: Limits {
                max_connections: self.max_connections,
                max_request_bytes: self.max_request_bytes,
                max_scanners_per_connection: self.max_scanners_per_connection,
                max_scanners: self.max_scanners,
                scanner_idle_timeout: Duration::from_secs(self.scanner_idle_timeout.max(1)),
                max_reply_bytes: self.max_reply_bytes,
                request_timeout: Duration::from_secs(self.request_timeout.max(1)),
                idle_timeout: (self.idle_timeout > 0)
                    .then(|| Duration::from_secs(self.idle_timeout)),
            },
        })
    }
}

impl ServeConfig {
    /// A configuration for tests and embedding: every listener on an ephemeral loopback
    /// port, default limits, no token.
    pub fn local(db: impl Into<PathBuf>) -> ServeConfig {
        let any = Listen::At(SocketAddr::from(([127, 0, 0, 1], 0)));
        ServeConfig {
            db: db.into(),
            store: Default::default(),
            follow: false,
            thrift: any,
            grpc: any,
            http: any,
            token: None,
            tls: None,
            durability: Durability::Flush,
            shutdown_timeout: Duration::from_secs(30),
            slow: Duration::from_millis(100),
            limits: Limits::default(),
        }
    }
}

fn read_token(path: &std::path::Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::TokenFile {
        path: path.to_path_buf(),
        source,
    })?;
    let token = text.trim().to_string();
    if token.is_empty() {
        return Err(ConfigError::EmptyToken(path.to_path_buf()));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn parse(args: &[&str]) -> Result<ServeConfig, ConfigError> {
        let mut argv = vec!["serve"];
        argv.extend_from_slice(args);
        Cli::parse_from(argv).args.into_config()
    }

    #[test]
    fn defaults_listen_on_loopback() {
        let c = parse(&[]).expect("defaults are valid");
        assert_eq!(c.thrift.addr().map(|a| a.port()), Some(9090));
        assert_eq!(c.grpc.addr().map(|a| a.port()), Some(50051));
        assert_eq!(c.http.addr().map(|a| a.port()), Some(8080));
        assert!(c.token.is_none());
        assert!(c.limits.idle_timeout.is_none());
    }

    #[test]
    fn beyond_loopback_needs_a_token_and_thrift_needs_insecure() {
        let e = parse(&["--grpc", "0.0.0.0:50051"]).expect_err("no token");
        assert!(matches!(e, ConfigError::NeedsToken { .. }), "{e}");
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("token");
        std::fs::write(&token, "s3cret\n").expect("write token");
        let t = token.to_str().expect("utf-8 path");
        let c = parse(&["--grpc", "0.0.0.0:50051", "--token-file", t]).expect("with token");
        assert_eq!(c.token.as_deref(), Some("s3cret"));
        let e = parse(&["--thrift", "0.0.0.0:9090", "--token-file", t]).expect_err("insecure");
        assert!(matches!(e, ConfigError::ThriftInsecure(_)), "{e}");
        parse(&[
            "--thrift",
            "0.0.0.0:9090",
            "--token-file",
            t,
            "--thrift-insecure",
        ])
        .expect("explicitly insecure");
    }

    #[test]
    fn none_turns_a_listener_off_but_not_all() {
        let c = parse(&["--thrift", "none"]).expect("valid");
        assert_eq!(c.thrift, Listen::Off);
        let e = parse(&["--thrift", "none", "--grpc", "none", "--http", "none"]);
        assert!(matches!(e, Err(ConfigError::NothingToServe)));
    }
}
