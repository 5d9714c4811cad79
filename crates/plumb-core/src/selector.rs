//! Kubernetes label selectors (`metav1.LabelSelector`): `matchLabels` and `matchExpressions`
//! with `In`, `NotIn`, `Exists`, `DoesNotExist`, as the API server evaluates them for
//! admission webhooks' `namespaceSelector` and `objectSelector` (the doctor), and as Argo CD's
//! ApplicationSet generators evaluate a `selector` over parameters ([`matches_by`]).

use serde_json::{Map, Value};

/// Labels as a map of strings.
pub type Labels = Map<String, Value>;

/// Whether `selector` selects `labels`. An absent (`null`) or empty selector selects
/// everything. An unknown operator selects nothing, as the API server's conversion rejects it.
pub fn matches(selector: Option<&Value>, labels: &Labels) -> bool {
    matches_by(
        selector,
        |k| labels.get(k),
        |v| v.as_str().map(str::to_string),
    )
}

/// [`matches()`] over any key → value lookup: `text` says how a value (a label's, or one the
/// selector names) reads as a string, `None` when it does not (labels: strings only; an
/// ApplicationSet's parameters: any scalar, as written).
pub fn matches_by<'a>(
    selector: Option<&Value>,
    lookup: impl Fn(&str) -> Option<&'a Value>,
    text: impl Fn(&Value) -> Option<String>,
) -> bool {
    let Some(Value::Object(sel)) = selector else {
        return true;
    };
    let label = |k: &str| lookup(k).and_then(&text);
    if let Some(Value::Object(ml)) = sel.get("matchLabels") {
        for (k, want) in ml {
            if label(k) != text(want) {
                return false;
            }
        }
    }
    for Expression {
        key,
        operator,
        values,
    } in expressions(sel)
    {
        let have = label(key);
        let values: Vec<String> = values.iter().filter_map(|v| text(v)).collect();
        let ok = match operator {
            "In" => have.is_some_and(|h| values.contains(&h)),
            // NotIn selects objects without the label too.
            "NotIn" => have.is_none_or(|h| !values.contains(&h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// One of a selector's `matchExpressions`, its missing parts empty.
struct Expression<'a> {
    key: &'a str,
    operator: &'a str,
    values: Vec<&'a Value>,
}

/// The selector's `matchExpressions` (none when absent or not a list).
fn expressions(sel: &Map<String, Value>) -> Vec<Expression<'_>> {
    let Some(Value::Array(exprs)) = sel.get("matchExpressions") else {
        return Vec::new();
    };
    exprs
        .iter()
        .map(|e| Expression {
            key: e.get("key").and_then(Value::as_str).unwrap_or(""),
            operator: e.get("operator").and_then(Value::as_str).unwrap_or(""),
            values: e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default(),
        })
        .collect()
}

/// `Err` naming what the API server would refuse in `selector`: an operator other than `In`,
/// `NotIn`, `Exists`, `DoesNotExist`, a missing key, values where they are not allowed or
/// missing where they are needed. (A selector that silently selects nothing could delete what
/// it used to select.)
pub fn validate(selector: Option<&Value>) -> Result<(), String> {
    let Some(sel) = selector.filter(|s| !s.is_null()) else {
        return Ok(());
    };
    let Value::Object(sel) = sel else {
        return Err("a selector must be a mapping".into());
    };
    if let Some(e) = sel.get("matchExpressions")
        && !e.is_null()
        && !e.is_array()
    {
        return Err("matchExpressions must be a list".into());
    }
    for (i, e) in expressions(sel).iter().enumerate() {
        let at = format!("matchExpressions[{i}]");
        if e.key.is_empty() {
            return Err(format!("{at}.key: required"));
        }
        match e.operator {
            "In" | "NotIn" if e.values.is_empty() => {
                return Err(format!("{at}.values: required for {}", e.operator));
            }
            "Exists" | "DoesNotExist" if !e.values.is_empty() => {
                return Err(format!("{at}.values: must be empty for {}", e.operator));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => {
                return Err(format!(
                    "{at}.operator: {other:?} is not In, NotIn, Exists or DoesNotExist"
                ));
            }
        }
    }
    Ok(())
}

/// The selector in words, for evidence: `policy.lab/image-pull=always, env in (prod,stage)`.
pub fn describe(selector: Option<&Value>) -> String {
    let Some(Value::Object(sel)) = selector else {
        return "(everything)".into();
    };
    let mut parts = Vec::new();
    if let Some(Value::Object(ml)) = sel.get("matchLabels") {
        for (k, v) in ml {
            parts.push(format!("{k}={}", v.as_str().unwrap_or("")));
        }
    }
    for Expression {
        key,
        operator,
        values,
    } in expressions(sel)
    {
        let values: Vec<&str> = values.iter().filter_map(|v| v.as_str()).collect();
        parts.push(match operator {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op}?"),
        });
    }
    if parts.is_empty() {
        "(everything)".into()
    } else {
        parts.join(", ")
    }
}

/// The labels of an object (empty when it has none).
pub fn labels_of(obj: &Value) -> Labels {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_refuses_what_the_api_server_refuses() {
        use serde_json::json;
        assert!(validate(None).is_ok());
        assert!(
            validate(Some(
                &json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["a"]}]})
            ))
            .is_ok()
        );
        for (sel, want) in [
            (
                json!({"matchExpressions": [{"key": "env", "operator": "in", "values": ["a"]}]}),
                "operator",
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "In"}]}),
                "values: required",
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "Exists", "values": ["x"]}]}),
                "must be empty",
            ),
            (
                json!({"matchExpressions": [{"operator": "Exists"}]}),
                "key: required",
            ),
        ] {
            assert!(validate(Some(&sel)).unwrap_err().contains(want), "{want}");
        }
    }
    use serde_json::json;

    fn l(v: Value) -> Labels {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn every_operator() {
        let labels = l(json!({"env": "prod", "team": "pay"}));
        let cases = [
            (json!(null), true),
            (json!({}), true),
            (json!({"matchLabels": {"env": "prod"}}), true),
            (json!({"matchLabels": {"env": "dev"}}), false),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev", "prod"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "absent", "operator": "NotIn", "values": ["x"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "team", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "absent", "operator": "Exists"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "absent", "operator": "DoesNotExist"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "team", "operator": "Bogus"}]}),
                false,
            ),
            (
                json!({"matchLabels": {"env": "prod"}, "matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}),
                false,
            ),
        ];
        for (sel, want) in cases {
            assert_eq!(matches(Some(&sel), &labels), want, "{sel}");
        }
    }
}
