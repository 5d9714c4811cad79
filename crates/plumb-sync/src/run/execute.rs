//! Executing a sync operation: batches by phase and wave, hooks, health-gated waves, SyncFail
//! hooks, hook deletion, the final compare and the status write — with progress recorded in
//! `status.operationState` (phase `Running`) so that a restarted controller resumes the
//! operation (see [`Operation::resumed`]) instead of losing or duplicating it.
//!
//! Each batch: server-side apply as field manager `plumb`, forced (`fieldValidation=Ignore` for
//! `Validate=false` steps), or client-side apply with `ServerSideApply=false`; prune;
//! `CreateNamespace`; `Replace`. `FailOnSharedResource` is checked before the first wave. Hooks
//! are created in their phase, with `BeforeHookCreation` / `HookSucceeded` / `HookFailed`;
//! SyncFail hooks run on failure. Within a batch, CRDs are applied first and custom resources
//! of them once the CRD is Established and discovery serves the kind (`wait_served`;
//! `run/dry_run.rs` skips those resources' dry run while the CRD is new). Before each wave it
//! waits until the earlier waves' resources are healthy and hooks complete ("waiting for
//! healthy state of …"). Then the Application's status: sync, health, resources,
//! operationState, history. `apply_object` builds what is applied, honouring
//! `RespectIgnoreDifferences` and LoopGuard's rules (see [`super::sync_loop`]).

use super::*;
use crate::history::records_history;
use crate::migration::migrate_managed_fields;
use crate::operation::{DeletePolicy, TaskState, generated_name, hook_state, resource_state};
use crate::options::ApplyMode;
use crate::plan::{Batch, Phase, Step};
use crate::request::{ResourceSelector, SyncRequest};
use plumb_core::argo::model;

pub(super) fn propagation(p: PropagationPolicy) -> Propagation {
    match p {
        PropagationPolicy::Foreground => Propagation::Foreground,
        PropagationPolicy::Background => Propagation::Background,
        PropagationPolicy::Orphan => Propagation::Orphan,
    }
}

/// Waits (polling) until none of `keys` exists any more, for at most `timeout`.
async fn wait_deleted(
    cluster: &dyn ClusterApi,
    keys: &[&ResourceKey],
    timeout: Duration,
    poll: Duration,
) {
    let deadline = Instant::now() + timeout;
    let mut pending: Vec<&ResourceKey> = keys.to_vec();
    while !pending.is_empty() {
        let mut still = Vec::new();
        for key in pending {
            match cluster
                .get_object(&key.group, &key.kind, &key.namespace, &key.name)
                .await
            {
                Ok(None) => {}
                // Present, or unknown: keep waiting (errors end with the deadline).
                _ => still.push(key),
            }
        }
        pending = still;
        if pending.is_empty() || Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(poll).await;
    }
}

/// The object applied: with RespectIgnoreDifferences, live's values for ignored fields;
/// with the last-applied annotation (Secrets excepted).
pub(super) fn apply_object(obs: &Observation, key: &ResourceKey) -> Result<Value, String> {
    let target = obs
        .targets
        .get(key)
        .ok_or_else(|| format!("{key}: no desired object"))?;
    let mut obj = if obs.policy.sync_options.respects_ignore_differences(target) {
        plumb_diff::respect::normalize_target_for_sync(target, obs.live.get(key), &obs.config)
            .map_err(|e| e.to_string())?
    } else {
        target.clone()
    };
    // LoopGuard: the looping fields as live has them (the same mechanism).
    if let Some(guard) = obs.guard.as_ref().filter(|g| g.keys.contains(key)) {
        obj =
            plumb_diff::respect::normalize_target_for_sync(&obj, obs.live.get(key), &guard.config)
                .map_err(|e| e.to_string())?;
    }
    // Never copy a Secret's values into an annotation (kubectl does; plumb does not): a
    // field removed from a Secret in git is then not seen until the next sync removes it.
    if key.group.is_empty() && key.kind == "Secret" {
        return Ok(obj);
    }
    let mut recorded = obj.clone();
    if let Some(a) = recorded
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(LAST_APPLIED_ANNOTATION);
    }
    if let Some(o) = recorded.as_object_mut() {
        o.remove("status");
    }
    let text = serde_json::to_string(&recorded).map_err(|e| e.to_string())?;
    set_meta_entry(&mut obj, "annotations", LAST_APPLIED_ANNOTATION, &text);
    Ok(obj)
}

/// Client-side apply (`ServerSideApply=false`), as `kubectl apply` without `--server-side`:
/// create the object, or patch live into what kubectl's three-way patch leaves
/// ([`plumb_diff::apply::client_side_patch`]) as an `Update` by `plumb`. The patch is pinned
/// to the live object's `resourceVersion`; when another writer got in between, live is read
/// again and the patch recomputed (three attempts). Returns kubectl's verb for what happened.
async fn client_side_apply(
    cluster: &dyn ClusterApi,
    obj: &Value,
) -> Result<&'static str, ClusterError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        // Read at the version the patch is sent at (kubectl does the same).
        let live = cluster.get_object_as(obj).await?;
        let Some(live) = live else {
            return match cluster.create_object(obj, FIELD_MANAGER).await {
                Ok(_) => Ok("created"),
                // Created by someone else since the read: patch it on the next attempt.
                Err(ClusterError::Api { code: 409, .. }) if attempt < 3 => continue,
                Err(e) => Err(e),
            };
        };
        let Some(mut patch) = plumb_diff::apply::client_side_patch(obj, &live) else {
            return Ok("unchanged");
        };
        if let (Some(rv), Some(p)) = (
            live.pointer("/metadata/resourceVersion").cloned(),
            patch.as_object_mut(),
        ) {
            let meta = p.entry("metadata").or_insert_with(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.insert("resourceVersion".into(), rv);
            }
        }
        match cluster.merge_patch_object(obj, &patch, FIELD_MANAGER).await {
            Ok(_) => return Ok("configured"),
            Err(ClusterError::Api { code: 409, .. }) if attempt < 3 => continue,
            Err(e) => return Err(e),
        }
    }
}

/// `Force=true`: an apply the API server refuses as invalid (an immutable field changed) or,
/// client-side, as conflicting, is done by deleting the object and creating it again, as
/// `kubectl apply --force` does.
fn forced_recreate(e: &ClusterError, server_side: bool) -> bool {
    matches!(e, ClusterError::Api { code: 422, .. })
        || (!server_side && matches!(e, ClusterError::Api { code: 409, .. }))
}

/// Client-side apply migration before a server-side apply ([`crate::migration`]): live's
/// `managedFields` rewritten so plumb's `Apply` entry owns what the managers in `from` owned by
/// `Update`, pinned to live's `resourceVersion` (a conflict re-reads live; three attempts).
async fn migrate_client_side(
    cluster: &dyn ClusterApi,
    obj: &Value,
    from: &[&str],
) -> Result<(), String> {
    let key = ResourceKey::of(obj).ok_or("the object lacks apiVersion, kind or metadata.name")?;
    let failed = |e: String| format!("failed to perform client-side apply migration: {e}");
    let mut attempt = 0;
    loop {
        attempt += 1;
        let live = cluster
            .get_object(&key.group, &key.kind, &key.namespace, &key.name)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let Some(fields) = live
            .as_ref()
            .and_then(|l| migrate_managed_fields(l, from, FIELD_MANAGER))
        else {
            return Ok(());
        };
        let rv = live
            .as_ref()
            .and_then(|l| l.pointer("/metadata/resourceVersion"))
            .cloned()
            .unwrap_or(Value::Null);
        let patch = json!({"metadata": {"resourceVersion": rv, "managedFields": fields}});
        match cluster.merge_patch_object(obj, &patch, FIELD_MANAGER).await {
            Ok(_) => return Ok(()),
            Err(ClusterError::Api { code: 409, .. }) if attempt < 3 => continue,
            Err(e) => return Err(failed(e.to_string())),
        }
    }
}

/// The message of an operation stopped by `plumb app terminate-op` (Argo CD's).
pub(super) const TERMINATED: &str = "Operation terminated";

/// A sync operation: what `status.operationState` records while it runs.
#[derive(Debug, Clone)]
pub(super) struct Operation {
    pub started_at: SystemTime,
    pub initiated_by: InitiatedBy,
    pub self_heal_count: i64,
    pub retry_count: i64,
    /// The results recorded by an interrupted run of this operation (hooks already created
    /// or finished are not created again).
    pub recorded: Vec<ResourceResult>,
    /// The revision the operation syncs (the one it started with, when resumed).
    pub revision: Option<String>,
    /// A resumed multi-source operation: the revision of each source it started with
    /// (`operation.sync.revisions`, in `spec.sources` order); empty otherwise.
    pub revisions: Vec<String>,
    /// Whether it prunes; `None`: as `syncPolicy.automated.prune` says (automated syncs).
    pub prune: Option<bool>,
    /// A partial sync's resources (empty: the whole app).
    pub selected: Vec<ResourceSelector>,
    /// `syncStrategy: apply`: hooks do not run.
    pub skip_hooks: bool,
    /// The source rendered instead of `spec.source` (a rollback's), as `operation.sync.source`.
    pub source: Option<Value>,
    /// The history id a rollback returns to (for its `OperationStarted` Event).
    pub rollback: Option<i64>,
    /// Who or what started it (a resumed automated operation is `SelfHeal` when its
    /// self-heal count is above 0).
    pub trigger: SyncTrigger,
}

impl Operation {
    /// A new operation; its attempt counts follow the previous operation's.
    pub fn new(
        app_obj: &Value,
        initiated_by: InitiatedBy,
        reason: Option<SyncReason>,
        now: SystemTime,
    ) -> Operation {
        let prev = ApplicationStatus::read_lenient(app_obj).0.operation_state;
        let prev_heals = prev
            .as_ref()
            .and_then(|o| o.operation.sync.as_ref())
            .and_then(|s| s.auto_heal_attempts_count)
            .unwrap_or(0);
        let prev_retries = prev.and_then(|o| o.retry_count).unwrap_or(0);
        let self_heal_count = match reason {
            Some(SyncReason::SelfHeal) => prev_heals + 1,
            Some(SyncReason::Retry) => prev_heals,
            _ => 0,
        };
        Operation {
            // Derived as for a resumed operation (`resumed`), so a retry after a self-heal
            // counts as self-heal whether it runs through or is resumed.
            trigger: SyncTrigger::of(initiated_by.automated, self_heal_count),
            started_at: now,
            initiated_by,
            self_heal_count,
            retry_count: match reason {
                Some(SyncReason::Retry) => prev_retries + 1,
                _ => 0,
            },
            recorded: Vec::new(),
            revision: None,
            revisions: Vec::new(),
            prune: None,
            selected: Vec::new(),
            skip_hooks: false,
            source: None,
            rollback: None,
        }
    }

    /// A manual sync as `request` asks for it.
    pub fn manual(
        app_obj: &Value,
        initiated_by: InitiatedBy,
        request: &SyncRequest,
        now: SystemTime,
    ) -> Operation {
        Operation {
            revision: request.revision.clone(),
            prune: Some(request.prune),
            selected: request.resources.clone(),
            skip_hooks: request.skip_hooks,
            source: request.source.clone(),
            rollback: request.rollback,
            ..Operation::new(app_obj, initiated_by, None, now)
        }
    }

    /// The operation an Application's status shows `Running` (started by a controller or a
    /// CLI that stopped before finishing it), or `None`.
    pub fn resumed(app_obj: &Value) -> Option<Operation> {
        let op = ApplicationStatus::read_lenient(app_obj).0.operation_state?;
        if op.phase != "Running" {
            return None;
        }
        let sync = op.operation.sync.unwrap_or_default();
        let trigger = SyncTrigger::of(
            op.operation.initiated_by.automated,
            sync.auto_heal_attempts_count.unwrap_or(0),
        );
        Some(Operation {
            trigger,
            started_at: op.started_at?,
            initiated_by: op.operation.initiated_by,
            self_heal_count: sync.auto_heal_attempts_count.unwrap_or(0),
            retry_count: op.retry_count.unwrap_or(0),
            recorded: op
                .sync_result
                .iter()
                .flat_map(|r| &r.resources)
                .filter_map(ResourceResult::from_model)
                .collect(),
            revision: Some(sync.revision).filter(|r| !r.is_empty()),
            revisions: sync.revisions,
            prune: Some(sync.prune),
            skip_hooks: sync
                .sync_strategy
                .as_ref()
                .and_then(|s| s.get("apply"))
                .is_some_and(|v| !v.is_null()),
            source: sync.source.as_ref().map(source_json::to_value).or_else(|| {
                (!sync.sources.is_empty())
                    .then(|| Value::Array(sync.sources.iter().map(source_json::to_value).collect()))
            }),
            selected: sync
                .resources
                .iter()
                .filter_map(ResourceSelector::from_model)
                .collect(),
            rollback: None,
        })
    }

    /// Whether this resource takes part (a partial sync names its resources).
    fn selects(&self, key: &ResourceKey) -> bool {
        crate::request::selects(&self.selected, key)
    }

    /// Seeds the names of `generateName` hooks.
    fn id(&self, app: &str) -> String {
        format!("{app}@{}", format_rfc3339(self.started_at))
    }

    fn recorded_hook(&self, key: &ResourceKey, phase: &str) -> Option<&ResourceResult> {
        self.recorded
            .iter()
            .find(|r| r.hook_phase.is_some() && &r.key == key && r.phase == phase)
    }
}

const STATUSES: [&str; 5] = ["Synced", "SyncFailed", "Pruned", "PruneSkipped", "Running"];

impl ResourceResult {
    /// The result of `step` (its phase and wave) for `key`.
    pub(super) fn of_step(
        step: &Step,
        key: ResourceKey,
        status: &'static str,
        message: String,
    ) -> ResourceResult {
        ResourceResult {
            key,
            status,
            message,
            phase: step.phase.as_str(),
            wave: step.wave,
            hook_phase: None,
        }
    }

    /// The model's entry; `version` is the resource's API version where the operation knows it.
    fn to_model(&self, version: &str) -> model::ResourceResult {
        model::ResourceResult {
            group: self.key.group.clone(),
            version: version.to_string(),
            kind: self.key.kind.clone(),
            namespace: self.key.namespace.clone(),
            name: self.key.name.clone(),
            status: self.status.into(),
            message: self.message.clone(),
            sync_phase: self.phase.into(),
            hook_type: self
                .hook_phase
                .map(|_| self.phase.into())
                .unwrap_or_default(),
            hook_phase: self.hook_phase.unwrap_or_default().into(),
            ..model::ResourceResult::default()
        }
    }

    fn from_model(r: &model::ResourceResult) -> Option<ResourceResult> {
        let known = |x: &str, set: &[&'static str]| set.iter().copied().find(|k| *k == x);
        Some(ResourceResult {
            key: ResourceKey {
                group: r.group.clone(),
                kind: r.kind.clone(),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
            },
            status: known(&r.status, &STATUSES)?,
            message: r.message.clone(),
            phase: known(&r.sync_phase, &["PreSync", "Sync", "PostSync", "SyncFail"])?,
            wave: 0,
            hook_phase: match r.hook_phase.as_str() {
                "" => None,
                h => Some(known(h, &["Running", "Succeeded", "Failed"])?),
            },
        })
    }
}

/// A task started but not finished: a created hook, or an applied resource waited for.
struct Started {
    key: ResourceKey,
    hook: bool,
    /// Index of its result.
    result: usize,
}

struct Exec<'a> {
    cluster: &'a dyn ClusterApi,
    opts: &'a RunOptions,
    obs: &'a Observation,
    op: &'a Operation,
    op_id: String,
    results: Vec<ResourceResult>,
    started: Vec<Started>,
    /// Hooks created (their live keys), with their policies, for deletion at the end.
    hooks: Vec<(ResourceKey, usize, DeletePolicy)>,
    message: String,
    /// The status as last written: progress writes send only what changed since, so the
    /// phase `Running` is written once and a `Terminating` written meanwhile is never
    /// overwritten.
    stored: StoredStatus,
    /// Why the fence refused a write of this run, if it did ([`Exec::stop_if_fenced`]).
    fenced: Option<String>,
}

impl Exec<'_> {
    async fn live(&self, key: &ResourceKey) -> Option<Value> {
        self.cluster
            .get_object(&key.group, &key.kind, &key.namespace, &key.name)
            .await
            .ok()
            .flatten()
    }

    /// Records progress in `status.operationState` (phase `Running`).
    async fn progress(&mut self, message: String) -> Result<()> {
        if message == self.message {
            return Ok(());
        }
        self.message = message;
        let mut status = self.stored.status.clone();
        status.operation_state = Some(operation_state(
            status.operation_state.take(),
            self.obs,
            self.op,
            "Running",
            &self.message,
            None,
            &self.results,
        ));
        self.stored.write_app(self.cluster, status).await
    }

    /// Whether this operation must stop: someone asked to terminate it (`plumb app
    /// terminate-op` sets `operationState.phase: Terminating`), or a reconcile already ended it
    /// as terminated. Checked before each wave and on every poll while waiting.
    async fn terminating(&self) -> bool {
        let app = self
            .cluster
            .get_application(&self.obs.namespace, &self.obs.name)
            .await;
        let Ok(Some(a)) = app else {
            return false;
        };
        let Some(state) = ApplicationStatus::read_lenient(&a).0.operation_state else {
            return false;
        };
        // Terminating, or already ended as terminated by the next reconcile (its runner
        // presumed gone); never another outcome, which this runner must not overwrite.
        match state.phase.as_str() {
            "Terminating" => true,
            "Failed" => state.message == TERMINATED,
            _ => false,
        }
    }

    /// Waits until every started task is done; `Err(message)` when one failed or the wait
    /// timed out.
    async fn wait_started(&mut self) -> Result<Result<(), String>> {
        let deadline = Instant::now() + self.opts.wave_timeout;
        loop {
            let mut waiting = Vec::new();
            let mut failed = Vec::new();
            let started = std::mem::take(&mut self.started);
            for task in started {
                let live = self.live(&task.key).await;
                let state = if task.hook {
                    hook_state(&task.key, live.as_ref())
                } else {
                    resource_state(&task.key, live.as_ref())
                };
                let r = &mut self.results[task.result];
                match state {
                    TaskState::Running(m) => {
                        waiting.push(m);
                        self.started.push(task);
                    }
                    TaskState::Succeeded(m) => {
                        if task.hook {
                            r.hook_phase = Some("Succeeded");
                            if !m.is_empty() {
                                r.message = m;
                            }
                        }
                    }
                    TaskState::Failed(m) => {
                        if task.hook {
                            r.hook_phase = Some("Failed");
                        } else {
                            r.status = "SyncFailed";
                        }
                        r.message = m.clone();
                        failed.push(format!("{}: {m}", r.key));
                    }
                }
            }
            if !failed.is_empty() {
                return Ok(Err(format!(
                    "one or more synchronization tasks completed unsuccessfully, reason: {}",
                    failed.join("; ")
                )));
            }
            let Some(first) = waiting.first() else {
                return Ok(Ok(()));
            };
            let message = if waiting.len() > 1 {
                format!("{first} and {} more", waiting.len() - 1)
            } else {
                first.clone()
            };
            if Instant::now() >= deadline {
                return Ok(Err(format!(
                    "timed out after {}s {message}",
                    self.opts.wave_timeout.as_secs()
                )));
            }
            if self.terminating().await {
                return Ok(Err(TERMINATED.into()));
            }
            self.progress(message).await?;
            tokio::time::sleep(self.opts.poll_interval).await;
        }
    }

    fn push(
        &mut self,
        step: &Step,
        key: ResourceKey,
        status: &'static str,
        message: String,
    ) -> usize {
        if status == "SyncFailed"
            && self.fenced.is_none()
            && let Some(reason) = crate::controller::shard::fence_reason(&message)
        {
            self.fenced = Some(reason.to_string());
        }
        self.results
            .push(ResourceResult::of_step(step, key, status, message));
        self.results.len() - 1
    }

    /// Creates (applies) a hook in its phase, unless this operation already did.
    async fn run_hook(&mut self, step: &Step) {
        let phase = step.phase.as_str();
        let mut key = step.key.clone();
        let Some(target) = self.obs.targets.get(&step.key) else {
            self.push(step, key, "SyncFailed", "no desired object".into());
            return;
        };
        let mut obj = target.clone();
        if self.obs.generated.contains(&step.key) {
            key.name = generated_name(&step.key.name, &self.op_id);
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("generateName");
                meta.insert("name".into(), Value::String(key.name.clone()));
            }
            if self.obs.tracking.uses_annotation() {
                set_meta_entry(
                    &mut obj,
                    "annotations",
                    TRACKING_ID_ANNOTATION,
                    &tracking_id(&self.obs.app.name, &key),
                );
            }
        }
        let policy = DeletePolicy::of(&crate::plan::ObjectMeta::from_object(&obj).annotations);
        if let Some(done) = self.op.recorded_hook(&key, phase).cloned() {
            // Resumed: the hook was created by the interrupted run.
            let index = self.results.len();
            let running = done.hook_phase == Some("Running");
            self.results.push(done);
            self.hooks.push((key.clone(), index, policy));
            if running {
                self.started.push(Started {
                    key,
                    hook: true,
                    result: index,
                });
            }
            return;
        }
        if policy.before_hook_creation && self.live(&key).await.is_some() {
            let _ = self.delete_and_wait(&key).await;
        }
        let answer = self
            .cluster
            .apply(vec![obj], FIELD_MANAGER, true)
            .await
            .pop()
            .unwrap_or_else(|| {
                Err(ClusterError::Protocol {
                    reason: "no answer".into(),
                })
            });
        match answer {
            Ok(_) => {
                let index = self.push(
                    step,
                    key.clone(),
                    "Synced",
                    format!("{} created", key.kind.to_lowercase()),
                );
                self.results[index].hook_phase = Some("Running");
                self.hooks.push((key.clone(), index, policy));
                self.started.push(Started {
                    key,
                    hook: true,
                    result: index,
                });
            }
            Err(e) => {
                let index = self.push(step, key, "SyncFailed", e.to_string());
                self.results[index].hook_phase = Some("Failed");
            }
        }
    }

    /// Records a resource written to the cluster (`<kind> <verb>`, as kubectl reports it):
    /// Synced, and waited for by health before the next wave.
    fn applied(&mut self, step: &Step, key: ResourceKey, verb: &str) {
        let message = format!("{} {verb}", key.kind.to_lowercase());
        self.started_resource(step, key, message);
    }

    /// A write this run made was refused by its replica's fence (the replica lost the app or
    /// its Lease's renew deadline passed): the run stops here, as a stopped controller does,
    /// and the operation stays `Running` for whoever acts for the app next to resume. Not a
    /// failure of the object: recording the operation `Failed` would need a write the fence
    /// forbids, and one that lands once the Lease is renewed would end an operation another
    /// replica may be resuming, or have an automated sync start it again.
    fn stop_if_fenced(&mut self) -> Result<()> {
        match self.fenced.take() {
            Some(reason) => Err(RunError::Cluster {
                app: self.obs.name.clone(),
                source: crate::controller::shard::fenced(reason),
            }),
            None => Ok(()),
        }
    }

    /// Records a resource `Synced` and waits for its health before the next wave.
    fn started_resource(&mut self, step: &Step, key: ResourceKey, message: String) {
        let index = self.push(step, key.clone(), "Synced", message);
        self.started.push(Started {
            key,
            hook: false,
            result: index,
        });
    }

    /// Deletes an object (background propagation) and waits, at most the prune wait, until it
    /// is gone; `false` when it is still there.
    async fn delete_and_wait(&self, key: &ResourceKey) -> std::result::Result<bool, ClusterError> {
        self.cluster
            .delete_object(key, Propagation::Background)
            .await?;
        wait_deleted(
            self.cluster,
            &[key],
            self.opts.prune_wait,
            self.opts.poll_interval,
        )
        .await;
        Ok(self.live(key).await.is_none())
    }

    /// Deletes the object and creates it again (`Force=true`), as kubectl's delete-and-create:
    /// waits for the delete (at most the prune wait; still there is an error, nothing is
    /// created), then applies server-side or creates; when that fails the object as it was is
    /// created again. `cause` (why it is re-created) leads every error.
    async fn recreate(&self, obj: &Value, server_side: bool, cause: &str) -> Result<(), String> {
        let key =
            ResourceKey::of(obj).ok_or("the object lacks apiVersion, kind or metadata.name")?;
        let fail = |what: String| format!("{cause}; Force=true: {what}");
        let original = self
            .cluster
            .get_object(&key.group, &key.kind, &key.namespace, &key.name)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let gone = self
            .delete_and_wait(&key)
            .await
            .map_err(|e| fail(format!("deleting it: {e}")))?;
        if !gone {
            return Err(fail(format!(
                "deleted to re-create, but still being deleted after {}s",
                self.opts.prune_wait.as_secs()
            )));
        }
        let created = if server_side {
            self.cluster
                .apply(vec![obj.clone()], FIELD_MANAGER, true)
                .await
                .pop()
                .unwrap_or_else(|| {
                    Err(ClusterError::Protocol {
                        reason: "no answer".into(),
                    })
                })
        } else {
            self.cluster.create_object(obj, FIELD_MANAGER).await
        };
        let Err(e) = created else {
            return Ok(());
        };
        let restored = match original {
            Some(mut old) => {
                for k in [
                    "resourceVersion",
                    "uid",
                    "creationTimestamp",
                    "generation",
                    "managedFields",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "selfLink",
                ] {
                    if let Some(m) = old.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove(k);
                    }
                }
                if let Some(m) = old.as_object_mut() {
                    m.remove("status");
                }
                // What the API server filled in and refuses to be given back.
                if key.group == "batch" && key.kind == "Job" {
                    if let Some(spec) = old.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove("selector");
                    }
                    if let Some(labels) = old
                        .pointer_mut("/spec/template/metadata/labels")
                        .and_then(Value::as_object_mut)
                    {
                        for l in [
                            "controller-uid",
                            "batch.kubernetes.io/controller-uid",
                            "job-name",
                            "batch.kubernetes.io/job-name",
                        ] {
                            labels.remove(l);
                        }
                    }
                }
                if key.group.is_empty()
                    && key.kind == "Service"
                    && let Some(spec) = old.get_mut("spec").and_then(Value::as_object_mut)
                {
                    spec.remove("clusterIP");
                    spec.remove("clusterIPs");
                }
                match self.cluster.create_object(&old, FIELD_MANAGER).await {
                    Ok(_) => "the previous object was created again".to_string(),
                    Err(e2) => format!("creating the previous object again failed too: {e2}"),
                }
            }
            None => "there was no previous object".to_string(),
        };
        Err(fail(format!("deleted to re-create, then: {e}; {restored}")))
    }

    /// Server-side applies `applies` in one request (a Force=true one is re-created when the
    /// apply is refused) and records each result.
    async fn server_side_apply(&mut self, applies: Vec<(&Step, Value)>) {
        if applies.is_empty() {
            return;
        }
        let (steps, objects): (Vec<&Step>, Vec<Value>) = applies.into_iter().unzip();
        // Force=true objects are kept for a delete-and-create.
        let forced: Vec<Option<Value>> = steps
            .iter()
            .zip(&objects)
            .map(|(s, o)| s.force.then(|| o.clone()))
            .collect();
        // `Validate=false`: sent with fieldValidation=Ignore.
        let validated = objects.into_iter().zip(steps.iter().map(|s| s.validate));
        let answers = self
            .cluster
            .apply_validating(validated.collect(), FIELD_MANAGER, true, false)
            .await;
        for ((step, answer), forced) in steps.into_iter().zip(answers).zip(&forced) {
            let key = step.key.clone();
            let answer = match (answer, forced) {
                (Err(e), Some(obj)) if forced_recreate(&e, true) => {
                    match self.recreate(obj, true, &e.to_string()).await {
                        Ok(()) => {
                            self.applied(step, key, "replaced");
                            continue;
                        }
                        Err(e) => Err(e),
                    }
                }
                (other, _) => other.map(drop).map_err(|e| e.to_string()),
            };
            match answer {
                Ok(()) => self.applied(step, key, "serverside-applied"),
                Err(e) => {
                    self.push(step, key, "SyncFailed", e);
                }
            }
        }
    }

    /// Waits until each CRD of `keys` is Established and each kind of `kinds` is in the
    /// server's discovery (or the wave timeout passes: the custom resources' applies then
    /// fail, naming the kind). Established alone is not enough: the API server publishes a new
    /// group in discovery a moment later, and on a busy server that moment is seconds.
    async fn wait_served(&self, keys: &[ResourceKey], kinds: &[plumb_core::GroupKind]) {
        let deadline = std::time::Instant::now() + self.opts.wave_timeout;
        self.wait_established(keys, deadline).await;
        for gk in kinds {
            while self
                .cluster
                .resource_for(&gk.group, &gk.kind)
                .await
                .is_err()
                && std::time::Instant::now() < deadline
            {
                tokio::time::sleep(self.opts.poll_interval.min(Duration::from_millis(200))).await;
            }
        }
    }

    /// Waits until each CRD of `keys` is Established, or `deadline`.
    async fn wait_established(&self, keys: &[ResourceKey], deadline: std::time::Instant) {
        for key in keys {
            loop {
                let established = self.live(key).await.is_some_and(|crd| {
                    crd.pointer("/status/conditions")
                        .and_then(Value::as_array)
                        .is_some_and(|cs| {
                            cs.iter()
                                .any(|c| c["type"] == "Established" && c["status"] == "True")
                        })
                });
                if established || std::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(self.opts.poll_interval.min(Duration::from_millis(200))).await;
            }
        }
    }

    /// Runs one batch; returns the failure message, if any step failed.
    async fn run_batch(
        &mut self,
        batch: &Batch<'_>,
        sync_opts: &crate::options::SyncOptions,
    ) -> Option<String> {
        let first = self.results.len();
        let mut applies: Vec<(&Step, Value)> = Vec::new();
        for &step in &batch.steps {
            let key = step.key.clone();
            match step.action {
                _ if step.source == StepSource::CreateNamespace => {
                    let r = self
                        .cluster
                        .ensure_namespace(&key.name, FIELD_MANAGER)
                        .await;
                    let (status, message) = match r {
                        Ok(true) => ("Synced", format!("namespace/{} created", key.name)),
                        Ok(false) => ("Synced", "namespace exists".to_string()),
                        Err(e) => ("SyncFailed", e.to_string()),
                    };
                    self.push(step, key, status, message);
                }
                Action::Apply | Action::Replace if step.source == StepSource::Hook => {
                    self.run_hook(step).await;
                }
                Action::Apply if step.apply_mode == ApplyMode::ClientSide => {
                    let r = match apply_object(self.obs, &key) {
                        Ok(obj) => match client_side_apply(self.cluster, &obj).await {
                            Err(e) if step.force && forced_recreate(&e, false) => self
                                .recreate(&obj, false, &e.to_string())
                                .await
                                .map(|()| "replaced"),
                            r => r.map_err(|e| e.to_string()),
                        },
                        Err(e) => Err(e),
                    };
                    match r {
                        Ok(done) => self.applied(step, key, done),
                        Err(e) => {
                            self.push(step, key, "SyncFailed", e);
                        }
                    }
                }
                Action::Apply => match apply_object(self.obs, &key) {
                    Ok(obj) => applies.push((step, obj)),
                    Err(e) => {
                        self.push(step, key, "SyncFailed", e);
                    }
                },
                Action::Replace => {
                    let r = match apply_object(self.obs, &key) {
                        // `Force=true,Replace=true`: `kubectl replace --force`, delete and create.
                        Ok(obj) if step.force => {
                            self.recreate(&obj, false, "Replace=true with Force=true")
                                .await
                        }
                        Ok(obj) => self
                            .cluster
                            .replace_object(&obj, FIELD_MANAGER)
                            .await
                            .map(drop)
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    };
                    match r {
                        Ok(_) => self.applied(step, key, "replaced"),
                        Err(e) => {
                            self.push(step, key, "SyncFailed", e);
                        }
                    }
                }
                Action::Prune if step.requires_confirmation => {
                    self.push(
                        step,
                        key,
                        "PruneSkipped",
                        "ignored (requires confirmation: Prune=confirm)".into(),
                    );
                }
                Action::Prune => {
                    let r = self
                        .cluster
                        .delete_object(&key, propagation(sync_opts.prune_propagation_policy))
                        .await;
                    match r {
                        Ok(_) => self.push(step, key, "Pruned", "pruned".into()),
                        Err(e) => self.push(step, key, "SyncFailed", e.to_string()),
                    };
                }
                Action::Skip(why @ (SkipReason::PruneDisabled | SkipReason::NoPrune)) => {
                    self.push(step, key, "PruneSkipped", why.message().into());
                }
                Action::Skip(why @ SkipReason::InSyncOnResume) => {
                    self.started_resource(step, key, why.message().into());
                }
                Action::Skip(why) => {
                    self.push(step, key, "Synced", why.message().into());
                }
            }
        }
        if sync_opts.client_side_apply_migration {
            let from = [self.obs.migration_manager.as_str(), FIELD_MANAGER];
            let mut kept = Vec::with_capacity(applies.len());
            for (step, obj) in applies {
                let needed = self.obs.live.get(&step.key).is_some_and(|live| {
                    migrate_managed_fields(live, &from, FIELD_MANAGER).is_some()
                });
                if !needed {
                    kept.push((step, obj));
                    continue;
                }
                match migrate_client_side(self.cluster, &obj, &from).await {
                    Ok(()) => kept.push((step, obj)),
                    Err(e) => {
                        self.push(step, step.key.clone(), "SyncFailed", e);
                    }
                }
            }
            applies = kept;
        }
        // As Argo CD: a wave's CRDs are applied first; its custom resources of them once the
        // CRD is Established (the kind is served), so both can share a wave.
        let crds: Vec<plumb_core::GroupKind> = applies
            .iter()
            .filter_map(|(_, obj)| plumb_core::GroupKind::defined_by(obj))
            .collect();
        let (first_crds, rest): (Vec<_>, Vec<_>) = applies.into_iter().partition(|(s, _)| {
            s.key.group == "apiextensions.k8s.io" && s.key.kind == "CustomResourceDefinition"
        });
        let waited: Vec<plumb_core::GroupKind> = crds
            .into_iter()
            .filter(|gk| {
                rest.iter()
                    .any(|(s, _)| gk.group == s.key.group && gk.kind == s.key.kind)
            })
            .collect();
        if !waited.is_empty() {
            let keys: Vec<ResourceKey> = first_crds.iter().map(|(s, _)| s.key.clone()).collect();
            self.server_side_apply(first_crds).await;
            self.wait_served(&keys, &waited).await;
            self.server_side_apply(rest).await;
        } else {
            self.server_side_apply(first_crds.into_iter().chain(rest).collect())
                .await;
        }
        // As gitops-engine: a wave's pruned objects are gone before the next wave (and
        // before the sync's final compare), or the wait times out.
        let pruned: Vec<&ResourceKey> = self.results[first..]
            .iter()
            .filter(|r| r.status == "Pruned")
            .map(|r| &r.key)
            .collect();
        wait_deleted(
            self.cluster,
            &pruned,
            self.opts.prune_wait,
            self.opts.poll_interval,
        )
        .await;
        let failed: Vec<String> = self.results[first..]
            .iter()
            .filter(|r| r.status == "SyncFailed")
            .map(|r| format!("{}: {}", r.key, r.message))
            .collect();
        (!failed.is_empty()).then(|| {
            format!(
                "one or more objects failed to apply, reason: {}",
                failed.join("; ")
            )
        })
    }
}

/// The app's sync options, with whether `CreateNamespace=true`'s namespace exists now.
pub(super) async fn sync_options_now(
    cluster: &dyn ClusterApi,
    obs: &Observation,
) -> Result<crate::options::SyncOptions> {
    let mut sync_opts = obs.policy.sync_options.clone();
    if sync_opts.create_namespace
        && let Some(dest) = sync_opts.destination_namespace.as_mut()
    {
        dest.exists = cluster
            .get_object("", "Namespace", "", &dest.name)
            .await
            .map_err(|source| RunError::Cluster {
                app: obs.name.clone(),
                source,
            })?
            .is_some();
    }
    Ok(sync_opts)
}

/// `status.operationState` for `op` in `phase`, written over the previous one: every field an
/// operation sets is set (cleared when this one has none), what plumb does not model is kept.
pub(super) fn operation_state(
    prev: Option<model::OperationState>,
    obs: &Observation,
    op: &Operation,
    phase: &str,
    message: &str,
    finished: Option<SystemTime>,
    results: &[ResourceResult],
) -> model::OperationState {
    let mut state = prev.unwrap_or_default();
    let sync = state.operation.sync.get_or_insert_with(Default::default);
    sync.revision = obs.revision.clone();
    sync.prune = op.prune.unwrap_or(false);
    sync.auto_heal_attempts_count = Some(op.self_heal_count);
    sync.sync_strategy = Some(if op.skip_hooks {
        json!({"apply": {}})
    } else {
        json!({"hook": {}})
    });
    sync.source = op.source.as_ref().and_then(|s| model::read(s).ok());
    // A list: a multi-source rollback's sources.
    sync.sources = op
        .source
        .as_ref()
        .filter(|s| s.is_array())
        .and_then(|s| model::read(s).ok())
        .unwrap_or_default();
    sync.revisions = obs.revisions.clone();
    // A previous partial sync's list must not make this operation partial when resumed.
    sync.resources = op.selected.iter().map(ResourceSelector::to_model).collect();
    sync.sync_options = obs.sync_options.clone();
    state.operation.initiated_by.username = op.initiated_by.username.clone();
    state.operation.initiated_by.automated = op.initiated_by.automated;
    state.operation.retry.get_or_insert_with(Default::default);
    state.phase = phase.into();
    state.message = message.into();
    state.started_at = Some(op.started_at);
    state.finished_at = finished;
    // Argo CD omits a zero count (`omitempty`): only a retry writes one.
    state.retry_count = (op.retry_count > 0).then_some(op.retry_count);
    let result = state.sync_result.get_or_insert_with(Default::default);
    result.revision = obs.revision.clone();
    result.content_digest = obs.content_digest.clone();
    result.source = Some(obs.source.clone());
    result.revisions = obs.revisions.clone();
    result.sources = obs.sources.clone();
    // The version each object was applied with, or (a prune) read with.
    let version = |key: &ResourceKey| {
        obs.targets
            .get(key)
            .or_else(|| obs.live.get(key))
            .and_then(|o| o.get("apiVersion"))
            .and_then(Value::as_str)
            .map(|v| v.rsplit('/').next().unwrap_or(v).to_string())
            .unwrap_or_default()
    };
    result.resources = results
        .iter()
        .map(|r| r.to_model(&version(&r.key)))
        .collect();
    state
}

/// Runs the operation `op` on the observed app and writes the outcome.
pub(super) async fn execute(
    cluster: &dyn ClusterApi,
    app_obj: &Value,
    obs: Observation,
    opts: &RunOptions,
    op: Operation,
    automated: bool,
    now: SystemTime,
) -> Result<SyncOutcome> {
    execute_observed(cluster, app_obj, obs, opts, op, automated, now)
        .await
        .map(|(outcome, _)| outcome)
}

/// [`execute()`], and the app as compared after the sync.
pub(super) async fn execute_observed(
    cluster: &dyn ClusterApi,
    app_obj: &Value,
    mut obs: Observation,
    opts: &RunOptions,
    mut op: Operation,
    automated: bool,
    now: SystemTime,
) -> Result<(SyncOutcome, Observation)> {
    let clock = Instant::now();
    let prune_enabled = *op
        .prune
        .get_or_insert_with(|| obs.automated().is_some_and(|a| a.prune));
    let allow_empty = obs.automated().is_some_and(|a| a.allow_empty);
    // An operation resumed was announced when it started; what it already applied is not
    // applied again.
    let resumed = Operation::resumed(app_obj).is_some();
    let mut sync_opts = sync_options_now(cluster, &obs).await?;
    sync_opts.resumed = resumed;

    let mut exec = Exec {
        cluster,
        opts,
        obs: &obs,
        op: &op,
        op_id: op.id(&obs.name),
        results: Vec::new(),
        started: Vec::new(),
        hooks: Vec::new(),
        message: String::new(),
        stored: StoredStatus::of(app_obj),
        fenced: None,
    };
    exec.progress("running".into()).await?;
    if !resumed {
        events::operation_started(opts, app_obj, &obs, &op);
    }

    let mut failure: Option<String> = None;
    let mut all_tasks_message = "successfully synced (no more tasks)";
    // A partial sync plans only its resources (hooks are not among them).
    let planned: Vec<PlanResource> = obs
        .resources
        .iter()
        .filter(|r| op.selects(&r.key))
        .filter(|r| {
            !op.skip_hooks
                || !r.target.as_ref().is_some_and(|t| {
                    matches!(
                        crate::plan::hook_of(&t.annotations),
                        crate::plan::Hook::Phases(_)
                    )
                })
        })
        .cloned()
        .collect();
    // FailOnSharedResource=true: nothing is applied when another app tracks a resource.
    let shared = sync_opts
        .fail_on_shared_resource
        .then(|| {
            let live = planned.iter().filter(|r| r.target.is_some());
            let live = live.filter_map(|r| Some((&r.key, obs.live.get(&r.key)?)));
            crate::options::shared_resource(&obs.app.name, obs.tracking, live)
        })
        .flatten();
    match plan(&planned, &sync_opts, automated, allow_empty, prune_enabled) {
        Err(e) => failure = Some(e.to_string()),
        Ok(_) if shared.is_some() => failure = shared,
        Ok(p) => {
            let batches = p.batches();
            let (fail_batches, batches): (Vec<&Batch<'_>>, Vec<&Batch<'_>>) =
                batches.iter().partition(|b| b.phase == Phase::SyncFail);
            let has_hooks = batches
                .iter()
                .any(|b| b.steps.iter().any(|s| s.source == StepSource::Hook));
            for (i, batch) in batches.iter().enumerate() {
                // A wave starts when every task of the waves before it is done: hooks
                // completed, resources healthy.
                if i > 0
                    && let Err(m) = exec.wait_started().await?
                {
                    failure = Some(m);
                    break;
                }
                if exec.terminating().await {
                    failure = Some(TERMINATED.into());
                    break;
                }
                let message = format!("running phase {} wave {}", batch.phase.as_str(), batch.wave);
                exec.progress(message).await?;
                let failed = exec.run_batch(batch, &sync_opts).await;
                exec.stop_if_fenced()?;
                if let Some(m) = failed {
                    failure = Some(m);
                    break;
                }
            }
            // With hooks, the sync ends when every task is done; without, after the last wave
            // is applied (gitops-engine: "no more tasks").
            if failure.is_none() && has_hooks {
                all_tasks_message = "successfully synced (all tasks run)";
                if let Err(m) = exec.wait_started().await? {
                    failure = Some(m);
                }
            }
            // SyncFail hooks are for a sync that failed, not one that was stopped.
            if failure.as_deref().is_some_and(|f| f != TERMINATED) && !fail_batches.is_empty() {
                exec.started.clear();
                for batch in &fail_batches {
                    exec.progress(format!("running SyncFail hooks (wave {})", batch.wave))
                        .await?;
                    exec.run_batch(batch, &sync_opts).await;
                    exec.stop_if_fenced()?;
                }
                // SyncFail hooks run to completion; their outcome does not change the phase.
                let _ = exec.wait_started().await?;
            }
        }
    }
    // A terminated operation's hooks still running are deleted, as Argo CD terminates them.
    if failure.as_deref() == Some(TERMINATED) {
        for (key, index, _) in &exec.hooks {
            if exec.results[*index].hook_phase == Some("Running")
                && cluster
                    .delete_object(key, Propagation::Background)
                    .await
                    .is_ok()
            {
                exec.results[*index].hook_phase = Some("Failed");
                exec.results[*index].message = TERMINATED.to_string();
            }
        }
    }
    // Hooks whose deletion policy says so go once they are done.
    let succeeded = failure.is_none();
    let mut gone = Vec::new();
    for (key, index, policy) in &exec.hooks {
        let ok = exec.results[*index].hook_phase == Some("Succeeded");
        let done = exec.results[*index].hook_phase != Some("Running");
        if done
            && policy.deletes_after(ok)
            && cluster
                .delete_object(key, Propagation::Background)
                .await
                .is_ok()
        {
            gone.push(key.clone());
        }
    }
    let gone_refs: Vec<&ResourceKey> = gone.iter().collect();
    wait_deleted(cluster, &gone_refs, opts.prune_wait, opts.poll_interval).await;
    let results = std::mem::take(&mut exec.results);
    let mut stored = exec.stored;
    let execute_time = clock.elapsed();

    // Compare again: what the cluster made of the sync.
    let t = Instant::now();
    obs.recompare(cluster, &opts.settings).await?;
    let compare_after = t.elapsed();

    let finished = now + clock.elapsed();
    let phase = if succeeded { "Succeeded" } else { "Failed" };
    let message = failure.unwrap_or_else(|| all_tasks_message.to_string());

    let mut status = status_write::refreshed(stored.status.clone(), app_obj, &obs, finished);
    let partial = !op.selected.is_empty();
    let history_id = records_history(succeeded, false, partial).then(|| {
        append_history(
            &mut status.history,
            HistoryEntry {
                sources: obs.sources.clone(),
                revisions: obs.revisions.clone(),
                ..HistoryEntry::new(
                    obs.revision.clone(),
                    obs.source.clone(),
                    op.started_at,
                    finished,
                    op.initiated_by.clone(),
                )
            },
            revision_history_limit(app_obj),
        )
    });
    status.operation_state = Some(operation_state(
        status.operation_state.take(),
        &obs,
        &op,
        phase,
        &message,
        Some(finished),
        &results,
    ));
    let t = Instant::now();
    let before = stored.status.clone();
    stored.write_app(cluster, status).await?;
    let write_time = t.elapsed();
    events::operation_completed(opts, app_obj, &obs, partial, succeeded, &message);
    events::status_changes(opts, app_obj, &before, &stored.status);

    let outcome = SyncOutcome {
        phase,
        message,
        revision: obs.revision.clone(),
        history_id,
        results,
        timings: Timings {
            render: obs.render_time,
            compare: obs.compare_time,
            execute: execute_time,
            compare_after,
            write_status: write_time,
            total: Duration::ZERO,
        },
        status: obs.status.clone(),
        trigger: op.trigger,
    };
    Ok((outcome, obs))
}
