//! Snapshots: the live state a diff needs, written as YAML files, so that
//! `plumb diff` can run later (or elsewhere) without the cluster.
//!
//! Secret values are emptied (keys kept, the last-applied copy too) before anything is
//! written: a snapshot never holds one.

use crate::Cluster;
use crate::discovery::{ApiResources, ResourceInfo};
use crate::error::{ClusterError, Result};
use crate::live::{ListRequest, is_tracked};
use plumb_core::{INSTANCE_LABEL, LAST_APPLIED_ANNOTATION, ResourceKey, argo::Application};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a snapshot kind is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Everywhere (all namespaces, or cluster scope).
    All,
    /// In the snapshot's namespaces (everywhere when it has none).
    Namespaces,
}

/// The kinds a snapshot always takes (when served), besides the app's objects:
/// what changes how the server or Argo CD treats the app's objects.
const CONTEXT_KINDS: &[(&str, &str, Scope)] = &[
    // Namespace labels select webhooks and policies.
    ("", "Namespace", Scope::All),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        Scope::All,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        Scope::All,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicy",
        Scope::All,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
        Scope::All,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        Scope::All,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        Scope::All,
    ),
    // HPAs own spec.replicas of their targets.
    ("autoscaling", "HorizontalPodAutoscaler", Scope::Namespaces),
    // Schemas of custom resources.
    (
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        Scope::All,
    ),
    ("argoproj.io", "Application", Scope::All),
    ("plumb.dev", "Application", Scope::All),
    ("kyverno.io", "ClusterPolicy", Scope::All),
    ("kyverno.io", "Policy", Scope::All),
    ("mutations.gatekeeper.sh", "Assign", Scope::All),
    ("mutations.gatekeeper.sh", "AssignMetadata", Scope::All),
    ("mutations.gatekeeper.sh", "AssignImage", Scope::All),
    ("mutations.gatekeeper.sh", "ModifySet", Scope::All),
];

/// The kinds a diagnosis reads besides the app's own objects (namespaces, admission
/// webhooks and policies, HPAs, CRDs, policy engines' mutators): what a snapshot saves as
/// context, and what the controller's doctor reads from its watch cache.
pub fn context_kinds() -> impl Iterator<Item = plumb_core::GroupKind> {
    CONTEXT_KINDS
        .iter()
        .map(|(g, k, _)| plumb_core::GroupKind::new(*g, *k))
}

/// Kinds never scanned for app objects: high-volume records, not desired state, and
/// objects the control plane derives from others (Endpoints copy a Service's labels), as
/// Argo CD's default `resource.exclusions` leave them out.
pub(crate) const NEVER_TRACKED: &[(&str, &str)] = &[
    ("", "Event"),
    ("events.k8s.io", "Event"),
    ("coordination.k8s.io", "Lease"),
    ("", "Endpoints"),
    ("discovery.k8s.io", "EndpointSlice"),
];

/// What [`Cluster::snapshot`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotSummary {
    /// The output directory.
    pub dir: PathBuf,
    /// Files written, relative to `dir`, sorted.
    pub files: Vec<PathBuf>,
    /// Objects per `group/kind` (`/Namespace` for the core group).
    pub kinds: BTreeMap<String, usize>,
    /// How many Secrets had their values removed.
    pub secrets_redacted: usize,
    /// LISTs that failed without failing the snapshot (forbidden, or an
    /// aggregated API that is down): `resource [in namespace]: reason`.
    pub skipped: Vec<String>,
}

impl SnapshotSummary {
    /// Number of objects written.
    pub fn objects(&self) -> usize {
        self.files.len()
    }
}

/// Replaces a Secret's values by empty strings, keeping the keys: `data`,
/// `stringData`, and the same inside the `last-applied-configuration`
/// annotation (which holds the values client-side apply sent). Returns whether
/// `obj` is a (core group) Secret. Other objects are left alone.
pub fn redact_secret(obj: &mut Value) -> bool {
    let is_secret = obj.get("kind").and_then(Value::as_str) == Some("Secret")
        && obj.get("apiVersion").and_then(Value::as_str) == Some("v1");
    if !is_secret {
        return false;
    }
    blank_values(obj);
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(
                plumb_core::REDACTED_ANNOTATION.into(),
                Value::String("true".into()),
            );
        }
    }
    if let Some(annotation) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(|a| a.get_mut(LAST_APPLIED_ANNOTATION))
    {
        let redacted = match annotation.as_str().map(serde_json::from_str::<Value>) {
            Some(Ok(mut applied)) => {
                blank_values(&mut applied);
                serde_json::to_string(&applied).unwrap_or_default()
            }
            // Unreadable: drop it whole rather than risk leaking a value.
            _ => String::new(),
        };
        *annotation = Value::String(redacted);
    }
    true
}

/// `data` and `stringData` values → `""`.
fn blank_values(secret: &mut Value) {
    for field in ["data", "stringData"] {
        match secret.get_mut(field) {
            Some(Value::Object(map)) => {
                for value in map.values_mut() {
                    *value = Value::String(String::new());
                }
            }
            Some(Value::Null) | None => {}
            // Not a map (invalid, but never write it out).
            Some(other) => *other = Value::Object(Default::default()),
        }
    }
}

/// A file-name-safe path segment (object names cannot contain `/`, but be sure).
fn segment(s: &str) -> String {
    let cleaned = s.replace(['/', '\\'], "_");
    match cleaned.as_str() {
        "" | "." | ".." => format!("_{cleaned}"),
        _ => cleaned,
    }
}

/// `<group or core>/<Kind>/<namespace>/<name>.yaml`, or without the namespace
/// for cluster-scoped objects.
pub(crate) fn snapshot_path(key: &ResourceKey) -> PathBuf {
    let mut path = PathBuf::from(if key.group.is_empty() {
        "core".to_string()
    } else {
        segment(&key.group)
    });
    path.push(segment(&key.kind));
    if !key.namespace.is_empty() {
        path.push(segment(&key.namespace));
    }
    path.push(format!("{}.yaml", segment(&key.name)));
    path
}

/// The LISTs of a snapshot, each with whether its items are filtered to the
/// app's objects.
fn plan(
    resources: &ApiResources,
    app: Option<&str>,
    namespaces: &[String],
) -> Vec<(ListRequest, bool)> {
    let mut plan: Vec<(ListRequest, bool)> = Vec::new();
    let mut push = |info: &ResourceInfo, scope: Scope, tracked_only: bool| {
        let per_namespace = info.namespaced && scope == Scope::Namespaces && !namespaces.is_empty();
        if per_namespace {
            for ns in namespaces {
                plan.push((
                    ListRequest {
                        info: info.clone(),
                        namespace: Some(ns.clone()),
                        selector: None,
                    },
                    tracked_only,
                ));
            }
        } else {
            plan.push((
                ListRequest {
                    info: info.clone(),
                    namespace: None,
                    selector: None,
                },
                tracked_only,
            ));
        }
    };
    let is_context = |info: &ResourceInfo| {
        CONTEXT_KINDS
            .iter()
            .any(|(g, k, _)| *g == info.group && *k == info.kind)
    };
    for (group, kind, scope) in CONTEXT_KINDS {
        // Kinds the server does not serve are skipped silently.
        if let Some(info) = resources.get(group, kind).filter(|i| i.supports("list")) {
            push(info, *scope, false);
        }
    }
    // The app's own objects: every listable kind, filtered by tracking. Without
    // an app, every object of the namespaces (cluster-scoped kinds are then not
    // scanned: there is nothing to tell which would matter).
    if app.is_some() || !namespaces.is_empty() {
        for info in resources.iter() {
            let never = NEVER_TRACKED
                .iter()
                .any(|(g, k)| *g == info.group && *k == info.kind);
            if never || is_context(info) || !info.supports("list") {
                continue;
            }
            if app.is_none() && !info.namespaced {
                continue;
            }
            push(info, Scope::Namespaces, app.is_some());
        }
    }
    plan
}

impl Cluster {
    /// Writes the live state a diff of `app` needs under `out`, one YAML file
    /// per object at `<group or core>/<Kind>/<namespace>/<name>.yaml`
    /// (`<group or core>/<Kind>/<name>.yaml` for cluster-scoped objects),
    /// `managedFields` kept:
    ///
    /// - the objects `app` tracks (label `app.kubernetes.io/instance=<name>` or
    ///   tracking-id annotation `<name>:...`), of every listable kind, in
    ///   `namespaces` plus the app's destination namespace (everywhere when that
    ///   leaves none); cluster-scoped tracked objects too. Without an app: every
    ///   object in `namespaces`;
    /// - Namespaces (all), mutating/validating webhook configurations and
    ///   admission policies with their bindings, HorizontalPodAutoscalers (in
    ///   the namespaces), CRDs, Argo CD (`argoproj.io`) and plumb (`plumb.dev`)
    ///   Applications, Kyverno policies and Gatekeeper mutators: those the
    ///   server serves (others are skipped silently).
    ///
    /// Secrets keep their keys but not their values ([`redact_secret`]).
    /// Files already in `out` are not removed: pass an empty directory.
    /// A LIST that is forbidden or fails on the server is recorded in
    /// [`SnapshotSummary::skipped`]; an unreachable server fails the snapshot.
    pub async fn snapshot(
        &self,
        app: Option<&Application>,
        namespaces: &[String],
        out: &Path,
    ) -> Result<SnapshotSummary> {
        let resources = self.discover().await?;
        let mut namespaces: Vec<String> = namespaces.to_vec();
        if let Some(ns) = app.and_then(|a| a.destination_namespace.clone()) {
            namespaces.push(ns);
        }
        namespaces.sort();
        namespaces.dedup();
        let app_name = app.map(|a| a.name.as_str());

        let plan = plan(&resources, app_name, &namespaces);
        let (requests, filters): (Vec<ListRequest>, Vec<bool>) = plan.into_iter().unzip();
        let results = self.list_each(requests.clone()).await;

        let mut summary = SnapshotSummary {
            dir: out.to_path_buf(),
            ..Default::default()
        };
        let mut objects: BTreeMap<PathBuf, Value> = BTreeMap::new();
        for ((request, tracked_only), result) in requests.iter().zip(filters).zip(results) {
            let items = match result {
                Ok(items) => items,
                Err(e @ ClusterError::Unreachable { .. }) => return Err(e),
                Err(e) => {
                    let place = match &request.namespace {
                        Some(ns) => format!(" in namespace {ns}"),
                        None => String::new(),
                    };
                    summary
                        .skipped
                        .push(format!("{}{place}: {e}", request.info.resource_name()));
                    continue;
                }
            };
            for mut obj in items {
                if tracked_only && !app_name.is_some_and(|a| is_tracked(&obj, a, INSTANCE_LABEL)) {
                    continue;
                }
                let Some(key) = ResourceKey::of(&obj) else {
                    continue;
                };
                let path = snapshot_path(&key);
                if objects.contains_key(&path) {
                    continue;
                }
                if redact_secret(&mut obj) {
                    summary.secrets_redacted += 1;
                }
                *summary
                    .kinds
                    .entry(format!("{}/{}", key.group, key.kind))
                    .or_default() += 1;
                objects.insert(path, obj);
            }
        }

        summary.files = objects.keys().cloned().collect();
        let out = out.to_path_buf();
        tokio::task::spawn_blocking(move || write_all(&out, objects))
            .await
            .map_err(|e| ClusterError::Io {
                path: summary.dir.display().to_string(),
                reason: e.to_string(),
            })??;
        Ok(summary)
    }
}

/// Writes each object as YAML at its path under `out`.
fn write_all(out: &Path, objects: BTreeMap<PathBuf, Value>) -> Result<()> {
    let io_error = |path: &Path, e: &dyn std::fmt::Display| ClusterError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    for (relative, obj) in objects {
        let path = out.join(&relative);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io_error(dir, &e))?;
        }
        let yaml = serde_saphyr::to_string(&obj).map_err(|e| io_error(&path, &e))?;
        std::fs::write(&path, yaml).map_err(|e| io_error(&path, &e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_values_are_blanked_everywhere() {
        let applied = json!({"apiVersion": "v1", "kind": "Secret", "data": {"password": "c2VjcmV0"},
            "stringData": {"token": "hunter2"}, "metadata": {"name": "s"}});
        let mut secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "a", "annotations": {
                LAST_APPLIED_ANNOTATION: applied.to_string(), "other": "kept"}},
            "data": {"password": "c2VjcmV0", "user": "YWRtaW4="},
            "type": "Opaque",
        });
        assert!(redact_secret(&mut secret));
        assert_eq!(secret["data"], json!({"password": "", "user": ""}));
        assert_eq!(secret["type"], "Opaque");
        assert_eq!(secret["metadata"]["annotations"]["other"], "kept");
        let text = secret["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
            .as_str()
            .unwrap();
        assert!(!text.contains("c2VjcmV0") && !text.contains("hunter2"));
        let back: Value = serde_json::from_str(text).unwrap();
        assert_eq!(back["data"], json!({"password": ""}));
        assert_eq!(back["stringData"], json!({"token": ""}));
    }

    #[test]
    fn unreadable_last_applied_is_dropped_and_non_secrets_untouched() {
        let mut secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s",
            "annotations": {LAST_APPLIED_ANNOTATION: "{not json c2VjcmV0"}}});
        redact_secret(&mut secret);
        assert_eq!(
            secret["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
            ""
        );
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}});
        assert!(!redact_secret(&mut cm));
        assert_eq!(cm["data"]["a"], "b");
    }

    #[test]
    fn paths() {
        let key = |g: &str, k: &str, ns: &str, n: &str| ResourceKey {
            group: g.into(),
            kind: k.into(),
            namespace: ns.into(),
            name: n.into(),
        };
        assert_eq!(
            snapshot_path(&key("apps", "Deployment", "prod", "web")),
            PathBuf::from("apps/Deployment/prod/web.yaml")
        );
        assert_eq!(
            snapshot_path(&key("", "Namespace", "", "prod")),
            PathBuf::from("core/Namespace/prod.yaml")
        );
        assert_eq!(
            snapshot_path(&key(
                "rbac.authorization.k8s.io",
                "ClusterRole",
                "",
                "system:x"
            )),
            PathBuf::from("rbac.authorization.k8s.io/ClusterRole/system:x.yaml")
        );
    }
}
