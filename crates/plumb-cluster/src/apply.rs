//! Server-side apply, for real or as a dry run (what the server *would* store:
//! defaults, admission mutations and `managedFields` included).
//!
//! One request per object, run concurrently; `fieldValidation=Ignore` when asked (the
//! `Validate=false` sync option).

use crate::discovery::ResourceInfo;
use crate::error::{ClusterError, Result};
use crate::{APPLY_CONCURRENCY, Cluster};
use futures::{StreamExt, stream};
use plumb_core::{GroupKind, ResourceKey};
use serde_json::Value;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

impl Cluster {
    /// Server-side applies each object with `dryRun=All` (PATCH
    /// `application/apply-patch+yaml`, `fieldManager`, `force`), at most
    /// [`APPLY_CONCURRENCY`] in flight, and returns the predicted live object
    /// (with `managedFields`) or the error, in input order.
    ///
    /// The object's own `apiVersion` decides the version of the request; a
    /// namespaced object without a namespace goes to the context's default
    /// namespace. Mutating admission webhooks with `sideEffects: None` (or
    /// `NoneOnDryRun`) run on dry runs, so their mutations show.
    pub async fn dry_run_apply(
        &self,
        objects: Vec<Value>,
        field_manager: &str,
        force: bool,
    ) -> Vec<Result<Value>> {
        self.apply_validating(validating(objects), field_manager, force, true)
            .await
    }

    /// Like [`Cluster::dry_run_apply`], but for real: the server stores the objects.
    pub async fn apply(
        &self,
        objects: Vec<Value>,
        field_manager: &str,
        force: bool,
    ) -> Vec<Result<Value>> {
        self.apply_validating(validating(objects), field_manager, force, false)
            .await
    }

    /// Like [`Cluster::apply`] (or [`Cluster::dry_run_apply`] with `dry_run`), each object
    /// paired with whether the server validates its fields: `false` sends
    /// `fieldValidation=Ignore` (kubectl's `--validate=false`, the `Validate=false` sync
    /// option), `true` leaves the server's default.
    pub async fn apply_validating(
        &self,
        objects: Vec<(Value, bool)>,
        field_manager: &str,
        force: bool,
        dry_run: bool,
    ) -> Vec<Result<Value>> {
        // Resolve every kind once, before any request.
        let mut resources: BTreeMap<GroupKind, Result<ResourceInfo>> = BTreeMap::new();
        for key in objects.iter().filter_map(|(o, _)| ResourceKey::of(o)) {
            if let Entry::Vacant(slot) = resources.entry(key.group_kind()) {
                let gk = slot.key();
                let info = self.resource_for(&gk.group, &gk.kind).await;
                slot.insert(info);
            }
        }
        let resources = &resources;
        stream::iter(objects)
            .map(|(obj, validate)| async move {
                let key = ResourceKey::of(&obj).ok_or_else(|| ClusterError::InvalidObject {
                    reason: "the object lacks apiVersion, kind or metadata.name".to_string(),
                })?;
                let info = match resources.get(&key.group_kind()) {
                    Some(Ok(info)) => info,
                    Some(Err(e)) => return Err(e.clone()),
                    None => {
                        return Err(ClusterError::UnknownKind {
                            group: key.group,
                            kind: key.kind,
                        });
                    }
                };
                let params = kube::api::PatchParams {
                    dry_run,
                    force,
                    field_manager: Some(field_manager.to_string()),
                    field_validation: (!validate).then_some(kube::api::ValidationDirective::Ignore),
                };
                self.apply_one(obj, &key, info, &params).await
            })
            .buffered(APPLY_CONCURRENCY)
            .collect()
            .await
    }

    async fn apply_one(
        &self,
        obj: Value,
        key: &ResourceKey,
        info: &ResourceInfo,
        params: &kube::api::PatchParams,
    ) -> Result<Value> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        if !info.versions.iter().any(|v| v == version) {
            // Say so plainly rather than pass on the server's bare 404.
            return Err(ClusterError::Api {
                code: 404,
                message: format!(
                    "{api_version} {} is not served (served versions: {})",
                    info.kind,
                    info.versions.join(", ")
                ),
            });
        }
        let namespace = if !info.namespaced {
            None
        } else if key.namespace.is_empty() {
            Some(self.default_namespace.as_str())
        } else {
            Some(key.namespace.as_str())
        };
        let ctx = self.context("patch", info, namespace);
        let request = kube::core::Request::new(info.url_path(version, namespace))
            .patch(&key.name, params, &kube::api::Patch::Apply(&obj))
            .map_err(|e| ClusterError::InvalidObject {
                reason: e.to_string(),
            })?;
        self.client
            .request::<Value>(request)
            .await
            .map_err(|e| ClusterError::from_kube(e, &ctx))
    }
}

/// Each object paired with `true`: the server validates its fields (its default), as
/// [`Cluster::apply`] and [`Cluster::dry_run_apply`] apply them.
pub(crate) fn validating(objects: Vec<Value>) -> Vec<(Value, bool)> {
    objects.into_iter().map(|o| (o, true)).collect()
}
