//! Where a database in an object store lives: parsing `s3://bucket/prefix`, building the S3
//! client from the environment and [`ObjectStoreOptions`], and the default local cache
//! directory.

use std::path::PathBuf;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{BackoffConfig, ClientOptions, RetryConfig};

use crate::error::{Error, Result};
use crate::options::ObjectStoreOptions;

/// A parsed `s3://bucket/prefix` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectLocation {
    /// The bucket.
    pub bucket: String,
    /// The key prefix inside the bucket, without leading or trailing `/`; may be empty or
    /// nested (`a/b`).
    pub prefix: String,
}

impl ObjectLocation {
    /// Parses `s3://bucket/prefix`. Rejects other schemes, an empty bucket, and `.`, `..`
    /// or empty segments in the prefix, saying what to fix.
    pub fn parse(url: &str) -> Result<ObjectLocation> {
        let rest = url.strip_prefix("s3://").ok_or_else(|| {
            Error::ObjectStore(format!(
                "{url:?} is not an object-store URL: write s3://bucket/prefix"
            ))
        })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(Error::ObjectStore(format!(
                "{url:?} names no bucket: write s3://bucket/prefix"
            )));
        }
        let prefix = prefix.trim_end_matches('/');
        if !prefix.is_empty() {
            for segment in prefix.split('/') {
                if segment.is_empty() || segment == "." || segment == ".." {
                    return Err(Error::ObjectStore(format!(
                        "{url:?}: the prefix may not hold empty, `.` or `..` segments; write s3://bucket/a/b"
                    )));
                }
            }
        }
        Ok(ObjectLocation {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }

    /// `s3://bucket/prefix`.
    pub fn url(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.prefix)
    }
}

/// The default local cache directory of a database at `url`:
/// `$XDG_CACHE_HOME/cellar/<bucket>/<prefix>`, else `$HOME/.cache/cellar/<bucket>/<prefix>`.
pub fn default_cache_dir(url: &str) -> Result<PathBuf> {
    cache_dir_under(url, env("XDG_CACHE_HOME"), env("HOME"))
}

/// [`default_cache_dir`] with the two variables given.
fn cache_dir_under(url: &str, xdg: Option<String>, home: Option<String>) -> Result<PathBuf> {
    let location = ObjectLocation::parse(url)?;
    let base = match (xdg, home) {
        (Some(xdg), _) => PathBuf::from(xdg),
        (None, Some(home)) => PathBuf::from(home).join(".cache"),
        (None, None) => {
            return Err(Error::ObjectStore(
                "neither XDG_CACHE_HOME nor HOME is set: set the object store's cache directory explicitly".into(),
            ))
        }
    };
    let mut dir = base.join("cellar").join(&location.bucket);
    if !location.prefix.is_empty() {
        dir = dir.join(&location.prefix);
    }
    Ok(dir)
}

/// A non-empty environment variable.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Builds the S3 client of `location`: credentials, region and endpoint from `options`,
/// else from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION` (default
/// `us-east-1`) and `AWS_ENDPOINT_URL`; path-style requests (what S3-compatible servers
/// expect); plain HTTP allowed only for an `http://` endpoint.
pub fn build_s3(location: &ObjectLocation, options: &ObjectStoreOptions) -> Result<AmazonS3> {
    let pick = |explicit: &Option<String>, var: &str| explicit.clone().or_else(|| env(var));
    let region = pick(&options.region, "AWS_REGION").unwrap_or_else(|| "us-east-1".into());
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(&location.bucket)
        .with_region(region)
        .with_virtual_hosted_style_request(false)
        .with_retry(retry_config())
        .with_client_options(client_options());
    if let Some(key) = pick(&options.access_key_id, "AWS_ACCESS_KEY_ID") {
        builder = builder.with_access_key_id(key);
    }
    if let Some(secret) = pick(&options.secret_access_key, "AWS_SECRET_ACCESS_KEY") {
        builder = builder.with_secret_access_key(secret);
    }
    if let Some(token) = env("AWS_SESSION_TOKEN") {
        builder = builder.with_token(token);
    }
    if let Some(endpoint) = pick(&options.endpoint, "AWS_ENDPOINT_URL") {
        builder = builder
            .with_allow_http(endpoint.starts_with("http://"))
            .with_endpoint(endpoint);
    }
    builder
        .build()
        .map_err(|e| Error::ObjectStore(format!("cannot configure S3 for {}: {e}", location.url())))
}

/// Retries with backoff, bounded in time. `object_store` retries only idempotent requests
/// (GET, HEAD, LIST, DELETE, overwriting PUT); a conditional create is never retried, as its
/// outcome after a lost response is unknown: the engine resolves it by reading back.
fn retry_config() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: 8,
        retry_timeout: Duration::from_secs(60),
    }
}

/// Connection and request timeouts: long enough for a multi-MiB part on a slow link.
fn client_options() -> ClientOptions {
    ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(60))
        .with_pool_idle_timeout(Duration::from_secs(30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bucket_and_prefix() {
        let l = ObjectLocation::parse("s3://b/x/y/").unwrap();
        assert_eq!((l.bucket.as_str(), l.prefix.as_str()), ("b", "x/y"));
        let l = ObjectLocation::parse("s3://b").unwrap();
        assert_eq!((l.bucket.as_str(), l.prefix.as_str()), ("b", ""));
        let l = ObjectLocation::parse("s3://b/").unwrap();
        assert_eq!(l.prefix, "");
        assert_eq!(
            ObjectLocation::parse("s3://b/db").unwrap().url(),
            "s3://b/db"
        );
    }

    #[test]
    fn rejects_bad_urls() {
        for (url, says) in [
            ("gs://b/p", "write s3://"),
            ("/tmp/db", "write s3://"),
            ("s3:///p", "no bucket"),
            ("s3://b/a/../c", "`..`"),
            ("s3://b/a//c", "empty"),
        ] {
            match ObjectLocation::parse(url) {
                Err(Error::ObjectStore(msg)) => assert!(msg.contains(says), "{url}: {msg}"),
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[test]
    fn cache_dir_defaults() {
        let some = |s: &str| Some(s.to_string());
        let dir = cache_dir_under("s3://b/p/q", some("/x"), some("/h")).unwrap();
        assert_eq!(dir, PathBuf::from("/x/cellar/b/p/q"));
        let dir = cache_dir_under("s3://b/p", None, some("/h")).unwrap();
        assert_eq!(dir, PathBuf::from("/h/.cache/cellar/b/p"));
        let dir = cache_dir_under("s3://b", None, some("/h")).unwrap();
        assert_eq!(dir, PathBuf::from("/h/.cache/cellar/b"));
        assert!(matches!(
            cache_dir_under("s3://b/p", None, None),
            Err(Error::ObjectStore(msg)) if msg.contains("HOME")
        ));
    }

    #[test]
    fn builds_an_s3_client_from_options() {
        let options = ObjectStoreOptions {
            endpoint: Some("http://127.0.0.1:9".into()),
            access_key_id: Some("k".into()),
            secret_access_key: Some("s".into()),
            ..ObjectStoreOptions::default()
        };
        let location = ObjectLocation::parse("s3://bucket/p").unwrap();
        build_s3(&location, &options).unwrap();
    }
}
