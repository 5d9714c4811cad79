//! Source locations: for every scalar of a rendered object, the file, line and column
//! in git that set its value. This is what lets plumb say *which line* of which file
//! declares a field that something in the cluster keeps rewriting.
//!
//! An [`Origin`] is file, line and column. [`Declared::locate`] translates a pointer into a
//! live object into the pointer desired declares, matching list elements by identity rather
//! than index ([`ELEMENT_KEYS`], which the doctor's "identity field" test uses too).

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Where a value was written: a repository-relative file and a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    /// The file, relative to the repository root.
    pub file: Arc<str>,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1.
    pub column: u32,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// JSON pointer (RFC 6901, list indexes) of each scalar of an object → its origin.
pub type Origins = BTreeMap<String, Origin>;

/// A desired object as rendered, with the origins of its scalars.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    /// The object as rendered.
    pub object: Value,
    /// Where each of its scalars was written.
    pub origins: Origins,
}

/// Keys that identify a list element across two versions of a list, in the order they
/// are tried: the merge keys of Kubernetes' common lists (containers, volumes, env: `name`;
/// ports: `containerPort`; volume mounts and devices: `mountPath`, `devicePath`; host
/// aliases: `ip`; topology spread constraints: `topologyKey`; tolerations and items:
/// `key`; conditions: `type`). A patch repeats them to say which element it edits.
pub const ELEMENT_KEYS: &[&str] = &[
    "name",
    "containerPort",
    "mountPath",
    "devicePath",
    "ip",
    "topologyKey",
    "key",
    "type",
];

impl Declared {
    /// Where desired declares the value at `pointer`, a path into *another* version of
    /// the object (`other`: live, or live with desired applied). List indexes are
    /// translated by element identity (`name`, `containerPort`, …), since live lists
    /// may hold elements desired does not. `None` when desired does not declare it.
    pub fn locate(&self, other: &Value, pointer: &str) -> Option<&Origin> {
        if let Some(o) = self
            .translate(other, pointer)
            .and_then(|t| self.origins.get(&t))
        {
            return Some(o);
        }
        // A Secret value compared under `data` may be declared in `stringData`.
        pointer
            .strip_prefix("/data/")
            .and_then(|k| self.origins.get(&format!("/stringData/{k}")))
    }

    /// `pointer` into `other` rewritten as the pointer of the same field in desired.
    pub fn translate(&self, other: &Value, pointer: &str) -> Option<String> {
        let mut theirs = other;
        let mut ours = &self.object;
        let mut out = String::new();
        for raw in pointer.split('/').skip(1) {
            let token = crate::pointer::unescape_token(raw);
            match (theirs, ours) {
                (Value::Array(t), Value::Array(o)) => {
                    let i: usize = token.parse().ok()?;
                    let elem = t.get(i)?;
                    let j = match_element(elem, o).or_else(|| (t.len() == o.len()).then_some(i))?;
                    out.push('/');
                    out.push_str(&j.to_string());
                    theirs = elem;
                    ours = o.get(j)?;
                }
                (Value::Object(t), Value::Object(o)) => {
                    theirs = t.get(token.as_ref())?;
                    ours = o.get(token.as_ref())?;
                    out.push('/');
                    out.push_str(raw);
                }
                _ => return None,
            }
        }
        Some(out)
    }
}

fn match_element(elem: &Value, list: &[Value]) -> Option<usize> {
    match elem {
        Value::Object(m) => ELEMENT_KEYS.iter().find_map(|k| {
            let v = m.get(*k)?;
            list.iter().position(|o| o.get(*k) == Some(v))
        }),
        scalar => list.iter().position(|o| o == scalar),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn origin(line: u32) -> Origin {
        Origin {
            file: "overlays/prod/pull-policy.yaml".into(),
            line,
            column: 7,
        }
    }

    #[test]
    fn list_indexes_follow_element_identity() {
        let desired =
            json!({"spec": {"containers": [{"name": "app", "imagePullPolicy": "IfNotPresent"}]}});
        let live = json!({"spec": {"containers": [{"name": "sidecar"}, {"name": "app", "imagePullPolicy": "Always"}]}});
        let d = Declared {
            object: desired,
            origins: [("/spec/containers/0/imagePullPolicy".to_string(), origin(10))].into(),
        };
        assert_eq!(
            d.locate(&live, "/spec/containers/1/imagePullPolicy"),
            Some(&origin(10))
        );
        assert_eq!(
            d.locate(&live, "/spec/containers/0/name"),
            None,
            "desired has no sidecar"
        );
        assert_eq!(d.locate(&live, "/spec/replicas"), None);
    }

    #[test]
    fn escaped_tokens_and_scalar_lists() {
        let desired = json!({"metadata": {"labels": {"a/b": "x"}}, "f": ["p", "q"]});
        let d = Declared {
            object: desired.clone(),
            origins: [
                ("/metadata/labels/a~1b".to_string(), origin(3)),
                ("/f/1".to_string(), origin(4)),
            ]
            .into(),
        };
        assert_eq!(
            d.locate(&desired, "/metadata/labels/a~1b"),
            Some(&origin(3))
        );
        assert_eq!(
            d.locate(&json!({"f": ["z", "q"]}), "/f/1"),
            Some(&origin(4))
        );
    }
}
