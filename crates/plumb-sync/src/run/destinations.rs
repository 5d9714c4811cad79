//! Connections to destination clusters, one per cluster Secret: the [`Destinations`] the
//! CLI and the controller hand to the runner.
//!
//! - A connection is made on first use ([`Cluster::connect_destination`]) and kept, keyed by
//!   the Secret (`namespace/name`) and its `resourceVersion`: a changed Secret (new
//!   credentials, another server) makes a new connection, a deleted one drops it (the
//!   runner reports the Secrets it reads, see [`Destinations::retain`]).
//! - In the controller ([`Connections::watching`]), each connection also gets a watch-fed
//!   [`LiveCache`] of its cluster, started on first use, whose changes are forwarded to the
//!   controller (so drift there queues the app as drift at home does).
//! - A failure (connection refused, no answer within the probe timeout) is remembered with
//!   a backoff (from [`Connections::BACKOFF_FIRST`], 5 s, doubling up to
//!   [`Connections::BACKOFF_MAX`], 180 s): until it is due, the apps of that cluster fail at once
//!   with the same error instead of each waiting for a timeout, and the other clusters'
//!   apps are not held up (each Secret has its own lock).
//! - A connection kept is probed (`Cluster::probe`: `GET /version`, 5 s) when it was last
//!   seen working longer than 10 s ago ([`Connections::with_probe_every`]), so a cluster
//!   that went down is noticed even though its watch cache still holds the last objects.
//!
//! Credentials stay inside [`plumb_core::clusters::Cluster`] (behind `Sensitive`) and the
//! client; nothing here prints them (no `Debug` of a Secret's config).

use crate::run::{Destination, Destinations};
use futures::future::BoxFuture;
use plumb_cluster::{Change, Cluster, ClusterError, LiveCache};
use plumb_core::clusters::{self, Clusters};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc};

/// The cached connections (see the module doc).
pub struct Connections {
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    /// Where the watch caches' changes go; `None`: no watch caches (the CLI).
    changes: Option<mpsc::UnboundedSender<Change>>,
    probe_every: Duration,
    probe_timeout: Duration,
    /// Connection attempts made (new connections, not probes).
    attempts: std::sync::atomic::AtomicU64,
    /// When each Secret's connection was last asked for (by any app).
    used: Mutex<HashMap<String, Instant>>,
}

#[derive(Default)]
enum Slot {
    #[default]
    Empty,
    Ready {
        version: String,
        cluster: Arc<Cluster>,
        cache: Option<LiveCache>,
        checked: Instant,
    },
    Failed {
        version: String,
        error: ClusterError,
        retry_at: Instant,
        delay: Duration,
    },
}

impl Slot {
    fn stop(&self) {
        if let Slot::Ready {
            cache: Some(cache), ..
        } = self
        {
            cache.stop();
        }
    }
}

impl Default for Connections {
    fn default() -> Self {
        Connections::new()
    }
}

impl Connections {
    /// The first wait after a failure.
    pub const BACKOFF_FIRST: Duration = Duration::from_secs(5);
    /// The longest wait between two attempts.
    pub const BACKOFF_MAX: Duration = Duration::from_secs(180);

    /// Connections without watch caches (each refresh LISTs the destination).
    pub fn new() -> Connections {
        Connections {
            slots: Mutex::new(HashMap::new()),
            changes: None,
            probe_every: Duration::from_secs(10),
            probe_timeout: Duration::from_secs(5),
            attempts: std::sync::atomic::AtomicU64::new(0),
            used: Mutex::new(HashMap::new()),
        }
    }

    /// Connections with a watch cache each, whose changes are sent to `changes`.
    pub fn watching(changes: mpsc::UnboundedSender<Change>) -> Connections {
        Connections {
            changes: Some(changes),
            ..Connections::new()
        }
    }

    /// How long a connection is used before it is probed again (default 10 s).
    pub fn with_probe_every(mut self, every: Duration) -> Connections {
        self.probe_every = every;
        self
    }

    /// The Secrets (`namespace/name`) with a connection or a remembered failure.
    pub fn secrets(&self) -> Vec<String> {
        let mut keys: Vec<String> = lock(&self.slots).keys().cloned().collect();
        keys.sort();
        keys
    }

    /// How many connections were attempted so far (a remembered failure is not attempted
    /// again until its backoff is due).
    pub fn attempts(&self) -> u64 {
        self.attempts.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stops every watch cache and forgets every connection.
    pub fn clear(&self) {
        let slots: Vec<_> = lock(&self.slots).drain().map(|(_, s)| s).collect();
        for slot in slots {
            if let Ok(slot) = slot.try_lock() {
                slot.stop();
            }
        }
    }

    /// Drops the connections (and stops the watch caches) no app asked for within `idle`:
    /// the controller reconciles every app at least once a refresh interval, so a
    /// connection unused for longer is one no app uses any more (its apps were deleted or
    /// now aim elsewhere). Returns the Secrets dropped. A connection in use is kept.
    pub fn drop_idle(&self, idle: Duration) -> Vec<String> {
        let now = Instant::now();
        let stale: Vec<String> = lock(&self.used)
            .iter()
            .filter(|(_, at)| now.saturating_duration_since(**at) > idle)
            .map(|(k, _)| k.clone())
            .collect();
        let mut dropped = Vec::new();
        for key in stale {
            let slot = lock(&self.slots).get(&key).cloned();
            if let Some(slot) = slot {
                let Ok(guard) = slot.try_lock() else {
                    continue;
                };
                guard.stop();
                drop(guard);
                lock(&self.slots).remove(&key);
            }
            lock(&self.used).remove(&key);
            dropped.push(key);
        }
        dropped.sort();
        dropped
    }

    fn slot(&self, secret: &str) -> Arc<tokio::sync::Mutex<Slot>> {
        lock(&self.used).insert(secret.to_string(), Instant::now());
        lock(&self.slots)
            .entry(secret.to_string())
            .or_default()
            .clone()
    }

    async fn open(&self, cluster: &clusters::Cluster) -> Result<Destination, ClusterError> {
        let slot = self.slot(&cluster.secret);
        let mut slot = slot.lock().await;
        let now = Instant::now();
        let mut delay = Self::BACKOFF_FIRST;
        match &mut *slot {
            Slot::Ready {
                version,
                cluster: connected,
                cache,
                checked,
            } if *version == cluster.resource_version => {
                if now.duration_since(*checked) < self.probe_every {
                    return Ok(destination(connected, cache));
                }
                match connected.probe(self.probe_timeout).await {
                    Ok(()) => {
                        *checked = Instant::now();
                        return Ok(destination(connected, cache));
                    }
                    Err(error) => {
                        slot.stop();
                        *slot = Slot::Failed {
                            version: cluster.resource_version.clone(),
                            error: error.clone(),
                            retry_at: now + delay,
                            delay,
                        };
                        return Err(error);
                    }
                }
            }
            Slot::Failed {
                version,
                error,
                retry_at,
                delay: last,
            } if *version == cluster.resource_version => {
                if now < *retry_at {
                    return Err(error.clone());
                }
                delay = (*last * 2).min(Self::BACKOFF_MAX);
            }
            _ => {}
        }
        // New, changed, or due for another attempt.
        slot.stop();
        *slot = Slot::Empty;
        match self.connect_new(cluster).await {
            Ok((connected, cache)) => {
                let dest = destination(&connected, &cache);
                *slot = Slot::Ready {
                    version: cluster.resource_version.clone(),
                    cluster: connected,
                    cache,
                    checked: Instant::now(),
                };
                Ok(dest)
            }
            Err(error) => {
                *slot = Slot::Failed {
                    version: cluster.resource_version.clone(),
                    error: error.clone(),
                    retry_at: Instant::now() + delay,
                    delay,
                };
                Err(error)
            }
        }
    }

    async fn connect_new(
        &self,
        cluster: &clusters::Cluster,
    ) -> Result<(Arc<Cluster>, Option<LiveCache>), ClusterError> {
        self.attempts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let connected = Arc::new(Cluster::connect_destination(cluster).await?);
        let Some(changes) = &self.changes else {
            return Ok((connected, None));
        };
        let cache = connected.watch_cache_all().await?;
        let mut rx = cache.subscribe();
        let changes = changes.clone();
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(change) => {
                        if changes.send(change).is_err() {
                            break;
                        }
                    }
                    // Missed changes are caught by the refresh interval.
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        Ok((connected, Some(cache)))
    }
}

fn destination(cluster: &Arc<Cluster>, cache: &Option<LiveCache>) -> Destination {
    Destination {
        api: cluster.clone(),
        cache: cache.clone(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Destinations for Connections {
    fn connect<'a>(
        &'a self,
        cluster: &'a clusters::Cluster,
    ) -> BoxFuture<'a, Result<Destination, ClusterError>> {
        Box::pin(self.open(cluster))
    }

    fn retain(&self, present: &Clusters) {
        let keep: HashSet<&str> = present.iter().map(|c| c.secret.as_str()).collect();
        let gone: Vec<Arc<tokio::sync::Mutex<Slot>>> = {
            let mut slots = lock(&self.slots);
            let gone: Vec<String> = slots
                .keys()
                .filter(|k| !keep.contains(k.as_str()))
                .cloned()
                .collect();
            gone.iter().filter_map(|k| slots.remove(k)).collect()
        };
        for slot in gone {
            // A slot in use is stopped by its own `Drop` of the last handle instead.
            if let Ok(slot) = slot.try_lock() {
                slot.stop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A cluster Secret for a server nothing listens on (connection refused at once).
    fn refused(version: &str) -> clusters::Cluster {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        clusters::Cluster::from_secret(&json!({
            "metadata": {"name": "down", "namespace": "plumb-system", "resourceVersion": version},
            "stringData": {"name": "down", "server": format!("https://127.0.0.1:{port}"),
                "config": "{\"bearerToken\": \"secret-token\"}"},
        }))
        .expect("secret")
    }

    #[tokio::test]
    async fn a_failure_is_remembered_per_secret_version_and_dropped_with_the_secret() {
        let connections = Connections::new();
        let down = refused("1");
        let e = connections.connect(&down).await.err().expect("refused");
        assert!(matches!(e, ClusterError::Unreachable { .. }), "{e}");
        assert!(!e.to_string().contains("secret-token"), "{e}");
        assert_eq!(connections.attempts(), 1);
        // Before the backoff is due: the same error, no new attempt.
        let again = connections.connect(&down).await.err().expect("refused");
        assert_eq!(again, e);
        assert_eq!(connections.attempts(), 1);
        assert_eq!(connections.secrets(), ["plumb-system/down"]);
        // The Secret changed (a new resourceVersion): connected anew.
        let changed = refused("2");
        connections.connect(&changed).await.err().expect("refused");
        assert_eq!(connections.attempts(), 2);
        // The Secret gone: its entry goes.
        connections.retain(&Clusters::in_cluster_only());
        assert_eq!(connections.secrets(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn a_connection_no_app_asks_for_is_dropped_once_idle() {
        let connections = Connections::new();
        let down = refused("1");
        connections.connect(&down).await.err().expect("refused");
        // Just used: kept however short the idle time.
        assert_eq!(
            connections.drop_idle(Duration::from_secs(60)),
            Vec::<String>::new()
        );
        assert_eq!(connections.secrets(), ["plumb-system/down"]);
        // Unused for longer than the idle time: dropped, and not listed again.
        let used_at = Instant::now();
        while Instant::now().saturating_duration_since(used_at) <= Duration::from_millis(1) {
            std::hint::spin_loop();
        }
        assert_eq!(
            connections.drop_idle(Duration::from_millis(1)),
            ["plumb-system/down"]
        );
        assert_eq!(connections.secrets(), Vec::<String>::new());
        assert_eq!(connections.drop_idle(Duration::ZERO), Vec::<String>::new());
    }
}
