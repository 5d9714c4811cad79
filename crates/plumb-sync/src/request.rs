//! What a manual sync asks for — `plumb app sync` flags, Argo CD's `operation.sync`:
//! `--prune`, `--dry-run`, `--revision`, `--resource`.

use plumb_core::ResourceKey;
use plumb_core::argo::model::SyncOperationResource;
use std::fmt;

/// A manual sync's request. The default syncs the whole app at its target revision and
/// prunes nothing: as with `argocd app sync`, a manual sync deletes only when asked to
/// (`syncPolicy.automated.prune` governs automated syncs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncRequest {
    /// Delete resources git no longer declares.
    pub prune: bool,
    /// A server-side dry run: nothing is written, no history, no status.
    pub dry_run: bool,
    /// Sync this revision instead of the app's target.
    pub revision: Option<String>,
    /// Only these resources: a partial sync (no hooks run, no history entry).
    pub resources: Vec<ResourceSelector>,
    /// Apply without running hooks (Argo CD's `syncStrategy: apply`, which rollback uses).
    pub skip_hooks: bool,
    /// Render this Application source (`spec.source` JSON) instead of the app's own: a
    /// rollback's, from its history entry.
    pub source: Option<serde_json::Value>,
    /// The history id a rollback returns to (its `OperationStarted` Event names it).
    pub rollback: Option<i64>,
}

/// Whether `key` takes part in a sync limited to `selected` (none: every resource does).
pub fn selects(selected: &[ResourceSelector], key: &ResourceKey) -> bool {
    selected.is_empty() || selected.iter().any(|s| s.matches(key))
}

/// One `--resource GROUP:KIND:[NAMESPACE/]NAME` (empty group for the core group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSelector {
    pub group: String,
    pub kind: String,
    /// `None` matches any namespace.
    pub namespace: Option<String>,
    pub name: String,
}

impl ResourceSelector {
    /// Parses `GROUP:KIND:NAME` or `GROUP:KIND:NAMESPACE/NAME`.
    pub fn parse(s: &str) -> Result<ResourceSelector, String> {
        let bad = || {
            format!(
                "--resource {s:?}: expected GROUP:KIND:NAME or GROUP:KIND:NAMESPACE/NAME (empty GROUP for the core group)"
            )
        };
        let mut parts = s.splitn(3, ':');
        let (Some(group), Some(kind), Some(rest)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let (namespace, name) = match rest.split_once('/') {
            Some((ns, name)) => (Some(ns.to_string()), name),
            None => (None, rest),
        };
        if kind.is_empty() || name.is_empty() {
            return Err(bad());
        }
        Ok(ResourceSelector {
            group: group.to_string(),
            kind: kind.to_string(),
            namespace,
            name: name.to_string(),
        })
    }

    /// Whether the resource `key` is selected.
    pub fn matches(&self, key: &ResourceKey) -> bool {
        self.group == key.group
            && self.kind == key.kind
            && self.name == key.name
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == key.namespace)
    }

    /// As `operation.sync.resources` records it.
    pub fn to_model(&self) -> SyncOperationResource {
        SyncOperationResource {
            group: self.group.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
            extra: Default::default(),
        }
    }

    /// From `operation.sync.resources` (`None` without a kind or name).
    pub fn from_model(r: &SyncOperationResource) -> Option<ResourceSelector> {
        (!r.kind.is_empty() && !r.name.is_empty()).then(|| ResourceSelector {
            group: r.group.clone(),
            kind: r.kind.clone(),
            namespace: Some(r.namespace.clone()).filter(|n| !n.is_empty()),
            name: r.name.clone(),
        })
    }
}

impl fmt::Display for ResourceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}:{}:{ns}/{}", self.group, self.kind, self.name),
            None => write!(f, "{}:{}:{}", self.group, self.kind, self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::key;

    #[test]
    fn selectors_parse_match_and_round_trip() {
        let any_ns = ResourceSelector::parse(":ConfigMap:settings").unwrap();
        assert!(any_ns.matches(&key("", "ConfigMap", "a", "settings")));
        assert!(any_ns.matches(&key("", "ConfigMap", "b", "settings")));
        assert!(!any_ns.matches(&key("", "ConfigMap", "a", "other")));
        assert!(!any_ns.matches(&key("apps", "ConfigMap", "a", "settings")));
        let one_ns = ResourceSelector::parse("apps:Deployment:prod/web").unwrap();
        assert!(one_ns.matches(&key("apps", "Deployment", "prod", "web")));
        assert!(!one_ns.matches(&key("apps", "Deployment", "dev", "web")));
        for s in [any_ns, one_ns] {
            assert_eq!(ResourceSelector::from_model(&s.to_model()), Some(s.clone()));
            assert_eq!(ResourceSelector::parse(&s.to_string()), Ok(s));
        }
        for bad in [
            "",
            "ConfigMap",
            ":ConfigMap",
            "::name",
            ":ConfigMap:",
            ":ConfigMap:ns/",
        ] {
            let e = ResourceSelector::parse(bad).unwrap_err();
            assert!(e.contains("GROUP:KIND:NAME"), "{bad}: {e}");
        }
    }
}
