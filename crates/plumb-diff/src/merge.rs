//! Predicted live: live with desired applied, as Argo CD's legacy diff computes it.
//!
//! Argo CD builds a three-way patch from (last-applied, desired, live) and applies it to
//! live. The patch's effect is computed here directly, recursively:
//!
//! - keys in last-applied but not in desired are deleted;
//! - keys in desired whose value differs from live are set;
//! - keys only in live stay untouched (server defaults, other managers' fields, status).
//!
//! Built-in kinds use strategic merge semantics: lists with `patchStrategy: merge` merge
//! element-wise by their merge key (primitive lists as sets) and keep live-only elements,
//! in the order `$setElementOrder` gives (also when only the order differs; duplicate keys
//! stay next to each other), with `$retainKeys`; other lists are atomic. Custom resources use
//! JSON merge semantics: lists are atomic and are compared against live stripped of the
//! keys last-applied does not have (`RemoveMapFields`). Without last-applied, desired's
//! `null`s delete nothing in a custom resource; a built-in's do.

use plumb_core::schema::{FieldDef, Schema, TypeDef};
use plumb_core::value::json_eq;
use serde_json::{Map, Value};

/// How lists and nested values merge.
#[derive(Clone, Copy)]
pub enum Semantics<'a> {
    /// Strategic merge for a built-in kind, with the schema of the current node.
    Strategic(&'a Schema, Option<&'a TypeDef>),
    /// JSON merge (RFC 7386) for custom resources.
    Json,
}

/// Computes predicted live. `orig` is the last-applied configuration (or desired itself
/// in the two-way fallback).
pub fn three_way(orig: Option<&Value>, config: &Value, live: &Value, sem: Semantics<'_>) -> Value {
    three_way_with(orig, config, live, sem, true)
}

/// Applies `patch` (values to set, no deletions) to `target` with the same list semantics but
/// without `$retainKeys`: the patch names only the values it changes, so no key of `target`
/// is cleared for want of being in it (`RespectIgnoreDifferences`, where Argo CD's patch
/// lists live's keys).
pub fn apply_patch(patch: &Value, target: &Value, sem: Semantics<'_>) -> Value {
    three_way_with(None, patch, target, sem, false)
}

fn three_way_with(
    orig: Option<&Value>,
    config: &Value,
    live: &Value,
    sem: Semantics<'_>,
    retain: bool,
) -> Value {
    match (config, live) {
        (Value::Object(c), Value::Object(l)) => {
            let o = orig.and_then(Value::as_object);
            Value::Object(merge_map(o, c, l, sem, retain))
        }
        _ => config.clone(),
    }
}

fn merge_map(
    orig: Option<&Map<String, Value>>,
    config: &Map<String, Value>,
    live: &Map<String, Value>,
    sem: Semantics<'_>,
    retain: bool,
) -> Map<String, Value> {
    // Built in one pass over live, so each live value is copied exactly once (untouched
    // subtrees whole, merged ones piece by piece), then desired's new keys.
    let deleted = |k: &String| orig.is_some_and(|o| o.contains_key(k)) && !config.contains_key(k);
    let mut out = Map::new();
    for (k, lv) in live {
        if deleted(k) {
            continue;
        }
        let Some(cv) = config.get(k) else {
            out.insert(k.clone(), lv.clone());
            continue;
        };
        let ov = orig.and_then(|o| o.get(k));
        let field = match sem {
            Semantics::Strategic(_, Some(ty)) => ty.fields.get(k),
            _ => None,
        };
        let merged = match (cv, lv) {
            (Value::Null, Value::Null) => Value::Null,
            // A null last applied and still in desired is not a change: the patch from
            // live carries no nulls (apimachinery's three-way patches), so live's value —
            // an API-server default, say — stays.
            (Value::Null, lv) if ov.is_some_and(Value::is_null) => lv.clone(),
            (Value::Null, _) => continue,
            (Value::Object(cm), Value::Object(lm)) => {
                let sub = child_semantics(sem, field);
                let mut m = merge_map(ov.and_then(Value::as_object), cm, lm, sub, retain);
                if retain && field.is_some_and(FieldDef::retains_keys) {
                    retain_keys(&mut m, cm);
                }
                Value::Object(m)
            }
            (Value::Array(ca), Value::Array(la)) => {
                Value::Array(merge_list(ov, ca, la, field, sem, retain))
            }
            (cv, lv) if json_eq(cv, lv) => lv.clone(),
            (cv, _) => cv.clone(),
        };
        out.insert(k.clone(), merged);
    }
    for (k, cv) in config {
        if !cv.is_null() && !live.contains_key(k) {
            out.insert(k.clone(), cv.clone());
        }
    }
    out
}

/// Whether [`three_way`] would change live at all — the same rules, walked without
/// building anything. Most objects of a comparison are in sync; for them this is the
/// whole merge.
pub fn changes(orig: Option<&Value>, config: &Value, live: &Value, sem: Semantics<'_>) -> bool {
    match (config, live) {
        (Value::Object(c), Value::Object(l)) => {
            map_changes(orig.and_then(Value::as_object), c, l, sem)
        }
        _ => !json_eq(config, live),
    }
}

fn map_changes(
    orig: Option<&Map<String, Value>>,
    config: &Map<String, Value>,
    live: &Map<String, Value>,
    sem: Semantics<'_>,
) -> bool {
    if let Some(orig) = orig
        && orig
            .keys()
            .any(|k| !config.contains_key(k) && live.contains_key(k))
    {
        return true;
    }
    config.iter().any(|(k, cv)| {
        let Some(lv) = live.get(k) else {
            return !cv.is_null();
        };
        let ov = orig.and_then(|o| o.get(k));
        let field = match sem {
            Semantics::Strategic(_, Some(ty)) => ty.fields.get(k),
            _ => None,
        };
        match (cv, lv) {
            (Value::Null, lv) => !lv.is_null() && !ov.is_some_and(Value::is_null),
            (Value::Object(cm), Value::Object(lm)) => {
                map_changes(
                    ov.and_then(Value::as_object),
                    cm,
                    lm,
                    child_semantics(sem, field),
                ) || (field.is_some_and(FieldDef::retains_keys) && clears_keys(lm, cm))
            }
            (Value::Array(ca), Value::Array(la)) => list_changes(ov, ca, la, field, sem),
            (cv, lv) => !json_eq(cv, lv),
        }
    })
}

fn list_changes(
    orig: Option<&Value>,
    config: &[Value],
    live: &[Value],
    field: Option<&FieldDef>,
    sem: Semantics<'_>,
) -> bool {
    let orig_list = orig.and_then(Value::as_array).map(Vec::as_slice);
    match (sem, field) {
        (Semantics::Strategic(schema, _), Some(f)) if f.merges() => {
            let item_ty = f.items.as_deref().and_then(|i| schema.field_type(i));
            match (&f.merge_key, item_ty) {
                (Some(key), Some(_))
                    if !same_key_order(live, config, key)
                        || drops_keyed(orig_list, config, key)
                        || has_duplicates(live, key) =>
                {
                    !lists_eq(&merge_list(orig, config, live, field, sem, true), live)
                }
                (Some(key), Some(ty)) => {
                    let sem = Semantics::Strategic(schema, Some(ty));
                    let deleted = orig_list.into_iter().flatten().any(|o| {
                        key_of(o, key).is_some_and(|k| {
                            find_by_key(config, key, k).is_none()
                                && find_by_key(live, key, k).is_some()
                        })
                    });
                    deleted
                        || config.iter().any(|c| match key_of(c, key) {
                            None => true,
                            Some(k) => match find_by_key(live, key, k) {
                                None => true,
                                Some((_, l)) => {
                                    let o = orig_list
                                        .and_then(|o| find_by_key(o, key, k))
                                        .map(|(_, v)| v);
                                    changes(o, c, l, sem)
                                        || (f.retains_keys()
                                            && matches!(
                                                (c, l),
                                                (Value::Object(cm), Value::Object(lm))
                                                    if clears_keys(lm, cm)
                                            ))
                                }
                            },
                        })
                }
                _ if !lists_eq(live, config) => {
                    !lists_eq(&merge_list(orig, config, live, field, sem, true), live)
                }
                _ => {
                    let contains = |l: &[Value], v: &Value| l.iter().any(|x| json_eq(x, v));
                    orig_list
                        .into_iter()
                        .flatten()
                        .any(|o| !contains(config, o) && contains(live, o))
                        || config.iter().any(|c| !contains(live, c))
                }
            }
        }
        _ => !lists_eq(&merge_list(orig, config, live, field, sem, true), live),
    }
}

/// The semantics for the value of a field: its object type, or a map's value type.
fn child_semantics<'a>(sem: Semantics<'a>, field: Option<&'a FieldDef>) -> Semantics<'a> {
    match sem {
        Semantics::Json => Semantics::Json,
        Semantics::Strategic(schema, _) => {
            let ty = field.and_then(|f| schema.value_type(f));
            Semantics::Strategic(schema, ty)
        }
    }
}

fn merge_list(
    orig: Option<&Value>,
    config: &[Value],
    live: &[Value],
    field: Option<&FieldDef>,
    sem: Semantics<'_>,
    retain: bool,
) -> Vec<Value> {
    let orig_list = orig.and_then(Value::as_array).map(Vec::as_slice);
    match (sem, field) {
        (Semantics::Strategic(schema, _), Some(f)) if f.merges() => {
            let items = f.items.as_deref();
            let item_ty = items.and_then(|i| schema.field_type(i));
            match (&f.merge_key, item_ty) {
                (Some(key), Some(ty)) => merge_keyed(
                    orig_list,
                    config,
                    live,
                    key,
                    Semantics::Strategic(schema, Some(ty)),
                    retain,
                    retain && f.retains_keys(),
                ),
                _ => merge_primitive(orig_list, config, live),
            }
        }
        (Semantics::Strategic(..), _) => {
            if lists_eq(config, live) {
                live.to_vec()
            } else {
                config.to_vec()
            }
        }
        (Semantics::Json, _) => {
            // RFC 7386: atomic, compared against live stripped of keys last-applied lacks.
            let same = match orig {
                Some(o) => json_eq(
                    &Value::Array(config.to_vec()),
                    &remove_map_fields(o, &Value::Array(live.to_vec())),
                ),
                None => false,
            };
            if same { live.to_vec() } else { config.to_vec() }
        }
    }
}

/// `$retainKeys`: of a merged map, only the keys desired sets stay.
fn retain_keys(merged: &mut Map<String, Value>, config: &Map<String, Value>) {
    merged.retain(|k, _| config.get(k).is_some_and(|v| !v.is_null()));
}

/// Whether `$retainKeys` would clear something of `live`: a key desired does not set.
fn clears_keys(live: &Map<String, Value>, config: &Map<String, Value>) -> bool {
    live.iter()
        .any(|(k, v)| !v.is_null() && config.get(k).is_none_or(Value::is_null))
}

fn lists_eq(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_eq(x, y))
}

/// Whether two elements of `list` share a merge key.
fn has_duplicates(list: &[Value], key: &str) -> bool {
    list.iter()
        .enumerate()
        .filter_map(|(i, v)| key_of(v, key).map(|k| (i, k)))
        .any(|(i, k)| nth_by_key(&list[..i], key, k, 0).is_some())
}

/// The `n`th element (from 0) of `list` with merge key `k`.
fn nth_by_key<'v>(list: &'v [Value], key: &str, k: &Value, n: usize) -> Option<&'v Value> {
    list.iter()
        .filter(|it| key_of(it, key).is_some_and(|x| json_eq(x, k)))
        .nth(n)
}

/// Duplicate merge keys, as the strategic-merge library treats them (checked against Argo CD
/// by the differential test): its diff pairs the elements sharing a key by occurrence (the
/// second of live with the second of desired), and the patch keeps the first changed pair of
/// a key, which applies to the first element of live with that key. So a change to a later
/// duplicate in git lands on the first one. Returns whether `out` changed.
fn merge_duplicates(
    orig: Option<&[Value]>,
    config: &[Value],
    live: &[Value],
    out: &mut [Value],
    key: &str,
    sem: Semantics<'_>,
    retain_below: bool,
) -> bool {
    let mut changed = false;
    let mut seen: Vec<&Value> = Vec::new();
    // Keys whose patch element is settled (the first pair changed something).
    let mut settled: Vec<&Value> = Vec::new();
    for l in live {
        let Some(k) = key_of(l, key) else { continue };
        let n = seen.iter().filter(|s| json_eq(s, k)).count();
        seen.push(k);
        if settled.iter().any(|s| json_eq(s, k)) {
            continue;
        }
        let Some(c) = nth_by_key(config, key, k, n) else {
            continue;
        };
        let o = orig.and_then(|o| nth_by_key(o, key, k, n));
        if json_eq(&three_way_with(o, c, l, sem, retain_below), l) {
            continue;
        }
        settled.push(k);
        if n == 0 {
            // The first pair is merged in place by the caller.
            continue;
        }
        if let Some(first) = out
            .iter_mut()
            .find(|it| key_of(it, key).is_some_and(|x| json_eq(x, k)))
        {
            let merged = three_way_with(o, c, first, sem, retain_below);
            changed |= !json_eq(&merged, first);
            *first = merged;
        }
    }
    changed
}

/// Whether last-applied's list has something desired's lacks: an element (by key) or a
/// field of an element with the same key (the deletions half of a three-way patch).
fn drops_keyed(orig: Option<&[Value]>, config: &[Value], key: &str) -> bool {
    orig.into_iter().flatten().any(|o| match key_of(o, key) {
        None => false,
        Some(k) => match find_by_key(config, key, k) {
            None => true,
            Some((_, c)) => drops(o, c),
        },
    })
}

/// Whether `orig` has a map key that `config` lacks, at any depth of nested maps.
fn drops(orig: &Value, config: &Value) -> bool {
    match (orig, config) {
        (Value::Object(o), Value::Object(c)) => o.iter().any(|(k, ov)| match c.get(k) {
            None => !ov.is_null(),
            Some(cv) => drops(ov, cv),
        }),
        _ => false,
    }
}

/// apimachinery's `isOrderSame`: as long, and the merge keys equal position by position.
fn same_key_order(live: &[Value], config: &[Value], key: &str) -> bool {
    live.len() == config.len()
        && live
            .iter()
            .zip(config)
            .all(|(l, c)| match (key_of(l, key), key_of(c, key)) {
                (Some(a), Some(b)) => json_eq(a, b),
                (None, None) => true,
                _ => false,
            })
}

fn key_of<'v>(item: &'v Value, key: &str) -> Option<&'v Value> {
    item.get(key)
}

fn find_by_key<'v>(list: &'v [Value], key: &str, want: &Value) -> Option<(usize, &'v Value)> {
    list.iter()
        .enumerate()
        .find(|(_, it)| key_of(it, key).is_some_and(|k| json_eq(k, want)))
}

fn merge_keyed(
    orig: Option<&[Value]>,
    config: &[Value],
    live: &[Value],
    key: &str,
    sem: Semantics<'_>,
    retain_below: bool,
    retain: bool,
) -> Vec<Value> {
    let mut changed = false;
    // Deletions: elements last-applied had that desired no longer has.
    let deleted = |l: &Value| {
        orig.is_some_and(|orig| {
            key_of(l, key).is_some_and(|k| {
                find_by_key(orig, key, k).is_some() && find_by_key(config, key, k).is_none()
            })
        })
    };
    // One pass over live: each element copied once, merged where desired has it.
    let mut out: Vec<Value> = Vec::with_capacity(live.len() + config.len());
    for l in live {
        if deleted(l) {
            changed = true;
            continue;
        }
        let c = key_of(l, key).and_then(|k| find_by_key(config, key, k).map(|(_, c)| (k, c)));
        match c {
            Some((k, c)) if find_by_key(&out, key, k).is_none() => {
                let o = orig.and_then(|o| find_by_key(o, key, k)).map(|(_, v)| v);
                let mut merged = three_way_with(o, c, l, sem, retain_below);
                if let (true, Value::Object(m), Value::Object(cm)) = (retain, &mut merged, c) {
                    retain_keys(m, cm);
                }
                changed |= !json_eq(&merged, l);
                out.push(merged);
            }
            _ => out.push(l.clone()),
        }
    }
    changed |= merge_duplicates(orig, config, live, &mut out, key, sem, retain_below);
    for c in config {
        match key_of(c, key) {
            Some(k) if find_by_key(live, key, k).is_some() => {}
            _ => {
                out.push(c.clone());
                changed = true;
            }
        }
    }
    // kubectl's patch carries `$setElementOrder` whenever it names the list: when only the
    // order differs (live's keys, position by position, are not desired's: apimachinery's
    // `isOrderSame`), and when last-applied had something desired dropped, even where live
    // no longer has it.
    if !changed && same_key_order(live, config, key) && !drops_keyed(orig, config, key) {
        return out;
    }
    // $setElementOrder: desired's elements in desired's order, live-only elements
    // interleaved where live had them.
    // The elements desired names, in the order of the first element of desired with their
    // key (a stable sort: elements sharing a key keep live's order, next to each other).
    let config_pos = |v: &Value| {
        key_of(v, key)
            .and_then(|k| find_by_key(config, key, k))
            .map(|(i, _)| i)
    };
    type Placed = Vec<(usize, Value)>;
    let (mut patch, server_only): (Placed, Placed) = out
        .into_iter()
        .map(|v| (config_pos(&v).unwrap_or(usize::MAX), v))
        .partition(|(i, v)| *i != usize::MAX || key_of(v, key).is_none());
    patch.sort_by_key(|(i, _)| *i);
    let patch: Vec<Value> = patch.into_iter().map(|(_, v)| v).collect();
    let server_only: Vec<Value> = server_only.into_iter().map(|(_, v)| v).collect();
    let live_pos = |v: &Value| {
        key_of(v, key)
            .and_then(|k| find_by_key(live, key, k))
            .map(|(i, _)| i)
    };
    merge_sorted(server_only, patch, live_pos)
}

fn merge_primitive(orig: Option<&[Value]>, config: &[Value], live: &[Value]) -> Vec<Value> {
    let contains = |l: &[Value], v: &Value| l.iter().any(|x| json_eq(x, v));
    let mut out: Vec<Value> = live.to_vec();
    let mut changed = false;
    if let Some(orig) = orig {
        for o in orig {
            if !contains(config, o) && contains(&out, o) {
                out.retain(|x| !json_eq(x, o));
                changed = true;
            }
        }
    }
    for c in config {
        if !contains(&out, c) {
            out.push(c.clone());
            changed = true;
        }
    }
    // A primitive list's `$setElementOrder` comes with any difference from live, order
    // included.
    if !changed && lists_eq(live, config) {
        return out;
    }
    let patch: Vec<Value> = config.to_vec();
    let server_only: Vec<Value> = out
        .iter()
        .filter(|v| !contains(config, v))
        .cloned()
        .collect();
    let live_pos = |v: &Value| live.iter().position(|x| json_eq(x, v));
    merge_sorted(server_only, patch, live_pos)
}

/// Kubernetes' `mergeSortedSlice`: take the server-only element first when both
/// elements were in live and it came earlier there.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    live_pos: impl Fn(&Value) -> Option<usize>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        if i >= left.len() {
            out.push(right[j].clone());
            j += 1;
        } else if j >= right.len() {
            out.push(left[i].clone());
            i += 1;
        } else {
            let take_left =
                matches!((live_pos(&left[i]), live_pos(&right[j])), (Some(a), Some(b)) if a < b);
            if take_left {
                out.push(left[i].clone());
                i += 1;
            } else {
                out.push(right[j].clone());
                j += 1;
            }
        }
    }
    out
}

/// Argo CD's `RemoveMapFields(config, live)`: live with every map key config lacks
/// removed, recursively; lists index-wise (extra live elements kept).
pub fn remove_map_fields(config: &Value, live: &Value) -> Value {
    match (config, live) {
        (Value::Object(c), Value::Object(l)) => Value::Object(
            l.iter()
                .filter_map(|(k, lv)| c.get(k).map(|cv| (k.clone(), remove_map_fields(cv, lv))))
                .collect(),
        ),
        (Value::Array(c), Value::Array(l)) => Value::Array(
            l.iter()
                .enumerate()
                .map(|(i, lv)| match c.get(i) {
                    Some(cv) => remove_map_fields(cv, lv),
                    None => lv.clone(),
                })
                .collect(),
        ),
        _ => live.clone(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_null_last_applied_and_desired_leaves_the_server_default() {
        let config = json!({"spec": {"cleanupPolicy": null, "size": 1}});
        let live = json!({"spec": {"cleanupPolicy": "delete", "size": 1}});
        let p = three_way(Some(&config), &config, &live, Semantics::Json);
        assert_eq!(p, live, "unchanged null: live's default stays");
        assert!(!changes(Some(&config), &config, &live, Semantics::Json));
        // A value last applied and now null is deleted.
        let orig = json!({"spec": {"cleanupPolicy": "keep", "size": 1}});
        let p = three_way(Some(&orig), &config, &live, Semantics::Json);
        assert_eq!(p, json!({"spec": {"size": 1}}));
    }

    /// `changes` is exactly "the merge would change live", on every pair of fixtures
    /// below combined as (last-applied, desired, live).
    #[test]
    fn changes_agrees_with_the_merge() {
        let objs = [
            json!({"data": {"a": "1"}}),
            json!({"data": {"a": "2", "b": null}}),
            json!({"data": null, "x": [1, 2]}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}],
                "tolerations": [{"key": "k"}], "finalizers": ["f"]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "b"}, {"name": "a", "image": "y", "env": [{"name": "E", "value": "1"}]}],
                "tolerations": [], "finalizers": ["f", "g"]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"image": "nokey"}]}}}}),
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 2}}),
            json!({"metadata": {"labels": {}}, "spec": {"replicas": null, "x": {"y": [{"z": 1}]}}}),
            json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                "template": {"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}}}),
            json!({"spec": {"strategy": {"type": "Recreate"},
                "template": {"spec": {"volumes": [{"name": "v", "configMap": {"name": "c"}}]}}}}),
        ];
        for sem in [
            strategic("apps/v1 Deployment"),
            strategic("v1 ConfigMap"),
            Semantics::Json,
        ] {
            for o in &objs {
                for c in &objs {
                    for l in &objs {
                        for orig in [Some(o), None] {
                            let merged = three_way(orig, c, l, sem);
                            assert_eq!(
                                changes(orig, c, l, sem),
                                !json_eq(&merged, l),
                                "orig {orig:?}\nconfig {c}\nlive {l}\nmerged {merged}"
                            );
                        }
                    }
                }
            }
        }
    }

    use super::*;
    use serde_json::json;

    fn strategic(kind: &str) -> Semantics<'static> {
        let s = Schema::builtin();
        let (av, k) = kind.split_once(' ').unwrap();
        Semantics::Strategic(s, s.root(av, k))
    }

    #[test]
    fn live_only_fields_and_elements_survive() {
        let config = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "env": [{"name": "VAR1", "value": "x"}]}]}}}});
        let live = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "a", "imagePullPolicy": "Always",
            "env": [{"name": "VAR2", "value": "y"}, {"name": "VAR1", "value": "x"}]}]}}}});
        let p = three_way(
            Some(&config),
            &config,
            &live,
            strategic("apps/v1 Deployment"),
        );
        assert_eq!(p, live);
    }

    #[test]
    fn removal_needs_last_applied() {
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let config = json!({"metadata": {"labels": {"a": "1"}}});
        let last = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let three = three_way(Some(&last), &config, &live, strategic("v1 ConfigMap"));
        assert_eq!(three, json!({"metadata": {"labels": {"a": "1"}}}));
        let two = three_way(Some(&config), &config, &live, strategic("v1 ConfigMap"));
        assert_eq!(two, live, "two-way cannot see removals");
    }

    #[test]
    fn keyed_merge_orders_as_set_element_order() {
        let live = json!({"spec": {"template": {"spec": {"containers": [{"name": "side"}, {"name": "app", "image": "1"}]}}}});
        let config = json!({"spec": {"template": {"spec": {"containers": [{"name": "new"}, {"name": "app", "image": "2"}]}}}});
        let p = three_way(
            Some(&config),
            &config,
            &live,
            strategic("apps/v1 Deployment"),
        );
        let names: Vec<&str> = p
            .pointer("/spec/template/spec/containers")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["new", "side", "app"]);
        assert_eq!(
            p.pointer("/spec/template/spec/containers/2/image"),
            Some(&json!("2"))
        );
    }

    /// `patchStrategy: retainKeys` (a Deployment's `strategy`, a Pod's `volumes` items):
    /// live's keys that desired does not set are cleared, as kubectl's `$retainKeys` does —
    /// switching to `Recreate` drops `rollingUpdate`, a volume changing source drops the old.
    #[test]
    fn retain_keys_clears_what_desired_does_not_set() {
        let live = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
            "template": {"spec": {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}]}}}});
        let config = json!({"spec": {"strategy": {"type": "Recreate"},
            "template": {"spec": {"volumes": [{"name": "v", "configMap": {"name": "c"}}]}}}});
        let sem = strategic("apps/v1 Deployment");
        let p = three_way(None, &config, &live, sem);
        assert_eq!(
            p.pointer("/spec/strategy"),
            Some(&json!({"type": "Recreate"}))
        );
        assert_eq!(
            p.pointer("/spec/template/spec/volumes"),
            Some(
                &json!([{"name": "v", "configMap": {"name": "c"}}, {"name": "w", "emptyDir": {}}])
            ),
            "the volume desired names loses its old source; a live-only volume stays"
        );
        // Only desired's own keys: the same type without rollingUpdate clears it too (the
        // API server then defaults it again).
        let same = json!({"spec": {"strategy": {"type": "RollingUpdate"}}});
        assert!(changes(None, &same, &live, sem));
        assert_eq!(
            three_way(None, &same, &live, sem).pointer("/spec/strategy"),
            Some(&json!({"type": "RollingUpdate"}))
        );
        // Custom resources have no retainKeys.
        assert_eq!(
            three_way(None, &same, &live, Semantics::Json).pointer("/spec/strategy/rollingUpdate"),
            Some(&json!({"maxSurge": "25%"}))
        );
    }

    fn names(v: &Value, pointer: &str, field: &str) -> Vec<String> {
        v.pointer(pointer)
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|e| format!("{}={}", e["name"].as_str().unwrap(), e[field]))
            .collect()
    }

    /// A merge-key list reordered in git is a change (kubectl's patch carries
    /// `$setElementOrder` when the keys differ position by position), with or without
    /// last-applied; live-only elements keep their place relative to live's order.
    #[test]
    fn a_list_reordered_in_git_is_reordered_live() {
        let sem = strategic("v1 Service");
        let live = json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "x", "port": 9}, {"name": "b", "port": 2}]}});
        let config =
            json!({"spec": {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}]}});
        for orig in [None, Some(&config)] {
            let p = three_way(orig, &config, &live, sem);
            // x came before b in live, so it stays before it (mergeSortedSlice).
            assert_eq!(names(&p, "/spec/ports", "port"), ["x=9", "b=2", "a=1"]);
            assert!(changes(orig, &config, &live, sem));
        }
        // Same order (live's extra element aside): no change.
        let same = json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}});
        assert!(!changes(Some(&same), &same, &live, sem));
        assert_eq!(three_way(Some(&same), &same, &live, sem), live);
        // Primitive merge lists: any order difference.
        let live = json!({"metadata": {"finalizers": ["a", "b"]}});
        let config = json!({"metadata": {"finalizers": ["b", "a"]}});
        let sem = strategic("v1 ConfigMap");
        assert!(changes(None, &config, &live, sem));
        assert_eq!(three_way(None, &config, &live, sem), config);
    }

    /// Duplicate merge keys (the API server stores them from a client-side apply): when the
    /// patch names the list, the elements sharing a key end up next to each other, at the
    /// place of the first, in live's order.
    #[test]
    fn duplicate_merge_keys_are_grouped_when_the_list_is_patched() {
        let sem = strategic("apps/v1 Deployment");
        let env = |e: Value| json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "env": e}]}}}});
        let live = env(
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C"}, {"name": "A", "value": "3"}]),
        );
        let config = env(
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C"}, {"name": "A", "value": "3"}]),
        );
        // Unchanged: nothing moves.
        assert_eq!(three_way(Some(&config), &config, &live, sem), live);
        // Last-applied had a field desired dropped (C's value): the list is in the patch.
        let orig = env(
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": ""}, {"name": "A", "value": "3"}]),
        );
        let p = three_way(Some(&orig), &config, &live, sem);
        assert_eq!(
            names(&p, "/spec/template/spec/containers/0/env", "value"),
            ["A=\"1\"", "A=\"3\"", "B=\"2\"", "C=null"]
        );
        assert!(changes(Some(&orig), &config, &live, sem));
        // A change to the second A in git lands on the first (the library pairs duplicates
        // by occurrence to diff, but patches the first element with the key).
        let config2 = env(
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C"}, {"name": "A", "value": "4"}]),
        );
        let p = three_way(Some(&config), &config2, &live, sem);
        assert_eq!(
            names(&p, "/spec/template/spec/containers/0/env", "value"),
            ["A=\"4\"", "A=\"3\"", "B=\"2\"", "C=null"]
        );
        assert!(changes(Some(&config), &config2, &live, sem));
    }

    #[test]
    fn atomic_lists_are_replaced() {
        let live = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["x", "y"]}]}}}});
        let config =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["x"]}]}}}});
        let p = three_way(
            Some(&config),
            &config,
            &live,
            strategic("apps/v1 Deployment"),
        );
        assert_eq!(
            p.pointer("/spec/template/spec/containers/0/args"),
            Some(&json!(["x"]))
        );
    }

    #[test]
    fn custom_resource_lists_compare_stripped() {
        let config = json!({"spec": {"servers": [{"port": 80}]}});
        let live = json!({"spec": {"servers": [{"port": 80, "enabled": true}]}});
        let p = three_way(Some(&config), &config, &live, Semantics::Json);
        assert_eq!(
            p, live,
            "defaulted fields inside CR list items are invisible while last-applied has the items"
        );
        let live2 = json!({"spec": {"servers": [{"port": 80}, {"port": 81}]}});
        let p2 = three_way(Some(&config), &config, &live2, Semantics::Json);
        assert_eq!(
            p2, config,
            "an extra live element makes the list differ and it is replaced"
        );
    }
}
