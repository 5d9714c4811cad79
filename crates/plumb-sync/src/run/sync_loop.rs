//! The controller's sync loops, around [`crate::loops`] (the pure recognition): feeding each
//! compare to the app's tracker, running the doctor on what the reconcile already holds when
//! a loop is recognised, writing `status.syncLoop` and the `SyncLoop` condition (and removing
//! them once the loop settles) with the Events `SyncLoopDetected` (Warning) and
//! `SyncLoopCleared` (Normal), and LoopGuard's part of a sync.
//!
//! No request is added to a refresh: the tracker is in memory, the recorded loop is read from
//! the Application already in hand. A diagnosis (only when a loop is first recognised)
//! renders the revision once more keeping origins (what a refresh does not keep, to spare a
//! copy of every object), compares it with the live objects of the sync's own compare-after,
//! and reads its context (namespaces, webhooks, policies, HPAs) from the watch cache.
//! Writing or clearing the loop (a transition, rare) reads the Application once more, so the
//! doctor sees the history the sync just wrote.
//!
//! How it is wired: the controller passes a [`LoopsHandle`] (`RunOptions::loops`: the
//! `LoopOptions` and one in-memory `loops::Tracker` per app). `reconcile_at` feeds every compare
//! to it (after a sync, the differing fields of the sync's own compare-after, which
//! `execute_observed` hands back). On a recognised loop (a transition, rare) the runner reads
//! the Application once more, renders the revision again keeping origins
//! (`observe_desired_with`), compares it with the compare-after's live objects and runs
//! `plumb_doctor::diagnose` on that, with the context kinds (`plumb_cluster::context_kinds`) read
//! from the watch cache — no LIST of the app's objects — and writes `status.syncLoop` (typed,
//! `model::SyncLoop`) and the `SyncLoop` condition through `StoredStatus`. Once every compare has
//! been Synced for `settle` (the refresh interval) both are removed. A refresh costs one tracker
//! update (a mutex and a map entry) and a pointer lookup in the Application already read.
//!
//! **LoopGuard** (`plumb.dev/LoopGuard=true`, plumb's own row of `options::TABLE`;
//! `--loop-guard`) reads the recorded loop's fields for the observed revision — tracker, record
//! and guard all key on the observation's identity (`auto::revision_identity`: every source's
//! commit, a plain directory's content digest), the revision the automated decision compares.
//! An automated sync that would only touch those fields becomes `NoSync::LoopGuard`; otherwise
//! they become ignore rules in the observation's `guard`, which `apply_object` honours with
//! `plumb_diff::respect::normalize_target_for_sync` — the same call `RespectIgnoreDifferences`
//! makes — for those objects only. The compare is untouched, so the app still shows OutOfSync.
//! `ReconcileOutcome::looping` feeds the CLI's `plumb_app_sync_loop` metric. Tests: the tracker
//! on in-memory sequences (`loops.rs`); the real controller on the seed incident
//! (`plumb-cli/tests/sync_loop.rs`).

use super::*;
use crate::loops::{self, LoopField, LoopOptions, Recognised, Tracker};
use plumb_cluster::events::EventType;
use plumb_core::argo::model::{self, SyncLoop, SyncLoopField};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// Every app's [`Tracker`] and the options (shared by the controller's workers).
#[derive(Debug)]
pub struct LoopBook {
    pub options: LoopOptions,
    trackers: Mutex<HashMap<(String, String), Tracker>>,
}

/// A [`LoopBook`] in [`RunOptions`].
#[derive(Debug, Clone)]
pub struct LoopsHandle(pub Arc<LoopBook>);

impl LoopsHandle {
    pub fn new(options: LoopOptions) -> LoopsHandle {
        LoopsHandle(Arc::new(LoopBook {
            options,
            trackers: Mutex::new(HashMap::new()),
        }))
    }

    /// Forgets an app (deleted).
    pub fn forget(&self, namespace: &str, name: &str) {
        if let Ok(mut t) = self.0.trackers.lock() {
            t.remove(&(namespace.to_string(), name.to_string()));
        }
    }

    fn with<T>(&self, app: &Value, f: impl FnOnce(&mut Tracker) -> T) -> Option<T> {
        let key = (app_namespace(app).to_string(), app_name(app));
        let mut trackers = self.0.trackers.lock().ok()?;
        Some(f(trackers.entry(key).or_default()))
    }
}

/// The loop recorded in the Application's status, if any (parsed only when present).
fn recorded(app: &Value) -> Option<SyncLoop> {
    let raw = app.pointer("/status/syncLoop").filter(|v| !v.is_null())?;
    model::read::<SyncLoop>(raw).ok()
}

/// Whether the Application records a loop.
pub(super) fn is_recorded(app: &Value) -> bool {
    app.pointer("/status/syncLoop")
        .is_some_and(|v| !v.is_null())
}

/// The fields that differ in a compare: each differing leaf of a modified object; a missing
/// or extra object as its key with the path "".
pub(super) fn differing(obs: &Observation) -> BTreeSet<LoopField> {
    let mut out = BTreeSet::new();
    for d in &obs.diffs {
        match d.status {
            Status::Equal => {}
            Status::Modified => out.extend(d.fields().into_iter().map(|c| LoopField {
                key: d.key.clone(),
                path: c.path,
            })),
            Status::Missing | Status::Extra => {
                out.insert(LoopField {
                    key: d.key.clone(),
                    path: String::new(),
                });
            }
        }
    }
    out
}

/// The fields LoopGuard keeps this app's syncs of the observed revision from re-applying:
/// those of its recorded loop, when LoopGuard is on for it (none otherwise). The revision is
/// [`Observation::identity`]: a plain directory edited or a commit of any source is another.
pub(super) fn guarded(app: &Value, obs: &Observation, opts: &RunOptions) -> BTreeSet<LoopField> {
    let Some(LoopsHandle(book)) = &opts.loops else {
        return BTreeSet::new();
    };
    if !book.options.enabled()
        || !book.options.guards(obs.policy.sync_options.loop_guard)
        || !is_recorded(app)
    {
        return BTreeSet::new();
    }
    loops::guarded(recorded(app).as_ref(), &obs.identity())
}

/// LoopGuard for a sync: the guarded fields become ignore rules that the apply honours as
/// `RespectIgnoreDifferences=true` does (live's values are applied), for those objects only.
pub(super) fn guard_sync(obs: &mut Observation, fields: &BTreeSet<LoopField>) -> Result<()> {
    let mut rules: Vec<(String, plumb_core::argo::IgnoreRule)> = Vec::new();
    for f in fields.iter().filter(|f| !f.path.is_empty()) {
        rules.push((
            format!("LoopGuard {}", f.key),
            plumb_core::argo::IgnoreRule {
                group: f.key.group.clone(),
                kind: f.key.kind.clone(),
                name: f.key.name.clone(),
                namespace: f.key.namespace.clone(),
                json_pointers: vec![f.path.clone()],
                ..Default::default()
            },
        ));
    }
    if rules.is_empty() {
        return Ok(());
    }
    let ignore =
        plumb_diff::ignore::IgnoreNormalizer::new(rules, Duration::from_secs(1)).map_err(|e| {
            RunError::App {
                app: obs.name.clone(),
                reason: e.to_string(),
            }
        })?;
    obs.guard = Some(Guard {
        keys: fields.iter().map(|f| f.key.clone()).collect(),
        config: DiffConfig {
            ignore,
            ignore_aggregated_roles: obs.config.ignore_aggregated_roles,
            known_types: obs.config.known_types.clone(),
        },
    });
    Ok(())
}

/// LoopGuard's part of an [`Observation`]: the objects with guarded fields, and the rules.
pub(super) struct Guard {
    pub keys: BTreeSet<ResourceKey>,
    pub config: DiffConfig,
}

/// After a reconcile's compare (`synced`: whether a sync ran before it): feeds the tracker,
/// and records a newly recognised loop or clears a settled one. Returns whether the app is
/// in a recorded loop now.
pub(super) async fn after_compare(
    cluster: &dyn ClusterApi,
    app: &Value,
    obs: &Observation,
    synced: bool,
    opts: &RunOptions,
    now: SystemTime,
) -> Result<bool> {
    let was = is_recorded(app);
    let Some(handle) = &opts.loops else {
        return Ok(was);
    };
    let options = handle.0.options;
    if !options.enabled() {
        return Ok(was);
    }
    let in_sync = obs.status.sync == SyncStatusCode::Synced;
    let (found, settled) = handle
        .with(app, |t| {
            let found = if synced {
                t.synced(&obs.identity(), now, differing(obs), &options)
            } else {
                t.compared(in_sync, now);
                None
            };
            (found, t.settled(now, &options))
        })
        .unwrap_or((None, false));
    if let Some(found) = found {
        let current = recorded(app);
        let same = current.as_ref().is_some_and(|c| {
            c.revision == found.revision && loops::guarded(Some(c), &found.revision) == found.fields
        });
        if !same {
            record(cluster, app, obs, &found, opts, now).await?;
        }
        return Ok(true);
    }
    if was && settled {
        clear(cluster, app, opts).await?;
        return Ok(false);
    }
    Ok(was)
}

/// Writes the loop: the doctor's finding per field in `status.syncLoop`, and the condition.
async fn record(
    cluster: &dyn ClusterApi,
    app: &Value,
    obs: &Observation,
    found: &Recognised,
    opts: &RunOptions,
    now: SystemTime,
) -> Result<()> {
    let fresh = fresh(cluster, app).await?;
    let context: Vec<Value> = match &opts.cache {
        Some(CacheHandle(cache)) => plumb_cluster::context_kinds()
            .filter(|gk| gk.kind != plumb_cluster::APPLICATION_KIND)
            .flat_map(|gk| cache.list(&gk, None))
            .map(|o| (*o).clone())
            .collect(),
        None => Vec::new(),
    };
    // The compare-after again, of the same revision rendered with origins (where git declares
    // each field) against the live objects it read: no request for them.
    let live: Vec<Value> = obs.live.values().cloned().collect();
    let mut declared = observe_desired_with(
        cluster,
        app,
        opts,
        Some(&obs.revision),
        &obs.revisions,
        true,
    )
    .await?;
    compare_live(&mut declared, live.clone(), &opts.settings)?;
    let report = plumb_doctor::diagnose(&plumb_doctor::Inputs {
        app: &fresh,
        diffs: &declared.diffs,
        live: &live,
        context: &context,
        kustomizations: &[],
        now,
    });
    let fields: Vec<SyncLoopField> = found
        .fields
        .iter()
        .map(|f| {
            let finding = report.findings.iter().find(|x| {
                x.path == f.path
                    && x.resource.group == f.key.group
                    && x.resource.kind == f.key.kind
                    && x.resource.namespace == f.key.namespace
                    && x.resource.name == f.key.name
            });
            SyncLoopField {
                group: f.key.group.clone(),
                kind: f.key.kind.clone(),
                namespace: f.key.namespace.clone(),
                name: f.key.name.clone(),
                path: f.path.clone(),
                rewritten_by: finding.map_or_else(|| "an unknown writer".into(), rewritten_by),
                declared_at: finding
                    .and_then(|x| x.declared_at.as_ref())
                    .map(|d| format!("{}:{}", d.file, d.line))
                    .unwrap_or_default(),
                fix: finding
                    .and_then(|x| x.fixes.first())
                    .map(fix_line)
                    .unwrap_or_default(),
                ..SyncLoopField::default()
            }
        })
        .collect();
    let sync_loop = SyncLoop {
        since: Some(found.since),
        revision: found.revision.clone(),
        syncs: found.syncs,
        fields,
        ..SyncLoop::default()
    };
    let mut stored = StoredStatus::of(&fresh);
    let mut status = stored.status.clone();
    let message = loops::condition_message(&sync_loop);
    let existing = status
        .conditions
        .iter()
        .find(|c| c.type_name == loops::CONDITION)
        .and_then(|c| c.last_transition_time);
    status
        .conditions
        .retain(|c| c.type_name != loops::CONDITION);
    // The loop first, where `app get` shows it.
    status.conditions.insert(
        0,
        model::Condition {
            type_name: loops::CONDITION.into(),
            message,
            last_transition_time: existing.or(Some(now)),
            ..Default::default()
        },
    );
    status.sync_loop = Some(sync_loop);
    stored.write_app(cluster, status).await?;
    events::record(
        opts,
        &fresh,
        EventType::Warning,
        SYNC_LOOP_DETECTED,
        &message_of(&stored.status),
    );
    Ok(())
}

/// The Event reason of a loop recorded (Warning).
pub const SYNC_LOOP_DETECTED: &str = "SyncLoopDetected";
/// The Event reason of a loop cleared (Normal).
pub const SYNC_LOOP_CLEARED: &str = "SyncLoopCleared";

fn message_of(status: &model::ApplicationStatus) -> String {
    status
        .conditions
        .iter()
        .find(|c| c.type_name == loops::CONDITION)
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

/// Removes the loop and its condition.
async fn clear(cluster: &dyn ClusterApi, app: &Value, opts: &RunOptions) -> Result<()> {
    let fresh = fresh(cluster, app).await?;
    let mut stored = StoredStatus::of(&fresh);
    let mut status = stored.status.clone();
    let revision = status
        .sync_loop
        .as_ref()
        .map(|l| l.revision.clone())
        .unwrap_or_default();
    status
        .conditions
        .retain(|c| c.type_name != loops::CONDITION);
    status.sync_loop = None;
    stored.write_app(cluster, status).await?;
    let short = loops::short_revision(&revision);
    events::record(
        opts,
        &fresh,
        EventType::Normal,
        SYNC_LOOP_CLEARED,
        &format!("sync loop of revision {short} cleared: Synced for a refresh interval"),
    );
    Ok(())
}

/// The Application as it is now (a sync has just written its status).
async fn fresh(cluster: &dyn ClusterApi, app: &Value) -> Result<Value> {
    let name = app_name(app);
    cluster
        .get_application(app_namespace(app), &name)
        .await
        .map_err(|source| RunError::Cluster {
            app: name.clone(),
            source,
        })?
        .ok_or_else(|| RunError::App {
            app: name,
            reason: "the Application is gone".into(),
        })
}

/// `mutating webhook platform-policy-mutate`.
fn rewritten_by(f: &plumb_doctor::Finding) -> String {
    use plumb_doctor::CauseType as C;
    let what = match f.cause.kind {
        C::MutatingWebhook => "mutating webhook",
        C::MutatingPolicy => "mutating policy",
        C::Controller => "controller",
        C::ManualEdit => "a person",
        C::ApiServerDefault => "the API server",
        C::Unknown => "an unknown writer",
    };
    let name = &f.cause.name;
    if name.is_empty() || name == f.cause.kind.as_str() || name == "unknown" {
        what.to_string()
    } else {
        format!("{what} {name}")
    }
}

/// The first fix, in a few words.
fn fix_line(fix: &plumb_doctor::Fix) -> String {
    match fix {
        plumb_doctor::Fix::StopDeclaring(_) => "stop declaring it".into(),
        plumb_doctor::Fix::IgnoreDifferences(_) => {
            "ignore it narrowly (ignoreDifferences with RespectIgnoreDifferences=true)".into()
        }
        plumb_doctor::Fix::ServerSideDiff(_) => {
            "compare with a server-side diff (ServerSideDiff=true)".into()
        }
        plumb_doctor::Fix::Sync(_) => "sync".into(),
    }
}
