//! Resources during a build: the annotated object plus the bookkeeping kustomize keeps in
//! build annotations (previous ids, applied prefixes/suffixes, generator behaviour).
//!
//! `cluster_scoped` is kustomize's own scope table (its Kubernetes 1.21 schema, by group,
//! version and kind), not plumb's newer schema: kustomize decides namespaces by it.

use super::tree::{Map, Node, Org, Scalar, Text};
use std::hash::BuildHasher;

/// Whether kustomize (5.5) takes a type to be cluster-scoped: only the types its built-in
/// API schema (Kubernetes 1.21) knows as such, by group, version and kind. Any other type
/// is namespaced for it, a `Namespace` kind of another group, a newer cluster-scoped kind
/// (`ValidatingAdmissionPolicy`, `flowcontrol/v1` `FlowSchema`) or an alpha version
/// included (checked against `kubectl kustomize`: corpus case 81).
pub fn cluster_scoped(group: &str, version: &str, kind: &str) -> bool {
    let versions: &[&str] = match (group, kind) {
        (
            "",
            "ComponentStatus" | "Namespace" | "Node" | "NodeProxyOptions" | "PersistentVolume",
        ) => &["v1"],
        ("flowcontrol.apiserver.k8s.io", "FlowSchema" | "PriorityLevelConfiguration")
        | ("policy", "PodSecurityPolicy") => &["v1beta1"],
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        )
        | ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("apiregistration.k8s.io", "APIService")
        | ("certificates.k8s.io", "CertificateSigningRequest")
        | ("networking.k8s.io", "IngressClass")
        | ("node.k8s.io", "RuntimeClass")
        | ("rbac.authorization.k8s.io", "ClusterRole" | "ClusterRoleBinding")
        | ("scheduling.k8s.io", "PriorityClass")
        | ("storage.k8s.io", "CSIDriver" | "CSINode" | "StorageClass" | "VolumeAttachment") => {
            &["v1", "v1beta1"]
        }
        _ => return false,
    };
    versions.contains(&version)
}

/// kustomize's id of a resource: group, version, kind, name, namespace.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ResId {
    pub group: Text,
    pub version: Text,
    pub kind: Text,
    pub name: Text,
    pub namespace: Text,
}

impl ResId {
    /// Cluster-scoped for kustomize ([`cluster_scoped`]).
    pub fn is_cluster_scoped(&self) -> bool {
        cluster_scoped(&self.group, &self.version, &self.kind)
    }

    /// `default` for an empty namespace, a marker for cluster-scoped kinds.
    pub fn effective_namespace(&self) -> &str {
        if self.is_cluster_scoped() {
            "_non_namespaceable_"
        } else if self.namespace.is_empty() {
            "default"
        } else {
            &self.namespace
        }
    }

    pub fn ns_equals(&self, o: &ResId) -> bool {
        (self.is_cluster_scoped() && o.is_cluster_scoped())
            || self.effective_namespace() == o.effective_namespace()
    }

    pub fn gvk_equals(&self, o: &ResId) -> bool {
        self.group == o.group && self.version == o.version && self.kind == o.kind
    }

    /// kustomize's `ResId.Equals`.
    pub fn equals(&self, o: &ResId) -> bool {
        self.ns_equals(o) && self.gvk_equals(o) && self.name == o.name
    }

    /// Whether a (group, version, kind) selector with empty wildcards selects this id.
    pub fn gvk_selected(&self, group: &str, version: &str, kind: &str) -> bool {
        self.as_ref().gvk_selected(group, version, kind)
    }

    /// kustomize's `IsSelectedBy` (exact matching, empty fields are wildcards).
    pub fn selected_by(&self, sel: &ResId) -> bool {
        (sel.name.is_empty() || sel.name == self.name)
            && (sel.namespace.is_empty() || sel.ns_equals(self))
            && self.gvk_selected(&sel.group, &sel.version, &sel.kind)
    }

    /// The id's parts, borrowed.
    pub fn as_ref(&self) -> IdRef<'_> {
        IdRef {
            group: &self.group,
            version: &self.version,
            kind: &self.kind,
            name: &self.name,
            namespace: &self.namespace,
        }
    }

    /// `group_version_kind`, with kustomize's `~G`/`~V`/`~K` for empty parts (its
    /// legacy sort orders unknown kinds by this string).
    pub fn gvk_string(&self) -> String {
        self.as_ref().gvk_string()
    }

    /// `group_version_kind|namespace|name`, as kustomize prints ids in messages.
    pub fn display(&self) -> String {
        let or = or_default;
        format!(
            "{}|{}|{}",
            self.gvk_string(),
            or(&self.namespace, "~X"),
            or(&self.name, "~N")
        )
    }
}

/// The hasher of the build's indexes (ids, names, kinds): foldhash, seeded per process, not
/// a fixed-key hash such as FxHash whose collisions a repository could be written to hit.
/// SipHash was a sixteenth of the serial part of a 2,000-resource build.
pub type Hasher = foldhash::fast::RandomState;

/// A hash map of the build's indexes, with [`Hasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, Hasher>;

/// The items (resources, candidates) that have or had a name, by index: (hash of a name,
/// index) pairs in one table, without a copy of any name or a list per name. A lookup
/// yields, in order, every index filed under the name's hash: the caller tells those that
/// have the name from those whose name only shares its hash.
pub struct NameTable {
    table: hashbrown::HashTable<(u64, usize)>,
    state: Hasher,
}

impl NameTable {
    /// An empty table with room for `n` names.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            table: hashbrown::HashTable::with_capacity(n),
            state: Hasher::default(),
        }
    }

    /// Files item `i` under `name` (once, however often it is added).
    pub fn add(&mut self, name: &str, i: usize) {
        let h = self.state.hash_one(name);
        if self.table.find(h, |&(hh, j)| hh == h && j == i).is_none() {
            self.table.insert_unique(h, (h, i), |&(h, _)| h);
        }
    }

    /// The items filed under `name`'s hash, in order.
    pub fn get(&self, name: &str) -> Vec<usize> {
        let h = self.state.hash_one(name);
        let mut v: Vec<usize> = self
            .table
            .iter_hash(h)
            .filter(|&&(hh, _)| hh == h)
            .map(|&(_, i)| i)
            .collect();
        v.sort_unstable();
        v
    }
}

/// The resources of a list by id, to refuse a duplicate (ids equal as [`ResId::equals`]
/// compares them): a table of their indices hashed by [`IdRef::key_parts`], each compared
/// by its parts, so that no key is built for a resource.
pub struct IdIndex {
    /// Each resource's index with its id's hash: growing the table rehashes without
    /// reading the ids again, and an id is compared only with those of its hash.
    table: hashbrown::HashTable<(u64, usize)>,
    state: Hasher,
}

impl IdIndex {
    /// An empty index with room for `n` resources.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            table: hashbrown::HashTable::with_capacity(n),
            state: Hasher::default(),
        }
    }

    /// The hash of `r`'s id.
    fn hash(&self, r: &Res) -> u64 {
        self.state.hash_one(r.cur_id_ref().key_parts())
    }

    /// Adds resource `i` of `ra`, whose id has `hash`. `false` (and not added) when a
    /// resource added before has its id; the indices added must stay valid, with the same
    /// ids, while the index is used.
    fn insert_hashed(&mut self, ra: &[Res], i: usize, hash: u64) -> bool {
        let parts = || ra[i].cur_id_ref().key_parts();
        match self.table.entry(
            hash,
            |&(h, j)| h == hash && ra[j].cur_id_ref().key_parts() == parts(),
            |&(h, _)| h,
        ) {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert((hash, i));
                true
            }
        }
    }

    /// The first resource of `ra[from..]`, in order, whose id an indexed resource or an
    /// earlier one of the range has; those before it are added. The ids are read and
    /// hashed on every core, then added in order.
    pub fn first_duplicate(&mut self, ra: &[Res], from: usize) -> Option<usize> {
        let new = ra.get(from..).unwrap_or_default();
        self.table.reserve(new.len(), |&(h, _)| h);
        let hashes = plumb_core::parallel::map(new, |r| self.hash(r));
        (from..ra.len())
            .zip(hashes)
            .find(|&(i, hash)| !self.insert_hashed(ra, i, hash))
            .map(|(i, _)| i)
    }
}

/// A [`ResId`] borrowed from a resource or an id (no allocation), for hot matching loops.
#[derive(Clone, Copy)]
pub struct IdRef<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
}

impl<'a> IdRef<'a> {
    /// The parts that make two ids equal as [`ResId::equals`] compares them: group, version,
    /// kind, name and the effective namespace (none for cluster-scoped kinds, `default` for
    /// a namespaced one without).
    pub fn key_parts(self) -> [&'a str; 5] {
        let ns = if cluster_scoped(self.group, self.version, self.kind) {
            ""
        } else if self.namespace.is_empty() {
            "default"
        } else {
            self.namespace
        };
        [self.group, self.version, self.kind, self.name, ns]
    }
}

impl IdRef<'_> {
    /// The owned id.
    pub fn to_id(self) -> ResId {
        ResId {
            group: self.group.into(),
            version: self.version.into(),
            kind: self.kind.into(),
            name: self.name.into(),
            namespace: self.namespace.into(),
        }
    }

    /// As [`ResId::gvk_string`].
    pub fn gvk_string(&self) -> String {
        let parts = [
            or_str(self.group, "~G"),
            or_str(self.version, "~V"),
            or_str(self.kind, "~K"),
        ];
        let mut s = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                s.push('_');
            }
            s.push_str(p);
        }
        s
    }

    /// As [`ResId::gvk_selected`].
    pub fn gvk_selected(&self, group: &str, version: &str, kind: &str) -> bool {
        (group.is_empty() || group == self.group)
            && (version.is_empty() || version == self.version)
            && (kind.is_empty() || kind == self.kind)
    }

    /// As [`ResId::effective_namespace`].
    pub fn effective_namespace(&self) -> &str {
        if cluster_scoped(self.group, self.version, self.kind) {
            "_non_namespaceable_"
        } else if self.namespace.is_empty() {
            "default"
        } else {
            self.namespace
        }
    }
}

/// Generator behaviour of a generated resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    Create,
    Merge,
    Replace,
}

/// One resource.
#[derive(Clone, Debug)]
pub struct Res {
    pub node: Node,
    /// File table index and line of the document (or generator entry) that created it.
    pub file: u32,
    pub line: u32,
    /// Earlier ids, oldest first (kustomize's `previousNames` & co.).
    pub prev: Vec<ResId>,
    pub prefixes: Vec<String>,
    pub suffixes: Vec<String>,
    pub behavior: Option<Behavior>,
    pub needs_hash: bool,
    /// The `vars` attached to this object ([`super::vars`]).
    pub ref_vars: Vec<String>,
}

impl Res {
    pub fn new(node: Node, file: u32, line: u32) -> Res {
        Res {
            node,
            file,
            line,
            prev: Vec::new(),
            prefixes: Vec::new(),
            suffixes: Vec::new(),
            behavior: None,
            needs_hash: false,
            ref_vars: Vec::new(),
        }
    }

    pub fn kind(&self) -> &str {
        self.node.path_str(&["kind"]).unwrap_or("")
    }

    pub fn api_version(&self) -> &str {
        self.node.path_str(&["apiVersion"]).unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.node.path_str(&["metadata", "name"]).unwrap_or("")
    }

    /// The current id, borrowed.
    pub fn cur_id_ref(&self) -> IdRef<'_> {
        // As api_version(), kind() and name(), with `metadata` looked up once.
        let root = self.node.as_map();
        let av = field(root, "apiVersion").unwrap_or("");
        let (group, version) = av.rsplit_once('/').unwrap_or(("", av));
        let meta = root.and_then(|m| m.get("metadata")?.as_map());
        IdRef {
            group,
            version,
            kind: field(root, "kind").unwrap_or(""),
            name: field(meta, "name").unwrap_or(""),
            namespace: field(meta, "namespace").unwrap_or(""),
        }
    }

    /// The original id, borrowed: the first previous one, or the current one.
    pub fn org_id_ref(&self) -> IdRef<'_> {
        match self.prev.first() {
            Some(id) => id.as_ref(),
            None => self.cur_id_ref(),
        }
    }

    /// The current id.
    pub fn cur_id(&self) -> ResId {
        self.cur_id_ref().to_id()
    }

    /// Current then previous ids (kustomize's `MakeResIds`).
    pub fn all_ids(&self) -> Vec<ResId> {
        let mut v = vec![self.cur_id()];
        v.extend(self.prev.iter().cloned());
        v
    }

    pub fn store_previous_id(&mut self) {
        let id = self.cur_id();
        push_exact(&mut self.prev, id);
    }

    /// Sets `metadata.name`, keeping `org` as the origin of the new value.
    pub fn set_name(&mut self, name: String, org: Org) {
        if let Some(m) = self.node.map_at(&["metadata"]) {
            super::tree::set(m, "name", Node::str(name, org));
        }
    }

    /// Records `affix` as a prefix (or a suffix) applied to the name.
    pub fn push_affix(&mut self, affix: &str, is_prefix: bool) {
        let list = if is_prefix {
            &mut self.prefixes
        } else {
            &mut self.suffixes
        };
        push_exact(list, affix.to_string());
    }

    pub fn metadata_map(&self, field: &str) -> Option<&Map> {
        self.node.path(&["metadata", field])?.as_map()
    }

    /// A string-valued label or annotation map as pairs.
    pub fn string_map(&self, field: &str) -> Vec<(String, String)> {
        self.metadata_map(field)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.to_string(), v.scalar_text().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the object has no content (kustomize drops such resources).
    pub fn is_empty(&self) -> bool {
        match &self.node {
            Node::Map(m) => m.is_empty(),
            Node::Scalar(Scalar::Null, _) => true,
            _ => false,
        }
    }
}

/// Whether kustomize's namespace transformer treats a kind as cluster-scoped: the schema
/// for built-in kinds, kustomize's kind list otherwise (custom resources are namespaced).
fn or_default(s: &str, d: &str) -> String {
    if s.is_empty() {
        d.to_string()
    } else {
        s.to_string()
    }
}

/// The string at `k` of a mapping.
fn field<'a>(m: Option<&'a Map>, k: &str) -> Option<&'a str> {
    m?.get(k)?.as_str()
}

/// `s`, or `d` when `s` is empty.
pub fn or_str<'a>(s: &'a str, d: &'static str) -> &'a str {
    if s.is_empty() { d } else { s }
}

/// Pushes onto one of a resource's short lists (its earlier ids, its affixes) growing it by
/// one place, not to the four a `Vec` takes at its first push: every resource of a build
/// gets one or two entries, and four ids are 480 bytes of fresh memory per resource.
fn push_exact<T>(list: &mut Vec<T>, value: T) {
    list.reserve_exact(1);
    list.push(value);
}

#[cfg(test)]
mod tests {
    use super::super::tree::{Dialect, parse_stream};
    use super::*;

    fn resources(yaml: &str) -> Vec<Res> {
        parse_stream(yaml, 0, 0, 0, Dialect::Resource)
            .unwrap()
            .into_iter()
            .map(|d| Res::new(d.node, 0, d.line))
            .collect()
    }

    /// Ids equal as kustomize compares them: no namespace is `default` for a namespaced
    /// kind and nothing for a cluster-scoped one; kind and group tell ids apart.
    #[test]
    fn the_first_duplicate_id_in_order() {
        let ra = resources(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {name: a}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: other}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: x}\n",
        );
        let mut index = IdIndex::with_capacity(0);
        assert_eq!(index.first_duplicate(&ra[..4], 0), None);
        // `namespace: default` is the first ConfigMap's id; then the ClusterRole's.
        assert_eq!(index.first_duplicate(&ra, 4), Some(4));
        let mut index = IdIndex::with_capacity(6);
        assert_eq!(index.first_duplicate(&ra[..4], 0), None);
        assert_eq!(
            index.first_duplicate(&ra, 5),
            Some(5),
            "a cluster-scoped kind's namespace is not its id"
        );
    }

    #[test]
    fn a_name_table_files_each_item_once_and_answers_in_order() {
        let mut t = NameTable::with_capacity(0);
        for (name, i) in [("a", 3), ("b", 1), ("a", 1), ("a", 3), ("a", 0)] {
            t.add(name, i);
        }
        assert_eq!(t.get("a"), vec![0, 1, 3]);
        assert_eq!(t.get("b"), vec![1]);
        assert!(t.get("c").is_empty());
    }

    /// Enough resources that their ids are hashed on every core: the same answers, in order.
    #[test]
    fn the_first_duplicate_of_many() {
        let doc = |i: usize| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n");
        let mut text: Vec<String> = (0..300).map(doc).collect();
        text.push(doc(250));
        text.push(doc(7));
        let ra = resources(&text.join("---\n"));
        let mut index = IdIndex::with_capacity(0);
        assert_eq!(index.first_duplicate(&ra[..300], 0), None);
        assert_eq!(index.first_duplicate(&ra, 300), Some(300));
        let mut index = IdIndex::with_capacity(0);
        assert_eq!(index.first_duplicate(&ra[..200], 0), None);
        // c250 is new to the index at first, then seen again: the first repeat in order.
        assert_eq!(index.first_duplicate(&ra, 200), Some(300));
        let mut index = IdIndex::with_capacity(0);
        assert_eq!(index.first_duplicate(&ra[..301], 0), Some(300));
    }
}
