//! What an Application may do, decided before any request of a refresh or an operation:
//! its project (`spec.project`, `default` when empty) read from the control namespace,
//! the Application's namespace against the project's `sourceNamespaces`, its sources against
//! `sourceRepos`, its destination resolved through the cluster Secrets of the control
//! namespace and checked against `destinations`, and (for an operation) every target
//! resource against the kind lists and destinations, and the sync windows.
//!
//! A refusal of the spec (unknown project, unresolvable destination, a source or destination
//! the project does not permit) is written to the Application as an `InvalidSpecError`
//! condition with sync status `Unknown`, and nothing is rendered or applied.
//!
//! The destination may be another cluster: connecting to it is `run/route.rs`'s.
//!
//! The control namespace is [`RunOptions::control_namespace`]; without one, the
//! Application's own namespace (the single-namespace use of `plumb app` with the user's own
//! credentials). A missing `default` project is Argo CD's `default` as it is created
//! (everything permitted, no `sourceNamespaces`: only Applications of the control namespace
//! may use it); any other missing project is an error.
//!
//! [`admit`] runs first in every entry point (refresh, sync, dry run, rollback, resume,
//! reconcile); a refusal clears once the app is admitted. A missing `default` project is
//! `AppProject::permissive_default`. After rendering, before the first request of an operation
//! for the app's resources, every target resource is checked ([`Admission::check_resources`])
//! and the sync windows decide ([`Admission::windows`]: for a manual sync, or in the automated
//! decision, where a closed window is `NoSync::SyncWindow` with `ReconcileOutcome::blocked_by`);
//! a manual sync's window is checked right after `admit`, before its dry run and before any
//! connection to the destination. A refused operation is written `Failed`
//! (`operationState.message` names the resource and rule; not for a dry run); plumb-sync's
//! `tests/tenancy.rs` reads the API server's audit log to show that it sent nothing. A rollback
//! and a resumed operation are judged by the source they apply (the history entry's), not the
//! spec's. When the controller passes its watch cache (`RunOptions::cache`) and it holds
//! AppProjects and Secrets, the checks read them from it (no request).

use super::{RunError, RunOptions, StoredStatus, app_name, app_namespace};
use plumb_cluster::{ClusterApi, ClusterError};
use plumb_core::ResourceKey;
use plumb_core::argo::model::Condition;
use plumb_core::clusters::{Cluster, Clusters, SECRET_TYPE_CLUSTER, SECRET_TYPE_LABEL};
use plumb_core::project::{AppProject, DEFAULT_PROJECT, Destination, WindowVerdict};
use serde_json::Value;
use std::time::SystemTime;

/// The condition type of a refused spec (Argo CD's).
pub const INVALID_SPEC_ERROR: &str = "InvalidSpecError";

/// What the checks found: the project and the resolved destination.
#[derive(Debug, Clone)]
pub struct Admission {
    pub project: AppProject,
    /// `spec.destination`, with the resolved cluster's server and name filled in.
    pub destination: Destination,
    pub cluster: Cluster,
}

/// The namespace projects and cluster Secrets are read from for `app`.
pub fn control_namespace(app: &Value, opts: &RunOptions) -> String {
    opts.control_namespace
        .clone()
        .unwrap_or_else(|| app_namespace(app).to_string())
}

/// `spec.project`, `default` when empty (read through the typed model).
pub fn project_name(app: &Value) -> String {
    let (model, _) = plumb_core::argo::model::Application::read_lenient(app);
    match model.spec.project.as_str() {
        "" => DEFAULT_PROJECT.to_string(),
        p => p.to_string(),
    }
}

/// Reads the app's project (`Err(message)` for a spec error).
async fn read_project(
    home: &dyn ClusterApi,
    cache: Option<&plumb_cluster::LiveCache>,
    control: &str,
    name: &str,
) -> Result<Result<AppProject, String>, ClusterError> {
    // The AppProjects of the group served (plumb's, or Argo CD's own).
    let gk = plumb_core::GroupKind::new(home.app_group(), "AppProject");
    let read = match cache.filter(|c| c.kinds().contains(&gk)) {
        // The controller's watch cache: no request.
        Some(cache) => Ok(cache
            .get(&ResourceKey {
                group: gk.group.clone(),
                kind: gk.kind.clone(),
                namespace: control.to_string(),
                name: name.to_string(),
            })
            .map(|o| (*o).clone())),
        None => {
            home.get_object(home.app_group(), "AppProject", control, name)
                .await
        }
    };
    match read {
        Ok(Some(obj)) => Ok(AppProject::from_value(&obj).map_err(|e| e.to_string())),
        Ok(None) | Err(ClusterError::UnknownKind { .. }) if name == DEFAULT_PROJECT => {
            Ok(Ok(AppProject::permissive_default()))
        }
        Ok(None) | Err(ClusterError::UnknownKind { .. }) => Ok(Err(format!(
            "Application referencing project {name} which does not exist"
        ))),
        Err(e) => Err(e),
    }
}

/// The destination clusters declared in `control` (plus in-cluster), and the Secrets that
/// could not be read.
async fn read_clusters(
    home: &dyn ClusterApi,
    cache: Option<&plumb_cluster::LiveCache>,
    control: &str,
) -> Result<(Clusters, Vec<String>), ClusterError> {
    let secrets = cluster_secrets(home, cache, control).await?;
    let (clusters, errors) = Clusters::from_secrets(secrets.iter());
    Ok((clusters, errors.iter().map(ToString::to_string).collect()))
}

/// The cluster Secrets (`argocd.argoproj.io/secret-type: cluster`) of `control`: from the
/// controller's watch cache when it watches Secrets (no request), else one labelled LIST.
pub async fn cluster_secrets(
    home: &dyn ClusterApi,
    cache: Option<&plumb_cluster::LiveCache>,
    control: &str,
) -> Result<Vec<Value>, ClusterError> {
    let gk = plumb_core::GroupKind::new("", "Secret");
    if let Some(cache) = cache.filter(|c| c.kinds().contains(&gk)) {
        return Ok(cache
            .list(&gk, Some(control))
            .into_iter()
            .filter(|s| plumb_core::value::label(s, SECRET_TYPE_LABEL) == Some(SECRET_TYPE_CLUSTER))
            .map(|s| (*s).clone())
            .collect());
    }
    match home
        .list_labelled(
            "",
            "Secret",
            control,
            (SECRET_TYPE_LABEL, SECRET_TYPE_CLUSTER),
        )
        .await
    {
        Ok(s) => Ok(s),
        Err(ClusterError::UnknownKind { .. }) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Home's watch cache, when the run has one (the controller's).
fn cache_of(opts: &RunOptions) -> Option<&plumb_cluster::LiveCache> {
    opts.cache.as_ref().map(|c| &c.0)
}

/// The `repoURL` of every source (`spec.source`, `spec.sources`).
fn repo_urls(spec: &plumb_core::argo::model::ApplicationSpec) -> Vec<String> {
    spec.source
        .iter()
        .chain(&spec.sources)
        .map(|s| s.repo_url.clone())
        .collect()
}

/// The spec checks of the app (see the module doc); a refusal is written as the
/// `InvalidSpecError` condition and returned as [`RunError::InvalidSpec`].
pub async fn admit(
    home: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
    now: SystemTime,
) -> Result<Admission, RunError> {
    let name = app_name(app);
    let cluster_err = |source| RunError::Cluster {
        app: name.clone(),
        source,
    };
    match check(home, app, opts).await.map_err(cluster_err)? {
        Ok(admission) => {
            clear_condition(home, app).await.map_err(cluster_err)?;
            Ok(admission)
        }
        Err(reason) => {
            write_condition(home, app, &reason, now)
                .await
                .map_err(cluster_err)?;
            Err(RunError::InvalidSpec { app: name, reason })
        }
    }
}

/// Only the destination of `app` resolved through the cluster Secrets, without the project's
/// checks (a deleted Application's resources are deleted where they are):
/// `Err(message)` when it resolves to no cluster.
pub async fn destination_cluster(
    home: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
) -> Result<Result<Cluster, String>, ClusterError> {
    let control = control_namespace(app, opts);
    let (model, _) = plumb_core::argo::model::Application::read_lenient(app);
    let d = &model.spec.destination;
    let dest = Destination::new(&d.server, &d.name, &d.namespace);
    let (clusters, _) = read_clusters(home, cache_of(opts), &control).await?;
    Ok(clusters.resolve(&dest).cloned().map_err(|e| e.to_string()))
}

async fn check(
    home: &dyn ClusterApi,
    app: &Value,
    opts: &RunOptions,
) -> Result<Result<Admission, String>, ClusterError> {
    let control = control_namespace(app, opts);
    let name = app_name(app);
    let (model, _) = plumb_core::argo::model::Application::read_lenient(app);
    let project = match read_project(home, cache_of(opts), &control, &project_name(app)).await? {
        Ok(p) => p,
        Err(reason) => return Ok(Err(reason)),
    };
    if let Err(d) = project.app_namespace_permitted(&name, app_namespace(app), &control) {
        return Ok(Err(d.message));
    }
    for url in repo_urls(&model.spec) {
        if let Err(d) = project.source_permitted(&url) {
            return Ok(Err(d.message));
        }
    }
    let d = &model.spec.destination;
    let dest = Destination::new(&d.server, &d.name, &d.namespace);
    let (clusters, unreadable) = read_clusters(home, cache_of(opts), &control).await?;
    if let Some(super::route::DestinationsHandle(destinations)) = &opts.destinations {
        destinations.retain(&clusters);
    }
    let cluster = match clusters.resolve(&dest) {
        Ok(c) => c.clone(),
        Err(e) => {
            let mut reason = e.to_string();
            for u in unreadable {
                reason.push_str("; ");
                reason.push_str(&u);
            }
            return Ok(Err(reason));
        }
    };
    let resolved = Destination::new(&cluster.server, &cluster.name, &dest.namespace);
    if let Err(d) = project.destination_permitted(&resolved) {
        return Ok(Err(d.message));
    }
    Ok(Ok(Admission {
        project,
        destination: resolved,
        cluster,
    }))
}

impl Admission {
    /// Every target resource against the project's kind lists and destinations and the
    /// cluster Secret's `namespaces`: the first refusal, naming the resource and the rule.
    pub fn check_resources<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a ResourceKey>,
    ) -> Result<(), String> {
        for k in keys {
            self.project
                .resource_permitted(&k.group, &k.kind, &k.namespace, &k.name, &self.destination)
                .map_err(|d| d.message)?;
            if !self.cluster.manages(&k.namespace) {
                return Err(format!(
                    "resource {}/{} {}: namespace '{}' is not managed on cluster {} (its Secret's namespaces)",
                    k.group, k.kind, k.name, k.namespace, self.cluster.name
                ));
            }
        }
        Ok(())
    }

    /// The sync windows' verdict for a sync of `app` now (`manual`: asked for by a person).
    pub fn windows(&self, app: &str, manual: bool, now: SystemTime) -> WindowVerdict {
        let now = jiff::Timestamp::try_from(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        self.project
            .sync_allowed(app, &self.destination, manual, now)
    }
}

async fn write_condition(
    home: &dyn ClusterApi,
    app: &Value,
    message: &str,
    now: SystemTime,
) -> Result<(), ClusterError> {
    let mut stored = StoredStatus::of(app);
    let mut status = stored.status.clone();
    status.conditions = vec![Condition {
        type_name: INVALID_SPEC_ERROR.into(),
        message: message.into(),
        last_transition_time: Some(now),
        ..Condition::default()
    }];
    status.sync.status = "Unknown".into();
    stored.write(home, status, false).await
}

/// Removes an `InvalidSpecError` condition an earlier check wrote (the spec is fine now);
/// other conditions stay.
async fn clear_condition(home: &dyn ClusterApi, app: &Value) -> Result<(), ClusterError> {
    let mut stored = StoredStatus::of(app);
    let mut status = stored.status.clone();
    if !status
        .conditions
        .iter()
        .any(|c| c.type_name == INVALID_SPEC_ERROR)
    {
        return Ok(());
    }
    status
        .conditions
        .retain(|c| c.type_name != INVALID_SPEC_ERROR);
    stored.write(home, status, false).await
}
