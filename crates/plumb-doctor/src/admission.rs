//! Which admission plugins a write of an object goes through, as the API server decides it
//! (`k8s.io/apiserver/pkg/admission/plugin/webhook`): rules (operations, apiGroups,
//! apiVersions, resources with subresources, scope), `matchPolicy`, `namespaceSelector` and
//! `objectSelector`.
//!
//! A sync writes an object that already exists: the request is an `UPDATE` of the main
//! resource (no subresource). A `CREATE`-only webhook cannot explain a value that differs
//! after a sync, and is not matched.

use crate::selector::{self, Labels};
use serde_json::Value;

/// The attributes of the admission request a sync sends for one object.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub group: &'a str,
    pub version: &'a str,
    /// The plural resource name (`deployments`).
    pub resource: String,
    /// Empty for the main resource.
    pub subresource: &'a str,
    pub operation: &'a str,
    /// Empty for cluster-scoped objects.
    pub namespace: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
}

/// The plural resource name of a kind: a CRD's `spec.names.plural` when one is in `context`,
/// else Kubernetes' own guess (`UnsafeGuessKindToResource`) with its exceptions.
pub fn resource_of(group: &str, kind: &str, context: &[Value]) -> String {
    for o in context {
        if o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
            && o.pointer("/spec/group").and_then(Value::as_str) == Some(group)
            && o.pointer("/spec/names/kind").and_then(Value::as_str) == Some(kind)
            && let Some(p) = o.pointer("/spec/names/plural").and_then(Value::as_str)
        {
            return p.to_string();
        }
    }
    let lower = kind.to_ascii_lowercase();
    match lower.as_str() {
        "endpoints" => return lower,
        "" => return lower,
        _ => {}
    }
    if lower.ends_with('s') {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn any_or(list: &[&str], want: &str) -> bool {
    list.iter().any(|x| *x == "*" || *x == want)
}

/// Whether one `RuleWithOperations` matches. `exact` is `matchPolicy: Exact`; with
/// `Equivalent` (the v1 default) a rule for the same group and resource at another version
/// matches, since the API server converts the object to a version the webhook asks for.
pub fn rule_matches(rule: &Value, req: &Request<'_>, exact: bool) -> bool {
    let ops = strs(rule.get("operations"));
    if !any_or(&ops, req.operation) {
        return false;
    }
    if !any_or(&strs(rule.get("apiGroups")), req.group) {
        return false;
    }
    if exact && !any_or(&strs(rule.get("apiVersions")), req.version) {
        return false;
    }
    let resource_ok = strs(rule.get("resources")).iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == req.resource) && (sub == "*" || sub == req.subresource)
    });
    if !resource_ok {
        return false;
    }
    match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Namespaced" => !req.namespace.is_empty(),
        "Cluster" => req.namespace.is_empty(),
        _ => true,
    }
}

/// The outcome of matching a webhook (or a policy's match constraints) against a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Match {
    /// It matches; the evidence says why.
    Yes(Vec<String>),
    /// It matches as far as the snapshot tells (the namespace is not in it).
    Unverified(Vec<String>),
    /// It does not match; the reason.
    No(String),
}

/// What the selectors are evaluated against.
#[derive(Debug, Clone)]
pub struct Subject<'a> {
    /// The namespace object's labels, when the snapshot holds it.
    pub namespace_labels: Option<Labels>,
    /// The object's labels before (live) and after (desired) the write.
    pub old_labels: Labels,
    pub new_labels: Labels,
    pub request: Request<'a>,
}

/// Matches rules (`rules` or `resourceRules`), `matchPolicy`, `namespaceSelector`,
/// `objectSelector` of a webhook or of `matchConstraints` / `matchResources`.
pub fn matches(
    spec: &Value,
    rules_field: &str,
    excluded_field: Option<&str>,
    subj: &Subject<'_>,
) -> Match {
    let req = &subj.request;
    let exact = spec.get("matchPolicy").and_then(Value::as_str) == Some("Exact");
    let rules = spec
        .get(rules_field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(rule) = rules.iter().find(|r| rule_matches(r, req, exact)) else {
        return Match::No(format!(
            "no rule matches {} {}/{} {}",
            req.operation,
            group_or_core(req.group),
            req.version,
            resource_path(req)
        ));
    };
    if let Some(ex) = excluded_field
        && let Some(Value::Array(excluded)) = spec.get(ex)
        && excluded.iter().any(|r| rule_matches(r, req, exact))
    {
        return Match::No(format!("{ex} excludes {}", resource_path(req)));
    }
    let mut evidence = vec![format!(
        "rule matches {} {}/{} {} (operations {}, resources {}, scope {})",
        req.operation,
        group_or_core(req.group),
        req.version,
        resource_path(req),
        strs(rule.get("operations")).join(","),
        strs(rule.get("resources")).join(","),
        rule.get("scope").and_then(Value::as_str).unwrap_or("*"),
    )];
    let mut verified = true;
    let ns_sel = spec.get("namespaceSelector");
    let is_namespace = req.group.is_empty() && req.kind == "Namespace";
    if is_namespace {
        // A Namespace is matched on its own labels.
        if !selector::matches(ns_sel, &subj.new_labels)
            && !selector::matches(ns_sel, &subj.old_labels)
        {
            return Match::No(format!(
                "namespaceSelector {} does not select Namespace {}",
                selector::describe(ns_sel),
                req.name
            ));
        }
    } else if !req.namespace.is_empty() && !selector_is_empty(ns_sel) {
        let (labels, known) = match &subj.namespace_labels {
            Some(l) => (l.clone(), true),
            None => {
                // The API server always sets kubernetes.io/metadata.name.
                let mut l = Labels::new();
                l.insert(
                    "kubernetes.io/metadata.name".into(),
                    Value::String(req.namespace.to_string()),
                );
                (l, false)
            }
        };
        let ok = selector::matches(ns_sel, &labels);
        if known && !ok {
            return Match::No(format!(
                "namespaceSelector {} does not select namespace {} (labels {})",
                selector::describe(ns_sel),
                req.namespace,
                describe_labels(&labels)
            ));
        }
        if known {
            evidence.push(format!(
                "namespaceSelector {} selects namespace {} (labels {})",
                selector::describe(ns_sel),
                req.namespace,
                describe_labels(&labels)
            ));
        } else {
            verified = false;
            evidence.push(format!(
                "namespaceSelector {} not verified: namespace {} is not in the snapshot",
                selector::describe(ns_sel),
                req.namespace
            ));
        }
    }
    let obj_sel = spec.get("objectSelector");
    if !selector_is_empty(obj_sel) {
        // For an UPDATE the API server checks the old and the new object: either will do.
        if !selector::matches(obj_sel, &subj.old_labels)
            && !selector::matches(obj_sel, &subj.new_labels)
        {
            return Match::No(format!(
                "objectSelector {} does not select the object (labels {})",
                selector::describe(obj_sel),
                describe_labels(&subj.new_labels)
            ));
        }
        evidence.push(format!(
            "objectSelector {} selects the object",
            selector::describe(obj_sel)
        ));
    }
    if let Some(Value::Array(conds)) = spec.get("matchConditions")
        && !conds.is_empty()
    {
        evidence.push(format!(
            "{} matchConditions (CEL) not evaluated",
            conds.len()
        ));
    }
    if verified {
        Match::Yes(evidence)
    } else {
        Match::Unverified(evidence)
    }
}

fn selector_is_empty(sel: Option<&Value>) -> bool {
    match sel {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.values().all(|v| match v {
            Value::Object(o) => o.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Null => true,
            _ => false,
        }),
        _ => false,
    }
}

fn group_or_core(g: &str) -> &str {
    if g.is_empty() { "core" } else { g }
}

fn resource_path(req: &Request<'_>) -> String {
    if req.subresource.is_empty() {
        req.resource.clone()
    } else {
        format!("{}/{}", req.resource, req.subresource)
    }
}

/// `a=1, b=2`.
pub fn describe_labels(l: &Labels) -> String {
    let parts: Vec<String> = l
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(resource: &str, sub: &'static str, ns: &'static str) -> Request<'static> {
        Request {
            group: "apps",
            version: "v1",
            resource: resource.into(),
            subresource: sub,
            operation: "UPDATE",
            namespace: ns,
            kind: "Deployment",
            name: "web",
        }
    }

    #[test]
    fn resources_subresources_and_scope() {
        let r = |res: &str, scope: &str| {
            json!({"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                   "resources": [res], "scope": scope})
        };
        let main = req("deployments", "", "prod");
        let scale = req("deployments", "scale", "prod");
        let cases = [
            (r("deployments", "*"), &main, true),
            (r("deployments", "*"), &scale, false),
            (r("deployments/scale", "*"), &scale, true),
            (r("deployments/scale", "*"), &main, false),
            (r("deployments/*", "*"), &main, true),
            (r("deployments/*", "*"), &scale, true),
            (r("*", "*"), &main, true),
            (r("*", "*"), &scale, false),
            (r("*/*", "*"), &scale, true),
            (r("*/scale", "*"), &scale, true),
            (r("deployments", "Namespaced"), &main, true),
            (r("deployments", "Cluster"), &main, false),
            (r("statefulsets", "*"), &main, false),
        ];
        for (rule, rq, want) in cases {
            assert_eq!(
                rule_matches(&rule, rq, true),
                want,
                "{rule} {}/{}",
                rq.resource,
                rq.subresource
            );
        }
        let create_only = json!({"operations": ["CREATE"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]});
        assert!(!rule_matches(&create_only, &main, true));
        let any_op = json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["v1beta1"], "resources": ["*"]});
        assert!(
            !rule_matches(&any_op, &main, true),
            "Exact: version must match"
        );
        assert!(rule_matches(&any_op, &main, false), "Equivalent: converted");
    }

    #[test]
    fn plural_names() {
        assert_eq!(resource_of("apps", "Deployment", &[]), "deployments");
        assert_eq!(
            resource_of("networking.k8s.io", "NetworkPolicy", &[]),
            "networkpolicies"
        );
        assert_eq!(
            resource_of("networking.k8s.io", "Ingress", &[]),
            "ingresses"
        );
        assert_eq!(resource_of("", "Endpoints", &[]), "endpoints");
        let crd = json!({"kind": "CustomResourceDefinition", "spec": {"group": "x.io", "names": {"kind": "Octopus", "plural": "octopi"}}});
        assert_eq!(resource_of("x.io", "Octopus", &[crd]), "octopi");
    }
}
