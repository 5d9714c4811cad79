//! [`MemoryCluster`]: an API server in memory implementing [`ClusterApi`], for unit tests of
//! what talks to a cluster (feature `memory`; plumb-sync's runner tests use it).
//!
//! What it models, as the API server does:
//!
//! - objects keyed by group, kind, namespace and name; `metadata.resourceVersion` (one
//!   counter for the whole store, bumped only by a write that changes the object), `uid`,
//!   `creationTimestamp`, and `generation` (bumped when anything outside `metadata` and
//!   `status` changes);
//! - discovery: a table of built-in kinds with their scope, versions and status subresource
//!   ([`MemoryCluster::add_kind`] for more); a CustomResourceDefinition written to the store
//!   serves its kind. A kind not served is [`ClusterError::UnknownKind`]; a version not served
//!   is a 404;
//! - a namespaced object is refused (404) in a namespace that does not exist; writes to
//!   the main resource never change `status` of kinds with a status subresource;
//! - server-side apply as a merge of the applied object over what exists (objects merged
//!   key by key, lists replaced, `null` removes). **Field ownership is simplified:** a field
//!   manager owns exactly the fields of its last apply, so a field it stops applying is
//!   removed (even when another manager set it too); there are no conflicts between managers
//!   and no `managedFields` are written;
//! - dry-run apply: the same answer, nothing stored; fields are not validated (so
//!   `fieldValidation=Ignore` changes nothing);
//! - create (`generateName` included; 409 when it exists), replace (creates a missing
//!   object), merge patch; a `metadata.resourceVersion` in a replace or a patch is a
//!   precondition (409 when the object changed since);
//! - delete: removes the object, or, while it has finalizers, sets `deletionTimestamp` and
//!   keeps it until a write empties them ([`MemoryCluster::remove_finalizers`]). The
//!   propagation policy is accepted and not acted on (there are no dependents: no garbage
//!   collector, no `foregroundDeletion` finalizer);
//! - plumb.dev Applications, their merge patches and the `status` subresource's.
//!
//! What stands for controllers: after every write, the objects whose health depends on their
//! status (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, Pod, PersistentVolumeClaim,
//! `LoadBalancer` Services, Ingress) get the status that makes them Healthy for
//! `plumb-health` (a Job completes, a Pod runs or succeeds). A test holds an object in
//! another status with [`MemoryCluster::hold`] (until [`MemoryCluster::release`]) or
//! [`MemoryCluster::hold_for_reads`] (for a number of GETs, then Healthy: deterministic
//! progress without clocks).
//!
//! For tests: every request is logged in order ([`MemoryCluster::log`],
//! [`MemoryCluster::writes`]); failures are injected per verb and object
//! ([`MemoryCluster::fail`]); [`MemoryCluster::put`] and [`MemoryCluster::object`] seed and
//! peek without a request.

use crate::api::ClusterApi;
use crate::discovery::{ApiResources, ResourceInfo};
use crate::error::{ClusterError, Result};
use crate::live::LivePlan;
use crate::write::{
    APPLICATION_GROUP, APPLICATION_KIND, APPLICATION_VERSION, Deleted, Propagation,
};
use futures::future::BoxFuture;
use plumb_core::{GroupKind, ResourceKey};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The `creationTimestamp` (and `deletionTimestamp`) of every object: the store has no clock.
pub const TIMESTAMP: &str = "2026-01-01T00:00:00Z";

/// A request's verb, as the log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    Get,
    List,
    Create,
    /// `PUT`.
    Replace,
    /// A merge patch of an object (an Application's included).
    Patch,
    /// A merge patch of an Application's `status` subresource.
    PatchStatus,
    /// Server-side apply.
    Apply,
    /// Server-side apply with `dryRun=All`.
    DryRunApply,
    Delete,
}

impl Verb {
    /// Whether the verb can change what is stored.
    pub fn is_write(self) -> bool {
        !matches!(self, Verb::Get | Verb::List | Verb::DryRunApply)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Create => "create",
            Verb::Replace => "replace",
            Verb::Patch => "patch",
            Verb::PatchStatus => "patch-status",
            Verb::Apply => "apply",
            Verb::DryRunApply => "dry-run-apply",
            Verb::Delete => "delete",
        }
    }
}

/// One request made to the store. A LIST's key has an empty name (and an empty namespace
/// across all namespaces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub verb: Verb,
    pub key: ResourceKey,
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb.as_str(), self.key)
    }
}

struct Failure {
    verb: Verb,
    key: ResourceKey,
    error: ClusterError,
    /// How many more requests fail; `None`: all of them.
    times: Option<usize>,
}

struct Hold {
    status: Value,
    /// GETs left before the object is released; `None`: until released.
    reads: Option<usize>,
}

#[derive(Default)]
struct State {
    kinds: BTreeMap<GroupKind, ResourceInfo>,
    objects: BTreeMap<ResourceKey, Value>,
    /// Per object and field manager, what it last applied (the fields it owns).
    applied: BTreeMap<(ResourceKey, String), Value>,
    revision: u64,
    uids: u64,
    generated: u64,
    failures: Vec<Failure>,
    holds: BTreeMap<ResourceKey, Hold>,
    log: Vec<Request>,
}

/// An API server in memory (see the [module documentation](self)).
pub struct MemoryCluster {
    state: Mutex<State>,
    default_namespace: String,
}

impl fmt::Debug for MemoryCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("MemoryCluster")
            .field("objects", &st.objects.len())
            .field("requests", &st.log.len())
            .finish_non_exhaustive()
    }
}

impl Default for MemoryCluster {
    fn default() -> Self {
        MemoryCluster::new()
    }
}

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn info(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    status: bool,
) -> ResourceInfo {
    ResourceInfo {
        group: group.to_string(),
        kind: kind.to_string(),
        version: version.to_string(),
        versions: vec![version.to_string()],
        plural: plural.to_string(),
        namespaced,
        verbs: VERBS.iter().map(|v| v.to_string()).collect(),
        subresources: if status {
            vec!["status".to_string()]
        } else {
            Vec::new()
        },
    }
}

/// The built-in kinds the store serves from the start.
fn builtin_kinds() -> Vec<ResourceInfo> {
    vec![
        info("", "v1", "ConfigMap", "configmaps", true, false),
        info("", "v1", "Secret", "secrets", true, false),
        info("", "v1", "ServiceAccount", "serviceaccounts", true, false),
        info("", "v1", "Service", "services", true, true),
        info("", "v1", "Pod", "pods", true, true),
        info(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            true,
            true,
        ),
        info("", "v1", "Namespace", "namespaces", false, true),
        info("apps", "v1", "Deployment", "deployments", true, true),
        info("apps", "v1", "StatefulSet", "statefulsets", true, true),
        info("apps", "v1", "DaemonSet", "daemonsets", true, true),
        info("apps", "v1", "ReplicaSet", "replicasets", true, true),
        info("batch", "v1", "Job", "jobs", true, true),
        info("batch", "v1", "CronJob", "cronjobs", true, true),
        info(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            true,
            true,
        ),
        info(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            true,
            false,
        ),
        info(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            true,
            false,
        ),
        info(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            true,
            false,
        ),
        info(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            false,
            false,
        ),
        info(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            false,
        ),
        info(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            true,
            true,
        ),
        info(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            true,
            true,
        ),
        info(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            true,
        ),
        info(
            APPLICATION_GROUP,
            APPLICATION_VERSION,
            APPLICATION_KIND,
            crate::write::APPLICATION_PLURAL,
            true,
            true,
        ),
    ]
}

fn api_version(group: &str, version: &str) -> String {
    crate::discovery::api_version(group, version)
}

fn not_found(info: &ResourceInfo, name: &str) -> ClusterError {
    ClusterError::Api {
        code: 404,
        message: format!("{} \"{name}\" not found", info.resource_name()),
    }
}

fn conflict(info: &ResourceInfo, name: &str) -> ClusterError {
    ClusterError::Api {
        code: 409,
        message: format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            info.resource_name()
        ),
    }
}

fn invalid(reason: &str) -> ClusterError {
    ClusterError::InvalidObject {
        reason: reason.to_string(),
    }
}

fn meta(obj: &Value, field: &str) -> Option<Value> {
    obj.pointer(&format!("/metadata/{field}"))
        .filter(|v| !v.is_null())
        .cloned()
}

/// `metadata` of an object (made when missing); `None` when `obj` is not an object.
fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let m = obj
        .as_object_mut()?
        .entry("metadata")
        .or_insert_with(|| json!({}));
    if !m.is_object() {
        *m = json!({});
    }
    m.as_object_mut()
}

fn has_finalizers(obj: &Value) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

/// The object without `metadata` and `status`: what `generation` counts changes of.
fn content(obj: &Value) -> Map<String, Value> {
    let mut m = obj.as_object().cloned().unwrap_or_default();
    m.remove("metadata");
    m.remove("status");
    m.remove("apiVersion");
    m
}

/// Removes from `live` the fields `before` has and `after` does not (a manager's fields it
/// stopped applying).
fn remove_dropped(live: &mut Value, before: &Value, after: &Value) {
    let (Some(before), Some(live)) = (before.as_object(), live.as_object_mut()) else {
        return;
    };
    for (k, was) in before {
        match after.get(k) {
            None => {
                live.remove(k);
            }
            Some(now) if was.is_object() && now.is_object() => {
                if let Some(l) = live.get_mut(k) {
                    remove_dropped(l, was, now);
                }
            }
            Some(_) => {}
        }
    }
}

/// The status that makes an object Healthy for `plumb-health`, for kinds whose health is
/// read from their status; `None` for others.
fn healthy_status(key: &ResourceKey, obj: &Value) -> Option<Value> {
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let replicas = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let ready = json!([{"type": "Ready", "status": "True"}]);
    let lb = json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}});
    Some(match (key.group.as_str(), key.kind.as_str()) {
        ("apps", "Deployment") => json!({
            "observedGeneration": generation, "replicas": replicas,
            "updatedReplicas": replicas, "readyReplicas": replicas,
            "availableReplicas": replicas,
            "conditions": [{"type": "Available", "status": "True"}],
        }),
        ("apps", "StatefulSet") => json!({
            "observedGeneration": generation, "replicas": replicas,
            "readyReplicas": replicas, "currentReplicas": replicas,
            "updatedReplicas": replicas, "availableReplicas": replicas,
            "currentRevision": "memory", "updateRevision": "memory",
        }),
        ("apps", "DaemonSet") => json!({
            "observedGeneration": generation, "desiredNumberScheduled": 1,
            "currentNumberScheduled": 1, "updatedNumberScheduled": 1,
            "numberAvailable": 1, "numberReady": 1,
        }),
        ("apps", "ReplicaSet") => json!({
            "observedGeneration": generation, "replicas": replicas,
            "readyReplicas": replicas, "availableReplicas": replicas,
        }),
        ("batch", "Job") => json!({
            "succeeded": 1,
            "conditions": [{"type": "Complete", "status": "True"}],
        }),
        ("", "Pod") => match obj.pointer("/spec/restartPolicy").and_then(Value::as_str) {
            Some("Always") => json!({"phase": "Running", "conditions": ready}),
            _ => json!({"phase": "Succeeded"}),
        },
        ("", "PersistentVolumeClaim") => json!({"phase": "Bound"}),
        ("", "Namespace") => json!({"phase": "Active"}),
        ("", "Service")
            if obj.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer") =>
        {
            lb
        }
        ("networking.k8s.io", "Ingress") => lb,
        _ => return None,
    })
}

/// The kind a CustomResourceDefinition serves.
fn crd_kind(crd: &Value) -> Option<ResourceInfo> {
    let spec = crd.get("spec")?;
    let text = |p: &str| spec.pointer(p).and_then(Value::as_str).map(String::from);
    let versions: Vec<&Value> = spec
        .get("versions")?
        .as_array()?
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .collect();
    let storage = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .or(versions.first())?;
    let mut names: Vec<String> = versions
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(String::from))
        .collect();
    let preferred = storage.get("name").and_then(Value::as_str)?.to_string();
    names.retain(|n| *n != preferred);
    names.insert(0, preferred.clone());
    Some(ResourceInfo {
        group: text("/group")?,
        kind: text("/names/kind")?,
        version: preferred,
        versions: names,
        plural: text("/names/plural")?,
        namespaced: text("/scope").as_deref() != Some("Cluster"),
        verbs: VERBS.iter().map(|v| v.to_string()).collect(),
        subresources: if storage.pointer("/subresources/status").is_some() {
            vec!["status".to_string()]
        } else {
            Vec::new()
        },
    })
}

impl State {
    fn info(&self, group: &str, kind: &str) -> Result<ResourceInfo> {
        self.kinds
            .get(&GroupKind::new(group, kind))
            .cloned()
            .ok_or_else(|| ClusterError::UnknownKind {
                group: group.to_string(),
                kind: kind.to_string(),
            })
    }

    /// Logs a request; the injected failure for it, if any.
    fn request(&mut self, verb: Verb, key: &ResourceKey) -> Result<()> {
        self.log.push(Request {
            verb,
            key: key.clone(),
        });
        let found = self
            .failures
            .iter_mut()
            .position(|f| f.verb == verb && f.key == *key && f.times != Some(0));
        let Some(i) = found else {
            return Ok(());
        };
        let failure = &mut self.failures[i];
        if let Some(n) = failure.times.as_mut() {
            *n -= 1;
        }
        Err(failure.error.clone())
    }

    /// A LIST of `group`/`kind` (logged, and failing as set up): its objects in `namespace`
    /// (`None`: in every namespace) that carry the label `key=value` (`None`: any).
    fn list(
        &mut self,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        label: Option<(&str, &str)>,
    ) -> Result<Vec<Value>> {
        let key = ResourceKey {
            group: group.into(),
            kind: kind.into(),
            namespace: namespace.unwrap_or_default().into(),
            name: String::new(),
        };
        self.request(Verb::List, &key)?;
        Ok(self
            .objects
            .iter()
            .filter(|(k, _)| k.group == group && k.kind == kind)
            .filter(|(k, _)| namespace.is_none_or(|ns| ns == k.namespace))
            .filter(|(_, o)| {
                label.is_none_or(|(name, value)| {
                    o.pointer("/metadata/labels")
                        .and_then(|ls| ls.get(name))
                        .and_then(Value::as_str)
                        == Some(value)
                })
            })
            .map(|(_, o)| o.clone())
            .collect())
    }

    fn namespace_exists(&self, namespace: &str) -> bool {
        self.objects.contains_key(&ResourceKey {
            group: String::new(),
            kind: "Namespace".into(),
            namespace: String::new(),
            name: namespace.to_string(),
        })
    }

    /// A namespaced object may only be written in a namespace that exists.
    fn check_namespace(&self, info: &ResourceInfo, key: &ResourceKey) -> Result<()> {
        if info.namespaced && !self.namespace_exists(&key.namespace) {
            return Err(ClusterError::Api {
                code: 404,
                message: format!("namespaces \"{}\" not found", key.namespace),
            });
        }
        Ok(())
    }

    /// What a write of `new` over `old` stores: system metadata carried over or assigned,
    /// `generation` and `resourceVersion` bumped on change, status as the stand-in
    /// controllers (or a hold) make it. Nothing is stored.
    fn prepare(&mut self, key: &ResourceKey, mut new: Value, old: Option<&Value>) -> Value {
        if let Some(m) = meta_mut(&mut new) {
            m.insert("name".into(), Value::String(key.name.clone()));
            if key.namespace.is_empty() {
                m.remove("namespace");
            } else {
                m.insert("namespace".into(), Value::String(key.namespace.clone()));
            }
            m.remove("managedFields");
            m.remove("generateName");
        }
        let old_meta = |f: &str| old.and_then(|o| meta(o, f));
        let generation = match old {
            Some(o) => {
                let g = old_meta("generation").and_then(|g| g.as_i64()).unwrap_or(1);
                if content(o) == content(&new) {
                    g
                } else {
                    g + 1
                }
            }
            None => 1,
        };
        let uid = old_meta("uid").unwrap_or_else(|| {
            self.uids += 1;
            Value::String(format!("00000000-0000-0000-0000-{:012}", self.uids))
        });
        if let Some(m) = meta_mut(&mut new) {
            m.insert("uid".into(), uid);
            m.insert("generation".into(), json!(generation));
            m.insert(
                "creationTimestamp".into(),
                old_meta("creationTimestamp").unwrap_or_else(|| json!(TIMESTAMP)),
            );
            match old_meta("deletionTimestamp") {
                Some(t) => m.insert("deletionTimestamp".into(), t),
                None => m.remove("deletionTimestamp"),
            };
            if let Some(rv) = old_meta("resourceVersion") {
                m.insert("resourceVersion".into(), rv);
            }
        }
        let status = match self.holds.get(key) {
            Some(hold) => Some(hold.status.clone()),
            None => healthy_status(key, &new),
        };
        if let (Some(status), Some(o)) = (status, new.as_object_mut()) {
            o.insert("status".into(), status);
        }
        if old != Some(&new) {
            self.revision += 1;
            let rv = Value::String(self.revision.to_string());
            if let Some(m) = meta_mut(&mut new) {
                m.insert("resourceVersion".into(), rv);
            }
        }
        new
    }

    /// Stores `new` (from [`State::prepare`]); an object being deleted whose finalizers are
    /// gone is removed. Returns what the server answers.
    fn commit(&mut self, key: &ResourceKey, new: Value) -> Value {
        if key.group == "apiextensions.k8s.io"
            && key.kind == "CustomResourceDefinition"
            && let Some(info) = crd_kind(&new)
        {
            self.kinds.insert(info.group_kind(), info);
        }
        if meta(&new, "deletionTimestamp").is_some() && !has_finalizers(&new) {
            self.remove(key);
        } else {
            self.objects.insert(key.clone(), new.clone());
        }
        new
    }

    fn write(&mut self, key: &ResourceKey, new: Value) -> Value {
        let old = self.objects.get(key).cloned();
        let prepared = self.prepare(key, new, old.as_ref());
        self.commit(key, prepared)
    }

    fn remove(&mut self, key: &ResourceKey) {
        self.objects.remove(key);
        self.applied.retain(|(k, _), _| k != key);
    }

    /// A write to the main resource leaves status alone for kinds with a status subresource.
    fn main_resource(info: &ResourceInfo, new: &mut Value, old: Option<&Value>) {
        if !info.subresources.iter().any(|s| s == "status") {
            return;
        }
        if let Some(o) = new.as_object_mut() {
            match old.and_then(|o| o.get("status")) {
                Some(s) => o.insert("status".into(), s.clone()),
                None => o.remove("status"),
            };
        }
    }

    /// A GET of `key`: counts down a hold's reads (the object is released, and Healthy, once
    /// they are used up).
    fn read(&mut self, key: &ResourceKey) -> Option<Value> {
        if let Some(hold) = self.holds.get_mut(key)
            && let Some(n) = hold.reads.as_mut()
        {
            if *n == 0 {
                self.holds.remove(key);
                if let Some(obj) = self.objects.get(key).cloned() {
                    self.write(key, obj);
                }
            } else {
                *n -= 1;
            }
        }
        self.objects.get(key).cloned()
    }

    /// The key of `obj` with its namespace as the server uses it.
    fn key_of(&self, obj: &Value, default_namespace: &str) -> Result<(ResourceKey, ResourceInfo)> {
        let mut key = ResourceKey::of(obj)
            .ok_or_else(|| invalid("the object lacks apiVersion, kind or metadata.name"))?;
        let info = self.info(&key.group, &key.kind)?;
        key.namespace = scoped_namespace(&info, &key.namespace, default_namespace);
        Ok((key, info))
    }
}

fn scoped_namespace(info: &ResourceInfo, namespace: &str, default_namespace: &str) -> String {
    if !info.namespaced {
        String::new()
    } else if namespace.is_empty() {
        default_namespace.to_string()
    } else {
        namespace.to_string()
    }
}

/// `obj` as read at `version`.
fn at_version(mut obj: Value, info: &ResourceInfo, version: &str) -> Value {
    if let Some(o) = obj.as_object_mut() {
        o.insert(
            "apiVersion".into(),
            Value::String(api_version(&info.group, version)),
        );
        o.insert("kind".into(), Value::String(info.kind.clone()));
    }
    obj
}

/// A `metadata.resourceVersion` in a write is a precondition.
fn check_precondition(
    info: &ResourceInfo,
    key: &ResourceKey,
    written: &Value,
    live: &Value,
) -> Result<()> {
    match meta(written, "resourceVersion") {
        Some(rv) if Some(&rv) != meta(live, "resourceVersion").as_ref() => {
            Err(conflict(info, &key.name))
        }
        _ => Ok(()),
    }
}

impl MemoryCluster {
    /// A store serving the built-in kinds, with Namespaces `default` and `kube-system`.
    pub fn new() -> MemoryCluster {
        let mut st = State::default();
        for info in builtin_kinds() {
            st.kinds.insert(info.group_kind(), info);
        }
        let cluster = MemoryCluster {
            state: Mutex::new(st),
            default_namespace: "default".to_string(),
        };
        for ns in ["default", "kube-system"] {
            // A served kind with a name: cannot fail.
            let _ = cluster
                .put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        }
        cluster
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Serves one more kind (a custom resource).
    pub fn add_kind(&self, info: ResourceInfo) {
        self.lock().kinds.insert(info.group_kind(), info);
    }

    /// Stores `obj` as it is (status included when it has one; otherwise the stand-in
    /// controllers' status), without a request, a failure or a namespace check; returns it
    /// as stored. For a test's initial state. An error for an object without a kind or name,
    /// or of a kind not served.
    pub fn put(&self, obj: Value) -> Result<Value> {
        let mut st = self.lock();
        let (key, _) = st.key_of(&obj, &self.default_namespace)?;
        let old = st.objects.get(&key).cloned();
        let given = obj.get("status").cloned();
        let mut new = st.prepare(&key, obj, old.as_ref());
        if let (Some(status), Some(o)) = (given, new.as_object_mut()) {
            o.insert("status".into(), status);
        }
        Ok(st.commit(&key, new))
    }

    /// The object stored under `key` (no request is made).
    pub fn object(&self, key: &ResourceKey) -> Option<Value> {
        self.lock().objects.get(key).cloned()
    }

    /// The keys of every object stored, sorted.
    pub fn keys(&self) -> Vec<ResourceKey> {
        self.lock().objects.keys().cloned().collect()
    }

    /// Every request so far, in order.
    pub fn log(&self) -> Vec<Request> {
        self.lock().log.clone()
    }

    /// The requests so far that can change the store (no GET, LIST or dry run), in order.
    pub fn writes(&self) -> Vec<Request> {
        self.lock()
            .log
            .iter()
            .filter(|r| r.verb.is_write())
            .cloned()
            .collect()
    }

    /// Forgets the requests logged so far.
    pub fn clear_log(&self) {
        self.lock().log.clear();
    }

    /// Every `verb` request on `key` fails with `error` (after being logged) from now on.
    /// A LIST's key has an empty name.
    pub fn fail(&self, verb: Verb, key: ResourceKey, error: ClusterError) {
        self.lock().failures.push(Failure {
            verb,
            key,
            error,
            times: None,
        });
    }

    /// The next `times` `verb` requests on `key` fail with `error`.
    pub fn fail_times(&self, verb: Verb, key: ResourceKey, error: ClusterError, times: usize) {
        self.lock().failures.push(Failure {
            verb,
            key,
            error,
            times: Some(times),
        });
    }

    /// No more injected failures.
    pub fn clear_failures(&self) {
        self.lock().failures.clear();
    }

    /// Holds the object `key` (now, or when it is created) in `status` until
    /// [`MemoryCluster::release`]: no stand-in controller changes it.
    pub fn hold(&self, key: ResourceKey, status: Value) {
        self.hold_with(key, status, None);
    }

    /// Holds the object `key` in `status` for the next `reads` GETs of it; the GET after
    /// those finds it released (and Healthy).
    pub fn hold_for_reads(&self, key: ResourceKey, status: Value, reads: usize) {
        self.hold_with(key, status, Some(reads));
    }

    fn hold_with(&self, key: ResourceKey, status: Value, reads: Option<usize>) {
        let mut st = self.lock();
        st.holds.insert(key.clone(), Hold { status, reads });
        if let Some(obj) = st.objects.get(&key).cloned() {
            st.write(&key, obj);
        }
    }

    /// Releases a held object: the stand-in controllers make it Healthy.
    pub fn release(&self, key: &ResourceKey) {
        let mut st = self.lock();
        st.holds.remove(key);
        if let Some(obj) = st.objects.get(key).cloned() {
            st.write(key, obj);
        }
    }

    /// Empties the object's finalizers (as their controllers would): an object being
    /// deleted goes.
    pub fn remove_finalizers(&self, key: &ResourceKey) {
        let mut st = self.lock();
        if let Some(mut obj) = st.objects.get(key).cloned() {
            if let Some(m) = meta_mut(&mut obj) {
                m.remove("finalizers");
            }
            st.write(key, obj);
        }
    }

    fn get_sync(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>> {
        let mut st = self.lock();
        let info = st.info(group, kind)?;
        let key = ResourceKey {
            group: group.to_string(),
            kind: kind.to_string(),
            namespace: scoped_namespace(&info, namespace, &self.default_namespace),
            name: name.to_string(),
        };
        st.request(Verb::Get, &key)?;
        let version = info.version.clone();
        Ok(st.read(&key).map(|o| at_version(o, &info, &version)))
    }

    fn get_as_sync(&self, obj: &Value) -> Result<Option<Value>> {
        let mut st = self.lock();
        let (key, info) = st.key_of(obj, &self.default_namespace)?;
        let version = crate::write::served_version(obj, &info)?;
        st.request(Verb::Get, &key)?;
        Ok(st.read(&key).map(|o| at_version(o, &info, &version)))
    }

    fn apply_sync(&self, obj: Value, manager: &str, dry_run: bool) -> Result<Value> {
        let mut st = self.lock();
        let (key, info) = st.key_of(&obj, &self.default_namespace)?;
        let verb = if dry_run {
            Verb::DryRunApply
        } else {
            Verb::Apply
        };
        st.request(verb, &key)?;
        let version = crate::write::served_version(&obj, &info)?;
        st.check_namespace(&info, &key)?;
        let old = st.objects.get(&key).cloned();
        if let Some(live) = &old {
            check_precondition(&info, &key, &obj, live)?;
        }
        let mut applied = obj;
        if let Some(o) = applied.as_object_mut() {
            o.remove("status");
        }
        if let Some(m) = meta_mut(&mut applied) {
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        let mut merged = old.clone().unwrap_or_else(|| json!({}));
        if let Some(before) = st.applied.get(&(key.clone(), manager.to_string())) {
            remove_dropped(&mut merged, before, &applied);
        }
        json_patch::merge(&mut merged, &applied);
        State::main_resource(&info, &mut merged, old.as_ref());
        let prepared = st.prepare(&key, merged, old.as_ref());
        let answer = if dry_run {
            // What would be stored; the counter moves on, as etcd's does not, but nothing
            // reads it.
            prepared
        } else {
            st.applied
                .insert((key.clone(), manager.to_string()), applied);
            st.commit(&key, prepared)
        };
        Ok(at_version(answer, &info, &version))
    }

    fn create_sync(&self, obj: &Value) -> Result<Value> {
        let mut st = self.lock();
        let api = obj.get("apiVersion").and_then(Value::as_str);
        let kind = obj.get("kind").and_then(Value::as_str);
        let (Some(api), Some(kind)) = (api, kind) else {
            return Err(invalid("the object lacks apiVersion or kind"));
        };
        let info = st.info(plumb_core::group_of_api_version(api), kind)?;
        let namespace = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = match obj.pointer("/metadata/name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => {
                let prefix = obj
                    .pointer("/metadata/generateName")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        invalid("the object lacks metadata.name and metadata.generateName")
                    })?;
                st.generated += 1;
                format!("{prefix}{:05}", st.generated)
            }
        };
        let key = ResourceKey {
            group: info.group.clone(),
            kind: info.kind.clone(),
            namespace: scoped_namespace(&info, namespace, &self.default_namespace),
            name,
        };
        st.request(Verb::Create, &key)?;
        let version = crate::write::served_version(obj, &info)?;
        st.check_namespace(&info, &key)?;
        if st.objects.contains_key(&key) {
            return Err(ClusterError::Api {
                code: 409,
                message: format!("{} \"{}\" already exists", info.resource_name(), key.name),
            });
        }
        let mut new = obj.clone();
        if let Some(m) = meta_mut(&mut new) {
            m.remove("resourceVersion");
        }
        State::main_resource(&info, &mut new, None);
        let stored = st.write(&key, new);
        Ok(at_version(stored, &info, &version))
    }

    fn replace_sync(&self, obj: &Value) -> Result<Value> {
        let mut st = self.lock();
        let (key, info) = st.key_of(obj, &self.default_namespace)?;
        let version = crate::write::served_version(obj, &info)?;
        let old = st.objects.get(&key).cloned();
        // As `Cluster::replace_object`: a GET, then a create or a PUT.
        st.request(Verb::Get, &key)?;
        let Some(old) = old else {
            drop(st);
            return self.create_sync(obj);
        };
        st.request(Verb::Replace, &key)?;
        check_precondition(&info, &key, obj, &old)?;
        let mut new = obj.clone();
        State::main_resource(&info, &mut new, Some(&old));
        let stored = st.write(&key, new);
        Ok(at_version(stored, &info, &version))
    }

    fn patch_sync(&self, obj: &Value, patch: &Value, verb: Verb) -> Result<Value> {
        let mut st = self.lock();
        let (key, info) = st.key_of(obj, &self.default_namespace)?;
        let version = crate::write::served_version(obj, &info)?;
        st.request(verb, &key)?;
        let old = st
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| not_found(&info, &key.name))?;
        check_precondition(&info, &key, patch, &old)?;
        let mut new = old.clone();
        if verb == Verb::PatchStatus {
            // The status subresource takes only `status`.
            if let Some(status) = patch.get("status") {
                let mut target = json!({"status": new.get("status").cloned().unwrap_or(json!({}))});
                json_patch::merge(&mut target, &json!({"status": status}));
                if let (Some(o), Some(s)) = (new.as_object_mut(), target.get("status")) {
                    o.insert("status".into(), s.clone());
                }
            }
        } else {
            let mut patch = patch.clone();
            if let Some(m) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            json_patch::merge(&mut new, &patch);
            State::main_resource(&info, &mut new, Some(&old));
        }
        let stored = st.write(&key, new);
        Ok(at_version(stored, &info, &version))
    }

    fn delete_sync(&self, key: &ResourceKey) -> Result<Deleted> {
        let mut st = self.lock();
        let info = st.info(&key.group, &key.kind)?;
        let key = ResourceKey {
            namespace: scoped_namespace(&info, &key.namespace, &self.default_namespace),
            ..key.clone()
        };
        st.request(Verb::Delete, &key)?;
        let Some(mut obj) = st.objects.get(&key).cloned() else {
            return Ok(Deleted::NotFound);
        };
        if !has_finalizers(&obj) {
            st.remove(&key);
            return Ok(Deleted::Deleted);
        }
        if meta(&obj, "deletionTimestamp").is_none() {
            st.revision += 1;
            let rv = st.revision.to_string();
            if let Some(m) = meta_mut(&mut obj) {
                m.insert("deletionTimestamp".into(), json!(TIMESTAMP));
                m.insert("resourceVersion".into(), Value::String(rv));
            }
            st.objects.insert(key, obj);
        }
        Ok(Deleted::Deleted)
    }

    fn application(namespace: &str, name: &str) -> Value {
        json!({
            "apiVersion": api_version(APPLICATION_GROUP, APPLICATION_VERSION),
            "kind": APPLICATION_KIND,
            "metadata": {"namespace": namespace, "name": name},
        })
    }

    fn live_for_sync(
        &self,
        desired: &[Value],
        app: Option<&str>,
        tracking_label: &str,
    ) -> Result<Vec<Value>> {
        let mut st = self.lock();
        let mut plan = LivePlan::new(app, tracking_label, &self.default_namespace);
        // Resolving a kind here never waits: every future is ready at once.
        futures::FutureExt::now_or_never(plan.add_all(desired, |gk| {
            std::future::ready(st.info(&gk.group, &gk.kind))
        }))
        .expect("ready futures complete when first polled")?;
        let served: Vec<ResourceInfo> = match app {
            Some(_) => st.kinds.values().cloned().collect(),
            None => Vec::new(),
        };
        let reads = plan.reads(served.iter());
        let label = app.map(|a| (tracking_label, a));
        let mut list = |read: crate::live::PlannedRead| -> Result<Vec<Value>> {
            let info = &read.info;
            let label = label.filter(|_| read.labelled);
            let objects = st.list(&info.group, &info.kind, read.namespace.as_deref(), label)?;
            Ok(objects
                .into_iter()
                .map(|o| at_version(o, info, &info.version))
                .collect())
        };
        let mut plain = Vec::new();
        for read in reads.plain {
            plain.extend(list(read)?);
        }
        let extras: Vec<Result<Vec<Value>>> = reads.extras.into_iter().map(&mut list).collect();
        plan.select(plain, extras)
    }
}

impl ClusterApi for MemoryCluster {
    fn api_resources(&self) -> BoxFuture<'_, Result<Arc<ApiResources>>> {
        Box::pin(async move {
            let st = self.lock();
            Ok(Arc::new(ApiResources::from_infos(
                st.kinds.values().cloned(),
            )))
        })
    }

    fn resource_for<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<ResourceInfo>> {
        Box::pin(async move { self.lock().info(group, kind) })
    }

    fn live_for<'a>(
        &'a self,
        desired: &'a [Value],
        app: Option<&'a str>,
        tracking_label: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>>> {
        Box::pin(async move { self.live_for_sync(desired, app, tracking_label) })
    }

    fn get_object<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>>> {
        Box::pin(async move { self.get_sync(group, kind, namespace, name) })
    }

    fn namespace_objects<'a>(&'a self, namespace: &'a str) -> BoxFuture<'a, Result<Vec<Value>>> {
        Box::pin(async move {
            let mut st = self.lock();
            let namespaced: Vec<ResourceInfo> = st
                .kinds
                .values()
                .filter(|i| i.namespaced)
                .cloned()
                .collect();
            let mut out = Vec::new();
            for info in namespaced {
                out.extend(st.list(&info.group, &info.kind, Some(namespace), None)?);
            }
            Ok(out)
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
            let mut st = self.lock();
            let info = st.info(group, kind)?;
            let objects = st.list(group, kind, Some(namespace), Some(label))?;
            Ok(objects
                .into_iter()
                .map(|o| at_version(o, &info, &info.version))
                .collect())
        })
    }

    fn get_object_as<'a>(&'a self, obj: &'a Value) -> BoxFuture<'a, Result<Option<Value>>> {
        Box::pin(async move { self.get_as_sync(obj) })
    }

    fn create_object<'a>(
        &'a self,
        obj: &'a Value,
        _field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move { self.create_sync(obj) })
    }

    fn replace_object<'a>(
        &'a self,
        obj: &'a Value,
        _field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move { self.replace_sync(obj) })
    }

    fn merge_patch_object<'a>(
        &'a self,
        obj: &'a Value,
        patch: &'a Value,
        _field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move { self.patch_sync(obj, patch, Verb::Patch) })
    }

    fn delete_object<'a>(
        &'a self,
        key: &'a ResourceKey,
        _propagation: Propagation,
    ) -> BoxFuture<'a, Result<Deleted>> {
        Box::pin(async move { self.delete_sync(key) })
    }

    fn apply_validating<'a>(
        &'a self,
        objects: Vec<(Value, bool)>,
        field_manager: &'a str,
        _force: bool,
        dry_run: bool,
    ) -> BoxFuture<'a, Vec<Result<Value>>> {
        // Fields are not validated here, so `fieldValidation=Ignore` changes nothing.
        Box::pin(async move {
            objects
                .into_iter()
                .map(|(o, _validate)| self.apply_sync(o, field_manager, dry_run))
                .collect()
        })
    }

    fn ensure_namespace<'a>(
        &'a self,
        name: &'a str,
        _field_manager: &'a str,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            if self.get_sync("", "Namespace", "", name)?.is_some() {
                return Ok(false);
            }
            let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            match self.create_sync(&ns) {
                Ok(_) => Ok(true),
                Err(ClusterError::Api { code: 409, .. }) => Ok(false),
                Err(e) => Err(e),
            }
        })
    }

    fn get_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>>> {
        Box::pin(async move { self.get_sync(APPLICATION_GROUP, APPLICATION_KIND, namespace, name) })
    }

    fn patch_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            self.patch_sync(
                &MemoryCluster::application(namespace, name),
                patch,
                Verb::Patch,
            )
        })
    }

    fn patch_application_status<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            self.patch_sync(
                &MemoryCluster::application(namespace, name),
                patch,
                Verb::PatchStatus,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    fn cm(name: &str, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": data})
    }

    fn key(name: &str) -> ResourceKey {
        ResourceKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: "default".into(),
            name: name.into(),
        }
    }

    fn apply(c: &MemoryCluster, obj: Value, manager: &str) -> Result<Value> {
        block_on(c.apply(vec![obj], manager, true))
            .pop()
            .expect("one answer")
    }

    fn rv(obj: &Value) -> String {
        obj["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .to_string()
    }

    #[test]
    fn apply_merges_and_drops_what_a_manager_stopped_applying() {
        let c = MemoryCluster::new();
        let first = apply(&c, cm("a", json!({"x": "1", "y": "2"})), "plumb").expect("apply");
        assert_eq!(first["metadata"]["generation"], 1);
        // Another writer adds a field; plumb stops applying `y`.
        let patched = block_on(c.merge_patch_object(
            &cm("a", json!({})),
            &json!({"data": {"z": "3"}}),
            "kubectl",
        ))
        .expect("patch");
        let second = apply(&c, cm("a", json!({"x": "1"})), "plumb").expect("apply");
        assert_eq!(second["data"], json!({"x": "1", "z": "3"}));
        assert_eq!(second["metadata"]["generation"], 3);
        assert!(rv(&second).parse::<u64>().unwrap() > rv(&patched).parse::<u64>().unwrap());
        // The same apply again changes nothing, not even the resourceVersion.
        let again = apply(&c, cm("a", json!({"x": "1"})), "plumb").expect("apply");
        assert_eq!(rv(&again), rv(&second));
        assert_eq!(
            c.writes().iter().map(|r| r.verb).collect::<Vec<_>>(),
            [Verb::Apply, Verb::Patch, Verb::Apply, Verb::Apply]
        );
    }

    #[test]
    fn dry_run_stores_nothing_and_namespaces_must_exist() {
        let c = MemoryCluster::new();
        let answer = block_on(c.dry_run_apply(vec![cm("a", json!({}))], "plumb", true))
            .pop()
            .expect("answer")
            .expect("dry run");
        assert_eq!(answer["metadata"]["name"], "a");
        assert!(c.object(&key("a")).is_none());
        let mut elsewhere = cm("b", json!({}));
        elsewhere["metadata"]["namespace"] = json!("missing");
        let err = apply(&c, elsewhere, "plumb").expect_err("no namespace");
        assert_eq!(
            err.to_string(),
            "API error 404: namespaces \"missing\" not found"
        );
    }

    #[test]
    fn preconditions_finalizers_and_injected_failures() {
        let c = MemoryCluster::new();
        let stored = block_on(c.create_object(&cm("a", json!({})), "plumb")).expect("create");
        let dup = block_on(c.create_object(&cm("a", json!({})), "plumb")).expect_err("exists");
        assert!(matches!(dup, ClusterError::Api { code: 409, .. }));
        let stale = json!({"metadata": {"resourceVersion": "1"}, "data": {"k": "v"}});
        assert_ne!(rv(&stored), "1");
        let err = block_on(c.merge_patch_object(&cm("a", json!({})), &stale, "plumb"))
            .expect_err("stale");
        assert!(matches!(err, ClusterError::Api { code: 409, .. }));

        let mut held = cm("f", json!({}));
        held["metadata"]["finalizers"] = json!(["example.com/wait"]);
        c.put(held).expect("put");
        let deleted = block_on(c.delete_object(&key("f"), Propagation::Foreground));
        assert_eq!(deleted, Ok(Deleted::Deleted));
        let lingering = c.object(&key("f")).expect("still there");
        assert_eq!(lingering["metadata"]["deletionTimestamp"], TIMESTAMP);
        c.remove_finalizers(&key("f"));
        assert!(c.object(&key("f")).is_none());
        let gone = block_on(c.delete_object(&key("f"), Propagation::Foreground));
        assert_eq!(gone, Ok(Deleted::NotFound));

        let boom = ClusterError::Api {
            code: 500,
            message: "boom".into(),
        };
        c.fail_times(Verb::Get, key("a"), boom.clone(), 1);
        let first = block_on(c.get_object("", "ConfigMap", "default", "a"));
        assert_eq!(first, Err(boom));
        let second = block_on(c.get_object("", "ConfigMap", "default", "a"));
        assert!(second.expect("get").is_some());
        let unknown = block_on(c.get_object("example.com", "Widget", "default", "w"));
        assert!(matches!(unknown, Err(ClusterError::UnknownKind { .. })));
    }

    #[test]
    fn a_crd_serves_its_kind() {
        let c = MemoryCluster::new();
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": true, "storage": true}]}});
        apply(&c, crd, "plumb").expect("crd");
        let kinds = [
            GroupKind::new("example.com", "Widget"),
            GroupKind::new("", "Namespace"),
            GroupKind::new("example.com", "Gadget"),
        ];
        let scopes = block_on(c.scopes(kinds.iter().cloned().collect())).expect("scopes");
        assert_eq!(
            scopes.into_iter().collect::<Vec<_>>(),
            [(kinds[1].clone(), true), (kinds[0].clone(), false)]
        );
        let info = block_on(c.resource_for("example.com", "Widget")).expect("served");
        assert_eq!(
            info.url_path("v1", Some("x")),
            "/apis/example.com/v1/namespaces/x/widgets"
        );
        let w = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 1}});
        apply(&c, w, "plumb").expect("widget");
        let live = block_on(c.live_for(
            &[json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "namespace": "default"}})],
            None,
            plumb_core::INSTANCE_LABEL,
        ))
        .expect("live");
        assert_eq!(live.len(), 1);
        assert_eq!(live[0]["spec"]["size"], 1);
    }
}

/// One event a [`CollectedEvents`] kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectedEvent {
    /// `namespace/name` of the object.
    pub object: String,
    pub kind: crate::events::EventType,
    pub reason: String,
    pub message: String,
}

/// An [`EventSink`](crate::events::EventSink) that keeps every event in order, for unit
/// tests of what the runner records.
#[derive(Debug, Default)]
pub struct CollectedEvents {
    events: Mutex<Vec<CollectedEvent>>,
}

impl CollectedEvents {
    /// Every event recorded so far.
    pub fn all(&self) -> Vec<CollectedEvent> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// `reason: message` of every event, in order.
    pub fn lines(&self) -> Vec<String> {
        self.all()
            .iter()
            .map(|e| format!("{}: {}", e.reason, e.message))
            .collect()
    }
}

impl crate::events::EventSink for CollectedEvents {
    fn record(
        &self,
        object: &crate::events::AppRef,
        kind: crate::events::EventType,
        reason: &str,
        message: &str,
    ) {
        if let Ok(mut e) = self.events.lock() {
            e.push(CollectedEvent {
                object: format!("{}/{}", object.namespace, object.name),
                kind,
                reason: reason.to_string(),
                message: crate::events::clean_message(message),
            });
        }
    }
}
