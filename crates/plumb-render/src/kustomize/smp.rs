//! Strategic merge patch application as kustomize (kyaml's merge2 walker) performs it.
//!
//! Facts this module reproduces (checked against `kubectl kustomize` 5.5):
//! - lists merge element-wise only where the Kubernetes schema gives the field
//!   `patchStrategy: merge`; every other list (and every list of a kind the schema does
//!   not know, i.e. custom resources) is replaced by the patch's list;
//! - merge keys are the field's `x-kubernetes-list-map-keys` when present, else its
//!   `patchMergeKey`; primitive lists (`finalizers`) merge by value;
//! - patch elements come first, in patch order, then the remaining original elements
//!   (kustomize merges with "prepend" list direction), with kyaml's particular handling
//!   of multi-key lists;
//! - `$patch: delete|replace|merge` directives are honoured on maps and lists; a null
//!   value deletes a field; other directives (`$setElementOrder/…`, `$retainKeys`,
//!   `$deleteFromPrimitiveList/…`) are not understood by kustomize and are kept as
//!   ordinary fields.

use super::tree::{Map, Node, Scalar, Text};
use plumb_core::schema::{FieldDef, FieldType, Schema, TypeDef};

const DIRECTIVE: &str = "$patch";

/// What the walker knows about the value at hand.
#[derive(Clone, Copy)]
enum Ty<'s> {
    Unknown,
    /// An object type (of the schema in use).
    Obj(&'s Schema, &'s TypeDef),
    /// A field (list or map or scalar) with its definition.
    Field(&'s Schema, &'s FieldDef),
}

/// Applies `patch` to `dest` (a whole object). `None` means the object was deleted
/// (`$patch: delete` at the top level). `api_version`/`kind` select the type in `schema`
/// (Kubernetes' built-in one, or a kustomization's `openapi` document, which replaces it).
pub fn apply(
    dest: Node,
    patch: Node,
    api_version: &str,
    kind: &str,
    schema: &Schema,
) -> Result<Option<Node>, String> {
    let ty = match schema.root(api_version, kind) {
        Some(t) if schema.is_builtin(plumb_core::group_of_api_version(api_version), kind) => {
            Ty::Obj(schema, t)
        }
        _ => Ty::Unknown,
    };
    merge(Some(dest), Some(patch), ty, false)
}

/// Fields Kubernetes added after the schema kustomize 5.5 builds in (Kubernetes 1.21):
/// kustomize knows no merge key for them, so their lists are replaced, not merged
/// (`schedulingGates` and `resourceClaims` of a pod spec, admission `matchConditions`).
/// Only for that schema: a kustomization's `openapi` document says what it says.
const NEWER_THAN_KUSTOMIZE: &[&str] = &["schedulingGates", "resourceClaims", "matchConditions"];

fn child_ty<'s>(ty: Ty<'s>, key: &str) -> Ty<'s> {
    let builtin = |s: &Schema| std::ptr::eq(s, Schema::builtin());
    match ty {
        Ty::Obj(s, _) | Ty::Field(s, _) if builtin(s) && NEWER_THAN_KUSTOMIZE.contains(&key) => {
            return Ty::Unknown;
        }
        _ => {}
    }
    match ty {
        Ty::Obj(s, t) => t.fields.get(key).map_or(Ty::Unknown, |f| Ty::Field(s, f)),
        Ty::Field(s, f) => match f.t {
            FieldType::Object => s
                .field_type(f)
                .and_then(|t| t.fields.get(key))
                .map_or(Ty::Unknown, |f| Ty::Field(s, f)),
            FieldType::Map => f.values.as_deref().map_or(Ty::Unknown, |f| Ty::Field(s, f)),
            _ => Ty::Unknown,
        },
        Ty::Unknown => Ty::Unknown,
    }
}

fn elem_ty(ty: Ty<'_>) -> Ty<'_> {
    match ty {
        Ty::Field(s, f) if f.t == FieldType::List => {
            f.items.as_deref().map_or(Ty::Unknown, |f| Ty::Field(s, f))
        }
        _ => Ty::Unknown,
    }
}

/// Merges one value. `None` for an absent value (or, returned, a cleared one).
///
/// `alias`: `dest` and `patch` are one and the same node in kyaml. Where the original has
/// no value for a merged list, kyaml takes the patch's list itself as the destination, so
/// what the merge deletes from the destination is gone from the patch too: a patch item
/// without the merge key then deletes the keyed items of its own list (corpus case 82).
fn merge(
    dest: Option<Node>,
    patch: Option<Node>,
    ty: Ty<'_>,
    alias: bool,
) -> Result<Option<Node>, String> {
    let Some(patch) = patch else {
        // kyaml walks the original's fields even where the patch says nothing, so
        // associative lists everywhere get its normalisation (duplicates collapse).
        return match dest {
            Some(d) => walk_untouched(d, ty).map(Some),
            None => Ok(None),
        };
    };
    match patch {
        Node::Scalar(Scalar::Null, _) => Ok(None),
        Node::Scalar(..) => Ok(Some(patch)),
        Node::Map(mut pm) => {
            match take_map_directive(&mut pm)? {
                Directive::Delete => return Ok(None),
                Directive::Replace => return Ok(Some(Node::Map(pm))),
                Directive::Merge => {}
            }
            let mut dm = match dest {
                Some(Node::Map(m)) => m,
                _ => Map::new(),
            };
            if alias {
                dm.remove(DIRECTIVE);
            }
            // The patch's entries (sorted, as maps keep them) are taken by binary search and
            // the result sorted once: no step costs the size of a map (they may be large).
            let mut pm: Vec<(Text, Option<Node>)> =
                pm.into_iter().map(|(k, v)| (k, Some(v))).collect();
            let mut out = Vec::with_capacity(dm.len() + pm.len());
            for (k, dv) in dm {
                let cty = child_ty(ty, &k);
                let pv = match pm.binary_search_by(|(pk, _)| pk.as_str().cmp(&k)) {
                    Ok(i) => pm[i].1.take(),
                    Err(_) => None,
                };
                if let Some(v) = merge(Some(dv), pv, cty, alias)? {
                    out.push((k, v));
                }
            }
            for (k, pv) in pm {
                let Some(pv) = pv else { continue };
                let cty = child_ty(ty, &k);
                if let Some(v) = merge(None, Some(pv), cty, false)? {
                    out.push((k, v));
                }
            }
            Ok(Some(Node::Map(Map::from_entries(out).0)))
        }
        Node::Seq(mut ps) => {
            let (schema, field) = match ty {
                Ty::Field(s, f) if f.merges() => (s, f),
                // Non-associative list: the patch's list replaces the original.
                _ => return Ok(Some(Node::Seq(ps))),
            };
            match take_list_directive(&mut ps)? {
                Directive::Delete => return Ok(None),
                Directive::Replace => return Ok(Some(Node::Seq(ps))),
                Directive::Merge => {}
            }
            let (dest, alias) = match dest {
                Some(Node::Seq(d)) => (d, alias),
                _ => (ps.clone(), true),
            };
            let keys = list_keys(field);
            let ety = elem_ty(Ty::Field(schema, field));
            merge_list(dest, ps, &keys, ety, alias).map(|l| Some(Node::Seq(l)))
        }
    }
}

/// The original's value where the patch has none.
fn walk_untouched(d: Node, ty: Ty<'_>) -> Result<Node, String> {
    match d {
        Node::Map(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let cty = child_ty(ty, &k);
                out.insert(k, walk_untouched(v, cty)?);
            }
            Ok(Node::Map(out))
        }
        Node::Seq(items) => match ty {
            Ty::Field(_, f) if f.merges() => {
                let keys = list_keys(f);
                merge_list(items, Vec::new(), &keys, elem_ty(ty), false).map(Node::Seq)
            }
            _ => Ok(Node::Seq(items)),
        },
        s => Ok(s),
    }
}

fn list_keys(field: &FieldDef) -> Vec<String> {
    if !field.map_keys.is_empty() {
        field.map_keys.clone()
    } else if let Some(k) = &field.merge_key {
        vec![k.clone()]
    } else {
        Vec::new()
    }
}

enum Directive {
    Merge,
    Replace,
    Delete,
}

fn directive(v: &Node) -> Result<Directive, String> {
    match v.as_str() {
        Some("delete") => Ok(Directive::Delete),
        Some("replace") => Ok(Directive::Replace),
        Some("merge") => Ok(Directive::Merge),
        _ => Err(format!(
            "unknown patch strategy {}",
            v.scalar_text().unwrap_or_default()
        )),
    }
}

fn take_map_directive(m: &mut Map) -> Result<Directive, String> {
    match m.remove(DIRECTIVE) {
        Some(v) => directive(&v),
        None => Ok(Directive::Merge),
    }
}

/// A list directive is an element holding only `$patch`; it is removed from the list.
fn take_list_directive(l: &mut Vec<Node>) -> Result<Directive, String> {
    let Some(i) = l
        .iter()
        .position(|e| e.as_map().is_some_and(|m| m.contains_key(DIRECTIVE)))
    else {
        return Ok(Directive::Merge);
    };
    let m = l[i].as_map().expect("checked above");
    if m.len() != 1 {
        return Ok(Directive::Merge);
    }
    let d = directive(&m[DIRECTIVE])?;
    l.remove(i);
    Ok(d)
}

/// The text kyaml compares scalars by.
fn text(n: &Node) -> String {
    match n {
        Node::Scalar(Scalar::Str(s), _) => s.to_string(),
        Node::Scalar(Scalar::Num(x), _) => x.to_string(),
        Node::Scalar(Scalar::Bool(b), _) => b.to_string(),
        _ => String::new(),
    }
}

fn is_empty_elem(n: &Node) -> bool {
    n.is_null() || n.as_map().is_some_and(Map::is_empty)
}

/// Field match as ElementMatcher does it: the field is present with exactly this text.
fn field_is(n: &Node, key: &str, value: &str) -> bool {
    if key.is_empty() {
        return matches!(n, Node::Scalar(..)) && text(n) == value;
    }
    n.get(key).is_some_and(|f| text(f) == value)
}

/// Field match as ElementSetter does it: an empty value only requires presence.
fn setter_field_is(n: &Node, key: &str, value: &str) -> bool {
    if key.is_empty() {
        return matches!(n, Node::Scalar(..)) && text(n) == value;
    }
    match n.get(key) {
        Some(f) => value.is_empty() || text(f) == value,
        None => false,
    }
}

/// Elements live in an arena so that "the same element" can be tracked through the
/// passes, as kyaml tracks node pointers.
struct Arena {
    nodes: Vec<Node>,
}

impl Arena {
    /// kyaml's ElementSetter on `list`: drops empty elements, replaces (or, with no
    /// element, removes) every element matching `keys`/`values`, appends when none did.
    fn set(
        &self,
        list: &mut Vec<usize>,
        element: Option<usize>,
        keys: &[String],
        values: &[String],
    ) {
        let mapping_setter =
            !keys.is_empty() && !keys[0].is_empty() && !values.is_empty() && !values[0].is_empty();
        let mut out = Vec::with_capacity(list.len() + 1);
        let mut found = false;
        for &e in list.iter() {
            let node = &self.nodes[e];
            if is_empty_elem(node) {
                continue;
            }
            if node.as_map().is_none() && mapping_setter {
                out.push(e);
                continue;
            }
            let mut matched = false;
            let mut all = true;
            for (j, k) in keys.iter().enumerate() {
                if j < values.len() {
                    matched = setter_field_is(node, k, &values[j]);
                }
                if !matched {
                    all = false;
                    break;
                }
            }
            if !all {
                // kyaml keeps non-matching elements only when values were given.
                if !values.is_empty() {
                    out.push(e);
                }
                continue;
            }
            found = true;
            if let Some(el) = element {
                out.push(el);
            }
        }
        *list = out;
        if let Some(el) = element
            && !found
        {
            list.push(el);
        }
    }
}

fn values_of(n: &Node, keys: &[String]) -> Vec<String> {
    keys.iter()
        .map(|k| n.get(k).map(text).unwrap_or_default())
        .collect()
}

/// kyaml's validateKeys: keep the keys some element has a value for.
fn validate_keys(
    all: &[Vec<String>],
    values: &[String],
    keys: &[String],
) -> (Vec<String>, Vec<String>) {
    let valid: Vec<bool> = (0..keys.len())
        .map(|i| all.iter().any(|v| v.get(i).is_some_and(|s| !s.is_empty())))
        .collect();
    if !valid.iter().any(|b| *b) {
        return (keys.to_vec(), values.to_vec());
    }
    let vk = keys
        .iter()
        .zip(&valid)
        .filter(|(_, v)| **v)
        .map(|(k, _)| k.clone())
        .collect();
    let vv = values
        .iter()
        .zip(&valid)
        .filter(|(_, v)| **v)
        .map(|(s, _)| s.clone())
        .collect();
    (vk, vv)
}

/// kyaml's mergeValues: value tuples that agree except where one side is empty merge.
fn merge_values(list: &mut [Vec<String>]) {
    for i in 0..list.len() {
        for j in 0..list.len() {
            let (a, b) = (&list[i], &list[j]);
            if a.len() != b.len() {
                continue;
            }
            let mut common = false;
            let mut res = Vec::with_capacity(a.len());
            let mut ok = true;
            for (x, y) in a.iter().zip(b) {
                if x == y {
                    common = true;
                    res.push(x.clone());
                } else if !x.is_empty() && !y.is_empty() {
                    ok = false;
                    break;
                } else if !x.is_empty() {
                    res.push(x.clone());
                } else {
                    res.push(y.clone());
                }
            }
            if ok && common {
                list[i] = res.clone();
                list[j] = res;
            }
        }
    }
}

/// kyaml's merge of an associative list. `alias`: `patch` is `dest` itself (see [`merge`]),
/// so patch elements are looked up in the destination as it is at that point.
fn merge_list(
    dest: Vec<Node>,
    patch: Vec<Node>,
    keys: &[String],
    ety: Ty<'_>,
    alias: bool,
) -> Result<Vec<Node>, String> {
    let primitive = keys.is_empty();
    let keys: Vec<String> = if primitive {
        vec![String::new()]
    } else {
        keys.to_vec()
    };
    // Value tuples: the patch's elements first, then the original's (prepend direction).
    let mut values_list: Vec<Vec<String>> = Vec::new();
    for src in [&patch, &dest] {
        for e in src.iter() {
            let v = if primitive {
                vec![text(e)]
            } else {
                values_of(e, &keys)
            };
            if !values_list.contains(&v) {
                values_list.push(v);
            }
        }
    }
    if keys.len() > 1 {
        merge_values(&mut values_list);
    }
    let mut arena = Arena { nodes: dest };
    let mut dest_list: Vec<usize> = (0..arena.nodes.len()).collect();
    let mut items: Vec<usize> = Vec::new();
    let mut valid_keys: Vec<String> = keys.clone();
    for values in &values_list {
        if values.is_empty() {
            continue;
        }
        let (vk, vv) = validate_keys(&values_list, values, &keys);
        valid_keys = vk.clone();
        let (lk, lv) = validate_keys(std::slice::from_ref(values), values, &keys);
        let matches = |n: &Node| lk.iter().zip(&lv).all(|(k, v)| field_is(n, k, v));
        let d = dest_list
            .iter()
            .copied()
            .find(|&i| matches(&arena.nodes[i]));
        let p = if alias {
            d.map(|i| arena.nodes[i].clone())
        } else {
            patch.iter().find(|n| matches(n)).cloned()
        };
        let merged = match d {
            Some(i) => {
                let old = std::mem::replace(&mut arena.nodes[i], Node::Seq(Vec::new()));
                let m = merge(Some(old.clone()), p, ety, alias)?;
                // Keep the arena slot meaningful even when the element is deleted.
                arena.nodes[i] = m.clone().unwrap_or(old);
                m.map(|_| i)
            }
            None => merge(None, p, ety, false)?.map(|n| {
                arena.nodes.push(n);
                arena.nodes.len() - 1
            }),
        };
        let idx = match merged {
            Some(i) if !is_empty_elem(&arena.nodes[i]) => i,
            _ => {
                arena.set(&mut dest_list, None, &vk, &vv);
                continue;
            }
        };
        if !primitive && let Some(m) = arena.nodes[idx].as_map_mut() {
            for (k, v) in vk.iter().zip(&vv) {
                if !m.contains_key(k) && !v.is_empty() {
                    m.insert(k.clone(), Node::str(v.clone(), super::tree::Org::NONE));
                }
            }
        }
        arena.set(&mut items, Some(idx), &vk, &vv);
    }
    if values_list.is_empty() {
        return Ok(dest_list
            .into_iter()
            .map(|i| arena.nodes[i].clone())
            .collect());
    }
    {
        // Append the original's elements to the items (kyaml's appendListNode).
        for &e in &dest_list.clone() {
            let node = &arena.nodes[e];
            if valid_keys[0].is_empty() {
                let v = vec![text(node)];
                arena.set(&mut items, Some(e), &valid_keys, &v);
                continue;
            }
            let mut v = Vec::new();
            for k in &valid_keys {
                match node.get(k) {
                    Some(f) => v.push(text(f)),
                    None => items.push(e),
                }
            }
            if valid_keys.len() > 1 {
                arena.set(&mut items, None, &valid_keys, &v);
            }
            arena.set(&mut items, Some(e), &valid_keys, &v);
        }
    }
    Ok(items.into_iter().map(|i| arena.nodes[i].clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::super::tree::{Dialect, parse_stream};
    use super::*;

    fn node(y: &str) -> Node {
        parse_stream(y, 0, 0, 0, Dialect::Resource)
            .unwrap()
            .remove(0)
            .node
    }

    fn run(d: &str, p: &str) -> serde_json::Value {
        let d = node(d);
        let av = d.path_str(&["apiVersion"]).unwrap().to_string();
        let k = d.path_str(&["kind"]).unwrap().to_string();
        apply(d, node(p), &av, &k, Schema::builtin())
            .unwrap()
            .unwrap()
            .to_json()
    }

    fn names(v: &serde_json::Value, ptr: &str) -> Vec<String> {
        v.pointer(ptr)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                e.get("name")
                    .or(e.get("port"))
                    .or(e.get("containerPort"))
                    .map_or_else(
                        || e.to_string(),
                        |x| x.to_string().trim_matches('"').to_string(),
                    )
            })
            .collect()
    }

    #[test]
    fn patched_elements_come_first() {
        let d = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a}, {name: b}, {name: c}]}\n";
        let v = run(d, "spec: {containers: [{name: b, image: x}]}");
        assert_eq!(names(&v, "/spec/containers"), ["b", "a", "c"]);
        let v = run(
            d,
            "spec: {containers: [{name: z}, {name: c, image: x}, {name: y}]}",
        );
        assert_eq!(names(&v, "/spec/containers"), ["z", "c", "y", "a", "b"]);
        let v = run(d, "spec: {containers: [{name: b, $patch: delete}]}");
        assert_eq!(names(&v, "/spec/containers"), ["a", "c"]);
    }

    #[test]
    fn multi_key_lists_follow_kyaml() {
        let d = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80, protocol: TCP}, {port: 443, protocol: TCP}]}\n";
        let v = run(
            d,
            "spec: {ports: [{port: 443, protocol: TCP, targetPort: 1}]}",
        );
        assert_eq!(names(&v, "/spec/ports"), ["80", "443"]);
        let d = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c1, ports: [{containerPort: 80}, {containerPort: 80, protocol: UDP}, {containerPort: 70, protocol: TCP}]}]}\n";
        let v = run(
            d,
            "spec: {containers: [{name: c1, ports: [{containerPort: 80, protocol: UDP, name: u}, {containerPort: 90, x: 1}]}]}",
        );
        let ports = v.pointer("/spec/containers/0/ports").unwrap();
        assert_eq!(
            ports,
            &serde_json::json!([{"containerPort": 90, "x": 1}, {"containerPort": 80},
                {"containerPort": 80, "protocol": "UDP", "name": "u"}, {"containerPort": 70, "protocol": "TCP"}])
        );
    }

    #[test]
    fn directives_and_nulls() {
        let d = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, finalizers: [y]}\nspec:\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      nodeSelector: {old: s}\n      volumes: [{name: v1}]\n      containers: [{name: c, args: [a, b]}]\n";
        let v = run(
            d,
            "metadata: {finalizers: [z]}\nspec:\n  template:\n    metadata: {labels: {$patch: delete}}\n    spec:\n      nodeSelector: {$patch: replace, new: s}\n      volumes: [{$patch: replace}, {name: v9}]\n      containers: [{name: c, args: [n]}]\n      $setElementOrder/containers: [{name: c}]\n",
        );
        assert_eq!(v["metadata"]["finalizers"], serde_json::json!(["z", "y"]));
        assert_eq!(v["spec"]["template"]["metadata"], serde_json::json!({}));
        assert_eq!(
            v["spec"]["template"]["spec"]["nodeSelector"],
            serde_json::json!({"new": "s"})
        );
        assert_eq!(
            v["spec"]["template"]["spec"]["volumes"],
            serde_json::json!([{"name": "v9"}])
        );
        assert_eq!(
            v["spec"]["template"]["spec"]["containers"][0]["args"],
            serde_json::json!(["n"])
        );
        // kustomize keeps directives it does not understand as fields.
        assert!(
            v["spec"]["template"]["spec"]
                .get("$setElementOrder/containers")
                .is_some()
        );
        let gone = apply(
            node(d),
            node("$patch: delete"),
            "apps/v1",
            "Deployment",
            Schema::builtin(),
        )
        .unwrap();
        assert!(gone.is_none());
    }

    #[test]
    fn custom_resources_replace_lists() {
        let d = "apiVersion: x.io/v1\nkind: Foo\nmetadata: {name: f}\nspec: {items: [{name: a, v: 1}, {name: b}], drop: 1}\n";
        let v = run(d, "spec: {items: [{name: a, v: 2}], drop: null}");
        assert_eq!(
            v["spec"],
            serde_json::json!({"items": [{"name": "a", "v": 2}]})
        );
    }
}
