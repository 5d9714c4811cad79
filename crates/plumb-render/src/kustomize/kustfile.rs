//! Reading a kustomization file: the fields kustomize 5.5 knows, which of them the native
//! renderer implements, and typed access to entries with their origins.
//!
//! `normalise` reads a kustomization as kustomize's Go JSON decoding does: field names
//! matched ignoring case at every depth, by struct shapes; repeated keys last-wins; spellings
//! of one field merged in sorted order; unknown fields refused.

use super::tree::{Map, Node, Org, raw_scalar_in_line};

/// File names kustomize looks for in a directory, in its order.
pub const FILE_NAMES: &[&str] = &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Fields kustomize accepts but the native renderer does not implement: their presence
/// (non-empty) makes the build fall back to the kustomize binary.
pub const UNSUPPORTED: &[&str] = &[
    "helmChartInflationGenerator",
    "helmChartRepos",
    "transformers",
    "generators",
    "validators",
    "buildMetadata",
];

/// Fields the native renderer implements.
pub const SUPPORTED: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "resources",
    "bases",
    "components",
    "namespace",
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "images",
    "replicas",
    "replacements",
    "configMapGenerator",
    "secretGenerator",
    "generatorOptions",
    "sortOptions",
    "imageTags",
    "configurations",
    "vars",
    "helmCharts",
    "helmGlobals",
    "crds",
    "openapi",
];

/// The field of kustomize's Kustomization type a key of a kustomization file sets: Go's
/// JSON decoding matches field names exactly, else ignoring case.
fn field_of(key: &str) -> Option<&'static str> {
    let all = || SUPPORTED.iter().chain(UNSUPPORTED);
    all()
        .find(|f| **f == key)
        .or_else(|| all().find(|f| f.eq_ignore_ascii_case(key)))
        .copied()
}

/// The shape of a kustomization value, for matching field names as Go's JSON decoding
/// does: a struct's fields (each with its own shape), a list of one shape, or anything
/// else (strings, numbers, Go maps such as labels, whose keys are data).
enum Shape {
    Leaf,
    Struct(&'static [(&'static str, Shape)]),
    List(&'static Shape),
}

use Shape::{Leaf, List, Struct};

const FIELD_SPEC: Shape = Struct(&[
    ("group", Leaf),
    ("version", Leaf),
    ("kind", Leaf),
    ("path", Leaf),
    ("create", Leaf),
]);
const SELECTOR: Shape = Struct(&[
    ("group", Leaf),
    ("version", Leaf),
    ("kind", Leaf),
    ("name", Leaf),
    ("namespace", Leaf),
    ("annotationSelector", Leaf),
    ("labelSelector", Leaf),
]);
const PATCH: Shape = Struct(&[
    ("path", Leaf),
    ("patch", Leaf),
    ("target", SELECTOR),
    ("options", Leaf),
]);
const FIELD_OPTIONS: Shape = Struct(&[
    ("delimiter", Leaf),
    ("index", Leaf),
    ("encoding", Leaf),
    ("create", Leaf),
]);
const GENERATOR_OPTIONS: Shape = Struct(&[
    ("labels", Leaf),
    ("annotations", Leaf),
    ("disableNameSuffixHash", Leaf),
    ("immutable", Leaf),
]);
/// A `secretGenerator` entry's fields: a `configMapGenerator` entry's (the first eight), then
/// `type`.
const SECRET_ARGS_FIELDS: &[(&str, Shape)] = &[
    ("namespace", Leaf),
    ("name", Leaf),
    ("behavior", Leaf),
    ("literals", Leaf),
    ("files", Leaf),
    ("envs", Leaf),
    ("env", Leaf),
    ("options", GENERATOR_OPTIONS),
    ("type", Leaf),
];
const CONFIG_MAP_ARGS: Shape = Struct(SECRET_ARGS_FIELDS.split_at(8).0);
const SECRET_ARGS: Shape = Struct(SECRET_ARGS_FIELDS);
const IMAGE: Shape = Struct(&[
    ("name", Leaf),
    ("newName", Leaf),
    ("tagSuffix", Leaf),
    ("newTag", Leaf),
    ("digest", Leaf),
]);
const REPLACEMENT: Shape = Struct(&[
    ("path", Leaf),
    (
        "source",
        Struct(&[
            ("group", Leaf),
            ("version", Leaf),
            ("kind", Leaf),
            ("name", Leaf),
            ("namespace", Leaf),
            ("fieldPath", Leaf),
            ("options", FIELD_OPTIONS),
        ]),
    ),
    (
        "targets",
        List(&Struct(&[
            ("select", SELECTOR),
            ("reject", List(&SELECTOR)),
            ("fieldPaths", Leaf),
            ("options", FIELD_OPTIONS),
        ])),
    ),
]);

/// A `vars` entry: kustomize's `Var` (objref: its `Target`; fieldref: its `FieldSelector`).
const VAR: Shape = Struct(&[
    ("name", Leaf),
    (
        "objref",
        Struct(&[
            ("group", Leaf),
            ("version", Leaf),
            ("kind", Leaf),
            ("apiVersion", Leaf),
            ("name", Leaf),
            ("namespace", Leaf),
        ]),
    ),
    ("fieldref", Struct(&[("fieldPath", Leaf)])),
]);

/// The shapes of the implemented fields whose values are structs or lists of structs.
fn shape_of(field: &str) -> &'static Shape {
    const VARS: Shape = List(&VAR);
    const PATCHES: Shape = List(&PATCH);
    const IMAGES: Shape = List(&IMAGE);
    const CONFIG_MAPS: Shape = List(&CONFIG_MAP_ARGS);
    const SECRETS: Shape = List(&SECRET_ARGS);
    const LABELS: Shape = List(&Struct(&[
        ("pairs", Leaf),
        ("includeSelectors", Leaf),
        ("includeTemplates", Leaf),
        ("fields", List(&FIELD_SPEC)),
    ]));
    const REPLICAS: Shape = List(&Struct(&[("name", Leaf), ("count", Leaf)]));
    const REPLACEMENTS: Shape = List(&REPLACEMENT);
    const METADATA: Shape = Struct(&[
        ("name", Leaf),
        ("namespace", Leaf),
        ("labels", Leaf),
        ("annotations", Leaf),
    ]);
    const SORT_OPTIONS: Shape = Struct(&[
        ("order", Leaf),
        (
            "legacySortOptions",
            Struct(&[("orderFirst", Leaf), ("orderLast", Leaf)]),
        ),
    ]);
    const HELM_CHARTS: Shape = List(&Struct(&[
        ("name", Leaf),
        ("version", Leaf),
        ("repo", Leaf),
        ("releaseName", Leaf),
        ("namespace", Leaf),
        ("additionalValuesFiles", Leaf),
        ("valuesFile", Leaf),
        ("valuesInline", Leaf),
        ("valuesMerge", Leaf),
        ("includeCRDs", Leaf),
        ("skipHooks", Leaf),
        ("apiVersions", Leaf),
        ("kubeVersion", Leaf),
        ("nameTemplate", Leaf),
        ("skipTests", Leaf),
        ("debug", Leaf),
        ("devel", Leaf),
    ]));
    const HELM_GLOBALS: Shape = Struct(&[("chartHome", Leaf), ("configHome", Leaf)]);
    match field {
        "patches" | "patchesJson6902" => &PATCHES,
        "images" | "imageTags" => &IMAGES,
        "configMapGenerator" => &CONFIG_MAPS,
        "secretGenerator" => &SECRETS,
        "labels" => &LABELS,
        "replicas" => &REPLICAS,
        "replacements" => &REPLACEMENTS,
        "vars" => &VARS,
        "metadata" => &METADATA,
        "generatorOptions" => &GENERATOR_OPTIONS,
        "sortOptions" => &SORT_OPTIONS,
        "helmCharts" => &HELM_CHARTS,
        "helmGlobals" => &HELM_GLOBALS,
        _ => &Leaf,
    }
}

/// `node` with the field names of its structs matched as Go's JSON decoding matches them
/// (exactly, else ignoring case; spellings of one field decoded in sorted order). A key
/// that names no field of its struct is `Err`, with its origin, as kustomize refuses it.
/// (The struct shapes were recorded from `kubectl kustomize`, field by field.)
fn fold_fields(node: Node, shape: &Shape) -> Result<Node, (String, Option<Org>)> {
    Ok(match (node, shape) {
        (Node::Map(m), Struct(fields)) => {
            let mut out = Map::new();
            for (key, v) in m {
                let found = fields
                    .iter()
                    .find(|(f, _)| *f == key)
                    .or_else(|| fields.iter().find(|(f, _)| f.eq_ignore_ascii_case(&key)));
                let Some((field, sub)) = found else {
                    return Err((key.into_string(), v.org()));
                };
                let v = fold_fields(v, sub)?;
                let merged = match out.remove(field) {
                    Some(old) => decode_into(old, v),
                    None => v,
                };
                out.insert(field.to_string(), merged);
            }
            Node::Map(out)
        }
        (Node::Seq(items), List(sub)) => Node::Seq(
            items
                .into_iter()
                .map(|i| fold_fields(i, sub))
                .collect::<Result<_, _>>()?,
        ),
        (node, _) => node,
    })
}

/// A kustomization's top-level mapping as kustomize reads it (its YAML converted to JSON,
/// then decoded into its Go type): keys spelled in another case name their field, keys
/// of one field are applied in sorted order (`namePrefix` before `nameprefix`), each
/// decoded into what the earlier ones left ([`decode_into`]), and so are the fields of the
/// entries plumb reads ([`fold_fields`]); `imageTags` is appended to `images` (its
/// FixKustomization). `Err` names a key that is no field, with its origin.
pub fn normalise(root: Map) -> Result<Map, (String, Option<Org>)> {
    let mut out = Map::new();
    // `Map` iterates keys in byte order, as Go's JSON encoder writes them.
    for (key, v) in root {
        let Some(field) = field_of(&key) else {
            return Err((key.into_string(), v.org()));
        };
        let v = fold_fields(v, shape_of(field))?;
        let merged = match out.remove(field) {
            Some(old) => decode_into(old, v),
            None => v,
        };
        out.insert(field.to_string(), merged);
    }
    if let Some(Node::Seq(tags)) = out.remove("imageTags") {
        match out.get_mut("images") {
            Some(Node::Seq(images)) => images.extend(tags),
            _ => {
                out.insert("images", Node::Seq(tags));
            }
        }
    }
    Ok(out)
}

/// `new` decoded into `old` as Go's JSON decoding does it: mappings (Go maps and structs)
/// keep the keys `new` does not set, lists are decoded element by element into the
/// existing elements and cut to the new length, a null leaves a scalar (a Go string) as
/// it was and clears a mapping or list; anything else replaces.
fn decode_into(old: Node, new: Node) -> Node {
    match (old, new) {
        (Node::Map(mut o), Node::Map(n)) => {
            for (k, v) in n {
                let merged = match o.remove(&k) {
                    Some(ov) => decode_into(ov, v),
                    None => v,
                };
                o.insert(k, merged);
            }
            Node::Map(o)
        }
        (Node::Seq(mut o), Node::Seq(n)) => {
            o.truncate(n.len());
            let mut old = o.into_iter();
            Node::Seq(
                n.into_iter()
                    .map(|v| match old.next() {
                        Some(ov) => decode_into(ov, v),
                        None => v,
                    })
                    .collect(),
            )
        }
        (old @ Node::Scalar(..), new) if new.is_null() => old,
        (_, new) => new,
    }
}

/// A parsed kustomization.
pub struct Kust {
    /// Repository-relative path of the file and its directory.
    pub path: String,
    pub dir: String,
    /// `dir` with every symlink followed: files it names must really be in or below it.
    pub real_dir: String,
    pub file: u32,
    pub src: String,
    pub root: Map,
    pub is_component: bool,
    /// Byte offset of the start of every line of `src` (an index, so that reading the
    /// text at an origin costs the same for the first entry and the ten-thousandth).
    pub line_starts: Vec<usize>,
}

/// A string with where it was written.
#[derive(Clone, Debug)]
pub struct Spanned {
    pub value: String,
    pub org: Org,
}

/// The byte offsets at which the lines of `src` start, as `str::lines` splits them.
pub fn line_starts(src: &str) -> Vec<usize> {
    let mut v = vec![0];
    super::tree::newlines(src.as_bytes(), |i| {
        if i + 1 < src.len() {
            v.push(i + 1);
        }
    });
    v
}

impl Kust {
    /// Line `n` (1-based) of the source, as `str::lines` yields it.
    pub fn line(&self, n: u32) -> Option<&str> {
        let i = (n as usize).checked_sub(1)?;
        if self.src.is_empty() {
            return None;
        }
        let start = *self.line_starts.get(i)?;
        let end = self
            .line_starts
            .get(i + 1)
            .copied()
            .unwrap_or(self.src.len());
        let l = &self.src[start..end];
        Some(match l.strip_suffix('\n') {
            Some(l) => l.strip_suffix('\r').unwrap_or(l),
            None => l,
        })
    }

    pub fn get(&self, field: &str) -> Option<&Node> {
        self.root.get(field).filter(|n| !n.is_null())
    }

    /// A scalar read as Go reads it into a string field: numbers keep their spelling.
    pub fn text(&self, n: &Node) -> Option<String> {
        match n {
            Node::Scalar(super::tree::Scalar::Str(s), _) => Some(s.to_string()),
            Node::Scalar(_, o) => self
                .line(o.line)
                .and_then(|l| raw_scalar_in_line(l, o.col))
                .or_else(|| n.scalar_text()),
            _ => None,
        }
    }

    pub fn spanned(&self, n: &Node) -> Option<Spanned> {
        Some(Spanned {
            value: self.text(n)?,
            org: n.org()?,
        })
    }

    /// A top-level string field (a Go string: a number or boolean is refused).
    pub fn string(&self, field: &str) -> Result<Option<Spanned>, String> {
        match self.get(field) {
            None => Ok(None),
            Some(Node::Scalar(super::tree::Scalar::Num(_), _)) => Err(format!(
                "json: cannot unmarshal number into Go struct field Kustomization.{field} of type string"
            )),
            Some(Node::Scalar(super::tree::Scalar::Bool(_), _)) => Err(format!(
                "json: cannot unmarshal bool into Go struct field Kustomization.{field} of type string"
            )),
            Some(n) => self
                .spanned(n)
                .map(Some)
                .ok_or_else(|| format!("field {field} must be a string")),
        }
    }

    /// A list of strings.
    pub fn strings(&self, field: &str) -> Result<Vec<Spanned>, String> {
        strings_of(self, self.get(field), field)
    }

    /// A map of strings (labels, annotations).
    pub fn string_map(&self, field: &str) -> Result<Vec<(String, Spanned)>, String> {
        string_map_of(self, self.get(field), field)
    }

    /// A list of mappings.
    pub fn maps(&self, field: &str) -> Result<Vec<&Map>, String> {
        match self.get(field) {
            None => Ok(Vec::new()),
            Some(Node::Seq(items)) => items
                .iter()
                .map(|i| {
                    i.as_map()
                        .ok_or_else(|| format!("entries of {field} must be mappings"))
                })
                .collect(),
            Some(_) => Err(format!("field {field} must be a list")),
        }
    }
}

pub fn strings_of(k: &Kust, n: Option<&Node>, field: &str) -> Result<Vec<Spanned>, String> {
    match n {
        None => Ok(Vec::new()),
        Some(Node::Scalar(super::tree::Scalar::Null, _)) => Ok(Vec::new()),
        Some(Node::Seq(items)) => items
            .iter()
            .map(|i| {
                k.spanned(i)
                    .ok_or_else(|| format!("entries of {field} must be strings"))
            })
            .collect(),
        Some(_) => Err(format!(
            "json: cannot unmarshal object into Go struct field of {field} of type []string"
        )),
    }
}

pub fn string_map_of(
    k: &Kust,
    n: Option<&Node>,
    field: &str,
) -> Result<Vec<(String, Spanned)>, String> {
    match n {
        None => Ok(Vec::new()),
        Some(Node::Scalar(super::tree::Scalar::Null, _)) => Ok(Vec::new()),
        Some(Node::Map(m)) => m
            .iter()
            .map(|(key, v)| {
                // Values are Go strings: a boolean or number is refused, as JSON decoding does.
                let other = match v {
                    Node::Scalar(super::tree::Scalar::Bool(_), _) => Some("bool"),
                    Node::Scalar(super::tree::Scalar::Num(_), _) => Some("number"),
                    _ => None,
                };
                if let Some(t) = other {
                    return Err(format!(
                        "json: cannot unmarshal {t} into Go struct field Kustomization.{field} of type string"
                    ));
                }
                let s = match v {
                    Node::Scalar(super::tree::Scalar::Null, o) => Spanned {
                        value: String::new(),
                        org: *o,
                    },
                    _ => k
                        .spanned(v)
                        .ok_or_else(|| format!("values of {field} must be strings"))?,
                };
                Ok((key.to_string(), s))
            })
            .collect(),
        Some(_) => Err(format!("field {field} must be a mapping")),
    }
}

/// A string field of an entry mapping.
pub fn entry_str(k: &Kust, m: &Map, field: &str) -> Option<Spanned> {
    m.get(field)
        .filter(|n| !n.is_null())
        .and_then(|n| k.spanned(n))
}

/// `Err` naming the first key of a mapping that is not among `known`, as Go's strict JSON
/// decoding refuses it: `json: unknown field "KEY"`.
pub fn known_fields(m: &Map, known: &[&str]) -> Result<(), String> {
    match m.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(format!("json: unknown field \"{key}\"")),
        None => Ok(()),
    }
}

/// A boolean field of an entry mapping.
pub fn entry_bool(m: &Map, field: &str) -> bool {
    matches!(
        m.get(field),
        Some(Node::Scalar(super::tree::Scalar::Bool(true), _))
    ) || m.get(field).and_then(Node::as_str) == Some("true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_by_index_match_str_lines() {
        for src in ["", "a", "a\n", "a\n\nb", "a\r\nb\r\n", "x\ny\r", "\n\n"] {
            let k = Kust {
                path: String::new(),
                dir: String::new(),
                real_dir: String::new(),
                file: 0,
                src: src.to_string(),
                root: Map::new(),
                is_component: false,
                line_starts: line_starts(src),
            };
            let want: Vec<&str> = src.lines().collect();
            let got: Vec<&str> = (1..=want.len() as u32 + 1)
                .filter_map(|n| k.line(n))
                .collect();
            assert_eq!(got, want, "{src:?}");
        }
    }
}
