//! What an app's page shows after "why OutOfSync": the Application's conditions (SyncLoop
//! first), its resource tree (each resource of the app, with the live objects that name it as
//! their owner nested below, recursively: a Deployment's ReplicaSets and their Pods), with
//! sync and health per node, and the last sync operation with its per-resource results.

use plumb_core::ResourceKey;
use plumb_doctor::Report;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// The deepest tree shown (a cycle of owner references cannot loop).
const MAX_DEPTH: usize = 8;

pub(crate) struct Extras {
    pub conditions: Vec<Condition>,
    pub tree: Vec<TreeNode>,
    pub operation: Option<Operation>,
}

impl Extras {
    /// The tree as the steps that write it ([`steps`]).
    pub(crate) fn steps(&self) -> Vec<TreeStep<'_>> {
        steps(&self.tree)
    }
}

pub(crate) struct Condition {
    pub kind: String,
    pub message: String,
    pub at: String,
}

pub(crate) struct TreeNode {
    pub resource: String,
    /// `Synced`, `OutOfSync`, or empty for an object that is not the app's own.
    pub sync: String,
    pub health: String,
    pub children: Vec<TreeNode>,
}

pub(crate) struct Operation {
    pub phase: String,
    pub message: String,
    pub started: String,
    pub finished: String,
    pub revision: String,
    pub results: Vec<OperationResult>,
}

pub(crate) struct OperationResult {
    pub resource: String,
    pub status: String,
    pub message: String,
    pub hook: String,
}

fn s(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The extras of an app's page: its `application`, the `live` objects of its destination, the
/// resources that differ (`out_of_sync`), and the report (health per resource).
pub(crate) fn extras(
    application: &Value,
    live: &[Value],
    out_of_sync: &HashSet<String>,
    report: &Report,
) -> Extras {
    let mut conditions: Vec<Condition> = application
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| Condition {
            kind: s(c, "/type"),
            message: s(c, "/message"),
            at: s(c, "/lastTransitionTime"),
        })
        .collect();
    conditions.sort_by_key(|c| c.kind != "SyncLoop");

    let health: BTreeMap<String, String> = report
        .health
        .iter()
        .flat_map(|h| &h.resources)
        .map(|r| (r.resource.to_string(), r.status.clone()))
        .collect();
    // The app's own resources: what the comparison named (health rows cover every one).
    let own: Vec<String> = health.keys().cloned().collect();
    let by_key: BTreeMap<String, &Value> = live
        .iter()
        .filter_map(|o| Some((ResourceKey::of(o)?.to_string(), o)))
        .collect();
    // uid → the live objects that name it as an owner.
    let mut children_of: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for o in live {
        for r in o
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let uid = s(r, "/uid");
            if !uid.is_empty() {
                children_of.entry(uid).or_default().push(o);
            }
        }
    }
    fn node(
        key: String,
        obj: Option<&Value>,
        sync: String,
        health: &BTreeMap<String, String>,
        children_of: &BTreeMap<String, Vec<&Value>>,
        depth: usize,
    ) -> TreeNode {
        let children = match obj {
            Some(o) if depth < MAX_DEPTH => children_of
                .get(&s(o, "/metadata/uid"))
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    let k = ResourceKey::of(c)?.to_string();
                    Some(node(
                        k,
                        Some(c),
                        String::new(),
                        health,
                        children_of,
                        depth + 1,
                    ))
                })
                .collect(),
            _ => Vec::new(),
        };
        TreeNode {
            health: health.get(&key).cloned().unwrap_or_default(),
            resource: key,
            sync,
            children,
        }
    }
    let tree = own
        .into_iter()
        .map(|k| {
            let sync = if out_of_sync.contains(&k) {
                "OutOfSync"
            } else {
                "Synced"
            };
            let obj = by_key.get(&k).copied();
            node(k, obj, sync.into(), &health, &children_of, 0)
        })
        .collect();

    let operation = application
        .pointer("/status/operationState")
        .map(|op| Operation {
            phase: s(op, "/phase"),
            message: s(op, "/message"),
            started: s(op, "/startedAt"),
            finished: s(op, "/finishedAt"),
            revision: s(op, "/syncResult/revision"),
            results: op
                .pointer("/syncResult/resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|r| OperationResult {
                    resource: format!(
                        "{}/{} {}/{}",
                        s(r, "/group"),
                        s(r, "/kind"),
                        s(r, "/namespace"),
                        s(r, "/name")
                    ),
                    status: s(r, "/status"),
                    message: s(r, "/message"),
                    hook: s(r, "/hookPhase"),
                })
                .collect(),
        });
    Extras {
        conditions,
        tree,
        operation,
    }
}

/// One step of writing the tree as nested lists: `open` (`<ul>`), `item` (`<li>` and the
/// node), `end` (`</li>`), `close` (`</ul>`). A template cannot call itself; this flat form
/// needs no recursion.
pub(crate) struct TreeStep<'a> {
    pub kind: &'static str,
    pub node: Option<&'a TreeNode>,
}

pub(crate) fn steps(tree: &[TreeNode]) -> Vec<TreeStep<'_>> {
    fn walk<'a>(nodes: &'a [TreeNode], out: &mut Vec<TreeStep<'a>>) {
        out.push(TreeStep {
            kind: "open",
            node: None,
        });
        for n in nodes {
            out.push(TreeStep {
                kind: "item",
                node: Some(n),
            });
            if !n.children.is_empty() {
                walk(&n.children, out);
            }
            out.push(TreeStep {
                kind: "end",
                node: None,
            });
        }
        out.push(TreeStep {
            kind: "close",
            node: None,
        });
    }
    let mut out = Vec::new();
    if !tree.is_empty() {
        walk(tree, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_doctor::{AppHealth, LoopEvidence, ResourceHealth, ResourceRef, Verdict};
    use serde_json::json;

    #[test]
    fn the_tree_nests_owned_objects_and_conditions_put_the_loop_first() {
        let obj = |kind: &str, name: &str, uid: &str, owner: Option<&str>| {
            let mut o = json!({"apiVersion": if kind == "Pod" { "v1" } else { "apps/v1" }, "kind": kind,
                "metadata": {"name": name, "namespace": "web", "uid": uid}});
            if let Some(owner) = owner {
                o["metadata"]["ownerReferences"] =
                    json!([{"uid": owner, "kind": "x", "name": "x"}]);
            }
            o
        };
        let live = vec![
            obj("Deployment", "api", "d1", None),
            obj("ReplicaSet", "api-1", "r1", Some("d1")),
            obj("Pod", "api-1-a", "p1", Some("r1")),
            obj("Pod", "other", "p2", Some("nobody")),
        ];
        let report = Report {
            app: "a".into(),
            verdict: Verdict::InSync,
            loop_evidence: LoopEvidence::default(),
            health: Some(AppHealth {
                status: "Healthy".into(),
                resources: vec![ResourceHealth {
                    resource: ResourceRef {
                        group: "apps".into(),
                        kind: "Deployment".into(),
                        namespace: "web".into(),
                        name: "api".into(),
                    },
                    status: "Healthy".into(),
                    message: String::new(),
                    source: "builtin".into(),
                }],
            }),
            findings: Vec::new(),
        };
        let app = json!({"status": {
            "conditions": [{"type": "ComparisonError", "message": "m"}, {"type": "SyncLoop", "message": "loop"}],
            "operationState": {"phase": "Succeeded", "syncResult": {"revision": "r", "resources": [
                {"group": "apps", "kind": "Deployment", "namespace": "web", "name": "api", "status": "Synced", "message": "configured"}]}}}});
        let out: HashSet<String> = ["apps/Deployment web/api".to_string()].into();
        let e = extras(&app, &live, &out, &report);
        assert_eq!(e.conditions[0].kind, "SyncLoop");
        assert_eq!(e.tree.len(), 1);
        let d = &e.tree[0];
        assert_eq!(
            (d.resource.as_str(), d.sync.as_str(), d.health.as_str()),
            ("apps/Deployment web/api", "OutOfSync", "Healthy")
        );
        assert_eq!(d.children[0].resource, "apps/ReplicaSet web/api-1");
        assert_eq!(d.children[0].children[0].resource, "/Pod web/api-1-a");
        let kinds: Vec<&str> = e.steps().iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                "open", "item", "open", "item", "open", "item", "end", "close", "end", "close",
                "end", "close"
            ]
        );
        let op = e.operation.expect("operation");
        assert_eq!(op.results[0].resource, "apps/Deployment web/api");
        assert_eq!(op.results[0].message, "configured");
    }
}
