//! Orphaned resources, as Argo CD finds them for a project with `spec.orphanedResources`:
//! the top-level objects of the app's destination namespace that no Application tracks.
//!
//! [`find`] is the whole decision, pure: given the project, the destination namespace, the
//! app's own resources (desired and live) and the live objects the caller holds (the
//! controller's watch cache: every namespaced kind it watches), it keeps an object when
//!
//! - it is in the destination namespace (an app without a destination namespace has none);
//! - it has no `ownerReferences` (a ReplicaSet is its Deployment's, a Pod its ReplicaSet's);
//! - it is not one of the app's resources, and it is not tracked by this app or by another
//!   Application that exists: the owner is read through the configured tracking method
//!   ([`crate::options::tracked_by_other`]: the tracking-id annotation naming the object
//!   itself, or the instance label under label tracking), as Argo CD does. So an
//!   `app.kubernetes.io/instance` label (Helm puts one on everything) means nothing under
//!   annotation tracking, and an object tracked by a deleted Application is an orphan;
//! - the project permits its kind in a namespace (a kind the project refuses is an
//!   administrator's, not the team's);
//! - it is not one of the objects Kubernetes puts in every namespace — the `default`
//!   ServiceAccount, the `kube-root-ca.crt` ConfigMap, the `kubernetes` Service of the
//!   `default` namespace — and `spec.orphanedResources.ignore` does not exempt it.
//!
//! [`set_condition`] writes the result as Argo CD does: `OrphanedResourceWarning`
//! ("Application has N orphaned resources") when the project warns and there are any,
//! removed otherwise. Orphans never change the sync status and are never pruned: nothing
//! of a sync reads them.

use plumb_core::ResourceKey;
use plumb_core::argo::TrackingMethod;
use plumb_core::argo::model::Condition;
use plumb_core::project::AppProject;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::SystemTime;

/// The condition type Argo CD gives an app with orphaned resources.
pub const ORPHANED_RESOURCE_WARNING: &str = "OrphanedResourceWarning";

/// What one look at the destination namespace found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphans {
    /// Whether the project asks for the condition (`orphanedResources.warn`, default yes).
    pub warn: bool,
    /// The orphaned resources, sorted by group, kind, namespace, name.
    pub resources: Vec<ResourceKey>,
}

impl Orphans {
    /// The condition's message: Argo CD's words.
    pub fn message(&self) -> String {
        format!(
            "Application has {} orphaned resources",
            self.resources.len()
        )
    }
}

/// Who may own a live object: the app looking, the tracking method in use (`argocd-cm`'s
/// `application.resourceTrackingMethod`) and the Applications that exist (by the name the
/// tracking carries; see [`owner`] to know which to look up).
#[derive(Debug, Clone, Copy)]
pub struct Owners<'a> {
    pub app: &'a str,
    pub method: TrackingMethod,
    pub existing: &'a BTreeSet<String>,
}

/// The Application name `obj`'s tracking carries under `method` (this app's or another's),
/// `None` for an untracked or owned object.
pub fn owner(method: TrackingMethod, obj: &Value) -> Option<&str> {
    // `tracked_by_other` with no app name: any app's, read through the tracking method.
    crate::options::tracked_by_other("", method, obj).filter(|o| !o.is_empty())
}

/// The orphaned resources of an app of `project` deploying to `namespace` among `live`
/// (objects of any kind and namespace; those elsewhere are skipped). `own`: the app's own
/// resources (what it declares and what it tracks). `None` when the project does not
/// monitor orphaned resources.
pub fn find<'a>(
    project: &AppProject,
    namespace: &str,
    owners: Owners<'_>,
    own: &BTreeSet<ResourceKey>,
    live: impl IntoIterator<Item = &'a Value>,
) -> Option<Orphans> {
    let warn = project.orphans_warn()?;
    if namespace.is_empty() {
        return Some(Orphans {
            warn,
            resources: Vec::new(),
        });
    }
    let mut resources: Vec<ResourceKey> = live
        .into_iter()
        .filter(|obj| !plumb_core::argo::has_owner(obj) && !tracked(owners, obj))
        .filter_map(ResourceKey::of)
        .filter(|k| k.namespace == namespace && !own.contains(k))
        .filter(|k| {
            project
                .group_kind_permitted(&k.group, &k.kind, &k.name, true)
                .is_ok()
        })
        .filter(|k| !known_exclusion(k) && !project.orphan_ignored(&k.group, &k.kind, &k.name))
        .collect();
    resources.sort();
    resources.dedup();
    Some(Orphans { warn, resources })
}

/// Whether `obj` is this app's or an existing Application's, by the tracking method.
fn tracked(owners: Owners<'_>, obj: &Value) -> bool {
    owner(owners.method, obj).is_some_and(|o| o == owners.app || owners.existing.contains(o))
}

/// The objects Kubernetes itself creates in namespaces, never orphans (Argo CD's list).
fn known_exclusion(k: &ResourceKey) -> bool {
    k.group.is_empty()
        && matches!(
            (k.kind.as_str(), k.name.as_str(), k.namespace.as_str()),
            ("ServiceAccount", "default", _)
                | ("ConfigMap", "kube-root-ca.crt", _)
                | ("Service", "kubernetes", "default")
        )
}

/// `conditions` with the `OrphanedResourceWarning` of `found`: set when the project warns
/// and there are orphans (its `lastTransitionTime` kept while the message stays the same),
/// removed otherwise. `None` (orphans not looked at): left as they are.
pub fn set_condition(conditions: &mut Vec<Condition>, found: Option<&Orphans>, now: SystemTime) {
    let Some(found) = found else {
        return;
    };
    let wanted = (found.warn && !found.resources.is_empty()).then(|| found.message());
    let existing = conditions
        .iter()
        .position(|c| c.type_name == ORPHANED_RESOURCE_WARNING);
    match (existing, wanted) {
        (Some(i), Some(message)) if conditions[i].message == message => {}
        (Some(i), Some(message)) => {
            conditions[i].message = message;
            conditions[i].last_transition_time = Some(now);
        }
        (None, Some(message)) => conditions.push(Condition {
            type_name: ORPHANED_RESOURCE_WARNING.into(),
            message,
            last_transition_time: Some(now),
            ..Condition::default()
        }),
        (Some(_), None) => conditions.retain(|c| c.type_name != ORPHANED_RESOURCE_WARNING),
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::key;
    use serde_json::json;
    use std::time::Duration;

    fn project(spec: Value) -> AppProject {
        AppProject::from_value(&json!({"metadata": {"name": "team"}, "spec": spec})).unwrap()
    }

    fn obj(api: &str, kind: &str, ns: &str, name: &str, meta: Value) -> Value {
        let mut o = json!({"apiVersion": api, "kind": kind,
            "metadata": {"name": name, "namespace": ns}});
        if let (Some(m), Some(extra)) = (o["metadata"].as_object_mut(), meta.as_object()) {
            m.extend(extra.clone());
        }
        o
    }

    /// `web` looking, under annotation tracking (plumb's default), Application `other` exists.
    fn by_id(existing: &BTreeSet<String>) -> Owners<'_> {
        Owners {
            app: "web",
            method: TrackingMethod::Annotation,
            existing,
        }
    }

    fn names(o: &Orphans) -> Vec<String> {
        o.resources
            .iter()
            .map(|k| format!("{}/{}/{}", k.kind, k.namespace, k.name))
            .collect()
    }

    /// One namespace with every case: what is an orphan and what is not, and why.
    #[test]
    fn finds_untracked_top_level_objects_of_the_destination_namespace() {
        let live = [
            // Orphans.
            obj("v1", "ConfigMap", "web", "by-hand", json!({})),
            obj("apps/v1", "Deployment", "web", "manual", json!({})),
            obj(
                "v1",
                "Secret",
                "web",
                "empty-label",
                json!({"labels": {"app.kubernetes.io/instance": ""}}),
            ),
            obj(
                "v1",
                "ConfigMap",
                "web",
                "copied-id",
                json!({"annotations": {"argocd.argoproj.io/tracking-id": "other:/ConfigMap:web/original"}}),
            ),
            // The app's own, declared (not yet tracked) and tracked.
            obj("v1", "ConfigMap", "web", "declared", json!({})),
            obj(
                "v1",
                "Service",
                "web",
                "mine",
                json!({"labels": {"app.kubernetes.io/instance": "web"}}),
            ),
            // Another app's by annotation; the label means nothing under annotation tracking.
            obj(
                "v1",
                "ConfigMap",
                "web",
                "theirs",
                json!({"labels": {"app.kubernetes.io/instance": "other"}}),
            ),
            obj(
                "v1",
                "ConfigMap",
                "web",
                "theirs-by-id",
                json!({"annotations": {"argocd.argoproj.io/tracking-id": "other:/ConfigMap:web/theirs-by-id"}}),
            ),
            // Owned.
            obj(
                "apps/v1",
                "ReplicaSet",
                "web",
                "manual-5d8",
                json!({"ownerReferences": [{"kind": "Deployment", "name": "manual"}]}),
            ),
            // Kubernetes' own.
            obj("v1", "ServiceAccount", "web", "default", json!({})),
            obj("v1", "ConfigMap", "web", "kube-root-ca.crt", json!({})),
            // Elsewhere, and cluster-scoped.
            obj("v1", "ConfigMap", "other-ns", "by-hand", json!({})),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}}),
        ];
        let own: BTreeSet<ResourceKey> = [
            key("", "ConfigMap", "web", "declared"),
            key("", "Service", "web", "mine"),
        ]
        .into();
        let p = project(json!({"orphanedResources": {"warn": true}}));
        let other: BTreeSet<String> = ["other".to_string()].into();
        let found = find(&p, "web", by_id(&other), &own, &live).unwrap();
        assert!(found.warn);
        assert_eq!(
            names(&found),
            [
                "ConfigMap/web/by-hand",
                "ConfigMap/web/copied-id",
                "ConfigMap/web/theirs",
                "Secret/web/empty-label",
                "Deployment/web/manual",
            ]
        );
        assert_eq!(found.message(), "Application has 5 orphaned resources");

        // Application `other` deleted: what it tracked is orphaned.
        let gone = BTreeSet::new();
        let found = find(&p, "web", by_id(&gone), &own, &live).unwrap();
        assert!(names(&found).contains(&"ConfigMap/web/theirs-by-id".to_string()));
        assert_eq!(found.resources.len(), 6);
        // Label tracking: the label names the owner, the annotation means nothing.
        let label = Owners {
            method: TrackingMethod::Label,
            ..by_id(&other)
        };
        let found = names(&find(&p, "web", label, &own, &live).unwrap());
        assert!(!found.contains(&"ConfigMap/web/theirs".to_string()));
        assert!(found.contains(&"ConfigMap/web/theirs-by-id".to_string()));

        // Not monitored: nothing looked at.
        assert_eq!(
            find(&project(json!({})), "web", by_id(&other), &own, &live),
            None
        );
        // No destination namespace: none.
        assert!(
            find(&p, "", by_id(&other), &own, &live)
                .unwrap()
                .resources
                .is_empty()
        );
        // `kubernetes` is Kubernetes' only in `default`.
        let svc = [
            obj("v1", "Service", "default", "kubernetes", json!({})),
            obj("v1", "Service", "web", "kubernetes", json!({})),
        ];
        assert!(
            find(&p, "default", by_id(&other), &own, &svc)
                .unwrap()
                .resources
                .is_empty()
        );
        assert_eq!(
            names(&find(&p, "web", by_id(&other), &own, &svc).unwrap()),
            ["Service/web/kubernetes"]
        );
    }

    #[test]
    fn the_ignore_list_and_the_project_s_kinds_exempt() {
        let live = [
            obj("v1", "ConfigMap", "web", "debug-1", json!({})),
            obj("v1", "ConfigMap", "web", "keep", json!({})),
            obj("apps/v1", "Deployment", "web", "manual", json!({})),
            obj("v1", "ResourceQuota", "web", "quota", json!({})),
        ];
        let none = BTreeSet::new();
        let no_apps = BTreeSet::new();
        let p = project(json!({
            "orphanedResources": {"warn": false, "ignore": [
                {"group": "", "kind": "ConfigMap", "name": "debug-*"},
                {"group": "apps"}]},
            "namespaceResourceBlacklist": [{"group": "", "kind": "ResourceQuota"}]}));
        let found = find(&p, "web", by_id(&no_apps), &none, &live).unwrap();
        assert!(!found.warn);
        assert_eq!(names(&found), ["ConfigMap/web/keep"]);
        let white = project(json!({"orphanedResources": {},
            "namespaceResourceWhitelist": [{"group": "apps", "kind": "*"}]}));
        assert_eq!(
            names(&find(&white, "web", by_id(&no_apps), &none, &live).unwrap()),
            ["Deployment/web/manual"]
        );
    }

    #[test]
    fn the_condition_is_set_kept_and_cleared_as_argo_cd_does() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let t1 = t0 + Duration::from_secs(60);
        let other = Condition {
            type_name: "ComparisonError".into(),
            message: "x".into(),
            ..Condition::default()
        };
        let found = |warn: bool, n: usize| Orphans {
            warn,
            resources: (0..n)
                .map(|i| key("", "ConfigMap", "web", &i.to_string()))
                .collect(),
        };
        let mut c = vec![other.clone()];
        set_condition(&mut c, None, t0);
        assert_eq!(c, std::slice::from_ref(&other), "not looked at: untouched");
        set_condition(&mut c, Some(&found(true, 1)), t0);
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].type_name, "OrphanedResourceWarning");
        assert_eq!(c[1].message, "Application has 1 orphaned resources");
        assert_eq!(c[1].last_transition_time, Some(t0));
        // The same finding later keeps its time; another count is a new transition.
        set_condition(&mut c, Some(&found(true, 1)), t1);
        assert_eq!(c[1].last_transition_time, Some(t0));
        set_condition(&mut c, Some(&found(true, 2)), t1);
        assert_eq!(c[1].message, "Application has 2 orphaned resources");
        assert_eq!(c[1].last_transition_time, Some(t1));
        // `warn: false`, or none left: removed, the other condition kept.
        set_condition(&mut c, Some(&found(false, 2)), t1);
        assert_eq!(c, std::slice::from_ref(&other));
        set_condition(&mut c, Some(&found(true, 1)), t1);
        set_condition(&mut c, Some(&found(true, 0)), t1);
        assert_eq!(c, [other]);
    }
}
