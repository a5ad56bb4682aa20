//! Starting and stopping the server: open the database, bind the listeners, run each on
//! the shared tokio runtime; on shutdown stop accepting, let in-flight requests finish
//! (bounded by `--shutdown-timeout`), close scanners, flush and close the database.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cellar_table::CellStore;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::{Listen, ServeConfig};
use crate::state::ServerState;

/// Why the server could not start, or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot open the database {path}: {source}")]
    Open {
        path: std::path::PathBuf,
        source: cellar_table::TableError,
    },
    #[error("cannot listen on {addr} for {listener}: {source} (is another server running? pick another port or `none`)")]
    Bind {
        listener: &'static str,
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    #[error("{listener} failed: {message}")]
    Listener {
        listener: &'static str,
        message: String,
    },
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("flushing the database at shutdown failed: {0}")]
    Flush(cellar_engine::Error),
}

/// A running server: its bound addresses, and the way to stop it.
pub struct ServerHandle {
    pub state: Arc<ServerState>,
    pub thrift_addr: Option<SocketAddr>,
    pub grpc_addr: Option<SocketAddr>,
    pub http_addr: Option<SocketAddr>,
    shutdown: CancellationToken,
    tasks: JoinSet<Result<(), ServeError>>,
}

async fn bind(listener: &'static str, l: Listen) -> Result<Option<TcpListener>, ServeError> {
    let Some(addr) = l.addr() else {
        return Ok(None);
    };
    TcpListener::bind(addr)
        .await
        .map(Some)
        .map_err(|source| ServeError::Bind {
            listener,
            addr,
            source,
        })
}

fn local_addr(l: &Option<TcpListener>) -> Option<SocketAddr> {
    l.as_ref().and_then(|l| l.local_addr().ok())
}

impl ServerHandle {
    /// Opens the database and starts every configured listener on the current runtime.
    pub async fn start(config: ServeConfig) -> Result<ServerHandle, ServeError> {
        let path = config.db.clone();
        let (opts, follow) = (config.store.options(), config.follow);
        let store = tokio::task::spawn_blocking(move || match follow {
            true => CellStore::open_follower(&path, opts),
            false => CellStore::open(&path, opts),
        })
        .await
        .map_err(|e| ServeError::Listener {
            listener: "database open",
            message: e.to_string(),
        })?
        .map_err(|source| ServeError::Open {
            path: config.db.clone(),
            source,
        })?;
        let thrift = bind("the Thrift gateway", config.thrift).await?;
        let grpc = bind("gRPC", config.grpc).await?;
        let http = bind("HTTP", config.http).await?;
        let state = ServerState::new(store, config);
        let shutdown = CancellationToken::new();
        let mut handle = ServerHandle {
            thrift_addr: local_addr(&thrift),
            grpc_addr: local_addr(&grpc),
            http_addr: local_addr(&http),
            state: Arc::clone(&state),
            shutdown: shutdown.clone(),
            tasks: JoinSet::new(),
        };
        if let Some(l) = thrift {
            if !handle.thrift_addr.is_some_and(|a| a.ip().is_loopback()) {
                tracing::warn!(
                    "the Thrift gateway listens beyond loopback: Thrift1 has no credentials, \
                     anyone who reaches the port can read and write every table"
                );
            }
            let (s, t) = (Arc::clone(&state), shutdown.clone());
            handle
                .tasks
                .spawn(async move { crate::thrift::serve(l, s, t).await });
        }
        if let Some(l) = grpc {
            let (s, t) = (Arc::clone(&state), shutdown.clone());
            handle
                .tasks
                .spawn(async move { crate::grpc::serve(l, s, t).await });
        }
        if let Some(l) = http {
            let (s, t) = (Arc::clone(&state), shutdown.clone());
            handle
                .tasks
                .spawn(async move { crate::http::serve(l, s, t).await });
        }
        Ok(handle)
    }

    /// Asks every listener to stop: no new connections, in-flight requests finish.
    pub fn shutdown(&self) {
        self.state.begin_shutdown();
        self.shutdown.cancel();
    }

    /// A token cancelled when the server begins to shut down.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Waits for the listeners to stop (after `shutdown`, at most `--shutdown-timeout`),
    /// then flushes the database. A listener that fails stops the others.
    pub async fn wait(mut self) -> Result<(), ServeError> {
        let mut first_error = None;
        // Until shutdown begins, a listener's end is a failure that stops the server.
        tokio::select! {
            _ = self.shutdown.cancelled() => {}
            Some(done) = self.tasks.join_next() => {
                first_error = listener_error(done);
                self.shutdown();
            }
        }
        let grace = self.state.config.shutdown_timeout;
        let drained = tokio::time::timeout(grace, async {
            while let Some(done) = self.tasks.join_next().await {
                if let Some(e) = listener_error(done) {
                    first_error.get_or_insert(e);
                }
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                timeout_s = grace.as_secs(),
                "requests still in flight after --shutdown-timeout; closing anyway"
            );
            self.tasks.abort_all();
        }
        let state = Arc::clone(&self.state);
        let flushed = tokio::task::spawn_blocking(move || state.store.db().flush()).await;
        if let Some(e) = first_error {
            return Err(e);
        }
        match flushed {
            Ok(r) => r.map_err(ServeError::Flush),
            Err(e) => Err(ServeError::Listener {
                listener: "the shutdown flush",
                message: e.to_string(),
            }),
        }
    }
}

fn listener_error(
    done: Result<Result<(), ServeError>, tokio::task::JoinError>,
) -> Option<ServeError> {
    match done {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(e) if e.is_cancelled() => None,
        Err(e) => Some(ServeError::Listener {
            listener: "a listener",
            message: e.to_string(),
        }),
    }
}

/// `cellar serve`: runs the server until SIGTERM or SIGINT, printing one
/// `listening PROTOCOL ADDR` line per listener on stdout once it accepts connections.
pub fn serve(config: ServeConfig) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("cellar-serve")
        .build()
        .map_err(ServeError::Runtime)?;
    runtime.block_on(async move {
        let handle = ServerHandle::start(config).await?;
        for (name, addr) in [
            ("thrift", handle.thrift_addr),
            ("grpc", handle.grpc_addr),
            ("http", handle.http_addr),
        ] {
            if let Some(addr) = addr {
                tracing::info!(protocol = name, %addr, "listening");
                println!("listening {name} {addr}");
            }
        }
        let token = handle.shutdown_token();
        let state = Arc::clone(&handle.state);
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("shutting down: no new connections, finishing requests in flight");
            state.begin_shutdown();
            token.cancel();
        });
        let result = handle.wait().await;
        match &result {
            Ok(()) => tracing::info!("stopped"),
            Err(e) => tracing::error!(error = %e, "stopped with an error"),
        }
        result
    })?;
    // Blocking tasks still running (a long scan's step) end on their own.
    runtime.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
