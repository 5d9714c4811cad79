//! The leaf values that differ between normalized live and predicted live, with a
//! JSON pointer into the live object (list indexes), for `-o json` and the doctor.

use plumb_core::schema::{FieldType, Schema, TypeDef};
use plumb_core::value::json_eq;
use serde::Serialize;
use serde_json::{Map, Value};

/// One differing leaf. A side where the value is absent is `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired: Option<Value>,
}

/// Lists differing leaves. Lists with a merge key (built-in kinds) pair elements by
/// that key; other lists pair by index.
pub fn changed_fields(live: &Value, predicted: &Value) -> Vec<FieldChange> {
    let schema = Schema::builtin();
    let ty = match (
        predicted.get("apiVersion").or(live.get("apiVersion")),
        predicted.get("kind").or(live.get("kind")),
    ) {
        (Some(Value::String(av)), Some(Value::String(k))) => schema.root(av, k),
        _ => None,
    };
    let mut out = Vec::new();
    walk(
        Some(live),
        Some(predicted),
        &mut String::new(),
        ty,
        schema,
        &mut out,
    );
    out
}

/// Calls `f` with each key of either map (sorted, each once) and `path` extended by
/// the key's pointer token.
fn each_key<'a>(
    l: &'a Map<String, Value>,
    d: &'a Map<String, Value>,
    path: &mut String,
    mut f: impl FnMut(&'a String, &mut String),
) {
    let mut keys: Vec<&String> = l
        .keys()
        .chain(d.keys().filter(|k| !l.contains_key(*k)))
        .collect();
    keys.sort();
    for k in keys {
        let len = path.len();
        path.push('/');
        path.push_str(&escape(k));
        f(k, path);
        path.truncate(len);
    }
}

fn escape(k: &str) -> String {
    plumb_core::pointer::escape_token(k).into_owned()
}

fn walk(
    live: Option<&Value>,
    desired: Option<&Value>,
    path: &mut String,
    ty: Option<&TypeDef>,
    schema: &Schema,
    out: &mut Vec<FieldChange>,
) {
    match (live, desired) {
        (Some(Value::Object(l)), Some(Value::Object(d))) => {
            each_key(l, d, path, |k, path| {
                let f = ty.and_then(|t| t.fields.get(k.as_str()));
                let sub_ty = f.and_then(|f| schema.value_type(f));
                match f {
                    Some(f) if f.t == FieldType::List && f.merge_key.is_some() && f.merges() => {
                        let item_ty = f.items.as_deref().and_then(|i| schema.field_type(i));
                        walk_keyed(
                            l.get(k),
                            d.get(k),
                            f.merge_key.as_deref().unwrap_or(""),
                            path,
                            item_ty,
                            schema,
                            out,
                        );
                    }
                    Some(f) if f.t == FieldType::Map => {
                        let vty = f.values.as_deref().and_then(|v| schema.field_type(v));
                        walk_map_values(l.get(k), d.get(k), path, vty, schema, out);
                    }
                    _ => walk(l.get(k), d.get(k), path, sub_ty, schema, out),
                }
            });
        }
        (Some(Value::Array(l)), Some(Value::Array(d))) => {
            for i in 0..l.len().max(d.len()) {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                walk(l.get(i), d.get(i), path, ty, schema, out);
                path.truncate(len);
            }
        }
        (None, None) => {}
        (l, d) => {
            if l.zip(d).is_some_and(|(a, b)| json_eq(a, b)) {
                return;
            }
            // A container on one side only: report its leaves.
            match (l, d) {
                (Some(v @ (Value::Object(_) | Value::Array(_))), None) if !is_empty(Some(v)) => {
                    leaves(v, path, &mut |p, x| {
                        out.push(FieldChange {
                            path: p,
                            live: Some(x.clone()),
                            desired: None,
                        })
                    });
                }
                (None, Some(v @ (Value::Object(_) | Value::Array(_)))) if !is_empty(Some(v)) => {
                    leaves(v, path, &mut |p, x| {
                        out.push(FieldChange {
                            path: p,
                            live: None,
                            desired: Some(x.clone()),
                        })
                    });
                }
                _ => out.push(FieldChange {
                    path: path.clone(),
                    live: l.cloned(),
                    desired: d.cloned(),
                }),
            }
        }
    }
}

fn is_empty(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

fn leaves(v: &Value, path: &str, f: &mut dyn FnMut(String, &Value)) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                leaves(x, &format!("{path}/{}", escape(k)), f);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, &format!("{path}/{i}"), f);
            }
        }
        _ => f(path.to_string(), v),
    }
}

fn walk_map_values(
    live: Option<&Value>,
    desired: Option<&Value>,
    path: &mut String,
    vty: Option<&TypeDef>,
    schema: &Schema,
    out: &mut Vec<FieldChange>,
) {
    match (live, desired) {
        (Some(Value::Object(l)), Some(Value::Object(d))) => {
            each_key(l, d, path, |k, path| {
                walk(l.get(k), d.get(k), path, vty, schema, out);
            });
        }
        _ => walk(live, desired, path, None, schema, out),
    }
}

fn walk_keyed(
    live: Option<&Value>,
    desired: Option<&Value>,
    key: &str,
    path: &mut String,
    item_ty: Option<&TypeDef>,
    schema: &Schema,
    out: &mut Vec<FieldChange>,
) {
    let (Some(Value::Array(l)), Some(Value::Array(d))) = (live, desired) else {
        return walk(live, desired, path, None, schema, out);
    };
    let find = |list: &[Value], k: Option<&Value>| -> Option<usize> {
        let k = k?;
        list.iter()
            .position(|x| x.get(key).is_some_and(|y| json_eq(y, k)))
    };
    for (i, lv) in l.iter().enumerate() {
        let len = path.len();
        path.push_str(&format!("/{i}"));
        let di = find(d, lv.get(key));
        walk(Some(lv), di.map(|j| &d[j]), path, item_ty, schema, out);
        path.truncate(len);
    }
    for (j, dv) in d.iter().enumerate() {
        if find(l, dv.get(key)).is_none() || dv.get(key).is_none() {
            let len = path.len();
            // An element only desired has: addressed by its position in desired.
            path.push_str(&format!("/{j}"));
            walk(None, Some(dv), path, item_ty, schema, out);
            path.truncate(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keyed_lists_pair_by_key_and_paths_point_into_live() {
        let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [
            {"name": "side", "image": "s"}, {"name": "app", "image": "nginx", "imagePullPolicy": "Always"}]}}}});
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "nginx", "imagePullPolicy": "IfNotPresent"}, {"name": "side", "image": "s"}]}}}});
        let f = changed_fields(&live, &desired);
        assert_eq!(
            f,
            vec![FieldChange {
                path: "/spec/template/spec/containers/1/imagePullPolicy".into(),
                live: Some(json!("Always")),
                desired: Some(json!("IfNotPresent")),
            }]
        );
    }

    #[test]
    fn one_sided_values_omit_the_other_side() {
        let live = json!({"metadata": {"labels": {"a": "1"}}});
        let desired = json!({"metadata": {"labels": {"b": "2"}}});
        let f = changed_fields(&live, &desired);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].desired, None);
        assert_eq!(f[1].live, None);
    }
}
