//! What a sync needs from the API server besides server-side apply: reading one
//! object, delete (with a propagation policy), replace (PUT), create, merge patch
//! (client-side apply), creating a
//! Namespace, and plumb's own `applications.plumb.dev` objects (get, list, merge
//! patches of the object and of its `status` subresource).
//!
//! Every error is a [`ClusterError`] naming the request; nothing panics.

use crate::Cluster;
use crate::discovery::ResourceInfo;
use crate::error::{ClusterError, Result};
use plumb_core::ResourceKey;
use serde::Deserialize;
use serde_json::Value;

/// The API group of plumb's Application custom resource.
pub const APPLICATION_GROUP: &str = plumb_core::PLUMB_GROUP;
/// Its kind.
pub const APPLICATION_KIND: &str = "Application";
/// Its served version.
pub const APPLICATION_VERSION: &str = "v1alpha1";
/// Its plural (the URL segment).
pub const APPLICATION_PLURAL: &str = "applications";

/// How a delete treats the object's dependents (`propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    /// Dependents are deleted before the object (Argo CD's prune default).
    #[default]
    Foreground,
    /// The object goes at once; the garbage collector deletes dependents.
    Background,
    /// Dependents are left behind.
    Orphan,
}

impl Propagation {
    fn to_kube(self) -> kube::api::PropagationPolicy {
        match self {
            Propagation::Foreground => kube::api::PropagationPolicy::Foreground,
            Propagation::Background => kube::api::PropagationPolicy::Background,
            Propagation::Orphan => kube::api::PropagationPolicy::Orphan,
        }
    }
}

/// The outcome of a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// The server accepted the delete (the object may linger while finalizers run).
    Deleted,
    /// There was nothing to delete.
    NotFound,
}

#[derive(Deserialize)]
struct ListBody {
    #[serde(default)]
    items: Vec<Value>,
}

/// The Application resource of `group`, without discovery (plumb's CRD and Argo CD's have
/// the same kind, version and plural; only plumb's has a status subresource).
fn application_info(group: &str) -> ResourceInfo {
    ResourceInfo {
        group: group.to_string(),
        kind: APPLICATION_KIND.to_string(),
        version: APPLICATION_VERSION.to_string(),
        versions: vec![APPLICATION_VERSION.to_string()],
        plural: APPLICATION_PLURAL.to_string(),
        namespaced: true,
        verbs: Vec::new(),
        subresources: if group == plumb_core::ARGO_GROUP {
            Vec::new()
        } else {
            vec!["status".to_string()]
        },
    }
}

/// Runs a request (an `http::Request`, which this crate does not name), translating
/// errors with the request's context.
macro_rules! send {
    ($self:expr, $request:expr, $verb:expr, $info:expr, $ns:expr) => {{
        let ctx = $self.context($verb, $info, $ns);
        $self
            .client
            .request::<Value>($request)
            .await
            .map_err(|e| ClusterError::from_kube(e, &ctx))
    }};
}

fn key_of(obj: &Value) -> Result<ResourceKey> {
    ResourceKey::of(obj).ok_or_else(|| ClusterError::InvalidObject {
        reason: "the object lacks apiVersion, kind or metadata.name".to_string(),
    })
}

fn bad_request(e: impl std::fmt::Display) -> ClusterError {
    ClusterError::InvalidObject {
        reason: crate::error::one_line(&e.to_string()),
    }
}

fn to_body(obj: &Value) -> Result<Vec<u8>> {
    serde_json::to_vec(obj).map_err(bad_request)
}

impl Cluster {
    /// The namespace a request on `info` goes to: none for cluster-scoped kinds,
    /// the context's default for a namespaced object without one.
    fn namespace_for<'a>(&'a self, info: &ResourceInfo, namespace: &'a str) -> Option<&'a str> {
        if !info.namespaced {
            None
        } else if namespace.is_empty() {
            Some(self.default_namespace.as_str())
        } else {
            Some(namespace)
        }
    }

    /// One object (`GET`), or `None` when it does not exist.
    pub async fn get_object(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>> {
        let info = self.resource_for(group, kind).await?;
        let version = info.version.clone();
        self.get_at(&info, &version, namespace, name).await
    }

    /// The live object `obj` names, read at `obj`'s own API version (as kubectl reads before
    /// it patches), or `None` when it does not exist.
    pub async fn get_object_as(&self, obj: &Value) -> Result<Option<Value>> {
        let key = key_of(obj)?;
        let info = self.resource_for(&key.group, &key.kind).await?;
        let version = served_version(obj, &info)?;
        self.get_at(&info, &version, &key.namespace, &key.name)
            .await
    }

    async fn get_at(
        &self,
        info: &ResourceInfo,
        version: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>> {
        let ns = self.namespace_for(info, namespace);
        let request = kube::core::Request::new(info.url_path(version, ns))
            .get(name, &kube::api::GetParams::default())
            .map_err(bad_request)?;
        match send!(self, request, "get", info, ns) {
            Ok(mut obj) => {
                if let Some(m) = obj.as_object_mut() {
                    m.insert(
                        "apiVersion".into(),
                        Value::String(crate::discovery::api_version(&info.group, version)),
                    );
                    m.insert("kind".into(), Value::String(info.kind.clone()));
                }
                Ok(Some(obj))
            }
            Err(ClusterError::Api { code: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Deletes an object with `propagation`. A missing object is
    /// [`Deleted::NotFound`], not an error.
    pub async fn delete_object(
        &self,
        key: &ResourceKey,
        propagation: Propagation,
    ) -> Result<Deleted> {
        let info = self.resource_for(&key.group, &key.kind).await?;
        let ns = self.namespace_for(&info, &key.namespace);
        let params = kube::api::DeleteParams {
            propagation_policy: Some(propagation.to_kube()),
            ..Default::default()
        };
        let request = kube::core::Request::new(info.url_path(&info.version, ns))
            .delete(&key.name, &params)
            .map_err(bad_request)?;
        match send!(self, request, "delete", &info, ns) {
            Ok(_) => Ok(Deleted::Deleted),
            Err(ClusterError::Api { code: 404, .. }) => Ok(Deleted::NotFound),
            Err(e) => Err(e),
        }
    }

    /// Creates an object (`POST`) and returns what the server stored.
    /// The object needs no `metadata.name` (`generateName`, reviews).
    pub async fn create_object(&self, obj: &Value, field_manager: &str) -> Result<Value> {
        let api_version = obj.get("apiVersion").and_then(Value::as_str);
        let kind = obj.get("kind").and_then(Value::as_str);
        let (Some(api_version), Some(kind)) = (api_version, kind) else {
            return Err(ClusterError::InvalidObject {
                reason: "the object lacks apiVersion or kind".to_string(),
            });
        };
        let key = ResourceKey {
            group: plumb_core::group_of_api_version(api_version).to_string(),
            kind: kind.to_string(),
            namespace: obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            name: String::new(),
        };
        let info = self.resource_for(&key.group, &key.kind).await?;
        let ns = self.namespace_for(&info, &key.namespace);
        let version = served_version(obj, &info)?;
        let params = kube::api::PostParams {
            dry_run: false,
            field_manager: Some(field_manager.to_string()),
        };
        let request = kube::core::Request::new(info.url_path(&version, ns))
            .create(&params, to_body(obj)?)
            .map_err(bad_request)?;
        send!(self, request, "create", &info, ns)
    }

    /// Replaces an object (`PUT`, as `kubectl replace`), creating it when it does not
    /// exist. The object's `resourceVersion`, when it has none, is taken from the live
    /// object, so the replacement is unconditional; a concurrent writer in between is
    /// a 409 conflict error.
    pub async fn replace_object(&self, obj: &Value, field_manager: &str) -> Result<Value> {
        let key = key_of(obj)?;
        let info = self.resource_for(&key.group, &key.kind).await?;
        let ns = self.namespace_for(&info, &key.namespace);
        let version = served_version(obj, &info)?;
        let live = self
            .get_object(&key.group, &key.kind, &key.namespace, &key.name)
            .await?;
        let Some(live) = live else {
            return self.create_object(obj, field_manager).await;
        };
        let mut body = obj.clone();
        let has_rv = body
            .pointer("/metadata/resourceVersion")
            .is_some_and(|v| !v.is_null());
        if !has_rv
            && let (Some(rv), Some(meta)) = (
                live.pointer("/metadata/resourceVersion").cloned(),
                body.get_mut("metadata").and_then(Value::as_object_mut),
            )
        {
            meta.insert("resourceVersion".into(), rv);
        }
        let params = kube::api::PostParams {
            dry_run: false,
            field_manager: Some(field_manager.to_string()),
        };
        let request = kube::core::Request::new(info.url_path(&version, ns))
            .replace(&key.name, &params, to_body(&body)?)
            .map_err(bad_request)?;
        send!(self, request, "update", &info, ns)
    }

    /// Patches the object `obj` names with an RFC 7386 merge patch (`PATCH`,
    /// `application/merge-patch+json`) as `field_manager` (an `Update` in managedFields,
    /// as client-side apply records); returns what the server stored. The URL's version is
    /// `obj`'s. A `metadata.resourceVersion` in the patch makes it conditional: a 409
    /// conflict error when the object changed since.
    pub async fn merge_patch_object(
        &self,
        obj: &Value,
        patch: &Value,
        field_manager: &str,
    ) -> Result<Value> {
        let key = key_of(obj)?;
        let info = self.resource_for(&key.group, &key.kind).await?;
        let ns = self.namespace_for(&info, &key.namespace);
        let version = served_version(obj, &info)?;
        let params = kube::api::PatchParams {
            field_manager: Some(field_manager.to_string()),
            ..Default::default()
        };
        let request = kube::core::Request::new(info.url_path(&version, ns))
            .patch(&key.name, &params, &kube::api::Patch::Merge(patch))
            .map_err(bad_request)?;
        send!(self, request, "patch", &info, ns)
    }

    /// RFC 7386 merge patch of `obj`'s `status` subresource (an ApplicationSet's status).
    pub async fn merge_patch_status(
        &self,
        obj: &Value,
        patch: &Value,
        field_manager: &str,
    ) -> Result<Value> {
        let key = key_of(obj)?;
        let info = self.resource_for(&key.group, &key.kind).await?;
        let ns = self.namespace_for(&info, &key.namespace);
        let version = served_version(obj, &info)?;
        let params = kube::api::PatchParams {
            field_manager: Some(field_manager.to_string()),
            ..Default::default()
        };
        let request = kube::core::Request::new(info.url_path(&version, ns))
            .patch_subresource(
                "status",
                &key.name,
                &params,
                &kube::api::Patch::Merge(patch),
            )
            .map_err(bad_request)?;
        send!(self, request, "patch", &info, ns)
    }

    /// Creates Namespace `name` unless it exists. `true` when it was created.
    pub async fn ensure_namespace(&self, name: &str, field_manager: &str) -> Result<bool> {
        if self.get_object("", "Namespace", "", name).await?.is_some() {
            return Ok(false);
        }
        let ns = serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
        });
        match self.create_object(&ns, field_manager).await {
            Ok(_) => Ok(true),
            // Created by someone else in between: it exists, which is what was asked.
            Err(ClusterError::Api { code: 409, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// An Application of the group served ([`Cluster::app_group`]), or `None` when it does
    /// not exist.
    pub async fn get_application(&self, namespace: &str, name: &str) -> Result<Option<Value>> {
        let info = application_info(self.app_group);
        let request = kube::core::Request::new(info.url_path(APPLICATION_VERSION, Some(namespace)))
            .get(name, &kube::api::GetParams::default())
            .map_err(bad_request)?;
        match send!(self, request, "get", &info, Some(namespace)) {
            Ok(obj) => Ok(Some(obj)),
            Err(ClusterError::Api { code: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The plumb.dev Applications of `namespace` (all namespaces when `None`),
    /// each with `apiVersion` and `kind`.
    pub async fn list_applications(&self, namespace: Option<&str>) -> Result<Vec<Value>> {
        let info = application_info(self.app_group);
        let request = kube::core::Request::new(info.url_path(APPLICATION_VERSION, namespace))
            .list(&kube::api::ListParams::default())
            .map_err(bad_request)?;
        let ctx = self.context("list", &info, namespace);
        let body: ListBody = self
            .client
            .request(request)
            .await
            .map_err(|e| ClusterError::from_kube(e, &ctx))?;
        let mut items = body.items;
        for item in &mut items {
            if let Some(m) = item.as_object_mut() {
                m.insert("apiVersion".into(), Value::String(info.api_version()));
                m.insert("kind".into(), Value::String(info.kind.clone()));
            }
        }
        Ok(items)
    }

    /// JSON merge patch (RFC 7386) of an Application (its spec and metadata).
    pub async fn patch_application(
        &self,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<Value> {
        self.merge_patch_application(namespace, name, patch, None)
            .await
    }

    /// JSON merge patch of an Application's `status` subresource (`patch` is the
    /// whole object's shape: `{"status": {...}}`).
    pub async fn patch_application_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<Value> {
        // Argo CD's CRD has no status subresource: its status is written with the object.
        let subresource = (self.app_group != plumb_core::ARGO_GROUP).then_some("status");
        self.merge_patch_application(namespace, name, patch, subresource)
            .await
    }

    async fn merge_patch_application(
        &self,
        namespace: &str,
        name: &str,
        patch: &Value,
        subresource: Option<&str>,
    ) -> Result<Value> {
        let info = application_info(self.app_group);
        let params = kube::api::PatchParams {
            field_manager: Some("plumb".to_string()),
            ..Default::default()
        };
        let base = kube::core::Request::new(info.url_path(APPLICATION_VERSION, Some(namespace)));
        let request = match subresource {
            Some(sub) => {
                base.patch_subresource(sub, name, &params, &kube::api::Patch::Merge(patch))
            }
            None => base.patch(name, &params, &kube::api::Patch::Merge(patch)),
        }
        .map_err(bad_request)?;
        send!(self, request, "patch", &info, Some(namespace))
    }
}

/// The version of `obj`'s `apiVersion`, if the server serves it for this kind.
pub(crate) fn served_version(obj: &Value, info: &ResourceInfo) -> Result<String> {
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    if info.versions.iter().any(|v| v == version) {
        Ok(version.to_string())
    } else {
        Err(ClusterError::Api {
            code: 404,
            message: format!(
                "{api_version} {} is not served (served versions: {})",
                info.kind,
                info.versions.join(", ")
            ),
        })
    }
}
