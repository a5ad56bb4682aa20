//! Fault-injecting object stores for tests (of this crate and others): [`FaultObjectStore`]
//! fails, delays, throttles or truncates chosen requests of any store; [`IgnoresConditions`]
//! is a store that ignores `If-None-Match: *` (like SeaweedFS before 3.97), which no server
//! available to the tests behaves like, so the probe's refusal is tested against it.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use parking_lot::Mutex;

/// Implements `ObjectStore` for a wrapper: its own `put_opts` and `get_opts`, the other
/// methods forwarded to `self.inner`.
macro_rules! impl_store {
    ($ty:ident, { $($own:item)* }) => {
        #[async_trait]
        impl ObjectStore for $ty {
        $($own)*
        async fn put_multipart_opts(
            &self,
            location: &Path,
            opts: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(location, opts).await
        }

        fn delete_stream(
            &self,
            locations: BoxStream<'static, Result<Path>>,
        ) -> BoxStream<'static, Result<Path>> {
            self.inner.delete_stream(locations)
        }

        fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.inner.list(prefix)
        }

        async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }

        async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
        }
    };
}

/// Which request (counted from 1 since the store was made) gets which fault.
#[derive(Default)]
struct Faults {
    fail_put: Option<u64>,
    ambiguous_put: Option<u64>,
    throttle_put: Option<u64>,
    fail_get: Option<u64>,
    short_get: Option<u64>,
    throttle_get: Option<u64>,
    delay: Duration,
}

/// A store wrapping another that injects faults into chosen PUTs and GETs.
pub struct FaultObjectStore {
    inner: Arc<dyn ObjectStore>,
    faults: Mutex<Faults>,
    puts: AtomicU64,
    gets: AtomicU64,
}

/// The error of an injected fault.
fn injected(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultObjectStore",
        source: what.to_string().into(),
    }
}

impl FaultObjectStore {
    /// Wraps `inner`, injecting nothing yet.
    pub fn new(inner: Arc<dyn ObjectStore>) -> FaultObjectStore {
        FaultObjectStore {
            inner,
            faults: Mutex::new(Faults::default()),
            puts: AtomicU64::new(0),
            gets: AtomicU64::new(0),
        }
    }

    /// Fails the `n`th PUT from now (1: the next) without performing it.
    pub fn fail_nth_put(&self, n: u64) {
        self.faults.lock().fail_put = Some(self.puts.load(Ordering::SeqCst) + n);
    }

    /// Performs the `n`th PUT from now, then returns an error (a response lost to a timeout).
    pub fn ambiguous_nth_put(&self, n: u64) {
        self.faults.lock().ambiguous_put = Some(self.puts.load(Ordering::SeqCst) + n);
    }

    /// Answers the `n`th PUT from now with a throttling error (503 SlowDown), not performing it.
    pub fn throttle_nth_put(&self, n: u64) {
        self.faults.lock().throttle_put = Some(self.puts.load(Ordering::SeqCst) + n);
    }

    /// Fails the `n`th GET from now.
    pub fn fail_nth_get(&self, n: u64) {
        self.faults.lock().fail_get = Some(self.gets.load(Ordering::SeqCst) + n);
    }

    /// Answers the `n`th GET from now with one byte less than it asked for.
    pub fn short_nth_get(&self, n: u64) {
        self.faults.lock().short_get = Some(self.gets.load(Ordering::SeqCst) + n);
    }

    /// Answers the `n`th GET from now with a throttling error (503 SlowDown).
    pub fn throttle_nth_get(&self, n: u64) {
        self.faults.lock().throttle_get = Some(self.gets.load(Ordering::SeqCst) + n);
    }

    /// Delays every PUT and GET by `delay`.
    pub fn set_delay(&self, delay: Duration) {
        self.faults.lock().delay = delay;
    }

    /// PUTs and GETs seen so far.
    pub fn requests(&self) -> (u64, u64) {
        (
            self.puts.load(Ordering::SeqCst),
            self.gets.load(Ordering::SeqCst),
        )
    }

    /// Counts a request; its delay and whether each of the three faults hits it.
    fn arrive(
        &self,
        counter: &AtomicU64,
        pick: fn(&Faults) -> [Option<u64>; 3],
    ) -> (Duration, [bool; 3]) {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        let faults = self.faults.lock();
        (faults.delay, pick(&faults).map(|at| at == Some(n)))
    }
}

/// Drops the last byte of a GET's answer.
async fn shorten(result: GetResult) -> Result<GetResult> {
    let (meta, range, attributes) = (
        result.meta.clone(),
        result.range.clone(),
        result.attributes.clone(),
    );
    let mut bytes = result.bytes().await?;
    bytes.truncate(bytes.len().saturating_sub(1));
    let len = bytes.len() as u64;
    let stream = futures_util::stream::once(async move { Ok::<Bytes, object_store::Error>(bytes) });
    Ok(GetResult {
        payload: GetResultPayload::Stream(stream.boxed()),
        meta,
        range: range.start..range.start + len,
        attributes,
        extensions: Default::default(),
    })
}

impl_store!(FaultObjectStore, {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let (delay, [fail, ambiguous, throttle]) = self.arrive(&self.puts, |f| {
            [f.fail_put, f.ambiguous_put, f.throttle_put]
        });
        tokio::time::sleep(delay).await;
        if fail {
            return Err(injected("injected PUT failure"));
        }
        if throttle {
            return Err(injected("503 SlowDown: please reduce your request rate"));
        }
        let result = self.inner.put_opts(location, payload, opts).await?;
        if ambiguous {
            return Err(injected("injected timeout after the PUT was performed"));
        }
        Ok(result)
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let (delay, [fail, short, throttle]) =
            self.arrive(&self.gets, |f| [f.fail_get, f.short_get, f.throttle_get]);
        tokio::time::sleep(delay).await;
        if fail {
            return Err(injected("injected GET failure"));
        }
        if throttle {
            return Err(injected("503 SlowDown: please reduce your request rate"));
        }
        let result = self.inner.get_opts(location, options).await?;
        if short {
            return shorten(result).await;
        }
        Ok(result)
    }
});

impl fmt::Display for FaultObjectStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultObjectStore({})", self.inner)
    }
}

impl fmt::Debug for FaultObjectStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultObjectStore({:?})", self.inner)
    }
}

/// A store that turns conditional creates into plain overwrites: what a store ignoring
/// `If-None-Match: *` does. Only for testing that such a store is refused.
pub struct IgnoresConditions {
    inner: Arc<dyn ObjectStore>,
}

impl IgnoresConditions {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn ObjectStore>) -> IgnoresConditions {
        IgnoresConditions { inner }
    }
}

impl_store!(IgnoresConditions, {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        mut opts: PutOptions,
    ) -> Result<PutResult> {
        if opts.mode == PutMode::Create {
            opts.mode = PutMode::Overwrite;
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }
});

impl fmt::Display for IgnoresConditions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IgnoresConditions({})", self.inner)
    }
}

impl fmt::Debug for IgnoresConditions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IgnoresConditions({:?})", self.inner)
    }
}
