//! Source locations: for every scalar of a rendered object, the file, line and column
//! in git that set its value. This is what lets plumb say *which line* of which file
//! declares a field that something in the cluster keeps rewriting.
//!
//! An [`Origin`] is file, line and column. [`Declared::locate`] translates a pointer into a
//! live object into the pointer desired declares, matching list elements by identity rather
//! than index ([`ELEMENT_KEYS`], which the doctor's "identity field" test uses too).

use serde_json::Value;
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
///
/// Kept compact, since a render records one for every scalar of every object: all the
/// pointers of an object in one string, a sorted table of fixed-size entries (offsets into
/// it, a file index, line, column), and the file names in one table that every object of a
/// render shares. A map of owned strings to [`Origin`]s cost an allocation and a reference
/// count per scalar, and as much time as the rest of a kustomize build.
#[derive(Clone, Default)]
pub struct Origins {
    files: Arc<Vec<Arc<str>>>,
    text: String,
    /// Sorted by pointer.
    entries: Vec<Entry>,
}

#[derive(Clone, Copy)]
struct Entry {
    start: u32,
    end: u32,
    file: u32,
    line: u32,
    column: u32,
}

impl Entry {
    /// The entry's pointer in `text` (its object's pointers).
    fn pointer(self, text: &str) -> &str {
        &text[self.start as usize..self.end as usize]
    }
}

impl Origins {
    /// No origins.
    pub fn new() -> Origins {
        Origins::default()
    }

    /// Origins whose files are `files` (shared by the objects of one render), entries
    /// pushed with [`Origins::push`] in any order and sorted by [`Origins::finish`].
    pub fn with_files(files: Arc<Vec<Arc<str>>>) -> Origins {
        Origins {
            files,
            ..Origins::default()
        }
    }

    /// Appends the origin of `pointer`: `file` an index into the files. Lookups need
    /// [`Origins::finish`] first.
    pub fn push(&mut self, pointer: &str, file: u32, line: u32, column: u32) {
        let e = self.entry(pointer, file, line, column);
        self.entries.push(e);
    }

    /// An entry for `pointer`, its text appended (the entry not placed yet).
    fn entry(&mut self, pointer: &str, file: u32, line: u32, column: u32) -> Entry {
        let start = self.text.len() as u32;
        self.text.push_str(pointer);
        Entry {
            start,
            end: self.text.len() as u32,
            file,
            line,
            column,
        }
    }

    /// Sorts the pushed entries (a build pushes them nearly in order: only list indexes
    /// of ten and more are out of it).
    pub fn finish(mut self) -> Origins {
        let text = &self.text;
        if !self
            .entries
            .is_sorted_by(|a, b| a.pointer(text) <= b.pointer(text))
        {
            self.entries
                .sort_by(|a, b| a.pointer(text).cmp(b.pointer(text)));
        }
        self
    }

    fn origin(&self, e: &Entry) -> Origin {
        Origin {
            file: self.files[e.file as usize].clone(),
            line: e.line,
            column: e.column,
        }
    }

    fn find(&self, pointer: &str) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|e| e.pointer(&self.text).cmp(pointer))
    }

    /// Where the scalar at `pointer` was set.
    pub fn get(&self, pointer: &str) -> Option<Origin> {
        let i = self.find(pointer).ok()?;
        Some(self.origin(&self.entries[i]))
    }

    /// Records (or replaces) the origin of `pointer`.
    pub fn insert(&mut self, pointer: &str, origin: Origin) {
        let file = match self.files.iter().position(|f| *f == origin.file) {
            Some(i) => i,
            None => {
                let files = Arc::make_mut(&mut self.files);
                files.push(origin.file);
                files.len() - 1
            }
        } as u32;
        match self.find(pointer) {
            Ok(i) => {
                let e = &mut self.entries[i];
                (e.file, e.line, e.column) = (file, origin.line, origin.column);
            }
            Err(i) => {
                let e = self.entry(pointer, file, origin.line, origin.column);
                self.entries.insert(i, e);
            }
        }
    }

    /// Pointer and origin of every scalar, by pointer.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Origin)> + '_ {
        self.entries
            .iter()
            .map(|e| (e.pointer(&self.text), self.origin(e)))
    }

    /// How many scalars have an origin.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No scalar has an origin (the renderer cannot tell).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl PartialEq for Origins {
    fn eq(&self, other: &Origins) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for Origins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<S: AsRef<str>> FromIterator<(S, Origin)> for Origins {
    fn from_iter<I: IntoIterator<Item = (S, Origin)>>(iter: I) -> Origins {
        let mut out = Origins::new();
        for (pointer, origin) in iter {
            out.insert(pointer.as_ref(), origin);
        }
        out
    }
}

impl<S: AsRef<str>, const N: usize> From<[(S, Origin); N]> for Origins {
    fn from(entries: [(S, Origin); N]) -> Origins {
        entries.into_iter().collect()
    }
}

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
    pub fn locate(&self, other: &Value, pointer: &str) -> Option<Origin> {
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
    fn origins_are_found_by_pointer_whatever_order_they_came_in() {
        // Pushed as a build walks a list of eleven (index 10 comes after 9, before "2" in
        // byte order), then sorted.
        let files = Arc::new(vec![Arc::<str>::from("a.yaml"), Arc::from("b.yaml")]);
        let mut built = Origins::with_files(files);
        for i in 0..11u32 {
            built.push(&format!("/l/{i}"), i % 2, i + 1, 1);
        }
        let built = built.finish();
        assert_eq!(built.len(), 11);
        let ten = built.get("/l/10").expect("/l/10");
        assert_eq!((&*ten.file, ten.line), ("a.yaml", 11));
        assert_eq!(built.get("/l/2").map(|o| o.line), Some(3));
        assert_eq!(built.get("/l/11"), None);
        // Inserted out of order, one replaced.
        let mut o = Origins::new();
        o.insert("/b", origin(2));
        o.insert("/a", origin(1));
        o.insert("/b", origin(3));
        let got: Vec<(String, u32)> = o.iter().map(|(p, o)| (p.to_string(), o.line)).collect();
        assert_eq!(got, [("/a".to_string(), 1), ("/b".to_string(), 3)]);
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
            Some(origin(10))
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
        assert_eq!(d.locate(&desired, "/metadata/labels/a~1b"), Some(origin(3)));
        assert_eq!(d.locate(&json!({"f": ["z", "q"]}), "/f/1"), Some(origin(4)));
    }
}
