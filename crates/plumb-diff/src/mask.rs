//! Secret masking, as Argo CD's `HideSecretData` does it: every distinct value of a
//! `data` key becomes a run of `+` (8 for the first value seen, 12 for the next, ...),
//! shared across all the objects shown, so a changed Secret still shows as changed
//! without one byte of it printed. The last-applied annotation is masked inside, or
//! replaced whole by `++++++++` when it cannot be parsed (fail closed).

use plumb_core::LAST_APPLIED_ANNOTATION;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Whether an object is a core Secret.
pub fn is_secret(v: &Value) -> bool {
    secret_id(
        v.get("kind").and_then(Value::as_str),
        v.get("apiVersion").and_then(Value::as_str),
    )
}

/// A core Secret's kind and apiVersion.
fn secret_id(kind: Option<&str>, api_version: Option<&str>) -> bool {
    kind == Some("Secret") && api_version == Some("v1")
}

/// [`hide_secret_data`] for one rendered object on its own. Only a Secret is read as JSON: a
/// renderer's tree that is not one stays unconverted.
pub fn hide_rendered_secret(object: &mut plumb_core::object::Object) {
    if secret_id(
        object.top_level_str("kind").as_deref(),
        object.top_level_str("apiVersion").as_deref(),
    ) {
        hide_secret_data(&mut [&mut **object], &[]);
    }
}

/// A live Secret from a `plumb snapshot` has its values removed (and says so with
/// [`plumb_core::REDACTED_ANNOTATION`]): its values are unknown, so they are taken from
/// desired — a snapshot cannot show a Secret value drifting, and must not invent a drift.
pub fn restore_redacted(live: &mut Value, desired: &Value) {
    if !is_secret(live)
        || plumb_core::value::annotation(live, plumb_core::REDACTED_ANNOTATION) != Some("true")
    {
        return;
    }
    let encode = |s: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    if let Some(a) = live
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(plumb_core::REDACTED_ANNOTATION);
        if a.is_empty()
            && let Some(meta) = live.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("annotations");
        }
    }
    for field in ["data", "stringData"] {
        let Some(map) = live.get_mut(field).and_then(Value::as_object_mut) else {
            continue;
        };
        for (k, v) in map.iter_mut() {
            let from_desired = match field {
                "data" => desired
                    .pointer(&format!("/data/{}", plumb_core::pointer::escape_token(k)))
                    .cloned()
                    .or_else(|| {
                        desired
                            .get("stringData")
                            .and_then(|s| s.get(k))
                            .and_then(Value::as_str)
                            .map(|s| Value::String(encode(s)))
                    }),
                _ => desired.get("stringData").and_then(|s| s.get(k)).cloned(),
            };
            if let Some(d) = from_desired {
                *v = d;
            }
        }
    }
}

/// Masks Secret data in `objects` (in order: desired side first, then live) and in
/// their last-applied annotations, plus the listed sensitive annotations.
pub fn hide_secret_data(objects: &mut [&mut Value], sensitive_annotations: &[String]) {
    if !objects.iter().any(|o| is_secret(o)) {
        return;
    }
    // Parse last-applied of each object (after the objects themselves, as Argo CD orders it).
    let mut last_applied: Vec<Option<Result<Value, ()>>> = objects
        .iter()
        .map(|o| {
            plumb_core::value::annotation(o, LAST_APPLIED_ANNOTATION)
                .map(|t| serde_json::from_str::<Value>(t).map_err(|_| ()))
        })
        .collect();
    for o in objects.iter_mut() {
        crate::normalize::normalize_secret(o);
    }
    for la in last_applied.iter_mut().flatten().flatten() {
        crate::normalize::normalize_secret(la);
    }
    let mut maskers: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut mask_map = |m: &mut Map<String, Value>, keys: Option<&[String]>| {
        for (k, v) in m.iter_mut() {
            if v.is_null() || keys.is_some_and(|ks| !ks.contains(k)) {
                continue;
            }
            let seen = maskers.entry(k.clone()).or_default();
            let idx = match seen.iter().position(|s| s == v) {
                Some(i) => i,
                None => {
                    seen.push(v.clone());
                    seen.len() - 1
                }
            };
            *v = Value::String("+".repeat(8 + 4 * idx));
        }
    };
    for o in objects.iter_mut() {
        if let Some(d) = o.get_mut("data").and_then(Value::as_object_mut) {
            mask_map(d, None);
        }
        if let Some(a) = o
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            mask_map(a, Some(sensitive_annotations));
        }
    }
    for la in last_applied.iter_mut().flatten().flatten() {
        if let Some(d) = la.get_mut("data").and_then(Value::as_object_mut) {
            mask_map(d, None);
        }
        if let Some(a) = la
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            mask_map(a, Some(sensitive_annotations));
        }
    }
    let listed = sensitive_annotations
        .iter()
        .any(|a| a == LAST_APPLIED_ANNOTATION);
    for (o, la) in objects.iter_mut().zip(last_applied) {
        let Some(la) = la else { continue };
        let text = match la {
            Ok(v) if !listed => serde_json::to_string(&v).unwrap_or_else(|_| "++++++++".into()),
            _ => "++++++++".to_string(),
        };
        if let Some(a) = o
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            a.insert(LAST_APPLIED_ANNOTATION.into(), Value::String(text));
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn redacted_snapshot_values_come_from_desired() {
        let mut live = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "annotations": {plumb_core::REDACTED_ANNOTATION: "true"}},
            "data": {"a": "", "b": "", "gone": ""}});
        let desired = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"a": "eA=="}, "stringData": {"b": "y"}});
        restore_redacted(&mut live, &desired);
        assert_eq!(live["data"], json!({"a": "eA==", "b": "eQ==", "gone": ""}));
        assert!(
            live["metadata"].get("annotations").is_none(),
            "the marker is not a difference"
        );
        // Without the marker an empty value is a real value.
        let mut plain = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"a": ""}});
        restore_redacted(&mut plain, &desired);
        assert_eq!(plain["data"]["a"], "");
    }

    use super::*;
    use serde_json::json;

    fn secret(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": data})
    }

    #[test]
    fn equal_values_equal_masks_and_distinct_values_distinct_masks() {
        let mut target = secret(json!({"key1": "dGVzdDE=", "key2": "dGVzdDI="}));
        let mut live = secret(json!({"key2": "Y2hhbmdlZA==", "key3": "dGVzdDE="}));
        hide_secret_data(&mut [&mut target, &mut live], &[]);
        assert_eq!(
            target["data"],
            json!({"key1": "++++++++", "key2": "++++++++"})
        );
        assert_eq!(
            live["data"],
            json!({"key2": "++++++++++++", "key3": "++++++++"})
        );
        assert!(!serde_json::to_string(&live).unwrap().contains("Y2hhbmdlZA"));
    }

    #[test]
    fn last_applied_is_masked_or_replaced() {
        let mut live = secret(json!({"k": "bmV3"}));
        live["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{\"k\":\"b2xk\"}}"});
        let mut target = secret(json!({"k": "b2xk"}));
        hide_secret_data(&mut [&mut target, &mut live], &[]);
        let la = live["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
            .as_str()
            .unwrap();
        assert!(la.contains("\"k\":\"++++++++\""), "{la}");
        assert!(!la.contains("b2xk"));
        let mut broken = secret(json!({"k": "eA=="}));
        broken["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: "{not json"});
        hide_secret_data(&mut [&mut broken], &[]);
        assert_eq!(
            broken["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
            json!("++++++++")
        );
    }
}
