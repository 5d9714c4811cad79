//! Rendering an Application source the way Argo CD's repo server does: a plain
//! directory (its YAML and JSON files, and its Jsonnet programs: [`crate::jsonnet`]), a
//! kustomization (natively, with source locations, or through the
//! kustomize binary), or a Helm chart (through `helm template`).
//!
//! Every rendered object carries the file and line that declared it; natively rendered
//! ones also carry, for every scalar, the place that set its value ([`Origin`]).
//!
//! What [`render`] does with a source, as Argo CD: detects Helm / Kustomize / Directory, applies
//! the directory rules (`directory.include/exclude`, recursion) and the Application's
//! kustomize parameters (served as an edited kustomization through an overlay `SourceFs`), and
//! renders natively where it can; otherwise it falls back to the kustomize or helm binary on a
//! materialized copy of the tree. With [`RenderOptions::plugins`] (`--plugins DIR`), a source
//! with `plugin:`, or one naming no type that a plugin discovers, is rendered by that config
//! management plugin ([`crate::plugin`]) instead.
//!
//! - **The kustomize binary gets only the directories the build reads**
//!   ([`crate::kustomize::build_dirs`]: the kustomization's and, recursively, those its
//!   `resources`/`bases`/`components`/plugin entries name). A reference leaving the repository —
//!   joined onto the kustomization directory's real path as kustomize joins it, or onto the path
//!   as written as a copy resolves it — is refused, as are entries with a `.git` component,
//!   `file://` bases, unreadable kustomizations and special files. When the source is a plain
//!   directory (`SourceFs::on_disk`) the binary runs in place once a walk of those directories
//!   found no symlink out of the repository; otherwise (a git revision, an edited
//!   kustomization) just those directories are written out. A walk stops after 100,000
//!   directories.
//! - External tools run against a deadline (`PLUMB_TOOL_TIMEOUT`, [`DEFAULT_TOOL_TIMEOUT`]
//!   120 s), with git (for kustomize's remote bases) limited to network protocols.
//! - `helm template` gets Argo CD's flags: release name (`helm.releaseName`, else the
//!   Application's name), `--namespace` (`helm.namespace`, else the destination's), value files,
//!   `values` / `valuesObject`, `--set`/`--set-string`, `--set-file` (`fileParameters`),
//!   `--include-crds` unless `skipCrds`, `--skip-schema-validation`, and
//!   `--kube-version`/`--api-versions` from the source's helm fields, else from
//!   [`RenderOptions::with_cluster`] (the cluster's version and API versions: `render`, `diff`
//!   and `doctor --cluster`, and the runner from its `ClusterApi`).
//! - **Multiple sources** (`spec.sources`, else `spec.source`, as Argo CD; plumb-core's
//!   `Application::sources`): the CLI and the runner fetch every source first, then render
//!   each that is not `ref`-only ([`is_ref_only`]) with [`render_fetched_with`]: `$NAME/path`
//!   value files are read from `refs[NAME]` (the `ref:` source's `SourceFs`) and written
//!   beside the chart.

use crate::kustomize::{self, KustomizeError};
use crate::source::{EntryKind, SourceFs, join};
use crate::{LoadError, Manifest};
use plumb_core::argo::{AppSource, DirectorySource, KustomizeSource};

use plumb_core::glob::PathGlob;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use plumb_core::object::Object;
pub use plumb_core::origin::{Origin, Origins};

/// How a source path is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceType {
    Directory,
    Kustomize,
    Helm,
    /// A config management plugin ([`crate::plugin`]).
    Plugin,
}

impl SourceType {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::Directory => "Directory",
            SourceType::Kustomize => "Kustomize",
            SourceType::Helm => "Helm",
            SourceType::Plugin => "Plugin",
        }
    }
}

/// Which kustomize implementation renders kustomizations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Renderer {
    /// plumb's own, with source locations; falls back to the binary for what it lacks.
    #[default]
    Native,
    /// `kustomize build`, else `kubectl kustomize` (no source locations).
    KustomizeBinary,
}

/// One rendered object.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedObject {
    /// The object and the origin of each of its scalars: JSON pointer → where its value was
    /// set; no origins when the renderer cannot tell (kustomize or helm binaries).
    pub object: Object,
    /// Repository-relative file that declared the object (for binary renders: the
    /// source path itself).
    pub file: String,
    /// 1-based line of the object's document in `file` (0 when unknown).
    pub line: usize,
}

impl RenderedObject {
    /// `file:line`, for messages.
    pub fn location(&self) -> String {
        if self.line == 0 {
            self.file.clone()
        } else {
            format!("{}:{}", self.file, self.line)
        }
    }

    /// Where the scalar at `pointer` (or the nearest declared parent) was set.
    pub fn declared_at(&self, pointer: &str) -> Option<Origin> {
        self.object.origins().get(pointer)
    }
}

/// The result of rendering one source.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub objects: Vec<RenderedObject>,
    pub source_type: SourceType,
    /// As Argo CD shows it: `HEAD (b5e2be1)`, or `working tree`.
    pub revision: String,
    /// Things the user should know (fallbacks, missing source locations).
    pub notes: Vec<String>,
}

/// How to render, beyond the source itself.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    pub renderer: Renderer,
    /// The Application's name: Helm's default release name, as in Argo CD.
    pub app_name: Option<String>,
    /// The Application's destination namespace: Helm's default release namespace.
    pub namespace: Option<String>,
    /// The destination cluster's version (`v1.31.0`), for `helm template --kube-version`
    /// when the source's `helm.kubeVersion` is empty (as Argo CD passes it); `None` offline.
    pub kube_version: Option<String>,
    /// The destination cluster's API versions (`apps/v1`, `apps/v1/Deployment`), for
    /// `--api-versions` when the source's `helm.apiVersions` is empty.
    pub api_versions: Vec<String>,
    /// The Application's project (`ARGOCD_APP_PROJECT_NAME` for a plugin).
    pub project: Option<String>,
    /// The config management plugins of `--plugins DIR`; `None`: plugins are refused.
    pub plugins: Option<std::sync::Arc<crate::plugin::Plugins>>,
    /// kustomize's build options (Argo CD's `kustomize.buildOptions`), for the kustomize
    /// binary: only `--enable-helm` ([`KUSTOMIZE_BUILD_OPTIONS`]), which inflates a
    /// kustomization's `helmCharts` with the `helm` on PATH.
    pub kustomize_build_options: Vec<String>,
    /// The chart cache a Helm chart's missing dependencies are fetched through (the
    /// repository cache's, [`crate::remote::RepoCache::charts`]); `None`: a dependency
    /// `charts/` lacks is an error (`file://` ones are still copied).
    pub charts: Option<std::sync::Arc<crate::chart::ChartCache>>,
}

impl RenderOptions {
    /// The destination cluster's version and API versions, as Argo CD passes them to
    /// `helm template`: `git_version` (`v1.36.3+k3s1`) as `1.36.3`, and every served
    /// `group/version` and `group/version/Kind` (`(group, version, kind)` triples; the core
    /// group as `v1`, `v1/Pod`).
    pub fn with_cluster<'a>(
        mut self,
        git_version: &str,
        kinds: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    ) -> Self {
        let v = git_version.trim().trim_start_matches('v');
        let v = v.split(['+', '-']).next().unwrap_or("");
        self.kube_version = (!v.is_empty()).then(|| v.to_string());
        let mut versions = std::collections::BTreeSet::new();
        for (group, version, kind) in kinds {
            let gv = if group.is_empty() {
                version.to_string()
            } else {
                format!("{group}/{version}")
            };
            versions.insert(format!("{gv}/{kind}"));
            versions.insert(gv);
        }
        self.api_versions = versions.into_iter().collect();
        self
    }

    /// The options an Application gives (its name and destination namespace: Helm's
    /// release name and namespace); none without one.
    pub fn for_app(app: Option<&plumb_core::argo::Application>, renderer: Renderer) -> Self {
        RenderOptions {
            renderer,
            app_name: app.map(|a| a.name.clone()),
            namespace: app.and_then(|a| a.destination_namespace.clone()),
            ..RenderOptions::default()
        }
    }
}

/// The sources of a multi-source Application that lend their files to `$NAME/…` value
/// files, by their `ref:` name.
pub type Refs<'a> = BTreeMap<String, &'a dyn SourceFs>;

/// A source's `ref:` name (multiple sources), when it has one.
pub fn ref_name(source: &AppSource) -> Option<&str> {
    source
        .extra
        .get("ref")
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty())
}

/// Whether a source only lends its files (`ref:` without `path` or `chart`): Argo CD does
/// not render it.
pub fn is_ref_only(source: &AppSource) -> bool {
    ref_name(source).is_some()
        && source.path.trim().is_empty()
        && source.chart.as_deref().is_none_or(|c| c.trim().is_empty())
}

/// Renders a fetched source: `source.path` of the repository at its revision. Paths in
/// errors name the repository (`dir/path/file`), not only the repository-relative file.
pub fn render_fetched(
    fetched: &crate::fetch::Fetched,
    source: &AppSource,
    opts: &RenderOptions,
) -> Result<Rendered, LoadError> {
    render_fetched_with(fetched, source, opts, &Refs::new())
}

/// [`render_fetched`] of one source of several: `$NAME/path` value files are read from
/// `refs[NAME]`.
pub fn render_fetched_with(
    fetched: &crate::fetch::Fetched,
    source: &AppSource,
    opts: &RenderOptions,
    refs: &Refs<'_>,
) -> Result<Rendered, LoadError> {
    let mut rendered = render_with(
        fetched.fs.as_ref(),
        &source.path,
        source,
        opts,
        refs,
        &fetched.commit,
    )
    .map_err(|mut e| {
        if e.file.is_relative() && fetched.dir != Path::new(".") {
            e.file = fetched.dir.join(&e.file);
        }
        e
    })?;
    if let Some(label) = &fetched.revision_label {
        rendered.revision = label.clone();
    }
    Ok(rendered)
}

/// Renders `path` (repository-relative) of `fs` as `source` says.
pub fn render(
    fs: &dyn SourceFs,
    path: &str,
    source: &AppSource,
    opts: &RenderOptions,
) -> Result<Rendered, LoadError> {
    render_with(fs, path, source, opts, &Refs::new(), "")
}

fn render_with(
    fs: &dyn SourceFs,
    path: &str,
    source: &AppSource,
    opts: &RenderOptions,
    refs: &Refs<'_>,
    commit: &str,
) -> Result<Rendered, LoadError> {
    let path = join("", path, path)?;
    match fs.kind(&path)? {
        Some(EntryKind::Dir) => {}
        Some(EntryKind::File) => return Err(fail(&path, "source path is a file, not a directory")),
        None => return Err(fail(&path, "source path does not exist at this revision")),
    }
    refuse_unsupported(source, &path, opts)?;
    let revision = fs.revision_label();
    let mut notes = Vec::new();
    // A config management plugin: named or discovered by `plugin:`, or discovered for a
    // source that names no type (Argo CD tries plugins before its own detection).
    if let Some(plugins) = &opts.plugins
        && (crate::plugin::source_plugin(source).is_some()
            || !crate::plugin::has_explicit_type(source))
    {
        let ctx = crate::plugin::RunContext {
            fs,
            path: &path,
            source,
            opts,
            commit,
        };
        if let Some(plugin) = crate::plugin::select(plugins, &ctx)? {
            let objects = crate::plugin::generate(plugin, &ctx, &mut notes)?;
            return Ok(Rendered {
                objects,
                source_type: SourceType::Plugin,
                revision,
                notes,
            });
        }
    }
    let source_type = detect(fs, &path, source)?;
    let objects = match source_type {
        SourceType::Directory => {
            let mut directory = source.directory.clone().unwrap_or_default();
            if !directory.jsonnet.is_empty() {
                let env = crate::jsonnet::build_env(source, opts);
                directory.jsonnet = crate::jsonnet::substitute(&directory.jsonnet, &env)
                    .map_err(|m| fail(&path, m))?;
            }
            render_directory(fs, &path, &directory)?
        }
        SourceType::Kustomize => {
            render_kustomize(fs, &path, source.kustomize.as_ref(), opts, &mut notes)?
        }
        SourceType::Helm => render_helm(fs, &path, source, opts, refs, &mut notes)?,
        // `detect` never says Plugin: plugins were tried above.
        SourceType::Plugin => return Err(fail(&path, "no config management plugin selected")),
    };
    Ok(Rendered {
        objects,
        source_type,
        revision,
        notes,
    })
}

pub(crate) fn fail(file: &str, message: impl Into<String>) -> LoadError {
    LoadError {
        file: PathBuf::from(file),
        line: None,
        column: None,
        message: message.into(),
    }
}

/// Source fields that Argo CD acts on and plumb does not (yet): a config management plugin
/// when no plugins were given ([`RenderOptions::plugins`]; with them, `plugin` beside another
/// type is Argo CD's `multiple application sources defined`), or a `directory`, `kustomize` or `helm` option plumb does not model. Each is an error naming
/// the field, never a render that ignores it: what Argo CD would render differently, or at
/// all, must not reach a compare or a sync (with automated prune, an empty render deletes the
/// app's objects). A field left at its default (`null`, `false`, `""`, `[]`, `{}`) changes
/// nothing and passes, as do the tool versions Argo CD selects a binary with
/// (`kustomize.version`, `helm.version`). (`directory.jsonnet` is modelled: the directory's
/// `*.jsonnet` programs are evaluated, [`crate::jsonnet`].)
fn refuse_unsupported(
    source: &AppSource,
    path: &str,
    opts: &RenderOptions,
) -> Result<(), LoadError> {
    if crate::plugin::source_plugin(source).is_some() {
        if opts.plugins.is_none() {
            return Err(fail(
                path,
                "spec.source.plugin: a config management plugin renders this source, and no \
                 --plugins directory was given; refusing to render the source (an empty \
                 render could prune the app)",
            ));
        }
        // As Argo CD: one type per source.
        let others: Vec<&str> = [
            ("Kustomize", source.kustomize.is_some()),
            ("Helm", source.helm.is_some()),
            ("Directory", source.directory.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        if !others.is_empty() {
            return Err(fail(
                path,
                format!(
                    "multiple application sources defined: {},Plugin",
                    others.join(",")
                ),
            ));
        }
    }
    let is_default = |v: &Value| match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    };
    let options = [
        ("directory", source.directory.as_ref().map(|d| &d.extra), ""),
        (
            "kustomize",
            source.kustomize.as_ref().map(|k| &k.extra),
            "version",
        ),
        ("helm", source.helm.as_ref().map(|h| &h.extra), "version"),
    ];
    for (kind, extra, passes) in options {
        let unsupported = extra
            .into_iter()
            .flatten()
            .find(|(key, value)| key.as_str() != passes && !is_default(value));
        if let Some((key, _)) = unsupported {
            return Err(fail(
                path,
                format!(
                    "spec.source.{kind}.{key}: not supported by plumb yet; refusing to render \
                     the source rather than render it otherwise than Argo CD"
                ),
            ));
        }
    }
    Ok(())
}

/// Argo CD's detection: Helm when `helm` parameters are given or a `Chart.yaml` is
/// present, Kustomize when a kustomization file is, else a directory of manifests.
fn detect(fs: &dyn SourceFs, path: &str, source: &AppSource) -> Result<SourceType, LoadError> {
    if source.helm.is_some() || fs.kind(&child(path, "Chart.yaml"))? == Some(EntryKind::File) {
        return Ok(SourceType::Helm);
    }
    if source.kustomize.is_some() || kustomize::is_kustomization(fs, path)? {
        return Ok(SourceType::Kustomize);
    }
    Ok(SourceType::Directory)
}

fn child(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

// ---------------------------------------------------------------------------------------
// Directories

/// The manifest files and Jsonnet programs of a directory source, in Argo CD's order (one
/// sorted list, depth-first), filtered by `recurse`, `include` and `exclude`.
fn directory_files(
    fs: &dyn SourceFs,
    root: &str,
    opts: &DirectorySource,
) -> Result<Vec<String>, LoadError> {
    let glob = |field: &str, pattern: &str| -> Result<Option<PathGlob>, LoadError> {
        if pattern.is_empty() {
            return Ok(None);
        }
        PathGlob::new(pattern).map(Some).map_err(|e| LoadError {
            file: PathBuf::from(root),
            line: None,
            column: None,
            message: format!("spec.source.directory.{field}: {e}"),
        })
    };
    let include = glob("include", &opts.include)?;
    let exclude = glob("exclude", &opts.exclude)?;
    let mut out = Vec::new();
    let mut stack = vec![root.to_string()];
    while let Some(dir) = stack.pop() {
        let mut subdirs = Vec::new();
        for (name, kind) in fs.list(&dir)? {
            let full = child(&dir, &name);
            match kind {
                EntryKind::Dir if opts.recurse && !name.starts_with('.') => subdirs.push(full),
                EntryKind::File
                    if crate::is_manifest_file(Path::new(&name))
                        || crate::jsonnet::is_program(&name) =>
                {
                    let rel = full
                        .strip_prefix(root)
                        .map(|r| r.trim_start_matches('/'))
                        .unwrap_or(&full);
                    if exclude.as_ref().is_some_and(|g| g.is_match(rel)) {
                        continue;
                    }
                    if include.as_ref().is_some_and(|g| !g.is_match(rel)) {
                        continue;
                    }
                    out.push(full);
                }
                _ => {}
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    out.sort();
    Ok(out)
}

fn render_directory(
    fs: &dyn SourceFs,
    root: &str,
    opts: &DirectorySource,
) -> Result<Vec<RenderedObject>, LoadError> {
    let files = directory_files(fs, root, opts)?;
    let timeout = crate::seconds_from_env("PLUMB_TOOL_TIMEOUT", DEFAULT_TOOL_TIMEOUT);
    let parsed = plumb_core::parallel::map_coarse(&files, |f| {
        if crate::jsonnet::is_program(f) {
            crate::jsonnet::render_file(fs, root, f, &opts.jsonnet, timeout)
        } else {
            kustomize::load_file(fs, f).map(|r| r.into_iter().map(from_kustomize).collect())
        }
    });
    let mut out = Vec::new();
    for r in parsed {
        out.extend(r?);
    }
    Ok(out)
}

fn from_kustomize(r: kustomize::Rendered) -> RenderedObject {
    RenderedObject {
        object: r.object,
        file: r.file,
        line: r.line,
    }
}

// ---------------------------------------------------------------------------------------
// Kustomize

fn render_kustomize(
    fs: &dyn SourceFs,
    path: &str,
    params: Option<&KustomizeSource>,
    opts: &RenderOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<RenderedObject>, LoadError> {
    let renderer = opts.renderer;
    let overlay;
    let fs: &dyn SourceFs = match params {
        Some(p) if !is_empty_params(p) => {
            overlay = with_app_parameters(fs, path, p)?;
            &overlay
        }
        _ => fs,
    };
    if renderer == Renderer::Native {
        let options = kustomize::BuildOptions {
            helm: opts
                .kustomize_build_options
                .iter()
                .any(|o| o == "--enable-helm")
                .then(|| kustomize::HelmOptions {
                    command: which("helm"),
                    charts: opts.charts.clone(),
                }),
        };
        match kustomize::build_with(fs, path, &options) {
            Ok(objects) => return Ok(objects.into_iter().map(from_kustomize).collect()),
            Err(KustomizeError::Load(e)) => return Err(e),
            Err(KustomizeError::Unsupported { file, field }) => {
                notes.push(format!(
                    "{file}: `{field}` is not implemented by plumb's kustomize; rendered with the kustomize binary, so source locations are unavailable for this source"
                ));
                return kustomize_binary(fs, path, Some((&file, &field)), opts);
            }
        }
    }
    notes.push("rendered with the kustomize binary: source locations are unavailable".into());
    kustomize_binary(fs, path, None, opts)
}

fn is_empty_params(p: &KustomizeSource) -> bool {
    *p == KustomizeSource::default()
}

/// Argo CD applies `spec.source.kustomize` by editing the kustomization before the build
/// (`kustomize edit set …`); plumb does the same edit on a copy served in place of the file.
fn with_app_parameters<'a>(
    fs: &'a dyn SourceFs,
    path: &str,
    p: &KustomizeSource,
) -> Result<Overlay<'a>, LoadError> {
    let file = kustomize::FILE_NAMES
        .iter()
        .map(|n| child(path, n))
        .find(|f| matches!(fs.kind(f), Ok(Some(EntryKind::File))))
        .ok_or_else(|| {
            fail(
                path,
                "spec.source.kustomize is set but there is no kustomization",
            )
        })?;
    let bytes = fs.read(&file)?;
    let text = String::from_utf8(bytes).map_err(|_| fail(&file, "not valid UTF-8"))?;
    // Read as kustomize reads it (`nameprefix` is `namePrefix`), so each edit below sets
    // the field kustomize's build will use, as `kustomize edit` does.
    let mut k = kustomize::read_kustomization(&text, &file)?;
    let Some(m) = k.as_object_mut() else {
        return Err(fail(&file, "kustomization is not a mapping"));
    };
    let set = |m: &mut serde_json::Map<String, Value>, key: &str, v: &str| {
        if !v.is_empty() {
            m.insert(key.into(), Value::String(v.into()));
        }
    };
    set(m, "namePrefix", &p.name_prefix);
    set(m, "nameSuffix", &p.name_suffix);
    set(m, "namespace", &p.namespace);
    for (field, entries) in [
        ("commonLabels", &p.common_labels),
        ("commonAnnotations", &p.common_annotations),
    ] {
        if entries.is_empty() {
            continue;
        }
        let slot = m
            .entry(field)
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(obj) = slot.as_object_mut() {
            for (k, v) in entries {
                obj.insert(k.clone(), Value::String(v.clone()));
            }
        }
    }
    for image in &p.images {
        upsert_by_name(m, "images", parse_image_param(image));
    }
    for r in &p.replicas {
        let count = match &r.count {
            Value::String(s) => s
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| fail(&file, format!("replicas count {s:?} is not a number")))?,
            v => v.clone(),
        };
        upsert_by_name(
            m,
            "replicas",
            serde_json::json!({"name": r.name, "count": count}),
        );
    }
    for (field, extra) in [
        ("patches", &p.patches),
        ("components", &{
            p.components
                .iter()
                .map(|c| Value::String(c.clone()))
                .collect::<Vec<_>>()
        }),
    ] {
        if extra.is_empty() {
            continue;
        }
        let slot = m.entry(field).or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = slot.as_array_mut() {
            list.extend(extra.iter().cloned());
        }
    }
    let text = serde_json::to_string_pretty(&k).map_err(|e| fail(&file, e.to_string()))?;
    Ok(Overlay {
        inner: fs,
        file,
        bytes: text.into_bytes(),
    })
}

/// `kustomize edit set image` syntax: `name=newName:tag`, `name:tag`, `name@digest`.
fn parse_image_param(s: &str) -> Value {
    let (name, target) = match s.split_once('=') {
        Some((n, t)) => (n.to_string(), t.to_string()),
        None => (String::new(), s.to_string()),
    };
    let (base, digest) = match target.split_once('@') {
        Some((b, d)) => (b.to_string(), Some(d.to_string())),
        None => (target.clone(), None),
    };
    // A tag follows the last ':' after the last '/' (a registry port is not a tag).
    let slash = base.rfind('/').map_or(0, |i| i + 1);
    let (image, tag) = match base[slash..].rfind(':') {
        Some(i) => (
            base[..slash + i].to_string(),
            Some(base[slash + i + 1..].to_string()),
        ),
        None => (base.clone(), None),
    };
    let mut out = serde_json::Map::new();
    if name.is_empty() {
        out.insert("name".into(), Value::String(image));
    } else {
        out.insert("name".into(), Value::String(name.clone()));
        if image != name {
            out.insert("newName".into(), Value::String(image));
        }
    }
    if let Some(t) = tag {
        out.insert("newTag".into(), Value::String(t));
    }
    if let Some(d) = digest {
        out.insert("digest".into(), Value::String(d));
    }
    Value::Object(out)
}

fn upsert_by_name(m: &mut serde_json::Map<String, Value>, field: &str, entry: Value) {
    let slot = m.entry(field).or_insert_with(|| Value::Array(Vec::new()));
    let Some(list) = slot.as_array_mut() else {
        return;
    };
    let name = entry.get("name").cloned();
    match list.iter_mut().find(|e| e.get("name") == name.as_ref()) {
        Some(existing) => *existing = entry,
        None => list.push(entry),
    }
}

/// A source with one file replaced.
struct Overlay<'a> {
    inner: &'a dyn SourceFs,
    file: String,
    bytes: Vec<u8>,
}

impl SourceFs for Overlay<'_> {
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, LoadError> {
        self.inner.kind(path)
    }
    fn list(&self, dir: &str) -> Result<Vec<(String, EntryKind)>, LoadError> {
        self.inner.list(dir)
    }
    fn read(&self, path: &str) -> Result<Vec<u8>, LoadError> {
        if path == self.file {
            Ok(self.bytes.clone())
        } else {
            self.inner.read(path)
        }
    }
    fn revision_label(&self) -> String {
        self.inner.revision_label()
    }
    fn real_path(&self, path: &str) -> Result<Option<String>, LoadError> {
        self.inner.real_path(path)
    }
    fn executable(&self, path: &str) -> Result<bool, LoadError> {
        self.inner.executable(path)
    }
}

/// The first of `kustomize` and `kubectl` on PATH.
fn kustomize_command() -> Option<Command> {
    if let Some(p) = which("kustomize") {
        let mut c = Command::new(p);
        c.arg("build");
        return Some(c);
    }
    which("kubectl").map(|p| {
        let mut c = Command::new(p);
        c.arg("kustomize");
        c
    })
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The kustomize build options plumb passes on (Argo CD's `kustomize.buildOptions`): only
/// `--enable-helm`. Others (`--load-restrictor LoadRestrictionsNone` would read outside the
/// kustomization) are refused where they are given.
pub const KUSTOMIZE_BUILD_OPTIONS: &[&str] = &["--enable-helm"];

/// `text` (Argo CD's `kustomize.buildOptions`, words split as a shell splits them) as
/// options plumb passes on, or an error naming the first it does not.
pub fn kustomize_build_options(text: &str) -> Result<Vec<String>, String> {
    text.split_whitespace()
        .map(|o| {
            if KUSTOMIZE_BUILD_OPTIONS.contains(&o) {
                Ok(o.to_string())
            } else {
                Err(format!(
                    "kustomize build option {o:?} is not supported (supported: {})",
                    KUSTOMIZE_BUILD_OPTIONS.join(", ")
                ))
            }
        })
        .collect()
}

fn kustomize_binary(
    fs: &dyn SourceFs,
    path: &str,
    unsupported: Option<(&str, &str)>,
    opts: &RenderOptions,
) -> Result<Vec<RenderedObject>, LoadError> {
    let Some(mut cmd) = kustomize_command() else {
        return Err(match unsupported {
            Some((file, field)) => fail(
                file,
                format!(
                    "`{field}` is not supported by plumb's native kustomize, and neither kustomize nor kubectl is on PATH to render it"
                ),
            ),
            None => fail(path, "neither kustomize nor kubectl is on PATH"),
        });
    };
    // Only the directories the build reads: a plain directory is read in place, once
    // they are known to hold no symlink out of the repository; anything else (a git
    // revision, a source with an edited kustomization) has just those written out.
    let dirs = kustomize::build_dirs(fs, path)?;
    let tree;
    let root = match fs.on_disk() {
        Some(root) => {
            walk_tree(fs, &dirs, &mut |_, _| Ok(()))?;
            root
        }
        None => {
            tree = Materialized::of(fs, &dirs)?;
            tree.root.as_path()
        }
    };
    for o in &opts.kustomize_build_options {
        cmd.arg(o);
        // kustomize runs `helm` by name; the one plumb found on PATH, by its path.
        if o == "--enable-helm"
            && let Some(helm) = which("helm")
        {
            cmd.arg("--helm-command").arg(helm);
        }
    }
    cmd.arg(root.join(path));
    // Remote bases over the network only: git would clone a local path or file:// URL.
    cmd.env("GIT_ALLOW_PROTOCOL", "https:ssh:git:http");
    let out = run(cmd, path)?;
    parse_tool_output(&out, path)
}

/// The default deadline of one external renderer run (`PLUMB_TOOL_TIMEOUT` seconds
/// overrides it): a stalled tool (say, kustomize reading a FIFO) must not hang a render.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) fn run(mut cmd: Command, path: &str) -> Result<String, LoadError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let (status, stdout, stderr) = crate::remote::output_within(
        &mut cmd,
        crate::seconds_from_env("PLUMB_TOOL_TIMEOUT", DEFAULT_TOOL_TIMEOUT),
    )
    .map_err(|e| {
        // A timeout does not name the program; every other error does.
        if e.starts_with("timed out") {
            fail(path, format!("{program} {e}"))
        } else {
            fail(path, e)
        }
    })?;
    if !status.success() {
        let reason = tool_error_line(&String::from_utf8_lossy(&stderr));
        return Err(fail(path, format!("{program} failed: {reason}")));
    }
    String::from_utf8(stdout).map_err(|_| fail(path, format!("{program} printed non-UTF-8")))
}

/// What a tool's standard error says, in one line: its first line that is not a warning,
/// without `Error: `; kubectl's log form (`E1204 … "command failed" err="…"`, or `err=<` and an
/// indented block) reduced to the message.
fn tool_error_line(stderr: &str) -> String {
    let mut lines = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("# Warning:"));
    let Some(first) = lines.next() else {
        return "failed".into();
    };
    if let Some((_, rest)) = first.split_once("\"command failed\" err=") {
        if rest == "<" {
            let block: Vec<&str> = lines.take_while(|l| *l != ">").collect();
            return block.join(" ");
        }
        let quoted = rest.trim_start_matches('"').trim_end_matches('"');
        return quoted.replace("\\\"", "\"");
    }
    first.trim_start_matches("Error: ").to_string()
}

fn parse_tool_output(text: &str, path: &str) -> Result<Vec<RenderedObject>, LoadError> {
    let ms: Vec<Manifest> = crate::parse_str(text, Path::new(path))?;
    Ok(ms
        .into_iter()
        .map(|m| RenderedObject {
            object: m.object.into(),
            file: path.to_string(),
            line: 0,
        })
        .collect())
}

// ---------------------------------------------------------------------------------------
// Helm

fn render_helm(
    fs: &dyn SourceFs,
    path: &str,
    source: &AppSource,
    opts: &RenderOptions,
    refs: &Refs<'_>,
    notes: &mut Vec<String>,
) -> Result<Vec<RenderedObject>, LoadError> {
    let helm = which("helm").ok_or_else(|| {
        fail(
            path,
            "this source is a Helm chart and `helm` is not on PATH (plumb renders charts with `helm template`)",
        )
    })?;
    let params = source.helm.clone().unwrap_or_default();
    let tree = Materialized::of(fs, &[String::new()])?;
    let chart_dir = tree.root.join(path);
    // What `helm dependency build` would fetch (Argo CD runs it when charts/ lacks one).
    notes.extend(crate::chart::deps::build_missing(
        &tree.root,
        path,
        opts.charts.as_deref(),
    )?);
    let mut cmd = Command::new(helm);
    // Argo CD names the release after the Application and puts it in the destination
    // namespace unless the helm parameters say otherwise.
    let release = [Some(&params.release_name), opts.app_name.as_ref()]
        .into_iter()
        .flatten()
        .find(|s| !s.is_empty())
        .cloned()
        .unwrap_or_else(|| "release-name".to_string());
    if !valid_release_name(&release) {
        return Err(fail(
            path,
            format!(
                "helm release name {release:?} is not a valid release name (lower-case letters, digits, '-' and '.', at most 53)"
            ),
        ));
    }
    cmd.arg("template").arg(&release).arg(&chart_dir);
    if let Some(ns) = [Some(&params.namespace), opts.namespace.as_ref()]
        .into_iter()
        .flatten()
        .find(|s| !s.is_empty())
    {
        cmd.arg("--namespace").arg(ns);
    }
    for (i, vf) in params.value_files.iter().enumerate() {
        // `$NAME/path`: a file of the source with `ref: NAME`, from its repository's root.
        if let Some(rest) = vf.strip_prefix('$') {
            let (name, file) = rest.split_once('/').unwrap_or((rest, ""));
            let Some(other) = refs.get(name) else {
                return Err(fail(
                    path,
                    format!("helm value file {vf}: no source has ref: {name}"),
                ));
            };
            let file = join("", file, vf)?;
            if other.kind(&file)? != Some(EntryKind::File) {
                if params.ignore_missing_value_files {
                    continue;
                }
                return Err(fail(
                    path,
                    format!("helm value file {vf} does not exist in the source with ref: {name}"),
                ));
            }
            let bytes = other.read(&file)?;
            let f = tree.root.join(format!(".plumb-ref-values-{i}.yaml"));
            std::fs::write(&f, bytes)
                .map_err(|e| fail(path, format!("cannot write values: {e}")))?;
            cmd.arg("--values").arg(f);
            continue;
        }
        let joined = join(path, vf, path)?;
        if fs.kind(&joined)?.is_none() {
            if params.ignore_missing_value_files {
                continue;
            }
            return Err(fail(&joined, "helm value file does not exist"));
        }
        cmd.arg("--values").arg(tree.root.join(&joined));
    }
    let inline = match (&params.values_object, params.values.trim()) {
        (Some(v), _) => Some(serde_json::to_string(v).unwrap_or_default()),
        (None, "") => None,
        (None, v) => Some(v.to_string()),
    };
    if let Some(values) = inline {
        let f = tree.root.join(".plumb-inline-values.yaml");
        std::fs::write(&f, values).map_err(|e| fail(path, format!("cannot write values: {e}")))?;
        cmd.arg("--values").arg(f);
    }
    for p in &params.parameters {
        let flag = if p.force_string {
            "--set-string"
        } else {
            "--set"
        };
        cmd.arg(flag)
            .arg(format!("{}={}", p.name, escape_set_value(&p.value)));
    }
    for p in &params.file_parameters {
        let joined = join(path, &p.path, path)?;
        if fs.kind(&joined)? != Some(EntryKind::File) {
            return Err(fail(&joined, "helm fileParameters file does not exist"));
        }
        cmd.arg("--set-file")
            .arg(format!("{}={}", p.name, tree.root.join(&joined).display()));
    }
    if !params.skip_crds {
        cmd.arg("--include-crds");
    }
    if params.skip_schema_validation {
        cmd.arg("--skip-schema-validation");
    }
    let kube_version = Some(&params.kube_version)
        .filter(|v| !v.is_empty())
        .or(opts.kube_version.as_ref());
    if let Some(v) = kube_version {
        cmd.arg("--kube-version").arg(v);
    }
    let api_versions = if params.api_versions.is_empty() {
        &opts.api_versions
    } else {
        &params.api_versions
    };
    for v in api_versions {
        cmd.arg("--api-versions").arg(v);
    }
    notes.push("rendered with `helm template`: source locations are unavailable".into());
    let out = run(cmd, path)?;
    parse_tool_output(&out, path)
}

/// Whether `name` is a release name helm accepts (lower-case letters, digits, `-` and `.`, a
/// letter or digit at each end, at most 53 characters): anything else — an option such as
/// `--post-renderer=…` above all — is refused before it reaches helm's command line.
pub(crate) fn valid_release_name(name: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    !name.is_empty()
        && name.len() <= 53
        && name.chars().all(ok_char)
        && edge(name.chars().next())
        && edge(name.chars().last())
}

/// A `--set` value as Argo CD passes it: commas escaped (so `a,b` stays one value) unless
/// the value is a `{…}` list.
fn escape_set_value(v: &str) -> String {
    if v.starts_with('{') && v.ends_with('}') {
        v.to_string()
    } else {
        v.replace(',', "\\,")
    }
}

// ---------------------------------------------------------------------------------------
// Materializing a source for external tools

/// The most directories one walk of a source's subtrees enters ([`walk_tree`]).
const MAX_WALK_ENTRIES: usize = 100_000;

/// Visits every entry of the subtrees `dirs` (repository paths; `""` is the whole tree),
/// directories before what they hold; a symlinked directory that leads back to one of its
/// own ancestors is not entered again. Listing refuses a symlink that leaves the
/// repository, so a walk that succeeds proves the subtrees read nothing outside it.
/// Symlinks can make the paths to one directory many (2^n for n links that each lead to
/// the next level twice): past `MAX_WALK_ENTRIES` (100,000) directories the walk is an error.
pub fn walk_tree(
    fs: &dyn SourceFs,
    dirs: &[String],
    visit: &mut dyn FnMut(&str, EntryKind) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    walk_tree_within(fs, dirs, MAX_WALK_ENTRIES, visit)
}

/// [`walk_tree`] entering at most `limit` directories.
fn walk_tree_within(
    fs: &dyn SourceFs,
    dirs: &[String],
    limit: usize,
    visit: &mut dyn FnMut(&str, EntryKind) -> Result<(), LoadError>,
) -> Result<(), LoadError> {
    // Each directory with the real paths of itself and its ancestors.
    let mut stack: Vec<(String, Vec<String>)> =
        dirs.iter().rev().map(|d| (d.clone(), Vec::new())).collect();
    let mut budget = limit;
    while let Some((dir, mut chain)) = stack.pop() {
        budget = budget.checked_sub(1).ok_or_else(|| {
            fail(
                &dir,
                format!("more than {limit} directories to walk (symlinks leading to the same ones many times?)"),
            )
        })?;
        let real = fs.real_path(&dir)?.unwrap_or_else(|| dir.clone());
        if chain.contains(&real) {
            continue;
        }
        chain.push(real);
        if !dir.is_empty() {
            visit(&dir, EntryKind::Dir)?;
        }
        for (name, kind) in fs.list(&dir)? {
            let rel = child(&dir, &name);
            match kind {
                EntryKind::Dir => stack.push((rel, chain.clone())),
                EntryKind::File => visit(&rel, EntryKind::File)?,
            }
        }
    }
    Ok(())
}

/// A source's files written to a private temporary directory, removed on drop. External
/// renderers see exactly the revision's files (never the work tree) and nothing outside.
pub(crate) struct Materialized {
    pub(crate) root: PathBuf,
}

impl Materialized {
    /// The subtrees `dirs` of the source (`""` for all of it), written out.
    pub(crate) fn of(fs: &dyn SourceFs, dirs: &[String]) -> Result<Materialized, LoadError> {
        Materialized::with_modes(fs, dirs, false)
    }

    /// [`Materialized::of`], executable files made `0755` when `modes` (else every file is
    /// written with the default mode).
    pub(crate) fn with_modes(
        fs: &dyn SourceFs,
        dirs: &[String],
        modes: bool,
    ) -> Result<Materialized, LoadError> {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("plumb-src-{}-{n}", std::process::id()));
        let tree = Materialized { root };
        let io = |e: std::io::Error| fail(&tree.root.display().to_string(), e.to_string());
        std::fs::create_dir_all(&tree.root).map_err(io)?;
        walk_tree(fs, dirs, &mut |rel, kind| {
            let dest = tree.root.join(rel);
            match kind {
                EntryKind::Dir => std::fs::create_dir_all(&dest).map_err(io),
                EntryKind::File => {
                    if let Some(parent) = dest.parent() {
                        std::fs::create_dir_all(parent).map_err(io)?;
                    }
                    std::fs::write(&dest, fs.read(rel)?).map_err(io)?;
                    if modes && fs.executable(rel)? {
                        use std::os::unix::fs::PermissionsExt;
                        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))
                            .map_err(io)?;
                    }
                    Ok(())
                }
            }
        })?;
        Ok(tree)
    }
}

impl Drop for Materialized {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_error_is_one_line_of_what_it_said() {
        assert_eq!(tool_error_line("Error: no such chart\n"), "no such chart");
        assert_eq!(
            tool_error_line(
                "# Warning: 'vars' is deprecated.\nE1204 23:44:36.290687 1549 run.go:72] \"command failed\" err=\"var 'X' cannot be mapped\"\n"
            ),
            "var 'X' cannot be mapped"
        );
        assert_eq!(
            tool_error_line(
                "E1204 23:44:36.223956 1543 run.go:72] \"command failed\" err=<\n\ttrouble configuring builtin HelmChartInflationGenerator with config: `\n\tname: mini\n\t`: must specify --enable-helm\n >\n"
            ),
            "trouble configuring builtin HelmChartInflationGenerator with config: ` name: mini `: must specify --enable-helm"
        );
        assert_eq!(tool_error_line(""), "failed");
    }

    #[test]
    fn only_known_kustomize_build_options_pass() {
        assert_eq!(
            kustomize_build_options(" --enable-helm ").unwrap(),
            ["--enable-helm"]
        );
        assert_eq!(kustomize_build_options("").unwrap(), Vec::<String>::new());
        let e = kustomize_build_options("--enable-helm --load-restrictor LoadRestrictionsNone")
            .unwrap_err();
        assert!(e.contains("\"--load-restrictor\" is not supported"), "{e}");
    }

    #[test]
    fn directory_sources_accept_generate_name_hooks_and_kustomize_refuses_them() {
        let dir = std::env::temp_dir().join(format!("plumb-gen-hook-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("k")).expect("mkdir");
        let hook = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\n  annotations:\n    argocd.argoproj.io/hook: PreSync\nspec: {}\n";
        let plain = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: cm-\n";
        std::fs::write(dir.join("hook.yaml"), hook).expect("write");
        std::fs::write(dir.join("k/hook.yaml"), hook).expect("write");
        std::fs::write(dir.join("k/kustomization.yaml"), "resources: [hook.yaml]\n")
            .expect("write");
        let fs = crate::source::open_source(&dir, None).expect("open");
        let objects = crate::kustomize::load_file(fs.as_ref(), "hook.yaml").expect("a hook");
        assert_eq!(objects[0].object["metadata"]["generateName"], "migrate-");
        std::fs::write(dir.join("hook.yaml"), plain).expect("write");
        let err = crate::kustomize::load_file(fs.as_ref(), "hook.yaml").expect_err("not a hook");
        assert!(err.to_string().contains("missing metadata.name"), "{err}");
        let err = crate::kustomize::build(fs.as_ref(), "k").expect_err("kustomize refuses");
        assert!(err.to_string().contains("missing metadata.name"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// What Argo CD would render and plumb cannot is an error naming the file or field, never
    /// a render without it: a plugin, an option plumb lacks. A directory's Jsonnet programs
    /// are rendered with the YAML beside them.
    #[test]
    fn a_source_plumb_cannot_render_whole_is_refused_by_name() {
        use crate::source::tests::{TempDir, write};
        let dir = TempDir::new("refused");
        let root = dir.path();
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";
        write(root, "app/a.yaml", cm);
        write(
            root,
            "app/nested/guestbook.jsonnet",
            "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'g' } }",
        );
        write(root, "app/lib/util.libsonnet", "{}");
        write(root, "jsonnet/main.jsonnet", "[]");
        let fs = crate::source::open_source(root, None).expect("open");
        let source = |json: Value| -> AppSource {
            let mut s = serde_json::json!({"repoURL": "file:///repo"});
            s.as_object_mut()
                .unwrap()
                .extend(json.as_object().unwrap().clone());
            serde_json::from_value(s).expect("a source")
        };
        let render_err = |path: &str, src: Value| {
            render(fs.as_ref(), path, &source(src), &RenderOptions::default())
                .expect_err("refused")
                .to_string()
        };
        let renders = |path: &str, src: Value| {
            render(fs.as_ref(), path, &source(src), &RenderOptions::default())
                .expect("renders")
                .objects
                .len()
        };

        // A directory whose one program yields no object renders nothing, as in Argo CD.
        assert_eq!(renders("jsonnet", serde_json::json!({})), 0);
        // Recursing finds the nested program; excluding it renders the rest; libsonnet is
        // only ever imported, and without recurse the subdirectory is not read.
        assert_eq!(
            renders("app", serde_json::json!({"directory": {"recurse": true}})),
            2
        );
        let exclude = serde_json::json!({"directory": {"recurse": true, "exclude": "*.jsonnet",
            "jsonnet": {"tlas": [{"name": "x", "value": "1"}]}}});
        assert_eq!(renders("app", exclude), 1);
        assert_eq!(
            renders("app", serde_json::json!({"directory": {"jsonnet": {}}})),
            1
        );

        // A config management plugin, by name or by discovery (`plugin: {}`).
        for plugin in [serde_json::json!({"name": "cmp"}), serde_json::json!({})] {
            let e = render_err("app", serde_json::json!({"plugin": plugin}));
            assert!(
                e.starts_with("app: spec.source.plugin: a config management plugin renders")
                    && e.contains("no --plugins directory was given"),
                "{e}"
            );
        }
        // An option plumb does not model is named; left at its default, or a tool version, it
        // changes nothing.
        let e = render_err("app", serde_json::json!({"helm": {"skipTests": true}}));
        assert!(
            e.starts_with("app: spec.source.helm.skipTests: not supported"),
            "{e}"
        );
        let e = render_err(
            "app",
            serde_json::json!({"kustomize": {"kubeVersion": "1.30"}}),
        );
        assert!(
            e.contains("spec.source.kustomize.kubeVersion: not supported"),
            "{e}"
        );
        let e = render_err(
            "app",
            serde_json::json!({"directory": {"future": {"a": 1}}}),
        );
        assert!(
            e.contains("spec.source.directory.future: not supported"),
            "{e}"
        );
        let defaults = serde_json::json!({"directory": {"future": null, "other": false},
            "kustomize": {"version": "v5.4.0", "ignoreMissingComponents": false}});
        let e = render_err("app", defaults);
        // `kustomize:` makes the source a kustomization; its options passed, so the error is
        // the missing kustomization file, not an option.
        assert!(!e.contains("not supported"), "{e}");
    }

    /// A kustomization plumb renders with the kustomize binary (`buildMetadata`; its `vars`
    /// are native since), over a base two
    /// directories away, next to an unrelated directory holding a symlink that leaves the
    /// repository.
    fn fallback_tree(root: &Path) {
        use crate::source::tests::{link, write};
        write(
            root,
            "apps/web/kustomization.yaml",
            "resources:\n- ../../base\nbuildMetadata: [managedByLabel]\nvars:\n- name: SVC\n  objref:\n    kind: Service\n    name: web\n    apiVersion: v1\n",
        );
        write(
            root,
            "base/kustomization.yaml",
            "resources:\n- service.yaml\n- configmap.yaml\n",
        );
        write(
            root,
            "base/service.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n",
        );
        write(
            root,
            "base/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  annotations:\n    url: http://$(SVC)\ndata:\n  revision: one\n",
        );
        write(root, "unrelated/notes.txt", "not read by the build\n");
        link(root, "unrelated/passwd", "/etc/passwd");
    }

    fn kubectl_kustomize(dir: &Path) -> Vec<Value> {
        let out = Command::new("kubectl")
            .arg("kustomize")
            .arg(dir)
            .output()
            .expect("kubectl kustomize (the oracle) runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        crate::parse_str(&String::from_utf8_lossy(&out.stdout), Path::new("-"))
            .expect("kubectl output parses")
            .into_iter()
            .map(|m| m.object)
            .collect()
    }

    #[test]
    fn kustomize_fallback_of_a_git_revision_writes_out_only_the_build_dirs() {
        use crate::source::tests::{TempDir, commit_all, git, write};
        let repo = TempDir::new("fallback-git");
        git(repo.path(), &["init", "-q"]);
        fallback_tree(repo.path());
        let expected = kubectl_kustomize(&repo.path().join("apps/web"));
        assert!(
            expected
                .iter()
                .any(|o| o["metadata"]["annotations"]["url"] == "http://web"),
            "the oracle substitutes the var: {expected:?}"
        );
        commit_all(repo.path(), "fallback tree");
        // The work tree changes after the commit: the render reads the revision.
        write(repo.path(), "base/configmap.yaml", "not: [yaml");
        let fs = crate::source::GitSource::open(repo.path(), Some("HEAD")).expect("open");
        assert_eq!(
            kustomize::build_dirs(&fs, "apps/web").expect("dirs"),
            vec!["apps/web".to_string(), "base".to_string()]
        );
        // The whole tree cannot be written out (its escaping symlink is refused), the
        // build's directories can.
        assert!(Materialized::of(&fs, &[String::new()]).is_err());
        let out = render(
            &fs,
            "apps/web",
            &AppSource::default(),
            &RenderOptions::default(),
        )
        .expect("rendered by the kustomize binary");
        assert!(
            out.notes.iter().any(|n| n.contains("kustomize binary")),
            "{:?}",
            out.notes
        );
        let got: Vec<Value> = out
            .objects
            .into_iter()
            .map(|o| o.object.into_value())
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn kustomize_fallback_in_place_never_reads_outside_the_repository() {
        use crate::source::tests::{TempDir, link, write};
        let outside = outside_base();
        let repo = TempDir::new("fallback-dir");
        fallback_tree(repo.path());
        let fs = crate::source::DirSource::open(repo.path()).expect("open");
        let opts = RenderOptions::default();
        // In place, with an escaping symlink elsewhere in the repository: fine.
        let out = render(&fs, "apps/web", &AppSource::default(), &opts).expect("in place");
        let got: Vec<Value> = out
            .objects
            .into_iter()
            .map(|o| o.object.into_value())
            .collect();
        assert_eq!(got, kubectl_kustomize(&repo.path().join("apps/web")));
        // A symlink in a directory the build reads that leaves the repository is refused
        // before the binary runs (kustomize would build the directory it leads to).
        link(
            repo.path(),
            "base/ext",
            &outside.path().join("base").display().to_string(),
        );
        write(
            repo.path(),
            "base/kustomization.yaml",
            "resources:\n- service.yaml\n- configmap.yaml\n- ext\n",
        );
        let err = render(&fs, "apps/web", &AppSource::default(), &opts).expect_err("refused");
        assert!(err.to_string().contains("leaves the repository"), "{err}");
        std::fs::remove_file(repo.path().join("base/ext")).expect("rm");
        // So is a kustomization naming a directory outside the repository.
        let rel = format!(
            "../../../{}/base",
            outside.path().file_name().unwrap().to_string_lossy()
        );
        write(
            repo.path(),
            "apps/web/kustomization.yaml",
            &format!("resources:\n- {rel}\nvars: []\nconfigurations:\n- cfg.yaml\n"),
        );
        write(repo.path(), "apps/web/cfg.yaml", "nameReference: []\n");
        let err = render(&fs, "apps/web", &AppSource::default(), &opts).expect_err("refused");
        assert!(
            err.to_string().contains("apps/web/kustomization.yaml")
                && err.to_string().contains("leaves the repository"),
            "{err}"
        );
    }

    /// A directory outside any repository holding a kustomization of one Secret.
    fn outside_base() -> crate::source::tests::TempDir {
        use crate::source::tests::{TempDir, write};
        let outside = TempDir::new("fallback-outside");
        write(
            outside.path(),
            "base/secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: leaked\n",
        );
        write(
            outside.path(),
            "base/kustomization.yaml",
            "resources:\n- secret.yaml\n",
        );
        outside
    }

    /// What makes plumb hand a kustomization to the binary (as in the test above).
    const FALLBACK: &str = "buildMetadata: [managedByLabel]\n";

    fn leaks(objects: &[Value]) -> bool {
        objects.iter().any(|o| {
            o["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("leaked"))
        })
    }

    /// Renders `dir` with default options and asserts the error names every one of `parts`.
    fn assert_refused(fs: &dyn SourceFs, dir: &str, parts: &[&str]) {
        let err =
            render(fs, dir, &AppSource::default(), &RenderOptions::default()).expect_err("refused");
        let msg = err.to_string();
        assert!(parts.iter().all(|p| msg.contains(p)), "{parts:?} in {msg}");
    }

    #[test]
    fn kustomize_fallback_joins_entries_onto_the_real_directory_as_kustomize_does() {
        use crate::source::tests::{TempDir, link, write};
        let outside = outside_base();
        let repo = TempDir::new("fallback-real-join");
        let name = outside.path().file_name().unwrap().to_string_lossy();
        write(
            repo.path(),
            "app/kustomization.yaml",
            &format!("resources:\n- ../a/b/link\n{FALLBACK}"),
        );
        write(repo.path(), "app/cfg.yaml", "nameReference: []\n");
        link(repo.path(), "a/b/link", "../../top");
        // As written, a/b/link/../../NAME/base is inside the repository (and absent);
        // kustomize climbs from top, the real directory, out of the repository.
        write(
            repo.path(),
            "top/kustomization.yaml",
            &format!("resources:\n- ../../{name}/base\n"),
        );
        assert!(
            leaks(&kubectl_kustomize(&repo.path().join("app"))),
            "kustomize reads outside through the link"
        );
        let fs = crate::source::DirSource::open(repo.path()).expect("open");
        let opts = RenderOptions::default();
        let entry = format!("../../{name}/base");
        let parts = [
            "a/b/link/kustomization.yaml",
            &entry,
            "leaves the repository",
        ];
        assert_refused(&fs, "app", &parts);
        // Natively too, the entry is joined onto the real directory and refused.
        write(
            repo.path(),
            "app/kustomization.yaml",
            "resources:\n- ../a/b/link\n",
        );
        assert_refused(&fs, "app", &["leaves the repository"]);
        // Inside the repository, natively and with the binary, `..` climbs from top.
        write(
            repo.path(),
            "top/kustomization.yaml",
            "resources:\n- ../other\n",
        );
        write(
            repo.path(),
            "other/kustomization.yaml",
            "resources:\n- cm.yaml\n",
        );
        write(
            repo.path(),
            "other/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
        );
        let expected = kubectl_kustomize(&repo.path().join("app"));
        assert_eq!(expected[0]["metadata"]["name"], "other");
        let native = render(&fs, "app", &AppSource::default(), &opts).expect("native");
        let got: Vec<Value> = native
            .objects
            .into_iter()
            .map(|o| o.object.into_value())
            .collect();
        assert_eq!(got, expected);
        write(
            repo.path(),
            "app/kustomization.yaml",
            &format!("resources:\n- ../a/b/link\n{FALLBACK}"),
        );
        let expected = kubectl_kustomize(&repo.path().join("app"));
        assert_eq!(expected[0]["metadata"]["name"], "other");
        let out = render(&fs, "app", &AppSource::default(), &opts).expect("binary");
        let got: Vec<Value> = out
            .objects
            .into_iter()
            .map(|o| o.object.into_value())
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn kustomize_fallback_refuses_entries_through_dot_git() {
        use crate::source::tests::{TempDir, link, write};
        let outside = outside_base();
        let repo = TempDir::new("fallback-dot-git");
        // A `.git` leading out of the repository, and a nested repository's own files
        // (its config may hold credentials): both hidden from the source's checks.
        link(
            repo.path(),
            "app/.git",
            &outside.path().join("base").display().to_string(),
        );
        write(repo.path(), "gen/.git/config", "leaked=yes\n");
        let fs = crate::source::DirSource::open(repo.path()).expect("open");
        for (dir, kust, entry) in [
            ("app", "resources:\n- .git\n", ".git"),
            (
                "gen",
                "configMapGenerator:\n- name: leaked\n  files:\n  - .git/config\n",
                ".git/config",
            ),
            (
                "gen",
                "configMapGenerator:\n- name: leaked\n  files:\n  - c=.git/config\n",
                "c=.git/config",
            ),
        ] {
            write(
                repo.path(),
                &format!("{dir}/cfg.yaml"),
                "nameReference: []\n",
            );
            write(
                repo.path(),
                &format!("{dir}/kustomization.yaml"),
                &format!("{kust}{FALLBACK}"),
            );
            assert!(
                leaks(&kubectl_kustomize(&repo.path().join(dir))),
                "kustomize reads {entry}"
            );
            let (file, quoted) = (format!("{dir}/kustomization.yaml"), format!("{entry:?}"));
            assert_refused(&fs, dir, &[&file, &quoted, ".git path component"]);
        }
    }

    #[test]
    fn kustomize_fallback_refuses_local_repositories_as_remote_bases() {
        use crate::source::tests::{TempDir, commit_all, git, write};
        let outside = outside_base();
        git(outside.path(), &["init", "-q"]);
        commit_all(outside.path(), "outside");
        let repo = TempDir::new("fallback-file-url");
        write(repo.path(), "app/cfg.yaml", "nameReference: []\n");
        let fs = crate::source::DirSource::open(repo.path()).expect("open");
        let url = format!("file://{}//base", outside.path().display());
        for entry in [url.clone(), format!("git::{url}")] {
            write(
                repo.path(),
                "app/kustomization.yaml",
                &format!("resources:\n- {entry}\n{FALLBACK}"),
            );
            let quoted = format!("{entry:?}");
            assert_refused(
                &fs,
                "app",
                &["app/kustomization.yaml", &quoted, "local repository"],
            );
        }
        // kustomize clones it (what the refusal prevents); with git limited to network
        // protocols, as the fall-back runs it, it cannot.
        write(
            repo.path(),
            "app/kustomization.yaml",
            &format!("resources:\n- {url}\n"),
        );
        assert!(leaks(&kubectl_kustomize(&repo.path().join("app"))));
        let limited = Command::new("kubectl")
            .arg("kustomize")
            .arg(repo.path().join("app"))
            .env("GIT_ALLOW_PROTOCOL", "https:ssh:git:http")
            .output()
            .expect("kubectl runs");
        assert!(!limited.status.success());
    }

    #[test]
    fn kustomize_fallback_refuses_a_kustomization_it_cannot_read() {
        use crate::source::tests::{TempDir, write};
        let repo = TempDir::new("fallback-unparsed");
        write(
            repo.path(),
            "app/kustomization.yaml",
            &format!("resources:\n- ../base\n{FALLBACK}"),
        );
        write(repo.path(), "app/cfg.yaml", "nameReference: []\n");
        write(repo.path(), "base/kustomization.yaml", "resources: [../x\n");
        let fs = crate::source::DirSource::open(repo.path()).expect("open");
        let err = kustomize::build_dirs(&fs, "app").expect_err("refused");
        assert!(
            err.to_string().contains("base/kustomization.yaml")
                && err.to_string().contains("invalid YAML"),
            "{err}"
        );
        write(repo.path(), "base/kustomization.yaml", "resourcez: []\n");
        let parts = ["base/kustomization.yaml", "unknown field \"resourcez\""];
        assert_refused(&fs, "app", &parts);
    }

    #[test]
    fn kustomize_fallback_refuses_a_fifo_named_as_a_resource() {
        use crate::source::tests::{TempDir, write};
        let repo = TempDir::new("fallback-fifo");
        write(
            repo.path(),
            "app/kustomization.yaml",
            &format!("resources:\n- pipe.yaml\n{FALLBACK}"),
        );
        write(repo.path(), "app/cfg.yaml", "nameReference: []\n");
        let made = Command::new("mkfifo")
            .arg(repo.path().join("app/pipe.yaml"))
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let fs = crate::source::DirSource::open(repo.path()).expect("open");
        assert_refused(&fs, "app", &["\"pipe.yaml\" is not a regular file"]);
    }

    #[test]
    fn external_tools_run_against_a_deadline() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let err = crate::remote::output_within(&mut cmd, Duration::from_millis(200))
            .expect_err("killed at the deadline");
        assert_eq!(err, "timed out after 0s");
        let mut cmd = Command::new("echo");
        cmd.arg("hi");
        let (status, out, _) =
            crate::remote::output_within(&mut cmd, Duration::from_secs(60)).expect("runs");
        assert!(status.success());
        assert_eq!(out, b"hi\n");
    }

    #[test]
    fn walking_symlinks_that_fan_out_stops_at_a_limit() {
        use crate::source::tests::{TempDir, link};
        let repo = TempDir::new("walk-fan-out");
        // d0/{x,y} -> d1, d1/{x,y} -> d2, …: 2^12 paths to d12.
        for i in 0..12 {
            link(repo.path(), &format!("d{i}/x"), &format!("../d{}", i + 1));
            link(repo.path(), &format!("d{i}/y"), &format!("../d{}", i + 1));
        }
        std::fs::create_dir_all(repo.path().join("d12")).expect("mkdir");
        let fs = crate::source::DirSource::open(repo.path()).expect("open");
        let err = walk_tree_within(&fs, &["d0".to_string()], 1000, &mut |_, _| Ok(()))
            .expect_err("limit");
        assert!(
            err.to_string().contains("more than 1000 directories"),
            "{err}"
        );
        // Below the limit, every path is walked.
        let mut n = 0;
        walk_tree_within(&fs, &["d9".to_string()], 1000, &mut |_, _| {
            n += 1;
            Ok(())
        })
        .expect("walked");
        assert_eq!(n, 1 + 2 + 4 + 8);
    }

    #[test]
    fn app_kustomize_parameters_edit_the_field_kustomize_reads() {
        use crate::source::tests::{TempDir, write};
        let dir = TempDir::new("app-params");
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n";
        // The kustomization spells fields in lower case and repeats one.
        write(dir.path(), "app/cm.yaml", cm);
        write(
            dir.path(),
            "app/kustomization.yaml",
            "resources: [cm.yaml]\nnameprefix: old-\ncommonlabels:\n  team: a\ncommonlabels:\n  team: b\n",
        );
        // What `kustomize edit set namePrefix new-` and `edit add label` leave behind.
        write(dir.path(), "expected/cm.yaml", cm);
        write(
            dir.path(),
            "expected/kustomization.yaml",
            "resources: [cm.yaml]\nnamePrefix: new-\ncommonLabels:\n  team: b\n  env: prod\n",
        );
        let source = AppSource {
            kustomize: Some(KustomizeSource {
                name_prefix: "new-".into(),
                common_labels: [("env".to_string(), "prod".to_string())].into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let fs = crate::source::DirSource::open(dir.path()).expect("open");
        let out = render(&fs, "app", &source, &RenderOptions::default()).expect("rendered");
        let got: Vec<Value> = out
            .objects
            .into_iter()
            .map(|o| o.object.into_value())
            .collect();
        assert_eq!(got, kubectl_kustomize(&dir.path().join("expected")));
        assert_eq!(got[0]["metadata"]["name"], "new-settings");
    }

    #[test]
    fn helm_set_values_escape_commas_like_argo() {
        assert_eq!(escape_set_value("a,b"), "a\\,b");
        assert_eq!(escape_set_value("{a,b}"), "{a,b}");
        assert_eq!(escape_set_value("plain"), "plain");
    }

    #[test]
    fn image_parameters() {
        assert_eq!(
            parse_image_param("nginx=registry.example.com/nginx:1.25"),
            serde_json::json!({"name": "nginx", "newName": "registry.example.com/nginx", "newTag": "1.25"})
        );
        assert_eq!(
            parse_image_param("localhost:5000/app:2"),
            serde_json::json!({"name": "localhost:5000/app", "newTag": "2"})
        );
        assert_eq!(
            parse_image_param("app@sha256:abc"),
            serde_json::json!({"name": "app", "digest": "sha256:abc"})
        );
    }
}
