//! Argo CD's ApplicationSets, pure: an ApplicationSet and what its generators read (git
//! repositories through [`Repos`], cluster Secrets as [`Cluster`]s) in, the Applications it
//! generates out, as Argo CD's ApplicationSet controller would create them.
//!
//! - Generators ([`generators`]): `list` (`elements`, `elementsYaml`), `clusters` (its
//!   `selector`, `values`, the in-cluster entry Argo CD adds), `git` directories (`exclude`,
//!   `pathParamPrefix`, `values`) and files (JSON or YAML, an object or a list of them; `*`
//!   crosses `/` as in `git ls-files`), `matrix` (two children; the second sees the first's
//!   params) and `merge` (`mergeKeys`); a generator's own `template` and `selector`.
//! - Templates ([`template`]): the legacy mode (`{{param}}` in every string, an unknown
//!   parameter left as written) and `goTemplate: true` (Go's text/template through the
//!   `gotmpl` crate, with `goTemplateOptions: [missingkey=error]`, Argo CD's `normalize` and
//!   `slugify` and the Sprig functions of [`template::FUNCTIONS`]).
//! - All or nothing: any error (an invalid field, a template error, a duplicate generated
//!   name) is one line naming the generator or field, and no Application is returned.
//!
//! - `templatePatch` (with `goTemplate`): a Go template rendering YAML, merged onto each
//!   rendered template (maps key by key, `null` removes, lists replaced).
//!
//! - What a controller does with the result ([`reconcile`]): the Applications to create,
//!   update and delete under `syncPolicy`, and the ApplicationSet's status.
//!
//! - The generators that read services ([`services`]): `plugin`, `clusterDecisionResource`,
//!   `pullRequest` and `scmProvider` (GitHub, GitLab, Gitea), over the caller's
//!   [`services::Services`].
//! - Progressive sync ([`progressive`]): RollingSync's steps.

pub mod generators;
pub mod progressive;
pub mod reconcile;
pub mod services;
pub mod template;

pub use generators::{Cluster, Repos};
use serde_json::{Map, Value};

/// Why an ApplicationSet generates nothing: one line naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AppSetError(pub String);

/// What the generators read besides the ApplicationSet.
pub struct Inputs<'a> {
    pub repos: &'a dyn Repos,
    /// The cluster Secrets of the control namespace (Argo CD's `secret-type: cluster`);
    /// `None` where there are none to read (a preview of a repository): the `clusters` and
    /// `clusterDecisionResource` generators then say so instead of generating from none.
    pub clusters: Option<&'a [Cluster]>,
    /// Secrets, ConfigMaps, duck-typed resources and HTTP for the `plugin`,
    /// `clusterDecisionResource`, `pullRequest` and `scmProvider` generators
    /// ([`services::NoServices`]: none).
    pub services: &'a dyn services::Services,
    /// The ApplicationSet's name, as a plugin service is told it ([`generate`] sets it).
    pub appset_name: &'a str,
}

/// One set of parameters and the template it fills (a generator's own, else the spec's).
#[derive(Debug, Clone)]
pub struct Generated {
    pub params: Map<String, Value>,
    pub template: Value,
}

/// How templates render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mode {
    /// `goTemplate: true`.
    pub go: bool,
    /// `goTemplateOptions: [missingkey=error]`.
    pub missing_key_error: bool,
}

/// The Applications `appset` generates, in generator order, each named once.
pub fn generate(appset: &Value, inputs: &Inputs<'_>) -> Result<Vec<Value>, AppSetError> {
    let fail = |m: String| AppSetError(m);
    let api_version = appset
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let group = api_version.split('/').next().unwrap_or("");
    if appset.get("kind").and_then(Value::as_str) != Some("ApplicationSet")
        || !matches!(group, "argoproj.io" | "plumb.dev")
    {
        return Err(fail(format!(
            "not an ApplicationSet (kind ApplicationSet, apiVersion argoproj.io/v1alpha1 or plumb.dev/v1alpha1): apiVersion {api_version:?}, kind {:?}",
            appset.get("kind").and_then(Value::as_str).unwrap_or("")
        )));
    }
    let name = appset
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let at = |field: &str| format!("ApplicationSet {name}: {field}");
    let namespace = appset
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("argocd");
    let spec = appset
        .get("spec")
        .and_then(Value::as_object)
        .ok_or_else(|| fail(at("spec: missing")))?;
    let mode = Mode {
        go: spec
            .get("goTemplate")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        missing_key_error: read_options(spec.get("goTemplateOptions"))
            .map_err(|m| fail(at(&format!("spec.goTemplateOptions: {m}"))))?,
    };
    let template = spec
        .get("template")
        .cloned()
        .ok_or_else(|| fail(at("spec.template: missing")))?;
    let patch = match spec.get("templatePatch") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if mode.go => Some(p.clone()),
        Some(Value::String(_)) => {
            return Err(fail(at("spec.templatePatch: needs goTemplate: true")));
        }
        Some(_) => return Err(fail(at("spec.templatePatch: expected a string"))),
    };
    let gens = spec
        .get("generators")
        .and_then(Value::as_array)
        .filter(|g| !g.is_empty())
        .ok_or_else(|| fail(at("spec.generators: at least one generator is required")))?;
    let inputs = &Inputs {
        appset_name: name,
        ..*inputs
    };
    let mut out: Vec<Value> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (i, g) in gens.iter().enumerate() {
        let path = format!("spec.generators[{i}]");
        let generated =
            generators::run(g, &path, &template, mode, inputs).map_err(|m| fail(at(&m)))?;
        for one in generated {
            let mut rendered = template::render(&one.template, &one.params, mode)
                .map_err(|m| fail(at(&format!("{path}: template: {m}"))))?;
            if let Some(p) = &patch {
                let text = template::render(&Value::String(p.clone()), &one.params, mode)
                    .map_err(|m| fail(at(&format!("{path}: templatePatch: {m}"))))?;
                let doc: Value = serde_saphyr::from_str(text.as_str().unwrap_or_default())
                    .map_err(|e| {
                        fail(at(&format!(
                            "{path}: templatePatch: not YAML after rendering: {}",
                            e.to_string().lines().next().unwrap_or("invalid")
                        )))
                    })?;
                merge_patch(&mut rendered, &doc);
            }
            let app = application(&rendered, group, namespace).map_err(|m| fail(at(&m)))?;
            let app_name = app
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if names.contains(&app_name) {
                return Err(fail(at(&format!(
                    "{path}: generates Application {app_name:?} a second time (names must be unique)"
                ))));
            }
            names.push(app_name);
            out.push(app);
        }
    }
    Ok(out)
}

/// RFC 7386 merge patch: maps merged key by key, `null` removes, anything else replaces
/// (Argo CD's strategic merge of an Application, whose fields have no merge keys).
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// `goTemplateOptions`: only `missingkey=…` is known (Argo CD passes them to Go's `Option`).
fn read_options(v: Option<&Value>) -> Result<bool, String> {
    let mut error = false;
    for o in v.and_then(Value::as_array).into_iter().flatten() {
        match o.as_str().unwrap_or("") {
            "missingkey=error" => error = true,
            "missingkey=zero" | "missingkey=default" | "missingkey=invalid" => error = false,
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(error)
}

/// A rendered template as the Application Argo CD creates: the template's `metadata`
/// (name, labels, annotations, finalizers) in the ApplicationSet's namespace, its `spec`.
fn application(rendered: &Value, group: &str, namespace: &str) -> Result<Value, String> {
    let meta = rendered
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        return Err("template.metadata.name: empty after rendering".into());
    }
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::String(name.into()));
    metadata.insert("namespace".into(), Value::String(namespace.into()));
    for key in ["labels", "annotations", "finalizers"] {
        if let Some(v) = meta.get(key).filter(|v| !v.is_null()) {
            metadata.insert(key.into(), v.clone());
        }
    }
    let mut app = Map::new();
    app.insert(
        "apiVersion".into(),
        Value::String(format!("{group}/v1alpha1")),
    );
    app.insert("kind".into(), Value::String("Application".into()));
    app.insert("metadata".into(), Value::Object(metadata));
    app.insert(
        "spec".into(),
        rendered.get("spec").cloned().unwrap_or(Value::Null),
    );
    Ok(Value::Object(app))
}

/// Argo CD's `SanitizeName`: lower case, anything but `a-z0-9.-` a `-`, at most 253
/// characters, without leading or trailing `-` and `.` (`normalize`, `nameNormalized`,
/// `basenameNormalized`).
pub fn normalize(name: &str) -> String {
    let lower: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cut: String = lower.chars().take(253).collect();
    cut.trim_matches(|c| c == '-' || c == '.').to_string()
}

/// The Argo CD cluster Secrets among `objects` (`argocd.argoproj.io/secret-type: cluster`) as
/// the clusters generator sees them: `name` and `server` (from `stringData`, else `data` in
/// base64), the Secret's labels and annotations. No other value of a Secret is read. `from`
/// names where they were read, for the one-line error about a malformed field.
pub fn clusters_from_secrets<'a>(
    objects: impl Iterator<Item = &'a Value>,
    from: &str,
) -> Result<Vec<Cluster>, AppSetError> {
    let mut out = Vec::new();
    for o in objects {
        let labels = o
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if o.get("kind").and_then(Value::as_str) != Some("Secret")
            || labels
                .get(plumb_core::clusters::SECRET_TYPE_LABEL)
                .and_then(Value::as_str)
                != Some(plumb_core::clusters::SECRET_TYPE_CLUSTER)
        {
            continue;
        }
        let secret = o
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let field = |key: &str| -> Result<String, AppSetError> {
            plumb_core::clusters::secret_string(o, key)
                .map(Option::unwrap_or_default)
                .map_err(|(field, reason)| {
                    AppSetError(format!("{from}: Secret {secret}: {field}: {reason}"))
                })
        };
        let server = field("server")?;
        if server.is_empty() {
            // A snapshot keeps Secrets without their values: never a cluster with no address.
            return Err(AppSetError(format!(
                "{from}: Secret {secret}: server is empty (a cluster Secret needs it; `plumb snapshot` saves Secrets without their values)"
            )));
        }
        out.push(Cluster {
            name: field("name")?,
            server,
            labels,
            annotations: o
                .pointer("/metadata/annotations")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        });
    }
    Ok(out)
}

/// The `repoURL`s of `appset`'s git generators, at any depth (a push to one of them may change
/// what it generates).
pub fn git_repo_urls(appset: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(url) = m
                    .get("git")
                    .and_then(|g| g.get("repoURL"))
                    .and_then(Value::as_str)
                    && !out.iter().any(|u| u == url)
                {
                    out.push(url.to_string());
                }
                m.values().for_each(|c| walk(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(g) = appset.pointer("/spec/generators") {
        walk(g, &mut out);
    }
    out
}
