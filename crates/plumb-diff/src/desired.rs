//! Prepared desired objects: the pipeline's step between rendering and comparing, the same
//! for `plumb diff`/`doctor` and the controller. Each rendered object is keyed, gets the
//! destination namespace when it is namespaced and has none (a cluster-scoped one loses any
//! namespace it declares), and carries the app's tracking; an object declared twice is
//! refused, naming both places; a hook named only by `generateName` is keyed by the prefix.
//!
//! Whether a kind is namespaced comes from a [`Scopes`]: the cluster's discovery when there
//! is one ([`DiscoveredScopes`], filled by the caller — this crate does no I/O), else the
//! built-in schema and the CRDs at hand ([`BuiltinScopes`]). A kind neither knows is
//! namespaced, as in Argo CD.
//!
//! ```
//! use plumb_diff::desired::{BuiltinScopes, Desired, prepare};
//! use plumb_core::argo::TrackingMethod;
//! let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
//! let prepared = prepare(vec![Desired::new(cm, "cm.yaml:1".into())], None,
//!     TrackingMethod::Annotation, &BuiltinScopes::default()).unwrap();
//! assert_eq!(prepared.objects.len(), 1);
//! ```

use plumb_core::argo::{Application, TrackingMethod, tracking_id};
use plumb_core::origin::Origins;
use plumb_core::schema::Schema;
use plumb_core::{GroupKind, INSTANCE_LABEL, ResourceKey, TRACKING_ID_ANNOTATION};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A desired object and where it came from (`file:line`), for messages.
#[derive(Debug, Clone)]
pub struct Desired {
    pub object: Value,
    pub origin: String,
    /// Where each scalar was set, when the renderer knows (empty otherwise).
    pub origins: Origins,
}

impl Desired {
    /// A desired object known only by its `file:line`.
    pub fn new(object: Value, origin: String) -> Desired {
        Desired {
            object,
            origin,
            origins: Origins::new(),
        }
    }

    /// A rendered object at `origin` (`file:line`), read as JSON now; with `origins`, where
    /// each scalar was set, else none (a renderer's tree then converts without them).
    pub fn of_rendered(
        object: plumb_core::object::Object,
        origin: String,
        origins: bool,
    ) -> Desired {
        let (object, origins) = if origins {
            object.into_parts()
        } else {
            (object.into_value(), Origins::new())
        };
        Desired {
            object,
            origin,
            origins,
        }
    }
}

/// Whether a kind is cluster-scoped: `Some(true)`, namespaced: `Some(false)`, unknown: `None`.
pub trait Scopes: Sync {
    fn cluster_scoped(&self, group: &str, kind: &str) -> Option<bool>;
}

/// Offline: the built-in schema (the kinds client-go registers), then the CustomResourceDefinitions
/// among the objects at hand.
#[derive(Debug, Clone, Default)]
pub struct BuiltinScopes {
    crds: BTreeMap<GroupKind, bool>,
}

impl BuiltinScopes {
    /// The built-in schema and the CRDs among `objects`.
    pub fn with_crds_of<'a>(objects: impl IntoIterator<Item = &'a Value>) -> BuiltinScopes {
        let mut crds = BTreeMap::new();
        for o in objects {
            if let (Some(gk), Some(scope)) = (
                GroupKind::defined_by(o),
                o.pointer("/spec/scope").and_then(Value::as_str),
            ) {
                crds.insert(gk, scope == "Cluster");
            }
        }
        BuiltinScopes { crds }
    }
}

impl Scopes for BuiltinScopes {
    fn cluster_scoped(&self, group: &str, kind: &str) -> Option<bool> {
        Schema::builtin()
            .is_cluster_scoped(group, kind)
            .or_else(|| {
                self.crds
                    .get(&GroupKind {
                        group: group.to_string(),
                        kind: kind.to_string(),
                    })
                    .copied()
            })
    }
}

/// A cluster's discovery: the scope of each kind it serves (looked up by the caller for the
/// kinds desired uses); a kind it does not serve yet (its CRD comes with this sync) as
/// [`BuiltinScopes`] says.
#[derive(Debug, Clone, Default)]
pub struct DiscoveredScopes {
    /// Per served kind: cluster-scoped.
    pub served: BTreeMap<GroupKind, bool>,
    pub offline: BuiltinScopes,
}

impl Scopes for DiscoveredScopes {
    fn cluster_scoped(&self, group: &str, kind: &str) -> Option<bool> {
        self.served
            .get(&GroupKind {
                group: group.to_string(),
                kind: kind.to_string(),
            })
            .copied()
            .or_else(|| self.offline.cluster_scoped(group, kind))
    }
}

/// The kinds `desired` uses (for a discovery lookup).
pub fn kinds_of(desired: &[Desired]) -> BTreeSet<GroupKind> {
    desired
        .iter()
        .filter_map(|d| {
            let api_version = d.object.get("apiVersion")?.as_str()?;
            let kind = d.object.get("kind")?.as_str()?;
            Some(GroupKind::new(
                plumb_core::group_of_api_version(api_version),
                kind,
            ))
        })
        .collect()
}

/// One prepared object.
#[derive(Debug, Clone)]
pub struct PreparedObject {
    /// Namespace set, tracking injected.
    pub desired: Desired,
    /// When the object has origins: its copy as rendered, which the origins' pointers address.
    pub rendered: Option<Value>,
}

/// Desired objects ready to compare and apply.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    pub objects: BTreeMap<ResourceKey, PreparedObject>,
    /// Namespaced objects left without a namespace (no destination namespace): a comparison
    /// pairs each with the one live object of its group, kind and name.
    pub unscoped: BTreeSet<ResourceKey>,
    /// Hooks named only by `metadata.generateName`, keyed by the prefix: each sync names them.
    pub generated: BTreeSet<ResourceKey>,
}

impl Prepared {
    /// Without the hooks named by `generateName`: a comparison (`plumb diff`) shows what
    /// stays, not the hooks each sync creates anew.
    pub fn without_generated(mut self) -> Prepared {
        for key in std::mem::take(&mut self.generated) {
            self.objects.remove(&key);
            self.unscoped.remove(&key);
        }
        self
    }
}

/// Problems with desired objects.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("{origin}: object lacks apiVersion, kind or metadata.name")]
    NoKey { origin: String },
    #[error("{key} is declared twice in desired: {first} and {second}")]
    Duplicate {
        key: Box<ResourceKey>,
        first: String,
        second: String,
    },
}

/// Prepares `desired` for `app` (its destination namespace and, with `tracking`, its
/// tracking; without an app, neither); `scopes` decides which kinds are namespaced.
pub fn prepare(
    desired: Vec<Desired>,
    app: Option<&Application>,
    tracking: TrackingMethod,
    scopes: &dyn Scopes,
) -> Result<Prepared, PrepareError> {
    let dest_ns = app.and_then(|a| a.destination_namespace.as_deref());
    // Per object (in parallel): its key, the as-rendered copy, namespace and tracking.
    let each = plumb_core::parallel::map_owned(desired, |mut d| {
        // A hook with only `generateName` is keyed by the prefix; each operation names it.
        let generated = d
            .object
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .filter(|_| d.object.pointer("/metadata/name").is_none())
            .map(String::from);
        if let Some(prefix) = &generated
            && let Some(meta) = d.object.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.insert("name".into(), Value::String(prefix.clone()));
        }
        let Some(mut key) = ResourceKey::of(&d.object) else {
            return Err(PrepareError::NoKey { origin: d.origin });
        };
        let rendered = (!d.origins.is_empty()).then(|| d.object.clone());
        let mut unscoped = false;
        let meta = d.object.get_mut("metadata").and_then(Value::as_object_mut);
        if scopes.cluster_scoped(&key.group, &key.kind) == Some(true) {
            key.namespace.clear();
            if let Some(meta) = meta {
                meta.remove("namespace");
            }
        } else if key.namespace.is_empty() {
            match (dest_ns, meta) {
                (Some(ns), Some(meta)) => {
                    key.namespace = ns.to_string();
                    meta.insert("namespace".into(), Value::String(ns.to_string()));
                }
                _ => unscoped = true,
            }
        }
        if let Some(app) = app {
            if tracking.uses_annotation() {
                set_meta_entry(
                    &mut d.object,
                    "annotations",
                    TRACKING_ID_ANNOTATION,
                    &tracking_id(&app.name, &key),
                );
            }
            if tracking.uses_label() {
                set_meta_entry(&mut d.object, "labels", INSTANCE_LABEL, &app.name);
            }
        }
        Ok((
            key,
            PreparedObject {
                desired: d,
                rendered,
            },
            unscoped,
            generated.is_some(),
        ))
    });
    let mut out = Prepared::default();
    for r in each {
        let (key, object, unscoped, generated) = r?;
        if let Some(first) = out.objects.get(&key) {
            return Err(PrepareError::Duplicate {
                key: Box::new(key),
                first: first.desired.origin.clone(),
                second: object.desired.origin,
            });
        }
        if unscoped {
            out.unscoped.insert(key.clone());
        }
        if generated {
            out.generated.insert(key.clone());
        }
        out.objects.insert(key, object);
    }
    Ok(out)
}

/// Sets `metadata.<map>.<k>` to `v` (creating the map; replacing a non-map).
pub fn set_meta_entry(obj: &mut Value, map: &str, k: &str, v: &str) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let m = meta
            .entry(map)
            .or_insert_with(|| Value::Object(Default::default()));
        if !m.is_object() {
            *m = Value::Object(Default::default());
        }
        if let Some(m) = m.as_object_mut() {
            m.insert(k.to_string(), Value::String(v.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn app(ns: Option<&str>) -> Application {
        Application {
            name: "shop".into(),
            destination_namespace: ns.map(String::from),
            ..Application::default()
        }
    }

    fn d(object: Value, at: &str) -> Desired {
        Desired::new(object, at.into())
    }

    /// Why `prepare` refuses `objects` (no app, annotation tracking, built-in scopes).
    fn prepare_error(objects: Vec<Desired>) -> String {
        prepare(
            objects,
            None,
            TrackingMethod::Annotation,
            &BuiltinScopes::default(),
        )
        .unwrap_err()
        .to_string()
    }

    fn key(kind: &str, ns: &str, name: &str) -> ResourceKey {
        ResourceKey {
            group: String::new(),
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    #[test]
    fn namespace_scope_and_tracking() {
        let objects = vec![
            d(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
                "a.yaml:1",
            ),
            d(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "namespace": "x"}}),
                "n.yaml:1",
            ),
        ];
        let p = prepare(
            objects,
            Some(&app(Some("prod"))),
            TrackingMethod::AnnotationAndLabel,
            &BuiltinScopes::default(),
        )
        .unwrap();
        let cm = &p.objects[&key("ConfigMap", "prod", "a")].desired.object;
        assert_eq!(cm["metadata"]["namespace"], "prod");
        assert_eq!(
            cm["metadata"]["annotations"][TRACKING_ID_ANNOTATION],
            "shop:/ConfigMap:prod/a"
        );
        assert_eq!(cm["metadata"]["labels"][INSTANCE_LABEL], "shop");
        let ns = &p.objects[&key("Namespace", "", "n")].desired.object;
        assert!(
            ns["metadata"].get("namespace").is_none(),
            "a cluster-scoped object has no namespace"
        );
        assert!(p.unscoped.is_empty() && p.generated.is_empty());
    }

    #[test]
    fn scope_comes_from_discovery_when_there_is_one() {
        let cr = || {
            vec![d(
                json!({"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"}}),
                "p.yaml:1",
            )]
        };
        let gk = GroupKind {
            group: "example.com".into(),
            kind: "Pool".into(),
        };
        let offline = prepare(
            cr(),
            Some(&app(Some("prod"))),
            TrackingMethod::Label,
            &BuiltinScopes::default(),
        )
        .unwrap();
        assert_eq!(
            offline.objects.keys().next().unwrap().namespace,
            "prod",
            "unknown: namespaced"
        );
        let discovered = DiscoveredScopes {
            served: [(gk.clone(), true)].into(),
            offline: BuiltinScopes::default(),
        };
        let p = prepare(
            cr(),
            Some(&app(Some("prod"))),
            TrackingMethod::Label,
            &discovered,
        )
        .unwrap();
        assert_eq!(
            p.objects.keys().next().unwrap().namespace,
            "",
            "cluster-scoped"
        );
        // A CRD among the objects at hand says so offline too.
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "pools.example.com"},
            "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Pool"}}});
        let scopes = BuiltinScopes::with_crds_of([&crd]);
        assert_eq!(scopes.cluster_scoped("example.com", "Pool"), Some(true));
    }

    #[test]
    fn duplicates_name_both_places_and_generated_hooks_are_keyed_by_prefix() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        assert_eq!(
            prepare_error(vec![d(cm.clone(), "x.yaml:1"), d(cm, "y.yaml:4")]),
            "ConfigMap/a is declared twice in desired: x.yaml:1 and y.yaml:4"
                .replace("ConfigMap/a", &key("ConfigMap", "", "a").to_string())
        );
        let hook = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "migrate-",
            "annotations": {"argocd.argoproj.io/hook": "PreSync"}}});
        let p = prepare(
            vec![d(hook, "hook.yaml:1")],
            Some(&app(Some("prod"))),
            TrackingMethod::Annotation,
            &BuiltinScopes::default(),
        )
        .unwrap();
        let k = ResourceKey {
            group: "batch".into(),
            kind: "Job".into(),
            namespace: "prod".into(),
            name: "migrate-".into(),
        };
        assert!(p.generated.contains(&k) && p.objects.contains_key(&k));
        assert!(p.without_generated().objects.is_empty());
        let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}});
        assert_eq!(
            prepare_error(vec![d(nameless, "z.yaml:2")]),
            "z.yaml:2: object lacks apiVersion, kind or metadata.name"
        );
    }
}
