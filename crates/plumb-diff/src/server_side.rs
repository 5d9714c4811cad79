//! Server-side diff (Argo CD's `ServerSideDiff=true`): predicted live is what a dry-run
//! server-side apply of desired returns. Webhooks and defaulting have run on it, so by
//! default every value plumb's field manager does not own reverts to its live value —
//! a mutating webhook's rewrite is then not a difference. With
//! `IncludeMutationWebhook=true` the dry-run result is kept whole.
//!
//! The dry run itself is a callback the caller supplies
//! ([`crate::compare::ServerSide`]), so this crate stays free of I/O.

use crate::{DiffConfig, DiffError, DiffResult, ignore, key_of, prepare};
use plumb_core::fieldpath::{FieldSet, PathElement};
use plumb_core::schema::Schema;
use plumb_core::value::json_eq;
use serde_json::Value;

/// The fields `manager` owns by apply, from an object's `managedFields`.
pub fn owned_by(obj: &Value, manager: &str) -> FieldSet {
    let mut out = FieldSet::default();
    for e in obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let is_manager = e.get("manager").and_then(Value::as_str) == Some(manager)
            && e.get("operation").and_then(Value::as_str) == Some("Apply")
            && e.get("subresource").is_none_or(|s| s.as_str() == Some(""));
        if is_manager && let Some(set) = e.get("fieldsV1").and_then(|f| FieldSet::parse(f).ok()) {
            out.children.extend(set.children);
            out.member |= set.member;
        }
    }
    out
}

/// Reverts in `predicted` every value not owned by `owned` to its value in `live`
/// (removing what live lacks: a webhook-injected sidecar goes, a defaulted field that
/// live also has stays as live has it).
pub fn revert_unowned(predicted: &mut Value, live: &Value, owned: &FieldSet) {
    walk(predicted, Some(live), owned);
}

fn child(set: &FieldSet, pred: impl Fn(&PathElement) -> bool) -> Option<&FieldSet> {
    set.children.iter().find(|(e, _)| pred(e)).map(|(_, s)| s)
}

fn walk(p: &mut Value, l: Option<&Value>, set: &FieldSet) {
    if set.children.is_empty() && set.member {
        return; // owned whole
    }
    match p {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let lv = l.and_then(|l| l.get(&k));
                match child(set, |e| matches!(e, PathElement::Field(f) if *f == k)) {
                    Some(sub) => {
                        if let Some(pv) = m.get_mut(&k) {
                            walk(pv, lv, sub);
                        }
                    }
                    None => match lv {
                        Some(lv) => {
                            m.insert(k, lv.clone());
                        }
                        None => {
                            m.remove(&k);
                        }
                    },
                }
            }
        }
        Value::Array(items) => {
            let live_items: &[Value] = l.and_then(Value::as_array).map_or(&[], Vec::as_slice);
            // The key fields this list is keyed by, as the set spells its elements.
            let key_names: Vec<String> = set
                .children
                .iter()
                .find_map(|(e, _)| match e {
                    PathElement::Key(k) => Some(k.keys().cloned().collect()),
                    _ => None,
                })
                .unwrap_or_default();
            let same = |a: &Value, b: &Value| {
                if key_names.is_empty() {
                    json_eq(a, b)
                } else {
                    key_names.iter().all(|k| match (a.get(k), b.get(k)) {
                        (Some(x), Some(y)) => json_eq(x, y),
                        (None, None) => true,
                        _ => false,
                    })
                }
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, mut item) in std::mem::take(items).into_iter().enumerate() {
                let owned = child(set, |e| match e {
                    PathElement::Key(k) => k
                        .iter()
                        .all(|(f, want)| item.get(f).is_some_and(|have| json_eq(have, want))),
                    PathElement::Value(v) => json_eq(v, &item),
                    PathElement::Index(j) => *j == i,
                    PathElement::Field(_) => false,
                });
                let live_item = live_items.iter().find(|li| same(li, &item));
                match (owned, live_item) {
                    (Some(sub), li) => {
                        walk(&mut item, li, sub);
                        out.push(item);
                    }
                    (None, Some(li)) => out.push(li.clone()),
                    (None, None) => {} // added by someone else than plumb: not predicted
                }
            }
            *items = out;
        }
        _ => {
            // An unowned scalar under an owned parent is handled by the parent.
        }
    }
}

/// Compares live with a dry-run apply's result, as Argo CD's server-side diff does.
pub fn diff_server_side(
    live: Value,
    mut predicted: Value,
    manager: &str,
    include_mutation_webhook: bool,
    cfg: &DiffConfig,
) -> Result<DiffResult, DiffError> {
    let schema = Schema::builtin();
    let mut live = live;
    if !include_mutation_webhook {
        let owned = owned_by(&predicted, manager);
        revert_unowned(&mut predicted, &live, &owned);
    }
    let managers = cfg.ignore.managers_for(&key_of(&live));
    ignore::normalize_managed_fields(&mut live, &mut predicted, &managers);
    for v in [&mut live, &mut predicted] {
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            // Bookkeeping a dry run rewrites (a new entry for plumb's manager, times).
            meta.remove("managedFields");
        }
    }
    let live = prepare(live, cfg, schema)?;
    let predicted = prepare(predicted, cfg, schema)?;
    Ok(DiffResult {
        modified: !json_eq(&live, &predicted),
        normalized_live: live,
        predicted_live: predicted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dep(policy: &str, extra_container: bool, managed: Value) -> Value {
        let mut containers = vec![
            json!({"name": "api", "image": "api:1", "imagePullPolicy": policy,
            "terminationMessagePath": "/dev/termination-log"}),
        ];
        if extra_container {
            containers.push(json!({"name": "istio-proxy", "image": "proxy:1"}));
        }
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod", "generation": 4, "managedFields": managed},
            "spec": {"replicas": 3, "template": {"spec": {"containers": containers}}}})
    }

    /// A server-side diff as plumb's field manager, with the default config.
    fn diff_as_plumb(live: Value, predicted: Value, include_mutation_webhook: bool) -> DiffResult {
        let cfg = DiffConfig::default();
        diff_server_side(live, predicted, "plumb", include_mutation_webhook, &cfg).unwrap()
    }

    fn plumb_owns(fields: Value) -> Value {
        json!([{"manager": "plumb", "operation": "Apply", "fieldsV1": fields}])
    }

    #[test]
    fn webhook_mutations_revert_unless_included() {
        let owns = plumb_owns(
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"api\"}": {".": {}, "f:name": {}, "f:image": {}, "f:imagePullPolicy": {}}}}}}}),
        );
        // git says IfNotPresent; the webhook forced Always on the dry run and live.
        let live = dep("Always", true, json!([]));
        let mut predicted = dep("Always", true, owns.clone());
        // plumb owns imagePullPolicy, so the dry run's value is kept: it is what the apply
        // would leave (the webhook wins every time), and live agrees.
        let r = diff_as_plumb(live.clone(), predicted.clone(), false);
        assert!(!r.modified, "the dry run predicts what live already is");

        // A field plumb owns and git changed is a difference.
        predicted["spec"]["template"]["spec"]["containers"][0]["image"] = json!("api:2");
        let r = diff_as_plumb(live.clone(), predicted.clone(), false);
        assert!(r.modified);

        // Fields plumb does not own revert to live: replicas (an HPA's), the sidecar, generation.
        let mut p2 = dep("Always", true, owns.clone());
        p2["spec"]["template"]["spec"]["containers"][1]["image"] = json!("proxy:2");
        p2["spec"]["replicas"] = json!(1);
        p2["metadata"]["generation"] = json!(5);
        let r = diff_as_plumb(dep("Always", true, json!([])), p2.clone(), false);
        assert!(!r.modified, "{:#}", r.predicted_live);

        // With IncludeMutationWebhook the dry-run result is taken whole.
        let r = diff_as_plumb(dep("Always", true, json!([])), p2, true);
        assert!(r.modified);
    }

    #[test]
    fn injected_elements_plumb_does_not_own_are_dropped() {
        let owns = plumb_owns(
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"api\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}}),
        );
        let mut predicted = dep("IfNotPresent", true, owns);
        let owned = owned_by(&predicted, "plumb");
        revert_unowned(
            &mut predicted,
            &dep("IfNotPresent", false, json!([])),
            &owned,
        );
        let names: Vec<&str> = predicted["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["api"]);
        assert_eq!(
            predicted["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent",
            "unowned, reverted to live's value"
        );
    }
}
