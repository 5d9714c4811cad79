//! Property tests: plumb-core's parsers of user input never panic, whatever they are
//! given — `fieldsV1` (from arbitrary bytes read as JSON, and from JSON objects with
//! fieldsV1-like keys) and JSON pointers (arbitrary strings and pointer-like ones). They
//! return a value or an error; the error names the offending part.

use plumb_core::fieldpath::FieldSet;
use plumb_core::pointer::JsonPointer;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const CASES: u32 = 2000;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Keys as fieldsV1 writes them, and broken ones: `f:`, `k:` with JSON (or not), `v:`,
/// `i:` with numbers (or not), `.`, unknown prefixes.
fn fields_key() -> impl Strategy<Value = String> {
    prop_oneof![
        "f:[a-zA-Z0-9._/-]{0,12}",
        "k:\\{\"[a-z]{1,5}\":\"[a-z0-9]{0,5}\"\\}",
        "k:[{\\[\"a-z:,0-9]{0,12}",
        "v:[\"a-z0-9\\[\\]{}:,]{0,12}",
        "i:[-0-9a-z]{0,6}",
        Just(".".to_string()),
        "[a-z.]{0,2}:[a-z]{0,5}",
        ".{0,10}",
    ]
}

fn fields_v1() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({})),
        Just(Value::Null),
        any::<i64>().prop_map(Value::from),
        ".{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop::collection::vec((fields_key(), inner), 0..6)
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fields_v1_from_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            let _ = FieldSet::parse(&v);
        }
    }

    #[test]
    fn fields_v1_shaped_values_never_panic(v in fields_v1(), doc in fields_v1(), pointer in "(/[a-z0-9~]{0,4}){0,4}") {
        match FieldSet::parse(&v) {
            Ok(set) => {
                let _ = set.members();
                let _ = set.owns_pointer(&doc, &pointer);
                for path in set.members() {
                    let _ = plumb_core::fieldpath::resolve(&doc, &path);
                    let _ = plumb_core::fieldpath::to_pointer(&doc, &path);
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        let obj = json!({"metadata": {"managedFields": [{"manager": "m", "fieldsV1": v}]}, "spec": doc});
        let _ = plumb_core::fieldpath::owners(&obj, &pointer);
    }

    #[test]
    fn json_pointers_never_panic(raw in prop_oneof![".{0,40}", "(/([a-z0-9]|~[0-9]?|~){0,5}){0,5}"], doc in fields_v1()) {
        match JsonPointer::parse(&raw) {
            Ok(p) => {
                let mut d = doc.clone();
                let _ = p.remove(&mut d);
            }
            Err(e) => prop_assert!(e.to_string().contains("pointer")),
        }
    }
}
