//! Property test: for random Secrets (values in `data` and `stringData`, random keys,
//! values that are themselves base64), no part of a comparison's results — what every
//! output format of `plumb diff`, `doctor` and `app diff` is printed from — holds a
//! Secret value or its base64. The results are searched in their `Debug` form, which
//! shows every field, and in the changed-field list the formats print.
//!
//! Runs in-process (thousands of cases in a few seconds); `plumb-cli/tests/secrets.rs`
//! runs fewer cases through the binary, every command and format.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use plumb_diff::DiffConfig;
use plumb_diff::compare::{CompareContext, compare};
use plumb_diff::desired::Desired;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

/// At least this many cases run (CI runs the default).
const CASES: u32 = 5000;

/// A secret value: printable text, or base64 text (a value that is itself encoded).
fn secret_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9!#%&()*+,./:;<=>?@^_{|}~ -]{8,32}",
        prop::collection::vec(any::<u8>(), 6..24).prop_map(|b| STANDARD.encode(b)),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    /// (key, desired value, live value, in stringData)
    entries: Vec<(String, String, String, bool)>,
    /// Live has a key desired lacks.
    live_only: Option<(String, String)>,
    last_applied: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::btree_map(
            "[a-z][a-z0-9._-]{0,12}",
            (secret_value(), secret_value(), any::<bool>(), any::<bool>()),
            1..5,
        ),
        prop::option::of(("[a-z][a-z0-9]{0,8}-only", secret_value())),
        any::<bool>(),
    )
        .prop_map(|(m, live_only, last_applied)| Case {
            entries: m
                .into_iter()
                .map(|(k, (d, l, same, string_data))| {
                    let live = if same { d.clone() } else { l };
                    (k, d, live, string_data)
                })
                .collect(),
            live_only,
            last_applied,
        })
}

fn objects(c: &Case) -> (Value, Value) {
    let mut data = Map::new();
    let mut string_data = Map::new();
    let mut live_data = Map::new();
    for (k, d, l, in_string_data) in &c.entries {
        if *in_string_data {
            string_data.insert(k.clone(), json!(d));
        } else {
            data.insert(k.clone(), json!(STANDARD.encode(d)));
        }
        live_data.insert(k.clone(), json!(STANDARD.encode(l)));
    }
    if let Some((k, v)) = &c.live_only {
        live_data.insert(k.clone(), json!(STANDARD.encode(v)));
    }
    let mut desired = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "prod"},
        "type": "Opaque",
    });
    if !data.is_empty() {
        desired["data"] = Value::Object(data);
    }
    if !string_data.is_empty() {
        desired["stringData"] = Value::Object(string_data);
    }
    let mut live = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": "creds", "namespace": "prod", "resourceVersion": "7",
            "annotations": {},
            "managedFields": [{
                "manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": live_data.keys().map(|k| (format!("f:{k}"), json!({}))).collect::<Map<_, _>>()},
            }],
        },
        "type": "Opaque",
        "data": Value::Object(live_data),
    });
    if c.last_applied {
        live["metadata"]["annotations"][plumb_core::LAST_APPLIED_ANNOTATION] =
            json!(desired.to_string());
    }
    (desired, live)
}

fn secrets_of(c: &Case) -> Vec<String> {
    let mut out = Vec::new();
    for (_, d, l, _) in &c.entries {
        out.extend([d.clone(), l.clone()]);
    }
    if let Some((_, v)) = &c.live_only {
        out.push(v.clone());
    }
    out.into_iter()
        .flat_map(|v| {
            let b = STANDARD.encode(&v);
            [v, b]
        })
        .collect()
}

#[test]
fn no_secret_value_or_its_base64_in_any_comparison_result() {
    let config = DiffConfig::default();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES)
        .max(CASES);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case(), |c| {
            let (desired, live) = objects(&c);
            for keep_equal in [false, true] {
                let ctx = CompareContext {
                    app: None,
                    settings: None,
                    config: &config,
                    keep_equal,
                    server_side: None,
                };
                let results = compare(
                    vec![Desired::new(desired.clone(), "secret.yaml:1".into())],
                    vec![live.clone()],
                    &ctx,
                )
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let mut text = format!("{results:?}");
                for r in &results {
                    text.push_str(&format!("{:?}", r.fields()));
                    text.push_str(&r.result.normalized_live.to_string());
                    text.push_str(&r.result.predicted_live.to_string());
                }
                for s in secrets_of(&c) {
                    prop_assert!(
                        !text.contains(&s),
                        "secret {s:?} appears in the results: {text}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
}
