//! What every listener shares: the open database, the configuration, metrics, admission of
//! connections, and the few pieces of server-side state the protocols need (disabled
//! tables, counter locks).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cellar_engine::Durability;
use cellar_table::{CellStore, Table, TableError};
use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::ServeConfig;
use crate::metrics::{Metrics, Protocol};

/// Stripes of the lock that makes a counter's read-add-write atomic.
const COUNTER_STRIPES: usize = 64;

/// Shared by every connection of every listener.
pub struct ServerState {
    pub store: CellStore,
    pub config: ServeConfig,
    pub metrics: Metrics,
    pub started_at: SystemTime,
    pub started: Instant,
    shutting_down: AtomicBool,
    connections: Arc<Semaphore>,
    /// Tables disabled through the Thrift gateway (`disableTable`). HBase requires a
    /// table to be disabled before it is deleted, and refuses reads and writes of a
    /// disabled table; the state is the server's, not the database's, and a restart
    /// enables every table again.
    disabled: Mutex<HashSet<String>>,
    counter_locks: Vec<Mutex<()>>,
}

/// Why a connection was not admitted.
#[derive(Debug, thiserror::Error)]
#[error(
    "the server already has {0} open connections (--max-connections); \
     close idle ones or raise the limit"
)]
pub struct TooManyConnections(pub usize);

/// A slot among `--max-connections`, held while a connection is open.
pub struct ConnectionSlot {
    _permit: OwnedSemaphorePermit,
    _gauge: crate::metrics::ConnectionGauge,
}

impl ServerState {
    pub fn new(store: CellStore, config: ServeConfig) -> Arc<ServerState> {
        let connections = Arc::new(Semaphore::new(config.limits.max_connections));
        Arc::new(ServerState {
            store,
            metrics: Metrics::new(),
            started_at: SystemTime::now(),
            started: Instant::now(),
            shutting_down: AtomicBool::new(false),
            connections,
            disabled: Mutex::new(HashSet::new()),
            counter_locks: (0..COUNTER_STRIPES).map(|_| Mutex::new(())).collect(),
            config,
        })
    }

    /// Admits one more connection of `protocol`, or says why not.
    pub fn admit(&self, protocol: Protocol) -> Result<ConnectionSlot, TooManyConnections> {
        match self.connections.clone().try_acquire_owned() {
            Ok(permit) => Ok(ConnectionSlot {
                _permit: permit,
                _gauge: self.metrics.connection_opened(protocol),
            }),
            Err(_) => {
                self.metrics.connection_rejected(protocol);
                Err(TooManyConnections(self.config.limits.max_connections))
            }
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    pub(crate) fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }

    /// The durability of a write that asked for the server's default.
    pub fn default_durability(&self) -> Durability {
        self.config.durability
    }

    /// A handle on table `name`, refused while the table is disabled.
    pub fn table(&self, name: &str) -> Result<Table, TableError> {
        if self.disabled.lock().contains(name) {
            return Err(TableError::InvalidArgument(format!(
                "table {name:?} is disabled (enableTable enables it)"
            )));
        }
        self.store.table(name)
    }

    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), TableError> {
        self.store.describe(name)?;
        let mut disabled = self.disabled.lock();
        if enabled {
            disabled.remove(name);
        } else {
            disabled.insert(name.to_string());
        }
        Ok(())
    }

    pub fn is_enabled(&self, name: &str) -> Result<bool, TableError> {
        self.store.describe(name)?;
        Ok(!self.disabled.lock().contains(name))
    }

    /// Forgets a dropped table's disabled flag.
    pub fn forget_table(&self, name: &str) {
        self.disabled.lock().remove(name);
    }

    /// The lock a counter update of (table, row, column) holds across its read and write.
    pub fn counter_lock(&self, table: &str, row: &[u8], column: &[u8]) -> &Mutex<()> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (table, row, column).hash(&mut h);
        &self.counter_locks[(h.finish() as usize) % self.counter_locks.len()]
    }

    /// Runs an engine call on the blocking pool, so it cannot stall the reactor; records
    /// the request's latency under (`protocol`, `method`) and logs it when slow.
    pub async fn run_blocking<T, E, F>(
        self: &Arc<Self>,
        protocol: Protocol,
        method: &'static str,
        f: F,
    ) -> Result<T, E>
    where
        F: FnOnce(&ServerState) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static + From<BlockingTaskFailed>,
    {
        let state = Arc::clone(self);
        let start = Instant::now();
        let result = tokio::task::spawn_blocking(move || f(&state))
            .await
            .unwrap_or_else(|e| Err(E::from(BlockingTaskFailed(e.to_string()))));
        self.finish_request(protocol, method, start.elapsed(), result.is_ok());
        result
    }

    /// Records a request that did not go through `run_blocking`.
    pub fn finish_request(&self, protocol: Protocol, method: &str, took: Duration, ok: bool) {
        self.metrics.observe_request(protocol, method, took, ok);
        if took >= self.config.slow {
            tracing::warn!(
                protocol = protocol.as_str(),
                method,
                took_ms = took.as_millis() as u64,
                ok,
                "slow request"
            );
            self.metrics.record_slow(protocol, method, took);
        }
    }
}

/// An engine call that panicked or was cancelled: reported to the client as an internal
/// error, the server goes on.
#[derive(Debug, thiserror::Error)]
#[error("internal error: the request's task failed: {0}")]
pub struct BlockingTaskFailed(pub String);
