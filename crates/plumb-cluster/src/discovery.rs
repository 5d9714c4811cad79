//! What the server serves: (group, kind) → resource, version, scope, verbs.
//!
//! Built from aggregated discovery (`/api` and `/apis` with the
//! `apidiscovery.k8s.io/v2` media type: two requests, CRDs included), falling
//! back to the per-group documents on servers without it.
//!
//! It also gives the pipeline its scopes ([`crate::ClusterApi::scopes`]: which kinds are
//! cluster-scoped, for plumb-diff's `DiscoveredScopes`).

use kube::discovery::{ApiGroup, Scope};
use plumb_core::GroupKind;
use std::collections::BTreeMap;

/// One kind the server serves, at the version plumb should use for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group, empty for the core group.
    pub group: String,
    pub kind: String,
    /// The version to use: the group's preferred version when it serves this
    /// kind, otherwise the most stable version that does.
    pub version: String,
    /// Every version serving this kind, `version` first.
    pub versions: Vec<String>,
    /// The resource name in URLs (`deployments`).
    pub plural: String,
    pub namespaced: bool,
    /// `get`, `list`, `watch`, `create`, `patch`, ...
    pub verbs: Vec<String>,
    /// `status`, `scale`, ...
    pub subresources: Vec<String>,
}

impl ResourceInfo {
    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(&self.group, &self.kind)
    }

    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// `deployments.apps`, or `configmaps` for the core group: how kubectl and
    /// RBAC messages name the resource.
    pub fn resource_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The collection URL at `version`: in `namespace` when given and the kind is
    /// namespaced, across all namespaces (or cluster-scoped) otherwise.
    pub fn url_path(&self, version: &str, namespace: Option<&str>) -> String {
        let prefix = if self.group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{}/{version}", self.group)
        };
        match namespace {
            Some(ns) if self.namespaced => format!("{prefix}/namespaces/{ns}/{}", self.plural),
            _ => format!("{prefix}/{}", self.plural),
        }
    }
}

pub(crate) fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// The discovery result: every served kind, by group and kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiResources {
    kinds: BTreeMap<GroupKind, ResourceInfo>,
}

impl ApiResources {
    /// The resource of a kind, if served.
    pub fn get(&self, group: &str, kind: &str) -> Option<&ResourceInfo> {
        self.kinds.get(&GroupKind::new(group, kind))
    }

    /// All served kinds, sorted by group then kind.
    pub fn iter(&self) -> impl Iterator<Item = &ResourceInfo> {
        self.kinds.values()
    }

    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// A table of the given kinds (a server that is not asked: tests, the in-memory cluster).
    pub fn from_infos(infos: impl IntoIterator<Item = ResourceInfo>) -> ApiResources {
        ApiResources {
            kinds: infos.into_iter().map(|i| (i.group_kind(), i)).collect(),
        }
    }

    /// Builds the table from kube's discovery groups.
    pub(crate) fn from_groups<'a>(groups: impl Iterator<Item = &'a ApiGroup>) -> ApiResources {
        let mut kinds = BTreeMap::new();
        for group in groups {
            // Preferred version first, then the others from most to least stable
            // (kube keeps them sorted that way).
            let preferred = group.preferred_version().map(str::to_string);
            let mut versions: Vec<String> = preferred.iter().cloned().collect();
            versions.extend(
                group
                    .versions()
                    .filter(|v| Some(*v) != preferred.as_deref())
                    .map(str::to_string),
            );
            for version in &versions {
                for (resource, caps) in group.versioned_resources(version) {
                    let key = GroupKind::new(&resource.group, &resource.kind);
                    match kinds.get_mut(&key) {
                        // Seen at a better version already: just record this one.
                        Some(ResourceInfo { versions, .. }) => {
                            if !versions.contains(version) {
                                versions.push(version.clone());
                            }
                        }
                        None => {
                            let info = ResourceInfo {
                                group: resource.group.clone(),
                                kind: resource.kind.clone(),
                                version: version.clone(),
                                versions: vec![version.clone()],
                                plural: resource.plural.clone(),
                                namespaced: caps.scope == Scope::Namespaced,
                                verbs: caps.operations.clone(),
                                subresources: caps
                                    .subresources
                                    .iter()
                                    .filter_map(|(sub, _)| {
                                        sub.plural.split_once('/').map(|(_, s)| s.to_string())
                                    })
                                    .collect(),
                            };
                            kinds.insert(key, info);
                        }
                    }
                }
            }
        }
        ApiResources { kinds }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(group: &str, namespaced: bool) -> ResourceInfo {
        ResourceInfo {
            group: group.into(),
            kind: "Deployment".into(),
            version: "v1".into(),
            versions: vec!["v1".into()],
            plural: "deployments".into(),
            namespaced,
            verbs: vec!["list".into()],
            subresources: vec![],
        }
    }

    #[test]
    fn urls() {
        let d = info("apps", true);
        assert_eq!(
            d.url_path("v1", Some("prod")),
            "/apis/apps/v1/namespaces/prod/deployments"
        );
        assert_eq!(d.url_path("v1", None), "/apis/apps/v1/deployments");
        assert_eq!(d.api_version(), "apps/v1");
        assert_eq!(d.resource_name(), "deployments.apps");
        let core = info("", false);
        assert_eq!(core.url_path("v1", Some("x")), "/api/v1/deployments");
        assert_eq!(core.api_version(), "v1");
        assert!(core.supports("list") && !core.supports("watch"));
    }
}
