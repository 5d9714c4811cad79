//! plumb's object model: the vocabulary every other crate speaks.
//!
//! Objects are `serde_json::Value`s (maps are sorted, as Go's `encoding/json`
//! sorts them, which is what Argo CD's byte comparison relies on). This crate
//! adds what identifies and addresses them:
//!
//! - [`ResourceKey`] / [`GroupKind`]: how live and desired objects pair up
//!   (group, kind, namespace, name; version ignored, as in Argo CD);
//! - [`pointer::JsonPointer`]: RFC 6901 pointers, for `ignoreDifferences.jsonPointers`;
//! - [`fieldpath::FieldSet`]: `managedFields[].fieldsV1` parsed into a trie;
//! - [`schema::Schema`]: the Kubernetes schema facts (merge keys, list types,
//!   quantities, pointer-ness) generated from a real API server's OpenAPI document;
//! - [`quantity`]: Kubernetes resource quantities and their canonical form;
//! - [`argo`]: the Argo CD `Application` and `argocd-cm` settings plumb reads, and
//!   [`argo::model`]: the typed `Application` / `AppProject` (spec and status) every crate
//!   reads and writes them through;
//! - [`origin`]: source locations (file:line) of rendered values, and
//!   [`origin::ELEMENT_KEYS`], the keys that identify a list element;
//! - [`limits`]: every limit on input (file size, name length, YAML aliases, jq), in one place;
//! - [`project`]: an `AppProject`'s policy, decided as Argo CD decides it; [`clusters`]:
//!   destination clusters from Argo CD's cluster Secrets;
//! - shared utilities, once: [`time`] (RFC 3339 via `jiff`), [`duration`] (Go durations),
//!   [`glob`] (Argo CD's globs via `globset`), [`parallel`] (the fan-out over cores).
//!
//! No I/O, no async, no Kubernetes client.
//!
//! ```
//! use plumb_core::ResourceKey;
//! let obj = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
//!     "metadata": {"name": "web", "namespace": "prod"}});
//! let key = ResourceKey::of(&obj).unwrap();
//! assert_eq!(key.to_string(), "apps/Deployment prod/web");
//! ```

#![warn(missing_docs)]

pub mod argo;
pub mod clusters;
pub mod duration;
pub mod fieldpath;
pub mod glob;
mod key;
pub mod limits;
pub mod object;
pub mod origin;
pub mod parallel;
pub mod pointer;
pub mod project;
pub mod quantity;
pub mod schema;
pub mod selector;
pub mod time;
pub mod tree;
pub mod value;

pub use key::{GroupKind, ResourceKey, group_of_api_version};

/// The annotation `kubectl apply` (and Argo CD's client-side apply) stores the last applied desired state in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Argo CD's label-based tracking (the default `application.instanceLabelKey`).
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Argo CD's annotation-based tracking id: `<app>:<group>/<kind>:<namespace>/<name>`.
pub const TRACKING_ID_ANNOTATION: &str = "argocd.argoproj.io/tracking-id";
/// Per-object or per-Application compare options (`ServerSideDiff=true`, `IgnoreExtraneous`, ...).
pub const COMPARE_OPTIONS_ANNOTATION: &str = "argocd.argoproj.io/compare-options";
/// Per-object sync options (`ServerSideApply=true`, `Prune=false`, ...).
pub const SYNC_OPTIONS_ANNOTATION: &str = "argocd.argoproj.io/sync-options";
/// Argo CD's hook annotation (`PreSync`, `Sync`, `PostSync`, `SyncFail`, `Skip`).
pub const HOOK_ANNOTATION: &str = "argocd.argoproj.io/hook";
/// Helm's hook annotation, honoured by Argo CD when its own is absent.
pub const HELM_HOOK_ANNOTATION: &str = "helm.sh/hook";
/// The API group of plumb's own Applications and AppProjects.
pub const PLUMB_GROUP: &str = "plumb.dev";
/// The API group of Argo CD's Applications and AppProjects.
pub const ARGO_GROUP: &str = "argoproj.io";
/// The namespace `plumb app` looks for Applications in unless told (`--app-namespace`).
pub const PLUMB_APP_NAMESPACE: &str = "plumb";
/// Argo CD's control namespace as it installs: its CLI names apps there without a namespace.
pub const ARGOCD_NAMESPACE: &str = "argocd";
/// Set by `plumb snapshot` on Secrets whose values it removed: their values are unknown,
/// not empty, and a diff takes git's values for them.
pub const REDACTED_ANNOTATION: &str = "plumb.dev/values-redacted";

/// `url` with its credentials hidden: the whole user-info part (`https://TOKEN@host`,
/// `https://user:secret@host` → `https://***@host`). Every message naming a URL goes through it.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}{path}"),
        None => url.to_string(),
    }
}
