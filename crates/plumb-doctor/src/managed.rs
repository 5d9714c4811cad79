//! Who owns a field: the `managedFields` entries whose `fieldsV1` set holds it.
//!
//! A field is owned by an entry when the set has it exactly (`k:`/`v:`/`i:` list elements
//! resolved against the live object, so the JSON pointer's indexes compare), or when the set
//! has one of its ancestors as a leaf (an atomic field such as `f:selector: {}` owns
//! everything below it). A `.` marker on a container owns the container's existence only.

use plumb_core::fieldpath::{FieldSet, PathElement, to_pointer};
use serde_json::Value;
use std::collections::HashSet;
use std::time::SystemTime;

/// One `managedFields` entry that owns the field asked about.
#[derive(Debug, Clone, PartialEq)]
pub struct Owner {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    /// `scale`, `status`, or empty for the main resource.
    pub subresource: String,
    /// The entry's `time`, as written.
    pub time: Option<String>,
    pub at: Option<SystemTime>,
    /// The entry's `apiVersion`.
    pub api_version: String,
}

impl Owner {
    /// `kube-controller-manager (Update, subresource scale, 2026-09-22T19:58:41Z)`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} ({}", self.manager, self.operation);
        if !self.subresource.is_empty() {
            s.push_str(", subresource ");
            s.push_str(&self.subresource);
        }
        if let Some(t) = &self.time {
            s.push_str(", ");
            s.push_str(t);
        }
        s.push(')');
        s
    }
}

/// Every entry of `live`'s `managedFields` that owns `pointer`, newest first. To ask about
/// many fields of one object, build its [`Index`] once.
pub fn owners(live: &Value, pointer: &str) -> Vec<Owner> {
    Index::of(live).owners(pointer)
}

/// An object's `managedFields`, each entry's field set resolved once against the object into
/// the pointers it owns: asking about a field is then a lookup, not a walk of every set (an
/// object with thousands of fields asked about each of them stays linear).
pub struct Index {
    entries: Vec<Entry>,
}

struct Entry {
    owner: Owner,
    /// The pointers of the set's members.
    exact: HashSet<String>,
    /// The pointers of its atomic leaves (a member without children owns everything below).
    atomic: HashSet<String>,
}

impl Index {
    pub fn of(live: &Value) -> Index {
        let entries = live
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let set = FieldSet::parse(e.get("fieldsV1")?).ok()?;
                let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                let time = e.get("time").and_then(Value::as_str).map(String::from);
                let mut entry = Entry {
                    owner: Owner {
                        manager: s("manager"),
                        operation: s("operation"),
                        subresource: s("subresource"),
                        at: time
                            .as_deref()
                            .and_then(|t| plumb_core::time::parse_rfc3339(t).ok()),
                        time,
                        api_version: s("apiVersion"),
                    },
                    exact: HashSet::new(),
                    atomic: HashSet::new(),
                };
                collect(&set, live, &mut Vec::new(), &mut entry);
                Some(entry)
            })
            .collect();
        Index { entries }
    }

    /// The entries that own `pointer`, newest first: one whose set has it, or has one of its
    /// ancestors as an atomic leaf.
    pub fn owners(&self, pointer: &str) -> Vec<Owner> {
        let mut out: Vec<Owner> = self
            .entries
            .iter()
            .filter(|e| {
                e.exact.contains(pointer)
                    || pointer
                        .match_indices('/')
                        .map(|(i, _)| &pointer[..i])
                        .any(|ancestor| e.atomic.contains(ancestor))
            })
            .map(|e| e.owner.clone())
            .collect();
        out.sort_by_key(|o| std::cmp::Reverse(o.at));
        out
    }
}

/// Records the pointers of `set`'s nodes below `prefix` (list elements resolved against
/// `live`; a node that does not resolve, and what is below it, owns nothing).
fn collect(set: &FieldSet, live: &Value, prefix: &mut Vec<PathElement>, entry: &mut Entry) {
    for (e, sub) in &set.children {
        prefix.push(e.clone());
        if let Some(p) = to_pointer(live, prefix) {
            if sub.member {
                if sub.children.is_empty() {
                    entry.atomic.insert(p.clone());
                }
                entry.exact.insert(p);
            }
            collect(sub, live, prefix, entry);
        }
        prefix.pop();
    }
}

/// Managers that are people at a terminal.
pub fn is_person(manager: &str) -> bool {
    manager == "kubectl"
        || manager.starts_with("kubectl-")
        || matches!(manager, "k9s" | "Mozilla" | "Go-http-client" | "lens")
}

/// plumb's own field manager and Argo CD's.
pub fn is_gitops(manager: &str) -> bool {
    matches!(
        manager,
        "plumb" | "argocd-controller" | "argocd-application-controller" | "argocd"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exact_keyed_and_atomic_ownership() {
        let live = json!({"metadata": {"managedFields": [
            {"manager": "argocd-controller", "operation": "Update", "time": "2026-09-22T19:58:30Z",
             "fieldsV1": {"f:spec": {"f:selector": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"api\"}": {".": {}, "f:imagePullPolicy": {}}}}}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale",
             "time": "2026-09-22T19:58:41Z", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
        ]}, "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "x"}},
            "template": {"spec": {"containers": [{"name": "side"}, {"name": "api", "imagePullPolicy": "Always"}]}}}});
        let o = owners(&live, "/spec/template/spec/containers/1/imagePullPolicy");
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].manager, "argocd-controller");
        assert!(owners(&live, "/spec/template/spec/containers/0/imagePullPolicy").is_empty());
        assert_eq!(
            owners(&live, "/spec/selector/matchLabels/app")[0].manager,
            "argocd-controller"
        );
        let r = owners(&live, "/spec/replicas");
        assert_eq!(
            r[0].describe(),
            "kube-controller-manager (Update, subresource scale, 2026-09-22T19:58:41Z)"
        );
        assert!(
            owners(&live, "/spec/template/spec/containers/1/name").is_empty(),
            "`.` owns the element, not its fields"
        );
    }
}
