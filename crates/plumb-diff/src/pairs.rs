//! Two sets of objects (two renders of an app: two revisions, base and head) paired by
//! kind, namespace and name, with Secret values masked on both sides alike (equal values,
//! equal masks) before anything else sees them. Used by the web pages' history diff and by
//! the PR preview.

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
