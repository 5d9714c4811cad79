//! The controller loop: reconciles every Application on a refresh interval with jitter, and
//! at once when something it tracks changes.
//!
//! - Live state comes from a watch-fed [`LiveCache`] (one LIST + WATCH per kind for the
//!   whole cluster), so a refresh makes no LIST and drift is seen within seconds: a change to
//!   an object carrying an app's tracking annotation or label queues that app (after
//!   [`ControllerOptions::debounce`], so a burst of events makes one refresh).
//! - Applications are watched too: a new one, or a change of `metadata.generation` (its
//!   spec), queues it; status writes (plumb's own) do not.
//! - Each app is refreshed again after [`ControllerOptions::refresh`] plus a random jitter up
//!   to [`ControllerOptions::jitter`] (Argo CD: `timeout.reconciliation` 180 s,
//!   `timeout.reconciliation.jitter`), or when a backoff says a sync is due.
//! - At most [`ControllerOptions::workers`] apps reconcile at once; one app never twice at
//!   once (a trigger during a reconcile queues one more after it).
//! - Every reconcile reads the Application fresh from the API server (the automated-sync
//!   decision depends on the status the previous reconcile wrote) and resumes an operation
//!   left `Running` by a stopped controller (see [`crate::run::resume_app`]).

use crate::auto::Decision;
use crate::run::{ReconcileOutcome, ReconcileState, RunError, RunOptions, reconcile_once};
use plumb_cluster::{Change, ChangeKind, Cluster, LiveCache};
use plumb_core::{GroupKind, INSTANCE_LABEL, TRACKING_ID_ANNOTATION};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{Semaphore, broadcast, mpsc, watch};

/// An Application: namespace and name.
pub type AppKey = (String, String);

/// How the controller runs.
#[derive(Debug, Clone)]
pub struct ControllerOptions {
    pub run: RunOptions,
    /// Time between refreshes of an app (Argo CD: 180 s).
    pub refresh: Duration,
    /// Up to this much is added to each refresh interval, at random, so a thousand apps
    /// created together do not refresh together.
    pub jitter: Duration,
    /// Apps reconciled at once.
    pub workers: usize,
    /// How long after a change of a tracked object its app is refreshed.
    pub debounce: Duration,
    /// Only Applications in this namespace.
    pub app_namespace: Option<String>,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        ControllerOptions {
            run: RunOptions::default(),
            refresh: Duration::from_secs(180),
            jitter: Duration::from_secs(60),
            workers: 8,
            debounce: Duration::from_secs(1),
            app_namespace: None,
        }
    }
}

/// What the controller reports (the CLI logs these as JSON lines).
#[derive(Debug)]
pub enum Event<'a> {
    Reconciled {
        app: &'a AppKey,
        outcome: &'a ReconcileOutcome,
        took: Duration,
        trigger: Trigger,
    },
    Failed {
        app: &'a AppKey,
        error: &'a RunError,
        trigger: Trigger,
    },
    /// The watch channel overflowed: every app is refreshed.
    Lagged { missed: u64 },
}

/// Why an app was reconciled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// First sight, or its spec changed.
    App,
    /// A tracked object changed.
    Watch,
    /// The refresh interval (or a backoff) came due.
    Timer,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::App => "app",
            Trigger::Watch => "watch",
            Trigger::Timer => "timer",
        }
    }
}

/// The app a live object belongs to, by its tracking annotation or label.
pub fn tracking_app(obj: &Value) -> Option<&str> {
    let meta = obj.get("metadata")?;
    if let Some(id) = meta
        .pointer(&format!(
            "/annotations/{}",
            plumb_core::pointer::escape_token(TRACKING_ID_ANNOTATION)
        ))
        .and_then(Value::as_str)
        && let Some((app, _)) = id.split_once(':')
    {
        return Some(app);
    }
    meta.pointer(&format!(
        "/labels/{}",
        plumb_core::pointer::escape_token(INSTANCE_LABEL)
    ))
    .and_then(Value::as_str)
}

fn application_kind() -> GroupKind {
    GroupKind::new(
        plumb_cluster::APPLICATION_GROUP,
        plumb_cluster::APPLICATION_KIND,
    )
}

fn random_below(limit: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    if limit.is_zero() {
        return Duration::ZERO;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    let nanos = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX).max(1);
    Duration::from_nanos(h.finish() % nanos)
}

/// A running controller's shared parts.
pub struct Controller {
    cluster: Arc<Cluster>,
    cache: LiveCache,
    opts: ControllerOptions,
}

impl Controller {
    /// Starts the watches (every kind an app could own, and Applications) and returns once
    /// their initial lists are cached.
    pub async fn start(
        cluster: Arc<Cluster>,
        opts: ControllerOptions,
    ) -> Result<Controller, plumb_cluster::ClusterError> {
        let cache = cluster.watch_cache_all().await?;
        cache.ensure_kind(&application_kind()).await?;
        Ok(Controller {
            cluster,
            cache,
            opts,
        })
    }

    /// The watch-fed cache (objects cached, kinds watched).
    pub fn cache(&self) -> &LiveCache {
        &self.cache
    }

    fn run_options(&self) -> RunOptions {
        let mut run = self.opts.run.clone();
        run.cache = Some(crate::run::CacheHandle(self.cache.clone()));
        run
    }

    /// The Applications the controller is responsible for, as cached.
    pub fn apps(&self) -> Vec<AppKey> {
        let mut keys: Vec<AppKey> = self
            .cache
            .list(&application_kind(), self.opts.app_namespace.as_deref())
            .iter()
            .filter_map(|a| app_key(a))
            .collect();
        keys.sort();
        keys
    }

    /// One pass over every Application (`plumb controller --once`), `workers` at a time.
    /// Results are sorted by namespace and name.
    pub async fn pass(
        &self,
        log: &(dyn Fn(Event<'_>) + Send + Sync),
    ) -> Vec<(AppKey, Result<ReconcileOutcome, RunError>)> {
        let run = Arc::new(self.run_options());
        let workers = Arc::new(Semaphore::new(self.opts.workers.max(1)));
        let mut set = tokio::task::JoinSet::new();
        for key in self.apps() {
            let Ok(permit) = workers.clone().acquire_owned().await else {
                break;
            };
            let (cluster, run) = (self.cluster.clone(), run.clone());
            set.spawn(async move {
                let _permit = permit;
                let started = Instant::now();
                let r = reconcile_app(&cluster, &run, &key).await;
                (key, r, started.elapsed())
            });
        }
        let mut out = Vec::new();
        while let Some(joined) = set.join_next().await {
            let Ok((key, r, took)) = joined else { continue };
            match r {
                Ok(Some(outcome)) => {
                    log(Event::Reconciled {
                        app: &key,
                        outcome: &outcome,
                        took,
                        trigger: Trigger::Timer,
                    });
                    out.push((key, Ok(outcome)));
                }
                Ok(None) => {}
                Err(error) => {
                    log(Event::Failed {
                        app: &key,
                        error: &error,
                        trigger: Trigger::Timer,
                    });
                    out.push((key, Err(error)));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Runs until `stop` turns true.
    pub async fn run(
        &self,
        log: Arc<dyn Fn(Event<'_>) + Send + Sync>,
        mut stop: watch::Receiver<bool>,
    ) {
        let run = Arc::new(self.run_options());
        let opts = &self.opts;
        let mut changes = self.cache.subscribe();
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(AppKey, Option<SystemTime>)>();
        let workers = Arc::new(Semaphore::new(opts.workers.max(1)));
        // Next reconcile of each app, and why.
        let mut due: HashMap<AppKey, (Instant, Trigger)> = HashMap::new();
        let mut generations: HashMap<AppKey, i64> = HashMap::new();
        let mut by_name: HashMap<String, HashSet<AppKey>> = HashMap::new();
        let mut in_flight: HashSet<AppKey> = HashSet::new();
        let mut again: HashMap<AppKey, Trigger> = HashMap::new();
        let wanted_ns = opts.app_namespace.clone();

        let mut know_app =
            |app: &Value,
             due: &mut HashMap<AppKey, (Instant, Trigger)>,
             generations: &mut HashMap<AppKey, i64>,
             by_name: &mut HashMap<String, HashSet<AppKey>>| {
                let Some(key) = app_key(app) else { return };
                if wanted_ns.as_ref().is_some_and(|ns| *ns != key.0) {
                    return;
                }
                let generation = app
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                if generations.insert(key.clone(), generation) != Some(generation) {
                    due.insert(key.clone(), (Instant::now(), Trigger::App));
                }
                by_name.entry(key.1.clone()).or_default().insert(key);
            };
        for app in self
            .cache
            .list(&application_kind(), self.opts.app_namespace.as_deref())
        {
            know_app(&app, &mut due, &mut generations, &mut by_name);
        }

        loop {
            // Start what is due (and not running), as workers allow.
            let now = Instant::now();
            let mut ready: Vec<(AppKey, Trigger)> = due
                .iter()
                .filter(|(k, (at, _))| *at <= now && !in_flight.contains(*k))
                .map(|(k, (_, t))| (k.clone(), *t))
                .collect();
            ready.sort_by_key(|(k, _)| due[k].0);
            for (key, trigger) in ready {
                let Ok(permit) = workers.clone().try_acquire_owned() else {
                    break;
                };
                due.remove(&key);
                in_flight.insert(key.clone());
                let (cluster, run, log, done) = (
                    self.cluster.clone(),
                    run.clone(),
                    log.clone(),
                    done_tx.clone(),
                );
                tokio::spawn(async move {
                    let started = Instant::now();
                    let r = reconcile_app(&cluster, &run, &key).await;
                    let took = started.elapsed();
                    let next_at = match &r {
                        Ok(Some(outcome)) => {
                            log(Event::Reconciled {
                                app: &key,
                                outcome,
                                took,
                                trigger,
                            });
                            match outcome.decision {
                                Some(Decision::WaitUntil { at, .. }) => Some(at),
                                _ => None,
                            }
                        }
                        Ok(None) => None,
                        Err(error) => {
                            log(Event::Failed {
                                app: &key,
                                error,
                                trigger,
                            });
                            None
                        }
                    };
                    drop(permit);
                    let _ = done.send((key, next_at));
                });
            }
            let next_due = due
                .iter()
                .filter(|(k, _)| !in_flight.contains(*k))
                .map(|(_, (at, _))| *at)
                .min();
            let sleep = next_due.map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(10))
            });

            tokio::select! {
                _ = stop.changed() => {
                    if *stop.borrow() { break; }
                }
                done = done_rx.recv() => {
                    let Some((key, backoff_at)) = done else { break };
                    in_flight.remove(&key);
                    if !generations.contains_key(&key) {
                        continue; // deleted meanwhile
                    }
                    let next = match again.remove(&key) {
                        Some(t) => (Instant::now() + opts.debounce, t),
                        None => {
                            let mut at = Instant::now() + opts.refresh + random_below(opts.jitter);
                            if let Some(b) = backoff_at {
                                let wait = b.duration_since(SystemTime::now()).unwrap_or_default();
                                at = at.min(Instant::now() + wait);
                            }
                            (at, Trigger::Timer)
                        }
                    };
                    let entry = due.entry(key).or_insert(next);
                    if next.0 < entry.0 { *entry = next; }
                }
                change = changes.recv() => {
                    match change {
                        Ok(change) => self.on_change(
                            &change, &mut due, &mut generations, &mut by_name,
                            &in_flight, &mut again, &mut know_app,
                        ),
                        Err(broadcast::error::RecvError::Lagged(missed)) => {
                            log(Event::Lagged { missed });
                            let soon = Instant::now() + opts.debounce;
                            for key in generations.keys() {
                                due.insert(key.clone(), (soon, Trigger::Watch));
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => break,
                    }
                }
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_change(
        &self,
        change: &Change,
        due: &mut HashMap<AppKey, (Instant, Trigger)>,
        generations: &mut HashMap<AppKey, i64>,
        by_name: &mut HashMap<String, HashSet<AppKey>>,
        in_flight: &HashSet<AppKey>,
        again: &mut HashMap<AppKey, Trigger>,
        know_app: &mut impl FnMut(
            &Value,
            &mut HashMap<AppKey, (Instant, Trigger)>,
            &mut HashMap<AppKey, i64>,
            &mut HashMap<String, HashSet<AppKey>>,
        ),
    ) {
        if change.key.group == plumb_cluster::APPLICATION_GROUP
            && change.key.kind == plumb_cluster::APPLICATION_KIND
        {
            let key = (change.key.namespace.clone(), change.key.name.clone());
            if change.kind == ChangeKind::Deleted {
                generations.remove(&key);
                due.remove(&key);
                if let Some(set) = by_name.get_mut(&key.1) {
                    set.remove(&key);
                }
            } else {
                know_app(&change.object, due, generations, by_name);
            }
            return;
        }
        let Some(app) = tracking_app(&change.object) else {
            return;
        };
        let Some(keys) = by_name.get(app) else { return };
        let soon = Instant::now() + self.opts.debounce;
        for key in keys {
            if in_flight.contains(key) {
                again.insert(key.clone(), Trigger::Watch);
                continue;
            }
            let entry = due.entry(key.clone()).or_insert((soon, Trigger::Watch));
            if soon < entry.0 {
                *entry = (soon, Trigger::Watch);
            }
        }
    }

    /// Stops the watches.
    pub fn stop(&self) {
        self.cache.stop();
    }
}

fn app_key(app: &Value) -> Option<AppKey> {
    let meta = app.get("metadata")?;
    Some((
        meta.get("namespace")?.as_str()?.to_string(),
        meta.get("name")?.as_str()?.to_string(),
    ))
}

/// Reads the Application fresh and reconciles it; `None` when it is gone.
async fn reconcile_app(
    cluster: &Cluster,
    run: &RunOptions,
    key: &AppKey,
) -> Result<Option<ReconcileOutcome>, RunError> {
    let app = cluster
        .get_application(&key.0, &key.1)
        .await
        .map_err(|source| RunError::Cluster {
            app: key.1.clone(),
            source,
        })?;
    let Some(app) = app else { return Ok(None) };
    let mut state = ReconcileState {
        options: run.clone(),
    };
    reconcile_once(cluster, &app, SystemTime::now(), &mut state)
        .await
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tracked_objects_name_their_app() {
        let by_annotation = json!({"metadata": {"annotations": {
            "argocd.argoproj.io/tracking-id": "payments:apps/Deployment:prod/api"}}});
        assert_eq!(tracking_app(&by_annotation), Some("payments"));
        let by_label = json!({"metadata": {"labels": {"app.kubernetes.io/instance": "web"}}});
        assert_eq!(tracking_app(&by_label), Some("web"));
        assert_eq!(tracking_app(&json!({"metadata": {}})), None);
    }

    #[test]
    fn jitter_stays_below_its_limit() {
        for _ in 0..100 {
            assert!(random_below(Duration::from_secs(60)) < Duration::from_secs(60));
        }
        assert_eq!(random_below(Duration::ZERO), Duration::ZERO);
    }
}
