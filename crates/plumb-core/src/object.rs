//! A rendered object: JSON and the origin of each of its scalars.
//!
//! Objects from plumb's own YAML reader (a native kustomize build, a directory source's
//! YAML files) come as the reader's tree ([`crate::tree`]), each scalar with its origin beside it. An
//! [`Object`] keeps that tree and converts it to JSON and [`Origins`] the first time
//! something reads it (dereferencing, [`Object::origins`]), on the reading thread, once.
//! What only prints an object (`plumb render`) walks the tree as it is ([`Object::view`])
//! and never builds the JSON, the pointers or the B-tree nodes of its mappings: at 2,000
//! resources that conversion was a third of the command's time and most of its memory.
//! Objects from anywhere else (Helm, plugins, Jsonnet, the kustomize binary) are JSON
//! from the start.

use crate::origin::Origins;
use crate::tree;
use serde_json::Value;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// A rendered object; dereferences to its JSON (converting a tree on first use).
pub struct Object {
    json: OnceLock<Json>,
    /// The tree until it is converted (then `None`, its strings moved into the JSON).
    tree: Mutex<Option<Tree>>,
}

struct Json {
    value: Value,
    origins: Origins,
}

#[derive(Clone)]
struct Tree {
    node: tree::Node,
    files: Arc<Vec<Arc<str>>>,
}

impl Tree {
    fn into_json(self) -> Json {
        let mut origins = Origins::with_files(self.files);
        let value = self.node.into_json_with_origins(&mut |p, o| {
            if o.file != u32::MAX {
                origins.push(p, o.file, o.line, o.col);
            }
        });
        Json {
            value,
            origins: origins.finish(),
        }
    }
}

/// An object as it is held, for what walks it without converting it.
pub enum View<'a> {
    /// JSON, and the origins of its scalars.
    Json(&'a Value, &'a Origins),
    /// The reader's tree, and the files its origins index.
    Tree(&'a tree::Node, &'a [Arc<str>]),
}

impl Object {
    /// An object whose scalars have these origins.
    pub fn with_origins(value: Value, origins: Origins) -> Object {
        Object {
            json: OnceLock::from(Json { value, origins }),
            tree: Mutex::new(None),
        }
    }

    /// A reader's tree, converted when first read.
    pub fn from_tree(node: tree::Node, files: Arc<Vec<Arc<str>>>) -> Object {
        Object {
            json: OnceLock::new(),
            tree: Mutex::new(Some(Tree { node, files })),
        }
    }

    fn json(&self) -> &Json {
        self.json.get_or_init(|| {
            // Exactly one of the two is set: the tree is taken only here, once.
            let tree = self.lock().take();
            tree.map_or_else(
                || Json {
                    value: Value::Null,
                    origins: Origins::new(),
                },
                Tree::into_json,
            )
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Tree>> {
        self.tree.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// JSON pointer of each scalar → where its value was set (empty when the renderer
    /// cannot tell).
    pub fn origins(&self) -> &Origins {
        &self.json().origins
    }

    /// The JSON and the origins, owned.
    pub fn into_parts(mut self) -> (Value, Origins) {
        self.json();
        let json = self.json.take().expect("converted just above");
        (json.value, json.origins)
    }

    /// The JSON, owned (a tree converted without its origins).
    pub fn into_value(mut self) -> Value {
        match self.json.take() {
            Some(json) => json.value,
            None => {
                let tree = self
                    .tree
                    .into_inner()
                    .unwrap_or_else(PoisonError::into_inner);
                tree.map_or(Value::Null, |t| t.node.into_json())
            }
        }
    }

    /// Converts now (e.g. on a worker thread, before a caller reads every object).
    pub fn convert(&self) {
        self.json();
    }

    /// Calls `f` with the object as it is held now: its tree while unconverted (`f` must not
    /// read this object itself: the tree is held for it meanwhile).
    pub fn view<R>(&self, f: impl FnOnce(View<'_>) -> R) -> R {
        if let Some(json) = self.json.get() {
            return f(View::Json(&json.value, &json.origins));
        }
        let guard = self.lock();
        match guard.as_ref() {
            Some(t) => f(View::Tree(&t.node, &t.files)),
            None => {
                drop(guard);
                let json = self.json();
                f(View::Json(&json.value, &json.origins))
            }
        }
    }

    /// The string at the top-level `key` (`kind`, `apiVersion`), without converting.
    pub fn top_level_str(&self, key: &str) -> Option<String> {
        self.view(|v| match v {
            View::Json(value, _) => value.get(key)?.as_str().map(str::to_owned),
            View::Tree(node, _) => node.get(key)?.as_str().map(str::to_owned),
        })
    }
}

impl std::ops::Deref for Object {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.json().value
    }
}

impl std::ops::DerefMut for Object {
    fn deref_mut(&mut self) -> &mut Value {
        self.json();
        &mut self.json.get_mut().expect("converted just above").value
    }
}

impl From<Value> for Object {
    fn from(value: Value) -> Object {
        Object::with_origins(value, Origins::new())
    }
}

impl Clone for Object {
    fn clone(&self) -> Object {
        if let Some(json) = self.json.get() {
            return Object::with_origins(json.value.clone(), json.origins.clone());
        }
        let tree = self.lock().clone();
        match tree {
            Some(t) => Object {
                json: OnceLock::new(),
                tree: Mutex::new(Some(t)),
            },
            // Converted meanwhile by another thread.
            None => {
                let json = self.json();
                Object::with_origins(json.value.clone(), json.origins.clone())
            }
        }
    }
}

impl PartialEq for Object {
    fn eq(&self, other: &Object) -> bool {
        **self == **other && self.origins() == other.origins()
    }
}

impl PartialEq<Value> for Object {
    fn eq(&self, other: &Value) -> bool {
        **self == *other
    }
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Node, Org, Scalar};

    fn tree() -> Object {
        let org = Org {
            file: 0,
            line: 3,
            col: 7,
        };
        let mut m = tree::Map::default();
        m.insert("kind", Node::Scalar(Scalar::Str("Secret".into()), org));
        Object::from_tree(Node::Map(m), Arc::new(vec![Arc::from("a.yaml")]))
    }

    #[test]
    fn a_tree_converts_once_when_read_and_views_without_converting() {
        let o = tree();
        assert_eq!(o.top_level_str("kind").as_deref(), Some("Secret"));
        assert!(o.view(|v| matches!(v, View::Tree(..))), "still a tree");
        let copy = o.clone();
        assert_eq!(*o, serde_json::json!({"kind": "Secret"}));
        assert!(o.view(|v| matches!(v, View::Json(..))), "converted");
        let origin = o.origins().get("/kind").expect("origin");
        assert_eq!(
            (&*origin.file, origin.line, origin.column),
            ("a.yaml", 3, 7)
        );
        assert!(
            copy.view(|v| matches!(v, View::Tree(..))),
            "a clone is its own"
        );
        assert_eq!(copy, o);
        let (value, origins) = copy.into_parts();
        assert_eq!(value["kind"], "Secret");
        assert_eq!(origins.len(), 1);
    }

    #[test]
    fn json_from_the_start() {
        let mut o = Object::from(serde_json::json!({"a": 1}));
        o["a"] = 2.into();
        assert!(o.origins().is_empty());
        assert_eq!(o.into_value(), serde_json::json!({"a": 2}));
    }
}
