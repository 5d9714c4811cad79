//! Writing an Application's status: the one way the runner does it — refresh, progress, the
//! operation's end, terminate-op, the `InvalidSpecError` condition.
//!
//! A writer reads the status into the typed model ([`StoredStatus::of`]), changes the typed
//! [`ApplicationStatus`] and hands it to [`StoredStatus::write`], which sends the JSON merge
//! patch from the status as last read or written to the new one
//! ([`ApplicationStatus::patch_from`]): only what changed, a field the model cleared as `null`,
//! fields the model does not know left alone; pinned to the `resourceVersion` where asked.
//! A write sent while something else changes the status (`plumb app terminate-op` setting
//! `Terminating`) touches only what this writer changed: a progress write never overwrites
//! a `Terminating` set meanwhile.

use super::*;
use plumb_core::argo::model::{self, ComparedTo};

/// An Application's status as this writer last read or wrote it.
pub(super) struct StoredStatus {
    namespace: String,
    name: String,
    resource_version: Value,
    /// The JSON the next write is computed against.
    stored: Value,
    /// The typed status: clone it, change it, [`StoredStatus::write`] it.
    pub status: ApplicationStatus,
}

impl StoredStatus {
    /// The status of the Application object `app` (read leniently: a field of the wrong
    /// shape is left out, and cleared by the next write that does not set it).
    pub fn of(app: &Value) -> StoredStatus {
        let (status, stored) = ApplicationStatus::stored(app);
        StoredStatus {
            namespace: app_namespace(app).to_string(),
            name: app_name(app),
            resource_version: app
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null),
            stored,
            status,
        }
    }

    /// Writes `status` (a merge patch of the status subresource). `pinned`: the patch carries
    /// the resourceVersion the Application was read at, so the API server refuses it (409)
    /// when the Application changed since.
    pub async fn write(
        &mut self,
        cluster: &dyn ClusterApi,
        status: ApplicationStatus,
        pinned: bool,
    ) -> Result<(), ClusterError> {
        let mut patch = status.patch_from(&self.stored);
        if pinned && let Some(p) = patch.as_object_mut() {
            p.insert(
                "metadata".into(),
                json!({"resourceVersion": self.resource_version}),
            );
        }
        cluster
            .patch_application_status(&self.namespace, &self.name, &patch)
            .await?;
        self.stored = serde_json::to_value(&status).unwrap_or_else(|_| json!({}));
        self.status = status;
        Ok(())
    }

    /// [`StoredStatus::write`] unpinned, its error the app's.
    pub async fn write_app(
        &mut self,
        cluster: &dyn ClusterApi,
        status: ApplicationStatus,
    ) -> Result<()> {
        let app = self.name.clone();
        self.write(cluster, status, false)
            .await
            .map_err(|source| RunError::Cluster { app, source })
    }
}

fn sync_code(s: SyncStatusCode) -> &'static str {
    match s {
        SyncStatusCode::Synced => "Synced",
        SyncStatusCode::OutOfSync => "OutOfSync",
    }
}

/// `status` with what a compare found: `sync` (status, revision, `comparedTo`), `health`,
/// `resources`, `reconciledAt`, `sourceType`, the `OrphanedResourceWarning` condition. What else `sync` and `health` hold is kept.
pub(super) fn refreshed(
    mut status: ApplicationStatus,
    app_obj: &Value,
    obs: &Observation,
    now: SystemTime,
) -> ApplicationStatus {
    let spec = model::ApplicationSpec::of(app_obj).unwrap_or_default();
    status.sync.status = sync_code(obs.status.sync).into();
    status.sync.revision = obs.revision.clone();
    let compared = status
        .sync
        .compared_to
        .get_or_insert_with(ComparedTo::default);
    compared.source = Some(obs.source.clone());
    // A multi-source app's every source and revision (a single-source app's are left as
    // they are, like everything else `sync` holds).
    if !obs.revisions.is_empty() {
        compared.sources = obs.sources.clone();
        status.sync.revisions = obs.revisions.clone();
    }
    compared.destination = spec.destination;
    compared.ignore_differences = spec.ignore_differences;
    status.health.status = obs.status.health.as_str().into();
    status.resources = obs
        .status
        .resources
        .iter()
        .map(|r| model::ResourceStatus {
            group: r.key.group.clone(),
            version: r.version.clone(),
            kind: r.key.kind.clone(),
            namespace: r.key.namespace.clone(),
            name: r.key.name.clone(),
            status: sync_code(r.status).into(),
            health: r.health.map(|h| model::HealthStatus {
                status: h.as_str().into(),
                ..model::HealthStatus::default()
            }),
            requires_pruning: r.requires_pruning,
            ..model::ResourceStatus::default()
        })
        .collect();
    status.reconciled_at = Some(now);
    status.source_type = obs.source_type.clone();
    crate::orphans::set_condition(&mut status.conditions, obs.orphans.as_ref(), now);
    status
}
