//! The annotated tree: a YAML value in which every scalar carries the place (file, line,
//! column) that set it. plumb's YAML reader (`plumb-render`) builds it, a native kustomize
//! build transforms it, [`crate::object::Object`] holds it until something reads the object
//! as JSON, and the YAML printer (`plumb-diff`) writes it as it is.
//!
//! A mapping is one key-sorted vector ([`Map`]), not a B-tree: a B-tree node costs ~800 bytes
//! however few keys it holds, which made large builds outgrow the caches.

use serde_json::{Number, Value};
use std::fmt;

/// The text of a key or a string scalar: inline up to 24 bytes (a manifest's keys and most of
/// its values), on the heap beyond. A tree of a large build holds hundreds of thousands of
/// them; as `String`s each was an allocation of its own.
pub type Text = compact_str::CompactString;

/// Where a scalar was set: an index into the build's file table, 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Org {
    /// The index of the file in the table of the build (or render) that read it.
    pub file: u32,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1.
    pub col: u32,
}

impl Org {
    /// No known origin (never produced for parsed input).
    pub const NONE: Org = Org {
        file: u32::MAX,
        line: 0,
        col: 0,
    };
}

/// A scalar value.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// `null`, `~` or nothing.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Num(Number),
    /// A string.
    Str(Text),
}

/// A YAML node with origins on its scalars.
#[derive(Clone, Debug)]
pub enum Node {
    /// A scalar and where it was set.
    Scalar(Scalar, Org),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping.
    Map(Map),
}

/// A mapping: its entries sorted by key (as `kubectl kustomize` prints them) in one vector.
/// The mappings of manifests hold a few keys each; a B-tree spends a ~800-byte node on each
/// of them, which made the trees of a large build outgrow the processor's caches. Entries
/// written in key order are appended; others are inserted in place (a move of the later
/// entries: quadratic only for a mapping of thousands of keys written out of order).
#[derive(Clone, Default, PartialEq)]
pub struct Map {
    entries: Vec<(Text, Node)>,
}

/// `(&key, &value)` of an entry.
fn entry_ref((k, v): &(Text, Node)) -> (&Text, &Node) {
    (k, v)
}

/// `(&key, &mut value)` of an entry.
fn entry_mut((k, v): &mut (Text, Node)) -> (&Text, &mut Node) {
    (k, v)
}

impl Map {
    /// An empty mapping.
    pub fn new() -> Map {
        Map::default()
    }

    /// Where `key` is (`Ok`) or would go (`Err`).
    fn find(&self, key: &str) -> Result<usize, usize> {
        match self.entries.last() {
            None => Err(0),
            Some((last, _)) if last.as_str() < key => Err(self.entries.len()),
            _ => self.entries.binary_search_by(|(k, _)| k.as_str().cmp(key)),
        }
    }

    /// Where `key` is, for a lookup: a manifest's mappings mostly hold a handful of keys, and
    /// a scan comparing lengths first touches fewer bytes than a binary search ordering them.
    fn position(&self, key: &str) -> Option<usize> {
        if self.entries.len() <= 8 {
            let key = key.as_bytes();
            self.entries.iter().position(|(k, _)| k.as_bytes() == key)
        } else {
            self.find(key).ok()
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Node> {
        let i = self.position(key)?;
        Some(&self.entries[i].1)
    }

    /// The value of `key`, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        let i = self.position(key)?;
        Some(&mut self.entries[i].1)
    }

    /// Whether `key` is set.
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Sets `key` to `value`; the value it replaces, if any.
    pub fn insert(&mut self, key: impl Into<Text>, value: Node) -> Option<Node> {
        let key = key.into();
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.insert_at(i, (key, value));
                None
            }
        }
    }

    /// Inserts an entry at `i`. A full mapping grows by a quarter (at least one entry), not
    /// to twice its size: a manifest's mappings are read at their exact size, then a
    /// transformer adds a key or two (a label, a namespace), and doubling left most of each
    /// new copy unused, in fresh memory the system must provide. Still geometric: a mapping
    /// built key by key is copied a bounded number of times per key.
    fn insert_at(&mut self, i: usize, entry: (Text, Node)) {
        if self.entries.len() == self.entries.capacity() {
            self.entries.reserve_exact(1 + self.entries.len() / 4);
        }
        self.entries.insert(i, entry);
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Node> {
        let i = self.position(key)?;
        Some(self.entries.remove(i).1)
    }

    /// The value at `key`, inserted by `make` when missing.
    pub fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> Node) -> &mut Node {
        let i = match self.find(key) {
            Ok(i) => i,
            Err(i) => {
                self.insert_at(i, (Text::from(key), make()));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No key.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(key, value)` in key order.
    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = (&Text, &Node)> + ExactSizeIterator + Clone {
        self.entries.iter().map(entry_ref)
    }

    /// `(key, value)` in key order, values to change.
    pub fn iter_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = (&Text, &mut Node)> + ExactSizeIterator {
        self.entries.iter_mut().map(entry_mut)
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Text> + ExactSizeIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values, in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Node> + ExactSizeIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values, in key order, to change.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Node> + ExactSizeIterator {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

/// The value at a key the caller knows is there (panics otherwise, as a `BTreeMap` does).
impl std::ops::Index<&str> for Map {
    type Output = Node;
    fn index(&self, key: &str) -> &Node {
        self.get(key).expect("no entry found for key")
    }
}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl IntoIterator for Map {
    type Item = (Text, Node);
    type IntoIter = std::vec::IntoIter<(Text, Node)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a Text, &'a Node);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Text, Node)>,
        fn(&'a (Text, Node)) -> (&'a Text, &'a Node),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(entry_ref)
    }
}

impl<'a> IntoIterator for &'a mut Map {
    type Item = (&'a Text, &'a mut Node);
    type IntoIter = std::iter::Map<
        std::slice::IterMut<'a, (Text, Node)>,
        fn(&'a mut (Text, Node)) -> (&'a Text, &'a mut Node),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter_mut().map(entry_mut)
    }
}

impl Map {
    /// The mapping of `entries` in any order (sorted here: O(n log n) however they come),
    /// and whether a key came more than once (the last of its values is kept, as a
    /// `BTreeMap` keeps it).
    pub fn from_entries(mut entries: Vec<(Text, Node)>) -> (Map, bool) {
        if entries.windows(2).all(|w| w[0].0 < w[1].0) {
            return (Map { entries }, false);
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        if entries.windows(2).all(|w| w[0].0 != w[1].0) {
            return (Map { entries }, false);
        }
        let before = entries.len();
        // Of equal keys (adjacent, in written order after the stable sort), keep the last.
        entries.reverse();
        entries.dedup_by(|later, earlier| later.0 == earlier.0);
        entries.reverse();
        let dup = entries.len() != before;
        (Map { entries }, dup)
    }
}

/// Later entries win, as in a `BTreeMap`.
impl FromIterator<(Text, Node)> for Map {
    fn from_iter<I: IntoIterator<Item = (Text, Node)>>(iter: I) -> Map {
        Map::from_entries(iter.into_iter().collect()).0
    }
}

/// Sets `key` of `m` to `v`, copying the key only when it is new.
pub fn set(m: &mut Map, key: &str, v: Node) {
    match m.get_mut(key) {
        Some(slot) => *slot = v,
        None => {
            m.insert(key, v);
        }
    }
}

/// Value equality, ignoring origins; numbers compare numerically (`1` == `1.0`).
impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        match (self, other) {
            (Node::Scalar(a, _), Node::Scalar(b, _)) => scalar_eq(a, b),
            (Node::Seq(a), Node::Seq(b)) => a == b,
            (Node::Map(a), Node::Map(b)) => a == b,
            _ => false,
        }
    }
}

fn scalar_eq(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::Num(x), Scalar::Num(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        _ => a == b,
    }
}

impl Node {
    /// A string scalar.
    pub fn str(s: impl Into<Text>, org: Org) -> Node {
        Node::Scalar(Scalar::Str(s.into()), org)
    }

    /// An empty mapping.
    pub fn empty_map() -> Node {
        Node::Map(Map::new())
    }

    /// The string, if this is a string scalar.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Scalar(Scalar::Str(s), _) => Some(s),
            _ => None,
        }
    }

    /// The mapping, if this is one.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The mapping, if this is one, to change.
    pub fn as_map_mut(&mut self) -> Option<&mut Map> {
        match self {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The items, if this is a sequence.
    pub fn as_seq(&self) -> Option<&Vec<Node>> {
        match self {
            Node::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// Whether this is a null scalar.
    pub fn is_null(&self) -> bool {
        matches!(self, Node::Scalar(Scalar::Null, _))
    }

    /// The origin of a scalar.
    pub fn org(&self) -> Option<Org> {
        match self {
            Node::Scalar(_, o) => Some(*o),
            _ => None,
        }
    }

    /// A child of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?.get(key)
    }

    /// The value of `key`, if this is a mapping, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.as_map_mut()?.get_mut(key)
    }

    /// A nested mapping value by path of keys.
    pub fn path(&self, keys: &[&str]) -> Option<&Node> {
        let mut cur = self;
        for k in keys {
            cur = cur.get(k)?;
        }
        Some(cur)
    }

    /// The string at the path of mapping keys `keys`.
    pub fn path_str(&self, keys: &[&str]) -> Option<&str> {
        self.path(keys)?.as_str()
    }

    /// The nested mapping at `keys`, creating missing (or null) levels.
    pub fn map_at(&mut self, keys: &[&str]) -> Option<&mut Map> {
        let mut cur = self;
        for k in keys {
            let child = cur.as_map_mut()?.get_or_insert_with(k, Node::empty_map);
            if child.is_null() {
                *child = Node::empty_map();
            }
            cur = child;
        }
        cur.as_map_mut()
    }

    /// Sets every scalar's origin to `org` (for values copied from elsewhere).
    pub fn set_org(&mut self, org: Org) {
        match self {
            Node::Scalar(_, o) => *o = org,
            Node::Seq(s) => s.iter_mut().for_each(|n| n.set_org(org)),
            Node::Map(m) => m.values_mut().for_each(|n| n.set_org(org)),
        }
    }

    /// The text a scalar would have as a Go string (numbers and booleans as written in JSON).
    pub fn scalar_text(&self) -> Option<String> {
        match self {
            Node::Scalar(Scalar::Str(s), _) => Some(s.to_string()),
            Node::Scalar(Scalar::Num(n), _) => Some(n.to_string()),
            Node::Scalar(Scalar::Bool(b), _) => Some(b.to_string()),
            Node::Scalar(Scalar::Null, _) => Some(String::new()),
            _ => None,
        }
    }

    /// The plain JSON value (origins dropped; integral floats folded to integers).
    pub fn to_json(&self) -> Value {
        match self {
            Node::Scalar(s, _) => scalar_json(s),
            Node::Seq(s) => Value::Array(s.iter().map(Node::to_json).collect()),
            Node::Map(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.to_string(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

impl Node {
    /// The JSON value, consuming the node (keys and strings move, none is copied).
    pub fn into_json(self) -> Value {
        match self {
            Node::Scalar(s, _) => scalar_into_json(s),
            Node::Seq(items) => Value::Array(items.into_iter().map(Node::into_json).collect()),
            Node::Map(m) => Value::Object(
                m.into_iter()
                    .map(|(k, n)| (k.into_string(), n.into_json()))
                    .collect(),
            ),
        }
    }

    /// The JSON value, consuming the node (keys and strings move, none is copied); `leaf`
    /// is called with the RFC 6901 pointer and the origin of every scalar leaf, in order.
    pub fn into_json_with_origins(self, leaf: &mut dyn FnMut(&str, Org)) -> Value {
        let mut path = String::new();
        self.into_walk(&mut path, leaf)
    }

    fn into_walk(self, path: &mut String, leaf: &mut dyn FnMut(&str, Org)) -> Value {
        match self {
            Node::Scalar(s, o) => {
                leaf(path, o);
                scalar_into_json(s)
            }
            Node::Seq(items) => {
                let mut a = Vec::with_capacity(items.len());
                for (i, n) in items.into_iter().enumerate() {
                    let len = path.len();
                    path.push('/');
                    push_index(path, i);
                    a.push(n.into_walk(path, leaf));
                    path.truncate(len);
                }
                Value::Array(a)
            }
            Node::Map(m) => Value::Object(
                m.into_iter()
                    .map(|(k, n)| {
                        let len = path.len();
                        path.push('/');
                        path.push_str(&crate::pointer::escape_token(&k));
                        let v = n.into_walk(path, leaf);
                        path.truncate(len);
                        (k.into_string(), v)
                    })
                    .collect(),
            ),
        }
    }
}

/// Appends the decimal digits of `i` (without the formatting machinery: once per list item
/// of every rendered object).
fn push_index(path: &mut String, mut i: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (i % 10) as u8;
        i /= 10;
        if i == 0 {
            break;
        }
    }
    path.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// [`scalar_json`], consuming the scalar.
fn scalar_into_json(s: Scalar) -> Value {
    match s {
        Scalar::Str(s) => Value::String(s.into_string()),
        s => scalar_json(&s),
    }
}

impl Scalar {
    /// The scalar as JSON, as the build's objects carry it (an integral float as an
    /// integer).
    pub fn to_json(&self) -> Value {
        scalar_json(self)
    }
}

fn scalar_json(s: &Scalar) -> Value {
    match s {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(*b),
        Scalar::Num(n) => {
            if !n.is_i64()
                && !n.is_u64()
                && let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() <= 9_007_199_254_740_992.0
            {
                return Value::Number(Number::from(f as i64));
            }
            Value::Number(n.clone())
        }
        Scalar::Str(s) => Value::String(s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node stays as small as with `String`s: the inline text takes no more room.
    #[test]
    fn node_sizes() {
        assert_eq!(std::mem::size_of::<Text>(), std::mem::size_of::<String>());
        assert!(
            std::mem::size_of::<Node>() <= 40,
            "{}",
            std::mem::size_of::<Node>()
        );
        assert!(std::mem::size_of::<(Text, Node)>() <= 64);
    }

    /// Keys inserted out of order, a few at a time growing the mapping: every key once, in
    /// key order, each with its value; and an inserted key replaces its value.
    #[test]
    fn inserts_keep_the_keys_ordered() {
        let org = Org::NONE;
        let mut m = Map::default();
        for i in (0..1000u32).rev() {
            let key = format!("k{i:04}");
            assert!(
                m.insert(key.as_str(), Node::str(i.to_string(), org))
                    .is_none()
            );
        }
        m.get_or_insert_with("a", || Node::str("first", org));
        assert_eq!(m.len(), 1001);
        let keys: Vec<&str> = m.keys().map(|k| k.as_str()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "ordered");
        assert_eq!(m.get("k0500").and_then(Node::as_str), Some("500"));
        let old = m.insert("k0500", Node::str("new", org));
        assert_eq!(old.as_ref().and_then(Node::as_str), Some("500"));
        assert_eq!(m.get("k0500").and_then(Node::as_str), Some("new"));
        assert_eq!(m.len(), 1001);
    }
}
