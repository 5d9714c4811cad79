//! `RespectIgnoreDifferences=true`: the object a sync applies keeps live's values for
//! the ignored fields, so a sync stops fighting whoever owns them (argo-cd #7820).
//!
//! As Argo CD's `normalizeTargetResources`: normalise desired and live with the ignore
//! rules (managed fields, pointers, jq); take the patch that turns normalized live back
//! into live — exactly the ignored fields, with live's values — and apply it to
//! normalized desired. `status` is never copied from live. A resource being created
//! (no live object) is applied as desired has it.

use crate::merge::{self, Semantics};
use crate::{DiffConfig, DiffError, ignore};
use plumb_core::ResourceKey;
use plumb_core::schema::{Schema, TypeDef};
use plumb_core::value::json_eq;
use serde_json::{Map, Value};

/// The desired object a sync should apply with `RespectIgnoreDifferences=true`.
pub fn normalize_target_for_sync(
    desired: &Value,
    live: Option<&Value>,
    cfg: &DiffConfig,
) -> Result<Value, DiffError> {
    let Some(live) = live else {
        return Ok(desired.clone());
    };
    let schema = Schema::builtin();
    let key = ResourceKey::of(desired)
        .or_else(|| ResourceKey::of(live))
        .unwrap_or_default();
    let mut live = live.clone();
    if let Some(o) = live.as_object_mut() {
        o.remove("status");
    }
    let mut n_target = desired.clone();
    let mut n_live = live.clone();
    let managers = cfg.ignore.managers_for(&key);
    ignore::normalize_managed_fields(&mut n_live, &mut n_target, &managers);
    for v in [&mut n_target, &mut n_live] {
        crate::apply_ignore(cfg, &key, v)?;
    }
    let api_version = desired
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = desired.get("kind").and_then(Value::as_str).unwrap_or("");
    let builtin = schema.is_builtin(&key.group, kind);
    let ty = if builtin {
        schema.root(api_version, kind)
    } else {
        None
    };
    let Some(patch) = diff_patch(&n_live, &live, ty, schema, builtin) else {
        return Ok(n_target);
    };
    let sem = if builtin {
        Semantics::Strategic(schema, ty)
    } else {
        Semantics::Json
    };
    // Applying the patch = merging it into normalized desired with no deletions (and no
    // `$retainKeys`: the patch holds only live's ignored values, not all its keys).
    Ok(merge::apply_patch(&patch, &n_target, sem))
}

/// The values of `to` that `from` lacks or has differently. Lists with a merge key
/// (built-in kinds) yield per-element patches carrying the key; other lists whole.
fn diff_patch(
    from: &Value,
    to: &Value,
    ty: Option<&TypeDef>,
    schema: &Schema,
    strategic: bool,
) -> Option<Value> {
    match (from, to) {
        (Value::Object(f), Value::Object(t)) => {
            let mut out = Map::new();
            for (k, tv) in t {
                let field = ty.and_then(|ty| ty.fields.get(k));
                match f.get(k) {
                    None => {
                        out.insert(k.clone(), tv.clone());
                    }
                    Some(fv) if json_eq(fv, tv) => {}
                    Some(fv) => {
                        let sub_ty = field.and_then(|f| schema.value_type(f));
                        let keyed = field.filter(|f| strategic && f.merges()).and_then(|f| {
                            let item_ty = f.items.as_deref().and_then(|i| schema.field_type(i));
                            f.merge_key.as_deref().map(|k| (k, item_ty))
                        });
                        let p = match (fv, tv, keyed) {
                            (Value::Array(fa), Value::Array(ta), Some((mk, item_ty))) => {
                                keyed_patch(fa, ta, mk, item_ty, schema).map(Value::Array)
                            }
                            (Value::Object(_), Value::Object(_), _) => {
                                diff_patch(fv, tv, sub_ty, schema, strategic)
                            }
                            _ => Some(tv.clone()),
                        };
                        if let Some(p) = p {
                            out.insert(k.clone(), p);
                        }
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        _ => (!json_eq(from, to)).then(|| to.clone()),
    }
}

fn keyed_patch(
    from: &[Value],
    to: &[Value],
    key: &str,
    item_ty: Option<&TypeDef>,
    schema: &Schema,
) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    for t in to {
        let Some(k) = t.get(key) else { continue };
        match from
            .iter()
            .find(|f| f.get(key).is_some_and(|x| json_eq(x, k)))
        {
            None => out.push(t.clone()),
            Some(f) => {
                if let Some(Value::Object(mut p)) = diff_patch(f, t, item_ty, schema, true) {
                    p.insert(key.to_string(), k.clone());
                    out.push(Value::Object(p));
                }
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Ignoring `rollingUpdate` keeps live's value there and desired's `type` beside it:
    /// `$retainKeys` does not clear what the patch of ignored values does not name.
    #[test]
    fn an_ignored_field_beside_a_retain_keys_sibling() {
        let app = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "web"},
            "spec": {"ignoreDifferences": [{"group": "apps", "kind": "Deployment",
                "jsonPointers": ["/spec/strategy/rollingUpdate"]}]}});
        let app = plumb_core::argo::Application::from_value(&app).expect("app");
        let cfg = DiffConfig::for_app(
            &plumb_core::argo::Settings::default(),
            Some(&app),
            "app.yaml",
            std::time::Duration::from_secs(1),
        )
        .expect("config");
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3}}}});
        let applied = normalize_target_for_sync(&desired, Some(&live), &cfg).expect("applied");
        assert_eq!(
            applied["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3}})
        );
    }
}
