//! `managedFields[].fieldsV1` — the set of fields a manager owns — parsed into a trie.
//!
//! Keys in the encoded form are `f:<field>` (a map field), `k:<json object>` (a list
//! element identified by its key fields), `v:<json value>` (a set element), `i:<n>`
//! (a list element by index) and `.` (the node itself is owned, not just its children).

use crate::value::json_eq;
use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq)]
pub enum PathElement {
    /// `f:<name>`: a field of an object.
    Field(String),
    /// `k:{…}`: the list element whose key fields have these values.
    Key(Map<String, Value>),
    /// `v:<json>`: the element of a set list equal to this value.
    Value(Value),
    /// `i:<n>`: the list element at this index.
    Index(usize),
}

/// A set of field paths, as a trie.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSet {
    /// `.`: this node itself is a member.
    pub member: bool,
    /// The steps below this node, each with its subtree, in `fieldsV1` order.
    pub children: Vec<(PathElement, FieldSet)>,
}

/// Why a `fieldsV1` document could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid fieldsV1 entry '{entry}': {reason}")]
pub struct FieldSetError {
    /// The key that could not be read (or the JSON that is not an object).
    pub entry: String,
    /// Why it could not be read.
    pub reason: String,
}

impl FieldSet {
    /// Parses the JSON form of `fieldsV1`.
    pub fn parse(v: &Value) -> Result<FieldSet, FieldSetError> {
        let Value::Object(m) = v else {
            return Err(FieldSetError {
                entry: v.to_string(),
                reason: "expected an object".into(),
            });
        };
        let mut set = FieldSet::default();
        for (k, child) in m {
            if k == "." {
                set.member = true;
                continue;
            }
            let err = |reason: String| FieldSetError {
                entry: k.clone(),
                reason,
            };
            let elem = if let Some(f) = k.strip_prefix("f:") {
                PathElement::Field(f.to_string())
            } else if let Some(j) = k.strip_prefix("k:") {
                match serde_json::from_str(j) {
                    Ok(Value::Object(o)) => PathElement::Key(o),
                    Ok(_) => return Err(err("k: must hold a JSON object".into())),
                    Err(e) => return Err(err(e.to_string())),
                }
            } else if let Some(j) = k.strip_prefix("v:") {
                PathElement::Value(serde_json::from_str(j).map_err(|e| err(e.to_string()))?)
            } else if let Some(i) = k.strip_prefix("i:") {
                PathElement::Index(i.parse().map_err(|_| err("i: must hold an index".into()))?)
            } else {
                return Err(err("unknown prefix".into()));
            };
            let mut sub = FieldSet::parse(child)?;
            if sub.children.is_empty() {
                sub.member = true; // a leaf is a member
            }
            set.children.push((elem, sub));
        }
        Ok(set)
    }

    /// Every member path (leaves and `.`-marked nodes), depth first.
    pub fn members(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect(&mut prefix, &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        if self.member && !prefix.is_empty() {
            out.push(prefix.clone());
        }
        for (e, sub) in &self.children {
            prefix.push(e.clone());
            sub.collect(prefix, out);
            prefix.pop();
        }
    }

    /// Whether `path` is in the set.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        match path.split_first() {
            None => self.member,
            Some((head, rest)) => self
                .children
                .iter()
                .any(|(e, sub)| elem_eq(e, head) && sub.contains(rest)),
        }
    }

    /// Whether the set has `path` or anything below it.
    pub fn has_prefix(&self, path: &[PathElement]) -> bool {
        match path.split_first() {
            None => true,
            Some((head, rest)) => self
                .children
                .iter()
                .any(|(e, sub)| elem_eq(e, head) && sub.has_prefix(rest)),
        }
    }
}

fn elem_eq(a: &PathElement, b: &PathElement) -> bool {
    match (a, b) {
        (PathElement::Field(x), PathElement::Field(y)) => x == y,
        (PathElement::Key(x), PathElement::Key(y)) => {
            json_eq(&Value::Object(x.clone()), &Value::Object(y.clone()))
        }
        (PathElement::Value(x), PathElement::Value(y)) => json_eq(x, y),
        (PathElement::Index(x), PathElement::Index(y)) => x == y,
        _ => false,
    }
}

/// Finds the position of the list element a path element selects.
fn position(list: &[Value], elem: &PathElement) -> Option<usize> {
    match elem {
        PathElement::Key(keys) => list.iter().position(|item| {
            keys.iter()
                .all(|(k, want)| item.get(k).is_some_and(|have| json_eq(have, want)))
        }),
        PathElement::Value(want) => list.iter().position(|item| json_eq(item, want)),
        PathElement::Index(i) => (*i < list.len()).then_some(*i),
        PathElement::Field(_) => None,
    }
}

/// One `managedFields` entry that owns a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// `manager`: the field manager (`kubectl-client-side-apply`, `kube-controller-manager`).
    pub manager: String,
    /// `operation`: `Apply` or `Update`.
    pub operation: String,
    /// `subresource`: `status`, `scale`, …; empty for the object itself.
    pub subresource: String,
    /// `time`: when the manager last wrote, as recorded (RFC 3339).
    pub time: String,
}

impl FieldSet {
    /// Whether the set owns the value at `pointer` in `doc`: the leaf itself, or an ancestor
    /// owned whole (a member without children). List elements are matched by the set's
    /// `k:` keys, `v:` values or `i:` indexes, as the API server records them.
    pub fn owns_pointer(&self, doc: &Value, pointer: &str) -> bool {
        let mut set = self;
        let mut cur = doc;
        for raw in pointer.split('/').skip(1) {
            if set.member && set.children.is_empty() {
                return true;
            }
            let token = crate::pointer::unescape_token(raw).into_owned();
            let next = match cur {
                Value::Object(m) => m
                    .get(&token)
                    .map(|v| (PathElement::Field(token.clone()), v)),
                Value::Array(a) => token.parse::<usize>().ok().and_then(|i| {
                    let item = a.get(i)?;
                    let elem = set.children.iter().find_map(|(e, _)| match e {
                        PathElement::Key(k)
                            if k.iter()
                                .all(|(f, want)| item.get(f).is_some_and(|h| json_eq(h, want))) =>
                        {
                            Some(e.clone())
                        }
                        PathElement::Value(v) if json_eq(v, item) => Some(e.clone()),
                        PathElement::Index(j) if *j == i => Some(e.clone()),
                        _ => None,
                    })?;
                    Some((elem, item))
                }),
                _ => None,
            };
            let Some((elem, value)) = next else {
                return false;
            };
            let Some(sub) = set
                .children
                .iter()
                .find(|(e, _)| elem_eq(e, &elem))
                .map(|(_, s)| s)
            else {
                return false;
            };
            set = sub;
            cur = value;
        }
        set.member
    }
}

/// The `managedFields` entries of `obj` that own the value at `pointer`.
pub fn owners(obj: &Value, pointer: &str) -> Vec<Owner> {
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| {
            e.get("fieldsV1")
                .and_then(|f| FieldSet::parse(f).ok())
                .is_some_and(|set| set.owns_pointer(obj, pointer))
        })
        .map(|e| Owner {
            manager: s(e, "manager"),
            operation: s(e, "operation"),
            subresource: s(e, "subresource"),
            time: s(e, "time"),
        })
        .collect()
}

/// The value at `path`, if present.
pub fn resolve<'a>(doc: &'a Value, path: &[PathElement]) -> Option<&'a Value> {
    let mut cur = doc;
    for e in path {
        cur = match (cur, e) {
            (Value::Object(m), PathElement::Field(f)) => m.get(f)?,
            (Value::Array(a), e) => &a[position(a, e)?],
            _ => return None,
        };
    }
    Some(cur)
}

/// Removes the value at `path`; `false` when absent.
pub fn remove(doc: &mut Value, path: &[PathElement]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut cur = doc;
    for e in parents {
        cur = match (cur, e) {
            (Value::Object(m), PathElement::Field(f)) => match m.get_mut(f) {
                Some(v) => v,
                None => return false,
            },
            (Value::Array(a), e) => match position(a, e) {
                Some(i) => &mut a[i],
                None => return false,
            },
            _ => return false,
        };
    }
    match (cur, last) {
        (Value::Object(m), PathElement::Field(f)) => m.remove(f).is_some(),
        (Value::Array(a), e) => match position(a, e) {
            Some(i) => {
                a.remove(i);
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// A field path as a JSON pointer into `doc` (list elements by index), for reporting.
pub fn to_pointer(doc: &Value, path: &[PathElement]) -> Option<String> {
    let mut cur = doc;
    let mut out = String::new();
    for e in path {
        out.push('/');
        match (cur, e) {
            (Value::Object(m), PathElement::Field(f)) => {
                out.push_str(&crate::pointer::escape_token(f));
                cur = m.get(f)?;
            }
            (Value::Array(a), e) => {
                let i = position(a, e)?;
                out.push_str(&i.to_string());
                cur = &a[i];
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {

    #[test]
    fn owners_of_pointers_follow_list_keys() {
        let obj = serde_json::json!({"metadata": {"managedFields": [
            {"manager": "kubectl", "operation": "Apply", "time": "t1", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {
                "f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale", "time": "t2",
             "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "webhook", "operation": "Update", "time": "t3", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {
                "f:containers": {"k:{\"name\":\"app\"}": {"f:imagePullPolicy": {}}}}}}}}]},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "side"}, {"name": "app", "image": "x", "imagePullPolicy": "Always"}]}}}});
        let names = |p: &str| {
            super::owners(&obj, p)
                .into_iter()
                .map(|o| o.manager)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("/spec/replicas"), ["kube-controller-manager"]);
        assert_eq!(names("/spec/template/spec/containers/1/image"), ["kubectl"]);
        assert_eq!(
            names("/spec/template/spec/containers/1/imagePullPolicy"),
            ["webhook"]
        );
        assert!(names("/spec/template/spec/containers/0/name").is_empty());
        assert_eq!(
            super::owners(&obj, "/spec/replicas")[0].subresource,
            "scale"
        );
    }

    use super::*;
    use serde_json::json;

    #[test]
    fn parses_keys_values_and_members() {
        let fs = FieldSet::parse(&json!({
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}}},
            "f:metadata": {"f:finalizers": {"v:\"a\"": {}}}
        }))
        .unwrap();
        let members = fs.members();
        assert_eq!(members.len(), 4);
        let image = vec![
            PathElement::Field("spec".into()),
            PathElement::Field("template".into()),
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::Key(json!({"name": "app"}).as_object().unwrap().clone()),
            PathElement::Field("image".into()),
        ];
        assert!(fs.contains(&image));
        assert!(fs.contains(&image[..5]));
        assert!(!fs.contains(&image[..4]));
        let doc = json!({"spec": {"template": {"spec": {"containers": [{"name": "side"}, {"name": "app", "image": "x"}]}}}});
        assert_eq!(resolve(&doc, &image), Some(&json!("x")));
        assert_eq!(
            to_pointer(&doc, &image).unwrap(),
            "/spec/template/spec/containers/1/image"
        );
        let mut doc2 = doc.clone();
        assert!(remove(&mut doc2, &image));
        assert!(resolve(&doc2, &image).is_none());
    }

    #[test]
    fn rejects_garbage() {
        assert!(FieldSet::parse(&json!({"x:foo": {}})).is_err());
        assert!(FieldSet::parse(&json!({"k:[1]": {}})).is_err());
        assert!(FieldSet::parse(&json!("f:spec")).is_err());
    }
}
