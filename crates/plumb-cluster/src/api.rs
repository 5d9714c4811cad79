//! [`ClusterApi`]: the requests a sync makes, as a trait, so that the runner of
//! `plumb-sync` talks to "a cluster" rather than to [`Cluster`] itself.
//! [`Cluster`] implements it by delegating to its inherent methods (same requests,
//! same errors); with the `memory` feature, `memory::MemoryCluster` implements it in
//! memory for unit tests of the runner's logic.
//!
//! The methods return boxed futures (`futures`' [`BoxFuture`], `Send`), so the
//! trait is object safe: the runner takes `&dyn ClusterApi` and is compiled once,
//! and a `&Cluster` coerces to it at every call site.
//!
//! The requests: discovery (`api_resources`, `resource_for`, `scopes`), `live_for`, get,
//! create, replace, merge patch, delete, apply and dry-run apply, `ensure_namespace`,
//! `list_labelled` (one kind in one namespace by label: cluster Secrets), `namespace_objects`
//! (every namespaced kind in one namespace: orphaned resources without a watch cache), and
//! plumb's Applications and their status.

use crate::Cluster;
use crate::apply::validating;
use crate::discovery::{ApiResources, ResourceInfo};
use crate::error::{ClusterError, Result};
use crate::write::{Deleted, Propagation};
use futures::future::BoxFuture;
use plumb_core::{GroupKind, ResourceKey};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What a sync asks of an API server: discovery, reading the objects an app
/// compares with, the writes of an operation, and plumb's own Applications.
/// Each method has the contract of the [`Cluster`] method of the same name.
pub trait ClusterApi: Send + Sync {
    /// The served kinds ([`Cluster::api_resources`]).
    fn api_resources(&self) -> BoxFuture<'_, Result<Arc<ApiResources>>>;

    /// The resource serving `group`/`kind`, its scope included
    /// ([`Cluster::resource_for`]); [`crate::ClusterError::UnknownKind`] when none does.
    fn resource_for<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<ResourceInfo>>;

    /// Per kind of `kinds` the server serves, whether it is cluster-scoped; kinds it does not
    /// serve (a CRD not installed yet) are left out.
    fn scopes<'a>(
        &'a self,
        kinds: BTreeSet<GroupKind>,
    ) -> BoxFuture<'a, Result<BTreeMap<GroupKind, bool>>> {
        Box::pin(async move {
            let mut out = BTreeMap::new();
            for gk in kinds {
                match self.resource_for(&gk.group, &gk.kind).await {
                    Ok(info) => {
                        out.insert(gk, !info.namespaced);
                    }
                    Err(ClusterError::UnknownKind { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        })
    }

    /// The live objects an app's compare sees ([`Cluster::live_for`]).
    fn live_for<'a>(
        &'a self,
        desired: &'a [Value],
        app: Option<&'a str>,
        tracking_label: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>>>;

    /// One object, `None` when it does not exist ([`Cluster::get_object`]).
    fn get_object<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>>>;

    /// The objects of one kind in `namespace` carrying the label `key=value`
    /// (one LIST; cluster Secrets, for instance) ([`Cluster::list_live`]).
    fn list_labelled<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
        label: (&'a str, &'a str),
    ) -> BoxFuture<'a, Result<Vec<Value>>>;

    /// Every object in `namespace` of every namespaced kind served
    /// ([`Cluster::namespace_objects`]): where orphaned resources are looked for without a
    /// watch cache. A kind whose LIST fails (403) fails the whole answer, so a partial
    /// list never passes for the namespace's content.
    fn namespace_objects<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<Vec<Value>>>;

    /// The live object `obj` names, at `obj`'s API version ([`Cluster::get_object_as`]).
    fn get_object_as<'a>(&'a self, obj: &'a Value) -> BoxFuture<'a, Result<Option<Value>>>;

    /// `POST` ([`Cluster::create_object`]).
    fn create_object<'a>(
        &'a self,
        obj: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value>>;

    /// `PUT`, creating a missing object ([`Cluster::replace_object`]).
    fn replace_object<'a>(
        &'a self,
        obj: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value>>;

    /// RFC 7386 merge patch ([`Cluster::merge_patch_object`]).
    fn merge_patch_object<'a>(
        &'a self,
        obj: &'a Value,
        patch: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value>>;

    /// `DELETE` with a propagation policy ([`Cluster::delete_object`]).
    fn delete_object<'a>(
        &'a self,
        key: &'a ResourceKey,
        propagation: Propagation,
    ) -> BoxFuture<'a, Result<Deleted>>;

    /// Server-side apply of each object (with `dry_run`, `dryRun=All`: nothing stored), each
    /// paired with whether the server validates its fields (`false`: `fieldValidation=Ignore`);
    /// answers in input order ([`Cluster::apply_validating`]).
    fn apply_validating<'a>(
        &'a self,
        objects: Vec<(Value, bool)>,
        field_manager: &'a str,
        force: bool,
        dry_run: bool,
    ) -> BoxFuture<'a, Vec<Result<Value>>>;

    /// Server-side apply of each object, answers in input order ([`Cluster::apply`]).
    fn apply<'a>(
        &'a self,
        objects: Vec<Value>,
        field_manager: &'a str,
        force: bool,
    ) -> BoxFuture<'a, Vec<Result<Value>>> {
        self.apply_validating(validating(objects), field_manager, force, false)
    }

    /// Server-side apply with `dryRun=All`: nothing stored ([`Cluster::dry_run_apply`]).
    fn dry_run_apply<'a>(
        &'a self,
        objects: Vec<Value>,
        field_manager: &'a str,
        force: bool,
    ) -> BoxFuture<'a, Vec<Result<Value>>> {
        self.apply_validating(validating(objects), field_manager, force, true)
    }

    /// Creates Namespace `name` unless it exists; `true` when created
    /// ([`Cluster::ensure_namespace`]).
    fn ensure_namespace<'a>(
        &'a self,
        name: &'a str,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<bool>>;

    /// A plumb.dev Application ([`Cluster::get_application`]).
    fn get_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>>>;

    /// Merge patch of an Application ([`Cluster::patch_application`]).
    fn patch_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Value>>;

    /// Merge patch of an Application's status ([`Cluster::patch_application_status`]).
    fn patch_application_status<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Value>>;

    /// The server's `gitVersion` ([`Cluster::server_version`]); empty when not known.
    fn server_version(&self) -> String {
        String::new()
    }

    /// The API group of the Applications and AppProjects served ([`Cluster::app_group`]).
    fn app_group(&self) -> &'static str {
        plumb_core::PLUMB_GROUP
    }
}

impl ClusterApi for Cluster {
    fn api_resources(&self) -> BoxFuture<'_, Result<Arc<ApiResources>>> {
        Box::pin(Cluster::api_resources(self))
    }

    fn app_group(&self) -> &'static str {
        Cluster::app_group(self)
    }

    fn server_version(&self) -> String {
        Cluster::server_version(self).to_string()
    }

    fn resource_for<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<ResourceInfo>> {
        Box::pin(Cluster::resource_for(self, group, kind))
    }

    fn live_for<'a>(
        &'a self,
        desired: &'a [Value],
        app: Option<&'a str>,
        tracking_label: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>>> {
        Box::pin(Cluster::live_for(self, desired, app, tracking_label))
    }

    fn get_object<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>>> {
        Box::pin(Cluster::get_object(self, group, kind, namespace, name))
    }

    fn namespace_objects<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<Vec<Value>>> {
        Box::pin(async move {
            // A kind left out would make its objects look gone (a 403 on every kind: no
            // orphans at all): the answer is whole or an error (the first kind's).
            let (objects, skipped) = Cluster::namespace_objects(self, namespace).await?;
            match skipped.into_iter().next() {
                Some((_, e)) => Err(e),
                None => Ok(objects),
            }
        })
    }

    fn list_labelled<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
        label: (&'a str, &'a str),
    ) -> BoxFuture<'a, Result<Vec<Value>>> {
        Box::pin(async move {
            let selector = format!("{}={}", label.0, label.1);
            Cluster::list_live(
                self,
                &[GroupKind {
                    group: group.into(),
                    kind: kind.into(),
                }],
                Some(&[namespace.to_string()]),
                Some(&selector),
            )
            .await
        })
    }

    fn get_object_as<'a>(&'a self, obj: &'a Value) -> BoxFuture<'a, Result<Option<Value>>> {
        Box::pin(Cluster::get_object_as(self, obj))
    }

    fn create_object<'a>(
        &'a self,
        obj: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(Cluster::create_object(self, obj, field_manager))
    }

    fn replace_object<'a>(
        &'a self,
        obj: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(Cluster::replace_object(self, obj, field_manager))
    }

    fn merge_patch_object<'a>(
        &'a self,
        obj: &'a Value,
        patch: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(Cluster::merge_patch_object(self, obj, patch, field_manager))
    }

    fn delete_object<'a>(
        &'a self,
        key: &'a ResourceKey,
        propagation: Propagation,
    ) -> BoxFuture<'a, Result<Deleted>> {
        Box::pin(Cluster::delete_object(self, key, propagation))
    }

    fn apply_validating<'a>(
        &'a self,
        objects: Vec<(Value, bool)>,
        field_manager: &'a str,
        force: bool,
        dry_run: bool,
    ) -> BoxFuture<'a, Vec<Result<Value>>> {
        Box::pin(Cluster::apply_validating(
            self,
            objects,
            field_manager,
            force,
            dry_run,
        ))
    }

    fn ensure_namespace<'a>(
        &'a self,
        name: &'a str,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(Cluster::ensure_namespace(self, name, field_manager))
    }

    fn get_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>>> {
        Box::pin(Cluster::get_application(self, namespace, name))
    }

    fn patch_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(Cluster::patch_application(self, namespace, name, patch))
    }

    fn patch_application_status<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(Cluster::patch_application_status(
            self, namespace, name, patch,
        ))
    }
}
