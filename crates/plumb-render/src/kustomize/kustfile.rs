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
    "buildMetadata",
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

/// The Go type of a kustomization value, for decoding it as Go's JSON decoding does:
/// matching struct field names and refusing a value of another type (a list where a string
/// goes is an error, never read as absent). The types were recorded from `kubectl
/// kustomize`'s errors, field by field.
enum Shape {
    /// A Go string (named by its type: `string`, `types.SortOrder`).
    Str(&'static str),
    Bool,
    /// A Go integer (`int`, `int64`).
    Int(&'static str),
    /// Anything (`interface{}`).
    Any,
    /// A Go map with string keys (its type's name) of values of one shape.
    Map(&'static str, &'static Shape),
    /// A struct (its type's name in package `types`) and its fields.
    Struct(&'static str, &'static [(&'static str, Shape)]),
    /// A slice (its type's name) of one shape.
    List(&'static str, &'static Shape),
}

use Shape::{Any, Bool, Int, List, Struct};

const STR: Shape = Shape::Str("string");
const STRS: Shape = List("[]string", &STR);
const STR_MAP: Shape = Shape::Map("map[string]string", &STR);

const FIELD_SPEC: Shape = Struct(
    "FieldSpec",
    &[
        ("group", STR),
        ("version", STR),
        ("kind", STR),
        ("path", STR),
        ("create", Bool),
    ],
);
const SELECTOR_FIELDS: &[(&str, Shape)] = &[
    ("group", STR),
    ("version", STR),
    ("kind", STR),
    ("name", STR),
    ("namespace", STR),
    ("annotationSelector", STR),
    ("labelSelector", STR),
];
const SELECTOR: Shape = Struct("Selector", SELECTOR_FIELDS);
const PATCH: Shape = Struct(
    "Patch",
    &[
        ("path", STR),
        ("patch", STR),
        ("target", SELECTOR),
        ("options", Shape::Map("map[string]bool", &Bool)),
    ],
);
const FIELD_OPTIONS: Shape = Struct(
    "FieldOptions",
    &[
        ("delimiter", STR),
        ("index", Int("int")),
        ("encoding", STR),
        ("create", Bool),
    ],
);
const GENERATOR_OPTIONS: Shape = Struct(
    "GeneratorOptions",
    &[
        ("labels", STR_MAP),
        ("annotations", STR_MAP),
        ("disableNameSuffixHash", Bool),
        ("immutable", Bool),
    ],
);
/// A `secretGenerator` entry's fields: a `configMapGenerator` entry's (the first eight), then
/// `type`.
const SECRET_ARGS_FIELDS: &[(&str, Shape)] = &[
    ("namespace", STR),
    ("name", STR),
    ("behavior", STR),
    ("literals", STRS),
    ("files", STRS),
    ("envs", STRS),
    ("env", STR),
    ("options", GENERATOR_OPTIONS),
    ("type", STR),
];
const CONFIG_MAP_ARGS: Shape = Struct("ConfigMapArgs", SECRET_ARGS_FIELDS.split_at(8).0);
const SECRET_ARGS: Shape = Struct("SecretArgs", SECRET_ARGS_FIELDS);
const IMAGE: Shape = Struct(
    "Image",
    &[
        ("name", STR),
        ("newName", STR),
        ("tagSuffix", STR),
        ("newTag", STR),
        ("digest", STR),
    ],
);
const REPLACEMENT: Shape = Struct(
    "ReplacementField",
    &[
        ("path", STR),
        (
            "source",
            Struct(
                "SourceSelector",
                &[
                    ("group", STR),
                    ("version", STR),
                    ("kind", STR),
                    ("name", STR),
                    ("namespace", STR),
                    ("fieldPath", STR),
                    ("options", FIELD_OPTIONS),
                ],
            ),
        ),
        (
            "targets",
            List(
                "[]*types.TargetSelector",
                &Struct(
                    "TargetSelector",
                    &[
                        ("select", SELECTOR),
                        ("reject", List("[]*types.Selector", &SELECTOR)),
                        ("fieldPaths", STRS),
                        ("options", FIELD_OPTIONS),
                    ],
                ),
            ),
        ),
    ],
);

/// A `vars` entry: kustomize's `Var` (objref: its `Target`; fieldref: its `FieldSelector`).
const VAR: Shape = Struct(
    "Var",
    &[
        ("name", STR),
        (
            "objref",
            Struct(
                "Target",
                &[
                    ("group", STR),
                    ("version", STR),
                    ("kind", STR),
                    ("apiVersion", STR),
                    ("name", STR),
                    ("namespace", STR),
                ],
            ),
        ),
        ("fieldref", Struct("FieldSelector", &[("fieldPath", STR)])),
    ],
);

/// The shape of each top-level field of a kustomization (kustomize's `Kustomization`);
/// `None` for the fields only listed as unsupported whose type kustomize does not know.
fn shape_of(field: &str) -> Option<&'static Shape> {
    const LABELS: Shape = List(
        "[]types.Label",
        &Struct(
            "Label",
            &[
                ("pairs", STR_MAP),
                ("includeSelectors", Bool),
                ("includeTemplates", Bool),
                ("fields", List("[]types.FieldSpec", &FIELD_SPEC)),
            ],
        ),
    );
    const REPLICAS: Shape = List(
        "[]types.Replica",
        &Struct("Replica", &[("name", STR), ("count", Int("int64"))]),
    );
    const METADATA: Shape = Struct(
        "ObjectMeta",
        &[
            ("name", STR),
            ("namespace", STR),
            ("labels", STR_MAP),
            ("annotations", STR_MAP),
        ],
    );
    const SORT_OPTIONS: Shape = Struct(
        "SortOptions",
        &[
            ("order", Shape::Str("types.SortOrder")),
            (
                "legacySortOptions",
                Struct(
                    "LegacySortOptions",
                    &[("orderFirst", STRS), ("orderLast", STRS)],
                ),
            ),
        ],
    );
    const HELM_CHARTS: Shape = List(
        "[]types.HelmChart",
        &Struct(
            "HelmChart",
            &[
                ("name", STR),
                ("version", STR),
                ("repo", STR),
                ("releaseName", STR),
                ("namespace", STR),
                ("additionalValuesFiles", STRS),
                ("valuesFile", STR),
                ("valuesInline", Shape::Map("map[string]interface {}", &Any)),
                ("valuesMerge", STR),
                ("includeCRDs", Bool),
                ("skipHooks", Bool),
                ("apiVersions", STRS),
                ("kubeVersion", STR),
                ("nameTemplate", STR),
                ("skipTests", Bool),
                ("debug", Bool),
                ("devel", Bool),
            ],
        ),
    );
    const HELM_GLOBALS: Shape = Struct("HelmGlobals", &[("chartHome", STR), ("configHome", STR)]);
    Some(match field {
        "apiVersion" | "kind" | "namespace" | "namePrefix" | "nameSuffix" => &STR,
        "resources" | "bases" | "components" | "crds" | "configurations" | "generators"
        | "transformers" | "validators" | "buildMetadata" => &STRS,
        "commonLabels" | "commonAnnotations" | "openapi" => &STR_MAP,
        "patchesStrategicMerge" => &const { List("[]types.PatchStrategicMerge", &STR) },
        "patches" | "patchesJson6902" => &const { List("[]types.Patch", &PATCH) },
        "images" | "imageTags" => &const { List("[]types.Image", &IMAGE) },
        "configMapGenerator" => &const { List("[]types.ConfigMapArgs", &CONFIG_MAP_ARGS) },
        "secretGenerator" => &const { List("[]types.SecretArgs", &SECRET_ARGS) },
        "labels" => &LABELS,
        "replicas" => &REPLICAS,
        "replacements" => &const { List("[]types.ReplacementField", &REPLACEMENT) },
        "vars" => &const { List("[]types.Var", &VAR) },
        "metadata" => &METADATA,
        "generatorOptions" => &GENERATOR_OPTIONS,
        "sortOptions" => &SORT_OPTIONS,
        "helmCharts" => &HELM_CHARTS,
        "helmGlobals" => &HELM_GLOBALS,
        "helmChartInflationGenerator" => &const { List("[]types.HelmChartArgs", &Any) },
        _ => return None,
    })
}

impl Shape {
    /// The type's name as Go's decoding errors print it.
    fn go_name(&self) -> String {
        match self {
            Shape::Str(t) | Int(t) | Shape::Map(t, _) | List(t, _) => (*t).to_string(),
            Bool => "bool".into(),
            Any => "interface {}".into(),
            Struct(name, _) => format!("types.{name}"),
        }
    }
}

/// What a JSON value is, as Go's decoding errors name it.
fn json_type(n: &Node) -> &'static str {
    use super::tree::Scalar;
    match n {
        Node::Scalar(Scalar::Null, _) => "null",
        Node::Scalar(Scalar::Str(_), _) => "string",
        Node::Scalar(Scalar::Num(_), _) => "number",
        Node::Scalar(Scalar::Bool(_), _) => "bool",
        Node::Seq(_) => "array",
        Node::Map(_) => "object",
    }
}

/// Where a value is decoded: the struct whose field holds it and the field's path from the
/// kustomization's top (`Image`, `images.newTag`), as Go's decoding errors name them.
#[derive(Clone, Copy)]
struct At<'a> {
    owner: &'static str,
    field: &'a str,
    parent: Option<&'a At<'a>>,
}

impl At<'_> {
    /// The path, written only for an error.
    fn path(&self) -> String {
        match self.parent {
            Some(p) => format!("{}.{}", p.path(), self.field),
            None => self.field.to_string(),
        }
    }
}

fn type_error(n: &Node, at: At<'_>, go: &str) -> (String, Option<Org>) {
    (
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{} of type {go}",
            json_type(n),
            at.owner,
            at.path()
        ),
        super::tree::first_org(n),
    )
}

/// `node` decoded as Go's JSON decoding decodes it into `shape`: the field names of its
/// structs matched exactly, else ignoring case (spellings of one field decoded in sorted
/// order); a key that names no field of its struct is an error, and so is a value of another
/// type than its field's (a null is any type's zero value). `Err` is the first error, with
/// its origin.
fn fold_fields(mut node: Node, shape: &Shape, at: At<'_>) -> Result<Node, (String, Option<Org>)> {
    use super::tree::Scalar;
    if node.is_null() {
        return Ok(node);
    }
    // Every key a field's own spelling (nearly always): each value decoded in place, the
    // mapping kept, as the loop below would rebuild it.
    if let (Node::Map(m), Struct(name, fields)) = (&mut node, shape) {
        let exact: Option<Vec<_>> = m
            .keys()
            .map(|key| fields.iter().find(|(f, _)| *f == key.as_str()))
            .collect();
        if let Some(exact) = exact {
            for (v, (field, sub)) in m.values_mut().zip(exact) {
                let inner = At {
                    owner: name,
                    field,
                    parent: Some(&at),
                };
                let taken = std::mem::replace(v, Node::Scalar(Scalar::Null, Org::NONE));
                *v = fold_fields(taken, sub, inner)?;
            }
            return Ok(node);
        }
    }
    Ok(match (node, shape) {
        (Node::Map(m), Struct(name, fields)) => {
            let mut out = Map::new();
            for (key, v) in m {
                let found = fields
                    .iter()
                    .find(|(f, _)| *f == key)
                    .or_else(|| fields.iter().find(|(f, _)| f.eq_ignore_ascii_case(&key)));
                let Some((field, sub)) = found else {
                    return Err((
                        format!("json: unknown field \"{key}\""),
                        super::tree::first_org(&v),
                    ));
                };
                let inner = At {
                    owner: name,
                    field,
                    parent: Some(&at),
                };
                let v = fold_fields(v, sub, inner)?;
                let merged = match out.remove(field) {
                    Some(old) => decode_into(old, v),
                    None => v,
                };
                out.insert(field.to_string(), merged);
            }
            Node::Map(out)
        }
        // A `null` entry of a list of structs decodes to the struct's zero value, as an
        // empty mapping does (`images: [null]` is `images: [{}]`).
        (Node::Seq(items), List(list, item)) => Node::Seq(
            items
                .into_iter()
                .map(|i| match (i, &**item) {
                    // Of a list of pointers (`[]*types.Selector`) it is a nil kustomize
                    // crashes on (a nil pointer dereference): refused with a message.
                    (i, Struct(..)) if i.is_null() && list.starts_with("[]*") => Err((
                        format!(
                            "a null entry in {}: kustomize fails on it (nil pointer dereference)",
                            at.path()
                        ),
                        i.org(),
                    )),
                    (i, Struct(..)) if i.is_null() => Ok(Node::Map(Map::new())),
                    (i, _) => fold_fields(i, item, at),
                })
                .collect::<Result<_, _>>()?,
        ),
        // A Go map's values are data under the map's own field: decoded in place.
        // A `null` value of a map of strings is the key with "" (`openapi: {path: null}`
        // names the kustomization's directory, as `path: ""` does).
        (Node::Map(mut m), Shape::Map(_, value)) => {
            for v in m.values_mut() {
                let taken = std::mem::replace(v, Node::Scalar(Scalar::Null, Org::NONE));
                *v = match (taken, *value) {
                    (Node::Scalar(Scalar::Null, org), Shape::Str(_)) => {
                        Node::Scalar(Scalar::Str(Default::default()), org)
                    }
                    (taken, _) => fold_fields(taken, value, at)?,
                };
            }
            Node::Map(m)
        }
        (n @ Node::Scalar(Scalar::Num(_), _), Int(go)) => {
            let integral =
                matches!(&n, Node::Scalar(Scalar::Num(x), _) if x.is_i64() || x.is_u64());
            if !integral {
                let text = n.scalar_text().unwrap_or_default();
                return Err((
                    format!(
                        "json: cannot unmarshal number {text} into Go struct field {}.{} of type {go}",
                        at.owner,
                        at.path()
                    ),
                    n.org(),
                ));
            }
            n
        }
        (n, Any)
        | (n @ Node::Scalar(Scalar::Str(_), _), Shape::Str(_))
        | (n @ Node::Scalar(Scalar::Bool(_), _), Bool) => n,
        (n, shape) => return Err(type_error(&n, at, &shape.go_name())),
    })
}

/// A kustomization's top-level mapping as kustomize reads it (its YAML converted to JSON,
/// then decoded into its Go type): keys spelled in another case name their field, keys
/// of one field are applied in sorted order (`namePrefix` before `nameprefix`), each
/// decoded into what the earlier ones left ([`decode_into`]), every value checked against
/// its field's Go type ([`fold_fields`]); `imageTags` is appended to `images` (its
/// FixKustomization). `Err` is the first error in that order, as Go's decoding reports it
/// (`json: …`), with its origin.
pub fn normalise(root: Map) -> Result<Map, (String, Option<Org>)> {
    let mut out = Map::new();
    // `Map` iterates keys in byte order, as Go's JSON encoder writes them.
    for (key, v) in root {
        let Some(field) = field_of(&key) else {
            return Err((
                format!("json: unknown field \"{key}\""),
                super::tree::first_org(&v),
            ));
        };
        let v = match shape_of(field) {
            Some(shape) => fold_fields(
                v,
                shape,
                At {
                    owner: "Kustomization",
                    field,
                    parent: None,
                },
            )?,
            None => v,
        };
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
