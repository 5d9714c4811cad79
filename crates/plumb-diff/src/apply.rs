//! Client-side apply (`ServerSideApply=false`): the change `kubectl apply` makes to a live
//! object, as one JSON merge patch.
//!
//! kubectl sends a three-way strategic merge patch built from last-applied, desired and
//! live; the API server applies it to live. plumb computes that result itself — the same
//! three-way merge the diff predicts live with ([`crate::merge::three_way`]: strategic
//! semantics with merge keys and `$retainKeys` for built-in kinds, JSON merge for custom
//! resources; keys last applied and gone from desired deleted; live-only keys kept) — and
//! sends the difference from live to it as an RFC 7386 merge patch. A list that changes is
//! sent whole, already merged, so the outcome equals the strategic patch's. The caller pins
//! the patch to live's `resourceVersion`, so nothing another writer did in between is lost.
//!
//! Without a last-applied annotation on live nothing is deleted (kubectl's rule); desired's
//! own annotation must already hold the new last-applied configuration.

use crate::merge::{self, Semantics};
use plumb_core::schema::Schema;
use plumb_core::value::json_eq;
use serde_json::{Map, Value};

/// The merge patch that turns `live` into what `kubectl apply` of `desired` leaves; `None`
/// when the apply would change nothing.
pub fn client_side_patch(desired: &Value, live: &Value) -> Option<Value> {
    let schema = Schema::builtin();
    let api_version = desired
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = desired.get("kind").and_then(Value::as_str).unwrap_or("");
    let group = plumb_core::group_of_api_version(api_version);
    let sem = if schema.is_builtin(group, kind) {
        Semantics::Strategic(schema, schema.root(api_version, kind))
    } else {
        Semantics::Json
    };
    let last = crate::last_applied(live);
    let intended = merge::three_way(last.as_ref(), desired, live, sem);
    merge_patch(live, &intended)
}

/// RFC 7386: the patch that turns `from` into `to` (objects recursively; anything else,
/// lists included, replaced whole; a key `to` lacks set to null).
pub fn merge_patch(from: &Value, to: &Value) -> Option<Value> {
    match (from, to) {
        (Value::Object(f), Value::Object(t)) => {
            let mut patch = Map::new();
            for (k, fv) in f {
                match t.get(k) {
                    None => {
                        patch.insert(k.clone(), Value::Null);
                    }
                    Some(tv) => {
                        if let Some(p) = merge_patch(fv, tv) {
                            patch.insert(k.clone(), p);
                        }
                    }
                }
            }
            for (k, tv) in t {
                if !f.contains_key(k) {
                    patch.insert(k.clone(), tv.clone());
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        _ if json_eq(from, to) => None,
        _ => Some(to.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn last_applied(v: &Value) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn merge_patch_round_trips() {
        let from = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}, "gone": true});
        let to = json!({"a": 1, "b": {"c": [2], "d": "x", "e": null}, "new": {"k": "v"}});
        let p = merge_patch(&from, &to).unwrap();
        assert_eq!(
            p,
            json!({"b": {"c": [2], "e": null}, "gone": null, "new": {"k": "v"}})
        );
        assert_eq!(merge_patch(&to, &to), None);
        // 1 and 1.0 are the same number: no patch.
        assert_eq!(merge_patch(&json!({"n": 1}), &json!({"n": 1.0})), None);
    }

    #[test]
    fn a_field_removed_from_git_is_deleted_and_live_only_fields_stay() {
        let before = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"team": "a", "old": "x"}}, "data": {"k": "1", "gone": "2"}});
        let plain = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"team": "a"}}, "data": {"k": "1"}});
        let mut desired = plain.clone();
        desired["metadata"]["annotations"] =
            json!({"kubectl.kubernetes.io/last-applied-configuration": last_applied(&plain)});
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "resourceVersion": "7", "labels": {"team": "a", "old": "x", "added-by-hand": "y"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied(&before)}},
            "data": {"k": "1", "gone": "2"}});
        let p = client_side_patch(&desired, &live).unwrap();
        assert_eq!(
            p,
            json!({"metadata": {"labels": {"old": null}, "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": last_applied(&plain)}},
                "data": {"gone": null}}),
            "the hand-added label stays; the new last-applied is recorded"
        );
        // Without last-applied, kubectl deletes nothing.
        let mut bare = live.clone();
        bare["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("annotations");
        assert_eq!(
            client_side_patch(&desired, &bare),
            Some(json!({"metadata": {"annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": last_applied(&plain)}}}))
        );
    }

    #[test]
    fn built_in_lists_merge_by_key_and_custom_resource_lists_are_atomic() {
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
            "spec": {"strategy": {"type": "Recreate"},
                "template": {"spec": {"containers": [{"name": "app", "image": "v2"}]}}}});
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
            "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                "template": {"spec": {"containers": [
                    {"name": "sidecar", "image": "s"},
                    {"name": "app", "image": "v1", "imagePullPolicy": "IfNotPresent"}]}}}});
        let p = client_side_patch(&desired, &live).unwrap();
        assert_eq!(
            p["spec"]["strategy"],
            json!({"type": "Recreate", "rollingUpdate": null}),
            "retainKeys: switching to Recreate clears rollingUpdate"
        );
        assert_eq!(
            p["spec"]["template"]["spec"]["containers"],
            json!([{"name": "sidecar", "image": "s"},
                   {"name": "app", "image": "v2", "imagePullPolicy": "IfNotPresent"}]),
            "the merged list, whole: the injected sidecar and the defaulted field stay"
        );

        let cr = |items: Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"items": items}});
        let p =
            client_side_patch(&cr(json!([{"a": 1}])), &cr(json!([{"a": 1}, {"b": 2}]))).unwrap();
        assert_eq!(p, json!({"spec": {"items": [{"a": 1}]}}));
    }
}
