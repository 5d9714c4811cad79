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
//! - Only apps of the namespaces [`crate::scope::AppScope`] serves are queued (the control
//!   namespace and `--application-namespaces`); any other is logged once as `Ignored`.
//!   [`Schedule`] (pure, unit-tested) decides which app reconciles when.
//! - At most [`ControllerOptions::workers`] apps reconcile at once; one app never twice at
//!   once (a trigger during a reconcile queues one more after it).
//! - Every reconcile reads the Application fresh from the API server (the automated-sync
//!   decision depends on the status the previous reconcile wrote) and resumes an operation
//!   left `Running` by a stopped controller (see [`crate::run::resume_app`]).
//! - Apps aimed at another cluster go through [`Connections`]: one connection and one
//!   watch cache per destination cluster Secret, started on first use (their changes queue
//!   apps as home's do; Applications there are not plumb's to serve) and dropped
//!   (`Connections::drop_idle`, event `DestinationDropped`) once no app asked for it in two
//!   refresh intervals. `tests/multicluster.rs` runs this on two test beds (the second
//!   started and stopped by the test with `testbed/up.sh` / `down.sh`). A destination that
//!   cannot be reached fails only its apps (a `ComparisonError` condition naming its server);
//!   the others go on.
//! - A reconcile that failed on something that may pass — an unreachable destination, an API
//!   server error, a render — is tried again after 5 s, doubling up to the refresh interval,
//!   each wait plus a random tenth at most, so apps failed by one outage (an API server
//!   restart) do not all come back in the same instant ([`retries_soon`], [`error_retry`],
//!   [`spread`]).
//! - A git push webhook ([`PushRefresher`], see [`crate::webhook`]) queues the apps it names
//!   at once, and expires their repositories' mirrors so that the refresh fetches.

pub mod appsets;
mod push;
pub mod shard;
pub use push::PushRefresher;

use crate::auto::Decision;
use crate::run::destinations::Connections;
use crate::run::{
    DestinationsHandle, ReconcileOutcome, ReconcileState, RunError, RunOptions, reconcile_once,
};
use plumb_cluster::{Change, ChangeKind, Cluster, LiveCache};
use plumb_core::{GroupKind, INSTANCE_LABEL, TRACKING_ID_ANNOTATION};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{Semaphore, broadcast, mpsc, watch};

/// How soon after a failed sync its app is reconciled again, to decide the retry.
const RETRY_DECISION: Duration = Duration::from_secs(1);

/// An Application: namespace and name.
pub type AppKey = (String, String);

/// How many apps the loop takes from the schedule at a time.
const BATCH: usize = 256;

/// How many of `apps` this replica owns.
fn owned_among(apps: &[AppKey], view: &shard::ShardView) -> usize {
    apps.iter().filter(|k| view.owns(k)).count()
}

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
    /// Namespace-scoped rights (Roles, no ClusterRole): only the Applications of
    /// `app_namespace` are watched, and live objects are read with LISTs per namespace
    /// instead of the cluster-wide watch cache (a tracked object's change is then seen
    /// at the next refresh, not within a second).
    pub namespaced: bool,
    /// `--application-namespaces`: namespaces besides the control namespace
    /// (`run.control_namespace`) whose Applications are served ([`crate::scope`]).
    pub application_namespaces: plumb_core::glob::NamespaceList,
    /// Sync-loop recognition and LoopGuard ([`crate::loops`]); its `settle` is set to
    /// `refresh` when the controller starts.
    pub loops: crate::loops::LoopOptions,
    /// Sharding ([`crate::shard`]): only the apps this replica owns are reconciled, each
    /// claimed and written through the fence in `run.fence`. `None`: every app.
    pub shard: Option<Arc<shard::ShardView>>,
}

impl ControllerOptions {
    /// The namespaces whose Applications this controller serves.
    pub fn scope(&self) -> crate::scope::AppScope {
        crate::scope::AppScope {
            only: self.app_namespace.clone(),
            control: self.run.control_namespace.clone(),
            others: self.application_namespaces.clone(),
        }
    }
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
            namespaced: false,
            application_namespaces: Default::default(),
            loops: crate::loops::LoopOptions::default(),
            shard: None,
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
    /// An Application is gone (deleted, its finalizers done).
    Removed { app: &'a AppKey },
    /// An Application in a namespace the controller does not serve: ignored (reported once).
    Ignored { app: &'a AppKey },
    /// The connection and watch cache of a destination no app used in two refresh intervals
    /// were dropped (`namespace/name` of its cluster Secret).
    DestinationDropped { secret: &'a str },
    /// Sharded: the members changed (or the periodic count): how many there are, how many
    /// served apps this replica owns, and how many apps changed owner with this change.
    Shard {
        members: &'a [String],
        owned: usize,
        reassigned: u64,
    },
    /// Every refresh interval: the apps whose last reconcile (`status.reconciledAt`) is older
    /// than twice the refresh interval, whoever owns them (usually none; an owner gone
    /// unnoticed would leave a stale Synced showing).
    Stale { apps: &'a [AppKey] },
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
    /// A git push webhook named it.
    Webhook,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::App => "app",
            Trigger::Watch => "watch",
            Trigger::Timer => "timer",
            Trigger::Webhook => "webhook",
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

/// The Application kind of `group` (plumb's or Argo CD's, [`Cluster::app_group`]).
fn application_kind(group: &str) -> GroupKind {
    GroupKind::new(group, plumb_cluster::APPLICATION_KIND)
}

/// Whether `key` is an Application of `group`.
fn is_application(key: &plumb_core::ResourceKey, group: &str) -> bool {
    key.group == group && key.kind == plumb_cluster::APPLICATION_KIND
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
    /// Connections (and watch caches) of destinations other than home.
    destinations: Arc<Connections>,
    /// Their watch caches' changes (taken by [`Controller::run`]).
    destination_changes: std::sync::Mutex<Option<mpsc::UnboundedReceiver<Change>>>,
    /// Apps a push webhook asks to refresh now (the receiver is taken by [`Controller::run`]).
    pushed: (mpsc::UnboundedSender<Vec<AppKey>>, PushedReceiver),
    /// Every app's sync-loop tracker.
    loops: crate::run::LoopsHandle,
}

type PushedReceiver = std::sync::Mutex<Option<mpsc::UnboundedReceiver<Vec<AppKey>>>>;

impl Controller {
    /// Starts the watches (every kind an app could own, and Applications) and returns once
    /// their initial lists are cached.
    pub async fn start(
        cluster: Arc<Cluster>,
        opts: ControllerOptions,
    ) -> Result<Controller, plumb_cluster::ClusterError> {
        let apps = application_kind(cluster.app_group());
        let cache = match (opts.namespaced, &opts.app_namespace) {
            (true, Some(ns)) => cluster.watch_cache_in(&[apps], ns).await?,
            _ => {
                let cache = cluster.watch_cache_all().await?;
                cache.ensure_kind(&apps).await?;
                cache
            }
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let (pushed_tx, pushed_rx) = mpsc::unbounded_channel();
        let loops = crate::run::LoopsHandle::new(crate::loops::LoopOptions {
            settle: opts.refresh,
            ..opts.loops
        });
        Ok(Controller {
            loops,
            cluster,
            cache,
            opts,
            destinations: Arc::new(Connections::watching(tx)),
            destination_changes: std::sync::Mutex::new(Some(rx)),
            pushed: (pushed_tx, std::sync::Mutex::new(Some(pushed_rx))),
        })
    }

    /// The watch-fed cache (objects cached, kinds watched).
    pub fn cache(&self) -> &LiveCache {
        &self.cache
    }

    fn run_options(&self) -> RunOptions {
        let mut run = self.opts.run.clone();
        if !self.opts.namespaced {
            run.cache = Some(crate::run::CacheHandle(self.cache.clone()));
        }
        run.destinations = Some(DestinationsHandle(self.destinations.clone()));
        run.loops = Some(self.loops.clone());
        run
    }

    /// A handle that refreshes the apps a git push concerns, now (see [`PushRefresher`]).
    pub fn push_refresher(&self) -> PushRefresher {
        PushRefresher::new(
            self.cache.clone(),
            self.opts.scope(),
            self.opts.app_namespace.clone(),
            self.cluster.app_group(),
            self.opts.run.repos.clone(),
            self.pushed.0.clone(),
        )
    }

    /// The destination connections (cluster Secrets `namespace/name`) made so far.
    pub fn destinations(&self) -> Vec<String> {
        self.destinations.secrets()
    }

    /// The Applications the controller is responsible for, as cached.
    pub fn apps(&self) -> Vec<AppKey> {
        self.apps_and_ignored().0
    }

    /// The cached Applications served, and those in namespaces not served; both sorted.
    fn apps_and_ignored(&self) -> (Vec<AppKey>, Vec<AppKey>) {
        let scope = self.opts.scope();
        // Keys only: this runs on every change of the members, and parsing every
        // Application (status included) was most of a sharded replica's peak memory.
        self.cache
            .keys(
                &application_kind(self.cluster.app_group()),
                self.opts.app_namespace.as_deref(),
            )
            .into_iter()
            .partition(|k| scope.serves(&k.0))
    }

    /// One pass over every Application (`plumb controller --once`), `workers` at a time.
    /// Results are sorted by namespace and name.
    pub async fn pass(
        &self,
        log: Arc<dyn Fn(Event<'_>) + Send + Sync>,
    ) -> Vec<(AppKey, Result<ReconcileOutcome, RunError>)> {
        let run = Arc::new(self.run_options());
        let workers = Arc::new(Semaphore::new(self.opts.workers.max(1)));
        let mut set = tokio::task::JoinSet::new();
        let (apps, ignored) = self.apps_and_ignored();
        for key in &ignored {
            log(Event::Ignored { app: key });
        }
        for key in apps {
            if self.opts.shard.as_ref().is_some_and(|v| !v.owns(&key)) {
                continue;
            }
            let Ok(permit) = workers.clone().acquire_owned().await else {
                break;
            };
            let (cluster, run, log) = (self.cluster.clone(), run.clone(), log.clone());
            set.spawn(async move {
                let _permit = permit;
                let r = reconcile_logged(&cluster, &run, &key, Trigger::Timer, &*log).await;
                r.map(|r| (key, r))
            });
        }
        let mut out = Vec::new();
        while let Some(joined) = set.join_next().await {
            if let Ok(Some(done)) = joined {
                out.push(done);
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
        let mut remote_changes = self
            .destination_changes
            .lock()
            .ok()
            .and_then(|mut r| r.take())
            .unwrap_or_else(|| mpsc::unbounded_channel().1);
        let mut pushed = self
            .pushed
            .1
            .lock()
            .ok()
            .and_then(|mut r| r.take())
            .unwrap_or_else(|| mpsc::unbounded_channel().1);
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(AppKey, Option<Duration>, bool)>();
        // Apps whose last reconciles failed on something that may pass (see
        // `retries_soon`), and how many times in a row.
        let mut failing: HashMap<AppKey, u32> = HashMap::new();
        let workers = Arc::new(Semaphore::new(opts.workers.max(1)));
        let group = self.cluster.app_group();
        let mut schedule = Schedule::new(opts).serving(group);
        let now = Instant::now();
        let scope = opts.scope();
        let mut ignored = HashSet::new();
        self.cache.each(
            &application_kind(group),
            opts.app_namespace.as_deref(),
            |app| {
                schedule.know_app(app, now);
                if let Some(key) = app_key(app)
                    && !scope.serves(&key.0)
                    && ignored.insert(key.clone())
                {
                    log(Event::Ignored { app: &key });
                }
            },
        );

        // Sharded: the members as last seen, and their changes.
        let mut members_changed = opts
            .shard
            .as_ref()
            .map(|v| v.subscribe())
            .unwrap_or_else(|| watch::channel(Vec::new()).1);
        let mut known_members: Vec<String> =
            opts.shard.as_ref().map(|v| v.members()).unwrap_or_default();
        if let Some(view) = &opts.shard {
            log(Event::Shard {
                members: &known_members,
                owned: self.owned(view),
                reassigned: 0,
            });
        }
        // Every refresh interval: apps nobody reconciled for two.
        let mut stale_tick =
            tokio::time::interval_at(tokio::time::Instant::now() + opts.refresh, opts.refresh);
        stale_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // Start what is due (and not running), as workers allow.
            // In batches: with thousands due at once, only what the workers can take (and the
            // other replicas' apps, moved out of the way) is looked at.
            let mut full = false;
            while !full {
                let batch = schedule.ready_at_most(Instant::now(), BATCH);
                let last = batch.len() < BATCH;
                for (key, trigger) in batch {
                    // Another replica's app: looked at again at the next refresh (or when the
                    // members change).
                    if opts.shard.as_ref().is_some_and(|v| !v.owns(&key)) {
                        schedule.skip(key, Instant::now(), random_below(opts.jitter));
                        continue;
                    }
                    let Ok(permit) = workers.clone().try_acquire_owned() else {
                        full = true;
                        break;
                    };
                    schedule.start(&key);
                    let (cluster, run, log, done) = (
                        self.cluster.clone(),
                        run.clone(),
                        log.clone(),
                        done_tx.clone(),
                    );
                    tokio::spawn(async move {
                        let result = reconcile_logged(&cluster, &run, &key, trigger, &*log).await;
                        let backoff = match &result {
                            Some(Ok(outcome)) => match outcome.decision {
                                Some(Decision::WaitUntil { at, .. }) => {
                                    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
                                }
                                // A sync that just failed: its retry (`syncPolicy.retry`'s
                                // backoff) is decided by the next reconcile, soon, not at the
                                // next refresh.
                                _ if outcome
                                    .sync
                                    .as_ref()
                                    .is_some_and(|s| matches!(s.phase, "Failed" | "Error")) =>
                                {
                                    Some(RETRY_DECISION)
                                }
                                _ => None,
                            },
                            _ => None,
                        };
                        let failed = matches!(&result, Some(Err(e)) if retries_soon(e));
                        drop(permit);
                        let _ = done.send((key, backoff, failed));
                    });
                }
                if last {
                    break;
                }
            }
            // Every worker busy: the next thing to do comes with a reconcile's end (or an event),
            // not with a timer.
            let sleep = match schedule.next_due() {
                _ if full => Duration::from_secs(3600),
                None => Duration::from_secs(3600),
                Some(at) => at
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(10)),
            };

            tokio::select! {
                _ = stop.changed() => {
                    if *stop.borrow() { break; }
                }
                Ok(()) = members_changed.changed(), if opts.shard.is_some() => {
                    let members = members_changed.borrow_and_update().clone();
                    self.on_members(&members, &mut known_members, &mut schedule, &*log);
                }
                _ = stale_tick.tick() => {
                    let stale = self.stale(SystemTime::now());
                    log(Event::Stale { apps: &stale });
                    if let Some(view) = &opts.shard {
                        log(Event::Shard {
                            members: &known_members,
                            owned: self.owned(view),
                            reassigned: 0,
                        });
                    }
                }
                done = done_rx.recv() => {
                    let Some((key, mut wait, failed)) = done else { break };
                    if failed {
                        let n = failing.entry(key.clone()).or_insert(0);
                        *n += 1;
                        wait = Some(spread(error_retry(*n, opts.refresh), random_below));
                    } else {
                        failing.remove(&key);
                    }
                    schedule.finished(key, Instant::now(), wait, random_below(opts.jitter));
                    // A destination no app asked for in two refresh intervals is one no app
                    // uses any more: its connection and watch cache go.
                    for secret in self.destinations.drop_idle(2 * opts.refresh + opts.jitter) {
                        log(Event::DestinationDropped { secret: &secret });
                    }
                }
                Some(keys) = pushed.recv() => {
                    for key in keys {
                        schedule.refresh_now(key, Instant::now());
                    }
                }
                Some(change) = remote_changes.recv() => {
                    // Another cluster's objects; its Applications are not ours to serve.
                    if !is_application(&change.key, group) {
                        schedule.on_change(&change, Instant::now());
                    }
                }
                change = changes.recv() => {
                    match change {
                        Ok(change) => {
                            schedule.on_change(&change, Instant::now());
                            if change.kind != ChangeKind::Deleted
                                && is_application(&change.key, group)
                                && !scope.serves(&change.key.namespace)
                            {
                                let key = (change.key.namespace.clone(), change.key.name.clone());
                                if ignored.insert(key.clone()) {
                                    log(Event::Ignored { app: &key });
                                }
                            }
                            if change.kind == ChangeKind::Deleted
                                && is_application(&change.key, group)
                            {
                                let key = (change.key.namespace.clone(), change.key.name.clone());
                                self.loops.forget(&key.0, &key.1);
                                failing.remove(&key);
                                log(Event::Removed { app: &key });
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(missed)) => {
                            log(Event::Lagged { missed });
                            schedule.queue_all(Instant::now());
                        }
                        Err(broadcast::error::RecvError::Closed) => break,
                    }
                }
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }

    /// The members changed: count the apps that changed owner, and queue every app (the
    /// ones this replica now owns reconcile at once; an interrupted operation of a replica
    /// that left is resumed by its new owner).
    fn on_members(
        &self,
        members: &[String],
        known: &mut Vec<String>,
        schedule: &mut Schedule,
        log: &(dyn Fn(Event<'_>) + Send + Sync),
    ) {
        let Some(view) = &self.opts.shard else { return };
        let apps = self.apps();
        let moved = apps
            .iter()
            .filter(|(ns, name)| {
                crate::shard::owner(known, ns, name) != crate::shard::owner(members, ns, name)
            })
            .count() as u64;
        *known = members.to_vec();
        schedule.queue_all(Instant::now());
        log(Event::Shard {
            members,
            owned: owned_among(&apps, view),
            reassigned: moved,
        });
    }

    /// How many of the served apps this replica owns.
    fn owned(&self, view: &shard::ShardView) -> usize {
        owned_among(&self.apps(), view)
    }

    /// The served apps whose `status.reconciledAt` is older than twice the refresh interval
    /// (plus jitter) at `now`; an app never reconciled counts from its creation.
    pub fn stale(&self, now: SystemTime) -> Vec<AppKey> {
        let limit = 2 * self.opts.refresh + self.opts.jitter;
        let scope = self.opts.scope();
        let mut out: Vec<AppKey> = Vec::new();
        self.cache.each(
            &application_kind(self.cluster.app_group()),
            self.opts.app_namespace.as_deref(),
            |a| {
                let at = a
                    .pointer("/status/reconciledAt")
                    .or_else(|| a.pointer("/metadata/creationTimestamp"))
                    .and_then(Value::as_str)
                    .and_then(|t| crate::time::parse_rfc3339(t).ok());
                if at.is_some_and(|t| t + limit < now)
                    && let Some(k) = app_key(a)
                    && scope.serves(&k.0)
                {
                    out.push(k);
                }
            },
        );
        out
    }

    /// Stops the watches (home's and every destination's).
    pub fn stop(&self) {
        self.cache.stop();
        self.destinations.clear();
    }
}

/// Whether a reconcile that ended in `error` is tried again soon (per [`error_retry`]) rather
/// than at the next refresh: an unreachable destination, an API server error (a restart, a
/// timeout, 429 past its retries) or a render that failed — a git or chart fetch (whose
/// failure the repository caches remember for 30 s, so the server is asked again from the
/// first retry after that), the repository Secrets, or content in git that does not render
/// (cheap to try again, and bounded by the doubling). A refused or invalid spec, a policy or
/// a compare error stays until something changes, and a change of the Application or of its
/// objects queues it anyway.
pub fn retries_soon(error: &RunError) -> bool {
    matches!(
        error,
        RunError::Destination { .. } | RunError::Cluster { .. } | RunError::Render { .. }
    )
}

/// The wait before the `n`th retry of an app whose reconcile failed (see [`retries_soon`]):
/// 5 s, doubling, at most `max` (the refresh interval).
pub fn error_retry(n: u32, max: Duration) -> Duration {
    let first = Connections::BACKOFF_FIRST;
    first
        .saturating_mul(2u32.saturating_pow(n.saturating_sub(1).min(16)))
        .min(max.max(first))
}

/// `base` plus a random part below a tenth of it, which `draw` picks given that limit (the
/// controller's is `random_below`): apps that failed together are retried over a window
/// instead of at one instant. The random part is capped at the tenth, whatever `draw` returns.
pub fn spread(base: Duration, draw: impl FnOnce(Duration) -> Duration) -> Duration {
    let tenth = base / 10;
    base.saturating_add(draw(tenth).min(tenth))
}

/// What a reconcile answers to in an Application: everything but `metadata` and `status`
/// (`spec`, Argo CD's `operation`), and whether it is being deleted. Not
/// `metadata.generation`: Argo CD's CRD has no status subresource, so there every status
/// write moves the generation too (and would queue the app again at once, forever).
fn spec_identity(app: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if let Some(fields) = app.as_object() {
        for (k, v) in fields {
            if k != "metadata" && k != "status" {
                k.hash(&mut h);
                v.to_string().hash(&mut h);
            }
        }
    }
    app.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
        .hash(&mut h);
    h.finish()
}

/// Which app reconciles when: the controller loop's bookkeeping, without I/O or clocks (times
/// are passed in).
#[derive(Debug)]
pub struct Schedule {
    /// Next reconcile of each app, and why.
    due: HashMap<AppKey, (Instant, Trigger)>,
    /// The same entries ordered by time: the next ones due are found without a scan (10,000
    /// apps: the loop runs after every event).
    order: std::collections::BTreeSet<(Instant, AppKey)>,
    /// The [`spec_identity`] of each known app (a change of spec or operation changes it;
    /// status writes do not).
    generations: HashMap<AppKey, u64>,
    /// App keys by name: tracking annotations and labels name the app only.
    by_name: HashMap<String, HashSet<AppKey>>,
    in_flight: HashSet<AppKey>,
    /// Triggers that arrived while the app reconciled: one more reconcile after it.
    again: HashMap<AppKey, Trigger>,
    /// The namespaces served: Applications elsewhere are never queued.
    scope: crate::scope::AppScope,
    refresh: Duration,
    debounce: Duration,
    /// The API group of the Applications served.
    app_group: &'static str,
}

impl Schedule {
    pub fn new(opts: &ControllerOptions) -> Schedule {
        Schedule {
            due: HashMap::new(),
            order: std::collections::BTreeSet::new(),
            generations: HashMap::new(),
            by_name: HashMap::new(),
            in_flight: HashSet::new(),
            again: HashMap::new(),
            scope: opts.scope(),
            refresh: opts.refresh,
            debounce: opts.debounce,
            app_group: plumb_core::PLUMB_GROUP,
        }
    }

    /// The same schedule for the Applications of `group` (`argoproj.io`: Argo CD's own).
    pub fn serving(mut self, group: &'static str) -> Schedule {
        self.app_group = group;
        self
    }

    /// Queues `key` at `at` unless it is queued sooner already.
    fn queue(&mut self, key: AppKey, at: Instant, trigger: Trigger) {
        match self.due.get_mut(&key) {
            Some(entry) if entry.0 <= at => {}
            Some(entry) => {
                self.order.remove(&(entry.0, key.clone()));
                *entry = (at, trigger);
                self.order.insert((at, key));
            }
            None => {
                self.due.insert(key.clone(), (at, trigger));
                self.order.insert((at, key));
            }
        }
    }

    /// `key` no longer queued.
    fn unqueue(&mut self, key: &AppKey) {
        if let Some((at, _)) = self.due.remove(key) {
            self.order.remove(&(at, key.clone()));
        }
    }

    /// An Application seen (listed, added or modified): queued now when it is new, its spec
    /// changed, or it carries `argocd.argoproj.io/refresh` (a refresh asked for by hand).
    pub fn know_app(&mut self, app: &Value, now: Instant) {
        let Some(key) = app_key(app) else { return };
        if !self.scope.serves(&key.0) {
            return;
        }
        let generation = spec_identity(app);
        let refresh_asked =
            plumb_core::value::annotation(app, crate::run::REFRESH_ANNOTATION).is_some();
        if self.generations.insert(key.clone(), generation) != Some(generation) || refresh_asked {
            self.queue(key.clone(), now, Trigger::App);
        }
        self.by_name.entry(key.1.clone()).or_default().insert(key);
    }

    /// A change the watches report.
    pub fn on_change(&mut self, change: &Change, now: Instant) {
        if is_application(&change.key, self.app_group) {
            let key = (change.key.namespace.clone(), change.key.name.clone());
            if change.kind == ChangeKind::Deleted {
                self.generations.remove(&key);
                self.unqueue(&key);
                self.again.remove(&key);
                if let Some(set) = self.by_name.get_mut(&key.1) {
                    set.remove(&key);
                }
            } else {
                self.know_app(&change.object, now);
            }
        }
        // A tracked object's app is refreshed: an app-of-apps' children are Applications too
        // (their health is the parent's), but an app that tracks itself is not refreshed by
        // its own status writes.
        let Some(app) = tracking_app(&change.object) else {
            return;
        };
        if is_application(&change.key, self.app_group) && app == change.key.name {
            return;
        }
        let keys: Vec<AppKey> = self
            .by_name
            .get(app)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default();
        for key in keys {
            if self.in_flight.contains(&key) {
                self.again.insert(key, Trigger::Watch);
            } else {
                self.queue(key, now + self.debounce, Trigger::Watch);
            }
        }
    }

    /// A push webhook named `key`: refreshed now, or right after the reconcile under way
    /// (which may have read the repository before the push).
    pub fn refresh_now(&mut self, key: AppKey, now: Instant) {
        if !self.generations.contains_key(&key) {
            return; // not (yet) known, or not served: its first sight refreshes it anyway
        }
        if self.in_flight.contains(&key) {
            self.again.insert(key, Trigger::Webhook);
        } else {
            self.queue(key.clone(), now, Trigger::Webhook);
            if let Some(entry) = self.due.get_mut(&key) {
                entry.1 = Trigger::Webhook;
            }
        }
    }

    /// Every known app, soon (the watch channel overflowed: changes were missed).
    pub fn queue_all(&mut self, now: Instant) {
        let keys: Vec<AppKey> = self.generations.keys().cloned().collect();
        for key in keys {
            self.queue(key, now + self.debounce, Trigger::Watch);
        }
    }

    /// The apps due at `now` that are not reconciling, earliest first.
    pub fn ready(&self, now: Instant) -> Vec<(AppKey, Trigger)> {
        self.ready_at_most(now, usize::MAX)
    }

    /// The first `limit` of [`Schedule::ready`] (the loop takes what its workers can start,
    /// not every app due).
    pub fn ready_at_most(&self, now: Instant, limit: usize) -> Vec<(AppKey, Trigger)> {
        self.order
            .iter()
            .take_while(|(at, _)| *at <= now)
            .filter(|(_, k)| !self.in_flight.contains(k))
            .take(limit)
            .filter_map(|(_, k)| self.due.get(k).map(|(_, t)| (k.clone(), *t)))
            .collect()
    }

    /// A reconcile of `key` starts.
    pub fn start(&mut self, key: &AppKey) {
        self.unqueue(key);
        self.in_flight.insert(key.clone());
    }

    /// Another replica's app (sharded): looked at again after the refresh interval plus
    /// `jitter`, unless something queues it sooner.
    pub fn skip(&mut self, key: AppKey, now: Instant, jitter: Duration) {
        self.unqueue(&key);
        if self.generations.contains_key(&key) && !self.in_flight.contains(&key) {
            self.queue(key, now + self.refresh + jitter, Trigger::Timer);
        }
    }

    /// A reconcile of `key` ended: the next one after a trigger that came meanwhile, else
    /// after the refresh interval plus `jitter`, or sooner when a backoff is due (`wait`).
    pub fn finished(
        &mut self,
        key: AppKey,
        now: Instant,
        wait: Option<Duration>,
        jitter: Duration,
    ) {
        self.in_flight.remove(&key);
        if !self.generations.contains_key(&key) {
            return; // deleted meanwhile
        }
        let (at, trigger) = match self.again.remove(&key) {
            Some(t) => (now + self.debounce, t),
            None => {
                let refresh = now + self.refresh + jitter;
                let at = wait.map_or(refresh, |w| refresh.min(now + w));
                (at, Trigger::Timer)
            }
        };
        self.queue(key, at, trigger);
    }

    /// When the next app is due (reconciling ones aside).
    pub fn next_due(&self) -> Option<Instant> {
        self.order
            .iter()
            .find(|(_, k)| !self.in_flight.contains(k))
            .map(|(at, _)| *at)
    }
}

fn app_key(app: &Value) -> Option<AppKey> {
    let meta = app.get("metadata")?;
    Some((
        meta.get("namespace")?.as_str()?.to_string(),
        meta.get("name")?.as_str()?.to_string(),
    ))
}

/// Reads the Application fresh and reconciles it; `None` when it is gone. Sharded (a fence in
/// `run`): the app is claimed first when another replica's (or nobody's) record is on it, and
/// every write of the reconcile goes through [`shard::Fenced`] under that claim.
async fn reconcile_app(
    cluster: &Arc<Cluster>,
    run: &RunOptions,
    key: &AppKey,
) -> Result<Option<ReconcileOutcome>, RunError> {
    let as_error = |source| RunError::Cluster {
        app: key.1.clone(),
        source,
    };
    let app = cluster
        .get_application(&key.0, &key.1)
        .await
        .map_err(as_error)?;
    let Some(mut app) = app else { return Ok(None) };
    let mut state = ReconcileState {
        options: run.clone(),
    };
    let Some(fence) = &run.fence else {
        return reconcile_once(&**cluster, &app, SystemTime::now(), &mut state)
            .await
            .map(Some);
    };
    fence.check().map_err(as_error)?;
    let epoch = match crate::shard::claim_patch(&app, &fence.me, &fence.instance, SystemTime::now())
    {
        None => crate::shard::claim_of(&app).map_or(0, |c| c.1),
        Some((patch, epoch)) => {
            // Pinned to the resourceVersion read: of two claims, one lands.
            app = cluster
                .patch_application_status(&key.0, &key.1, &patch)
                .await
                .map_err(as_error)?;
            epoch
        }
    };
    let fenced = shard::Fenced {
        inner: cluster.clone(),
        fence: fence.clone(),
        epoch: Some(epoch),
    };
    reconcile_once(&fenced, &app, SystemTime::now(), &mut state)
        .await
        .map(Some)
}

/// [`reconcile_app`], timed and reported through `log`; `None` when the app is gone.
async fn reconcile_logged(
    cluster: &Arc<Cluster>,
    run: &RunOptions,
    key: &AppKey,
    trigger: Trigger,
    log: &(dyn Fn(Event<'_>) + Send + Sync),
) -> Option<Result<ReconcileOutcome, RunError>> {
    let started = Instant::now();
    let r = reconcile_app(cluster, run, key).await.transpose()?;
    match &r {
        Ok(outcome) => log(Event::Reconciled {
            app: key,
            outcome,
            took: started.elapsed(),
            trigger,
        }),
        Err(error) => log(Event::Failed {
            app: key,
            error,
            trigger,
        }),
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_failed_reconcile_is_retried_after_5_s_doubling_up_to_the_interval() {
        let hour = Duration::from_secs(3600);
        let waits: Vec<u64> = (1..=11).map(|n| error_retry(n, hour).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600]);
        assert_eq!(error_retry(u32::MAX, hour), hour);
        // An interval below the first wait: the first wait.
        assert_eq!(
            error_retry(3, Duration::from_secs(1)),
            Duration::from_secs(5)
        );
        let render = RunError::Render {
            app: "a".into(),
            reason: "fetch failed".into(),
        };
        let refused = RunError::Refused {
            app: "a".into(),
            reason: "not permitted".into(),
        };
        assert!(retries_soon(&render));
        assert!(!retries_soon(&refused));
    }

    #[test]
    fn a_retry_wait_is_spread_by_at_most_a_tenth() {
        let base = Duration::from_secs(5);
        assert_eq!(spread(base, |_| Duration::ZERO), base);
        // The draw is asked for a part below a tenth of the wait.
        let asked = |limit: Duration| {
            assert_eq!(limit, Duration::from_millis(500));
            Duration::from_millis(300)
        };
        assert_eq!(spread(base, asked), Duration::from_millis(5300));
        // More than a tenth is capped at a tenth.
        assert_eq!(
            spread(base, |_| Duration::from_secs(60)),
            Duration::from_millis(5500)
        );
        assert_eq!(spread(Duration::MAX, |_| Duration::MAX), Duration::MAX);
        // The controller's draw stays below a tenth, and varies: 200 draws for a 5 s wait
        // are not all one value (the chance that they are is nil).
        let draws: HashSet<Duration> = (0..200).map(|_| spread(base, random_below)).collect();
        assert!(draws.iter().all(|d| *d >= base && *d < base + base / 10));
        assert!(draws.len() > 1, "{draws:?}");
    }

    #[test]
    fn tracked_objects_name_their_app() {
        let by_annotation = json!({"metadata": {"annotations": {
            "argocd.argoproj.io/tracking-id": "payments:apps/Deployment:prod/api"}}});
        assert_eq!(tracking_app(&by_annotation), Some("payments"));
        let by_label = json!({"metadata": {"labels": {"app.kubernetes.io/instance": "web"}}});
        assert_eq!(tracking_app(&by_label), Some("web"));
        assert_eq!(tracking_app(&json!({"metadata": {}})), None);
    }

    /// An Application at `generation`: its spec changes with it.
    fn app(ns: &str, name: &str, generation: i64) -> Value {
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"namespace": ns, "name": name, "generation": generation},
            "spec": {"project": format!("p{generation}")}})
    }

    fn change(obj: Value, kind: ChangeKind) -> Change {
        Change {
            key: plumb_core::ResourceKey::of(&obj).expect("key"),
            kind,
            object: Arc::new(obj),
        }
    }

    fn key(ns: &str, name: &str) -> AppKey {
        (ns.to_string(), name.to_string())
    }

    #[test]
    fn an_app_of_apps_is_refreshed_by_its_children_and_not_by_itself() {
        let opts = ControllerOptions {
            debounce: Duration::from_secs(1),
            app_namespace: Some("argocd".into()),
            ..ControllerOptions::default()
        };
        let mut s = Schedule::new(&opts).serving(plumb_core::ARGO_GROUP);
        let t0 = Instant::now();
        let argo = |name: &str, tracked_by: &str, project: &str| {
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                "metadata": {"namespace": "argocd", "name": name,
                    "labels": {"app.kubernetes.io/instance": tracked_by}},
                "spec": {"project": project}})
        };
        for app in [argo("parent", "parent", "p"), argo("child", "parent", "p")] {
            s.know_app(&app, t0);
        }
        assert_eq!(s.ready(t0).len(), 2, "both new");
        for k in [key("argocd", "parent"), key("argocd", "child")] {
            s.start(&k);
            s.finished(k, t0, None, Duration::from_secs(3600));
        }
        // A status write of the child (same spec): the parent, which tracks it, refreshes.
        let mut child = argo("child", "parent", "p");
        child["status"] = json!({"health": {"status": "Healthy"}});
        s.on_change(&change(child, ChangeKind::Modified), t0);
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(s.ready(t1), [(key("argocd", "parent"), Trigger::Watch)]);
        // The parent's own status write (it tracks itself) queues nothing.
        s.start(&key("argocd", "parent"));
        s.finished(key("argocd", "parent"), t1, None, Duration::from_secs(3600));
        let mut parent = argo("parent", "parent", "p");
        parent["status"] = json!({"sync": {"status": "Synced"}});
        s.on_change(&change(parent, ChangeKind::Modified), t1);
        assert!(s.ready(t1 + Duration::from_secs(5)).is_empty());
        // A plumb.dev Application is not an app of this controller's group.
        let plumb_app = app("argocd", "parent", 7);
        s.on_change(&change(plumb_app, ChangeKind::Modified), t1);
        assert!(s.ready(t1 + Duration::from_secs(5)).is_empty());
    }

    #[test]
    fn schedule_follows_apps_tracked_objects_and_the_refresh_interval() {
        let opts = ControllerOptions {
            refresh: Duration::from_secs(180),
            debounce: Duration::from_secs(1),
            app_namespace: Some("apps".into()),
            ..ControllerOptions::default()
        };
        let mut s = Schedule::new(&opts);
        let t0 = Instant::now();
        s.know_app(&app("apps", "web", 1), t0);
        s.know_app(&app("elsewhere", "web", 1), t0);
        assert_eq!(s.ready(t0), [(key("apps", "web"), Trigger::App)]);
        s.start(&key("apps", "web"));
        assert!(s.ready(t0).is_empty(), "one reconcile per app at a time");

        // A tracked object changes while it reconciles: once more, right after.
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "namespace": "prod", "annotations": {
                "argocd.argoproj.io/tracking-id": "web:/ConfigMap:prod/c"}}});
        s.on_change(&change(cm.clone(), ChangeKind::Modified), t0);
        s.finished(key("apps", "web"), t0, None, Duration::ZERO);
        assert_eq!(s.next_due(), Some(t0 + Duration::from_secs(1)));
        assert_eq!(
            s.ready(t0 + Duration::from_secs(1)),
            [(key("apps", "web"), Trigger::Watch)]
        );
        s.start(&key("apps", "web"));
        s.finished(key("apps", "web"), t0, None, Duration::from_secs(7));
        assert_eq!(
            s.next_due(),
            Some(t0 + Duration::from_secs(187)),
            "interval + jitter"
        );

        // A status write (same generation) queues nothing; a spec change queues it now.
        s.on_change(&change(app("apps", "web", 1), ChangeKind::Modified), t0);
        assert_eq!(s.next_due(), Some(t0 + Duration::from_secs(187)));
        s.on_change(&change(app("apps", "web", 2), ChangeKind::Modified), t0);
        assert_eq!(s.ready(t0), [(key("apps", "web"), Trigger::App)]);
        s.start(&key("apps", "web"));
        s.finished(key("apps", "web"), t0, None, Duration::from_secs(7));
        // A refresh asked for by hand (the annotation, same generation) queues it now.
        let mut refresh = app("apps", "web", 2);
        refresh["metadata"]["annotations"] = json!({"argocd.argoproj.io/refresh": "normal"});
        s.on_change(&change(refresh, ChangeKind::Modified), t0);
        assert_eq!(s.ready(t0), [(key("apps", "web"), Trigger::App)]);
        s.start(&key("apps", "web"));
        // A backoff due sooner than the interval wins.
        s.finished(
            key("apps", "web"),
            t0,
            Some(Duration::from_secs(6)),
            Duration::ZERO,
        );
        assert_eq!(s.next_due(), Some(t0 + Duration::from_secs(6)));

        // An untracked object, or one of another app, queues nothing new.
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "prod", "labels": {"app.kubernetes.io/instance": "api"}}});
        s.on_change(&change(other, ChangeKind::Added), t0);
        assert_eq!(s.next_due(), Some(t0 + Duration::from_secs(6)));
        // A deleted tracked object is drift too: queued after the debounce.
        s.on_change(&change(cm, ChangeKind::Deleted), t0);
        assert_eq!(s.next_due(), Some(t0 + Duration::from_secs(1)));

        // A deleted Application is forgotten, also when it was reconciling.
        s.start(&key("apps", "web"));
        s.on_change(&change(app("apps", "web", 2), ChangeKind::Deleted), t0);
        s.finished(key("apps", "web"), t0, None, Duration::ZERO);
        assert_eq!(s.next_due(), None);
        s.queue_all(t0);
        assert_eq!(s.next_due(), None);
    }

    #[test]
    fn a_push_queues_known_apps_now_or_right_after_their_reconcile() {
        let opts = ControllerOptions {
            app_namespace: Some("apps".into()),
            ..ControllerOptions::default()
        };
        let mut s = Schedule::new(&opts);
        let t0 = Instant::now();
        s.know_app(&app("apps", "web", 1), t0);
        s.start(&key("apps", "web"));
        s.finished(key("apps", "web"), t0, None, Duration::ZERO);
        assert_eq!(s.next_due(), Some(t0 + Duration::from_secs(180)));
        s.refresh_now(key("apps", "web"), t0);
        assert_eq!(s.ready(t0), [(key("apps", "web"), Trigger::Webhook)]);
        // During a reconcile (which may have read git before the push): once more after it.
        s.start(&key("apps", "web"));
        s.refresh_now(key("apps", "web"), t0);
        assert!(s.ready(t0).is_empty());
        s.finished(key("apps", "web"), t0, None, Duration::ZERO);
        assert_eq!(
            s.ready(t0 + Duration::from_secs(1)),
            [(key("apps", "web"), Trigger::Webhook)]
        );
        // Unknown apps are not queued.
        s.refresh_now(key("apps", "api"), t0);
        assert_eq!(s.due.len(), 1);
    }

    #[test]
    fn jitter_stays_below_its_limit() {
        for _ in 0..100 {
            assert!(random_below(Duration::from_secs(60)) < Duration::from_secs(60));
        }
        assert_eq!(random_below(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn another_replicas_app_is_skipped_until_the_next_refresh_and_the_earliest_come_first() {
        let opts = ControllerOptions {
            refresh: Duration::from_secs(180),
            ..ControllerOptions::default()
        };
        let mut s = Schedule::new(&opts);
        let t0 = Instant::now();
        for name in ["c", "a", "b"] {
            s.know_app(&app("apps", name, 1), t0);
        }
        assert_eq!(s.ready_at_most(t0, 2).len(), 2);
        s.skip(key("apps", "a"), t0, Duration::ZERO);
        assert_eq!(
            s.ready(t0),
            [
                (key("apps", "b"), Trigger::App),
                (key("apps", "c"), Trigger::App)
            ]
        );
        assert_eq!(s.next_due(), Some(t0));
        s.start(&key("apps", "b"));
        s.start(&key("apps", "c"));
        assert_eq!(s.next_due(), Some(t0 + Duration::from_secs(180)));
        assert!(s.ready(t0 + Duration::from_secs(179)).is_empty());
        assert_eq!(
            s.ready(t0 + Duration::from_secs(180)),
            [(key("apps", "a"), Trigger::Timer)]
        );
    }
}
