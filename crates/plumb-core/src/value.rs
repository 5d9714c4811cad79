//! Helpers over `serde_json::Value` that reproduce how Go's `encoding/json`
//! treats Kubernetes objects.
//!
//! Objects are `serde_json::Value` throughout plumb. Maps are sorted (serde_json's default
//! `BTreeMap`), which is exactly Go's `encoding/json` ordering that Argo CD's byte comparison
//! relies on; numbers are folded as a Go round trip folds them (`2.0` → `2`) when they are read.

use serde_json::{Map, Number, Value};

/// Folds numbers the way a Go JSON round trip through `unstructured` does:
/// an integral float (`2.0`) becomes the integer `2`, so `2` and `2.0` compare equal
/// and print alike.
pub fn canonicalize_numbers(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(i) = integral(n) {
                *n = Number::from(i);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(canonicalize_numbers),
        Value::Object(m) => m.values_mut().for_each(canonicalize_numbers),
        _ => {}
    }
}

/// Whether [`canonicalize_numbers`] would change anything in `v` (a read-only scan).
pub fn has_noncanonical_numbers(v: &Value) -> bool {
    match v {
        Value::Number(n) => integral(n).is_some(),
        Value::Array(a) => a.iter().any(has_noncanonical_numbers),
        Value::Object(m) => m.values().any(has_noncanonical_numbers),
        _ => false,
    }
}

fn integral(n: &Number) -> Option<i64> {
    if n.is_i64() || n.is_u64() {
        return None;
    }
    let f = n.as_f64()?;
    // Within ±2^53 every integral double is exact, as Go's int64 conversion would be.
    if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
        Some(f as i64)
    } else {
        None
    }
}

/// Numeric-aware equality: `1` equals `1.0`. Everything else is structural.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Mutable access to `metadata` as a map, creating neither.
pub fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.get_mut("metadata")?.as_object_mut()
}

/// A string annotation of an object.
pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

/// A string label of an object.
pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("labels")?.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_floats_become_ints() {
        let mut v: Value = serde_json::from_str(r#"{"a": 2.0, "b": [1.5, 3.0], "c": 7}"#).unwrap();
        canonicalize_numbers(&mut v);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":2,"b":[1.5,3],"c":7}"#
        );
    }

    #[test]
    fn equality_is_numeric() {
        let a: Value = serde_json::from_str(r#"{"a": 2.0}"#).unwrap();
        assert!(json_eq(&a, &json!({"a": 2})));
        assert!(!json_eq(&a, &json!({"a": "2"})));
    }
}
