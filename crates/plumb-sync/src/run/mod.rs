//! Running a sync against a cluster: the I/O around the pure core of this crate.
//!
//! [`refresh_app`] renders an Application's source, lists live objects, compares them
//! (client-side, as `plumb diff --cluster` does) and writes the Application's status.
//! [`sync_app`] does the same, then executes the [`plan`] batch by
//! batch (server-side apply with field manager `plumb` and forced conflicts, `Replace=true`
//! as PUT, prune as DELETE with the prune propagation policy, `CreateNamespace=true`),
//! compares again and writes `status.operationState`, the history entry, sync status and
//! health. [`reconcile_once`] is one controller pass over one Application: refresh, then the
//! automated-sync decision ([`crate::auto::automated_decision`]) and,
//! when it says so, a sync.
//!
//! Everything the automated decision needs is read back from the Application's status
//! (the last operation, its revision and source, `retryCount`, and
//! `operationState.operation.sync.autoHealAttemptsCount`), so a restarted controller decides
//! as the previous one would have.
//!
//! Applied objects carry the app's tracking (as the compare injects it: annotation
//! `argocd.argoproj.io/tracking-id` by default, or the `app.kubernetes.io/instance` label per
//! `application.resourceTrackingMethod`) and `kubectl.kubernetes.io/last-applied-configuration`,
//! so the three-way compare sees a field that git stopped declaring (and the next sync, a
//! server-side apply without it, removes it).
//!
//! Every request goes through [`plumb_cluster::ClusterApi`] (`&dyn ClusterApi`: a
//! [`plumb_cluster::Cluster`], or in unit tests the in-memory cluster of `plumb-cluster`'s
//! `memory` feature; see `run/tests.rs`). Not done here (yet): server-side diff during a sync.
//!
//! **The pipeline.** A refresh or a sync runs the application pipeline (`observe`: locate,
//! fetch and render in `spawn_blocking`, prepare with the cluster's discovery, LIST,
//! compare), then plans. `observe` is two halves: `observe_desired` renders and prepares with
//! discovery only, `observe_live` LISTs and compares; a manual sync, a dry run and a resume
//! judge admission in between (see [`tenancy`]), so a refused kind is not even listed. Before
//! fetching an app with a chart source, `repository_secrets` lists the repository Secrets of
//! the control namespace for the chart cache. A sync's compare after applying LISTs (it must
//! see its own writes); refreshes read the watch cache ([`RunOptions::cache`]).
//!
//! **Multiple sources.** The `Observation` keeps every source and the revision each fetched
//! to (`ref:` sources included); status records them as Argo CD does: `sync.revisions`,
//! `comparedTo.sources`, `operation.sync.revisions`, `syncResult.revisions/sources`, history
//! `revisions/sources`. A rollback of such an entry syncs its sources, each at its revision,
//! in place of `spec.sources` (`with_source` given a list).
//!
//! **All state lives in the Application's status.** A running operation writes its progress
//! there (phase `Running`, its revision — one per source for a multi-source app,
//! `operation.sync.revisions`, which `observe_desired` pins each source's fetch to on resume
//! while the recorded sources stay the spec's —, start, initiator, hooks created), so a
//! restarted controller resumes it at the commits it started with; the history entry is
//! written in the same status write that ends the operation — never lost, never twice. Retries
//! are counted in `operationState.retryCount`: each retry is a new automated operation whose
//! count follows the previous one's (a zero is omitted, as Argo CD omits it); for a plain
//! directory source the retries are keyed by `syncResult.contentDigest` (the digest of its
//! desired objects, [`crate::auto::revision_identity`]) until the directory changes. Every
//! status write goes through `status_write` (the runner reads status only through the typed
//! model). Each [`SyncOutcome`] names its [`SyncTrigger`] (`manual`, `automated`,
//! `self-heal`, from the operation's initiator and the automated-sync reason), which the
//! CLI's `plumb_app_sync_total{phase,trigger}` counts.
//!
//! **Orphaned resources.** A refresh and a controller pass (`look_for_orphans`, after
//! `observe`) give [`crate::orphans::find`] the objects of the destination namespace — from
//! the watch cache (`LiveCache::top_level_in_namespace`: every namespaced kind watched, owned
//! objects skipped before parsing, no LIST) or, without one (`--namespaced`, the CLI), from
//! `ClusterApi::namespace_objects` (one LIST per namespaced kind, only when the project
//! monitors orphans; a kind refused fails the whole answer, which leaves the condition as it
//! was) — plus which Applications named by the objects' tracking exist (`get_application` on
//! home, one per distinct name); `status_write::refreshed` writes the condition. A sync never
//! reads them, so nothing orphaned is pruned (`run/orphan_tests.rs` on the in-memory cluster;
//! `tests/orphans.rs` with the real controller on the test bed).
//!
//! The modules: `execute` (an operation batch by batch), `dry_run`, `delete` (a deleted
//! Application's cascade), [`tenancy`] (admission), `route` and [`destinations`] (home and
//! destination clusters), `status_write`, [`events`], [`sync_loop`].

use crate::auto::{
    AppState, Decision, RetryState, SyncReason, automated_decision, revision_identity,
};
use crate::backoff::SelfHealBackoff;
use crate::history::{HistoryEntry, InitiatedBy, append_history, source_json};
use crate::options::PropagationPolicy;
use crate::plan::{Action, PlanResource, SkipReason, Status, StepSource, plan};
use crate::policy::{PolicyError, SyncPolicy, revision_history_limit};
use crate::request::SyncRequest;
use crate::status::{SyncStatusCode, only_pruning_needed, sync_status};
use crate::time::format_rfc3339;
use plumb_cluster::{ClusterApi, ClusterError, Propagation};
use plumb_core::argo::model::ApplicationStatus;
use plumb_core::argo::{AppSource, Application, Settings};
use plumb_core::{INSTANCE_LABEL, ResourceKey, TRACKING_ID_ANNOTATION};
use plumb_diff::DiffConfig;
use plumb_diff::compare::{CompareContext, Desired, ResourceDiff, compare_prepared, tracking_id};
use plumb_diff::desired::{BuiltinScopes, DiscoveredScopes, Prepared, prepare, set_meta_entry};
use plumb_health::{AppResource, HealthStatus};
use plumb_render::fetch::{Overrides, fetch, locate};
use plumb_render::render::{
    Refs, RenderOptions, Renderer, is_ref_only, ref_name, render_fetched_with,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// The field manager of every write a sync makes.
pub const FIELD_MANAGER: &str = "plumb";
/// The annotation kubectl's client-side apply keeps; plumb writes it so a field removed
/// from git shows in the three-way compare.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What can stop a refresh or a sync before it reaches the cluster's objects.
/// (Failures applying objects are not errors: they make the operation `Failed`.)
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("Application {app}: {reason}")]
    App { app: String, reason: String },
    #[error("Application {app}: {reason}")]
    Render { app: String, reason: String },
    #[error("Application {app}: {source}")]
    Policy { app: String, source: PolicyError },
    #[error("Application {app}: {source}")]
    Compare {
        app: String,
        source: plumb_diff::compare::CompareError,
    },
    #[error("Application {app}: {source}")]
    Cluster { app: String, source: ClusterError },
    /// The spec is refused (project, destination): written as the `InvalidSpecError`
    /// condition; nothing was rendered or applied.
    #[error("Application {app}: {reason}")]
    InvalidSpec { app: String, reason: String },
    /// The project refuses a resource or a sync window blocks: nothing was applied.
    #[error("Application {app}: {reason}")]
    Refused { app: String, reason: String },
    /// The destination cluster cannot be reached (or this caller does not connect to other
    /// clusters): nothing was applied anywhere; written as a condition naming the cluster.
    #[error("Application {app}: {reason}")]
    Destination { app: String, reason: String },
}

pub type Result<T, E = RunError> = std::result::Result<T, E>;

/// How refreshes and syncs run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// A local clone to read instead of `spec.source.repoURL`.
    pub repo_override: Option<PathBuf>,
    /// Where remote `repoURL`s are mirrored and fetched (`git`); shared by every app.
    pub repos: std::sync::Arc<plumb_render::remote::RepoCache>,
    /// `argocd-cm` settings (ignore rules, tracking method); Argo CD's defaults otherwise.
    pub settings: Settings,
    /// Timeout of each `jqPathExpressions` evaluation.
    pub jq_timeout: Duration,
    /// The self-heal backoff of [`reconcile_once`].
    pub self_heal_backoff: SelfHealBackoff,
    /// How long a sync waits for a wave's pruned objects to disappear (finalizers,
    /// foreground deletion of dependents) before going on.
    pub prune_wait: Duration,
    /// How often a running sync looks at the objects it waits for (hooks, a wave's health).
    pub poll_interval: Duration,
    /// How long a sync waits for a wave's resources to be healthy (or its hooks to complete)
    /// before it fails. Argo CD waits without limit; an operation stuck forever blocks every
    /// later sync of the app, so plumb fails it (and the retry policy applies).
    pub wave_timeout: Duration,
    /// A watch-fed cache to read live objects from instead of LISTing them (the controller's).
    /// A sync's own compare after applying still LISTs, so it sees its writes.
    pub cache: Option<CacheHandle>,
    /// The namespace AppProjects and cluster Secrets are read from (Argo CD's control
    /// namespace: the controller's). `None`: each Application's own namespace (see
    /// [`tenancy`]).
    pub control_namespace: Option<String>,
    /// Connections to destination clusters other than home (see `route.rs`); `None`: an app
    /// aimed at another cluster is refused.
    pub destinations: Option<DestinationsHandle>,
    /// Where the Kubernetes Events on Applications go (see [`events`]): the controller's
    /// recorder; `None`: no events.
    pub events: Option<EventsHandle>,
    /// Sync-loop recognition and LoopGuard (the controller's; see [`sync_loop`]); `None`:
    /// neither.
    pub loops: Option<LoopsHandle>,
    /// Config management plugins (`plumb controller --plugins DIR`); `None`: a `plugin:`
    /// source is refused.
    pub plugins: Option<std::sync::Arc<plumb_render::plugin::Plugins>>,
    /// kustomize build options for the kustomize binary (Argo CD's `kustomize.buildOptions`;
    /// only `--enable-helm`, [`plumb_render::render::kustomize_build_options`]).
    pub kustomize_build_options: Vec<String>,
    /// With sharding: this replica's fence ([`crate::controller::shard::Fence`]); writes to a destination
    /// other than home stop while it may not act. `None`: not sharded.
    pub fence: Option<std::sync::Arc<crate::controller::shard::Fence>>,
}

/// A [`plumb_cluster::LiveCache`] in [`RunOptions`].
#[derive(Clone)]
pub struct CacheHandle(pub plumb_cluster::LiveCache);

impl std::fmt::Debug for CacheHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LiveCache({} objects)", self.0.len())
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            repo_override: None,
            // A repository fetched less than 30 s ago is read as it is (1,000 apps of one
            // repository fetch it once per refresh round, not 1,000 times).
            repos: std::sync::Arc::new(plumb_render::remote::RepoCache::new(
                plumb_render::remote::RepoCache::default_dir(),
                Duration::from_secs(30),
            )),
            settings: Settings::argocd_defaults(),
            jq_timeout: Duration::from_secs(1),
            self_heal_backoff: SelfHealBackoff::default(),
            prune_wait: Duration::from_secs(60),
            poll_interval: Duration::from_secs(1),
            wave_timeout: Duration::from_secs(600),
            cache: None,
            control_namespace: None,
            destinations: None,
            events: None,
            loops: None,
            plugins: None,
            kustomize_build_options: Vec::new(),
            fence: None,
        }
    }
}

/// One resource of the app, as the status lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceStatus {
    pub key: ResourceKey,
    pub version: String,
    pub status: SyncStatusCode,
    pub health: Option<HealthStatus>,
    pub requires_pruning: bool,
}

/// What a refresh found (and wrote).
#[derive(Debug, Clone, PartialEq)]
pub struct AppStatus {
    pub sync: SyncStatusCode,
    pub health: HealthStatus,
    /// The full commit id (empty for a plain directory).
    pub revision: String,
    /// As Argo CD shows it: `HEAD (b5e2be1)`.
    pub revision_label: String,
    pub resources: Vec<ResourceStatus>,
}

/// Per resource, what the sync did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceResult {
    pub key: ResourceKey,
    /// `Synced`, `SyncFailed`, `Pruned`, `PruneSkipped` (Argo CD's result codes).
    pub status: &'static str,
    pub message: String,
    pub phase: &'static str,
    pub wave: i64,
    /// For a hook: `Running`, `Succeeded` or `Failed`.
    pub hook_phase: Option<&'static str>,
}

/// Where a sync spent its time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    pub render: Duration,
    pub compare: Duration,
    pub execute: Duration,
    pub compare_after: Duration,
    pub write_status: Duration,
    pub total: Duration,
}

/// The result of a sync operation.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncOutcome {
    /// `Succeeded` or `Failed`.
    pub phase: &'static str,
    pub message: String,
    pub revision: String,
    /// The id of the history entry written (a failed sync writes none).
    pub history_id: Option<i64>,
    pub results: Vec<ResourceResult>,
    /// The app's status compared after the sync.
    pub status: AppStatus,
    pub timings: Timings,
    /// Who or what started the operation.
    pub trigger: SyncTrigger,
}

impl SyncOutcome {
    pub fn succeeded(&self) -> bool {
        self.phase == "Succeeded"
    }
}

/// What one controller pass did.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconcileOutcome {
    /// The automated-sync decision; `None` for an app without automated sync.
    pub decision: Option<Decision>,
    /// The sync it ran, if any.
    pub sync: Option<SyncOutcome>,
    /// Whether that sync was an interrupted operation resumed.
    pub resumed: bool,
    /// The app's status as written.
    pub status: AppStatus,
    /// For an Application being deleted, the cascade step taken (nothing else is done).
    pub deletion: Option<DeletionOutcome>,
    /// The sync window that held back an automated sync (`blocked by sync window ...`).
    pub blocked_by: Option<String>,
    /// Whether the app is in a recognised sync loop (its status records one) after this pass.
    pub looping: bool,
}

/// The controller's state across passes. Everything a decision needs lives in the
/// Application's status; this carries the options.
#[derive(Debug, Clone, Default)]
pub struct ReconcileState {
    pub options: RunOptions,
}

// ---------------------------------------------------------------------------------------

/// The rendered, compared state of an app.
struct Observation {
    app: Application,
    name: String,
    namespace: String,
    policy: SyncPolicy,
    source: AppSource,
    /// Every source and the revision each resolved to (`ref:` sources included), in
    /// `spec.sources` order: what status records for a multi-source app; empty for one
    /// with `spec.source`.
    sources: Vec<AppSource>,
    revisions: Vec<String>,
    source_type: String,
    revision: String,
    revision_label: String,
    /// When a source is a plain directory (no commit): the digest of `targets`, which
    /// identifies its content (recorded as `syncResult.contentDigest`); empty otherwise.
    content_digest: String,
    config: DiffConfig,
    /// The objects a sync applies: namespace defaulted, tracking injected.
    targets: BTreeMap<ResourceKey, Value>,
    /// Hooks with `metadata.generateName` (keyed by the prefix): each operation names them.
    generated: std::collections::BTreeSet<ResourceKey>,
    /// The desired objects as prepared (what `targets` holds, for each compare).
    prepared: Prepared,
    tracking: plumb_core::argo::TrackingMethod,
    /// `spec.syncPolicy.syncOptions` as written.
    sync_options: Vec<String>,
    /// The client-side apply manager whose fields a server-side apply takes over
    /// (`argocd.argoproj.io/client-side-apply-migration-manager`).
    migration_manager: String,
    live: BTreeMap<ResourceKey, Value>,
    diffs: Vec<ResourceDiff>,
    resources: Vec<PlanResource>,
    status: AppStatus,
    render_time: Duration,
    compare_time: Duration,
    /// The orphaned resources of the destination namespace (`None`: not looked at).
    orphans: Option<crate::orphans::Orphans>,
    /// LoopGuard: fields a sync leaves as live has them (see [`sync_loop::guard_sync`]).
    guard: Option<sync_loop::Guard>,
}

/// The Application's namespace (empty when it has none).
fn app_namespace(app: &Value) -> &str {
    app.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn app_name(app: &Value) -> String {
    app.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>")
        .to_string()
}

fn diff_config(
    app: &Application,
    settings: &Settings,
    jq_timeout: Duration,
) -> Result<DiffConfig, String> {
    DiffConfig::for_app(settings, Some(app), "Application", jq_timeout).map_err(|e| e.to_string())
}

/// Argo CD's repository and repo-creds Secrets of the control namespace: the credentials
/// of chart repositories (never printed: [`CredStore`](plumb_render::repocreds::CredStore)
/// shows only which fields are set).
async fn repository_secrets(
    cluster: &dyn ClusterApi,
    control: &str,
) -> std::result::Result<plumb_render::repocreds::CredStore, String> {
    use plumb_render::repocreds::{CredStore, SECRET_TYPE_LABEL};
    let mut secrets = Vec::new();
    for kind in ["repository", "repo-creds"] {
        match cluster
            .list_labelled("", "Secret", control, (SECRET_TYPE_LABEL, kind))
            .await
        {
            Ok(s) => secrets.extend(s),
            Err(ClusterError::UnknownKind { .. }) => {}
            Err(e) => return Err(format!("repository Secrets in {control}: {e}")),
        }
    }
    CredStore::from_objects(secrets.iter()).map_err(|e| e.to_string())
}

/// Renders the app's source (at `revision` when given: a resumed operation syncs the commit it
/// started with), reads live state and compares.
async fn observe(
    cluster: &dyn ClusterApi,
    app_obj: &Value,
    opts: &RunOptions,
    revision: Option<&str>,
) -> Result<Observation> {
    let mut obs = observe_desired(cluster, app_obj, opts, revision, &[]).await?;
    observe_live(cluster, app_obj, opts, &mut obs).await?;
    Ok(obs)
}

/// The first half of [`observe`]: the app's sources rendered and its desired objects
/// prepared; no live object read yet (`live`, `diffs` and `resources` empty).
///
/// `revision` pins a single-source app; `revisions` (one per source, as a resumed
/// operation's `operation.sync.revisions`) pins each source of a multi-source app. Only what
/// is fetched is pinned: the sources recorded in the status stay the spec's.
async fn observe_desired(
    cluster: &dyn ClusterApi,
    app_obj: &Value,
    opts: &RunOptions,
    revision: Option<&str>,
    revisions: &[String],
) -> Result<Observation> {
    observe_desired_with(cluster, app_obj, opts, revision, revisions, false).await
}

/// [`observe_desired`]; `origins`: the desired objects keep where each value was set (what
/// the doctor's `declaredAt` reads), at the cost of a copy of each object per compare.
async fn observe_desired_with(
    cluster: &dyn ClusterApi,
    app_obj: &Value,
    opts: &RunOptions,
    revision: Option<&str>,
    revisions: &[String],
    origins: bool,
) -> Result<Observation> {
    let name = app_name(app_obj);
    let fail = |reason: String| RunError::App {
        app: name.clone(),
        reason,
    };
    let app = Application::from_value(app_obj).map_err(|e| fail(e.to_string()))?;
    let namespace = app_namespace(app_obj).to_string();
    let policy = SyncPolicy::from_application(app_obj).map_err(|source| RunError::Policy {
        app: name.clone(),
        source,
    })?;
    let source = app
        .source
        .clone()
        .ok_or_else(|| fail("spec.source is required".into()))?;
    // The pipeline, as `plumb diff` runs it: each source located (a relative repoURL means
    // nothing to a controller: refused), fetched (git, for a remote) and rendered — both
    // blocking, off the async workers —, then prepared with the cluster's discovery.
    let overrides = Overrides {
        repo: opts.repo_override.clone(),
        ..Overrides::default()
    };
    // Several sources: each at the commit the operation started with, when it recorded one
    // per source.
    let pinned =
        (app.sources.len() > 1 && revisions.len() == app.sources.len()).then_some(revisions);
    let located = app
        .sources
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            // A resumed operation syncs the commit it started with (one source: one commit).
            if let Some(rev) = revision
                && app.sources.len() == 1
            {
                s.target_revision = rev.to_string();
            }
            if let Some(rev) = pinned.and_then(|p| p.get(i)).filter(|r| !r.is_empty()) {
                s.target_revision = rev.clone();
            }
            locate(&s, &overrides, None)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(e.to_string()))?;
    let control = tenancy::control_namespace(app_obj, opts);
    if located
        .iter()
        .any(|at| matches!(at.repo, plumb_render::fetch::RepoRef::Chart { .. }))
    {
        // Part of fetching the chart: an API server error here is retried as a fetch is.
        let creds = repository_secrets(cluster, &control)
            .await
            .map_err(|reason| RunError::Render {
                app: name.clone(),
                reason,
            })?;
        opts.repos.charts().set_creds(creds);
    } else if opts.repos.charts().creds_due()
        && let Ok(creds) = repository_secrets(cluster, &control).await
    {
        // A chart in git may fetch dependencies from chart repositories: their credentials,
        // read at most once an interval (a failure keeps the ones already read).
        opts.repos.charts().set_creds(creds);
    }
    let mut render_opts = RenderOptions::for_app(Some(&app), Renderer::Native);
    render_opts.project = Some(tenancy::project_name(app_obj));
    render_opts.plugins = opts.plugins.clone();
    render_opts.charts = Some(opts.repos.charts().clone());
    render_opts.kustomize_build_options = opts.kustomize_build_options.clone();
    // A chart is rendered for the destination cluster's version and APIs, as Argo CD does.
    // (Discovery is cached; whether a git path is a chart is known only once fetched.)
    {
        let api = cluster
            .api_resources()
            .await
            .map_err(|source| RunError::Cluster {
                app: name.clone(),
                source,
            })?;
        render_opts = render_opts.with_cluster(
            &cluster.server_version(),
            api.iter().flat_map(|i| {
                i.versions
                    .iter()
                    .map(move |v| (i.group.as_str(), v.as_str(), i.kind.as_str()))
            }),
        );
    }
    let started = Instant::now();
    let repos = opts.repos.clone();
    let rendered = tokio::task::spawn_blocking(move || {
        // Every source fetched first: a `ref:` source lends its files to the others'
        // `$NAME/…` value files and is rendered only when it has a path or a chart.
        let fetched = located
            .iter()
            .map(|at| fetch(at, &repos).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Refs<'_> = located
            .iter()
            .zip(&fetched)
            .filter_map(|(at, f)| ref_name(&at.source).map(|r| (r.to_string(), f.fs.as_ref())))
            .collect();
        let mut out = Vec::with_capacity(located.len());
        for (at, f) in located.iter().zip(&fetched) {
            if is_ref_only(&at.source) {
                continue;
            }
            let rendered = render_fetched_with(f, &at.source, &render_opts, &refs)
                .map_err(|e| e.to_string())?;
            out.push((f.commit.clone(), rendered));
        }
        let revisions: Vec<String> = fetched.iter().map(|f| f.commit.clone()).collect();
        Ok::<_, String>((revisions, out))
    })
    .await
    .map_err(|e| fail(format!("rendering stopped: {e}")))?
    .map_err(|reason| RunError::Render {
        app: name.clone(),
        reason,
    })?;
    let (revisions, rendered) = rendered;
    let render_time = started.elapsed();
    // A plain directory has no commit to tell its content by.
    let plain_directory = revisions.iter().any(String::is_empty);
    // Argo CD records `sources`/`revisions` when `spec.sources` is given (even one).
    let multi = app_obj
        .pointer("/spec/sources")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let (sources, revisions) = if multi {
        (app.sources.clone(), revisions)
    } else {
        (Vec::new(), Vec::new())
    };
    let (revision, source_type, revision_label) = rendered
        .first()
        .map(|(commit, r)| {
            (
                commit.clone(),
                r.source_type.as_str().to_string(),
                r.revision.clone(),
            )
        })
        .unwrap_or_default();
    // The renderer's trees to JSON on every core; their origins only when asked for.
    let objects: Vec<_> = rendered.into_iter().flat_map(|(_, r)| r.objects).collect();
    let desired: Vec<Desired> = plumb_core::parallel::map_owned(objects, |o| {
        let at = o.location();
        Desired::of_rendered(o.object, at, origins)
    });

    let started = Instant::now();
    let config = diff_config(&app, &opts.settings, opts.jq_timeout).map_err(fail)?;
    let tracking = opts.settings.tracking_method;
    let cluster_err = |source| RunError::Cluster {
        app: name.clone(),
        source,
    };
    let scopes = DiscoveredScopes {
        served: cluster
            .scopes(plumb_diff::desired::kinds_of(&desired))
            .await
            .map_err(cluster_err)?,
        offline: BuiltinScopes::with_crds_of(desired.iter().map(|d| &d.object)),
    };
    let prepared =
        prepare(desired, Some(&app), tracking, &scopes).map_err(|e| fail(e.to_string()))?;
    for key in &prepared.generated {
        let object = &prepared.objects[key].desired;
        let meta = crate::plan::ObjectMeta::from_object(&object.object);
        if crate::plan::hook_of(&meta.annotations) == crate::plan::Hook::None {
            return Err(fail(format!(
                "{}: metadata.generateName without metadata.name is only supported for hooks",
                object.origin
            )));
        }
    }
    let targets: BTreeMap<ResourceKey, Value> = prepared
        .objects
        .iter()
        .map(|(k, p)| (k.clone(), p.desired.object.clone()))
        .collect();
    let generated = prepared.generated.clone();
    let content_digest = if plain_directory {
        crate::auto::content_digest(targets.values())
    } else {
        String::new()
    };
    Ok(Observation {
        app,
        name: name.clone(),
        namespace,
        policy,
        source,
        sources,
        revisions,
        source_type,
        revision,
        revision_label,
        content_digest,
        config,
        targets,
        generated,
        prepared,
        tracking,
        sync_options: plumb_core::argo::model::ApplicationSpec::of(app_obj)
            .ok()
            .and_then(|s| s.sync_policy)
            .map(|p| p.sync_options)
            .unwrap_or_default(),
        migration_manager: plumb_core::value::annotation(
            app_obj,
            crate::migration::MIGRATION_MANAGER_ANNOTATION,
        )
        .unwrap_or(crate::migration::DEFAULT_MIGRATION_MANAGER)
        .to_string(),
        live: BTreeMap::new(),
        diffs: Vec::new(),
        resources: Vec::new(),
        status: AppStatus {
            sync: SyncStatusCode::OutOfSync,
            health: HealthStatus::Unknown,
            revision: String::new(),
            revision_label: String::new(),
            resources: Vec::new(),
        },
        render_time,
        compare_time: started.elapsed(),
        orphans: None,
        guard: None,
    })
}

/// The second half of [`observe`]: live state read for the prepared objects (and the
/// resources the app had) and compared.
async fn observe_live(
    cluster: &dyn ClusterApi,
    app_obj: &Value,
    opts: &RunOptions,
    obs: &mut Observation,
) -> Result<()> {
    let started = Instant::now();
    let name = obs.name.clone();
    let cluster_err = |source| RunError::Cluster {
        app: name.clone(),
        source,
    };
    let targets = &obs.targets;
    let app = &obs.app;
    let target_list: Vec<Value> = targets.values().cloned().collect();
    let mut live_list = match &opts.cache {
        Some(CacheHandle(cache)) => {
            cache
                .live_for(&target_list, Some(&app.name), INSTANCE_LABEL)
                .await
        }
        None => {
            cluster
                .live_for(&target_list, Some(&app.name), INSTANCE_LABEL)
                .await
        }
    }
    .map_err(cluster_err)?;
    // Resources the app had (its status lists them) that git no longer declares, in
    // namespaces or kinds desired no longer uses: still the app's, to be pruned. (An empty
    // render must still see them, for the allowEmpty guard.)
    let found: std::collections::BTreeSet<ResourceKey> =
        live_list.iter().filter_map(ResourceKey::of).collect();
    for key in previous_resources(app_obj) {
        if targets.contains_key(&key) || found.contains(&key) {
            continue;
        }
        if let Ok(Some(obj)) = cluster
            .get_object(&key.group, &key.kind, &key.namespace, &key.name)
            .await
            && plumb_diff::compare::is_tracked_by(&obj, &app.name)
        {
            live_list.push(obj);
        }
    }
    compare_live(obs, live_list, &opts.settings)?;
    obs.compare_time += started.elapsed();
    Ok(())
}

/// The resources `status.resources` lists.
fn previous_resources(app: &Value) -> Vec<ResourceKey> {
    let (status, _) = plumb_core::argo::model::ApplicationStatus::read_lenient(app);
    status
        .resources
        .into_iter()
        .map(|r| ResourceKey {
            group: r.group,
            kind: r.kind,
            namespace: r.namespace,
            name: r.name,
        })
        .filter(|k| !k.kind.is_empty() && !k.name.is_empty())
        .collect()
}

/// Compares targets with `live` and fills the verdicts of `obs`.
fn compare_live(obs: &mut Observation, live: Vec<Value>, settings: &Settings) -> Result<()> {
    let ctx = CompareContext {
        app: Some(&obs.app),
        settings: Some(settings),
        config: &obs.config,
        keep_equal: false,
        server_side: None,
    };
    let diffs = compare_prepared(obs.prepared.clone(), live.clone(), &ctx).map_err(|source| {
        RunError::Compare {
            app: obs.name.clone(),
            source,
        }
    })?;
    obs.live = live
        .into_iter()
        .filter_map(|l| ResourceKey::of(&l).map(|k| (k, l)))
        .collect();
    obs.resources = diffs
        .iter()
        .map(|d| {
            PlanResource::from_objects(
                d.key.clone(),
                d.status,
                obs.targets.get(&d.key),
                obs.live.get(&d.key),
            )
        })
        .collect();
    let sync = sync_status(&obs.resources);
    // Hooks have no place in the app's health or resource list (as in Argo CD).
    let is_hook: Vec<bool> = obs
        .resources
        .iter()
        .map(|r| r.hook() != crate::plan::Hook::None)
        .collect();
    // Each live resource's health, judged once: for the app's health and its resource list.
    let judged: BTreeMap<&ResourceKey, Option<plumb_health::Health>> = diffs
        .iter()
        .zip(&is_hook)
        .filter(|(_, hook)| !**hook)
        .filter_map(|(d, _)| Some((&d.key, obs.live.get(&d.key)?)))
        .map(|(k, l)| (k, plumb_health::check(l).checked()))
        .collect();
    let health = plumb_health::app_health_by(
        obs.diffs_with(&diffs)
            .zip(&is_hook)
            .filter(|(_, hook)| !**hook)
            .map(|((t, l), _)| AppResource { target: t, live: l }),
        |live| {
            let key = ResourceKey::of(live)?;
            judged.get(&key).cloned().flatten()
        },
    );
    let resources = diffs
        .iter()
        .zip(&obs.resources)
        .zip(&is_hook)
        .filter(|(_, hook)| !**hook)
        .map(|((d, r), _)| {
            let live = obs.live.get(&d.key);
            let object = live.or_else(|| obs.targets.get(&d.key));
            let version = object
                .and_then(|o| o.get("apiVersion"))
                .and_then(Value::as_str)
                .map(|v| v.rsplit('/').next().unwrap_or(v).to_string())
                .unwrap_or_default();
            ResourceStatus {
                key: d.key.clone(),
                version,
                status: crate::status::resource_sync_status(r).unwrap_or(SyncStatusCode::Synced),
                health: match judged.get(&d.key) {
                    Some(h) => h.as_ref().map(|h| h.status),
                    None if d.status == Status::Missing => Some(HealthStatus::Missing),
                    None => None,
                },
                requires_pruning: d.status == Status::Extra,
            }
        })
        .collect();
    obs.status = AppStatus {
        sync,
        health,
        revision: obs.revision.clone(),
        revision_label: obs.revision_label.clone(),
        resources,
    };
    obs.diffs = diffs;
    Ok(())
}

impl Observation {
    /// What identifies the desired state the automated decision compares with the last
    /// attempt's and sync-loop recognition and LoopGuard key on: every source's commit, and
    /// a plain directory's content digest ([`revision_identity`]).
    pub(super) fn identity(&self) -> String {
        revision_identity(&self.revision, &self.revisions, &self.content_digest)
    }

    /// `syncPolicy.automated` when it is enabled (it decides whether a sync prunes).
    fn automated(&self) -> Option<crate::policy::AutomatedPolicy> {
        self.policy.automated.filter(|a| a.enabled)
    }

    fn diffs_with<'a>(
        &'a self,
        diffs: &'a [ResourceDiff],
    ) -> impl Iterator<Item = (Option<&'a Value>, Option<&'a Value>)> + 'a {
        diffs.iter().map(|d| {
            let target = (d.status != Status::Extra)
                .then(|| self.targets.get(&d.key))
                .flatten();
            (target, self.live.get(&d.key))
        })
    }

    /// Lists live again and recompares (after a sync).
    async fn recompare(&mut self, cluster: &dyn ClusterApi, settings: &Settings) -> Result<()> {
        let target_list: Vec<Value> = self.targets.values().cloned().collect();
        let mut live = cluster
            .live_for(&target_list, Some(&self.app.name), INSTANCE_LABEL)
            .await
            .map_err(|source| RunError::Cluster {
                app: self.name.clone(),
                source,
            })?;
        // Extras seen before the sync that the LISTs do not cover (see `observe`).
        let found: std::collections::BTreeSet<ResourceKey> =
            live.iter().filter_map(ResourceKey::of).collect();
        for key in self.live.keys() {
            if self.targets.contains_key(key) || found.contains(key) {
                continue;
            }
            if let Ok(Some(obj)) = cluster
                .get_object(&key.group, &key.kind, &key.namespace, &key.name)
                .await
                && plumb_diff::compare::is_tracked_by(&obj, &self.app.name)
            {
                live.push(obj);
            }
        }
        compare_live(self, live, settings)
    }
}

/// The app's orphaned resources (see [`crate::orphans`]): from the watch cache when the
/// runner has one (the controller: no request), else one LIST per namespaced kind in the
/// destination namespace (`--namespaced`, `plumb app get --refresh`), only when the project
/// monitors them. An object another Application's tracking names counts as that app's only
/// when the Application exists: one GET (on home) per such name. A project without
/// `orphanedResources` finds none (so a condition left from before is removed); a failed
/// or partial LIST, or a failed GET, leaves the condition as it was.
async fn look_for_orphans(
    cluster: &dyn ClusterApi,
    obs: &mut Observation,
    project: &plumb_core::project::AppProject,
    opts: &RunOptions,
) {
    use crate::orphans::{Orphans, Owners, find, owner};
    let namespace = obs.app.destination_namespace.clone().unwrap_or_default();
    let own: std::collections::BTreeSet<ResourceKey> =
        obs.targets.keys().chain(obs.live.keys()).cloned().collect();
    let method = opts.settings.tracking_method;
    let none = std::collections::BTreeSet::new();
    let owners = |existing| Owners {
        app: &obs.app.name,
        method,
        existing,
    };
    let found = if project.orphans_warn().is_none() || namespace.is_empty() {
        find(project, &namespace, owners(&none), &own, std::iter::empty())
    } else {
        let live: Vec<std::sync::Arc<Value>> = if let Some(CacheHandle(cache)) = &opts.cache {
            // Owned objects are never orphans: skipped before parsing.
            cache.top_level_in_namespace(&namespace)
        } else {
            match cluster.namespace_objects(&namespace).await {
                Ok(live) => live.into_iter().map(std::sync::Arc::new).collect(),
                Err(_) => return,
            }
        };
        let named: std::collections::BTreeSet<&str> = live
            .iter()
            .filter_map(|o| owner(method, o))
            .filter(|o| *o != obs.app.name)
            .collect();
        let mut existing = std::collections::BTreeSet::new();
        for name in named {
            match cluster.get_application(&obs.namespace, name).await {
                Ok(Some(_)) => {
                    existing.insert(name.to_string());
                }
                Ok(None) => {}
                Err(_) => return,
            }
        }
        find(
            project,
            &namespace,
            owners(&existing),
            &own,
            live.iter().map(|o| o.as_ref()),
        )
    };
    obs.orphans = Some(found.unwrap_or(Orphans {
        warn: false,
        resources: Vec::new(),
    }));
}

// ---------------------------------------------------------------------------------------
// Public entry points

/// Renders, compares and writes the status of a plumb.dev Application (`app` is the
/// object as read from the cluster).
pub async fn refresh_app(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    now: SystemTime,
) -> Result<AppStatus> {
    let home = cluster;
    let admission = tenancy::admit(home, app, opts, now).await?;
    let target = route::connect(home, app, &admission.cluster, opts, now).await?;
    let (cluster, opts) = (&target.routed(home), target.options(opts));
    // Boxed: the inner future is large (render, compare, apply); inlined in every entry
    // point's future it overflowed a 2 MiB thread stack in debug builds.
    let result = Box::pin(async {
        let mut obs = observe(cluster, app, opts, None).await?;
        look_for_orphans(cluster, &mut obs, &admission.project, opts).await;
        write_refreshed(cluster, app, &obs, opts, now).await?;
        Ok(obs.status)
    })
    .await;
    target.report(home, app, result, now).await
}

/// Syncs a plumb.dev Application now: the whole app at its target revision, without pruning
/// ([`sync_app_with`] with the default [`SyncRequest`]).
pub async fn sync_app(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    initiated_by: InitiatedBy,
    now: SystemTime,
) -> Result<SyncOutcome> {
    sync_app_with(
        cluster,
        app,
        opts,
        &SyncRequest::default(),
        initiated_by,
        now,
    )
    .await
}

/// A manual sync as `request` asks for it: `--prune` (a manual sync prunes only when asked,
/// as `argocd app sync`), `--revision`, `--resource` (a partial sync: only those resources, no
/// hooks, no history entry), `--dry-run` (server-side dry run; nothing is written).
pub async fn sync_app_with(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    request: &SyncRequest,
    initiated_by: InitiatedBy,
    now: SystemTime,
) -> Result<SyncOutcome> {
    let started = Instant::now();
    let home = cluster;
    // The project judges what will be applied: a rollback's source, not the current spec's.
    let app = with_source(app, request.source.as_ref());
    let app = app.as_ref();
    let admission = tenancy::admit(home, app, opts, now).await?;
    // A window blocks a dry run too (as Argo CD's sync request is refused before its dry-run
    // flag is looked at): its server-side dry runs would reach the API server's webhooks.
    let verdict = admission.windows(&app_name(app), true, now);
    if !verdict.allowed() {
        return Err(RunError::Refused {
            app: app_name(app),
            reason: format!("Cannot sync: {}", verdict.message().unwrap_or_default()),
        });
    }
    let target = route::connect(home, app, &admission.cluster, opts, now).await?;
    let (cluster, opts) = (&target.routed(home), target.options(opts));
    if request.dry_run {
        let result = Box::pin(dry_run::dry_run(cluster, app, opts, request, &admission)).await;
        return target.report(home, app, result, now).await;
    }
    // An operation someone terminated ends now (its runner, if alive, stops on seeing it).
    finish_terminated(cluster, app, now).await?;
    if let Some(op) = execute::Operation::resumed(app) {
        return Err(RunError::App {
            app: app_name(app),
            reason: format!(
                "another operation is already in progress (started {}); the controller resumes it, or `plumb app sync --resume` finishes it here",
                format_rfc3339(op.started_at)
            ),
        });
    }
    let result = Box::pin(async {
        // The project judges the rendered objects before any request for them (not even a
        // LIST of a refused kind).
        let mut obs = observe_desired(cluster, app, opts, request.revision.as_deref(), &[]).await?;
        let op = execute::Operation::manual(app, initiated_by, request, now);
        refuse_operation(cluster, app, &admission, &obs, &op, now).await?;
        observe_live(cluster, app, opts, &mut obs).await?;
        let mut outcome = execute::execute(cluster, app, obs, opts, op, false, now).await?;
        outcome.timings.total = started.elapsed();
        Ok(outcome)
    })
    .await;
    target.report(home, app, result, now).await
}

/// Asks the operation the Application shows `Running` to stop (`argocd app terminate-op`):
/// its `operationState.phase` becomes `Terminating` (a write pinned to the Application's
/// resourceVersion, re-read on a conflict, so an operation that ends meanwhile is not marked);
/// the process running it stops before the next wave or while waiting, deletes its running
/// hooks and ends it `Failed` with "Operation terminated" (no SyncFail hooks). If that process
/// is gone, the next reconcile ends it so. An error when no operation is running.
pub async fn terminate_operation(cluster: &dyn ClusterApi, app: &Value) -> Result<()> {
    let name = app_name(app);
    let namespace = app_namespace(app).to_string();
    let fail = |reason: &str| RunError::App {
        app: name.clone(),
        reason: reason.into(),
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let current = cluster
            .get_application(&namespace, &name)
            .await
            .map_err(|source| RunError::Cluster {
                app: name.clone(),
                source,
            })?
            .ok_or_else(|| fail("the Application does not exist"))?;
        if execute::Operation::resumed(&current).is_none() {
            return Err(fail(
                "Unable to terminate operation. No operation is in progress",
            ));
        }
        let mut stored = StoredStatus::of(&current);
        let mut status = stored.status.clone();
        if let Some(state) = status.operation_state.as_mut() {
            state.phase = "Terminating".into();
        }
        match stored.write(cluster, status, true).await {
            Ok(_) => return Ok(()),
            Err(ClusterError::Api { code: 409, .. }) if attempt < 5 => continue,
            Err(source) => {
                return Err(RunError::Cluster {
                    app: name.clone(),
                    source,
                });
            }
        }
    }
}

/// An operation left `Terminating` by a process that is gone: ended `Failed` with
/// "Operation terminated" (so automated sync does not retry it). `true` when it was.
async fn finish_terminated(cluster: &dyn ClusterApi, app: &Value, now: SystemTime) -> Result<bool> {
    let mut stored = StoredStatus::of(app);
    let mut status = stored.status.clone();
    let Some(state) = status
        .operation_state
        .as_mut()
        .filter(|s| s.phase == "Terminating")
    else {
        return Ok(false);
    };
    state.phase = "Failed".into();
    state.message = execute::TERMINATED.into();
    state.finished_at = Some(now);
    match stored.write(cluster, status, true).await {
        Ok(_) | Err(ClusterError::Api { code: 409, .. }) => Ok(true),
        Err(source) => Err(RunError::Cluster {
            app: app_name(app),
            source,
        }),
    }
}

/// Rolls the Application back to history entry `id` (default: the deployment before the
/// last), as `argocd app rollback`: a manual sync of that entry's source at its revision,
/// without hooks (pruning only with `prune`), recorded in the history like any sync. Refused while automated sync is
/// enabled — the next automated sync would undo it.
pub async fn rollback_app(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    id: Option<i64>,
    prune: bool,
    initiated_by: InitiatedBy,
    now: SystemTime,
) -> Result<SyncOutcome> {
    let fail = |reason: String| RunError::App {
        app: app_name(app),
        reason,
    };
    let policy = SyncPolicy::from_application(app).map_err(|source| RunError::Policy {
        app: app_name(app),
        source,
    })?;
    if policy.automated.is_some_and(|a| a.enabled) {
        return Err(fail(
            "rollback cannot be initiated when auto-sync is enabled".into(),
        ));
    }
    let history = ApplicationStatus::read_lenient(app).0.history;
    let entry = match id {
        Some(id) => history.iter().find(|h| h.id == id).ok_or_else(|| {
            fail(format!(
                "history has no deployment {id} (ids: {})",
                history
                    .iter()
                    .map(|h| h.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?,
        None => history
            .len()
            .checked_sub(2)
            .map(|i| &history[i])
            .ok_or_else(|| fail("no previous deployment to roll back to".into()))?,
    };
    // A multi-source deployment: its sources, each at the revision it synced.
    if !entry.sources.is_empty() {
        let sources: Vec<Value> = entry
            .sources
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut s = s.clone();
                if let Some(rev) = entry.revisions.get(i).filter(|r| !r.is_empty()) {
                    s.target_revision = rev.clone();
                }
                source_json::to_value(&s)
            })
            .collect();
        let request = SyncRequest {
            prune,
            skip_hooks: true,
            source: Some(Value::Array(sources)),
            rollback: Some(entry.id),
            ..SyncRequest::default()
        };
        return Box::pin(sync_app_with(
            cluster,
            app,
            opts,
            &request,
            initiated_by,
            now,
        ))
        .await;
    }
    if entry.revision.is_empty() {
        return Err(fail(format!("deployment {} records no revision", entry.id)));
    }
    // The source the deployment used (path, chart, values may have changed since), at its
    // revision, applied without hooks — as Argo CD rolls back.
    let source = source_json::to_value(&entry.source);
    let request = SyncRequest {
        prune,
        revision: Some(entry.revision.clone()),
        skip_hooks: true,
        source: source
            .get("repoURL")
            .is_some_and(|v| !v.is_null())
            .then_some(source),
        rollback: Some(entry.id),
        ..SyncRequest::default()
    };
    Box::pin(sync_app_with(
        cluster,
        app,
        opts,
        &request,
        initiated_by,
        now,
    ))
    .await
}

/// The Application with `source` in place of `spec.source` (an operation that renders another
/// source: a rollback's), or, when `source` is a list, in place of `spec.sources`; the
/// Application itself when `None`.
fn with_source<'a>(app: &'a Value, source: Option<&Value>) -> std::borrow::Cow<'a, Value> {
    let Some(source) = source.filter(|s| !s.is_null()) else {
        return std::borrow::Cow::Borrowed(app);
    };
    let mut changed = app.clone();
    if let Some(spec) = changed.get_mut("spec").and_then(Value::as_object_mut) {
        let field = if source.is_array() {
            "sources"
        } else {
            "source"
        };
        spec.insert(field.into(), source.clone());
    }
    std::borrow::Cow::Owned(changed)
}

/// Finishes the operation an Application's status shows `Running` (one a stopped controller
/// or CLI left behind): same revision, same start, same initiator, hooks it already created
/// are not created again, and one history entry when it succeeds. `None` when no operation
/// is running.
pub async fn resume_app(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    now: SystemTime,
) -> Result<Option<SyncOutcome>> {
    if finish_terminated(cluster, app, now).await? {
        return Ok(None);
    }
    let Some(op) = execute::Operation::resumed(app) else {
        return Ok(None);
    };
    let started = Instant::now();
    let home = cluster;
    // The project judges what the operation applies (its own source, a rollback's).
    let app = with_source(app, op.source.as_ref());
    let app = app.as_ref();
    let admission = tenancy::admit(home, app, opts, now).await?;
    let target = route::connect(home, app, &admission.cluster, opts, now).await?;
    let (cluster, opts) = (&target.routed(home), target.options(opts));
    let result = Box::pin(async {
        let mut obs =
            observe_desired(cluster, app, opts, op.revision.as_deref(), &op.revisions).await?;
        refuse_operation(cluster, app, &admission, &obs, &op, now).await?;
        observe_live(cluster, app, opts, &mut obs).await?;
        let automated = op.initiated_by.automated;
        let mut outcome = execute::execute(cluster, app, obs, opts, op, automated, now).await?;
        outcome.timings.total = started.elapsed();
        Ok(Some(outcome))
    })
    .await;
    target.report(home, app, result, now).await
}

/// The Application annotation that asks for a refresh now (`normal` or `hard`, as Argo CD's;
/// plumb always renders from git, so both mean the same). The controller removes it.
pub const REFRESH_ANNOTATION: &str = "argocd.argoproj.io/refresh";

/// Removes the refresh annotation once the refresh it asked for is done (pinned to the
/// resourceVersion: a newer request stays).
async fn clear_refresh(cluster: &dyn ClusterApi, app: &Value) -> Result<()> {
    if plumb_core::value::annotation(app, REFRESH_ANNOTATION).is_none() {
        return Ok(());
    }
    let namespace = app_namespace(app);
    let patch = json!({"metadata": {"resourceVersion": app.pointer("/metadata/resourceVersion"),
        "annotations": {REFRESH_ANNOTATION: null}}});
    match cluster
        .patch_application(namespace, &app_name(app), &patch)
        .await
    {
        Ok(_)
        | Err(ClusterError::Api {
            code: 409 | 404, ..
        }) => Ok(()),
        Err(source) => Err(RunError::Cluster {
            app: app_name(app),
            source,
        }),
    }
}

/// One controller pass: refresh, the automated decision, and the sync it calls for.
pub async fn reconcile_once(
    cluster: &dyn ClusterApi,
    app: &Value,
    now: SystemTime,
    state: &mut ReconcileState,
) -> Result<ReconcileOutcome> {
    let started = Instant::now();
    let home = cluster;
    if let Some(deletion) = finalize_deletion_at_destination(home, app, &state.options, now).await?
    {
        return Ok(ReconcileOutcome {
            decision: None,
            resumed: false,
            sync: None,
            status: recorded_status(app),
            deletion: Some(deletion),
            blocked_by: None,
            looping: sync_loop::is_recorded(app),
        });
    }
    // A refresh asked for is this reconcile, whatever it ends in.
    clear_refresh(cluster, app).await?;
    if finish_terminated(cluster, app, now).await? {
        return Ok(ReconcileOutcome {
            decision: None,
            resumed: false,
            sync: None,
            status: recorded_status(app),
            deletion: None,
            blocked_by: None,
            looping: sync_loop::is_recorded(app),
        });
    }
    // The large inner futures are boxed: nested in one another they made the reconcile
    // future too big for a 2 MiB thread stack in debug builds (a stack overflow in the
    // resume test).
    if let Some(outcome) = Box::pin(resume_app(cluster, app, &state.options, now)).await? {
        let status = outcome.status.clone();
        return Ok(ReconcileOutcome {
            decision: None,
            resumed: true,
            sync: Some(outcome),
            status,
            deletion: None,
            blocked_by: None,
            looping: sync_loop::is_recorded(app),
        });
    }
    // An operation requested on the Application (`argocd app sync` writes one; so does the
    // ApplicationSet controller's progressive sync): cleared, then run as a manual sync.
    if let Some(request) = requested_operation(app) {
        home.patch_application(
            app_namespace(app),
            &app_name(app),
            &json!({"operation": null}),
        )
        .await
        .map_err(|e| RunError::App {
            app: app_name(app),
            reason: format!("clearing the requested operation: {e}"),
        })?;
        let mut app = app.clone();
        if let Some(o) = app.as_object_mut() {
            o.remove("operation");
        }
        let (request, initiated_by) = request.map_err(|reason| RunError::App {
            app: app_name(&app),
            reason,
        })?;
        let outcome = Box::pin(sync_app_with(
            cluster,
            &app,
            &state.options,
            &request,
            initiated_by,
            now,
        ))
        .await?;
        let status = outcome.status.clone();
        return Ok(ReconcileOutcome {
            decision: None,
            resumed: false,
            sync: Some(outcome),
            status,
            deletion: None,
            blocked_by: None,
            looping: sync_loop::is_recorded(&app),
        });
    }
    let admission = tenancy::admit(home, app, &state.options, now).await?;
    let target = route::connect(home, app, &admission.cluster, &state.options, now).await?;
    let opts = target.options(&state.options);
    let result = Box::pin(reconcile_at(
        &target.routed(home),
        app,
        opts,
        &admission,
        now,
        started,
    ))
    .await;
    target.report(home, app, result, now).await
}

/// The sync an Application's `operation` field asks for (Argo CD's `operation.sync`: prune,
/// dry run, revision, resources, a rollback's `source`/`sources`, the `apply` strategy), and
/// who asked; `None` without one. What plumb does not run from a request (`syncOptions`, a
/// forced strategy, `retry`, `revisions` without `sources`, anything unreadable) is an error
/// naming it, never a sync that silently differs from the one asked for.
fn requested_operation(app: &Value) -> Option<Result<(SyncRequest, InitiatedBy), String>> {
    let op = app.get("operation").filter(|o| !o.is_null())?;
    let model: plumb_core::argo::model::Operation = match serde_json::from_value(op.clone()) {
        Ok(m) => m,
        Err(e) => return Some(Err(format!("the requested operation is not readable: {e}"))),
    };
    let Some(sync) = model.sync else {
        return Some(Err("the requested operation has no sync".into()));
    };
    if !sync.sync_options.is_empty() {
        return Some(Err(format!(
            "the requested operation's syncOptions ({}) are not supported: set them in the Application's syncPolicy",
            sync.sync_options.join(", ")
        )));
    }
    if model.retry.is_some() {
        return Some(Err(
            "the requested operation's retry is not supported: set it in the Application's syncPolicy".into(),
        ));
    }
    let strategy = sync.sync_strategy.as_ref();
    let forced = strategy.is_some_and(|s| {
        ["apply", "hook"]
            .iter()
            .any(|k| s.pointer(&format!("/{k}/force")).and_then(Value::as_bool) == Some(true))
    });
    if forced {
        return Some(Err(
            "the requested operation's forced sync strategy is not supported".into(),
        ));
    }
    if !sync.revisions.is_empty() && sync.sources.is_empty() {
        return Some(Err(
            "the requested operation's revisions are not supported without its sources".into(),
        ));
    }
    let source = if !sync.sources.is_empty() {
        serde_json::to_value(&sync.sources).ok()
    } else {
        sync.source
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
    };
    let request = SyncRequest {
        prune: sync.prune,
        dry_run: sync.dry_run,
        revision: Some(sync.revision).filter(|r| !r.is_empty()),
        resources: sync
            .resources
            .iter()
            .filter_map(crate::request::ResourceSelector::from_model)
            .collect(),
        skip_hooks: strategy.is_some_and(|s| s.get("apply").is_some()),
        source,
        ..SyncRequest::default()
    };
    Some(Ok((request, model.initiated_by)))
}

/// The rest of [`reconcile_once`], once the destination is connected.
async fn reconcile_at(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    admission: &tenancy::Admission,
    now: SystemTime,
    started: Instant,
) -> Result<ReconcileOutcome> {
    let mut obs = Box::pin(observe(cluster, app, opts, None)).await?;
    look_for_orphans(cluster, &mut obs, &admission.project, opts).await;
    delete::ensure_hook_finalizers(cluster, app, &obs).await?;
    let mut decision = obs
        .automated()
        .map(|_| automated_decision(&app_state(app, &obs, opts), now));
    let mut blocked_by = None;
    if let Some(Decision::SyncNow { .. }) = decision {
        let verdict = admission.windows(&obs.name, false, now);
        if !verdict.allowed() {
            blocked_by = verdict.message();
            decision = Some(Decision::Nothing {
                why: crate::auto::NoSync::SyncWindow,
            });
        }
    }
    // LoopGuard: in a recognised loop, a sync that would only re-apply the looping fields
    // is not made; one that heals other drift leaves them as live has them.
    let guarded = match decision {
        Some(Decision::SyncNow { .. }) => sync_loop::guarded(app, &obs, opts),
        _ => Default::default(),
    };
    if !guarded.is_empty() {
        if crate::loops::only_guarded(&sync_loop::differing(&obs), &guarded) {
            decision = Some(Decision::Nothing {
                why: crate::auto::NoSync::LoopGuard,
            });
        } else {
            sync_loop::guard_sync(&mut obs, &guarded)?;
        }
    }
    if let Some(Decision::SyncNow { reason }) = decision {
        let op = execute::Operation::new(app, InitiatedBy::automated(), Some(reason), now);
        refuse_operation(cluster, app, admission, &obs, &op, now).await?;
        let (mut outcome, after) = Box::pin(execute::execute_observed(
            cluster, app, obs, opts, op, true, now,
        ))
        .await?;
        outcome.timings.total = started.elapsed();
        let looping = Box::pin(sync_loop::after_compare(
            cluster, app, &after, true, opts, now,
        ))
        .await?;
        let status = outcome.status.clone();
        return Ok(ReconcileOutcome {
            decision,
            resumed: false,
            sync: Some(outcome),
            status,
            deletion: None,
            blocked_by: None,
            looping,
        });
    }
    write_refreshed(cluster, app, &obs, opts, now).await?;
    let looping = Box::pin(sync_loop::after_compare(
        cluster, app, &obs, false, opts, now,
    ))
    .await?;
    Ok(ReconcileOutcome {
        decision,
        resumed: false,
        sync: None,
        status: obs.status,
        deletion: None,
        blocked_by,
        looping,
    })
}

/// The project's refusal of a target resource, before any request of the operation to the
/// destination: the operation is written `Failed` (home) with the reason naming the resource
/// and the rule, and the error returned.
async fn refuse_operation(
    cluster: &dyn ClusterApi,
    app: &Value,
    admission: &tenancy::Admission,
    obs: &Observation,
    op: &execute::Operation,
    now: SystemTime,
) -> Result<()> {
    let Err(refused) = refuse_resources(admission, obs) else {
        return Ok(());
    };
    let RunError::Refused { reason, .. } = &refused else {
        return Err(refused);
    };
    let mut stored = StoredStatus::of(app);
    let mut status = stored.status.clone();
    status.operation_state = Some(execute::operation_state(
        status.operation_state.take(),
        obs,
        op,
        "Failed",
        reason,
        Some(now),
        &[],
    ));
    stored.write_app(cluster, status).await?;
    Err(refused)
}

/// When `app` is being deleted (`metadata.deletionTimestamp`), takes the next step of its
/// finalization (see `run/delete.rs`); `None` for an Application that is not being deleted.
/// `cluster` is home: the steps are sent to the app's destination, resolved through the
/// cluster Secrets (the project is not asked: what the app created is removed where it is);
/// a destination that resolves to no cluster deletes nothing anywhere.
pub async fn finalize_deletion(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
) -> Result<Option<DeletionOutcome>> {
    finalize_deletion_at_destination(cluster, app, opts, SystemTime::now()).await
}

async fn finalize_deletion_at_destination(
    home: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    now: SystemTime,
) -> Result<Option<DeletionOutcome>> {
    if app
        .pointer("/metadata/deletionTimestamp")
        .is_none_or(Value::is_null)
    {
        return Ok(None);
    }
    if matches!(
        crate::deletion::Stage::of(app),
        crate::deletion::Stage::Nothing
    ) {
        // No cascade: nothing is sent to the destination.
        return delete::finalize_deletion(home, app, opts).await;
    }
    let cluster = tenancy::destination_cluster(home, app, opts)
        .await
        .map_err(|source| RunError::Cluster {
            app: app_name(app),
            source,
        })?
        .map_err(|reason| RunError::InvalidSpec {
            app: app_name(app),
            reason: format!("{reason}; the app's resources are not deleted"),
        })?;
    let target = route::connect(home, app, &cluster, opts, now).await?;
    let result = Box::pin(delete::finalize_deletion(
        &target.routed(home),
        app,
        target.options(opts),
    ))
    .await;
    target.report(home, app, result, now).await
}

/// The project's refusal of a target resource, before any request of the operation.
fn refuse_resources(admission: &tenancy::Admission, obs: &Observation) -> Result<()> {
    admission
        .check_resources(obs.targets.keys())
        .map_err(|reason| RunError::Refused {
            app: obs.name.clone(),
            reason: format!("sync refused, nothing applied: {reason}"),
        })
}

/// The status the Application last recorded (for a reconcile that did not compare).
fn recorded_status(app: &Value) -> AppStatus {
    let (status, _) = ApplicationStatus::read_lenient(app);
    AppStatus {
        sync: if status.sync.status == "Synced" {
            SyncStatusCode::Synced
        } else {
            SyncStatusCode::OutOfSync
        },
        health: status
            .health
            .status
            .parse()
            .unwrap_or(HealthStatus::Unknown),
        revision: status.sync.revision,
        revision_label: String::new(),
        resources: Vec::new(),
    }
}

/// Writes what the compare `obs` found; plumb also resets the self-heal attempt count when
/// the app is seen Synced (see NOTES.md).
async fn write_refreshed(
    cluster: &dyn ClusterApi,
    app: &Value,
    obs: &Observation,
    opts: &RunOptions,
    now: SystemTime,
) -> Result<()> {
    let mut stored = StoredStatus::of(app);
    let mut status = status_write::refreshed(stored.status.clone(), app, obs, now);
    if obs.status.sync == SyncStatusCode::Synced
        && let Some(sync) = status
            .operation_state
            .as_mut()
            .and_then(|o| o.operation.sync.as_mut())
            .filter(|s| s.auto_heal_attempts_count.unwrap_or(0) > 0)
    {
        sync.auto_heal_attempts_count = Some(0);
    }
    let before = stored.status.clone();
    stored.write_app(cluster, status).await?;
    events::status_changes(opts, app, &before, &stored.status);
    Ok(())
}

/// The automated decision's inputs, from the Application's status and what was observed.
fn app_state(app: &Value, obs: &Observation, opts: &RunOptions) -> AppState {
    let target = obs.identity();
    let mut state = AppState::new(target.clone());
    let automated = obs
        .policy
        .automated
        .unwrap_or(crate::policy::AutomatedPolicy {
            enabled: false,
            prune: false,
            self_heal: false,
            allow_empty: false,
        });
    state.self_heal = automated.self_heal;
    state.automated_prune = automated.prune;
    state.self_heal_backoff = opts.self_heal_backoff;
    state.retry = RetryState {
        policy: obs.policy.retry_for(true),
        attempts: 0,
    };
    let (status, _) = ApplicationStatus::read_lenient(app);
    state.read_last_operation(&status, &obs.source, &obs.sources, execute::TERMINATED);
    state.prune_only = only_pruning_needed(&obs.resources);
    state.observe(target, obs.status.sync);
    state
}

mod delete;
pub mod destinations;
mod dry_run;
pub mod events;
mod execute;
#[cfg(test)]
mod orphan_tests;
#[cfg(test)]
mod plugin_tests;
mod route;
mod status_write;
pub mod sync_loop;
pub mod tenancy;
/// The Application and AppProject builders the unit tests share with the test-bed tests.
#[cfg(test)]
#[path = "../../tests/common/objects.rs"]
mod test_objects;
#[cfg(test)]
mod tests;

pub use delete::DeletionOutcome;
pub use events::{EventsHandle, SyncTrigger};
pub use route::{
    COMPARISON_ERROR, Destination, Destinations, DestinationsHandle, Routed, TARGET_STATE_FAILED,
};
use status_write::StoredStatus;
pub use sync_loop::LoopsHandle;
