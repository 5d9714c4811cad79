//! `plumb health`: the health of objects in files, as sync waves and app health judge it
//! (user Lua scripts, built-in checks, the generic status-conditions check). Files are read as
//! every command reads them, except that an object without `metadata.name` is judged too (as
//! `argocd admin settings resource-overrides health` judges one), with an empty name.
//!
//! [`HealthScriptArgs`] (`--settings-configmap` / `--resource-customizations`) is shared with
//! the controller and `app sync`, which install the checker the same way; the directory is read
//! before connecting.

use crate::EXIT_IN_SYNC;
use anyhow::{Result, anyhow};
use plumb_health::{Assessment, Checker, Customizations, LuaLimits};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct HealthArgs {
    /// An `argocd-cm` ConfigMap whose `resource.customizations.health.<group>_<kind>` and
    /// `resource.customizations` health scripts apply (they win over --resource-customizations).
    #[arg(long, value_name = "CM.yaml")]
    settings: Option<PathBuf>,
    /// A directory in Argo CD's `resource_customizations/<group>/<kind>/health.lua` layout
    /// (`_` as a group or kind directory name is a wildcard).
    #[arg(long = "resource-customizations", value_name = "DIR")]
    resource_customizations: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = HealthFormat::Text)]
    output: HealthFormat,
    /// YAML/JSON files or directories of objects (live objects, with their status).
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum HealthFormat {
    /// `GROUP/KIND NAMESPACE/NAME STATUS MESSAGE`, one object a line.
    Text,
    /// A JSON array of `{group, kind, namespace, name, status, message, source}`.
    Json,
}

/// The checker for these flags: the ConfigMap's scripts, then the directory's.
pub fn checker(settings: Option<&PathBuf>, dir: Option<&PathBuf>) -> Result<Checker> {
    let mut custom = Customizations::new();
    if let Some(p) = settings {
        custom.extend(Customizations::from_settings_file(p).map_err(|e| anyhow!("{e}"))?);
    }
    if let Some(d) = dir {
        custom.extend(Customizations::from_dir(d).map_err(|e| anyhow!("{e}"))?);
    }
    Ok(Checker::new(custom, LuaLimits::default()))
}

// Health customizations for a process that syncs (the controller, `plumb app sync`): read
// once at start, used by every sync wave and app health it computes. (A plain comment: the
// commands are built when run, and an `Args` struct's doc comment, flattened into one, would
// then replace that command's description.)
#[derive(clap::Args)]
pub struct HealthScriptArgs {
    /// The `argocd-cm` ConfigMap (`NAMESPACE/NAME`) whose health scripts apply (they win over
    /// --resource-customizations).
    #[arg(long = "settings-configmap", value_name = "NS/NAME")]
    settings_configmap: Option<String>,
    /// A directory in Argo CD's `resource_customizations/<group>/<kind>/health.lua` layout.
    #[arg(long = "resource-customizations", value_name = "DIR")]
    resource_customizations: Option<PathBuf>,
}

impl HealthScriptArgs {
    /// The `--resource-customizations` directory's scripts: local, so read before connecting.
    pub fn load_dir(&self) -> Result<Customizations> {
        match &self.resource_customizations {
            Some(d) => Customizations::from_dir(d).map_err(|e| anyhow!("{e}")),
            None => Ok(Customizations::new()),
        }
    }

    /// `--settings-configmap` as namespace and name.
    pub fn settings_configmap(&self) -> Result<Option<(&str, &str)>> {
        self.settings_configmap
            .as_deref()
            .map(|key| {
                key.split_once('/')
                    .ok_or_else(|| anyhow!("--settings-configmap {key}: expected NAMESPACE/NAME"))
            })
            .transpose()
    }

    /// Reads the `--settings-configmap` scripts, adds `dir` (from [`Self::load_dir`]) after
    /// them and installs the checker for the process.
    pub async fn install(
        &self,
        cluster: &plumb_cluster::Cluster,
        dir: Customizations,
    ) -> Result<()> {
        let cm = match self.settings_configmap()? {
            Some((ns, name)) => Some(
                cluster
                    .get_object("", "ConfigMap", ns, name)
                    .await
                    .map_err(|e| anyhow!("--settings-configmap {ns}/{name}: {e}"))?
                    .ok_or_else(|| anyhow!("--settings-configmap {ns}/{name}: not found"))?,
            ),
            None => None,
        };
        self.install_with(cm.as_ref(), dir)
    }

    /// Installs the checker of the `--settings-configmap` ConfigMap `cm` (already read: from a
    /// cluster or a snapshot) and `dir` after it.
    pub fn install_with(&self, cm: Option<&Value>, dir: Customizations) -> Result<()> {
        let mut custom = Customizations::new();
        if let (Some(cm), Some(key)) = (cm, &self.settings_configmap) {
            custom.extend(
                Customizations::from_configmap(cm, &format!("ConfigMap {key}"))
                    .map_err(|e| anyhow!("{e}"))?,
            );
        }
        custom.extend(dir);
        if !custom.is_empty() {
            plumb_health::install(Checker::new(custom, LuaLimits::default()))
                .map_err(|_| anyhow!("health checks were already set up"))?;
        }
        Ok(())
    }
}

fn str_at<'a>(obj: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = obj;
    for k in path {
        match cur.get(*k) {
            Some(v) => cur = v,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

/// Group, kind, namespace, name.
fn identity(obj: &Value) -> (&str, &str, &str, &str) {
    let api_version = str_at(obj, &["apiVersion"]);
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    (
        group,
        str_at(obj, &["kind"]),
        str_at(obj, &["metadata", "namespace"]),
        str_at(obj, &["metadata", "name"]),
    )
}

/// What `plumb_render` says of an object without `metadata.name`.
const MISSING_NAME: &str = "not a Kubernetes object: missing metadata.name";

/// Stands in for a missing name while `plumb_render` checks an object, and is removed after.
const PLACEHOLDER_NAME: &str = "plumb-health-unnamed-object";

/// The objects of `paths`, read as every other command reads files
/// ([`plumb_render::load_paths`]: the same limits and checks, the same errors), except that an
/// object without `metadata.name` is judged too, with an empty name: Argo CD's
/// `argocd admin settings resource-overrides health` judges a file's object whatever its name,
/// and Argo CD's own health test inputs often have none.
fn load(paths: &[PathBuf]) -> Result<Vec<Value>> {
    match plumb_render::load_paths(paths) {
        Ok(found) => return Ok(found.into_iter().map(|m| m.object).collect()),
        Err(e) if e.message != MISSING_NAME => return Err(anyhow!("{e}")),
        Err(_) => {}
    }
    let mut out = Vec::new();
    for file in manifest_files(paths)? {
        match plumb_render::load_file(&file) {
            Ok(found) => out.extend(found.into_iter().map(|m| m.object)),
            Err(e) if e.message == MISSING_NAME => out.extend(load_unnamed(&file)?),
            Err(e) => return Err(anyhow!("{e}")),
        }
    }
    Ok(out)
}

/// The files [`plumb_render::load_paths`] reads: each file named, and the manifest files under
/// each directory (recursively, sorted, no directory whose name starts with `.`).
fn manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) -> Result<()> {
        let read = |e: std::io::Error| anyhow!("{}: cannot read directory: {e}", dir.display());
        for entry in std::fs::read_dir(dir).map_err(read)? {
            let entry = entry.map_err(read)?;
            let path = entry.path();
            if entry.file_type().map_err(read)?.is_dir() {
                if !entry.file_name().to_string_lossy().starts_with('.') {
                    walk(&path, out)?;
                }
            } else if plumb_render::is_manifest_file(&path) {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut found)?;
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// A file holding an object without a name, which [`plumb_render::load_file`] has read (so it
/// is a regular UTF-8 file within the size limit): document by document, each through
/// [`plumb_render::parse_str`], an unnamed object with a placeholder name the checks then drop.
fn load_unnamed(file: &std::path::Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(file).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    // An error in a document, at its line in the file.
    let shifted = |start: usize, e: plumb_render::LoadError| {
        let line = Some(e.line.map_or(start, |l| l + start - 1));
        let column = e.column;
        let message = e.message.replace(PLACEHOLDER_NAME, "(no name)");
        let file = file.to_owned();
        anyhow!(
            "{}",
            plumb_render::LoadError {
                file,
                line,
                column,
                message
            }
        )
    };
    // An error in an object checked with a placeholder name: at the line its document starts.
    let at = |start: usize, e: plumb_render::LoadError| {
        shifted(
            start,
            plumb_render::LoadError {
                line: None,
                column: None,
                ..e
            },
        )
    };
    let mut out = Vec::new();
    if file.extension().is_some_and(|e| e == "json") {
        for v in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
            let v = v.map_err(|e| anyhow!("{}: invalid JSON: {e}", file.display()))?;
            out.extend(named_for_checks(v, file).map_err(|e| at(1, e))?);
        }
        return Ok(out);
    }
    for (start, doc) in yaml_documents(&text) {
        match plumb_render::parse_str(doc, file) {
            Ok(found) => out.extend(found.into_iter().map(|m| m.object)),
            Err(e) if e.message == MISSING_NAME => {
                // plumb_render parsed it already (so within its limits): parse it as it does.
                let options = serde_saphyr::options! {
                    legacy_octal_numbers: true,
                    alias_limits: serde_saphyr::alias_limits! {
                        max_total_replayed_events: plumb_core::limits::MAX_YAML_ALIAS_EVENTS,
                    },
                    emit_comments: false,
                };
                let v: Value = plumb_render::yaml_fast::parse_document(doc)
                    .map(Ok)
                    .unwrap_or_else(|| serde_saphyr::from_str_with_options(doc, options))
                    .map_err(|e| anyhow!("{}:{start}: invalid YAML: {e}", file.display()))?;
                out.extend(named_for_checks(v, file).map_err(|e| at(start, e))?);
            }
            Err(e) => return Err(shifted(start, e)),
        }
    }
    Ok(out)
}

/// `v` (an object, or a List of them) checked by [`plumb_render::parse_str`] as any object is,
/// with [`PLACEHOLDER_NAME`] given to each object that lacks a name, and taken away after
/// (`metadata` too where the object had none).
fn named_for_checks(
    mut v: Value,
    file: &std::path::Path,
) -> Result<Vec<Value>, plumb_render::LoadError> {
    fn name(obj: &mut Value) -> Option<bool> {
        let has_name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        let map = obj.as_object_mut()?;
        if has_name {
            return None;
        }
        let had_metadata = map.get("metadata").is_some_and(Value::is_object);
        if !had_metadata {
            map.insert("metadata".into(), json!({}));
        }
        map["metadata"]["name"] = json!(PLACEHOLDER_NAME);
        Some(had_metadata)
    }
    // A List as plumb_render expands it.
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let is_list = kind.ends_with("List")
        && v.get("items").is_some_and(Value::is_array)
        && v.get("metadata").is_none()
        || kind == "List" && v.get("items").is_some();
    let mut had_metadata = Vec::new();
    match v.get_mut("items").and_then(Value::as_array_mut) {
        Some(items) if is_list => {
            for item in items {
                had_metadata.push(name(item));
            }
        }
        _ => had_metadata.push(name(&mut v)),
    }
    let text = serde_json::to_string(&v).unwrap_or_default();
    let found = plumb_render::parse_str(&text, &file.with_extension("json"))?;
    Ok(found
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let mut obj = m.object;
            if obj.pointer("/metadata/name").and_then(Value::as_str) == Some(PLACEHOLDER_NAME)
                && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.remove("name");
                if had_metadata.get(i).copied().flatten() == Some(false) && meta.is_empty() {
                    obj.as_object_mut().map(|o| o.remove("metadata"));
                }
            }
            obj
        })
        .collect())
}

/// A YAML stream's documents with the line each starts on, split at `---` (and `...`) lines as
/// `plumb_render` splits them; documents of only blanks and comments left out.
fn yaml_documents(text: &str) -> Vec<(usize, &str)> {
    let mut docs = Vec::new();
    let (mut start_byte, mut start_line, mut pos) = (0, 1, 0);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == "---" || trimmed.starts_with("--- ") || trimmed == "..." {
            docs.push((start_line, &text[start_byte..pos]));
            start_byte = pos + line.len();
            start_line = i + 2;
        }
        pos += line.len();
    }
    docs.push((start_line, &text[start_byte..]));
    docs.retain(|(_, doc)| {
        doc.lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    });
    docs
}

pub fn run(args: HealthArgs) -> Result<u8> {
    let checker = checker(
        args.settings.as_ref(),
        args.resource_customizations.as_ref(),
    )?;
    let objects = load(&args.paths)?;
    let results: Vec<Assessment> = plumb_core::parallel::map(&objects, |o| checker.check(o));
    let mut out = crate::output::buffered_stdout();
    match args.output {
        HealthFormat::Json => {
            let rows: Vec<Value> = objects
                .iter()
                .zip(&results)
                .map(|(o, a)| {
                    let (group, kind, namespace, name) = identity(o);
                    json!({
                        "group": group, "kind": kind, "namespace": namespace, "name": name,
                        "status": a.health.status.as_str(), "message": a.health.message,
                        "source": a.source.as_str(),
                    })
                })
                .collect();
            serde_json::to_writer_pretty(&mut out, &rows)?;
            writeln!(out)?;
        }
        HealthFormat::Text => {
            for (o, a) in objects.iter().zip(&results) {
                let (group, kind, namespace, name) = identity(o);
                let gk = format!("{group}/{kind}");
                let nn = format!("{namespace}/{name}");
                let line = format!(
                    "{gk} {nn} {} {}",
                    a.health.status,
                    a.health.message.replace('\n', " ")
                );
                writeln!(out, "{}", line.trim_end())?;
            }
        }
    }
    out.flush()?;
    Ok(EXIT_IN_SYNC)
}
