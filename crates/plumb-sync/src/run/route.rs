//! Home and destination: where each request of a refresh or an operation goes.
//!
//! The *home* cluster holds the Applications, the AppProjects and the cluster Secrets, and
//! receives every status write. The *destination* (`spec.destination`, resolved through the
//! cluster Secrets by [`super::tenancy`]) receives everything about the app's resources:
//! discovery, live reads, dry runs, applies, prunes, hooks, deletes. The in-cluster
//! destination (`https://kubernetes.default.svc`, `in-cluster`) is home itself.
//!
//! [`Routed`] is that pair as one [`ClusterApi`]: the Application methods go home, every
//! other one to the destination, so the rest of the runner cannot send an object of the app
//! anywhere but its destination. Connections to other clusters come from a
//! [`Destinations`] in [`RunOptions::destinations`]; without one, an app aimed at another
//! cluster is refused (nothing is applied anywhere).
//!
//! The destination's watch cache replaces home's in the run's options. An unreachable
//! destination (at connect or during the run) is a `ComparisonError` condition
//! ([`COMPARISON_ERROR`]) naming the cluster's name and server, written home, and
//! `RunError::Destination`; the next success removes it. A source that does not render is
//! a `ComparisonError` too ([`TARGET_STATE_FAILED`]), whatever the destination. Unit tests (`run/tests.rs`) use two
//! `MemoryCluster`s: writes land only on the destination, home gets only the Application's, an
//! unreachable one is a condition.

use super::{RunError, RunOptions, app_name};
use futures::future::BoxFuture;
use plumb_cluster::{
    ApiResources, ClusterApi, ClusterError, Deleted, LiveCache, Propagation, ResourceInfo,
};
use plumb_core::clusters::{Cluster, Clusters};
use plumb_core::{GroupKind, ResourceKey};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::SystemTime;

/// The condition an app gets while its destination cannot be reached (Argo CD reports
/// cluster connection failures as a `ComparisonError`).
pub const COMPARISON_ERROR: &str = "ComparisonError";

/// How a `ComparisonError` for a source that does not render begins (as Argo CD's).
pub const TARGET_STATE_FAILED: &str = "Failed to load target state: ";

/// A connected destination: the API to send requests to, and (in the controller) the
/// watch-fed cache of its live objects.
#[derive(Clone)]
pub struct Destination {
    pub api: Arc<dyn ClusterApi>,
    pub cache: Option<LiveCache>,
}

/// Connections to destination clusters other than home, by cluster Secret.
pub trait Destinations: Send + Sync {
    /// A connection to `cluster` (never the in-cluster destination). An unreachable server
    /// is [`ClusterError::Unreachable`] naming it.
    fn connect<'a>(
        &'a self,
        cluster: &'a Cluster,
    ) -> BoxFuture<'a, Result<Destination, ClusterError>>;

    /// The cluster Secrets as just read: connections of Secrets no longer there may go.
    fn retain(&self, _present: &Clusters) {}
}

/// A [`Destinations`] in [`RunOptions`].
#[derive(Clone)]
pub struct DestinationsHandle(pub Arc<dyn Destinations>);

impl std::fmt::Debug for DestinationsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Destinations")
    }
}

/// Where one run sends its requests: the connected destination (`None`: home), and the run
/// options with the destination's live cache in place of home's.
pub(super) struct Target {
    dest: Option<Destination>,
    opts: Option<RunOptions>,
    /// The destination's server and name, for messages (`None`: home).
    remote: Option<(String, String)>,
}

impl Target {
    pub(super) fn home() -> Target {
        Target {
            dest: None,
            opts: None,
            remote: None,
        }
    }

    /// The pair to hand to the runner.
    pub(super) fn routed<'a>(&'a self, home: &'a dyn ClusterApi) -> Routed<'a> {
        Routed {
            home,
            dest: self.dest.as_ref().map_or(home, |d| &*d.api),
        }
    }

    /// The options for this destination.
    pub(super) fn options<'a>(&'a self, opts: &'a RunOptions) -> &'a RunOptions {
        self.opts.as_ref().unwrap_or(opts)
    }

    /// After the run: an error reaching the destination is written as a `ComparisonError`
    /// condition naming the cluster (home is told, never the destination); a success
    /// removes one left by an earlier run.
    ///
    /// A source that does not render (a fetch, or content plumb refuses) is a
    /// `ComparisonError` too, for every destination, as Argo CD reports a manifest that fails
    /// to generate: the app shows why it syncs and prunes nothing. The next success removes it.
    pub(super) async fn report<T>(
        &self,
        home: &dyn ClusterApi,
        app: &Value,
        result: Result<T, RunError>,
        now: SystemTime,
    ) -> Result<T, RunError> {
        if let Err(RunError::Render { reason, .. }) = &result {
            let message = format!("{TARGET_STATE_FAILED}{reason}");
            // Boxed, as the other condition writes here: inlined, they made every entry
            // point's future too big for a 2 MiB thread stack in debug builds.
            Box::pin(set_condition_fresh(home, app, Some(&message), now)).await?;
            return result;
        }
        let Some((server, name)) = &self.remote else {
            if result.is_ok() && has_condition(app, COMPARISON_ERROR) {
                Box::pin(set_condition_fresh(home, app, None, now)).await?;
            }
            return result;
        };
        match &result {
            Err(RunError::Cluster {
                source: source @ ClusterError::Unreachable { .. },
                ..
            }) => {
                let message = unreachable_message(name, server, source);
                Box::pin(set_condition(
                    home,
                    app,
                    COMPARISON_ERROR,
                    Some(&message),
                    now,
                ))
                .await?;
                Err(RunError::Destination {
                    app: app_name(app),
                    reason: message,
                })
            }
            Err(_) => result,
            Ok(_) => {
                Box::pin(set_condition(home, app, COMPARISON_ERROR, None, now)).await?;
                result
            }
        }
    }
}

fn unreachable_message(name: &str, server: &str, e: &ClusterError) -> String {
    format!("destination cluster '{name}' ({server}) is unreachable: {e}")
}

/// Connects to the admitted destination: home for the in-cluster one; through
/// [`RunOptions::destinations`] otherwise (refused without one). A failure is written to
/// the Application as a `ComparisonError` condition naming the cluster's server.
pub(super) async fn connect(
    home: &dyn ClusterApi,
    app: &Value,
    cluster: &Cluster,
    opts: &RunOptions,
    now: SystemTime,
) -> Result<Target, RunError> {
    if cluster.is_in_cluster() {
        return Ok(Target::home());
    }
    let Some(DestinationsHandle(destinations)) = &opts.destinations else {
        let reason = format!(
            "application destination cluster '{}' ({}, Secret {}): this command does not connect to other clusters; nothing is applied",
            cluster.name, cluster.server, cluster.secret
        );
        return Err(RunError::Destination {
            app: app_name(app),
            reason,
        });
    };
    match destinations.connect(cluster).await {
        Ok(mut dest) => {
            if let Some(fence) = &opts.fence {
                dest.api = Arc::new(crate::controller::shard::Fenced {
                    inner: dest.api,
                    fence: fence.clone(),
                    epoch: None,
                });
            }
            let mut run = opts.clone();
            run.cache = dest.cache.clone().map(super::CacheHandle);
            Ok(Target {
                dest: Some(dest),
                opts: Some(run),
                remote: Some((cluster.server.clone(), cluster.name.clone())),
            })
        }
        Err(e) => {
            let message = match &e {
                ClusterError::Unreachable { .. } => {
                    unreachable_message(&cluster.name, &cluster.server, &e)
                }
                other => format!(
                    "destination cluster '{}' ({}): cannot connect: {other}",
                    cluster.name, cluster.server
                ),
            };
            set_condition(home, app, COMPARISON_ERROR, Some(&message), now).await?;
            Err(RunError::Destination {
                app: app_name(app),
                reason: message,
            })
        }
    }
}

/// Sets (or with `None` removes) the condition of type `kind` on the Application in home;
/// no request when nothing changes.
/// Whether the Application object carries a condition of type `kind`.
fn has_condition(app: &Value, kind: &str) -> bool {
    app.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == kind))
}

/// [`set_condition`] of `COMPARISON_ERROR` on the Application as home holds it now, not as
/// the reconcile read it: the run may have written its status since (a cleared
/// `InvalidSpecError`, a sync's result), and a write from the older status would undo that.
/// An Application gone meanwhile is left alone.
async fn set_condition_fresh(
    home: &dyn ClusterApi,
    app: &Value,
    message: Option<&str>,
    now: SystemTime,
) -> Result<(), RunError> {
    let namespace = super::app_namespace(app);
    let name = app_name(app);
    let fresh = home
        .get_application(namespace, &name)
        .await
        .map_err(|source| RunError::Cluster {
            app: name.clone(),
            source,
        })?;
    match fresh {
        Some(fresh) => set_condition(home, &fresh, COMPARISON_ERROR, message, now).await,
        None => Ok(()),
    }
}

pub(super) async fn set_condition(
    home: &dyn ClusterApi,
    app: &Value,
    kind: &str,
    message: Option<&str>,
    now: SystemTime,
) -> Result<(), RunError> {
    let mut stored = super::StoredStatus::of(app);
    let mut status = stored.status.clone();
    let existing = status.conditions.iter().find(|c| c.type_name == kind);
    let unchanged = match (existing, message) {
        (None, None) => true,
        (Some(c), Some(m)) => c.message == m,
        _ => false,
    };
    if unchanged {
        return Ok(());
    }
    status.conditions.retain(|c| c.type_name != kind);
    if let Some(m) = message {
        status.conditions.push(plumb_core::argo::model::Condition {
            type_name: kind.into(),
            message: m.into(),
            last_transition_time: Some(now),
            ..Default::default()
        });
    }
    stored.write_app(home, status).await
}

/// Home and destination as one [`ClusterApi`]: Applications home, everything else to the
/// destination.
pub struct Routed<'a> {
    pub home: &'a dyn ClusterApi,
    pub dest: &'a dyn ClusterApi,
}

impl ClusterApi for Routed<'_> {
    fn api_resources(&self) -> BoxFuture<'_, plumb_cluster::Result<Arc<ApiResources>>> {
        self.dest.api_resources()
    }

    fn app_group(&self) -> &'static str {
        self.home.app_group()
    }

    fn resource_for<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, plumb_cluster::Result<ResourceInfo>> {
        self.dest.resource_for(group, kind)
    }

    fn scopes<'a>(
        &'a self,
        kinds: BTreeSet<GroupKind>,
    ) -> BoxFuture<'a, plumb_cluster::Result<BTreeMap<GroupKind, bool>>> {
        self.dest.scopes(kinds)
    }

    fn live_for<'a>(
        &'a self,
        desired: &'a [Value],
        app: Option<&'a str>,
        tracking_label: &'a str,
    ) -> BoxFuture<'a, plumb_cluster::Result<Vec<Value>>> {
        self.dest.live_for(desired, app, tracking_label)
    }

    fn get_object<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, plumb_cluster::Result<Option<Value>>> {
        self.dest.get_object(group, kind, namespace, name)
    }

    fn list_labelled<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
        label: (&'a str, &'a str),
    ) -> BoxFuture<'a, plumb_cluster::Result<Vec<Value>>> {
        // Argo CD's repository Secrets live with the control plane, not the destination.
        if group.is_empty()
            && kind == "Secret"
            && label.0 == plumb_render::repocreds::SECRET_TYPE_LABEL
            && matches!(label.1, "repository" | "repo-creds")
        {
            return self.home.list_labelled(group, kind, namespace, label);
        }
        self.dest.list_labelled(group, kind, namespace, label)
    }

    fn namespace_objects<'a>(
        &'a self,
        namespace: &'a str,
    ) -> BoxFuture<'a, plumb_cluster::Result<Vec<Value>>> {
        self.dest.namespace_objects(namespace)
    }

    /// The destination's version: charts are rendered for it (`helm --kube-version`).
    fn server_version(&self) -> String {
        self.dest.server_version()
    }

    fn get_object_as<'a>(
        &'a self,
        obj: &'a Value,
    ) -> BoxFuture<'a, plumb_cluster::Result<Option<Value>>> {
        self.dest.get_object_as(obj)
    }

    fn create_object<'a>(
        &'a self,
        obj: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, plumb_cluster::Result<Value>> {
        self.dest.create_object(obj, field_manager)
    }

    fn replace_object<'a>(
        &'a self,
        obj: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, plumb_cluster::Result<Value>> {
        self.dest.replace_object(obj, field_manager)
    }

    fn merge_patch_object<'a>(
        &'a self,
        obj: &'a Value,
        patch: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, plumb_cluster::Result<Value>> {
        self.dest.merge_patch_object(obj, patch, field_manager)
    }

    fn delete_object<'a>(
        &'a self,
        key: &'a ResourceKey,
        propagation: Propagation,
    ) -> BoxFuture<'a, plumb_cluster::Result<Deleted>> {
        self.dest.delete_object(key, propagation)
    }

    fn apply_validating<'a>(
        &'a self,
        objects: Vec<(Value, bool)>,
        field_manager: &'a str,
        force: bool,
        dry_run: bool,
    ) -> BoxFuture<'a, Vec<plumb_cluster::Result<Value>>> {
        self.dest
            .apply_validating(objects, field_manager, force, dry_run)
    }

    fn ensure_namespace<'a>(
        &'a self,
        name: &'a str,
        field_manager: &'a str,
    ) -> BoxFuture<'a, plumb_cluster::Result<bool>> {
        self.dest.ensure_namespace(name, field_manager)
    }

    fn get_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, plumb_cluster::Result<Option<Value>>> {
        self.home.get_application(namespace, name)
    }

    fn patch_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, plumb_cluster::Result<Value>> {
        self.home.patch_application(namespace, name, patch)
    }

    fn patch_application_status<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, plumb_cluster::Result<Value>> {
        self.home.patch_application_status(namespace, name, patch)
    }
}
