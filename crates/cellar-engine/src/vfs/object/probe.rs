//! The capability probe: does the store enforce conditional creates (`If-None-Match: *`)?
//!
//! The object layout fences writers with `create_if_absent`; on a store that accepts the
//! header but ignores it (SeaweedFS before 3.97) or checks it non-atomically (before 4.18),
//! two writers both "win" and overwrite each other's manifests. The probe races two
//! conditional creates of one fresh key, several times, and refuses a store where both win.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use super::{key_of, store_error, ObjectVfs};
use crate::error::{Error, Result};

/// Rounds of the race: a non-atomic check may let one race through and not another.
const ROUNDS: usize = 4;

/// What one conditional create of the race did.
enum Outcome {
    Won,
    Lost,
    Unsupported,
}

impl ObjectVfs {
    /// Checks that the store lets exactly one of two concurrent conditional creates of a key
    /// win, using fresh keys under `<prefix>/_probe/`, which it deletes afterwards. Errs
    /// (refusing the store) when both win or conditional creates are not implemented.
    pub fn probe_conditional_create(&self, prefix: &Path) -> Result<()> {
        let base = key_of(&prefix.join("_probe"))?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let keys: Vec<ObjectPath> = (0..ROUNDS)
            .map(|round| {
                base.clone()
                    .join(format!("{}-{nanos}-{round}", std::process::id()))
            })
            .collect();
        let result = keys.iter().try_for_each(|key| self.race(key));
        for key in &keys {
            let (store, k) = (self.inner.store.clone(), key.clone());
            let _ = self.inner.bridge.run(async move { store.delete(&k).await });
        }
        result
    }

    /// One round: two concurrent conditional creates of `key`; exactly one must win.
    fn race(&self, key: &ObjectPath) -> Result<()> {
        let (a, b) = (self.inner.store.clone(), self.inner.store.clone());
        let (ka, kb) = (key.clone(), key.clone());
        let both = self.inner.bridge.run(async move {
            let first = tokio::spawn(async move { create(a, ka, b"a").await });
            let second = tokio::spawn(async move { create(b, kb, b"b").await });
            (first.await, second.await)
        })?;
        let mut won = 0;
        for outcome in [both.0, both.1] {
            let outcome =
                outcome.map_err(|e| Error::ObjectStore(format!("probe task failed: {e}")))?;
            match outcome.map_err(|e| store_error(key, e))? {
                Outcome::Won => won += 1,
                Outcome::Lost => {}
                Outcome::Unsupported => {
                    return Err(self.refusal("does not implement conditional creates"))
                }
            }
        }
        match won {
            1 => Ok(()),
            0 => Err(Error::ObjectStore(format!(
                "probe of {} in {}: neither of two conditional creates of a fresh key won",
                key, self.inner.name
            ))),
            _ => Err(self.refusal("does not enforce conditional creates (If-None-Match: *)")),
        }
    }

    fn refusal(&self, what: &str) -> Error {
        Error::ObjectStore(format!(
            "the store at {} {what}: two writers could overwrite each other's objects and \
             corrupt the database. SeaweedFS enforces them atomically since 4.18 (upgrade it); \
             AWS S3, MinIO, Ceph RGW and R2 enforce them too. Open with assume_single_writer \
             (--assume-single-writer) only if you guarantee a single writer",
            self.inner.name
        ))
    }
}

/// One conditional create.
async fn create(
    store: std::sync::Arc<dyn ObjectStore>,
    key: ObjectPath,
    data: &'static [u8],
) -> object_store::Result<Outcome> {
    let opts = PutOptions::from(PutMode::Create);
    match store
        .put_opts(&key, PutPayload::from_static(data), opts)
        .await
    {
        Ok(_) => Ok(Outcome::Won),
        Err(object_store::Error::AlreadyExists { .. })
        | Err(object_store::Error::Precondition { .. }) => Ok(Outcome::Lost),
        Err(object_store::Error::NotImplemented { .. })
        | Err(object_store::Error::NotSupported { .. }) => Ok(Outcome::Unsupported),
        Err(e) => Err(e),
    }
}
