//! Argo CD's `Application` and `AppProject` custom resources as Rust types: the one place
//! plumb reads and writes an Application's spec and status.
//!
//! Field names are Argo CD's CRD names (camelCase). Every struct keeps the fields it does not
//! model in `extra` (a flattened map), so a read-modify-write (`status.history` appended to,
//! an Application written back) keeps what a newer Argo CD, another controller or a user put
//! there. On write, fields Argo CD declares `omitempty` are left out when empty, as Argo CD
//! leaves them out; so an object Argo CD wrote reads and writes back unchanged, while a
//! hand-written `prune: false` is written back without it (the same meaning).
//!
//! Times are RFC 3339 (`crate::time`), written in whole UTC seconds as `metav1.Time` is.
//!
//! Read with [`Application::from_value`] / [`AppProject::from_value`]: a field of the wrong
//! type is an error naming it (`spec.syncPolicy.automated.prune: invalid type: …`, via
//! `serde_path_to_error`); [`ApplicationSpec::of`] reads the spec alone;
//! [`Application::read_lenient`] is for readers that must not fail (the doctor, the CLI's
//! printing): a field of the wrong shape is left at its default and reported aside.
//!
//! What is modelled — spec: `source`/`sources`, `destination`, `project`, `syncPolicy`
//! (automated, syncOptions, retry, managedNamespaceMetadata), `ignoreDifferences`, `info`,
//! `revisionHistoryLimit`; status: `sync`, `health`, `resources`, `history`, `conditions`,
//! `operationState` (its `operation` and `syncResult`), `reconciledAt`, `sourceType(s)`,
//! `summary`, plumb's `syncLoop`; the requested `operation`. The CLI, the doctor and the sync
//! planner all read an Application through these types; `crate::argo::Application` is the
//! comparison view built from them.
//!
//! Status is written through the model too: [`ApplicationStatus::stored`] gives the status
//! read and the JSON a write starts from, and [`ApplicationStatus::patch_from`] the JSON merge
//! patch to the changed typed status ([`merge_patch`]: only what differs, a field the model
//! cleared as `null`, lists replaced whole, unknown fields untouched).
//!
//! ```
//! use plumb_core::argo::model::Application;
//! let app = Application::from_value(&serde_json::json!({
//!     "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
//!     "metadata": {"name": "web", "namespace": "argocd"},
//!     "spec": {"destination": {"namespace": "prod"}, "futureField": 1},
//!     "status": {"sync": {"status": "Synced", "revision": "b5e2be1"}}})).unwrap();
//! assert_eq!(app.status.sync.status, "Synced");
//! assert_eq!(app.to_value()["spec"]["futureField"], 1);
//! ```

use super::{AppSource, IgnoreRule};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// Fields a struct does not model, kept for writing back.
pub type Extra = Map<String, Value>;

pub(crate) fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

/// A typed read that failed: the field's path (`spec.destination.namespace`; empty for the
/// object itself) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct ModelError {
    /// The field that failed, as a path (`spec.syncPolicy.automated.prune`); empty for the
    /// object itself.
    pub path: String,
    /// Why it failed (serde's message: `invalid type: string "yes", expected a boolean`).
    pub message: String,
}

impl ModelError {
    /// The error with `prefix` (`spec`, `status`) put before its path.
    fn under(self, prefix: &str) -> ModelError {
        ModelError {
            path: if self.path.is_empty() {
                prefix.to_string()
            } else {
                format!("{prefix}.{}", self.path)
            },
            message: self.message,
        }
    }
}

/// Deserializes `v` as `T`, naming the field that failed.
pub fn read<T: DeserializeOwned>(v: &Value) -> Result<T, ModelError> {
    serde_path_to_error::deserialize(v).map_err(|e| ModelError {
        path: match e.path().to_string() {
            p if p == "." => String::new(),
            p => p,
        },
        message: e.inner().to_string(),
    })
}

/// The part of `metadata` plumb reads; everything else is kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    /// `metadata.name`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `metadata.namespace` (empty: cluster-scoped, or not yet defaulted).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `metadata.labels`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The rest of `metadata` (`uid`, `resourceVersion`, `generation`, …), kept as read.
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------
// Application

/// An Argo CD (or plumb) `Application`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Application {
    /// `apiVersion`: `argoproj.io/v1alpha1`, or plumb's `plumb.dev/v1alpha1`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `kind`: `Application`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `metadata`: the Application's name, namespace, labels and annotations.
    pub metadata: ObjectMeta,
    /// `spec`: what to deploy, where, and how it syncs.
    pub spec: ApplicationSpec,
    /// `status`: what the controller last found and did (left out when empty).
    #[serde(skip_serializing_if = "is_default")]
    pub status: ApplicationStatus,
    /// The operation requested (`argocd app sync` writes it; the controller clears it when it
    /// starts the operation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    /// Top-level fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Application {
    /// Reads an Application object (any `kind`; callers check it where it matters).
    pub fn from_value(v: &Value) -> Result<Application, ModelError> {
        read(v)
    }

    /// Reads an Application but its `status` (left at its default): for readers of what the
    /// Application asks for, such as every refresh's compare, which have no use for the last
    /// operation's result and the resource list a status carries (the larger part of an
    /// Application's text). Errors name the field, as [`Application::from_value`]'s.
    pub fn read_without_status(v: &Value) -> Result<Application, ModelError> {
        match v.as_object() {
            Some(obj) if obj.contains_key("status") => read(&Value::Object(
                obj.iter()
                    .filter(|(k, _)| k.as_str() != "status")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )),
            _ => read(v),
        }
    }

    /// Reads an Application for display: `spec` and each `status` field are read on their
    /// own, and one of the wrong shape is left at its default and reported instead of failing
    /// the whole read (see [`ApplicationStatus::read_lenient`]).
    pub fn read_lenient(v: &Value) -> (Application, Vec<ModelError>) {
        if let Ok(app) = read(v) {
            return (app, Vec::new());
        }
        let (status, mut errors) = ApplicationStatus::read_lenient(v);
        let spec = ApplicationSpec::of(v).unwrap_or_else(|e| {
            errors.push(e);
            ApplicationSpec::default()
        });
        let mut rest = v.as_object().cloned().unwrap_or_default();
        rest.remove("spec");
        rest.remove("status");
        let mut app: Application = read(&Value::Object(rest)).unwrap_or_else(|e| {
            errors.push(e);
            Application::default()
        });
        app.spec = spec;
        app.status = status;
        (app, errors)
    }

    /// The object as JSON (unknown fields included).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The first of `spec.sources`, else `spec.source` (Argo CD ignores `spec.source` when
    /// `spec.sources` is given).
    pub fn first_source(&self) -> Option<&AppSource> {
        self.spec.sources.first().or(self.spec.source.as_ref())
    }

    /// `spec.sources`, else `spec.source` as a one-element list.
    pub fn sources(&self) -> Vec<&AppSource> {
        if self.spec.sources.is_empty() {
            self.spec.source.iter().collect()
        } else {
            self.spec.sources.iter().collect()
        }
    }

    /// `spec.syncPolicy.automated`, when present and not `enabled: false`.
    pub fn automated(&self) -> Option<&AutomatedPolicy> {
        self.spec
            .sync_policy
            .as_ref()
            .and_then(|p| p.automated.as_ref())
            .filter(|a| a.is_enabled())
    }
}

/// `spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ApplicationSpec {
    /// `spec.source`: the one source of desired state (ignored when `sources` is given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<AppSource>,
    /// `spec.sources`: several sources rendered together (multi-source Applications).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<AppSource>,
    /// `spec.destination`: the cluster and default namespace to deploy to.
    pub destination: Destination,
    /// `spec.project`: the AppProject whose rules apply (Argo CD requires it; plumb reads empty
    /// as `default`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project: String,
    /// `spec.syncPolicy`: automated sync, sync options and retry; absent: manual syncs only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_policy: Option<SyncPolicy>,
    /// `spec.ignoreDifferences`: fields left out of the comparison.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignore_differences: Vec<IgnoreRule>,
    /// `spec.info`: extra information shown with the Application.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub info: Vec<Info>,
    /// `revisionHistoryLimit` (Argo CD's default when unset: 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i64>,
    /// Fields of `spec` not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ApplicationSpec {
    /// `spec` of an Application object alone (its status is not read); errors name the
    /// field from `spec.` on.
    pub fn of(app: &Value) -> Result<ApplicationSpec, ModelError> {
        match app.get("spec") {
            None | Some(Value::Null) => Ok(ApplicationSpec::default()),
            Some(spec) => read(spec).map_err(|e| e.under("spec")),
        }
    }
}

/// `spec.destination`: a cluster by `server` URL or by `name`, and the default namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Destination {
    /// `server`: the cluster's API server URL (`https://kubernetes.default.svc`: in-cluster).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server: String,
    /// `namespace`: where namespaced resources that name none are deployed.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `name`: the cluster's name (a cluster Secret's `name`), instead of `server`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Destination {
    /// A destination by `server` or `name` (empty string: not given) and `namespace`.
    pub fn new(server: &str, name: &str, namespace: &str) -> Destination {
        Destination {
            server: server.into(),
            name: name.into(),
            namespace: namespace.into(),
            extra: Extra::new(),
        }
    }

    /// The namespace given, the cluster kept (a resource's namespace against the
    /// Application's cluster).
    pub fn with_namespace(&self, namespace: &str) -> Destination {
        Destination {
            namespace: namespace.into(),
            ..self.clone()
        }
    }
}

/// `spec.info[]`: free-form name/value pairs shown by `argocd app get`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Info {
    /// The label shown.
    pub name: String,
    /// The text shown.
    pub value: String,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `spec.syncPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncPolicy {
    /// `automated`: sync without being asked, when git (or, with self-heal, the cluster)
    /// changes; absent: manual syncs only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automated: Option<AutomatedPolicy>,
    /// `syncOptions`: `CreateNamespace=true`, `ServerSideApply=true`, `PruneLast=true`, …
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    /// `retry`: how a failed sync is retried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryStrategy>,
    /// `managedNamespaceMetadata`: labels and annotations for the namespace
    /// `CreateNamespace=true` creates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_namespace_metadata: Option<ManagedNamespaceMetadata>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `spec.syncPolicy.automated`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AutomatedPolicy {
    /// Automated syncs prune.
    #[serde(skip_serializing_if = "is_false")]
    pub prune: bool,
    /// Resync the same revision when the cluster drifts.
    #[serde(skip_serializing_if = "is_false")]
    pub self_heal: bool,
    /// An automated, pruning sync may delete every resource.
    #[serde(skip_serializing_if = "is_false")]
    pub allow_empty: bool,
    /// Argo CD ≥ 3.0; absent means enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl AutomatedPolicy {
    /// Whether automated sync is on: `enabled` absent or `true`.
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }
}

/// `syncPolicy.retry`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RetryStrategy {
    /// Retries allowed; negative: unlimited; absent or 0: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// `backoff`: the waits between retries; absent: Argo CD's defaults (5s, doubling, at most
    /// 3m).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    /// Retry with the latest revision rather than the one first attempted.
    #[serde(skip_serializing_if = "is_false")]
    pub refresh: bool,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `syncPolicy.retry.backoff`. Durations are Go durations or a number of seconds; they are
/// kept as written (`Value`: a string, or a number some YAML tooling leaves unquoted) and
/// read by the sync planner.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Backoff {
    /// `duration`: the wait before the first retry (Argo CD's default: `5s`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<Value>,
    /// `factor`: each wait is the previous one times this (Argo CD's default: 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factor: Option<Value>,
    /// `maxDuration`: the longest wait (Argo CD's default: `3m`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_duration: Option<Value>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `syncPolicy.managedNamespaceMetadata`: labels and annotations for a namespace the sync
/// creates (`CreateNamespace=true`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ManagedNamespaceMetadata {
    /// Labels set on the namespace.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations set on the namespace.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------
// Status

/// `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ApplicationStatus {
    /// `resources`: every resource of the Application, with its sync status and health.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceStatus>,
    /// `sync`: whether the cluster matches git, and at which revision.
    #[serde(skip_serializing_if = "is_default")]
    pub sync: SyncStatus,
    /// `health`: the Application's health, the worst of its resources'.
    #[serde(skip_serializing_if = "is_default")]
    pub health: HealthStatus,
    /// Oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<HistoryEntry>,
    /// `conditions`: errors and warnings (`ComparisonError`, `SyncError`, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// `reconciledAt`: when the Application was last compared.
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "crate::time::rfc3339_option"
    )]
    pub reconciled_at: Option<SystemTime>,
    /// `operationState`: the last (or running) operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_state: Option<OperationState>,
    /// `Kustomize`, `Helm`, `Directory`, `Plugin`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source_type: String,
    /// `sourceTypes`: the `sourceType` of each source (multiple sources).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source_types: Vec<String>,
    /// `summary`: external URLs and container images.
    #[serde(skip_serializing_if = "is_default")]
    pub summary: Summary,
    /// plumb's own: the sync loop the controller recognised (with the `SyncLoop` condition);
    /// absent when there is none. Argo CD does not have it (and keeps it, as an unknown field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_loop: Option<SyncLoop>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.syncLoop`: the same revision synced again and again, the same fields differing
/// after each sync; per field, who rewrites it, where git declares it and the first fix (the
/// doctor's finding).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncLoop {
    /// The first of the syncs that made the loop recognised.
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "crate::time::rfc3339_option"
    )]
    pub since: Option<SystemTime>,
    /// The revision synced again and again.
    pub revision: String,
    /// How many syncs of it, each followed by the same fields differing, were seen.
    pub syncs: u32,
    /// The fields that differ after each sync, one entry each.
    pub fields: Vec<SyncLoopField>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One field of a [`SyncLoop`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncLoopField {
    /// The resource's API group (empty: core).
    pub group: String,
    /// The resource's kind.
    pub kind: String,
    /// The resource's namespace (empty: cluster-scoped).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The resource's name.
    pub name: String,
    /// JSON pointer into the live object.
    pub path: String,
    /// `mutating webhook platform-policy-mutate`, `controller HorizontalPodAutoscaler …`.
    pub rewritten_by: String,
    /// `file:line` in the repository, when the renderer knew it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub declared_at: String,
    /// The first fix, in one sentence.
    pub fix: String,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ApplicationStatus {
    /// `status` of an Application object, read field by field: a field of the wrong shape
    /// (another tool's, or a hand edit) is left at its default and reported, the rest is
    /// read. For readers that must not fail (the doctor, `plumb app get`).
    pub fn read_lenient(app: &Value) -> (ApplicationStatus, Vec<ModelError>) {
        let Some(Value::Object(status)) = app.get("status") else {
            return (ApplicationStatus::default(), Vec::new());
        };
        if let Ok(s) = read::<ApplicationStatus>(&app["status"]) {
            return (s, Vec::new());
        }
        let mut good = Map::new();
        let mut errors = Vec::new();
        for (k, v) in status {
            let one = Value::Object(Map::from_iter([(k.clone(), v.clone())]));
            match read::<ApplicationStatus>(&one) {
                Ok(_) => {
                    good.insert(k.clone(), v.clone());
                }
                Err(e) => errors.push(e.under("status")),
            }
        }
        let status = read(&Value::Object(good)).unwrap_or_default();
        (status, errors)
    }

    /// `status` of an Application object as the starting point of a write: the lenient read
    /// (what a writer changes), and the JSON a write is computed against — the read status
    /// written out, plus the fields the read left out as `app` has them (one of the wrong
    /// shape, one written empty), so a write that does not set them clears them.
    pub fn stored(app: &Value) -> (ApplicationStatus, Value) {
        let (status, _) = ApplicationStatus::read_lenient(app);
        let mut stored = match serde_json::to_value(&status) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if let Some(Value::Object(raw)) = app.get("status") {
            for (k, v) in raw {
                stored.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        (status, Value::Object(stored))
    }

    /// The JSON merge patch of the Application (`{"status": …}`) that turns `stored` (see
    /// [`ApplicationStatus::stored`]) into this status: only what differs, a field this
    /// status leaves out as `null`, fields it does not model kept (see [`merge_patch`]).
    pub fn patch_from(&self, stored: &Value) -> Value {
        let new = serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()));
        let patch = merge_patch(stored, &new).unwrap_or_else(|| Value::Object(Map::new()));
        Value::Object(Map::from_iter([("status".to_string(), patch)]))
    }
}

/// The JSON merge patch (RFC 7396) that turns `old` into `new`, `None` when they are equal.
/// Objects are compared key by key (a key `new` lacks becomes `null`, an object in both is
/// patched recursively); anything else — a list, a scalar, a change of type — is replaced
/// whole. A `null` member of `new` means the same as one left out (a merge patch cannot
/// write one).
///
/// The `json-patch` crate applies merge patches but does not produce them, hence this.
pub fn merge_patch(old: &Value, new: &Value) -> Option<Value> {
    let (Value::Object(o), Value::Object(n)) = (old, new) else {
        return (old != new).then(|| without_nulls(new));
    };
    let mut patch = Map::new();
    for (k, ov) in o {
        match n.get(k) {
            // Left out, or null (the same to a merge patch): removed.
            None | Some(Value::Null) if !ov.is_null() => {
                patch.insert(k.clone(), Value::Null);
            }
            None | Some(Value::Null) => {}
            Some(nv) => {
                if let Some(change) = merge_patch(ov, nv) {
                    patch.insert(k.clone(), change);
                }
            }
        }
    }
    for (k, nv) in n
        .iter()
        .filter(|(k, v)| !o.contains_key(*k) && !v.is_null())
    {
        patch.insert(k.clone(), without_nulls(nv));
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
}

/// `v` with `null` members of its objects left out (a merge patch would read them as
/// "remove").
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `status.sync`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncStatus {
    /// `Synced`, `OutOfSync` or `Unknown`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The revision compared (single source).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// The revisions compared (multiple sources).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// `comparedTo`: the sources and destination the comparison used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compared_to: Option<ComparedTo>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.sync.comparedTo`: the spec the comparison used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ComparedTo {
    /// `spec.source` as compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<AppSource>,
    /// `spec.sources` as compared (multiple sources).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<AppSource>,
    /// `spec.destination` as compared.
    #[serde(skip_serializing_if = "is_default")]
    pub destination: Destination,
    /// `spec.ignoreDifferences` as compared.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignore_differences: Vec<IgnoreRule>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.health` (and a resource's `health`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HealthStatus {
    /// `Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing`, `Unknown`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// `message`: the health check's explanation, when it gives one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `status.resources[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceStatus {
    /// The API group (empty: core).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The API version (`v1`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The kind.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The namespace (empty: cluster-scoped).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `Synced` or `OutOfSync`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// `health`: the resource's health; absent for a kind without a health check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
    /// The resource is a hook (Argo CD writes a boolean).
    #[serde(skip_serializing_if = "is_false")]
    pub hook: bool,
    /// `requiresPruning`: live but no longer in git; a pruning sync deletes it.
    #[serde(skip_serializing_if = "is_false")]
    pub requires_pruning: bool,
    /// `syncWave`: the wave it syncs in (`argocd.argoproj.io/sync-wave`; absent: 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_wave: Option<i64>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `status.conditions[]` entry (`ComparisonError`, `SyncError`, `OrphanedResourceWarning`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    /// `type`: `ComparisonError`, `SyncError`, `InvalidSpecError`, …
    #[serde(rename = "type")]
    pub type_name: String,
    /// `message`: what is wrong, in one line.
    pub message: String,
    /// `lastTransitionTime`: when the condition was set.
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "crate::time::rfc3339_option"
    )]
    pub last_transition_time: Option<SystemTime>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.summary`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Summary {
    /// `externalURLs`: URLs the Application's resources are reached at (Ingress hosts,
    /// `link.argocd.argoproj.io/external-link` annotations).
    #[serde(rename = "externalURLs", skip_serializing_if = "Vec::is_empty")]
    pub external_urls: Vec<String>,
    /// `images`: the container images its resources run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Who started a sync (`initiatedBy`): a user, or the automated-sync controller.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InitiatedBy {
    /// `username`: the user who started the sync (empty for an automated one).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// `automated`: the sync was started by automated sync.
    #[serde(skip_serializing_if = "is_false")]
    pub automated: bool,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl InitiatedBy {
    /// Started by the user `name`.
    pub fn user(name: impl Into<String>) -> InitiatedBy {
        InitiatedBy {
            username: name.into(),
            ..InitiatedBy::default()
        }
    }

    /// Started by automated sync.
    pub fn automated() -> InitiatedBy {
        InitiatedBy {
            automated: true,
            ..InitiatedBy::default()
        }
    }
}

/// One `status.history[]` entry. Fields are declared (and serialized) in the order of Argo
/// CD's Go struct: `revision`, `deployedAt`, `id`, `source`, `deployStartedAt`, `sources`,
/// `revisions`, `initiatedBy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// The revision synced (a commit SHA); single source.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// When the sync finished (`null` when unknown: Go writes a zero `metav1.Time` so).
    #[serde(default, with = "crate::time::rfc3339_option")]
    pub deployed_at: Option<SystemTime>,
    /// One more than the largest id so far, 0 for the first.
    #[serde(default)]
    pub id: i64,
    /// The source the sync used (Go writes it even when empty).
    #[serde(default)]
    pub source: AppSource,
    /// When the sync started.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::time::rfc3339_option"
    )]
    pub deploy_started_at: Option<SystemTime>,
    /// The sources the sync used (multiple sources).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<AppSource>,
    /// The revisions synced (multiple sources).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// Go writes this struct even when empty (`{}`).
    #[serde(default)]
    pub initiated_by: InitiatedBy,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl HistoryEntry {
    /// An entry to append (its `id` is set when it is appended).
    pub fn new(
        revision: impl Into<String>,
        source: AppSource,
        deploy_started_at: SystemTime,
        deployed_at: SystemTime,
        initiated_by: InitiatedBy,
    ) -> HistoryEntry {
        HistoryEntry {
            revision: revision.into(),
            deployed_at: Some(deployed_at),
            id: 0,
            source,
            deploy_started_at: Some(deploy_started_at),
            sources: Vec::new(),
            revisions: Vec::new(),
            initiated_by,
            extra: Extra::new(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Operations

/// An operation: requested in `operation`, echoed in `status.operationState.operation`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Operation {
    /// `sync`: the sync to run (the only operation Argo CD has).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncOperation>,
    /// `initiatedBy`: who asked for the operation.
    #[serde(skip_serializing_if = "is_default")]
    pub initiated_by: InitiatedBy,
    /// `info`: name/value pairs given with the request (`argocd app sync --info`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub info: Vec<Info>,
    /// `retry`: how the operation is retried when it fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryStrategy>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `operation.sync`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncOperation {
    /// `revision`: the revision to sync (empty: `targetRevision` as it resolves now).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// `revisions`: one revision per source (multiple sources).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// `prune`: delete live resources that are no longer in git.
    #[serde(skip_serializing_if = "is_false")]
    pub prune: bool,
    /// `dryRun`: run the sync's applies as dry runs, changing nothing.
    #[serde(skip_serializing_if = "is_false")]
    pub dry_run: bool,
    /// `{apply: {force}}` or `{hook: {force}}`, kept as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_strategy: Option<Value>,
    /// A partial sync: the resources it takes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<SyncOperationResource>,
    /// `syncOptions`: the options this sync runs with (`ServerSideApply=true`, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    /// The source to sync instead of `spec.source` (a rollback).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<AppSource>,
    /// `sources`: the sources to sync instead of `spec.sources` (a rollback of a
    /// multi-source Application).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<AppSource>,
    /// Consecutive self-heal syncs (Argo CD's `SelfHealAttemptsCount`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_heal_attempts_count: Option<i64>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `operation.sync.resources[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncOperationResource {
    /// The API group (empty: core).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The name.
    pub name: String,
    /// The namespace (empty: any namespace).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.operationState`: the last (or running) operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OperationState {
    /// `operation`: the operation as requested.
    pub operation: Operation,
    /// `Running`, `Terminating`, `Failed`, `Error`, `Succeeded`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// `message`: how it went, in one line (`successfully synced (all tasks run)`, an error).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `syncResult`: what the sync did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_result: Option<SyncOperationResult>,
    /// `startedAt`: when the operation started.
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "crate::time::rfc3339_option"
    )]
    pub started_at: Option<SystemTime>,
    /// `finishedAt`: when it ended; absent while it runs.
    #[serde(
        skip_serializing_if = "Option::is_none",
        with = "crate::time::rfc3339_option"
    )]
    pub finished_at: Option<SystemTime>,
    /// `retryCount`: how many times it has been retried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<i64>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `status.operationState.syncResult`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncOperationResult {
    /// `resources`: what the sync did to each resource.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceResult>,
    /// `revision`: the revision synced (single source).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// `revisions`: the revisions synced (multiple sources).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// `source`: the source synced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<AppSource>,
    /// `sources`: the sources synced (multiple sources).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<AppSource>,
    /// plumb's own: for a source that is a plain directory (no commit, `revision` empty), the
    /// digest of the desired objects the operation synced (`sha256:<hex>`), which tells the
    /// same content from a changed directory. Argo CD does not have it (and keeps it, as an
    /// unknown field).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub content_digest: String,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One `syncResult.resources[]` entry: what a sync did to a resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceResult {
    // group, version, kind, namespace and name are always written, empty or not, as Argo CD
    // writes them: its CRD requires all five.
    /// The API group (empty: core).
    pub group: String,
    /// The API version (`v1`).
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The namespace (empty: cluster-scoped).
    pub namespace: String,
    /// The name.
    pub name: String,
    /// `Synced`, `SyncFailed`, `Pruned`, `PruneSkipped`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// `message`: what the API server or the hook said (`deployment.apps/web configured`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `PreSync`, `Sync`, `PostSync`, `SyncFail`, or empty for a plain resource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hook_type: String,
    /// `hookPhase`: how its apply or hook went: `Running`, `Succeeded`, `Failed`, …
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hook_phase: String,
    /// `syncPhase`: the phase it ran in: `PreSync`, `Sync`, `PostSync` or `SyncFail`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sync_phase: String,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------
// AppProject

/// An Argo CD `AppProject`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AppProject {
    /// `apiVersion` (`argoproj.io/v1alpha1`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `kind`: `AppProject`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// `metadata`: the project's name (what `spec.project` names) and namespace.
    pub metadata: ObjectMeta,
    /// `spec`: what the project's Applications may deploy, from where, to where and when.
    pub spec: AppProjectSpec,
    /// `status` (JWT tokens by role), kept as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    /// Top-level fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl AppProject {
    /// Reads an AppProject (a `spec: null` reads as an empty spec); the policy it stands for
    /// is [`crate::project::AppProject::compile`]d from it.
    pub fn from_value(v: &Value) -> Result<AppProject, ModelError> {
        if v.get("spec").is_some_and(Value::is_null) {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("spec");
            }
            return read(&v);
        }
        read(v)
    }

    /// The object as JSON (unknown fields included).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// `AppProject.spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AppProjectSpec {
    /// `sourceRepos`: repository URLs Applications may take manifests from (globs; `!`
    /// denies).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source_repos: Vec<String>,
    /// `destinations`: the clusters and namespaces Applications may deploy to (globs; `!`
    /// denies).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<Destination>,
    /// `description`: free text.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Absent or empty: no cluster-scoped kind is permitted (Argo CD reads both alike);
    /// kept as an `Option` so an object is written back as it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_resource_whitelist: Option<Vec<GroupKindPattern>>,
    /// `clusterResourceBlacklist`: cluster-scoped kinds denied even when whitelisted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cluster_resource_blacklist: Vec<GroupKindPattern>,
    /// Absent: every namespaced kind is permitted; present and empty: none (Argo CD's rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_resource_whitelist: Option<Vec<GroupKindPattern>>,
    /// `namespaceResourceBlacklist`: namespaced kinds denied even when whitelisted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub namespace_resource_blacklist: Vec<GroupKindPattern>,
    /// `sourceNamespaces`: namespaces other than the controller's whose Applications may use
    /// the project (globs, or `/regex/`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source_namespaces: Vec<String>,
    /// `syncWindows`: when syncs are allowed or denied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sync_windows: Vec<SyncWindow>,
    /// `orphanedResources`: report resources in a destination namespace that no Application
    /// tracks; absent: not monitored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orphaned_resources: Option<OrphanedResources>,
    /// Roles (policies, JWT tokens, groups), kept as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<Value>,
    /// `permitOnlyProjectScopedClusters`: Applications may deploy only to clusters whose
    /// Secret names this project.
    #[serde(skip_serializing_if = "is_false")]
    pub permit_only_project_scoped_clusters: bool,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A group/kind pair (and, optionally, a name) of a project's resource white- or blacklist
/// or of `orphanedResources.ignore` (globs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GroupKindPattern {
    /// The API group (a glob; empty: the core group).
    pub group: String,
    /// The kind (a glob).
    pub kind: String,
    /// Only resources of this name (a glob); empty: any name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

impl GroupKindPattern {
    /// A pattern for `group` and `kind`, any name.
    pub fn new(group: &str, kind: &str) -> GroupKindPattern {
        GroupKindPattern {
            group: group.into(),
            kind: kind.into(),
            ..GroupKindPattern::default()
        }
    }
}

impl std::fmt::Display for GroupKindPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "''"
        } else {
            &self.group
        };
        write!(f, "{group}/{}", self.kind)?;
        if !self.name.is_empty() {
            write!(f, " name {}", self.name)?;
        }
        Ok(())
    }
}

/// One `syncWindows[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncWindow {
    /// `allow` or `deny`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// A cron schedule.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub schedule: String,
    /// A Go duration (`1h`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub duration: String,
    /// `applications`: the Applications it applies to, by name (globs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applications: Vec<String>,
    /// `namespaces`: the destination namespaces it applies to (globs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// `clusters`: the destination clusters it applies to, by name or server (globs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
    /// `manualSync`: a manual sync may run while the window blocks syncs.
    #[serde(skip_serializing_if = "is_false")]
    pub manual_sync: bool,
    /// `timeZone`: the IANA time zone `schedule` is read in (default: UTC).
    #[serde(rename = "timeZone", skip_serializing_if = "String::is_empty")]
    pub time_zone: String,
    /// Every matcher given must match (default: any).
    #[serde(skip_serializing_if = "is_false")]
    pub and_operator: bool,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `orphanedResources`: warn about (or ignore) namespace resources no Application tracks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OrphanedResources {
    /// `warn`: give Applications the `OrphanedResourceWarning` condition; absent: yes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warn: Option<bool>,
    /// `ignore`: resources never reported as orphaned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<GroupKindPattern>,
    /// Fields not modelled, kept for writing back.
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_rfc3339;
    use serde_json::json;

    fn yaml(text: &str) -> Value {
        serde_saphyr::from_str(text).expect("test YAML")
    }

    /// A full Application as Argo CD writes it (plus fields no version of Argo CD has) reads
    /// into the typed model and writes back unchanged.
    #[test]
    fn application_round_trips_with_unknown_fields() {
        let raw = yaml(include_str!("testdata/application.yaml"));
        let app = Application::from_value(&raw).unwrap();
        assert_eq!(app.to_value(), raw);

        assert_eq!(app.metadata.name, "guestbook");
        assert_eq!(app.metadata.extra["generation"], 12);
        let spec = &app.spec;
        assert_eq!(spec.project, "team-a");
        let source = app.first_source().unwrap();
        assert_eq!(source.target_revision, "main");
        assert_eq!(source.directory.as_ref().unwrap().include, "{*.yaml,*.yml}");
        assert_eq!(spec.destination.namespace, "guestbook");
        let policy = spec.sync_policy.as_ref().unwrap();
        let auto = policy.automated.as_ref().unwrap();
        assert!(auto.prune && auto.self_heal && auto.allow_empty && !auto.is_enabled());
        assert!(app.automated().is_none(), "enabled: false");
        assert_eq!(
            policy.sync_options,
            ["CreateNamespace=true", "ServerSideApply=true"]
        );
        let retry = policy.retry.as_ref().unwrap();
        assert_eq!(retry.limit, Some(5));
        assert_eq!(
            retry.backoff.as_ref().unwrap().max_duration,
            Some(json!("3m"))
        );
        assert_eq!(
            policy.managed_namespace_metadata.as_ref().unwrap().labels["tier"],
            "web"
        );
        assert_eq!(
            spec.ignore_differences[1].managed_fields_managers,
            ["kube-controller-manager"]
        );
        assert_eq!(spec.info[0].name, "docs");
        assert_eq!(spec.revision_history_limit, Some(3));
        assert_eq!(spec.extra["futureSpecField"], json!({"enabled": true}));
        let op = app.operation.as_ref().unwrap();
        assert_eq!(op.initiated_by.username, "admin");
        assert_eq!(op.sync.as_ref().unwrap().resources[0].name, "guestbook-ui");

        let st = &app.status;
        assert_eq!(
            (st.sync.status.as_str(), st.health.status.as_str()),
            ("Synced", "Progressing")
        );
        assert_eq!(
            st.sync
                .compared_to
                .as_ref()
                .unwrap()
                .ignore_differences
                .len(),
            1
        );
        assert!(st.resources[1].hook && st.resources[1].requires_pruning);
        assert_eq!(st.resources[1].sync_wave, Some(-1));
        assert_eq!(st.history[0].id, 3);
        assert_eq!(
            st.history[0].deploy_started_at,
            Some(parse_rfc3339("2026-09-21T07:59:58Z").unwrap())
        );
        assert_eq!(st.history[1].revisions, ["1.2.3", "abc1234"]);
        assert_eq!(st.history[1].sources[1].extra["ref"], "values");
        assert!(st.history[1].initiated_by.automated);
        assert_eq!(st.conditions[0].type_name, "SyncError");
        assert_eq!(
            st.reconciled_at,
            Some(parse_rfc3339("2026-09-22T20:00:00Z").unwrap())
        );
        let os = st.operation_state.as_ref().unwrap();
        assert_eq!(os.phase, "Succeeded");
        assert_eq!(os.retry_count, Some(1));
        let sync_op = os.operation.sync.as_ref().unwrap();
        assert!(sync_op.prune && sync_op.dry_run);
        assert_eq!(sync_op.auto_heal_attempts_count, Some(2));
        let result = os.sync_result.as_ref().unwrap();
        assert_eq!(result.resources[1].hook_type, "PreSync");
        assert_eq!(result.source.as_ref().unwrap().path, "guestbook");
        assert_eq!(
            os.finished_at
                .unwrap()
                .duration_since(os.started_at.unwrap())
                .unwrap()
                .as_secs(),
            6
        );
        assert_eq!(st.source_types, ["Directory"]);
        assert_eq!(st.summary.external_urls, ["https://guestbook.example"]);
        assert_eq!(st.extra["controllerNamespace"], "argocd");
    }

    /// The read-modify-write the sync runner does: a history entry appended, the rest kept.
    #[test]
    fn appending_history_keeps_what_plumb_does_not_model() {
        let raw = yaml(include_str!("testdata/application.yaml"));
        let mut app = Application::from_value(&raw).unwrap();
        let at = parse_rfc3339("2026-09-23T10:00:00Z").unwrap();
        let entry = HistoryEntry {
            id: 5,
            ..HistoryEntry::new(
                "d00d",
                AppSource::default(),
                at,
                at,
                InitiatedBy::user("alice"),
            )
        };
        app.status.history.push(entry);
        let out = app.to_value();
        let history = out["status"]["history"].as_array().unwrap();
        assert_eq!(history.len(), 3);
        assert_eq!(
            history[1], raw["status"]["history"][1],
            "multi-source entry intact"
        );
        assert_eq!(
            history[2],
            json!({"revision": "d00d", "deployedAt": "2026-09-23T10:00:00Z", "id": 5,
                   "source": {"repoURL": ""}, "deployStartedAt": "2026-09-23T10:00:00Z",
                   "initiatedBy": {"username": "alice"}})
        );
        let mut rest = out.clone();
        rest["status"]["history"] = raw["status"]["history"].clone();
        assert_eq!(rest, raw);
    }

    #[test]
    fn app_project_round_trips_with_unknown_fields() {
        let raw = yaml(include_str!("testdata/appproject.yaml"));
        let p = AppProject::from_value(&raw).unwrap();
        assert_eq!(p.to_value(), raw);
        let s = &p.spec;
        assert_eq!(s.source_repos.len(), 2);
        assert_eq!(s.destinations[1].name, "staging");
        assert_eq!(
            s.cluster_resource_whitelist.as_ref().unwrap()[0].kind,
            "Namespace"
        );
        assert_eq!(
            s.cluster_resource_blacklist[0].group,
            "rbac.authorization.k8s.io"
        );
        assert_eq!(
            s.namespace_resource_whitelist.as_ref().unwrap()[0].group,
            "apps"
        );
        assert_eq!(s.namespace_resource_blacklist[0].kind, "ResourceQuota");
        assert_eq!(s.source_namespaces, ["team-a-apps"]);
        let w = &s.sync_windows[0];
        assert_eq!((w.kind.as_str(), w.duration.as_str()), ("deny", "8h"));
        assert!(w.manual_sync);
        assert_eq!(w.time_zone, "Europe/Berlin");
        assert!(w.and_operator);
        assert_eq!(s.orphaned_resources.as_ref().unwrap().warn, Some(true));
        assert_eq!(s.roles[0]["name"], "ci");
        assert!(s.permit_only_project_scoped_clusters);
        assert_eq!(
            s.orphaned_resources.as_ref().unwrap().ignore[0].name,
            "kube-root-ca.crt"
        );
        // An absent whitelist and an empty one are different, and both write back as read.
        let mut raw = raw.clone();
        raw["spec"]["namespaceResourceWhitelist"] = json!([]);
        raw["spec"]
            .as_object_mut()
            .unwrap()
            .remove("clusterResourceWhitelist");
        let p = AppProject::from_value(&raw).unwrap();
        assert_eq!(p.spec.namespace_resource_whitelist, Some(Vec::new()));
        assert_eq!(p.spec.cluster_resource_whitelist, None);
        assert_eq!(p.to_value(), raw);
    }

    #[test]
    fn read_without_status_reads_the_rest_and_names_its_errors() {
        let app = json!({"kind": "Application", "metadata": {"name": "a"},
            "spec": {"project": "p", "destination": {"namespace": "n"}},
            "operation": {"sync": {"revision": "r1"}},
            "status": {"history": [{"id": 0, "deployedAt": "last week"}]}});
        let read = Application::read_without_status(&app).unwrap();
        assert_eq!(read.metadata.name, "a");
        assert_eq!(read.spec.project, "p");
        assert!(read.operation.is_some());
        assert_eq!(read.status, ApplicationStatus::default());
        // The rest read as `from_value` reads it, with or without a status.
        let mut without = app.clone();
        without.as_object_mut().unwrap().remove("status");
        assert_eq!(read, Application::from_value(&without).unwrap());
        assert_eq!(Application::read_without_status(&without).unwrap(), read);
        let mut bad = app;
        bad["spec"]["syncPolicy"] = json!({"automated": {"prune": "yes"}});
        assert_eq!(
            Application::read_without_status(&bad).unwrap_err().path,
            "spec.syncPolicy.automated.prune"
        );
    }

    #[test]
    fn errors_name_the_field() {
        let bad = json!({"kind": "Application", "metadata": {"name": "a"},
            "spec": {"syncPolicy": {"automated": {"prune": "yes"}}}});
        assert_eq!(
            Application::from_value(&bad).unwrap_err().to_string(),
            "spec.syncPolicy.automated.prune: invalid type: string \"yes\", expected a boolean"
        );
        assert_eq!(
            ApplicationSpec::of(&bad).unwrap_err().path,
            "spec.syncPolicy.automated.prune"
        );
        let bad = json!({"status": {"history": [{"id": 0, "deployedAt": "last week"}]}});
        assert_eq!(
            Application::from_value(&bad).unwrap_err().to_string(),
            "status.history[0].deployedAt: invalid RFC 3339 timestamp \"last week\""
        );
        assert!(
            Application::from_value(&json!([]))
                .unwrap_err()
                .path
                .is_empty()
        );
    }

    /// Readers that must not fail keep every status field that reads.
    #[test]
    fn lenient_reads_drop_only_the_odd_field() {
        let app = json!({"kind": "Application", "metadata": {"name": "a"},
            "spec": {"project": 7},
            "status": {"sync": {"status": "OutOfSync", "revision": "b5e2be1"},
                "health": "Healthy", "reconciledAt": "yesterday",
                "history": [{"id": 0, "revision": "b5e2be1", "deployedAt": "2026-09-22T19:57:06Z"}]}});
        let (status, errors) = ApplicationStatus::read_lenient(&app);
        assert_eq!(status.sync.revision, "b5e2be1");
        assert_eq!(status.health, HealthStatus::default());
        assert_eq!(status.history.len(), 1);
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["status.health", "status.reconciledAt"]);
        let (whole, errors) = Application::read_lenient(&app);
        assert_eq!(whole.metadata.name, "a");
        assert_eq!(whole.spec, ApplicationSpec::default());
        assert_eq!(whole.status, status);
        assert_eq!(errors.len(), 3);
        assert_eq!(errors[2].path, "spec.project");
    }

    /// Applies `patch` (RFC 7396, by the `json-patch` crate) to `doc`.
    fn applied(doc: &Value, patch: &Value) -> Value {
        let mut out = doc.clone();
        json_patch::merge(&mut out, patch);
        out
    }

    /// The merge patch from old to new: cleared fields become null, nested objects are
    /// patched key by key, lists and changes of type are replaced whole, equal values are left
    /// out; applying it to old gives new.
    #[test]
    fn merge_patch_turns_old_into_new() {
        let table = [
            (json!({"a": 1, "b": 2}), json!({"a": 1, "b": 2}), None),
            (
                json!({"a": 1, "b": 2}),
                json!({"a": 1}),
                Some(json!({"b": null})),
            ),
            (
                json!({"op": {"phase": "Running", "finishedAt": "t", "sync": {"hook": {}, "prune": true}}}),
                json!({"op": {"phase": "Failed", "sync": {"apply": {}, "prune": true}}}),
                Some(json!({"op": {"phase": "Failed", "finishedAt": null,
                                   "sync": {"hook": null, "apply": {}}}})),
            ),
            (
                json!({"l": [1, 2, 3]}),
                json!({"l": [1, 3]}),
                Some(json!({"l": [1, 3]})),
            ),
            (json!({"l": [{"a": 1}]}), json!({"l": [{"a": 1}]}), None),
            (
                json!({"h": "Healthy"}),
                json!({"h": {"status": "Healthy"}}),
                Some(json!({"h": {"status": "Healthy"}})),
            ),
            (
                json!({"h": {"status": "x"}}),
                json!({"h": 3}),
                Some(json!({"h": 3})),
            ),
            (
                json!({"a": {"b": 1}}),
                json!({"a": {"b": 1, "c": null}}),
                None,
            ),
            (
                json!({"a": {"b": 1}}),
                json!({"a": null}),
                Some(json!({"a": null})),
            ),
            (
                json!({}),
                json!({"n": {"x": null, "y": [null]}}),
                Some(json!({"n": {"y": [null]}})),
            ),
            (json!({"a": null}), json!({}), None),
        ];
        for (old, new, want) in table {
            let patch = merge_patch(&old, &new);
            assert_eq!(patch, want, "{old} -> {new}");
            // Compared without null members (a merge patch reads them as "absent").
            let result = applied(&old, &patch.unwrap_or(json!({})));
            assert_eq!(
                applied(&json!({}), &result),
                applied(&json!({}), &new),
                "{old} -> {new}"
            );
        }
    }

    /// A status write: a field the new status clears is null in the patch, fields plumb does
    /// not model (at any depth) are not touched, a field the lenient read dropped is cleared
    /// unless set, and applying the patch to the stored object gives the new status.
    #[test]
    fn status_patches_clear_what_the_model_clears_and_keep_unknown_fields() {
        let app = json!({"metadata": {"name": "a"}, "status": {
            "futureField": {"x": 1},
            "health": {"status": "Degraded", "message": "m", "vendorNote": "kept"},
            "sync": {"status": "OutOfSync", "revision": "r1", "revisions": ["r1"]},
            "resources": [{"kind": "ConfigMap", "name": "a", "status": "OutOfSync"}],
            "reconciledAt": "yesterday",
            "operationState": {"phase": "Running", "message": "m", "startedAt": "2026-09-22T19:58:00Z",
                               "operation": {"sync": {"syncStrategy": {"hook": {}}, "resources": [{"kind": "ConfigMap", "name": "a"}]}},
                               "syncResult": {"revision": "r1", "extra": true}}}});
        let (mut status, stored) = ApplicationStatus::stored(&app);
        assert_eq!(
            stored["reconciledAt"], "yesterday",
            "dropped by the read, kept to clear"
        );
        let op = status.operation_state.as_mut().unwrap();
        op.phase = "Succeeded".into();
        op.message = String::new();
        op.finished_at = parse_rfc3339("2026-09-22T19:58:11Z").ok();
        let sync = op.operation.sync.as_mut().unwrap();
        sync.sync_strategy = Some(json!({"apply": {}}));
        sync.resources.clear();
        status.health.status = "Healthy".into();
        status.sync.status = "Synced".into();
        status.resources.clear();
        let patch = status.patch_from(&stored);
        assert_eq!(
            patch,
            json!({"status": {
                "resources": null,
                "sync": {"status": "Synced"},
                "health": {"status": "Healthy"},
                "reconciledAt": null,
                "operationState": {"phase": "Succeeded", "message": null,
                    "finishedAt": "2026-09-22T19:58:11Z",
                    "operation": {"sync": {"syncStrategy": {"apply": {}, "hook": null}, "resources": null}}}}})
        );
        let written = applied(&app, &patch);
        assert_eq!(written["status"]["futureField"], json!({"x": 1}));
        assert_eq!(written["status"]["health"]["vendorNote"], "kept");
        assert_eq!(written["status"]["sync"]["revisions"], json!(["r1"]));
        assert_eq!(
            written["status"]["operationState"]["syncResult"]["extra"],
            true
        );
        assert_eq!(
            ApplicationStatus::read_lenient(&written),
            (status.clone(), Vec::new())
        );
        // Nothing changed: an empty patch.
        let (same, stored) = ApplicationStatus::stored(&written);
        assert_eq!(same.patch_from(&stored), json!({"status": {}}));
    }

    /// Fields Argo CD declares `omitempty` are left out when empty, as Argo CD leaves them out;
    /// a source always has `repoURL`; `enabled: false` (a pointer in Go) is kept.
    #[test]
    fn writes_leave_out_what_argo_cd_leaves_out() {
        let app = Application::from_value(&json!({"kind": "Application",
            "metadata": {"name": "a", "labels": {}},
            "spec": {"source": {"repoURL": "r", "path": "", "chart": ""},
                     "syncPolicy": {"automated": {"prune": false, "enabled": false}, "syncOptions": []}},
            "status": {}}))
        .unwrap();
        assert_eq!(
            app.to_value(),
            json!({"kind": "Application", "metadata": {"name": "a"},
                   "spec": {"source": {"repoURL": "r"}, "destination": {},
                            "syncPolicy": {"automated": {"enabled": false}}}})
        );
    }
}
