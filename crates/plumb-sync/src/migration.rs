//! Client-side apply migration (Argo CD's `ClientSideApplyMigration`, on by default): before a
//! server-side apply, the fields a client-side apply manager owns (`operation: Update`) are
//! handed to plumb's `Apply` entry, so that the server-side apply also removes what git no
//! longer declares. Without it, those fields keep their old owner and a field dropped from git
//! stays in the cluster for ever (Kubernetes' "migration between client-side and server-side
//! apply"; kubectl's `csaupgrade`).
//!
//! The managers migrated: the Application's `argocd.argoproj.io/client-side-apply-migration-manager`
//! annotation, or `kubectl-client-side-apply` (Argo CD's default) — and always plumb's own
//! client-side apply entry (`plumb`, `Update`).

use serde_json::{Map, Value};

/// The Application annotation naming the manager to migrate from.
pub const MIGRATION_MANAGER_ANNOTATION: &str =
    "argocd.argoproj.io/client-side-apply-migration-manager";
/// Argo CD's default manager to migrate from.
pub const DEFAULT_MIGRATION_MANAGER: &str = "kubectl-client-side-apply";

/// The `metadata.managedFields` live should have before `to` applies server-side: every entry
/// of a manager in `from` with `operation: Update` on the main resource is removed and its
/// fields are added to `to`'s `Apply` entry (created from the first of them when there is none).
/// `None` when there is nothing to migrate.
pub fn migrate_managed_fields(live: &Value, from: &[&str], to: &str) -> Option<Vec<Value>> {
    let entries = live.pointer("/metadata/managedFields")?.as_array()?;
    let is = |e: &Value, manager: &str, operation: &str| {
        e.get("manager").and_then(Value::as_str) == Some(manager)
            && e.get("operation").and_then(Value::as_str) == Some(operation)
            && e.get("subresource")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
    };
    // Field sets of one API version only (kubectl's csaupgrade): the Apply entry's, or the
    // object's when there is none; entries of other versions stay as they are.
    let version = entries
        .iter()
        .find(|e| is(e, to, "Apply"))
        .and_then(|e| e.get("apiVersion"))
        .or_else(|| live.get("apiVersion"))
        .and_then(Value::as_str);
    let migrated = |e: &Value| {
        from.iter().any(|m| is(e, m, "Update"))
            && (version.is_none() || e.get("apiVersion").and_then(Value::as_str) == version)
    };
    if !entries.iter().any(migrated) {
        return None;
    }
    let mut out: Vec<Value> = Vec::with_capacity(entries.len());
    let mut fields = Value::Object(Map::new());
    let mut first: Option<&Value> = None;
    for e in entries {
        if migrated(e) {
            first.get_or_insert(e);
            union(&mut fields, e.get("fieldsV1").unwrap_or(&Value::Null));
        } else {
            out.push(e.clone());
        }
    }
    match out.iter_mut().find(|e| is(e, to, "Apply")) {
        Some(apply) => {
            let mut merged = apply
                .get("fieldsV1")
                .cloned()
                .unwrap_or(Value::Object(Map::new()));
            union(&mut merged, &fields);
            apply["fieldsV1"] = merged;
        }
        None => {
            let mut apply = first.cloned().unwrap_or(Value::Object(Map::new()));
            apply["manager"] = Value::String(to.to_string());
            apply["operation"] = Value::String("Apply".to_string());
            apply["fieldsType"] = Value::String("FieldsV1".to_string());
            apply["fieldsV1"] = fields;
            out.push(apply);
        }
    }
    Some(out)
}

/// Adds every path of the FieldsV1 set `other` to `into` (both nested objects keyed by
/// `f:`, `k:`, `v:`, `i:` and `.`).
fn union(into: &mut Value, other: &Value) {
    let Value::Object(o) = other else {
        return;
    };
    if !into.is_object() {
        *into = Value::Object(Map::new());
    }
    let Value::Object(i) = into else {
        return;
    };
    for (k, v) in o {
        union(
            i.entry(k.clone())
                .or_insert_with(|| Value::Object(Map::new())),
            v,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, operation: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    #[test]
    fn client_side_fields_move_to_the_apply_entry() {
        let csa = entry(
            "kubectl-client-side-apply",
            "Update",
            json!({"f:data": {"f:a": {}, "f:gone": {}}, "f:metadata": {"f:annotations": {".": {}}}}),
        );
        let ssa = entry("plumb", "Apply", json!({"f:data": {"f:a": {}, "f:b": {}}}));
        let other = entry("kube-controller-manager", "Update", json!({"f:status": {}}));
        let status = json!({"manager": "kubectl-client-side-apply", "operation": "Update",
            "subresource": "status", "fieldsV1": {"f:status": {}}});
        let mut old_version = entry("kubectl-client-side-apply", "Update", json!({"f:x": {}}));
        old_version["apiVersion"] = json!("v1beta1");
        let live = json!({"apiVersion": "v1",
            "metadata": {"managedFields": [csa, ssa, other, status, old_version.clone()]}});
        let out = migrate_managed_fields(&live, &[DEFAULT_MIGRATION_MANAGER, "plumb"], "plumb")
            .expect("something to migrate");
        assert_eq!(out.len(), 4, "the CSA entry is gone: {out:?}");
        assert_eq!(
            out[3], old_version,
            "another API version's entry is not merged"
        );
        assert_eq!(
            out[0]["fieldsV1"],
            json!({"f:data": {"f:a": {}, "f:b": {}, "f:gone": {}}, "f:metadata": {"f:annotations": {".": {}}}})
        );
        assert_eq!(out[1], other, "other managers are untouched");
        assert_eq!(
            out[2], status,
            "a subresource entry is not client-side apply"
        );
        // Migrated once, nothing is left to migrate.
        let again = json!({"metadata": {"managedFields": out}});
        assert_eq!(
            migrate_managed_fields(&again, &[DEFAULT_MIGRATION_MANAGER], "plumb"),
            None
        );
    }

    #[test]
    fn without_an_apply_entry_one_is_made() {
        let live = json!({"metadata": {"managedFields": [
            entry("plumb", "Update", json!({"f:data": {"f:x": {}}})),
            entry("kubectl-client-side-apply", "Update", json!({"f:data": {"f:y": {}}})),
        ]}});
        let out =
            migrate_managed_fields(&live, &[DEFAULT_MIGRATION_MANAGER, "plumb"], "plumb").unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["manager"], "plumb");
        assert_eq!(out[0]["operation"], "Apply");
        assert_eq!(out[0]["apiVersion"], "v1");
        assert_eq!(
            out[0]["fieldsV1"],
            json!({"f:data": {"f:x": {}, "f:y": {}}})
        );
        assert_eq!(
            migrate_managed_fields(&json!({"metadata": {}}), &["plumb"], "plumb"),
            None
        );
    }
}
