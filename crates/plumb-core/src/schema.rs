//! Kubernetes schema facts for built-in kinds, generated from a real API server's
//! OpenAPI document plus client-go's scheme (see `tools/schemagen`).
//!
//! "Built-in" means what Argo CD means: the kinds registered in client-go's scheme.
//! Only those get typed canonicalisation, strategic merge semantics and defaults;
//! everything else (CRDs) is compared with JSON merge semantics.

use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::OnceLock;

/// The generated data, embedded at build time.
const DATA: &str = include_str!("../data/k8s-schema.json");

/// What kind of value a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// A string.
    String,
    /// An integer.
    Integer,
    /// A number (a float).
    Number,
    /// A boolean.
    Boolean,
    /// `resource.Quantity`.
    Quantity,
    /// `intstr.IntOrString`.
    Intstr,
    /// `metav1.Time` and other date-times.
    Time,
    /// An object whose type is `ref`.
    Object,
    /// A list of `items`.
    List,
    /// A map (`additionalProperties`) of `values`.
    Map,
    /// Anything (RawExtension, JSON, FieldsV1).
    Any,
}

/// One field of a type.
#[derive(Debug, Clone, Deserialize)]
pub struct FieldDef {
    /// `t`: what kind of value the field holds.
    pub t: FieldType,
    /// `ref`: the OpenAPI name of an object field's type.
    #[serde(default, rename = "ref")]
    pub type_ref: Option<String>,
    /// `type_ref` resolved to its index in the schema's types (set when a schema is loaded,
    /// so walking an object hashes no type names).
    #[serde(skip)]
    pub type_idx: Option<u32>,
    /// `items`: the definition of a list's elements.
    #[serde(default)]
    pub items: Option<Box<FieldDef>>,
    /// `values`: the definition of a map's values.
    #[serde(default)]
    pub values: Option<Box<FieldDef>>,
    /// `x-kubernetes-patch-strategy`: `merge`, `replace`, `retainKeys`, `merge,retainKeys`.
    #[serde(default)]
    pub strategy: Option<String>,
    /// `x-kubernetes-patch-merge-key`.
    #[serde(default, rename = "mergeKey")]
    pub merge_key: Option<String>,
    /// `x-kubernetes-list-type`: `atomic`, `set`, `map`.
    #[serde(default, rename = "listType")]
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    #[serde(default, rename = "mapKeys")]
    pub map_keys: Vec<String>,
    /// Go encodes the field with `omitempty`.
    #[serde(default)]
    pub omitempty: bool,
    /// The Go field is a pointer (so an explicit zero value survives a round trip).
    #[serde(default)]
    pub ptr: bool,
}

impl FieldDef {
    /// Whether strategic merge patch merges this list element-wise (`patchStrategy: merge`).
    pub fn merges(&self) -> bool {
        self.strategy
            .as_deref()
            .is_some_and(|s| s.split(',').any(|p| p == "merge"))
    }

    /// Whether a strategic merge patch of this field clears the keys the patch does not
    /// name (`patchStrategy: retainKeys`; a Deployment's `strategy`, a Pod's `volumes`
    /// items): kubectl's three-way patch sends `$retainKeys` with desired's keys.
    pub fn retains_keys(&self) -> bool {
        self.strategy
            .as_deref()
            .is_some_and(|s| s.split(',').any(|p| p == "retainKeys"))
    }
}

/// A small multiply-rotate hasher (FxHash's scheme) for the schema's field names: short,
/// trusted keys, looked up millions of times; SipHash's DoS resistance buys nothing here.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

const FX_K: u64 = 0x517c_c1b7_2722_0a95;

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(FX_K);
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let word = tail
                .iter()
                .enumerate()
                .fold(0u64, |acc, (i, b)| acc | (u64::from(*b) << (8 * i)));
            h = (h.rotate_left(5) ^ word).wrapping_mul(FX_K);
        }
        self.0 = h;
    }
    fn write_u8(&mut self, b: u8) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(FX_K);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The `BuildHasher` of [`FastHasher`].
pub type FastHash = std::hash::BuildHasherDefault<FastHasher>;

/// An object type.
#[derive(Debug, Clone, Deserialize)]
pub struct TypeDef {
    /// Looked up for every key of every object compared: hashed, not ordered.
    pub fields: HashMap<String, FieldDef, FastHash>,
    /// `required`: the fields the type requires.
    #[serde(default)]
    pub required: Vec<String>,
}

#[derive(Deserialize)]
struct Raw {
    source: String,
    builtin: BTreeMap<String, String>,
    #[serde(rename = "clusterScoped")]
    cluster_scoped: Vec<String>,
    types: HashMap<String, TypeDef>,
}

/// The schema of the built-in kinds.
pub struct Schema {
    source: String,
    /// `group/version/Kind` → type name.
    gvk: HashMap<String, String>,
    /// `group/Kind` → type name of the preferred (last listed, i.e. highest sorting) version.
    gk: HashMap<String, String>,
    cluster_scoped: HashSet<String>,
    /// Type name → index in `type_list`.
    types: HashMap<String, u32, FastHash>,
    type_list: Vec<TypeDef>,
}

/// Sets `type_idx` of a field (and of its item and value definitions).
fn resolve(f: &mut FieldDef, names: &HashMap<String, u32, FastHash>) {
    f.type_idx = f.type_ref.as_deref().and_then(|r| names.get(r).copied());
    if let Some(items) = f.items.as_deref_mut() {
        resolve(items, names);
    }
    if let Some(values) = f.values.as_deref_mut() {
        resolve(values, names);
    }
}

impl Schema {
    /// The embedded schema (parsed once).
    pub fn builtin() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| {
            Schema::from_json(DATA).expect("the embedded schema is generated and valid JSON")
        })
    }

    /// Parses generated schema data.
    pub fn from_json(data: &str) -> Result<Schema, serde_json::Error> {
        let raw: Raw = serde_json::from_str(data)?;
        let mut gk = HashMap::new();
        for (gvk, ty) in &raw.builtin {
            let mut parts = gvk.splitn(3, '/');
            let (Some(group), Some(version), Some(kind)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let key = format!("{group}/{kind}");
            // Prefer GA versions (no alpha/beta) for the version-less lookup.
            let stable = !version.contains("alpha") && !version.contains("beta");
            if stable || !gk.contains_key(&key) {
                gk.insert(key, ty.clone());
            }
        }
        let mut names: HashMap<String, u32, FastHash> = HashMap::default();
        let mut type_list = Vec::with_capacity(raw.types.len());
        for (name, ty) in raw.types {
            names.insert(name, type_list.len() as u32);
            type_list.push(ty);
        }
        for ty in &mut type_list {
            for f in ty.fields.values_mut() {
                resolve(f, &names);
            }
        }
        Ok(Schema {
            source: raw.source,
            gvk: raw.builtin.into_iter().collect(),
            gk,
            cluster_scoped: raw.cluster_scoped.into_iter().collect(),
            types: names,
            type_list,
        })
    }

    /// Where the data came from (OpenAPI title and version).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether `group/kind` is a built-in kind (registered in client-go's scheme).
    pub fn is_builtin(&self, group: &str, kind: &str) -> bool {
        self.gk.contains_key(&format!("{group}/{kind}"))
    }

    /// The root type of a kind at an `apiVersion`; falls back to another served version of
    /// the same group and kind (an `apps/v1beta1` StatefulSet uses the `apps/v1` schema).
    pub fn root(&self, api_version: &str, kind: &str) -> Option<&TypeDef> {
        let group = crate::group_of_api_version(api_version);
        let exact = if group.is_empty() {
            format!("/{api_version}/{kind}")
        } else {
            format!("{api_version}/{kind}")
        };
        let name = self
            .gvk
            .get(&exact)
            .or_else(|| self.gk.get(&format!("{group}/{kind}")))?;
        self.type_def(name)
    }

    /// A type by its OpenAPI name.
    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.types
            .get(name)
            .and_then(|&i| self.type_list.get(i as usize))
    }

    /// The object type a field refers to.
    pub fn field_type(&self, f: &FieldDef) -> Option<&TypeDef> {
        match f.type_idx {
            Some(i) => self.type_list.get(i as usize),
            None => f.type_ref.as_deref().and_then(|r| self.type_def(r)),
        }
    }

    /// The object type of a field's value: its `ref` for an object, the value type for a map.
    pub fn value_type(&self, f: &FieldDef) -> Option<&TypeDef> {
        match f.t {
            FieldType::Object => self.field_type(f),
            FieldType::Map => f.values.as_deref().and_then(|v| self.field_type(v)),
            _ => None,
        }
    }

    /// `Some(true)` for a built-in cluster-scoped kind, `Some(false)` for a built-in namespaced
    /// one, `None` when the kind is not built in (ask discovery or the CRD).
    pub fn is_cluster_scoped(&self, group: &str, kind: &str) -> Option<bool> {
        let key = format!("{group}/{kind}");
        if self.cluster_scoped.contains(&key) {
            Some(true)
        } else if self.gk.contains_key(&key) {
            Some(false)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_merge_keys_and_pointerness() {
        let s = Schema::builtin();
        let pod_spec = s.type_def("io.k8s.api.core.v1.PodSpec").unwrap();
        let containers = &pod_spec.fields["containers"];
        assert!(containers.merges());
        assert_eq!(containers.merge_key.as_deref(), Some("name"));
        let args = &s.type_def("io.k8s.api.core.v1.Container").unwrap().fields["args"];
        assert!(!args.merges());
        let spec = s.type_def("io.k8s.api.apps.v1.DeploymentSpec").unwrap();
        assert!(spec.fields["replicas"].ptr);
        assert!(!spec.fields["paused"].ptr && spec.fields["paused"].omitempty);
        assert_eq!(
            s.type_def("io.k8s.api.core.v1.Container").unwrap().fields["resources"].t,
            FieldType::Object
        );
    }

    #[test]
    fn scope_and_builtin_membership() {
        let s = Schema::builtin();
        assert_eq!(
            s.is_cluster_scoped("rbac.authorization.k8s.io", "ClusterRole"),
            Some(true)
        );
        assert_eq!(s.is_cluster_scoped("", "ConfigMap"), Some(false));
        assert_eq!(s.is_cluster_scoped("bitnami.com", "SealedSecret"), None);
        assert!(s.is_builtin("apps", "Deployment"));
        // Argo CD's built-ins are client-go's scheme: CRDs themselves are not among them.
        assert!(!s.is_builtin("apiextensions.k8s.io", "CustomResourceDefinition"));
        assert!(s.root("apps/v1beta1", "StatefulSet").is_some());
    }
}
