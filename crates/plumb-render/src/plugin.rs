//! Config management plugins: Argo CD's v2 ("sidecar") plugins, run by plumb itself.
//!
//! **Where plugins come from.** `--plugins DIR` (the CLI's `render`, `diff`, `doctor` and
//! `controller`; on Kubernetes a ConfigMap mounted as that directory) holds one
//! `ConfigManagementPlugin` manifest per plugin, either as a file `DIR/NAME.yaml` (or `.yml`:
//! a ConfigMap key each) or as `DIR/NAME/plugin.yaml` (a directory laid out as a sidecar's
//! `/home/argocd/cmp-server/config/`). Names starting with `.` (a ConfigMap mount's `..data`)
//! are skipped. [`Plugins::load`] refuses, in one line naming the file (`file:line:column`
//! for YAML), anything that is not one `apiVersion: argoproj.io/v1alpha1`,
//! `kind: ConfigManagementPlugin` document with a `metadata.name` and a `generate.command`,
//! and two plugins with the same name.
//!
//! **Which plugin renders a source** (Argo CD's `DetectConfigManagementPlugin`):
//! - `spec.source.plugin.name` names it: `NAME-VERSION` when the plugin has a `spec.version`,
//!   else `NAME` (the plugin's socket name in Argo CD). A plugin with discovery rules must
//!   still match the source; one without is used as named.
//! - `plugin` without a name (`plugin: {}`), or a source naming no type at all (no `plugin`,
//!   `helm`, `kustomize` or `directory`: Argo CD tries plugins before its own detection), is
//!   matched by every plugin's `discover`: `fileName` (a Go `filepath.Glob` pattern relative
//!   to the app's path: `*` stops at `/`), else `find.glob` (the same, with `**` crossing
//!   directories), else `find.command` (run in the app's path of a private copy: it matches
//!   when it exits 0 and prints something; one that fails is no match, its error quoted when
//!   nothing matches). A plugin without discovery rules is never
//!   discovered. No match is an error for `plugin: {}` (a source without a type then renders
//!   as Argo CD's own detection says); **several matches are an error naming them** — Argo CD
//!   takes the first by socket file name, plumb refuses to guess (a documented difference).
//!
//! **How a plugin runs** (Argo CD's `cmpserver/plugin`): the whole source (the revision's
//! files, from git's object database for a git source) is written to a private temporary
//! directory as the helm and kustomize fall-backs write it ([`crate::render`]), files
//! without their modes (Argo CD's default) unless the plugin says `preserveFileMode: true`:
//! then executable files (git mode `100755`, an `x` bit on disk) are `0755`. Then `init`
//! (when given) and `generate` run in the app's path there. The program is `command[0]`, its arguments the rest of `command` then `args` — no
//! shell unless the plugin names one. The environment starts **empty**: `PATH` (plumb's),
//! `HOME` (the temporary directory), Argo CD's build variables (`ARGOCD_APP_NAME`,
//! `ARGOCD_APP_NAMESPACE`, `ARGOCD_APP_PROJECT_NAME`, `ARGOCD_APP_REVISION` and its
//! `_SHORT`/`_SHORT_8` prefixes, `ARGOCD_APP_SOURCE_REPO_URL`, `ARGOCD_APP_SOURCE_PATH`,
//! `ARGOCD_APP_SOURCE_TARGET_REVISION`, `KUBE_VERSION`, `KUBE_API_VERSIONS`), each
//! `spec.source.plugin.env` entry as `ARGOCD_ENV_NAME` (its value with `$VAR`/`${VAR}` of
//! those variables substituted, `$$` a dollar, as Go's `os.Expand`), and, for a source with
//! `plugin:`, the parameters as `ARGOCD_APP_PARAMETERS` (their JSON as Go writes it: keys
//! sorted, `<>&` escaped) and `PARAM_<NAME>`, `PARAM_<NAME>_<i>`, `PARAM_<NAME>_<KEY>` (upper-cased, every character
//! outside `A-Z0-9_` made `_`). Nothing else of plumb's environment reaches a plugin: no
//! `KUBECONFIG`, token, `AWS_*` or repository credential (`provideGitCreds` is not honoured).
//!
//! Each command runs in its own process group against `PLUMB_TOOL_TIMEOUT`
//! ([`crate::render::DEFAULT_TOOL_TIMEOUT`]); on the deadline, or once stdout passes
//! [`plumb_core::limits::MAX_PLUGIN_OUTPUT_BYTES`], the whole group is killed, and so is
//! whatever is left of it when the command ends (a process that left the group and still
//! holds the output open fails the render 2 s later instead of hanging it). A failure is
//! one line naming the plugin, the command and the end of its stderr, with every value the
//! Application passed (`env`, parameters) replaced by `***`. `generate`'s stdout is read by
//! the loader directory sources use: a YAML stream, JSON objects, `kind: List`; anything else
//! is an error naming the plugin and quoting the first bad line. Objects carry no source
//! locations (like `helm template`, a note says so).
//!
//! Parameter announcements (`parameters.static`, `parameters.dynamic`) only feed Argo CD's
//! UI; plumb reads past them.
//!
//! Argo CD code followed: `cmpserver/plugin/{config,plugin}.go` (the manifest, discovery,
//! running), `reposerver/repository/repository.go` (`newEnv`, `getPluginEnvs`,
//! `getPluginParamEnvs`, `GetAppSourceType`), `util/app/discovery/discovery.go`
//! (`DetectConfigManagementPlugin`) and `pkg/apis/application/v1alpha1/types.go`
//! (`ApplicationSourcePluginParameters.Environ`, `Env.Envsubst`).

use crate::render::{RenderOptions, RenderedObject};
use crate::source::{EntryKind, SourceFs, join};
use crate::{LoadError, Manifest};
use plumb_core::limits::MAX_PLUGIN_OUTPUT_BYTES;
use serde::Deserialize;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The `apiVersion` of a plugin manifest.
pub const API_VERSION: &str = "argoproj.io/v1alpha1";
/// The `kind` of a plugin manifest.
pub const KIND: &str = "ConfigManagementPlugin";

/// How much of a failed command's stderr an error quotes (its end).
const STDERR_TAIL_CHARS: usize = 400;

/// The plugins of a `--plugins` directory.
#[derive(Debug, Clone, Default)]
pub struct Plugins {
    plugins: Vec<Plugin>,
}

/// One `ConfigManagementPlugin`.
#[derive(Debug, Clone)]
pub struct Plugin {
    /// `metadata.name`.
    pub name: String,
    /// `spec.version` (empty when not set).
    pub version: String,
    /// The file it was read from.
    pub file: PathBuf,
    init: Option<PluginCommand>,
    generate: PluginCommand,
    discover: Discover,
    preserve_file_mode: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct PluginCommand {
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Discover {
    #[serde(default)]
    file_name: String,
    #[serde(default)]
    find: Find,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Find {
    #[serde(default)]
    glob: String,
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpec {
    #[serde(default)]
    version: String,
    #[serde(default)]
    init: Option<PluginCommand>,
    #[serde(default)]
    generate: PluginCommand,
    #[serde(default)]
    discover: Discover,
    #[serde(default)]
    preserve_file_mode: bool,
}

impl Plugin {
    /// The name an Application selects it by: `NAME-VERSION`, or `NAME` without a version.
    pub fn full_name(&self) -> String {
        if self.version.is_empty() {
            self.name.clone()
        } else {
            format!("{}-{}", self.name, self.version)
        }
    }

    fn has_discovery(&self) -> bool {
        let d = &self.discover;
        !d.file_name.is_empty() || !d.find.glob.is_empty() || !d.find.command.is_empty()
    }

    /// Reads one plugin manifest.
    pub fn load(file: &Path) -> Result<Plugin, LoadError> {
        let manifests = crate::load_file(file)?;
        let bad = |line: Option<usize>, msg: String| LoadError {
            file: file.to_path_buf(),
            line,
            column: None,
            message: msg,
        };
        let Some(Manifest { object, line, .. }) = manifests.first() else {
            return Err(bad(None, format!("no {KIND} in this file")));
        };
        if manifests.len() > 1 {
            return Err(bad(
                Some(manifests[1].line),
                format!("one {KIND} per file (this is a second document)"),
            ));
        }
        let line = Some(*line);
        let field = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
        if field("/apiVersion") != API_VERSION || field("/kind") != KIND {
            return Err(bad(
                line,
                format!(
                    "expected apiVersion: {API_VERSION}, kind: {KIND}; found {}, {}",
                    field("/apiVersion"),
                    field("/kind")
                ),
            ));
        }
        let spec: RawSpec = serde_json::from_value(object.get("spec").cloned().unwrap_or_default())
            .map_err(|e| bad(line, format!("spec: {e}")))?;
        if spec.generate.command.is_empty() {
            return Err(bad(line, "spec.generate.command is empty".into()));
        }
        Ok(Plugin {
            name: field("/metadata/name").to_string(),
            version: spec.version,
            file: file.to_path_buf(),
            init: spec.init.filter(|c| !c.command.is_empty()),
            generate: spec.generate,
            discover: spec.discover,
            preserve_file_mode: spec.preserve_file_mode,
        })
    }
}

impl Plugins {
    /// The plugins of `dir`: `*.yaml`/`*.yml` files and `*/plugin.yaml`, names starting with
    /// `.` skipped.
    pub fn load(dir: &Path) -> Result<Plugins, LoadError> {
        let cannot = |p: &Path, e: std::io::Error| LoadError {
            file: p.to_path_buf(),
            line: None,
            column: None,
            message: format!("cannot read: {e}"),
        };
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| cannot(dir, e))? {
            let entry = entry.map_err(|e| cannot(dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with('.') {
                names.push(name);
            }
        }
        names.sort();
        let mut plugins: Vec<Plugin> = Vec::new();
        for name in names {
            let path = dir.join(&name);
            let file = if path.is_dir() {
                let f = path.join("plugin.yaml");
                if !f.exists() {
                    continue;
                }
                f
            } else if name.ends_with(".yaml") || name.ends_with(".yml") {
                path
            } else {
                continue;
            };
            let plugin = Plugin::load(&file)?;
            if let Some(other) = plugins.iter().find(|p| p.full_name() == plugin.full_name()) {
                return Err(LoadError {
                    file,
                    line: None,
                    column: None,
                    message: format!(
                        "plugin {} is also defined in {}",
                        plugin.full_name(),
                        other.file.display()
                    ),
                });
            }
            plugins.push(plugin);
        }
        Ok(Plugins { plugins })
    }

    /// The plugins, in file name order.
    pub fn iter(&self) -> impl Iterator<Item = &Plugin> {
        self.plugins.iter()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }
}

fn fail(file: &str, message: impl Into<String>) -> LoadError {
    LoadError {
        file: PathBuf::from(file),
        line: None,
        column: None,
        message: message.into(),
    }
}

/// `spec.source.plugin`, when set (not `null`).
pub fn source_plugin(source: &plumb_core::argo::AppSource) -> Option<&Value> {
    source.extra.get("plugin").filter(|p| !p.is_null())
}

/// Whether a source names its type (`plugin`, `helm`, `kustomize` or `directory`); one that
/// does not goes through plugin discovery first, as in Argo CD.
pub fn has_explicit_type(source: &plumb_core::argo::AppSource) -> bool {
    source_plugin(source).is_some()
        || source.helm.is_some()
        || source.kustomize.is_some()
        || source.directory.is_some()
}

/// What a render needs to know of the app, beyond the source.
pub(crate) struct RunContext<'a> {
    pub fs: &'a dyn SourceFs,
    /// Repository-relative app path (normalized).
    pub path: &'a str,
    pub source: &'a plumb_core::argo::AppSource,
    pub opts: &'a RenderOptions,
    /// The full commit id (empty for a plain directory).
    pub commit: &'a str,
}

/// A private copy of the source and the environment a plugin's commands get (one for
/// `init` and `generate`, one shared by a discovery's `find.command`s).
struct Prepared {
    /// Whether executable files were written `0755` (`preserveFileMode`).
    modes: bool,
    tree: crate::render::Materialized,
    env: Vec<(String, String)>,
    secrets: Vec<String>,
}

impl Prepared {
    fn app_dir(&self, path: &str) -> PathBuf {
        self.tree.root.join(path)
    }
}

/// The plugin that renders the source, if any: `Ok(None)` only for a source without
/// `plugin` that no plugin discovers. `plugin` set and nothing matching is an error.
pub(crate) fn select<'p>(
    plugins: &'p Plugins,
    ctx: &RunContext<'_>,
) -> Result<Option<&'p Plugin>, LoadError> {
    let spec = source_plugin(ctx.source);
    let named = spec
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let mut prepared: Option<PreparedBox> = None;
    if let Some(name) = named {
        let Some(plugin) = plugins.iter().find(|p| p.full_name() == name) else {
            let hint = plugins
                .iter()
                .find(|p| p.name == name)
                .map(|p| {
                    format!(
                        " (plugin {} has version {}: name it {})",
                        p.name,
                        p.version,
                        p.full_name()
                    )
                })
                .unwrap_or_default();
            let known: Vec<String> = plugins.iter().map(Plugin::full_name).collect();
            return Err(fail(
                ctx.path,
                format!(
                    "spec.source.plugin.name: no plugin {name} in the --plugins directory{hint} (it has: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        if plugin.has_discovery() && !matches(plugin, ctx, &mut prepared)? {
            return Err(fail(
                ctx.path,
                format!(
                    "plugin {name} does not support this source: its discover rule ({}) matches nothing in {}",
                    plugin.discover_rule(),
                    if ctx.path.is_empty() {
                        "the repository root"
                    } else {
                        ctx.path
                    }
                ),
            ));
        }
        return Ok(Some(plugin));
    }
    let mut found = Vec::new();
    let mut last_err = None;
    for plugin in plugins.iter().filter(|p| p.has_discovery()) {
        match matches(plugin, ctx, &mut prepared) {
            Ok(true) => found.push(plugin),
            Ok(false) => {}
            Err(e) => last_err = Some(e),
        }
    }
    match found.as_slice() {
        [one] => Ok(Some(one)),
        [] if spec.is_none() => Ok(None),
        [] => Err(fail(
            ctx.path,
            format!(
                "spec.source.plugin: no plugin in the --plugins directory discovers this source{}",
                last_err
                    .map(|e| format!(" (last error: {})", e.message))
                    .unwrap_or_default()
            ),
        )),
        several => Err(fail(
            ctx.path,
            format!(
                "{} plugins discover this source ({}); name one in spec.source.plugin.name",
                several.len(),
                several
                    .iter()
                    .map(|p| p.full_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// A lazily made private copy, shared by the `find.command`s of one discovery (`generate`
/// gets a fresh one, as Argo CD sends the files again).
type PreparedBox = Box<Prepared>;

impl Plugin {
    fn discover_rule(&self) -> String {
        let d = &self.discover;
        if !d.file_name.is_empty() {
            format!("fileName {}", d.file_name)
        } else if !d.find.glob.is_empty() {
            format!("find.glob {}", d.find.glob)
        } else {
            "find.command".to_string()
        }
    }
}

/// Whether `plugin`'s discovery matches the source (Argo CD's order: `fileName`, else
/// `find.glob`, else `find.command`).
fn matches(
    plugin: &Plugin,
    ctx: &RunContext<'_>,
    prepared: &mut Option<PreparedBox>,
) -> Result<bool, LoadError> {
    let d = &plugin.discover;
    let (pattern, double_star) = if !d.file_name.is_empty() {
        (d.file_name.as_str(), false)
    } else if !d.find.glob.is_empty() {
        (d.find.glob.as_str(), true)
    } else {
        let prep = prepare(ctx, prepared, plugin.preserve_file_mode)?;
        let cmd = PluginCommand {
            command: d.find.command.clone(),
            args: d.find.args.clone(),
        };
        let out = run_command(plugin, "discover.find.command", &cmd, ctx.path, prep)?;
        return Ok(!out.is_empty());
    };
    glob_matches(ctx.fs, ctx.path, pattern, double_star)
}

fn prepare<'a>(
    ctx: &RunContext<'_>,
    prepared: &'a mut Option<PreparedBox>,
    modes: bool,
) -> Result<&'a Prepared, LoadError> {
    let made = match prepared.take() {
        Some(p) if p.modes == modes => p,
        _ => {
            let tree = crate::render::Materialized::with_modes(ctx.fs, &[String::new()], modes)?;
            let (env, secrets) = environment(ctx, &tree.root)?;
            Box::new(Prepared {
                modes,
                tree,
                env,
                secrets,
            })
        }
    };
    Ok(prepared.insert(made))
}

/// Renders the source with `plugin`.
pub(crate) fn generate(
    plugin: &Plugin,
    ctx: &RunContext<'_>,
    notes: &mut Vec<String>,
) -> Result<Vec<RenderedObject>, LoadError> {
    let mut prepared = None;
    let prep = prepare(ctx, &mut prepared, plugin.preserve_file_mode)?;
    if let Some(init) = &plugin.init {
        run_command(plugin, "init", init, ctx.path, prep)?;
    }
    let out = run_command(plugin, "generate", &plugin.generate, ctx.path, prep)?;
    let objects = parse_output(plugin, &out, ctx.path, &prep.secrets)?;
    notes.push(format!(
        "rendered by config management plugin {}: source locations are unavailable",
        plugin.full_name()
    ));
    Ok(objects)
}

// ---------------------------------------------------------------------------------------
// Discovery globs

/// Whether any entry of the repository matches `pattern` joined onto `dir`, as Go's
/// `filepath.Glob` (or, with `double_star`, zglob's `**`) would find it.
fn glob_matches(
    fs: &dyn SourceFs,
    dir: &str,
    pattern: &str,
    double_star: bool,
) -> Result<bool, LoadError> {
    let joined = join(dir, pattern, dir)?;
    let re = glob_regex(&joined, double_star)
        .map_err(|e| fail(dir, format!("discover pattern {pattern:?}: {e}")))?;
    // Walk from the deepest directory the pattern names literally.
    let literal: Vec<&str> = joined
        .split('/')
        .take_while(|s| !s.contains(['*', '?', '[', '\\']))
        .collect();
    if literal.len() == joined.split('/').count() {
        return Ok(fs.kind(&joined)?.is_some());
    }
    let start = literal.join("/");
    if !start.is_empty() && fs.kind(&start)? != Some(EntryKind::Dir) {
        return Ok(false);
    }
    if !(double_star && joined.contains("**")) {
        // One directory level per segment, as Go's Glob reads them: never the whole subtree.
        let segments: Vec<&str> = joined.split('/').skip(literal.len()).collect();
        let mut current = vec![start];
        for (i, segment) in segments.iter().enumerate() {
            let re = glob_regex(segment, false)
                .map_err(|e| fail(dir, format!("discover pattern {pattern:?}: {e}")))?;
            let last = i + 1 == segments.len();
            let mut next = Vec::new();
            for d in &current {
                for (name, kind) in fs.list(d)? {
                    if !re.is_match(&name) {
                        continue;
                    }
                    if last {
                        return Ok(true);
                    }
                    if kind == EntryKind::Dir {
                        next.push(if d.is_empty() {
                            name
                        } else {
                            format!("{d}/{name}")
                        });
                    }
                }
            }
            current = next;
        }
        return Ok(false);
    }
    let mut found = false;
    crate::render::walk_tree(fs, &[start], &mut |rel, _| {
        if !found && re.is_match(rel) {
            found = true;
        }
        Ok(())
    })?;
    Ok(found)
}

/// A regular expression for a Go glob (`*`, `?`, `[...]`/`[^...]`, `\` escapes; `*` and `?`
/// never match `/`); with `double_star`, a `**` segment matches any number of directories.
fn glob_regex(pattern: &str, double_star: bool) -> Result<regex::Regex, String> {
    let mut re = String::from("^");
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if double_star && chars.get(i + 1) == Some(&'*') => {
                i += 1;
                if chars.get(i + 1) == Some(&'/') {
                    i += 1;
                    re.push_str("(?:.*/)?");
                } else {
                    re.push_str(".*");
                }
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '\\' => {
                i += 1;
                let next = chars.get(i).ok_or("trailing backslash")?;
                re.push_str(&regex::escape(&next.to_string()));
            }
            '[' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&x| x == ']')
                    .ok_or("unclosed [")?
                    + i
                    + 1;
                let mut class: String = chars[i + 1..close].iter().collect();
                if class.is_empty() {
                    return Err("empty character class".into());
                }
                let negated = class.starts_with('^');
                if negated {
                    class.remove(0);
                }
                let body: String = class
                    .chars()
                    .map(|x| match x {
                        '[' | ']' | '&' | '~' | '|' => format!("\\{x}"),
                        x => x.to_string(),
                    })
                    .collect();
                re.push_str(&format!("[{}{body}]", if negated { "^/" } else { "" }));
                i = close;
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push('$');
    regex::Regex::new(&re).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------
// Environment

/// A command's environment: (name, value) in order.
type Env = Vec<(String, String)>;

/// A plugin's environment (name, value) in order, and the values the Application passed
/// (redacted from messages).
fn environment(ctx: &RunContext<'_>, home: &Path) -> Result<(Env, Vec<String>), LoadError> {
    let opts = ctx.opts;
    let source = ctx.source;
    let short = |n: usize| ctx.commit.chars().take(n).collect::<String>();
    let build = vec![
        ("ARGOCD_APP_NAME", opts.app_name.clone().unwrap_or_default()),
        (
            "ARGOCD_APP_NAMESPACE",
            opts.namespace.clone().unwrap_or_default(),
        ),
        (
            "ARGOCD_APP_PROJECT_NAME",
            opts.project.clone().unwrap_or_default(),
        ),
        ("ARGOCD_APP_REVISION", ctx.commit.to_string()),
        ("ARGOCD_APP_REVISION_SHORT", short(7)),
        ("ARGOCD_APP_REVISION_SHORT_8", short(8)),
        ("ARGOCD_APP_SOURCE_REPO_URL", source.repo_url.clone()),
        ("ARGOCD_APP_SOURCE_PATH", source.path.clone()),
        (
            "ARGOCD_APP_SOURCE_TARGET_REVISION",
            source.target_revision.clone(),
        ),
        (
            "KUBE_VERSION",
            opts.kube_version.clone().unwrap_or_default(),
        ),
        ("KUBE_API_VERSIONS", opts.api_versions.join(",")),
    ];
    let mut env: Vec<(String, String)> = vec![
        (
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
        ),
        ("HOME".into(), home.display().to_string()),
    ];
    env.extend(build.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let mut secrets = Vec::new();
    let spec = source_plugin(source).cloned().unwrap_or(Value::Null);
    let bad =
        |field: &str, what: &str| fail(ctx.path, format!("spec.source.plugin.{field}: {what}"));
    if let Some(entries) = spec.get("env").filter(|v| !v.is_null()) {
        let entries = entries
            .as_array()
            .ok_or_else(|| bad("env", "expected a list"))?;
        for (i, e) in entries.iter().enumerate() {
            let name = e.get("name").and_then(Value::as_str);
            let value = e.get("value").and_then(Value::as_str).unwrap_or("");
            let Some(name) = name else {
                return Err(bad(&format!("env[{i}].name"), "expected a string"));
            };
            let value = go_expand(value, |var| {
                if var == "$" {
                    return "$".to_string();
                }
                build
                    .iter()
                    .find(|(k, _)| *k == var)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            });
            secrets.push(value.clone());
            env.push((format!("ARGOCD_ENV_{name}"), value));
        }
    }
    // Argo CD adds the parameters only for a source with `plugin:` (`null` when it has none).
    if !spec.is_null() {
        let params = spec.get("parameters").filter(|v| !v.is_null());
        let (json, vars) = parameters(params).map_err(|e| bad("parameters", &e))?;
        env.push(("ARGOCD_APP_PARAMETERS".into(), json));
        for (k, v) in vars {
            secrets.push(v.clone());
            env.push((k, v));
        }
    }
    Ok((env, secrets))
}

/// `ARGOCD_APP_PARAMETERS` and the `PARAM_*` variables of `spec.source.plugin.parameters`.
fn parameters(params: Option<&Value>) -> Result<(String, Vec<(String, String)>), String> {
    let Some(params) = params else {
        return Ok(("null".into(), Vec::new()));
    };
    let list = params.as_array().ok_or("expected a list")?;
    let mut out = Vec::new();
    let mut vars = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        let base = format!("PARAM_{}", escaped(name));
        let mut entry = serde_json::Map::new();
        entry.insert("name".into(), Value::String(name.into()));
        if let Some(s) = p.get("string").filter(|v| !v.is_null()) {
            let s = s
                .as_str()
                .ok_or_else(|| format!("[{i}].string: expected a string"))?;
            entry.insert("string".into(), Value::String(s.into()));
            vars.push((base.clone(), s.to_string()));
        }
        if let Some(m) = p.get("map").filter(|v| !v.is_null()) {
            let m = m
                .as_object()
                .ok_or_else(|| format!("[{i}].map: expected a map"))?;
            let mut sorted = serde_json::Map::new();
            for (k, v) in m {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("[{i}].map.{k}: expected a string"))?;
                sorted.insert(k.clone(), Value::String(v.into()));
                vars.push((format!("{base}_{}", escaped(k)), v.to_string()));
            }
            entry.insert("map".into(), Value::Object(sorted));
        }
        if let Some(a) = p.get("array").filter(|v| !v.is_null()) {
            let a = a
                .as_array()
                .ok_or_else(|| format!("[{i}].array: expected a list"))?;
            let mut items = Vec::new();
            for (j, v) in a.iter().enumerate() {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("[{i}].array[{j}]: expected a string"))?;
                items.push(Value::String(v.into()));
                vars.push((format!("{base}_{j}"), v.to_string()));
            }
            entry.insert("array".into(), Value::Array(items));
        }
        out.push(Value::Object(entry));
    }
    let json = serde_json::to_string(&Value::Array(out)).unwrap_or_default();
    Ok((go_html_escape(&json), vars))
}

/// Go's `encoding/json` escapes `<`, `>`, `&`, U+2028 and U+2029 inside strings (they only
/// occur inside strings in JSON text).
fn go_html_escape(json: &str) -> String {
    let mut s = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => s.push_str("\\u003c"),
            '>' => s.push_str("\\u003e"),
            '&' => s.push_str("\\u0026"),
            '\u{2028}' => s.push_str("\\u2028"),
            '\u{2029}' => s.push_str("\\u2029"),
            c => s.push(c),
        }
    }
    s
}

/// A parameter name as an environment variable name part: upper-cased, every character
/// outside `A-Z0-9_` replaced by `_` (Argo CD's `escaped`).
fn escaped(name: &str) -> String {
    name.to_uppercase()
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Go's `os.Expand`: `$NAME` and `${NAME}` replaced by `mapping(NAME)`; a shell special
/// character (`$1`, `$$`, `${*}`) is a one-character name; `${}` and an unclosed `${` are
/// dropped; a `$` followed by nothing usable stays.
fn go_expand(s: &str, mapping: impl Fn(&str) -> String) -> String {
    let b = s.as_bytes();
    let special = |c: u8| b"*#$@!?-0123456789".contains(&c);
    let alnum = |c: u8| c == b'_' || c.is_ascii_alphanumeric();
    let mut out = String::new();
    let mut i = 0; // start of the text not yet copied
    let mut j = 0;
    while j < b.len() {
        if b[j] == b'$' && j + 1 < b.len() {
            out.push_str(&s[i..j]);
            let rest = &b[j + 1..];
            let (name, w): (&str, usize) = if rest[0] == b'{' {
                if rest.len() > 2 && special(rest[1]) && rest[2] == b'}' {
                    (&s[j + 2..j + 3], 3)
                } else {
                    match rest.iter().skip(1).position(|&c| c == b'}') {
                        Some(0) => ("", 2),
                        Some(k) => (&s[j + 2..j + 2 + k], k + 2),
                        None => ("", 1),
                    }
                }
            } else if special(rest[0]) {
                (&s[j + 1..j + 2], 1)
            } else {
                let n = rest.iter().take_while(|&&c| alnum(c)).count();
                (&s[j + 1..j + 1 + n], n)
            };
            if name.is_empty() && w == 0 {
                out.push('$');
            } else if !name.is_empty() {
                out.push_str(&mapping(name));
            }
            j += w;
            i = j + 1;
        }
        j += 1;
    }
    out.push_str(&s[i.min(s.len())..]);
    out
}

// ---------------------------------------------------------------------------------------
// Running

/// `text` with every non-trivial value in `secrets` replaced by `***`.
fn redact(text: &str, secrets: &[String]) -> String {
    let mut sorted: Vec<&String> = secrets.iter().filter(|s| s.trim().len() >= 4).collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_string();
    for s in sorted {
        out = out.replace(s.as_str(), "***");
    }
    out
}

fn run_command(
    plugin: &Plugin,
    phase: &str,
    command: &PluginCommand,
    path: &str,
    prep: &Prepared,
) -> Result<String, LoadError> {
    use std::os::unix::process::CommandExt;
    let name = plugin.full_name();
    let program = &command.command[0];
    let mut cmd = Command::new(program);
    cmd.args(&command.command[1..])
        .args(&command.args)
        .env_clear()
        .envs(prep.env.iter().map(|(k, v)| (k, v)))
        .current_dir(prep.app_dir(path))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let what = format!("plugin {name}: {phase} ({program})");
    let timeout =
        crate::seconds_from_env("PLUMB_TOOL_TIMEOUT", crate::render::DEFAULT_TOOL_TIMEOUT);
    let mut child = cmd
        .spawn()
        .map_err(|e| fail(path, format!("{what}: cannot run: {e}")))?;
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let kill_group = move || {
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    };
    let overflow = Arc::new(AtomicBool::new(false));
    // Readers answer through channels: a process that left the group (setsid) and holds a
    // pipe open must not hang the render.
    let (out_tx, out_rx) = std::sync::mpsc::channel();
    let (err_tx, err_rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take();
    {
        let overflow = overflow.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(p) = stdout {
                let _ = p.take(MAX_PLUGIN_OUTPUT_BYTES + 1).read_to_end(&mut bytes);
                if bytes.len() as u64 > MAX_PLUGIN_OUTPUT_BYTES {
                    overflow.store(true, Ordering::SeqCst);
                    kill_group();
                }
            }
            let _ = out_tx.send(bytes);
        });
    }
    let stderr = child.stderr.take();
    std::thread::spawn(move || {
        // Only the end is kept: it is all an error quotes.
        let mut tail: Vec<u8> = Vec::new();
        if let Some(mut p) = stderr {
            let mut buf = [0u8; 8192];
            while let Ok(n) = p.read(&mut buf) {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 64 * 1024 {
                    tail.drain(..tail.len() - 16 * 1024);
                }
            }
        }
        let _ = err_tx.send(tail);
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                kill_group();
                let _ = child.wait();
                break None;
            }
            Err(e) => {
                kill_group();
                return Err(fail(path, format!("{what}: waiting: {e}")));
            }
        }
    };
    // Whatever the command left behind in its group goes too (and closes its pipes).
    kill_group();
    const GRACE: Duration = Duration::from_secs(2);
    let out = out_rx.recv_timeout(GRACE);
    let err = err_rx.recv_timeout(GRACE).unwrap_or_default();
    let tail = stderr_tail(&err, &prep.secrets);
    let Some(status) = status else {
        return Err(fail(
            path,
            format!(
                "{what}: timed out after {}s (PLUMB_TOOL_TIMEOUT); killed{tail}",
                timeout.as_secs_f64()
            ),
        ));
    };
    if overflow.load(Ordering::SeqCst) {
        return Err(fail(
            path,
            format!(
                "{what}: printed more than {} MiB, the limit on a plugin's output; killed",
                MAX_PLUGIN_OUTPUT_BYTES / (1024 * 1024)
            ),
        ));
    }
    let Ok(out) = out else {
        return Err(fail(
            path,
            format!(
                "{what}: a process it started outside its process group still holds its output open"
            ),
        ));
    };
    if !status.success() {
        let how = match status.code() {
            Some(c) => format!("exit status {c}"),
            None => "killed by a signal".to_string(),
        };
        return Err(fail(path, format!("{what}: failed ({how}){tail}")));
    }
    String::from_utf8(out).map_err(|_| fail(path, format!("{what}: printed non-UTF-8 output")))
}

/// `: <the last lines of stderr>` on one line, redacted and cut; empty without stderr.
fn stderr_tail(err: &[u8], secrets: &[String]) -> String {
    let text = String::from_utf8_lossy(err);
    let text = redact(&text, secrets);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let joined = lines[lines.len().saturating_sub(3)..].join(" | ");
    let n = joined.chars().count();
    let cut: String = if n > STDERR_TAIL_CHARS {
        let s: String = joined.chars().skip(n - STDERR_TAIL_CHARS).collect();
        format!("…{s}")
    } else {
        joined
    };
    format!(": {cut}")
}

/// `generate`'s stdout as objects: a YAML stream, JSON objects or a `kind: List`.
fn parse_output(
    plugin: &Plugin,
    out: &str,
    path: &str,
    secrets: &[String],
) -> Result<Vec<RenderedObject>, LoadError> {
    let json = out.trim_start().starts_with('{');
    let name = if json { "output.json" } else { "output.yaml" };
    let parsed = crate::parse_str(out, Path::new(name));
    let manifests = parsed.map_err(|e| {
        let line_no = e.line.unwrap_or(1);
        let line = out.lines().nth(line_no - 1).unwrap_or("").trim_end();
        let line = plumb_core::limits::quoted(&redact(line, secrets));
        let reason = redact(&e.message, secrets);
        fail(
            path,
            format!(
                "plugin {}: generate printed something other than Kubernetes objects: line {line_no}: {line:?}: {reason}",
                plugin.full_name()
            ),
        )
    })?;
    Ok(manifests
        .into_iter()
        .map(|m| RenderedObject {
            object: m.object.into(),
            file: path.to_string(),
            line: 0,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_expand_as_os_expand() {
        let m = |n: &str| match n {
            "A" => "x".to_string(),
            "$" => "$".to_string(),
            _ => String::new(),
        };
        assert_eq!(go_expand("test-$A", m), "test-x");
        assert_eq!(go_expand("${A}b", m), "xb");
        assert_eq!(go_expand("$$A", m), "$A");
        assert_eq!(go_expand("a$", m), "a$");
        assert_eq!(go_expand("$B-$1", m), "-");
        assert_eq!(go_expand("${}z", m), "z");
        assert_eq!(go_expand("${Az", m), "Az");
        assert_eq!(go_expand("$-x", m), "x");
        assert_eq!(go_expand("no dollar", m), "no dollar");
        assert_eq!(go_expand("$ x", m), "$ x");
    }

    #[test]
    fn parameters_as_argo_cd_passes_them() {
        let p = serde_json::json!([
            {"name": "values-files", "array": ["values-dev.yaml"]},
            {"name": "helm-parameters", "map": {"image.tag": "v1.2.3"}},
            {"name": "some-string", "string": "a<b"},
        ]);
        let (json, vars) = parameters(Some(&p)).unwrap();
        assert_eq!(
            json,
            r#"[{"array":["values-dev.yaml"],"name":"values-files"},{"map":{"image.tag":"v1.2.3"},"name":"helm-parameters"},{"name":"some-string","string":"a\u003cb"}]"#
        );
        assert_eq!(
            vars,
            vec![
                (
                    "PARAM_VALUES_FILES_0".to_string(),
                    "values-dev.yaml".to_string()
                ),
                ("PARAM_HELM_PARAMETERS_IMAGE_TAG".into(), "v1.2.3".into()),
                ("PARAM_SOME_STRING".into(), "a<b".into()),
            ]
        );
        assert_eq!(parameters(None).unwrap().0, "null");
        assert_eq!(escaped("a.b-c_d9é"), "A_B_C_D9_");
    }

    #[test]
    fn discovery_globs_as_go() {
        let re = |p: &str, ds: bool| glob_regex(p, ds).unwrap();
        assert!(re("app/*.yaml", false).is_match("app/x.yaml"));
        assert!(!re("app/*.yaml", false).is_match("app/sub/x.yaml"));
        assert!(re("app/**/Chart.yaml", true).is_match("app/Chart.yaml"));
        assert!(re("app/**/Chart.yaml", true).is_match("app/a/b/Chart.yaml"));
        assert!(re("app/[^x]?.yml", false).is_match("app/ab.yml"));
        assert!(!re("app/[^x]?.yml", false).is_match("app/xb.yml"));
    }
}
