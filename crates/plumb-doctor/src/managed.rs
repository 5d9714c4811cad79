//! Who owns a field: the `managedFields` entries whose `fieldsV1` set holds it.
//!
//! A field is owned by an entry when the set has it exactly (`k:`/`v:`/`i:` list elements
//! resolved against the live object, so the JSON pointer's indexes compare), or when the set
//! has one of its ancestors as a leaf (an atomic field such as `f:selector: {}` owns
//! everything below it). A `.` marker on a container owns the container's existence only.

use plumb_core::fieldpath::{FieldSet, PathElement, to_pointer};
use serde_json::Value;
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

/// Every entry of `live`'s `managedFields` that owns `pointer`, newest first.
pub fn owners(live: &Value, pointer: &str) -> Vec<Owner> {
    let Some(entries) = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries {
        let Some(fields) = e.get("fieldsV1") else {
            continue;
        };
        let Ok(set) = FieldSet::parse(fields) else {
            continue;
        };
        if owns(&set, live, pointer) {
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let time = e.get("time").and_then(Value::as_str).map(String::from);
            out.push(Owner {
                manager: s("manager"),
                operation: s("operation"),
                subresource: s("subresource"),
                at: time
                    .as_deref()
                    .and_then(|t| plumb_core::time::parse_rfc3339(t).ok()),
                time,
                api_version: s("apiVersion"),
            });
        }
    }
    out.sort_by_key(|o| std::cmp::Reverse(o.at));
    out
}

fn owns(set: &FieldSet, live: &Value, pointer: &str) -> bool {
    let mut prefix = Vec::new();
    walk(set, live, pointer, &mut prefix)
}

fn walk(set: &FieldSet, live: &Value, pointer: &str, prefix: &mut Vec<PathElement>) -> bool {
    for (e, sub) in &set.children {
        prefix.push(e.clone());
        let found = match to_pointer(live, prefix) {
            Some(p) if p == pointer => sub.member,
            // An atomic ancestor (a leaf of the set) owns everything below it.
            Some(p) if pointer.starts_with(&format!("{p}/")) => {
                (sub.children.is_empty() && sub.member) || walk(sub, live, pointer, prefix)
            }
            _ => false,
        };
        prefix.pop();
        if found {
            return true;
        }
    }
    false
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
