//! Two sets of objects (two renders of an app: two revisions, base and head) paired by
//! kind, namespace and name, with Secret values masked on both sides alike (equal values,
//! equal masks) before anything else sees them. Used by the web pages' history diff and by
//! the PR preview.
//!
//! A kustomize generated name (`NAME-HASH`, the ten characters of kustomize's content hash)
//! that changes its hash is one object renamed, not one removed and one added: the two are
//! paired, and the old side keeps its old name (so a caller sees the rename).

use crate::mask::hide_secret_data;
use plumb_core::ResourceKey;
use serde_json::Value;
use std::collections::BTreeMap;

/// Each object that differs between `old` and `new`, in key order, as (key, old side, new
/// side); a side is `Null` where the object is absent. Objects without a kind or name are
/// left out.
pub fn differing(old: Vec<Value>, new: Vec<Value>) -> Vec<(ResourceKey, Value, Value)> {
    let mut pairs: BTreeMap<ResourceKey, (Value, Value)> = BTreeMap::new();
    for (side, objects) in [(0, old), (1, new)] {
        for o in objects {
            let Some(key) = ResourceKey::of(&o) else {
                continue;
            };
            let slot = pairs.entry(key).or_insert((Value::Null, Value::Null));
            if side == 0 {
                slot.0 = o;
            } else {
                slot.1 = o;
            }
        }
    }
    pair_renamed(&mut pairs);
    pairs
        .into_iter()
        .filter(|(_, (a, b))| a != b)
        .map(|(key, (mut a, mut b))| {
            {
                let mut sides: Vec<&mut Value> = [&mut a, &mut b]
                    .into_iter()
                    .filter(|v| !v.is_null())
                    .collect();
                hide_secret_data(&mut sides, &[]);
            }
            (key, a, b)
        })
        .collect()
}

/// `NAME` of a kustomize generated name `NAME-HASH` (the hash: ten characters of the alphabet
/// kustomize encodes its content hash in), else `None`.
pub fn generated_stem(name: &str) -> Option<&str> {
    let (stem, hash) = name.rsplit_once('-')?;
    (!stem.is_empty() && hash.len() == 10 && hash.bytes().all(|b| b"2456789bcdfghkmt".contains(&b)))
        .then_some(stem)
}

/// Pairs each object only at the old side with the one only at the new side that has the same
/// group, kind, namespace and generated stem, when exactly one of each has it (anything else is
/// left as removed and added): the pair is kept under the new key.
fn pair_renamed(pairs: &mut BTreeMap<ResourceKey, (Value, Value)>) {
    type Stem = (String, String, String, String);
    let stem_of = |k: &ResourceKey| -> Option<Stem> {
        let s = generated_stem(&k.name)?;
        Some((
            k.group.clone(),
            k.kind.clone(),
            k.namespace.clone(),
            s.to_string(),
        ))
    };
    let mut sides: BTreeMap<Stem, (Vec<ResourceKey>, Vec<ResourceKey>)> = BTreeMap::new();
    for (k, (a, b)) in pairs.iter() {
        let Some(stem) = stem_of(k) else { continue };
        match (a.is_null(), b.is_null()) {
            (false, true) => sides.entry(stem).or_default().0.push(k.clone()),
            (true, false) => sides.entry(stem).or_default().1.push(k.clone()),
            _ => {}
        }
    }
    for (old, new) in sides.into_values() {
        if let ([old], [new]) = (old.as_slice(), new.as_slice())
            && let Some((a, _)) = pairs.remove(old)
            && let Some(slot) = pairs.get_mut(new)
        {
            slot.0 = a;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(name: &str, v: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "n"}, "data": {"k": v}})
    }

    fn name(v: &Value) -> &str {
        v.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("-")
    }

    #[test]
    fn a_generated_name_whose_hash_changes_is_one_renamed_object() {
        let out = differing(
            vec![
                cm("app-config-5dh7bg7t4f", "1"),
                cm("other-config-2kb9fm6g7c", "x"),
            ],
            vec![
                cm("app-config-8h5f96mtb2", "2"),
                cm("third-config-2kb9fm6g7c", "x"),
            ],
        );
        let names: Vec<(&str, &str, &str)> = out
            .iter()
            .map(|(k, a, b)| (k.name.as_str(), name(a), name(b)))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "app-config-8h5f96mtb2",
                    "app-config-5dh7bg7t4f",
                    "app-config-8h5f96mtb2"
                ),
                ("other-config-2kb9fm6g7c", "other-config-2kb9fm6g7c", "-"),
                ("third-config-2kb9fm6g7c", "-", "third-config-2kb9fm6g7c"),
            ]
        );
    }

    #[test]
    fn only_a_kustomize_hash_makes_a_generated_name() {
        assert_eq!(generated_stem("app-config-5dh7bg7t4f"), Some("app-config"));
        // Eleven characters, a character kustomize never writes (`a`, `0`), no stem.
        for name in [
            "app-5dh7bg7t4ff",
            "app-5dh7bg7t4a",
            "app-0dh7bg7t4f",
            "-5dh7bg7t4f",
            "plain",
        ] {
            assert_eq!(generated_stem(name), None, "{name}");
        }
    }
}
