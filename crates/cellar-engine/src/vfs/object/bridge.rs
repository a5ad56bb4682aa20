//! The blocking bridge between the engine's synchronous [`Vfs`](crate::vfs::Vfs) calls and
//! `object_store`'s async API.
//!
//! The backend owns a small multi-thread tokio runtime; [`Bridge::run`] spawns a future on it
//! and waits on a std channel. Why not `Runtime::block_on`: the engine is called from threads
//! of other tokio runtimes too (`cellar serve`), where `block_on` panics ("Cannot start a
//! runtime from within a runtime"). Waiting on a channel blocks only the calling thread, which
//! works from any thread.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use tokio::runtime::{Builder, Runtime};

use crate::error::{Error, Result};

/// Worker threads of the runtime: requests mostly wait on the network, so a few suffice.
const WORKERS: usize = 3;

/// A tokio runtime that synchronous code hands futures to.
pub(crate) struct Bridge {
    /// `Option` only so that `Drop` can take it and shut it down without blocking.
    runtime: Option<Runtime>,
}

impl Bridge {
    /// Starts the runtime: `WORKERS` threads named `cellar-s3-N`.
    pub(crate) fn new() -> Result<Bridge> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let runtime = Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name_fn(|| format!("cellar-s3-{}", NEXT.fetch_add(1, Ordering::Relaxed)))
            .enable_all()
            .build()
            .map_err(|e| {
                Error::ObjectStore(format!("cannot start the object-store runtime: {e}"))
            })?;
        Ok(Bridge {
            runtime: Some(runtime),
        })
    }

    /// Runs `future` on the bridge's runtime and waits for its output, from any thread
    /// (including a thread of another tokio runtime).
    pub(crate) fn run<F, T>(&self, future: F) -> Result<T>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let runtime = self.runtime.as_ref().ok_or_else(stopped)?;
        let (tx, rx) = mpsc::sync_channel(1);
        runtime.spawn(async move {
            // The receiver waits for this send; it can only be gone if the caller panicked.
            let _ = tx.send(future.await);
        });
        rx.recv().map_err(|_| stopped())
    }
}

fn stopped() -> Error {
    Error::ObjectStore("the object-store runtime stopped (a request task panicked or the backend is shutting down)".into())
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // `shutdown_background` never blocks, so dropping the backend inside another
        // runtime's thread (where dropping a `Runtime` panics) is safe too.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
