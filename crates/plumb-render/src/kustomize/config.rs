//! `configurations`: kustomize's transformer configs (`transformerconfigs`), files that add
//! field specs to the builtin transformers. A kustomization's configs are merged with those of
//! everything it includes (kustomize merges a sub-build's config into its accumulator), so a
//! base's `nameReference` for a CRD field also applies in every overlay above it.
//!
//! `crds` ([`read_crds`]) add name references and label and annotation fields the same way.
//!
//! Native: `nameReference` (more referrer fields of a referenced kind), `namespace`,
//! `commonLabels`, `commonAnnotations`, and `varReference` (where `vars` are replaced). A config with one of kustomize's other sections
//! (`namePrefix`, `images`, `replicas`, …) makes the build fall back, as an unsupported field
//! does; a section kustomize does not know is an error naming it, as in kustomize.

use super::fieldspec::{FieldSpec, NameRef};
use super::kustfile::Kust;
use super::{Ctx, KustomizeError};
use serde_json::Value;

/// The field specs a build adds to the builtin ones.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub namespace: Vec<FieldSpec>,
    pub common_labels: Vec<FieldSpec>,
    pub common_annotations: Vec<FieldSpec>,
    /// In kustomize's merge order: a kind already listed gains referrers.
    pub name_reference: Vec<NameRef>,
    /// Where `$(VAR)` is replaced, besides kustomize's builtin places.
    pub var_reference: Vec<FieldSpec>,
}

/// Sections of kustomize's TransformerConfig not read natively: a config with one falls back
/// to the kustomize binary. (A section kustomize does not know is an error, as in kustomize.)
const NOT_NATIVE: &[&str] = &[
    "namePrefix",
    "nameSuffix",
    "templateLabels",
    "images",
    "replicas",
];

/// The sections read natively.
const NATIVE: &[&str] = &[
    "nameReference",
    "namespace",
    "commonLabels",
    "commonAnnotations",
    "varReference",
];

fn same(a: &FieldSpec, b: &FieldSpec) -> bool {
    (&a.group, &a.version, &a.kind, &a.path) == (&b.group, &b.version, &b.kind, &b.path)
}

/// Appends the specs of `from` that `into` lacks (same group, version, kind and path).
pub(super) fn merge_specs(into: &mut Vec<FieldSpec>, from: &[FieldSpec]) {
    for f in from {
        if !into.iter().any(|g| same(f, g)) {
            into.push(f.clone());
        }
    }
}

impl Config {
    /// Adds `other`'s specs that are not already here.
    pub fn merge(&mut self, other: &Config) {
        merge_specs(&mut self.namespace, &other.namespace);
        merge_specs(&mut self.common_labels, &other.common_labels);
        merge_specs(&mut self.common_annotations, &other.common_annotations);
        merge_name_refs(&mut self.name_reference, &other.name_reference);
        merge_specs(&mut self.var_reference, &other.var_reference);
    }

    /// kustomize's builtin `varReference` field specs with this config's.
    pub fn var_references(&self) -> Vec<FieldSpec> {
        let mut all = super::vars::builtin_references();
        merge_specs(&mut all, &self.var_reference);
        all
    }

    /// The builtin name reference table with this config's entries merged in.
    pub fn name_refs(&self) -> std::borrow::Cow<'static, [NameRef]> {
        let builtin = super::fieldspec::name_refs();
        if self.name_reference.is_empty() {
            return std::borrow::Cow::Borrowed(builtin);
        }
        let mut table = builtin.to_vec();
        merge_name_refs(&mut table, &self.name_reference);
        std::borrow::Cow::Owned(table)
    }
}

fn merge_name_refs(into: &mut Vec<NameRef>, from: &[NameRef]) {
    for nr in from {
        match into
            .iter_mut()
            .find(|t| (&t.group, &t.version, &t.kind) == (&nr.group, &nr.version, &nr.kind))
        {
            Some(t) => merge_specs(&mut t.referrers, &nr.referrers),
            None => into.push(nr.clone()),
        }
    }
}

/// The configs `k`'s `configurations` lists, read.
pub fn read(ctx: &Ctx, k: &Kust) -> Result<Config, KustomizeError> {
    let mut config = Config::default();
    for entry in k
        .strings("configurations")
        .map_err(|m| ctx.kerr(k, None, m))?
    {
        let path = ctx.file_under(k, &entry.value, entry.org)?;
        let text = ctx.read_text(&path)?;
        let fail = |m: String| ctx.kerr(k, Some(entry.org), format!("{path}: {m}"));
        let doc: Value = serde_saphyr::from_str(&text).map_err(|e| {
            fail(format!(
                "not a transformer config: {}",
                crate::yaml_reason(&e)
            ))
        })?;
        let Some(sections) = doc.as_object() else {
            if doc.is_null() {
                continue;
            }
            return Err(fail("not a transformer config: expected a mapping".into()));
        };
        for (key, value) in sections {
            // Go's JSON decoding, as kustomize reads the file: a field's name matches ignoring
            // case; an unknown field is an error.
            let Some(section) = NOT_NATIVE
                .iter()
                .chain(NATIVE)
                .find(|f| f.eq_ignore_ascii_case(key))
                .map(|f| f.to_string())
            else {
                return Err(fail(format!(
                    "not a transformer config: unknown field {key:?}"
                )));
            };
            if NOT_NATIVE.contains(&section.as_str()) {
                if value.is_null() || value.as_array().is_some_and(Vec::is_empty) {
                    continue;
                }
                return Err(KustomizeError::Unsupported {
                    file: path.clone(),
                    field: format!("configurations: {section}"),
                });
            }
            let list = match value {
                Value::Null => continue,
                Value::Array(items) => items,
                _ => return Err(fail(format!("{section}: expected a list"))),
            };
            match section.as_str() {
                "nameReference" => {
                    for item in list {
                        let target = spec(item).map_err(|m| fail(format!("{section}: {m}")))?;
                        let referrers = match item.get("fieldSpecs") {
                            None | Some(Value::Null) => Vec::new(),
                            Some(Value::Array(fs)) => fs
                                .iter()
                                .map(spec)
                                .collect::<Result<_, _>>()
                                .map_err(|m| fail(format!("{section}: fieldSpecs: {m}")))?,
                            Some(_) => {
                                return Err(fail(format!(
                                    "{section}: fieldSpecs: expected a list"
                                )));
                            }
                        };
                        merge_name_refs(
                            &mut config.name_reference,
                            &[NameRef {
                                group: target.group,
                                version: target.version,
                                kind: target.kind,
                                referrers,
                            }],
                        );
                    }
                }
                _ => {
                    let specs: Vec<FieldSpec> = list
                        .iter()
                        .map(spec)
                        .collect::<Result<_, _>>()
                        .map_err(|m| fail(format!("{section}: {m}")))?;
                    let into = match section.as_str() {
                        "namespace" => &mut config.namespace,
                        "commonLabels" => &mut config.common_labels,
                        "varReference" => &mut config.var_reference,
                        _ => &mut config.common_annotations,
                    };
                    merge_specs(into, &specs);
                }
            }
        }
    }
    Ok(config)
}

/// The field specs `k`'s `crds` add (kustomize's LoadConfigFromCRDs): each file maps Go type
/// names to `{"Schema": <OpenAPI schema>, "Dependencies": [...]}`; a type with `kind`,
/// `apiVersion` and `metadata` properties is a kind (named by the type name's last `.` part), and
/// its properties (followed through `$ref`) marked `x-kubernetes-object-ref-api-version` and
/// `-kind` are name references (to `<property>/<x-kubernetes-object-ref-name-key, default
/// name>`), `x-kubernetes-annotation` annotation fields, `x-kubernetes-label-selector` label
/// fields. `x-kubernetes-identity` (a name-prefix field) is not read natively: the build falls
/// back.
pub fn read_crds(ctx: &Ctx, k: &Kust) -> Result<Config, KustomizeError> {
    let mut config = Config::default();
    for entry in k.strings("crds").map_err(|m| ctx.kerr(k, None, m))? {
        let path = ctx.file_under(k, &entry.value, entry.org)?;
        let text = ctx.read_text(&path)?;
        let fail = |m: String| {
            ctx.kerr(
                k,
                Some(entry.org),
                format!("unable to parse open API definition from '{path}': {m}"),
            )
        };
        let doc: Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?
        } else {
            serde_saphyr::from_str(&text).map_err(|e| fail(crate::yaml_reason(&e)))?
        };
        let Some(types) = doc.as_object() else {
            return Err(fail("expected a map of type names".into()));
        };
        let schema_of = |name: &str| {
            types.get(name).and_then(|d| {
                d.as_object()?
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("schema"))
                    .map(|(_, v)| v)
            })
        };
        let mut names: Vec<&String> = types.keys().collect();
        names.sort();
        for name in names {
            let Some(props) = schema_of(name)
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
            else {
                continue;
            };
            if !["kind", "apiVersion", "metadata"]
                .iter()
                .all(|p| props.contains_key(*p))
            {
                continue;
            }
            let kind = name.rsplit('.').next().unwrap_or(name).to_string();
            let mut seen = Vec::new();
            // Types shared by many fields are walked once per path, as kustomize walks them:
            // bounded, so that a definitions file cannot make a render hang.
            let mut budget = MAX_CRD_PROPERTIES;
            walk_crd(
                &schema_of,
                name,
                &kind,
                &mut Vec::new(),
                &mut seen,
                &mut config,
                &mut budget,
            )
            .map_err(|e| match e {
                CrdWalk::Unsupported(field) => KustomizeError::Unsupported {
                    file: path.clone(),
                    field,
                },
                CrdWalk::TooLarge => fail(format!(
                    "more than {MAX_CRD_PROPERTIES} properties to walk (types referring to each other many times)"
                )),
            })?;
        }
    }
    Ok(config)
}

/// The most properties one kind's walk of a `crds` file visits.
const MAX_CRD_PROPERTIES: usize = 100_000;

/// Why a `crds` walk stopped.
enum CrdWalk {
    /// A mark the native build does not implement (the build falls back).
    Unsupported(String),
    /// More than [`MAX_CRD_PROPERTIES`].
    TooLarge,
}

/// The properties of type `name`, for the kind `kind`, at `path`.
fn walk_crd<'a>(
    schema_of: &dyn Fn(&str) -> Option<&'a Value>,
    name: &str,
    kind: &str,
    path: &mut Vec<String>,
    seen: &mut Vec<String>,
    config: &mut Config,
    budget: &mut usize,
) -> Result<(), CrdWalk> {
    // A type that refers to itself would recurse forever (kustomize would too).
    if seen.iter().any(|s| s == name) || path.len() > 32 {
        return Ok(());
    }
    seen.push(name.to_string());
    let Some(props) = schema_of(name)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        seen.pop();
        return Ok(());
    };
    let mut keys: Vec<&String> = props.keys().collect();
    keys.sort();
    for prop in keys {
        *budget = budget.checked_sub(1).ok_or(CrdWalk::TooLarge)?;
        let p = &props[prop.as_str()];
        let ext = |x: &str| p.get(x).and_then(Value::as_str);
        path.push(prop.clone());
        let at = path.join("/");
        let fs = |path: &str| FieldSpec::new("", "", kind, path, false);
        if ext("x-kubernetes-annotation").is_some() {
            merge_specs(&mut config.common_annotations, &[fs(&at)]);
        }
        if ext("x-kubernetes-label-selector").is_some() {
            merge_specs(&mut config.common_labels, &[fs(&at)]);
        }
        if ext("x-kubernetes-identity").is_some() {
            return Err(CrdWalk::Unsupported("crds: x-kubernetes-identity".into()));
        }
        if let (Some(version), Some(ref_kind)) = (
            ext("x-kubernetes-object-ref-api-version"),
            ext("x-kubernetes-object-ref-kind"),
        ) {
            let key = ext("x-kubernetes-object-ref-name-key").unwrap_or("name");
            merge_name_refs(
                &mut config.name_reference,
                &[NameRef {
                    group: String::new(),
                    version: version.to_string(),
                    kind: ref_kind.to_string(),
                    referrers: vec![fs(&format!("{at}/{key}"))],
                }],
            );
        }
        if let Some(r) = p.get("$ref").and_then(Value::as_str) {
            walk_crd(schema_of, r, kind, path, seen, config, budget)?;
        }
        path.pop();
    }
    seen.pop();
    Ok(())
}

/// One field spec (or a name reference's target: its group, version and kind).
fn spec(v: &Value) -> Result<FieldSpec, String> {
    let m = v.as_object().ok_or("expected a mapping")?;
    let s = |f: &str| -> Result<String, String> {
        match m.get(f) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!("{f}: expected a string, got {other}")),
        }
    };
    let create = match m.get("create") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("create: expected true or false, got {other}")),
    };
    Ok(FieldSpec::new(
        &s("group")?,
        &s("version")?,
        &s("kind")?,
        &s("path")?,
        create,
    ))
}
