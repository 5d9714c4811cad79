//! plumb's view of a live cluster: connect as kubectl does, discover what the
//! server serves, LIST live objects, predict what a server-side apply would
//! produce (`dryRun=All`), and snapshot what a diff needs into YAML files. Also the writes a
//! sync needs, the watch-fed [`LiveCache`] the controller reads, and Kubernetes [`events`].
//!
//! **The only crate that talks to an API server** (kube-rs, async).
//!
//! Objects are `serde_json::Value`s, as everywhere in plumb. Every request
//! this crate makes is plain JSON over the Kubernetes REST API (through
//! `kube`'s client for configuration, TLS and authentication), so objects come
//! back exactly as the server wrote them, `managedFields` included.
//!
//! ```no_run
//! # async fn demo() -> Result<(), plumb_cluster::ClusterError> {
//! use plumb_cluster::{Cluster, ConnectOptions};
//! use plumb_core::GroupKind;
//! let cluster = Cluster::connect(&ConnectOptions::default()).await?;
//! let live = cluster
//!     .list_live(&[GroupKind::new("apps", "Deployment")], Some(&["prod".to_string()]), None)
//!     .await?;
//! println!("{} deployments", live.len());
//! # Ok(()) }
//! ```
//!
//! [`ClusterApi`] is the trait of the requests a sync makes; [`Cluster`] implements it, and
//! so does `memory::MemoryCluster` (feature `memory`), an API server in memory for unit
//! tests of plumb-sync's runner.
//!
//! Concurrency: requests of one call run concurrently on the calling task
//! (bounded: [`LIST_CONCURRENCY`] LISTs, [`APPLY_CONCURRENCY`] applies in
//! flight); results keep the order of the input.
//!
//! Retries, in one place — the client's tower stack: every request the server turns away for
//! now (429, 503, 504) is retried at most [`RETRY_ATTEMPTS`] times, with exponential backoff
//! and jitter from [`RETRY_MIN_DELAY`] to [`RETRY_MAX_DELAY`], never sooner than the
//! response's `Retry-After`, which is capped at [`plumb_core::limits::MAX_RETRY_AFTER_SECS`]
//! (`CappedRetryAfter` wraps kube's `RetryPolicy`, whose own default is 15 retries up to
//! 1000 s apart). A 409 Conflict is not retried here: a request pinned to a
//! `resourceVersion` must be rebuilt from a fresh read, which plumb-sync's
//! read-modify-write loops do (client-side apply, migration, status writes).
//!
//! Tests run on the test bed (`testbed/`): `tests/throttle.rs` puts a TLS proxy answering
//! 429 in front of it (`tests/support/proxy.rs`; `Retry-After: 3600` is capped); the proxy
//! can also let another writer in just before a request (plumb-sync's `tests/conflict.rs`
//! gets a real 409 on a client-side apply) or answer a WATCH with a `410 Gone` ERROR event
//! after a change (`tests/watch.rs` shows the re-LIST has it); `tests/webhook.rs` serves a
//! real HTTPS mutating webhook (`tests/support/webhook.rs`); `tests/events.rs` shows the
//! Events' deduplication.

mod api;
mod apply;
mod connect;
mod discovery;
mod error;
pub mod events;
mod live;
#[cfg(feature = "memory")]
pub mod memory;
mod snapshot;
mod watch;
mod write;

pub use api::ClusterApi;
pub use connect::ConnectOptions;
pub use discovery::{ApiResources, ResourceInfo};
pub use error::{ClusterError, Result};
pub use events::{AppRef, EventSink, EventType, Recorder};
pub use snapshot::{SnapshotSummary, context_kinds, redact_secret};
pub use watch::{CHANGE_CAPACITY, Change, ChangeKind, LiveCache};
pub use write::{
    APPLICATION_GROUP, APPLICATION_KIND, APPLICATION_PLURAL, APPLICATION_VERSION, Deleted,
    Propagation,
};

use error::RequestContext;
use std::sync::{Arc, Mutex};

/// How many LIST requests one call keeps in flight.
pub const LIST_CONCURRENCY: usize = 8;
/// How many (dry-run) applies one call keeps in flight.
pub const APPLY_CONCURRENCY: usize = 16;

/// A connected cluster: a client that answered a version probe, and a
/// discovery cache.
pub struct Cluster {
    client: kube::Client,
    /// The API server URL (for messages).
    server: String,
    /// Which kubeconfig file(s) it came from, or `in-cluster`.
    source: String,
    default_namespace: String,
    server_version: String,
    /// The last discovery, refreshed by [`Cluster::discover`] and on a miss in
    /// [`Cluster::resource_for`].
    discovery: Mutex<Option<Arc<ApiResources>>>,
    /// Objects per LIST page ([`LIST_PAGE_SIZE`]).
    list_page: std::sync::atomic::AtomicU32,
    /// The API group of the Applications (and AppProjects) served: plumb's own
    /// (`plumb.dev`, the default) or Argo CD's (`argoproj.io`, [`Cluster::set_app_group`]).
    app_group: &'static str,
}

/// Objects per page of a LIST (kubectl's and client-go's `limit`).
pub const LIST_PAGE_SIZE: u32 = 500;

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .field("source", &self.source)
            .field("default_namespace", &self.default_namespace)
            .field("server_version", &self.server_version)
            .finish_non_exhaustive()
    }
}

/// Retries of a request the API server turned away for now (429 Too Many Requests, 503
/// Service Unavailable, 504 Gateway Timeout), as client-go does: up to [`RETRY_ATTEMPTS`]
/// more attempts, waiting an exponential backoff from [`RETRY_MIN_DELAY`] (doubling, with
/// jitter, at most [`RETRY_MAX_DELAY`]) or the response's `Retry-After` seconds when that is
/// longer, but never longer than [`plumb_core::limits::MAX_RETRY_AFTER_SECS`]. kube's own
/// default policy (15 retries, delays up to 1000 s) is replaced so that a throttled request
/// fails within minutes at most rather than hang a sync.
pub const RETRY_ATTEMPTS: u32 = 5;
/// The first retry's backoff (see [`RETRY_ATTEMPTS`]).
pub const RETRY_MIN_DELAY: std::time::Duration = std::time::Duration::from_millis(200);
/// The longest backoff between two retries (see [`RETRY_ATTEMPTS`]).
pub const RETRY_MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(5);

/// A client for `config` whose requests are retried per [`RETRY_ATTEMPTS`].
fn retrying_client(mut config: kube::Config) -> std::result::Result<kube::Client, String> {
    use kube::client::{ClientBuilder, retry::RetryPolicy};
    config.default_retry = false;
    let policy = CappedRetryAfter(
        RetryPolicy::new(RETRY_MIN_DELAY, RETRY_MAX_DELAY, RETRY_ATTEMPTS, true)
            .map_err(|e| e.to_string())?,
    );
    Ok(ClientBuilder::try_from(config)
        // (A credential plugin runs here: its failure is said without its output.)
        .map_err(|e| error::credential_plugin_failure(&e).unwrap_or_else(|| e.to_string()))?
        // The retry layer clones the service it wraps: a buffer makes kube's boxed stack
        // cloneable (kube's own client sits behind one too).
        .with_layer(&tower::buffer::BufferLayer::new(1024))
        .with_layer(&tower::retry::RetryLayer::new(policy))
        .build())
}

/// kube's [`RetryPolicy`](kube::client::retry::RetryPolicy) with the server's `Retry-After`
/// capped at [`plumb_core::limits::MAX_RETRY_AFTER_SECS`]: kube's policy sleeps for any
/// number of seconds the server names. A longer value is lowered to the cap while the policy
/// reads it, and put back after, so the response reaching plumb is untouched.
#[derive(Clone)]
struct CappedRetryAfter(kube::client::retry::RetryPolicy);

impl<Res>
    tower::retry::Policy<http::Request<kube::client::Body>, http::Response<Res>, tower::BoxError>
    for CappedRetryAfter
{
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut http::Request<kube::client::Body>,
        result: &mut std::result::Result<http::Response<Res>, tower::BoxError>,
    ) -> Option<Self::Future> {
        use plumb_core::limits::MAX_RETRY_AFTER_SECS;
        let header = http::header::RETRY_AFTER;
        let original = match result {
            Ok(response) => match response.headers().get(&header) {
                Some(v)
                    if v.to_str()
                        .ok()
                        .and_then(|s| s.trim().parse::<u64>().ok())
                        .is_some_and(|secs| secs > MAX_RETRY_AFTER_SECS) =>
                {
                    let original = v.clone();
                    response
                        .headers_mut()
                        .insert(&header, http::HeaderValue::from(MAX_RETRY_AFTER_SECS));
                    Some(original)
                }
                _ => None,
            },
            Err(_) => None,
        };
        let wait = self.0.retry(req, result);
        if let (Some(original), Ok(response)) = (original, result) {
            response.headers_mut().insert(&header, original);
        }
        wait
    }

    fn clone_request(
        &mut self,
        req: &http::Request<kube::client::Body>,
    ) -> Option<http::Request<kube::client::Body>> {
        tower::retry::Policy::<_, http::Response<Res>, tower::BoxError>::clone_request(
            &mut self.0,
            req,
        )
    }
}

impl Cluster {
    /// Objects per LIST page.
    pub fn list_page_size(&self) -> u32 {
        self.list_page.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets the objects per LIST page (tests use small pages to exercise paging).
    pub fn set_list_page_size(&self, n: u32) {
        self.list_page
            .store(n.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// Resolves the configuration as kubectl does (see [`ConnectOptions`]) and
    /// checks the server answers (`GET /version`). An unreachable or silent
    /// server fails within 10 s with [`ClusterError::Unreachable`].
    pub async fn connect(opts: &ConnectOptions) -> Result<Cluster> {
        Cluster::from_resolved(connect::resolve(opts).await?).await
    }

    /// Connects to a destination cluster declared by an Argo CD cluster Secret (see
    /// [`plumb_core::clusters`]), with the same 10 s bound as [`Cluster::connect`]. The
    /// in-cluster destination is not handled here: it is the connection plumb itself uses.
    pub async fn connect_destination(cluster: &plumb_core::clusters::Cluster) -> Result<Cluster> {
        Cluster::from_resolved(connect::resolve_destination(cluster).await?).await
    }

    async fn from_resolved(resolved: connect::Resolved) -> Result<Cluster> {
        let connect::Resolved { config, source } = resolved;
        let server = config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string();
        let default_namespace = config.default_namespace.clone();
        let client = retrying_client(config).map_err(|e| ClusterError::Kubeconfig {
            file: source.clone(),
            reason: error::one_line(&e.to_string()),
        })?;
        let ctx = RequestContext {
            server: &server,
            verb: "get",
            resource: "/version".to_string(),
            namespace: String::new(),
        };
        let info =
            match tokio::time::timeout(connect::PROBE_TIMEOUT, client.apiserver_version()).await {
                Err(_) => {
                    return Err(ClusterError::Unreachable {
                        server,
                        reason: format!("no answer within {} s", connect::PROBE_TIMEOUT.as_secs()),
                    });
                }
                Ok(result) => result.map_err(|e| ClusterError::from_kube(e, &ctx))?,
            };
        Ok(Cluster {
            client,
            server: server.clone(),
            source,
            default_namespace,
            server_version: info.git_version,
            discovery: Mutex::new(None),
            list_page: std::sync::atomic::AtomicU32::new(LIST_PAGE_SIZE),
            app_group: plumb_core::PLUMB_GROUP,
        })
    }

    /// Serve the Applications and AppProjects of `group` (`plumb.dev` or `argoproj.io`):
    /// every Application read and write goes there.
    pub fn set_app_group(&mut self, group: &'static str) {
        self.app_group = group;
    }

    /// The API group of the Applications served ([`Cluster::set_app_group`]).
    pub fn app_group(&self) -> &'static str {
        self.app_group
    }

    /// Asks the server for its version (`GET /version`), failing with
    /// [`ClusterError::Unreachable`] when no answer comes within `timeout`: whether a
    /// connection made earlier still reaches its server.
    pub async fn probe(&self, timeout: std::time::Duration) -> Result<()> {
        let ctx = RequestContext {
            server: &self.server,
            verb: "get",
            resource: "/version".to_string(),
            namespace: String::new(),
        };
        match tokio::time::timeout(timeout, self.client.apiserver_version()).await {
            Err(_) => Err(ClusterError::Unreachable {
                server: self.server.clone(),
                reason: format!("no answer within {} s", timeout.as_secs()),
            }),
            Ok(result) => result
                .map(|_| ())
                .map_err(|e| ClusterError::from_kube(e, &ctx)),
        }
    }

    /// The underlying client, for requests this crate does not wrap.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The API server URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The kubeconfig file(s) the configuration came from, or `in-cluster`.
    pub fn config_source(&self) -> &str {
        &self.source
    }

    /// The namespace of the kubeconfig context (`default` when it names none).
    pub fn default_namespace(&self) -> &str {
        &self.default_namespace
    }

    /// The server's `gitVersion` (`v1.36.3`).
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// Runs discovery now (aggregated discovery, else per group), caches and
    /// returns it. Call again after installing CRDs.
    pub async fn discover(&self) -> Result<Arc<ApiResources>> {
        let ctx = RequestContext {
            server: &self.server,
            verb: "get",
            resource: "discovery (/api, /apis)".to_string(),
            namespace: String::new(),
        };
        let discovery = match kube::Discovery::new(self.client.clone())
            .run_aggregated()
            .await
        {
            Ok(d) => d,
            // Unreachable is unreachable whichever way we ask.
            Err(e @ (kube::Error::HyperError(_) | kube::Error::Service(_))) => {
                return Err(ClusterError::from_kube(e, &ctx));
            }
            // Old servers: no aggregated discovery; ask group by group.
            Err(_) => kube::Discovery::new(self.client.clone())
                .run()
                .await
                .map_err(|e| ClusterError::from_kube(e, &ctx))?,
        };
        let resources = Arc::new(ApiResources::from_groups(discovery.groups()));
        if let Ok(mut cache) = self.discovery.lock() {
            *cache = Some(resources.clone());
        }
        Ok(resources)
    }

    /// The cached discovery, running it first if there is none yet.
    pub async fn api_resources(&self) -> Result<Arc<ApiResources>> {
        let cached = self.discovery.lock().ok().and_then(|c| c.clone());
        match cached {
            Some(resources) => Ok(resources),
            None => self.discover().await,
        }
    }

    /// The resource serving `group`/`kind`. A kind missing from the cached
    /// discovery triggers one refresh (a CRD may just have been installed)
    /// before [`ClusterError::UnknownKind`].
    pub async fn resource_for(&self, group: &str, kind: &str) -> Result<ResourceInfo> {
        if let Some(info) = self.api_resources().await?.get(group, kind) {
            return Ok(info.clone());
        }
        match self.discover().await?.get(group, kind) {
            Some(info) => Ok(info.clone()),
            None => Err(ClusterError::UnknownKind {
                group: group.to_string(),
                kind: kind.to_string(),
            }),
        }
    }

    /// The error context of a request on `info` in `namespace` (`None`: all
    /// namespaces or cluster scope).
    fn context(
        &self,
        verb: &'static str,
        info: &ResourceInfo,
        namespace: Option<&str>,
    ) -> RequestContext<'_> {
        RequestContext {
            server: &self.server,
            verb,
            resource: info.resource_name(),
            namespace: if info.namespaced {
                namespace.unwrap_or_default().to_string()
            } else {
                String::new()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The futures of the public API are `Send`, so callers can spawn them.
    #[allow(dead_code)]
    fn futures_are_send(cluster: &Cluster, app: &plumb_core::argo::Application) {
        fn is_send<T: Send>(_: T) {}
        is_send(Cluster::connect(&ConnectOptions::default()));
        is_send(cluster.discover());
        is_send(cluster.resource_for("apps", "Deployment"));
        is_send(cluster.list_live(&[], None, None));
        is_send(cluster.live_for(&[], None, plumb_core::INSTANCE_LABEL));
        is_send(cluster.dry_run_apply(Vec::new(), "plumb", false));
        is_send(cluster.snapshot(Some(app), &[], std::path::Path::new("x")));
    }

    #[test]
    fn cluster_is_send_and_sync() {
        fn is_send_sync<T: Send + Sync>() {}
        is_send_sync::<Cluster>();
        is_send_sync::<ClusterError>();
    }
}
