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
//!
//! A `null` on a field without `omitempty` stays as Go writes the zero value (`null` for slices,
//! maps and pointers).

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
    let mut v = obj.clone();
    remarshal_in_place(&mut v, schema)?;
    Ok(v)
}

/// [`remarshal`] without the copy: `obj` is rewritten only when the whole typed decode
/// succeeds, and left exactly as it was otherwise.
pub fn remarshal_in_place(obj: &mut Value, schema: &Schema) -> Result<(), DecodeFailure> {
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
    let edits = {
        let mut walk = Walk {
            schema,
            path: Vec::new(),
            strict: true,
            edits: Vec::new(),
        };
        walk.object(obj, root)?;
        walk.edits
    };
    apply_edits(obj, edits);
    Ok(())
}

/// Canonicalises `value` as the built-in type `type_name` (knownTypeFields).
/// Unlike [`remarshal`], unknown keys are dropped rather than failing the decode
/// (Argo CD's known-types normalizer uses a plain, non-strict `json.Unmarshal`).
pub fn canonicalize_as(
    value: &Value,
    field: &FieldDef,
    schema: &Schema,
) -> Result<Value, DecodeFailure> {
    let mut v = value.clone();
    let (keep, edits) = {
        let mut walk = Walk {
            schema,
            path: Vec::new(),
            strict: false,
            edits: Vec::new(),
        };
        let keep = walk.field(&v, field)?;
        (keep, walk.edits)
    };
    apply_edits(&mut v, edits);
    Ok(if keep { v } else { Value::Null })
}

fn integral(n: &Number) -> Option<Number> {
    if n.is_i64() || n.is_u64() {
        return Some(n.clone());
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.3e18).then(|| Number::from(f as i64))
}

/// The typed decode as one read-only walk that records what the round trip changes
/// (few things, usually: a quantity spelled differently, a null, an empty omitempty
/// value); the edits are applied only when the whole decode succeeds, which keeps Go's
/// "all or nothing" without copying the object.
struct Walk<'s, 'v> {
    schema: &'s Schema,
    /// Where the value being decoded is; made into a JSON pointer only for a failure or an
    /// edit (rare), so the walk itself builds no strings.
    path: Vec<Seg<'v>>,
    /// Whether an unknown field fails the decode (else it is dropped).
    strict: bool,
    edits: Vec<(String, Edit)>,
}

/// One step of a path: a map key or a list index.
#[derive(Clone, Copy)]
enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

/// Applies the recorded edits (children before their parents, as recorded).
fn apply_edits(root: &mut Value, edits: Vec<(String, Edit)>) {
    for (ptr, edit) in edits {
        match edit {
            Edit::Set(v) => {
                if let Some(slot) = root.pointer_mut(&ptr) {
                    *slot = v;
                }
            }
            Edit::Remove => {
                let Some((parent, key)) = ptr.rsplit_once('/') else {
                    continue;
                };
                let key = plumb_core::pointer::unescape_token(key);
                if let Some(m) = root.pointer_mut(parent).and_then(Value::as_object_mut) {
                    m.remove(key.as_ref());
                }
            }
        }
    }
}

/// One change the typed round trip makes, at a JSON pointer.
enum Edit {
    Set(Value),
    Remove,
}

impl<'v> Walk<'_, 'v> {
    fn enter<T>(&mut self, seg: Seg<'v>, f: impl FnOnce(&mut Self) -> T) -> T {
        self.path.push(seg);
        let r = f(self);
        self.path.pop();
        r
    }

    /// The JSON pointer of the value being decoded.
    fn pointer(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        for seg in &self.path {
            match seg {
                Seg::Key(k) => {
                    out.push('/');
                    out.push_str(&plumb_core::pointer::escape_token(k));
                }
                Seg::Index(i) => {
                    let _ = write!(out, "/{i}");
                }
            }
        }
        out
    }

    fn fail(&self, reason: &'static str) -> DecodeFailure {
        DecodeFailure {
            path: self.pointer(),
            reason,
        }
    }

    fn set(&mut self, v: Value) {
        let at = self.pointer();
        self.edits.push((at, Edit::Set(v)));
    }

    fn object(&mut self, v: &'v Value, ty: &TypeDef) -> Result<(), DecodeFailure> {
        let Value::Object(m) = v else {
            return Err(self.fail("expected an object"));
        };
        for (k, fv) in m {
            let keep = match ty.fields.get(k) {
                Some(f) => self.enter(Seg::Key(k), |w| w.field(fv, f))?,
                None if self.strict => {
                    return Err(self.enter(Seg::Key(k), |w| w.fail("unknown field")));
                }
                None => false,
            };
            if !keep {
                self.enter(Seg::Key(k), |w| {
                    let at = w.pointer();
                    w.edits.push((at, Edit::Remove));
                });
            }
        }
        Ok(())
    }

    /// A null decodes to the field's zero value. Under omitempty the key then disappears;
    /// otherwise it is written back as Go writes the zero value (the original has the key,
    /// so the round trip keeps it): null for a slice, map or pointer (the API server writes
    /// a Role's `rules: null` so), "", 0 or false for a scalar. A non-pointer struct's zero
    /// value (a tree of zeros) is not reproduced: the key disappears, as before.
    fn null_field(&mut self, f: &FieldDef) -> bool {
        if f.omitempty {
            return false;
        }
        let zero = match f.t {
            _ if f.ptr => return true,
            FieldType::List | FieldType::Map | FieldType::Any | FieldType::Time => return true,
            FieldType::String => Value::String(String::new()),
            FieldType::Integer | FieldType::Number | FieldType::Intstr => Value::from(0),
            FieldType::Boolean => Value::Bool(false),
            FieldType::Quantity => Value::String("0".into()),
            FieldType::Object => return false,
        };
        self.set(zero);
        true
    }

    /// Decodes each element of a list or map with the element type `def`; an element that
    /// disappears in the round trip becomes `def`'s zero value instead (a list or map
    /// element cannot be omitted).
    fn elements(
        &mut self,
        items: impl Iterator<Item = (Seg<'v>, &'v Value)>,
        def: &FieldDef,
    ) -> Result<(), DecodeFailure> {
        for (seg, item) in items {
            self.enter(seg, |w| -> Result<(), DecodeFailure> {
                if !w.field(item, def)? {
                    w.set(zero_of(def));
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Decodes one field value; `Ok(false)`: the key disappears in the typed round trip.
    fn field(&mut self, v: &'v Value, f: &FieldDef) -> Result<bool, DecodeFailure> {
        // Non-pointer scalars and slices/maps tagged omitempty vanish when empty.
        let omit_zero = f.omitempty && !f.ptr;
        if v.is_null() {
            return Ok(self.null_field(f));
        }
        let keep = match f.t {
            FieldType::String => match v {
                Value::String(s) => !(omit_zero && s.is_empty()),
                _ => return Err(self.fail("expected a string")),
            },
            FieldType::Integer => match v {
                Value::Number(n) => {
                    let i = integral(n).ok_or_else(|| self.fail("expected an integer"))?;
                    let keep = !(omit_zero && i.as_i64() == Some(0));
                    if i != *n {
                        self.set(Value::Number(i));
                    }
                    keep
                }
                _ => return Err(self.fail("expected an integer")),
            },
            FieldType::Number => match v {
                Value::Number(n) => {
                    let i = integral(n).unwrap_or_else(|| n.clone());
                    let keep = !(omit_zero && i.as_f64() == Some(0.0));
                    if i != *n {
                        self.set(Value::Number(i));
                    }
                    keep
                }
                _ => return Err(self.fail("expected a number")),
            },
            FieldType::Boolean => match v {
                Value::Bool(b) => !omit_zero || *b,
                _ => return Err(self.fail("expected a boolean")),
            },
            FieldType::Quantity => {
                let q = Quantity::from_json(v).ok_or_else(|| self.fail("invalid quantity"))?;
                let canonical = q.canonical();
                if v.as_str() != Some(canonical.as_str()) {
                    self.set(Value::String(canonical));
                }
                true
            }
            FieldType::Intstr => match v {
                Value::String(_) => true,
                Value::Number(n) => {
                    let i = integral(n).ok_or_else(|| self.fail("expected int or string"))?;
                    if i != *n {
                        self.set(Value::Number(i));
                    }
                    true
                }
                _ => return Err(self.fail("expected int or string")),
            },
            FieldType::Time => match v {
                Value::String(s) => !s.is_empty(),
                _ => return Err(self.fail("expected a timestamp")),
            },
            FieldType::Object => {
                let ty = self
                    .schema
                    .field_type(f)
                    .ok_or_else(|| self.fail("unknown type"))?;
                self.object(v, ty)?;
                true
            }
            FieldType::List => {
                let Value::Array(items) = v else {
                    return Err(self.fail("expected a list"));
                };
                if omit_zero_collection(f) && items.is_empty() {
                    false
                } else {
                    let item_def = f
                        .items
                        .as_deref()
                        .ok_or_else(|| self.fail("list without item type"))?;
                    self.elements(
                        items.iter().enumerate().map(|(i, x)| (Seg::Index(i), x)),
                        item_def,
                    )?;
                    true
                }
            }
            FieldType::Map => {
                let Value::Object(m) = v else {
                    return Err(self.fail("expected a map"));
                };
                if omit_zero_collection(f) && m.is_empty() {
                    false
                } else {
                    let vdef = f
                        .values
                        .as_deref()
                        .ok_or_else(|| self.fail("map without value type"))?;
                    self.elements(m.iter().map(|(k, x)| (Seg::Key(k), x)), vdef)?;
                    true
                }
            }
            // Not decoded: only its numbers are canonicalised (what `prepare` would do after a
            // successful decode, which then need not walk the whole object again).
            FieldType::Any => {
                if plumb_core::value::has_noncanonical_numbers(v) {
                    let mut c = v.clone();
                    plumb_core::value::canonicalize_numbers(&mut c);
                    self.set(c);
                }
                true
            }
        };
        Ok(keep)
    }
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
        let mut in_place = bad.clone();
        let err = remarshal_in_place(&mut in_place, Schema::builtin()).unwrap_err();
        assert_eq!(in_place, bad, "a failed decode rewrites nothing");
        let err2 = canon(bad).unwrap_err();
        assert_eq!(err, err2);
        assert_eq!(err.path, "/spec/revisionHistoryLimit");
        let unknown = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "invalidKey": "asdf"});
        assert_eq!(canon(unknown).unwrap_err().reason, "unknown field");
        let q = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [
            {"name": "c", "resources": {"limits": {"cpu": "invalid"}}}]}});
        assert_eq!(canon(q).unwrap_err().reason, "invalid quantity");
    }

    #[test]
    fn untyped_fields_get_canonical_numbers() {
        // ControllerRevision.data is untyped (RawExtension): not decoded, but its numbers
        // come out canonical, as `canonicalize_numbers` after the decode would make them.
        let d = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "a"}, "revision": 2.0,
            "data": {"spec": {"replicas": 3.0, "ratio": 0.5, "big": 1e300, "list": [1.0, "x"]}}});
        let c = canon(d).unwrap();
        assert_eq!(c["revision"], json!(2));
        assert_eq!(
            c["data"],
            json!({"spec": {"replicas": 3, "ratio": 0.5, "big": 1e300, "list": [1, "x"]}})
        );
        assert!(c["data"]["spec"]["replicas"].is_i64());
        let mut expected = c.clone();
        plumb_core::value::canonicalize_numbers(&mut expected);
        assert_eq!(c, expected);
    }

    #[test]
    fn custom_resources_are_not_built_in() {
        let cr = json!({"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret", "metadata": {"name": "a"}});
        assert!(canon(cr).is_err());
    }
}
