//! Typed canonicalisation of built-in kinds: Argo CD's `remarshal`.
//!
//! Argo CD decodes a built-in object into its Go struct (rejecting unknown fields),
//! encodes it back, and keeps only the keys the original had, with the typed values.
//! That folds quantities (`1000m` → `1`), integral floats, and drops the empty values
//! Go omits (`imagePullSecrets: []`, nested `creationTimestamp: null`, `readOnly: false`
//! on a non-pointer field). If the decode fails for any reason (an unknown or newer
//! field, a wrong type, an invalid quantity) the whole object is left as it was —
//! faithfully reproduced here, because it explains real OutOfSync reports
//! (argo-cd #16400).

use plumb_core::quantity::Quantity;
use plumb_core::schema::{FieldDef, FieldType, Schema, TypeDef};
use serde_json::{Map, Number, Value};

/// Why a typed decode failed (the object is then compared un-canonicalised).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeFailure {
    pub path: String,
    pub reason: &'static str,
}

/// Canonicalises a built-in object; returns it unchanged (with the reason) when
/// the typed decode fails or the kind is not built in.
pub fn remarshal(obj: &Value, schema: &Schema) -> Result<Value, DecodeFailure> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let group = plumb_core::group_of_api_version(api_version);
    if !schema.is_builtin(group, kind) {
        return Err(DecodeFailure {
            path: String::new(),
            reason: "not a built-in kind",
        });
    }
    let Some(root) = schema.root(api_version, kind) else {
        return Err(DecodeFailure {
            path: String::new(),
            reason: "no schema for this version",
        });
    };
    let mut path = String::new();
    canon_object(obj, root, schema, &mut path, true)
}

/// Canonicalises `value` as the built-in type `type_name` (knownTypeFields).
/// Unlike [`remarshal`], unknown keys are dropped rather than failing the decode
/// (Argo CD's known-types normalizer uses a plain, non-strict `json.Unmarshal`).
pub fn canonicalize_as(
    value: &Value,
    field: &FieldDef,
    schema: &Schema,
) -> Result<Value, DecodeFailure> {
    let mut path = String::new();
    Ok(canon_field(value, field, schema, &mut path, false)?.unwrap_or(Value::Null))
}

fn fail(path: &str, reason: &'static str) -> DecodeFailure {
    DecodeFailure {
        path: path.to_string(),
        reason,
    }
}

pub(crate) fn canon_object(
    v: &Value,
    ty: &TypeDef,
    schema: &Schema,
    path: &mut String,
    strict: bool,
) -> Result<Value, DecodeFailure> {
    let Value::Object(m) = v else {
        return Err(fail(path, "expected an object"));
    };
    let mut out = Map::new();
    for (k, fv) in m {
        let Some(f) = ty.fields.get(k) else {
            if !strict {
                continue;
            }
            let p = format!("{path}/{k}");
            return Err(fail(&p, "unknown field"));
        };
        let len = path.len();
        path.push('/');
        path.push_str(k);
        let c = canon_field(fv, f, schema, path, strict)?;
        path.truncate(len);
        if let Some(c) = c {
            out.insert(k.clone(), c);
        }
    }
    Ok(Value::Object(out))
}

fn integral(n: &Number) -> Option<Number> {
    if n.is_i64() || n.is_u64() {
        return Some(n.clone());
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.3e18).then(|| Number::from(f as i64))
}

/// `Ok(None)`: the key disappears in the typed round trip.
fn canon_field(
    v: &Value,
    f: &FieldDef,
    schema: &Schema,
    path: &mut String,
    strict: bool,
) -> Result<Option<Value>, DecodeFailure> {
    // Non-pointer scalars and slices/maps tagged omitempty vanish when empty; null never survives.
    let omit_zero = f.omitempty && !f.ptr;
    if v.is_null() {
        return Ok(None);
    }
    let out = match f.t {
        FieldType::String => match v {
            Value::String(s) => (!(omit_zero && s.is_empty())).then(|| v.clone()),
            _ => return Err(fail(path, "expected a string")),
        },
        FieldType::Integer => match v {
            Value::Number(n) => {
                let n = integral(n).ok_or_else(|| fail(path, "expected an integer"))?;
                (!(omit_zero && n.as_i64() == Some(0))).then_some(Value::Number(n))
            }
            _ => return Err(fail(path, "expected an integer")),
        },
        FieldType::Number => match v {
            Value::Number(n) => {
                let n = integral(n).unwrap_or_else(|| n.clone());
                (!(omit_zero && n.as_f64() == Some(0.0))).then_some(Value::Number(n))
            }
            _ => return Err(fail(path, "expected a number")),
        },
        FieldType::Boolean => match v {
            Value::Bool(b) => (!omit_zero || *b).then(|| v.clone()),
            _ => return Err(fail(path, "expected a boolean")),
        },
        FieldType::Quantity => {
            let q = Quantity::from_json(v).ok_or_else(|| fail(path, "invalid quantity"))?;
            Some(Value::String(q.canonical()))
        }
        FieldType::Intstr => match v {
            Value::String(_) => Some(v.clone()),
            Value::Number(n) => Some(Value::Number(
                integral(n).ok_or_else(|| fail(path, "expected int or string"))?,
            )),
            _ => return Err(fail(path, "expected int or string")),
        },
        FieldType::Time => match v {
            Value::String(s) if s.is_empty() => None,
            Value::String(_) => Some(v.clone()),
            _ => return Err(fail(path, "expected a timestamp")),
        },
        FieldType::Object => {
            let ty = schema
                .field_type(f)
                .ok_or_else(|| fail(path, "unknown type"))?;
            Some(canon_object(v, ty, schema, path, strict)?)
        }
        FieldType::List => {
            let Value::Array(items) = v else {
                return Err(fail(path, "expected a list"));
            };
            if omit_zero_collection(f) && items.is_empty() {
                None
            } else {
                let item_def = f
                    .items
                    .as_deref()
                    .ok_or_else(|| fail(path, "list without item type"))?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    out.push(
                        canon_field(item, item_def, schema, path, strict)?
                            .unwrap_or_else(|| zero_of(item_def)),
                    );
                    path.truncate(len);
                }
                Some(Value::Array(out))
            }
        }
        FieldType::Map => {
            let Value::Object(m) = v else {
                return Err(fail(path, "expected a map"));
            };
            if omit_zero_collection(f) && m.is_empty() {
                None
            } else {
                let vdef = f
                    .values
                    .as_deref()
                    .ok_or_else(|| fail(path, "map without value type"))?;
                let mut out = Map::new();
                for (k, item) in m {
                    let len = path.len();
                    path.push('/');
                    path.push_str(k);
                    let c = canon_field(item, vdef, schema, path, strict)?
                        .unwrap_or_else(|| zero_of(vdef));
                    path.truncate(len);
                    out.insert(k.clone(), c);
                }
                Some(Value::Object(out))
            }
        }
        FieldType::Any => Some(v.clone()),
    };
    Ok(out)
}

/// Slices and maps are omitted when empty under omitempty, pointer or not.
fn omit_zero_collection(f: &FieldDef) -> bool {
    f.omitempty
}

/// What a list item or map value that encodes as nothing becomes (Go's zero value).
fn zero_of(f: &FieldDef) -> Value {
    match f.t {
        FieldType::String => Value::String(String::new()),
        FieldType::Integer | FieldType::Number => Value::from(0),
        FieldType::Boolean => Value::Bool(false),
        FieldType::Object => Value::Object(Map::new()),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(v: Value) -> Result<Value, DecodeFailure> {
        remarshal(&v, Schema::builtin())
    }

    #[test]
    fn quantities_and_nested_null_timestamps() {
        let d = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "a", "creationTimestamp": null},
            "spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": 0.2, "memory": "1024Mi"}}}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "d", "creationTimestamp": null}}]}});
        let c = canon(d).unwrap();
        assert_eq!(
            c.pointer("/spec/template/spec/containers/0/resources/requests/cpu"),
            Some(&json!("200m"))
        );
        assert_eq!(
            c.pointer("/spec/template/spec/containers/0/resources/requests/memory"),
            Some(&json!("1Gi"))
        );
        assert!(
            c.pointer("/spec/template/metadata/creationTimestamp")
                .is_none()
        );
        assert!(
            c.pointer("/spec/volumeClaimTemplates/0/metadata/creationTimestamp")
                .is_none()
        );
    }

    #[test]
    fn omitempty_respects_pointers() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"},
            "spec": {"replicas": 0, "paused": false, "template": {"spec": {"containers": [{"name": "c",
                "volumeMounts": [{"name": "v", "mountPath": "/x", "readOnly": false}]}],
                "imagePullSecrets": []}}}});
        let c = canon(d).unwrap();
        assert_eq!(
            c.pointer("/spec/replicas"),
            Some(&json!(0)),
            "*int32 keeps an explicit zero"
        );
        assert!(
            c.pointer("/spec/paused").is_none(),
            "bool omitempty drops false"
        );
        assert!(
            c.pointer("/spec/template/spec/containers/0/volumeMounts/0/readOnly")
                .is_none()
        );
        assert!(c.pointer("/spec/template/spec/imagePullSecrets").is_none());
    }

    #[test]
    fn decode_failure_leaves_object_alone() {
        let bad = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"},
            "spec": {"revisionHistoryLimit": "badValue", "template": {"spec": {"containers": [{"name": "c",
                "resources": {"requests": {"cpu": "1000m"}}}]}}}});
        let err = canon(bad).unwrap_err();
        assert_eq!(err.path, "/spec/revisionHistoryLimit");
        let unknown = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "invalidKey": "asdf"});
        assert_eq!(canon(unknown).unwrap_err().reason, "unknown field");
        let q = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [
            {"name": "c", "resources": {"limits": {"cpu": "invalid"}}}]}});
        assert_eq!(canon(q).unwrap_err().reason, "invalid quantity");
    }

    #[test]
    fn custom_resources_are_not_built_in() {
        let cr = json!({"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret", "metadata": {"name": "a"}});
        assert!(canon(cr).is_err());
    }
}
