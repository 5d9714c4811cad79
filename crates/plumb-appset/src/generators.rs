//! The generators: each turns its part of `spec.generators` into parameter sets, in the
//! shapes Argo CD gives them — flat `key → string` maps in the legacy mode (nested values
//! joined with `.`), nested maps with `goTemplate: true`. One function per generator; a new
//! generator is one more arm of [`run`].

use crate::{Generated, Inputs, Mode};
use serde_json::{Map, Value};

/// What the git generator reads: a repository's files at a revision.
pub trait Repos {
    /// Every file of `repo_url` at `revision` (repository-relative paths, `/`-separated).
    fn files(&self, repo_url: &str, revision: &str) -> Result<Vec<String>, String>;
    /// One file's bytes.
    fn read(&self, repo_url: &str, revision: &str, path: &str) -> Result<Vec<u8>, String>;
}

/// An Argo CD cluster Secret, as the clusters generator sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cluster {
    pub name: String,
    pub server: String,
    pub labels: Map<String, Value>,
    pub annotations: Map<String, Value>,
}

/// The local cluster Argo CD lists when no Secret names it.
pub const IN_CLUSTER: &str = plumb_core::clusters::IN_CLUSTER_SERVER;

type Params = Map<String, Value>;

/// The parameter sets of the generator `g` (at `path`), each with its template: the
/// generator's own `template` merged over `template`.
pub fn run(
    g: &Value,
    path: &str,
    template: &Value,
    mode: Mode,
    inputs: &Inputs<'_>,
) -> Result<Vec<Generated>, String> {
    let obj = g
        .as_object()
        .ok_or_else(|| format!("{path}: a generator must be a mapping"))?;
    let kinds: Vec<&String> = obj
        .keys()
        .filter(|k| !matches!(k.as_str(), "selector" | "template"))
        .collect();
    let [kind] = kinds.as_slice() else {
        return Err(format!(
            "{path}: exactly one generator per entry (found {})",
            if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
    };
    let at = format!("{path}.{kind}");
    let body = &obj[kind.as_str()];
    let params = match kind.as_str() {
        "list" => list(body, &at, mode)?,
        "clusters" => clusters(body, &at, mode, known_clusters(inputs, &at)?)?,
        "git" => git(body, &at, mode, inputs)?,
        "matrix" => matrix(body, &at, template, mode, inputs)?,
        "merge" => merge(body, &at, template, mode, inputs)?,
        "plugin" | "clusterDecisionResource" | "pullRequest" | "scmProvider" => {
            let svc = inputs.services;
            let raw = match kind.as_str() {
                "plugin" => crate::services::plugin(body, &at, inputs.appset_name, svc)?,
                "clusterDecisionResource" => crate::services::cluster_decision_resource(
                    body,
                    &at,
                    known_clusters(inputs, &at)?,
                    svc,
                )?,
                "pullRequest" => crate::services::pull_request(body, &at, svc)?,
                _ => crate::services::scm_provider(body, &at, svc)?,
            };
            let mut out = Vec::with_capacity(raw.len());
            for r in raw {
                let mut p = if mode.go {
                    r
                } else {
                    let mut flat = Params::new();
                    flatten("", &Value::Object(r), &mut flat);
                    flat
                };
                add_values(body, &at, mode, &mut p)?;
                out.push(p);
            }
            out
        }
        other => return Err(format!("{path}: unknown generator {other:?}")),
    };
    let own = obj.get("template").filter(|t| !t.is_null());
    let template = match own {
        Some(t) => merged(template, t),
        None => template.clone(),
    };
    let selector = obj.get("selector");
    plumb_core::selector::validate(selector).map_err(|e| format!("{path}.selector: {e}"))?;
    let mut out = Vec::new();
    for p in params {
        if selector.is_some_and(|s| !selects(s, &p)) {
            continue;
        }
        out.push(Generated {
            params: p,
            template: template.clone(),
        });
    }
    Ok(out)
}

/// `over` merged onto `base` (maps key by key, anything else replaced).
fn merged(base: &Value, over: &Value) -> Value {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            let mut m = b.clone();
            for (k, v) in o {
                let next = match m.get(k) {
                    Some(old) => merged(old, v),
                    None => v.clone(),
                };
                m.insert(k.clone(), next);
            }
            Value::Object(m)
        }
        (_, o) => o.clone(),
    }
}

/// A generator's `selector` (`matchLabels`, `matchExpressions`) over the parameters: in the
/// legacy mode the flat keys, with `goTemplate` the top-level ones; any scalar as written.
fn selects(selector: &Value, p: &Params) -> bool {
    plumb_core::selector::matches_by(Some(selector), |k| p.get(k), |v| Some(scalar(v)))
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Nested values as the legacy mode's flat `a.b.c → "value"` strings.
fn flatten(prefix: &str, v: &Value, out: &mut Params) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), Value::String(scalar(other)));
        }
    }
}

/// `values` added as `values.KEY` (legacy; its strings filled from the other parameters) or
/// `.values` (goTemplate, as given).
fn add_values(body: &Value, at: &str, mode: Mode, p: &mut Params) -> Result<(), String> {
    let Some(values) = body.get("values").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let map = values
        .as_object()
        .ok_or_else(|| format!("{at}.values: expected a map of strings"))?;
    if mode.go {
        let rendered =
            crate::template::render(values, p, mode).map_err(|m| format!("{at}.values: {m}"))?;
        p.insert("values".into(), rendered);
        return Ok(());
    }
    for (k, v) in map {
        let text = v
            .as_str()
            .ok_or_else(|| format!("{at}.values.{k}: expected a string"))?;
        let filled = crate::template::render(&Value::String(text.into()), p, mode)
            .map_err(|m| format!("{at}.values.{k}: {m}"))?;
        p.insert(format!("values.{k}"), filled);
    }
    Ok(())
}

fn list(body: &Value, at: &str, mode: Mode) -> Result<Vec<Params>, String> {
    let mut elements: Vec<Value> = body
        .get("elements")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(text) = body.get("elementsYaml").and_then(Value::as_str) {
        let more: Vec<Value> = serde_saphyr::from_str(text)
            .map_err(|e| format!("{at}.elementsYaml: not a YAML list: {e}"))?;
        elements.extend(more);
    }
    let mut out = Vec::new();
    for (i, e) in elements.iter().enumerate() {
        let m = e
            .as_object()
            .ok_or_else(|| format!("{at}.elements[{i}]: expected a mapping"))?;
        if mode.go {
            out.push(m.clone());
            continue;
        }
        let mut p = Params::new();
        for (k, v) in m {
            if k == "values" {
                flatten("values", v, &mut p);
                continue;
            }
            match v {
                Value::String(s) => {
                    p.insert(k.clone(), Value::String(s.clone()));
                }
                _ => {
                    return Err(format!(
                        "{at}.elements[{i}].{k}: the legacy template mode takes strings only (set goTemplate: true for nested values)"
                    ));
                }
            }
        }
        out.push(p);
    }
    Ok(out)
}

/// The cluster Secrets the generators may read, or why there are none.
fn known_clusters<'a>(inputs: &Inputs<'a>, at: &str) -> Result<&'a [Cluster], String> {
    inputs.clusters.ok_or_else(|| {
        format!("{at}: this generator lists the clusters Argo CD knows, and no cluster Secrets were given to read")
    })
}

fn clusters(
    body: &Value,
    at: &str,
    mode: Mode,
    secrets: &[Cluster],
) -> Result<Vec<Params>, String> {
    let selector = body.get("selector").filter(|s| {
        s.as_object()
            .is_some_and(|m| m.values().any(|v| !v.is_null()))
    });
    plumb_core::selector::validate(selector).map_err(|e| format!("{at}.selector: {e}"))?;
    let mut all: Vec<Cluster> = secrets.to_vec();
    // Argo CD lists the local cluster when no Secret names it and no selector is given.
    if selector.is_none() && !all.iter().any(|c| c.server == IN_CLUSTER) {
        all.insert(
            0,
            Cluster {
                name: plumb_core::clusters::IN_CLUSTER_NAME.into(),
                server: IN_CLUSTER.into(),
                ..Cluster::default()
            },
        );
    }
    let mut out = Vec::new();
    for c in all {
        if selector.is_some_and(|s| !selects(s, &c.labels)) {
            continue;
        }
        let mut p = Params::new();
        let normalized = crate::normalize(&c.name);
        if mode.go {
            p.insert("name".into(), Value::String(c.name.clone()));
            p.insert("nameNormalized".into(), Value::String(normalized));
            p.insert("server".into(), Value::String(c.server.clone()));
            let mut meta = Map::new();
            meta.insert("labels".into(), Value::Object(c.labels.clone()));
            meta.insert("annotations".into(), Value::Object(c.annotations.clone()));
            p.insert("metadata".into(), Value::Object(meta));
        } else {
            p.insert("name".into(), Value::String(c.name.clone()));
            p.insert("nameNormalized".into(), Value::String(normalized));
            p.insert("server".into(), Value::String(c.server.clone()));
            for (k, v) in &c.labels {
                p.insert(format!("metadata.labels.{k}"), Value::String(scalar(v)));
            }
            for (k, v) in &c.annotations {
                p.insert(
                    format!("metadata.annotations.{k}"),
                    Value::String(scalar(v)),
                );
            }
        }
        add_values(body, at, mode, &mut p)?;
        out.push(p);
    }
    // `flatList: true`: one parameter set, every cluster in `clusters` (Argo CD's cluster
    // generator option), the values beside it.
    if body.get("flatList").and_then(Value::as_bool) == Some(true) {
        let mut flat = Params::new();
        let list: Vec<Value> = out
            .into_iter()
            .map(|mut p| {
                p.remove("values");
                p.retain(|k, _| !k.starts_with("values."));
                Value::Object(p.into_iter().collect())
            })
            .collect();
        flat.insert("clusters".into(), Value::Array(list));
        add_values(body, at, mode, &mut flat)?;
        return Ok(vec![flat]);
    }
    Ok(out)
}

/// `path`'s parameters: `path`, `path.basename`, `path.basenameNormalized`, `path[N]`
/// (legacy) or `.path.path`, `.path.basename`, `.path.basenameNormalized`, `.path.segments`
/// (goTemplate); with a file, also `filename` and `filenameNormalized`; all under
/// `pathParamPrefix` when given.
fn path_params(dir: &str, file: Option<&str>, prefix: &str, mode: Mode, p: &mut Params) {
    let segments: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    let basename = segments.last().copied().unwrap_or("");
    let key = if prefix.is_empty() {
        "path".to_string()
    } else {
        format!("{prefix}.path")
    };
    if mode.go {
        let mut m = Map::new();
        m.insert("path".into(), Value::String(dir.into()));
        m.insert("basename".into(), Value::String(basename.into()));
        m.insert(
            "basenameNormalized".into(),
            Value::String(crate::normalize(basename)),
        );
        m.insert(
            "segments".into(),
            Value::Array(
                segments
                    .iter()
                    .map(|s| Value::String((*s).into()))
                    .collect(),
            ),
        );
        if let Some(f) = file {
            m.insert("filename".into(), Value::String(f.into()));
            m.insert(
                "filenameNormalized".into(),
                Value::String(crate::normalize(f)),
            );
        }
        if prefix.is_empty() {
            p.insert("path".into(), Value::Object(m));
        } else {
            let mut outer = Map::new();
            outer.insert("path".into(), Value::Object(m));
            p.insert(prefix.into(), Value::Object(outer));
        }
        return;
    }
    p.insert(key.clone(), Value::String(dir.into()));
    p.insert(format!("{key}.basename"), Value::String(basename.into()));
    p.insert(
        format!("{key}.basenameNormalized"),
        Value::String(crate::normalize(basename)),
    );
    for (i, s) in segments.iter().enumerate() {
        p.insert(format!("{key}[{i}]"), Value::String((*s).into()));
    }
    if let Some(f) = file {
        p.insert(format!("{key}.filename"), Value::String(f.into()));
        p.insert(
            format!("{key}.filenameNormalized"),
            Value::String(crate::normalize(f)),
        );
    }
}

fn glob(pattern: &str, crosses_slash: bool, at: &str) -> Result<globset::GlobMatcher, String> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(!crosses_slash)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("{at}: {e}"))
}

fn git(body: &Value, at: &str, mode: Mode, inputs: &Inputs<'_>) -> Result<Vec<Params>, String> {
    let s = |f: &str| {
        body.get(f)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let repo = s("repoURL");
    if repo.is_empty() {
        return Err(format!("{at}.repoURL: missing"));
    }
    let revision = match s("revision") {
        r if r.is_empty() => "HEAD".to_string(),
        r => r,
    };
    let prefix = s("pathParamPrefix");
    let files = inputs
        .repos
        .files(&repo, &revision)
        .map_err(|e| format!("{at}: {e}"))?;
    let dirs_of = |f: &String| -> Vec<String> {
        let mut v = Vec::new();
        let mut d = f.as_str();
        while let Some((parent, _)) = d.rsplit_once('/') {
            v.push(parent.to_string());
            d = parent;
        }
        v
    };
    let mut out = Vec::new();
    let dir_specs = body.get("directories").and_then(Value::as_array);
    let file_specs = body.get("files").and_then(Value::as_array);
    match (dir_specs, file_specs) {
        (Some(specs), None) => {
            let mut all: Vec<String> = files.iter().flat_map(dirs_of).collect();
            all.sort();
            all.dedup();
            let mut include = Vec::new();
            let mut exclude = Vec::new();
            for (i, d) in specs.iter().enumerate() {
                let path = d.get("path").and_then(Value::as_str).unwrap_or("");
                check_inside(path, &format!("{at}.directories[{i}].path"))?;
                let m = glob(path, false, &format!("{at}.directories[{i}].path"))?;
                if d.get("exclude").and_then(Value::as_bool) == Some(true) {
                    exclude.push(m);
                } else {
                    include.push(m);
                }
            }
            for d in all {
                if include.iter().any(|m| m.is_match(&d)) && !exclude.iter().any(|m| m.is_match(&d))
                {
                    let mut p = Params::new();
                    path_params(&d, None, &prefix, mode, &mut p);
                    add_values(body, at, mode, &mut p)?;
                    out.push(p);
                }
            }
        }
        (None, Some(specs)) => {
            for (i, f) in specs.iter().enumerate() {
                let path = f.get("path").and_then(Value::as_str).unwrap_or("");
                let field = format!("{at}.files[{i}].path");
                check_inside(path, &field)?;
                let m = glob(path, true, &field)?;
                let mut matched: Vec<&String> = files.iter().filter(|f| m.is_match(f)).collect();
                matched.sort();
                for file in matched {
                    let bytes = inputs
                        .repos
                        .read(&repo, &revision, file)
                        .map_err(|e| format!("{field}: {file}: {e}"))?;
                    let text = String::from_utf8(bytes)
                        .map_err(|_| format!("{field}: {file}: not UTF-8"))?;
                    let doc: Value = serde_saphyr::from_str(&text)
                        .map_err(|e| format!("{field}: {file}: not JSON or YAML: {e}"))?;
                    let items = match doc {
                        Value::Array(items) => items,
                        Value::Null => Vec::new(),
                        other => vec![other],
                    };
                    let (dir, name) = file.rsplit_once('/').unwrap_or(("", file.as_str()));
                    for item in items {
                        let Value::Object(content) = item else {
                            return Err(format!("{field}: {file}: expected a mapping"));
                        };
                        let mut p = Params::new();
                        if mode.go {
                            p.extend(content);
                        } else {
                            flatten("", &Value::Object(content), &mut p);
                        }
                        path_params(dir, Some(name), &prefix, mode, &mut p);
                        add_values(body, at, mode, &mut p)?;
                        out.push(p);
                    }
                }
            }
        }
        _ => {
            return Err(format!(
                "{at}: exactly one of directories and files is required"
            ));
        }
    }
    Ok(out)
}

/// A git generator's path must stay in the repository (no absolute path, no `..`).
fn check_inside(path: &str, field: &str) -> Result<(), String> {
    if path.starts_with('/') || path.split('/').any(|s| s == "..") {
        return Err(format!("{field}: {path:?} leaves the repository"));
    }
    Ok(())
}

fn children<'a>(body: &'a Value, at: &str) -> Result<&'a Vec<Value>, String> {
    body.get("generators")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{at}.generators: missing"))
}

fn matrix(
    body: &Value,
    at: &str,
    template: &Value,
    mode: Mode,
    inputs: &Inputs<'_>,
) -> Result<Vec<Params>, String> {
    let gens = children(body, at)?;
    if gens.len() != 2 {
        return Err(format!(
            "{at}.generators: a matrix has exactly two child generators (found {})",
            gens.len()
        ));
    }
    let first = run(
        &gens[0],
        &format!("{at}.generators[0]"),
        template,
        mode,
        inputs,
    )?;
    let mut out = Vec::new();
    for a in first {
        // The second generator sees the first's parameters (its strings are templates).
        let second = crate::template::render(&gens[1], &a.params, mode)
            .map_err(|m| format!("{at}.generators[1]: {m}"))?;
        for b in run(
            &second,
            &format!("{at}.generators[1]"),
            template,
            mode,
            inputs,
        )? {
            let mut p = a.params.clone();
            if let Some(k) = b
                .params
                .iter()
                .find(|(k, v)| !mode.go && p.get(*k).is_some_and(|old| old != *v))
                .map(|(k, _)| k)
            {
                return Err(format!(
                    "{at}: both child generators set the parameter {k:?} to different values"
                ));
            }
            overlay(&mut p, &b.params, mode);
            out.push(p);
        }
    }
    Ok(out)
}

fn merge(
    body: &Value,
    at: &str,
    template: &Value,
    mode: Mode,
    inputs: &Inputs<'_>,
) -> Result<Vec<Params>, String> {
    let gens = children(body, at)?;
    let keys: Vec<String> = body
        .get("mergeKeys")
        .and_then(Value::as_array)
        .map(|k| {
            k.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if keys.is_empty() {
        return Err(format!("{at}.mergeKeys: at least one key is required"));
    }
    let key_of = |p: &Params| -> Option<Vec<String>> {
        keys.iter()
            .map(|k| lookup(p, k).map(|v| scalar(&v)))
            .collect()
    };
    let mut base: Vec<Params> = Vec::new();
    for (i, g) in gens.iter().enumerate() {
        let generated = run(g, &format!("{at}.generators[{i}]"), template, mode, inputs)?;
        if i == 0 {
            base = generated.into_iter().map(|g| g.params).collect();
            continue;
        }
        for other in generated {
            let Some(k) = key_of(&other.params) else {
                continue;
            };
            for b in base.iter_mut().filter(|b| key_of(b).as_ref() == Some(&k)) {
                overlay(b, &other.params, mode);
            }
        }
    }
    Ok(base)
}

/// `from`'s parameters set over `into`'s (goTemplate: nested maps merged key by key).
fn overlay(into: &mut Params, from: &Params, mode: Mode) {
    for (k, v) in from {
        let next = match into.get(k) {
            Some(old) if mode.go => merged(old, v),
            _ => v.clone(),
        };
        into.insert(k.clone(), next);
    }
}

/// A merge key's value: a flat key (legacy), or a dotted path into nested maps (goTemplate).
fn lookup(p: &Params, key: &str) -> Option<Value> {
    if let Some(v) = p.get(key) {
        return Some(v.clone());
    }
    let mut cur: Option<&Value> = None;
    for (i, part) in key.split('.').enumerate() {
        cur = if i == 0 { p.get(part) } else { cur?.get(part) };
    }
    cur.cloned()
}
