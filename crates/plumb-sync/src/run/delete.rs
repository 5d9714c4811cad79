//! Finalizing a deleted Application ([`crate::deletion`]): one step per reconcile, stage by
//! stage — PreDelete hooks (create, wait), the resources (the highest wave, wait, the next),
//! PostDelete hooks, then the hooks' cleanup — each stage ending by removing its finalizer.
//!
//! Entry: `finalize_deletion`, one step per call; the CLI's `plumb app delete --wait` loops on
//! it. A deleted Application's cascade goes to its destination, resolved without the project.

use super::*;
use crate::deletion::{
    Candidate, Cascade, DELETION_APPROVED_ANNOTATION, DeleteHook, RESOURCES_FINALIZER,
    RESOURCES_FINALIZER_BACKGROUND, Stage, Step, next_step, with_hook_finalizers,
};
use crate::operation::{DeletePolicy, TaskState, hook_state};
use crate::options::ResourceSyncOptions;

/// What one finalizing step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletionOutcome {
    /// Resources whose delete was sent in this step.
    pub deleted: Vec<ResourceKey>,
    /// Resources the deletion waits for (still going, or needing confirmation).
    pub waiting: Vec<ResourceKey>,
    /// Resources left in place (`Delete=false`).
    pub kept: Vec<ResourceKey>,
    /// The finalizer was removed: the API server deletes the Application now.
    pub finalized: bool,
    /// One line for logs and the Application's condition.
    pub message: String,
}

/// When `app` is being deleted (`metadata.deletionTimestamp`), takes the next step of its
/// finalization; `None` for an Application that is not being deleted. Without plumb's
/// finalizers there is nothing to do (the resources stay, as in Argo CD).
pub async fn finalize_deletion(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
) -> Result<Option<DeletionOutcome>> {
    if app
        .pointer("/metadata/deletionTimestamp")
        .is_none_or(Value::is_null)
    {
        return Ok(None);
    }
    Ok(Some(match Stage::of(app) {
        Stage::Nothing => DeletionOutcome::waiting(
            Vec::new(),
            "deleting without cascade: resources are left in place".into(),
        ),
        Stage::Resources(cascade) => delete_resources(cluster, app, cascade).await?,
        Stage::Hooks(kind) => run_delete_hooks(cluster, app, opts, kind).await?,
        Stage::Cleanup => clean_up_hooks(cluster, app, opts).await?,
    }))
}

impl DeletionOutcome {
    fn waiting(waiting: Vec<ResourceKey>, message: String) -> DeletionOutcome {
        DeletionOutcome {
            deleted: Vec::new(),
            waiting,
            kept: Vec::new(),
            finalized: false,
            message,
        }
    }
}

fn cluster_err(app: &Value) -> impl Fn(ClusterError) -> RunError {
    let name = app_name(app);
    move |source| RunError::Cluster {
        app: name.clone(),
        source,
    }
}

/// The resources stage: delete the highest wave left, wait, and at the end remove the
/// resources finalizer.
async fn delete_resources(
    cluster: &dyn ClusterApi,
    app: &Value,
    cascade: Cascade,
) -> Result<DeletionOutcome> {
    let cluster_err = cluster_err(app);
    let tracking_name = Application::from_value(app)
        .map(|a| a.name)
        .unwrap_or_else(|_| app_name(app));
    let app_delete = SyncPolicy::from_application(app)
        .ok()
        .and_then(|p| p.sync_options.delete);
    // The app's resources as its status lists them, and the hooks its last operation
    // created (left behind by a BeforeHookCreation policy).
    let mut keys = previous_resources(app);
    let last = ApplicationStatus::read_lenient(app).0.operation_state;
    for r in last
        .iter()
        .flat_map(|o| &o.sync_result)
        .flat_map(|r| &r.resources)
        .filter(|r| !r.hook_type.is_empty())
    {
        let key = ResourceKey {
            group: r.group.clone(),
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        };
        if !key.kind.is_empty() && !key.name.is_empty() && !keys.contains(&key) {
            keys.push(key);
        }
    }
    let mut candidates = Vec::new();
    for key in keys {
        let Some(obj) = cluster
            .get_object(&key.group, &key.kind, &key.namespace, &key.name)
            .await
            .map_err(&cluster_err)?
        else {
            continue;
        };
        if !plumb_diff::compare::is_tracked_by(&obj, &tracking_name) {
            continue;
        }
        let meta = crate::plan::ObjectMeta::from_object(&obj);
        // As Argo CD's `shouldBeDeleted`: never a CRD (its deletion takes every custom
        // resource of the kind with it), never the Application itself, never what Helm keeps.
        let never = (key.group == "apiextensions.k8s.io" && key.kind == "CustomResourceDefinition")
            || (key.group == cluster.app_group()
                && key.kind == plumb_cluster::APPLICATION_KIND
                && key.namespace == app_namespace(app)
                && key.name == app_name(app))
            || meta
                .annotations
                .get("helm.sh/resource-policy")
                .is_some_and(|v| crate::options::annotation_csv(v).contains(&"keep"));
        let delete = if never {
            Some(crate::options::PruneOption::False)
        } else {
            meta.annotations
                .get(plumb_core::SYNC_OPTIONS_ANNOTATION)
                .and_then(|v| ResourceSyncOptions::parse(v).delete)
                .or(app_delete)
        };
        candidates.push(Candidate {
            key,
            wave: crate::plan::wave_of(&meta.annotations),
            deleting: obj
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|v| !v.is_null()),
            delete,
        });
    }
    let approved = plumb_core::value::annotation(app, DELETION_APPROVED_ANNOTATION).is_some();
    Ok(match next_step(&candidates, approved) {
        Step::Delete { wave, keys } => {
            let propagation = match cascade {
                Cascade::Background => Propagation::Background,
                _ => Propagation::Foreground,
            };
            for key in &keys {
                cluster
                    .delete_object(key, propagation)
                    .await
                    .map_err(&cluster_err)?;
            }
            DeletionOutcome {
                message: format!("deleting {} resource(s) of wave {wave}", keys.len()),
                deleted: keys,
                ..DeletionOutcome::waiting(Vec::new(), String::new())
            }
        }
        Step::Wait { keys, reason } => DeletionOutcome::waiting(keys, reason),
        Step::Done { kept } => {
            let finalized = remove_finalizers(
                cluster,
                app,
                &[RESOURCES_FINALIZER, RESOURCES_FINALIZER_BACKGROUND],
            )
            .await?;
            DeletionOutcome {
                message: match kept.len() {
                    0 => "resources deleted; finalizer removed".to_string(),
                    n => format!(
                        "resources deleted ({n} kept: Delete=false, CRD, the Application itself or helm.sh/resource-policy: keep); finalizer removed"
                    ),
                },
                kept,
                finalized,
                ..DeletionOutcome::waiting(Vec::new(), String::new())
            }
        }
    })
}

/// git's delete hooks (rendered now), with their type; `generateName` hooks are left out (a
/// deletion stage has no operation to name them after).
async fn delete_hooks(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
) -> Result<Vec<(DeleteHook, ResourceKey, Value)>> {
    let obs = observe(cluster, app, opts, None).await?;
    Ok(obs
        .targets
        .iter()
        .filter(|(k, _)| !obs.generated.contains(k))
        .filter_map(|(k, o)| DeleteHook::of_object(o).map(|h| (h, k.clone(), o.clone())))
        .collect())
}

/// A hooks stage (Argo CD's `executePostDeleteHooks`, and the same for PreDelete): create the
/// hooks git declares that are not there, wait while any is running, then remove the stage's
/// finalizer. A failed PreDelete hook blocks the deletion (delete the hook object to run it
/// again); a failed PostDelete hook does not.
async fn run_delete_hooks(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    kind: DeleteHook,
) -> Result<DeletionOutcome> {
    let cluster_err = cluster_err(app);
    let mut created = Vec::new();
    let mut running = Vec::new();
    let mut failed = Vec::new();
    for (_, key, obj) in delete_hooks(cluster, app, opts)
        .await?
        .into_iter()
        .filter(|(h, _, _)| *h == kind)
    {
        let live = cluster
            .get_object(&key.group, &key.kind, &key.namespace, &key.name)
            .await
            .map_err(&cluster_err)?;
        let Some(live) = live else {
            let answer = cluster.apply(vec![obj], FIELD_MANAGER, true).await.pop();
            match answer {
                Some(Ok(_)) => created.push(key),
                Some(Err(e)) => return Err(cluster_err(e)),
                None => {}
            }
            continue;
        };
        match hook_state(&key, Some(&live)) {
            TaskState::Running(m) => running.push((key, m)),
            TaskState::Failed(m) => failed.push(format!("{key}: {m}")),
            TaskState::Succeeded(_) => {}
        }
    }
    let name = kind.as_str();
    if !created.is_empty() {
        let message = format!("created {} {name} hook(s)", created.len());
        return Ok(DeletionOutcome::waiting(created, message));
    }
    if let Some((_, first)) = running.first() {
        let message = match running.len() {
            1 => first.clone(),
            n => format!("{first} and {} more", n - 1),
        };
        return Ok(DeletionOutcome::waiting(
            running.into_iter().map(|(k, _)| k).collect(),
            message,
        ));
    }
    if kind == DeleteHook::Pre && !failed.is_empty() {
        return Ok(DeletionOutcome::waiting(
            Vec::new(),
            format!(
                "{name} hook failed, the Application is not deleted (delete the hook to run it again): {}",
                failed.join("; ")
            ),
        ));
    }
    let finalized = remove_finalizers(cluster, app, &[kind.finalizers()[0]]).await?;
    Ok(DeletionOutcome {
        finalized,
        ..DeletionOutcome::waiting(Vec::new(), format!("{name} hooks completed"))
    })
}

/// The cleanup stage (Argo CD's `cleanupPostDeleteHooks`): each hook type's hooks are deleted
/// when their delete policy matches the hooks' combined health (`HookSucceeded` when all are
/// Healthy, `HookFailed` when one is Degraded); once they are gone the cleanup finalizers go.
async fn clean_up_hooks(
    cluster: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
) -> Result<DeletionOutcome> {
    let cluster_err = cluster_err(app);
    let mut pending = Vec::new();
    let hooks = delete_hooks(cluster, app, opts).await?;
    for kind in [DeleteHook::Pre, DeleteHook::Post] {
        let mut live_hooks = Vec::new();
        for (_, key, _) in hooks.iter().filter(|(h, _, _)| *h == kind) {
            if let Some(live) = cluster
                .get_object(&key.group, &key.kind, &key.namespace, &key.name)
                .await
                .map_err(&cluster_err)?
            {
                live_hooks.push((key.clone(), live));
            }
        }
        let health = plumb_health::worst(
            live_hooks
                .iter()
                .map(|(_, live)| plumb_health::check(live).health.status),
        );
        for (key, live) in &live_hooks {
            let policy = DeletePolicy::of(&crate::plan::ObjectMeta::from_object(live).annotations);
            let due = (policy.hook_succeeded && health == HealthStatus::Healthy)
                || (policy.hook_failed && health == HealthStatus::Degraded);
            if !due {
                continue;
            }
            pending.push(key.clone());
            if live
                .pointer("/metadata/deletionTimestamp")
                .is_none_or(Value::is_null)
            {
                cluster
                    .delete_object(key, Propagation::Background)
                    .await
                    .map_err(&cluster_err)?;
            }
        }
    }
    if !pending.is_empty() {
        let message = format!("waiting for {} delete hook(s) to be deleted", pending.len());
        return Ok(DeletionOutcome::waiting(pending, message));
    }
    let finalized = remove_finalizers(
        cluster,
        app,
        &[
            crate::deletion::PRE_DELETE_CLEANUP_FINALIZER,
            crate::deletion::POST_DELETE_CLEANUP_FINALIZER,
        ],
    )
    .await?;
    Ok(DeletionOutcome {
        finalized,
        ..DeletionOutcome::waiting(Vec::new(), "delete hooks cleaned up".into())
    })
}

/// Adds the finalizers the delete hooks git declares need (an app not being deleted), as Argo
/// CD's controller does; a conflict waits for the next reconcile.
pub(super) async fn ensure_hook_finalizers(
    cluster: &dyn ClusterApi,
    app: &Value,
    obs: &Observation,
) -> Result<()> {
    let kinds: std::collections::BTreeSet<DeleteHook> = obs
        .targets
        .values()
        .filter_map(DeleteHook::of_object)
        .collect();
    let kinds: Vec<DeleteHook> = kinds.into_iter().collect();
    let Some(list) = with_hook_finalizers(app, &kinds) else {
        return Ok(());
    };
    let rv = app
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    let patch = json!({"metadata": {"finalizers": list, "resourceVersion": rv}});
    match cluster
        .patch_application(&obs.namespace, &obs.name, &patch)
        .await
    {
        Ok(_) | Err(ClusterError::Api { code: 409, .. }) => Ok(()),
        Err(e) => Err(cluster_err(app)(e)),
    }
}

/// Removes `names` from the Application's finalizers, pinned to its resourceVersion (the next
/// reconcile retries a conflict); `true` when none of plumb's is left (the API server then
/// deletes the Application, once other finalizers are gone too).
async fn remove_finalizers(cluster: &dyn ClusterApi, app: &Value, names: &[&str]) -> Result<bool> {
    let remaining: Vec<Value> = app
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| !f.as_str().is_some_and(|f| names.contains(&f)))
        .cloned()
        .collect();
    let rv = app
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    let patch = json!({"metadata": {"finalizers": remaining, "resourceVersion": rv}});
    match cluster
        .patch_application(app_namespace(app), &app_name(app), &patch)
        .await
    {
        Ok(_) | Err(ClusterError::Api { code: 404, .. }) => {}
        Err(e) => return Err(cluster_err(app)(e)),
    }
    let after = json!({"metadata": {"finalizers": remaining}});
    Ok(Stage::of(&after) == Stage::Nothing)
}
