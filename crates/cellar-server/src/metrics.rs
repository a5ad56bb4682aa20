//! The server's metrics, in Prometheus' data model (`prometheus-client`), served on
//! `/metrics` with the engine's statistics beside them (`http/metrics.rs`). Names follow
//! HBase's stems with a `cellar_` prefix (docs/server.md, "Metrics").

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Slow requests the status page lists.
const SLOW_LOG_LEN: usize = 50;

/// The listener a request came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    Thrift,
    Grpc,
    Http,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Thrift => "thrift",
            Protocol::Grpc => "grpc",
            Protocol::Http => "http",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RequestLabels {
    pub protocol: &'static str,
    pub method: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ProtocolLabels {
    pub protocol: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct LimitLabels {
    /// Which limit: `connections`, `request_bytes`, `scanners`, `reply_bytes`, ...
    pub limit: &'static str,
}

/// One slow request, for the status page.
#[derive(Debug, Clone)]
pub struct SlowRequest {
    pub at: SystemTime,
    pub protocol: Protocol,
    pub method: String,
    pub took: Duration,
}

/// Every metric the server itself keeps (the engine's are read at scrape time).
pub struct Metrics {
    pub registry: Registry,
    pub requests: Family<RequestLabels, Counter>,
    pub request_errors: Family<RequestLabels, Counter>,
    pub request_seconds: Family<RequestLabels, Histogram>,
    pub bytes_in: Family<ProtocolLabels, Counter>,
    pub bytes_out: Family<ProtocolLabels, Counter>,
    pub connections: Family<ProtocolLabels, Gauge>,
    pub connections_rejected: Family<ProtocolLabels, Counter>,
    pub open_scanners: Gauge,
    pub scanners_expired: Counter,
    /// Times a limit was hit (the request or connection refused, or a reply cut short).
    pub limit_hits: Family<LimitLabels, Counter>,
    pub mutations_without_wal: Counter,
    /// Requests of the last few minutes per method, for the status page.
    pub recent: crate::recent::RecentWindow,
    slow: Mutex<VecDeque<SlowRequest>>,
}

fn latency_buckets() -> impl Iterator<Item = f64> {
    // 10 us .. ~42 s, factor 2: enough resolution for loopback gets and long scans alike.
    prometheus_client::metrics::histogram::exponential_buckets(1e-5, 2.0, 23)
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("cellar");
        let requests = Family::<RequestLabels, Counter>::default();
        let request_errors = Family::<RequestLabels, Counter>::default();
        let request_seconds = Family::<RequestLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(latency_buckets())
        });
        let bytes_in = Family::<ProtocolLabels, Counter>::default();
        let bytes_out = Family::<ProtocolLabels, Counter>::default();
        let connections = Family::<ProtocolLabels, Gauge>::default();
        let connections_rejected = Family::<ProtocolLabels, Counter>::default();
        let open_scanners = Gauge::default();
        let scanners_expired = Counter::default();
        let limit_hits = Family::<LimitLabels, Counter>::default();
        let mutations_without_wal = Counter::default();
        registry.register(
            "requests",
            "Requests served, per protocol and method",
            requests.clone(),
        );
        registry.register(
            "request_errors",
            "Requests answered with an error, per protocol and method",
            request_errors.clone(),
        );
        registry.register(
            "request_seconds",
            "Time to serve a request, per protocol and method",
            request_seconds.clone(),
        );
        registry.register("received_bytes", "Bytes received", bytes_in.clone());
        registry.register("sent_bytes", "Bytes sent", bytes_out.clone());
        registry.register(
            "open_connections",
            "Open client connections",
            connections.clone(),
        );
        registry.register(
            "rejected_connections",
            "Connections refused because --max-connections were open",
            connections_rejected.clone(),
        );
        registry.register(
            "open_scanners",
            "Open scanners (Thrift scanners and gRPC scan streams)",
            open_scanners.clone(),
        );
        registry.register(
            "expired_scanners",
            "Thrift scanners closed after --scanner-idle-timeout",
            scanners_expired.clone(),
        );
        registry.register(
            "limit_hits",
            "Requests refused or replies cut short by a configured limit",
            limit_hits.clone(),
        );
        registry.register(
            "mutations_without_wal",
            "Mutations written with writeToWAL=false (buffered durability)",
            mutations_without_wal.clone(),
        );
        Metrics {
            registry,
            requests,
            request_errors,
            request_seconds,
            bytes_in,
            bytes_out,
            connections,
            connections_rejected,
            open_scanners,
            scanners_expired,
            limit_hits,
            mutations_without_wal,
            recent: crate::recent::RecentWindow::new(),
            slow: Mutex::new(VecDeque::new()),
        }
    }

    pub fn observe_request(&self, protocol: Protocol, method: &str, took: Duration, ok: bool) {
        let labels = RequestLabels {
            protocol: protocol.as_str(),
            method: method.to_string(),
        };
        self.requests.get_or_create(&labels).inc();
        if !ok {
            self.request_errors.get_or_create(&labels).inc();
        }
        self.request_seconds
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        self.recent.observe(protocol, method, took, ok);
    }

    pub fn received(&self, protocol: Protocol, bytes: usize) {
        self.bytes_in
            .get_or_create(&ProtocolLabels {
                protocol: protocol.as_str(),
            })
            .inc_by(bytes as u64);
    }

    pub fn sent(&self, protocol: Protocol, bytes: usize) {
        self.bytes_out
            .get_or_create(&ProtocolLabels {
                protocol: protocol.as_str(),
            })
            .inc_by(bytes as u64);
    }

    pub fn limit_hit(&self, limit: &'static str) {
        self.limit_hits.get_or_create(&LimitLabels { limit }).inc();
    }

    pub(crate) fn connection_opened(&self, protocol: Protocol) -> ConnectionGauge {
        let gauge = self
            .connections
            .get_or_create(&ProtocolLabels {
                protocol: protocol.as_str(),
            })
            .clone();
        gauge.inc();
        ConnectionGauge(gauge)
    }

    pub(crate) fn connection_rejected(&self, protocol: Protocol) {
        self.connections_rejected
            .get_or_create(&ProtocolLabels {
                protocol: protocol.as_str(),
            })
            .inc();
        self.limit_hit("connections");
    }

    pub(crate) fn record_slow(&self, protocol: Protocol, method: &str, took: Duration) {
        let mut slow = self.slow.lock();
        if slow.len() == SLOW_LOG_LEN {
            slow.pop_front();
        }
        slow.push_back(SlowRequest {
            at: SystemTime::now(),
            protocol,
            method: method.to_string(),
            took,
        });
    }

    /// The most recent slow requests, newest last.
    pub fn slow_requests(&self) -> Vec<SlowRequest> {
        self.slow.lock().iter().cloned().collect()
    }
}

/// Decrements the open-connections gauge when the connection closes.
pub struct ConnectionGauge(Gauge);

impl Drop for ConnectionGauge {
    fn drop(&mut self) {
        self.0.dec();
    }
}
