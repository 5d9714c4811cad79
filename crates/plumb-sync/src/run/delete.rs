//! Finalizing a deleted Application ([`crate::deletion`]): one step per reconcile — delete
//! the highest wave of its live resources, or wait for them, or remove the finalizer.

use super::*;
use crate::deletion::{Candidate, Cascade, DELETION_APPROVED_ANNOTATION, Step, next_step};
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
/// cascade; `None` for an Application that is not being deleted. Without the resources
/// finalizer there is nothing for plumb to do (the resources stay, as in Argo CD).
pub async fn finalize_deletion(cluster: &Cluster, app: &Value) -> Result<Option<DeletionOutcome>> {
    if app
        .pointer("/metadata/deletionTimestamp")
        .is_none_or(Value::is_null)
    {
        return Ok(None);
    }
    let name = app_name(app);
    let namespace = app
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let cascade = Cascade::of(app);
    if cascade == Cascade::None {
        return Ok(Some(DeletionOutcome {
            deleted: Vec::new(),
            waiting: Vec::new(),
            kept: Vec::new(),
            finalized: false,
            message: "deleting without cascade: resources are left in place".into(),
        }));
    }
    let cluster_err = |source| RunError::Cluster {
        app: name.clone(),
        source,
    };
    let tracking_name = Application::from_value(app)
        .map(|a| a.name)
        .unwrap_or_else(|_| name.clone());
    let app_delete = SyncPolicy::from_application(app)
        .ok()
        .and_then(|p| p.sync_options.delete);
    let mut candidates = Vec::new();
    for key in previous_resources(app) {
        let Some(obj) = cluster
            .get_object(&key.group, &key.kind, &key.namespace, &key.name)
            .await
            .map_err(cluster_err)?
        else {
            continue;
        };
        if !plumb_diff::compare::is_tracked_by(&obj, &tracking_name) {
            continue;
        }
        let meta = crate::plan::ObjectMeta::from_object(&obj);
        let delete = meta
            .annotations
            .get(plumb_core::SYNC_OPTIONS_ANNOTATION)
            .and_then(|v| ResourceSyncOptions::parse(v).delete)
            .or(app_delete);
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
    let outcome = match next_step(&candidates, approved) {
        Step::Delete { wave, keys } => {
            let propagation = match cascade {
                Cascade::Background => Propagation::Background,
                _ => Propagation::Foreground,
            };
            for key in &keys {
                cluster
                    .delete_object(key, propagation)
                    .await
                    .map_err(cluster_err)?;
            }
            DeletionOutcome {
                message: format!("deleting {} resource(s) of wave {wave}", keys.len()),
                deleted: keys,
                waiting: Vec::new(),
                kept: Vec::new(),
                finalized: false,
            }
        }
        Step::Wait { keys, reason } => DeletionOutcome {
            deleted: Vec::new(),
            waiting: keys,
            kept: Vec::new(),
            finalized: false,
            message: reason,
        },
        Step::Done { kept } => {
            remove_finalizers(cluster, app, &namespace, &name).await?;
            DeletionOutcome {
                message: match kept.len() {
                    0 => "resources deleted; finalizer removed".to_string(),
                    n => format!("resources deleted ({n} kept: Delete=false); finalizer removed"),
                },
                deleted: Vec::new(),
                waiting: Vec::new(),
                kept,
                finalized: true,
            }
        }
    };
    Ok(Some(outcome))
}

/// Removes the resources finalizers, pinned to the Application's resourceVersion (the next
/// reconcile retries a conflict).
async fn remove_finalizers(
    cluster: &Cluster,
    app: &Value,
    namespace: &str,
    name: &str,
) -> Result<()> {
    let remaining: Vec<Value> = app
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| {
            !matches!(
                f.as_str(),
                Some(crate::deletion::RESOURCES_FINALIZER)
                    | Some(crate::deletion::RESOURCES_FINALIZER_BACKGROUND)
            )
        })
        .cloned()
        .collect();
    let rv = app
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    let patch = json!({"metadata": {"finalizers": remaining, "resourceVersion": rv}});
    match cluster.patch_application(namespace, name, &patch).await {
        Ok(_) | Err(ClusterError::Api { code: 404, .. }) => Ok(()),
        Err(source) => Err(RunError::Cluster {
            app: name.to_string(),
            source,
        }),
    }
}
