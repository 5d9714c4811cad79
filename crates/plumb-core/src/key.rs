//! Keys: how desired and live objects pair up. A [`ResourceKey`] is group, kind, namespace and
//! name — no version, as Argo CD pairs objects.

use serde_json::Value;
use std::fmt;

/// The API group of an `apiVersion`: `apps/v1` → `apps`, `v1` → `` (core).
pub fn group_of_api_version(api_version: &str) -> &str {
    match api_version.rsplit_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

/// A group and kind, the unit Argo CD's ignore rules and overrides match on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKind {
    /// The API group (empty: core).
    pub group: String,
    /// The kind (`Deployment`).
    pub kind: String,
}

impl GroupKind {
    /// The pair `group`/`kind`.
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        GroupKind {
            group: group.into(),
            kind: kind.into(),
        }
    }

    /// The kind a CustomResourceDefinition defines (`spec.group`, `spec.names.kind`); `None`
    /// for another object or a definition lacking either.
    pub fn defined_by(crd: &Value) -> Option<GroupKind> {
        if crd.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
            return None;
        }
        let s = |p: &str| crd.pointer(p).and_then(Value::as_str);
        Some(GroupKind::new(s("/spec/group")?, s("/spec/names/kind")?))
    }
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.group, self.kind)
    }
}

/// Identity of an object for pairing live with desired: group, kind, namespace, name.
/// The version is deliberately not part of it (Argo CD pairs `apps/v1` with `apps/v1beta1`).
/// An empty namespace means cluster-scoped (or not yet defaulted).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    /// The API group (empty: core).
    pub group: String,
    /// The kind (`Deployment`).
    pub kind: String,
    /// `metadata.namespace` (empty: cluster-scoped, or not yet defaulted).
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
}

impl ResourceKey {
    /// The key of an object; `None` when `apiVersion`, `kind` or `metadata.name` is missing.
    pub fn of(obj: &Value) -> Option<ResourceKey> {
        let api_version = obj.get("apiVersion")?.as_str()?;
        let kind = obj.get("kind")?.as_str()?;
        let meta = obj.get("metadata")?;
        let name = meta.get("name")?.as_str()?;
        let namespace = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
        Some(ResourceKey {
            group: group_of_api_version(api_version).to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
    }

    /// The key's group and kind.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }

    /// The sort key Argo CD uses for `argocd app diff` output: `group/kind/namespace/name`.
    pub fn sort_key(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.group, self.kind, self.namespace, self.name
        )
    }
}

/// `apps/Deployment prod/web`, `/Service default/web`, `rbac.authorization.k8s.io/ClusterRole /admin`:
/// the form of the header `argocd app diff` prints.
impl fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} {}/{}",
            self.group, self.kind, self.namespace, self.name
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_crd_defines_its_group_and_kind() {
        let crd = |spec: serde_json::Value| {
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "widgets.example.com"}, "spec": spec})
        };
        let table = [
            (
                crd(json!({"group": "example.com", "names": {"kind": "Widget"}})),
                Some(GroupKind::new("example.com", "Widget")),
            ),
            (crd(json!({"group": "example.com"})), None),
            (crd(json!({"names": {"kind": "Widget"}})), None),
            (
                json!({"kind": "ConfigMap", "spec": {"group": "g", "names": {"kind": "K"}}}),
                None,
            ),
        ];
        for (obj, want) in table {
            assert_eq!(GroupKind::defined_by(&obj), want, "{obj}");
        }
    }

    #[test]
    fn core_group_and_cluster_scope_print_as_argocd_does() {
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "a"}});
        assert_eq!(ResourceKey::of(&svc).unwrap().to_string(), "/Service a/web");
        let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "x"}});
        assert_eq!(
            ResourceKey::of(&cr).unwrap().to_string(),
            "rbac.authorization.k8s.io/ClusterRole /x"
        );
    }

    #[test]
    fn missing_identity_is_none() {
        assert!(
            ResourceKey::of(&json!({"apiVersion": "v1", "kind": "Service", "metadata": {}}))
                .is_none()
        );
        assert!(ResourceKey::of(&json!({"kind": "Service", "metadata": {"name": "a"}})).is_none());
    }
}
