//! Argo CD's always-on normalisations (`Normalize` in gitops-engine's diff):
//! top-level `creationTimestamp`, Secret `stringData`, empty Secret data, Role
//! `rules: []`, aggregated ClusterRoles, Endpoints ordering.

use base64::Engine as _;
use serde_json::{Map, Value};

/// Applies the kind-independent and kind-specific normalisations in place.
pub fn normalize(obj: &mut Value, ignore_aggregated_roles: bool) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("creationTimestamp");
    }
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let group = plumb_core::group_of_api_version(api_version).to_string();
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    match (group.as_str(), kind.as_str()) {
        ("", "Secret") => normalize_secret(obj),
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => {
            let Some(o) = obj.as_object_mut() else { return };
            if ignore_aggregated_roles && o.get("aggregationRule").is_some_and(Value::is_object) {
                o.insert("rules".into(), Value::Null);
            }
            if o.get("rules")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
            {
                o.insert("rules".into(), Value::Null);
            }
        }
        ("", "Endpoints") => normalize_endpoints(obj),
        _ => {}
    }
}

/// Moves `stringData` into `data` (base64), then sets empty/null data values to `""`.
pub fn normalize_secret(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    if let Some(Value::Object(sd)) = o.remove("stringData") {
        let data = o.entry("data").or_insert_with(|| Value::Object(Map::new()));
        if data.is_null() {
            *data = Value::Object(Map::new());
        }
        if let Some(data) = data.as_object_mut() {
            for (k, v) in sd {
                let enc = match &v {
                    Value::String(s) => {
                        Value::String(base64::engine::general_purpose::STANDARD.encode(s))
                    }
                    other => other.clone(), // an invalid secret stays invalid, as in Argo CD
                };
                data.insert(k, enc);
            }
        }
    }
    if let Some(data) = o.get_mut("data").and_then(Value::as_object_mut)
        && data.values().all(|v| v.is_string() || v.is_null())
    {
        for v in data.values_mut() {
            if v.is_null() {
                *v = Value::String(String::new());
            }
        }
    }
}

fn normalize_endpoints(obj: &mut Value) {
    let Some(subsets) = obj.get_mut("subsets").and_then(Value::as_array_mut) else {
        return;
    };
    for s in subsets.iter_mut() {
        let Some(s) = s.as_object_mut() else { continue };
        if let Some(ports) = s.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports.iter_mut() {
                if let Some(p) = p.as_object_mut()
                    && p.get("protocol")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                {
                    p.insert("protocol".into(), Value::String("TCP".into()));
                }
            }
            ports.sort_by_key(|p| p.to_string());
        }
        for k in ["addresses", "notReadyAddresses"] {
            if let Some(a) = s.get_mut(k).and_then(Value::as_array_mut) {
                a.sort_by(|x, y| {
                    let ip = |v: &Value| {
                        v.get("ip")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string()
                    };
                    let uid = |v: &Value| {
                        v.pointer("/targetRef/uid")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string()
                    };
                    (ip(x), uid(x)).cmp(&(ip(y), uid(y)))
                });
            }
        }
    }
    // A deterministic order (Kubernetes sorts by a hash; any total order compares alike).
    subsets.sort_by_key(|s| s.to_string());
}

/// Drops from `obj` the keys of `metadata` the three-way diff never compares on the
/// desired and last-applied sides: the namespace, and annotations when empty or null.
pub fn strip_for_three_way(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("namespace");
        let empty = match meta.get("annotations") {
            Some(Value::Null) => true,
            Some(Value::Object(m)) => m.is_empty(),
            _ => false,
        };
        if empty {
            meta.remove("annotations");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_string_data_moves_into_data() {
        let mut s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"},
            "stringData": {"foo": "bar", "bar": "1234"}, "data": {"baz": "cXV4", "empty": null}});
        normalize(&mut s, false);
        assert_eq!(
            s["data"],
            json!({"foo": "YmFy", "bar": "MTIzNA==", "baz": "cXV4", "empty": ""})
        );
        assert!(s.get("stringData").is_none());
    }

    #[test]
    fn namespace_and_empty_annotations_removed_but_not_garbage() {
        let mut a = json!({"metadata": {"namespace": "x", "annotations": {}}});
        strip_for_three_way(&mut a);
        assert_eq!(a, json!({"metadata": {}}));
        let mut b = json!({"metadata": {"annotations": "wrong value"}});
        strip_for_three_way(&mut b);
        assert_eq!(b, json!({"metadata": {"annotations": "wrong value"}}));
    }
}
