//! `plumb preview`: what a change does to every Application of a repository — each rendered
//! at the base and at the head revision through the one pipeline, diffed per object
//! ([`plumb_preview`]), as a pull-request comment, JSON or text.
//!
//! The Applications are the `Application` manifests of the repository (under `--apps`) at
//! each revision, the Applications its ApplicationSets generate there and those its apps
//! render (app-of-apps), and with `--live`/`--cluster` the Applications of the cluster whose
//! sources are this repository. Each is rendered with the sources that are this repository
//! (its `--repo-url`, else `origin`'s URL) read from `--repo` at that revision; a source in
//! another repository is read at its own `targetRevision` (through the repository cache, as
//! `plumb render` reads it), alike at both. An app whose
//! `argocd.argoproj.io/manifest-generate-paths` annotation names paths the change does not
//! touch is not rendered (counted), as Argo CD skips it.

use crate::cluster_args::ClusterArgs;
use crate::source_args::{AppFrom, SourceArgs, render_sources_on};
use crate::{EXIT_DIFFERENCES, EXIT_IN_SYNC};
use anyhow::{Result, anyhow};
use plumb_core::argo::Application;
use plumb_preview::{AppPreview, AppStatus};
use plumb_render::source::{EntryKind, GitSource, SourceFs};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The annotation naming the paths an app's manifests come from (Argo CD's).
const GENERATE_PATHS: &str = "argocd.argoproj.io/manifest-generate-paths";

/// The most manifest files read at one revision (a bound on a huge repository).
const MAX_FILES: usize = 20_000;

/// The deepest app-of-apps followed (an app rendering apps rendering apps …).
const MAX_NESTING: usize = 5;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PreviewFormat {
    Markdown,
    Json,
    Text,
    /// One self-contained page, with the web pages' style.
    Html,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Exit 1 when an app changes.
    Changes,
    /// Exit 1 only when the preflight (--live) warns that the cluster will fight the change.
    Preflight,
    /// Exit 0 whatever changes (errors still exit 2).
    Never,
}

#[derive(clap::Args)]
pub struct PreviewArgs {
    /// The git repository the change is in.
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// The revision before the change (the target branch).
    #[arg(long, value_name = "REV")]
    base: String,
    /// The revision with the change (the pull request's head).
    #[arg(long, value_name = "REV")]
    head: String,
    /// Where the Application manifests are, in the repository (directories or files;
    /// default: all of it).
    #[arg(long, value_name = "PATH", num_args = 1..)]
    apps: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = PreviewFormat::Markdown)]
    output: PreviewFormat,
    /// Also write the whole report (Markdown, nothing cut) to FILE.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// When to exit 1.
    #[arg(long, value_enum, default_value_t = FailOn::Changes)]
    fail_on: FailOn,
    /// Config management plugins, as `plumb render --plugins`.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// The URL Applications name this repository by (more than once for several spellings).
    /// Default: the repository's `origin` remote; without either, every source that is not a
    /// chart repository is this repository.
    #[arg(long, value_name = "URL")]
    repo_url: Vec<String>,
    /// Credentials for other repositories and chart repositories, as `plumb render
    /// --repo-creds`.
    #[arg(long, value_name = "PATH")]
    repo_creds: Option<PathBuf>,
    /// A label that changes on every release (a chart's version label): left out of every
    /// object on both sides. More than once for several.
    #[arg(long, value_name = "KEY")]
    ignore_label: Vec<String>,
    /// A kind (`KIND` or `GROUP/KIND`) left out of the preview. More than once for several.
    #[arg(long, value_name = "KIND")]
    suppress_kind: Vec<String>,
    /// A `plumb snapshot` of the cluster: its Applications whose sources are this repository
    /// are previewed too, and the doctor's preflight runs on each app the change touches,
    /// warning of every field it declares that a webhook, policy, HPA or controller there will
    /// rewrite.
    #[arg(long, value_name = "DIR", conflicts_with = "cluster")]
    live: Option<PathBuf>,
    /// With --cluster: as --live, read from the cluster.
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// Which sources are this repository (read from `--repo` at the revision previewed).
struct ThisRepo {
    /// The repository, absolute.
    dir: PathBuf,
    /// The URLs it is named by, as [`repo_identity`]s; `None`: not known, every source that
    /// is not a chart repository is this one.
    urls: Option<Vec<String>>,
}

/// A repository URL as the repository it names, whatever the spelling: Argo CD's normal form
/// without the scheme and user (`https://github.com/o/r.git` and `git@github.com:o/r` are
/// both `github.com/o/r`).
fn repo_identity(url: &str) -> String {
    let u = plumb_core::project::normalize_repo_url(url);
    let rest = u.split_once("://").map_or(u.as_str(), |(_, r)| r);
    match rest.split_once('/') {
        Some((host, path)) => format!("{}/{path}", host.rsplit('@').next().unwrap_or(host)),
        None => rest.rsplit('@').next().unwrap_or(rest).to_string(),
    }
}

impl ThisRepo {
    fn new(args: &PreviewArgs) -> Result<ThisRepo> {
        let dir = std::fs::canonicalize(&args.repo)
            .map_err(|e| anyhow!("--repo {}: {e}", args.repo.display()))?;
        let mut urls: Vec<String> = args.repo_url.iter().map(|u| repo_identity(u)).collect();
        if urls.is_empty() {
            let origin = std::process::Command::new("git")
                .arg("-C")
                .arg(&dir)
                .args(["config", "--get", "remote.origin.url"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .filter(|u| !u.is_empty());
            urls.extend(origin.map(|u| repo_identity(&u)));
        }
        Ok(ThisRepo {
            dir,
            urls: (!urls.is_empty()).then_some(urls),
        })
    }

    /// Whether `source` (an Application's `spec.source` or one of `spec.sources`) is read
    /// from this repository.
    fn holds(&self, source: &Value) -> bool {
        if source
            .get("chart")
            .and_then(Value::as_str)
            .is_some_and(|c| !c.trim().is_empty())
        {
            return false;
        }
        let url = source
            .get("repoURL")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match &self.urls {
            None => true,
            Some(urls) => url.trim().is_empty() || urls.contains(&repo_identity(url)),
        }
    }

    /// Whether any source of `app` is this repository's, by URL (an app of the cluster is
    /// previewed only then; with no URL known, none is).
    fn feeds(&self, app: &Value) -> bool {
        self.urls.is_some() && sources_of(app).iter().any(|s| self.holds(s))
    }

    /// `app` with each source of this repository read from `--repo` at `revision`.
    fn localize(&self, app: &Value, revision: &str) -> Value {
        let mut app = app.clone();
        let dir = self.dir.display().to_string();
        let mut point = |s: &mut Value| {
            if self.holds(s)
                && let Some(m) = s.as_object_mut()
            {
                m.insert("repoURL".into(), Value::String(dir.clone()));
                m.insert("targetRevision".into(), Value::String(revision.to_string()));
            }
        };
        if let Some(s) = app.pointer_mut("/spec/source") {
            point(s);
        }
        if let Some(Value::Array(list)) = app.pointer_mut("/spec/sources") {
            list.iter_mut().for_each(&mut point);
        }
        app
    }
}

/// An Application's sources: `spec.sources`, else `spec.source`.
fn sources_of(app: &Value) -> Vec<&Value> {
    match app.pointer("/spec/sources").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list.iter().collect(),
        _ => app.pointer("/spec/source").into_iter().collect(),
    }
}

/// Every `Application` manifest under `roots` in the repository at one revision, by
/// `NAMESPACE/NAME`. A file that holds an Application but is not valid YAML is an error
/// naming it; other files that do not parse are not manifests of interest.
fn applications(
    fs: &dyn SourceFs,
    roots: &[String],
    clusters: Option<&ClusterSecrets>,
) -> Result<BTreeMap<String, Value>> {
    let mut apps = BTreeMap::new();
    let mut stack: Vec<String> = if roots.is_empty() {
        vec![String::new()]
    } else {
        roots
            .iter()
            .map(|r| r.trim_matches('/').to_string())
            .collect()
    };
    let mut files = 0usize;
    while let Some(path) = stack.pop() {
        // A file given as a root lists nothing.
        let entries = fs.list(&path).unwrap_or_default();
        let is_dir = path.is_empty() || !entries.is_empty() || fs.read(&path).is_err();
        let mut found_files: Vec<String> = Vec::new();
        if is_dir {
            for (name, kind) in entries {
                let p = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}/{name}")
                };
                match kind {
                    EntryKind::Dir if !name.starts_with('.') => stack.push(p),
                    EntryKind::File
                        if [".yaml", ".yml", ".json"].iter().any(|e| name.ends_with(e)) =>
                    {
                        found_files.push(p)
                    }
                    _ => {}
                }
            }
        } else {
            found_files.push(path.clone());
        }
        for file in found_files {
            files += 1;
            if files > MAX_FILES {
                return Err(anyhow!(
                    "--apps: more than {MAX_FILES} manifest files; name the directories of the Applications"
                ));
            }
            let Ok(bytes) = fs.read(&file) else { continue };
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            if !text.contains("kind: Application") && !text.contains("\"Application") {
                continue;
            }
            let docs = plumb_render::parse_str(&text, std::path::Path::new(&file))
                .map_err(|e| anyhow!("{e}"))?;
            for m in docs {
                let o = m.object;
                if is_appset(&o) {
                    for app in expand(fs, &o, &file, clusters)? {
                        apps.insert(app_name(&app), app);
                    }
                    continue;
                }
                if crate::doctor_cmd::is_application(&o) {
                    let ns = o
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("argocd");
                    let name = o
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    apps.insert(format!("{ns}/{name}"), o);
                }
            }
        }
    }
    Ok(apps)
}

fn is_appset(o: &Value) -> bool {
    o.get("kind").and_then(Value::as_str) == Some("ApplicationSet")
        && o.get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("argoproj.io/") || v.starts_with("plumb.dev/"))
}

/// `NAMESPACE/NAME` of an Application (namespace `argocd` when it has none).
fn app_name(o: &Value) -> String {
    let ns = o
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("argocd");
    let name = o
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    format!("{ns}/{name}")
}

/// Every git generator reads this repository, at the revision being previewed (whatever its
/// `repoURL` and `revision`): the ApplicationSet sees the tree of the same revision it is in.
struct SideRepos<'a>(&'a dyn SourceFs);

impl plumb_appset::generators::Repos for SideRepos<'_> {
    fn files(&self, _repo_url: &str, _revision: &str) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        plumb_render::render::walk_tree(self.0, &[String::new()], &mut |rel, kind| {
            if kind == EntryKind::File {
                out.push(rel.to_string());
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        out.sort();
        Ok(out)
    }

    fn read(&self, _repo_url: &str, _revision: &str, path: &str) -> Result<Vec<u8>, String> {
        self.0.read(path).map_err(|e| e.to_string())
    }
}

/// With `--cluster`: the cluster Secrets of each namespace an ApplicationSet is in, read once,
/// for the `clusters` generator.
struct ClusterSecrets {
    conn: crate::cluster_args::Connected,
    read: std::cell::RefCell<BTreeMap<String, Vec<plumb_appset::Cluster>>>,
}

impl ClusterSecrets {
    fn of(&self, namespace: &str) -> Result<Vec<plumb_appset::Cluster>> {
        if let Some(c) = self.read.borrow().get(namespace) {
            return Ok(c.clone());
        }
        let list = crate::appset_cmd::cluster_list(&self.conn.rt, &self.conn.cluster, namespace)?;
        self.read
            .borrow_mut()
            .insert(namespace.to_string(), list.clone());
        Ok(list)
    }
}

/// The Applications an ApplicationSet (in `file`) generates at this revision; an error names
/// the file and what the generator or template says. With `--cluster`, the clusters generator
/// reads the cluster Secrets of the ApplicationSet's namespace; without, it says it has none.
fn expand(
    fs: &dyn SourceFs,
    appset: &Value,
    file: &str,
    clusters: Option<&ClusterSecrets>,
) -> Result<Vec<Value>> {
    let name = appset
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespace = appset
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or(plumb_core::ARGOCD_NAMESPACE);
    let list = clusters.map(|c| c.of(namespace)).transpose()?;
    plumb_appset::generate(
        appset,
        &plumb_appset::Inputs {
            repos: &SideRepos(fs),
            clusters: list.as_deref(),
            services: &plumb_appset::services::NoServices,
            appset_name: name,
        },
    )
    // The error names the ApplicationSet and the generator or field already.
    .map_err(|e| anyhow!("{file}: {e}"))
}

/// A cycle of apps rendering each other (`a → b → a`), or a chain deeper than
/// [`MAX_NESTING`], if `renders` has one.
fn cycle(renders: &BTreeMap<String, std::collections::BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        renders: &BTreeMap<String, std::collections::BTreeSet<String>>,
        app: &str,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == app) {
            let mut c = path[i..].to_vec();
            c.push(app.to_string());
            return Some(c);
        }
        if path.len() > MAX_NESTING {
            let mut c = path.clone();
            c.push(format!("{app} (nested deeper than {MAX_NESTING})"));
            return Some(c);
        }
        path.push(app.to_string());
        for child in renders.get(app).into_iter().flatten() {
            if let Some(c) = visit(renders, child, path) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    renders
        .keys()
        .find_map(|app| visit(renders, app, &mut Vec::new()))
}

/// The paths the change touches (`git diff --name-only base head`).
fn changed_paths(args: &PreviewArgs) -> Result<Vec<String>> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&args.repo)
        .args([
            "diff",
            "--name-only",
            "--no-renames",
            &args.base,
            &args.head,
            "--",
        ])
        .output()
        .map_err(|e| anyhow!("git: {e}"))?;
    if !out.status.success() {
        return Err(anyhow!(
            "git diff {}..{}: {}",
            args.base,
            args.head,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// Whether the change cannot affect `app`: it names the paths its manifests come from
/// (`manifest-generate-paths`, `;`-separated, relative to its source path or absolute from
/// the repository's root) and the change touches none of them. Without the annotation, an app
/// is always rendered.
fn unaffected(app: &Value, changed: &[String]) -> bool {
    let Some(paths) = app
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(GENERATE_PATHS))
        .and_then(Value::as_str)
    else {
        return false;
    };
    let source_path = app
        .pointer("/spec/source/path")
        .and_then(Value::as_str)
        .unwrap_or("");
    let prefixes: Vec<String> = paths
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.strip_prefix('/') {
            Some(abs) => abs.trim_end_matches('/').to_string(),
            None => normalize(&format!("{source_path}/{p}")),
        })
        .collect();
    !prefixes.is_empty()
        && !changed.iter().any(|c| {
            prefixes
                .iter()
                .any(|p| p.is_empty() || c == p || c.starts_with(&format!("{p}/")))
        })
}

/// `a/./b/../c` as `a/c`.
fn normalize(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    out.join("/")
}

/// The objects `app` renders with this repository's sources read at `revision` (the others at
/// their own).
fn render(args: &PreviewArgs, this: &ThisRepo, app: &Value, revision: &str) -> Result<Vec<Value>> {
    let app = this.localize(app, revision);
    let typed = Application::from_value(&app).map_err(|e| anyhow!("{e}"))?;
    let source = SourceArgs {
        plugins: args.plugins.clone(),
        repo_creds: args.repo_creds.clone(),
        ..SourceArgs::default()
    };
    let rendered = render_sources_on(&source, Some((&typed, AppFrom::Object(None))), None)?;
    Ok(rendered
        .into_iter()
        .flat_map(|s| s.rendered.objects)
        .map(|o| o.object.into_value())
        .collect())
}

/// The fields a change declares anew in an app: per object (`GROUP/KIND NAME`), the JSON
/// pointers of the fields whose value differs from the base's (`None`: a new object).
type Touched = BTreeMap<String, Option<Vec<String>>>;

fn object_id(o: &Value) -> Option<String> {
    let key = plumb_core::ResourceKey::of(o)?;
    Some(format!("{}/{} {}", key.group, key.kind, key.name))
}

fn touched_fields(base: Option<&[Value]>, head: &[Value]) -> Touched {
    let before: BTreeMap<String, &Value> = base
        .into_iter()
        .flatten()
        .filter_map(|o| Some((object_id(o)?, o)))
        .collect();
    head.iter()
        .filter_map(|o| {
            let id = object_id(o)?;
            let fields = before.get(&id).map(|b| {
                plumb_diff::fields::changed_fields(b, o)
                    .into_iter()
                    .map(|f| f.path)
                    .collect()
            });
            Some((id, fields))
        })
        .collect()
}

/// Whether a finding is on a field the change declares anew (`None`: not known, kept).
fn declared_anew(touched: Option<&Touched>, f: &plumb_doctor::Finding) -> bool {
    let Some(touched) = touched else {
        return true;
    };
    let id = format!(
        "{}/{} {}",
        f.resource.group, f.resource.kind, f.resource.name
    );
    match touched.get(&id) {
        // A new object: all it declares is new.
        Some(None) => true,
        Some(Some(paths)) => paths.iter().any(|p| {
            f.path == *p
                || f.path.starts_with(&format!("{p}/"))
                || p.starts_with(&format!("{}/", f.path))
        }),
        None => false,
    }
}

/// The doctor's preflight of `app` at the head against the snapshot `live` (`plumb doctor
/// --preflight --repo --revision --path`): one line per field the change declares anew that the
/// cluster will rewrite. An app
/// with several sources, or none with a path, is not checked (said in the line).
fn preflight(
    args: &PreviewArgs,
    live: &[String],
    app: &Value,
    touched: Option<&Touched>,
) -> Vec<String> {
    let sources = app.pointer("/spec/sources").and_then(Value::as_array);
    let Some(path) = app
        .pointer("/spec/source/path")
        .and_then(Value::as_str)
        .filter(|_| sources.is_none_or(Vec::is_empty))
    else {
        return vec!["not checked: the preflight takes one source with a path".into()];
    };
    let mut argv: Vec<String> = vec!["--preflight".into()];
    argv.extend(live.iter().cloned());
    argv.extend(
        [
            "--repo",
            &args.repo.display().to_string(),
            "--revision",
            &args.head,
            "--path",
            path,
        ]
        .map(str::to_string),
    );
    match crate::doctor_cmd::diagnose_argv(&argv) {
        Ok(d) => d
            .report
            .findings
            .iter()
            // What the change itself declares: a field git already declared and the cluster
            // already rewrites is the app's own fight, not this change's.
            .filter(|f| declared_anew(touched, f))
            .map(|f| {
                let mut line = format!(
                    "{} `{}`: rewritten by {} {}",
                    f.resource,
                    f.path,
                    f.cause.kind.as_str(),
                    f.cause.name
                );
                if let Some(at) = &f.declared_at {
                    line.push_str(&format!(" (git declares it at {}:{})", at.file, at.line));
                }
                line
            })
            .collect(),
        Err(e) => vec![format!("not checked: {e}")],
    }
}

/// The Applications of the cluster (`--live` snapshot or `--cluster`) whose sources are this
/// repository, by `NAMESPACE/NAME`; none unless a flag names the cluster.
fn live_apps(args: &PreviewArgs, this: &ThisRepo) -> Result<BTreeMap<String, Value>> {
    let apps: Vec<Value> = match (&args.live, args.cluster.cluster) {
        (Some(dir), _) => crate::doctor_cmd::snapshot_applications(dir)?,
        (None, true) => crate::app_cmd::read_apps(&args.cluster, None)?,
        (None, false) => return Ok(BTreeMap::new()),
    };
    if this.urls.is_none() && !apps.is_empty() {
        eprintln!(
            "note: the cluster's Applications are not previewed: no URL names this repository (pass --repo-url, or give it an origin remote)"
        );
    }
    Ok(apps
        .into_iter()
        .filter(|a| this.feeds(a))
        .map(|mut a| {
            // What it is, not what the cluster made of it.
            if let Some(m) = a.as_object_mut() {
                m.remove("status");
                m.remove("operation");
            }
            (app_name(&a), a)
        })
        .collect())
}

pub fn run(args: PreviewArgs) -> Result<u8> {
    let this = ThisRepo::new(&args)?;
    let noise = plumb_preview::Noise {
        ignore_labels: args.ignore_label.clone(),
        suppress_kinds: args.suppress_kind.clone(),
    };
    let open = |flag: &str, rev: &str| {
        GitSource::open(&args.repo, Some(rev)).map_err(|e| anyhow!("--{flag} {rev}: {e}"))
    };
    let (base_fs, head_fs) = (open("base", &args.base)?, open("head", &args.head)?);
    let clusters = if args.cluster.cluster {
        Some(ClusterSecrets {
            conn: crate::cluster_args::connect(&args.cluster)?,
            read: Default::default(),
        })
    } else {
        None
    };
    let mut base_apps = applications(&base_fs, &args.apps, clusters.as_ref())?;
    let mut head_apps = applications(&head_fs, &args.apps, clusters.as_ref())?;
    // The cluster's apps of this repository, where the repository does not declare them.
    for (name, app) in live_apps(&args, &this)? {
        if !base_apps.contains_key(&name) && !head_apps.contains_key(&name) {
            base_apps.insert(name.clone(), app.clone());
            head_apps.insert(name, app);
        }
    }
    let changed = changed_paths(&args)?; // Each side's Applications, with the apps that rendered them (app-of-apps).
    let mut sides: [BTreeMap<String, Value>; 2] = [base_apps, head_apps];
    let mut previews: Vec<AppPreview> = Vec::new();
    // Per app, the fields the change declares anew (for the preflight).
    let mut touched: BTreeMap<String, Touched> = BTreeMap::new();
    let mut done: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    // Which app renders which (app-of-apps), at either revision.
    let mut renders: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    while let Some(name) = sides[0]
        .keys()
        .chain(sides[1].keys())
        .find(|n| !done.contains(*n))
        .cloned()
    {
        done.insert(name.clone());
        let (b, h) = (sides[0].get(&name).cloned(), sides[1].get(&name).cloned());
        // The same Application at both revisions, whose manifests the change cannot touch.
        if let (Some(b), Some(h)) = (&b, &h)
            && b == h
            && unaffected(h, &changed)
        {
            previews.push(AppPreview {
                app: name.clone(),
                status: AppStatus::Skipped,
                objects: Vec::new(),
                preflight: Vec::new(),
            });
            continue;
        }
        let side = |app: Option<&Value>, rev: &str| -> Result<Option<Vec<Value>>> {
            app.map(|a| render(&args, &this, a, rev)).transpose()
        };
        match (side(b.as_ref(), &args.base), side(h.as_ref(), &args.head)) {
            (Ok(base), Ok(head)) => {
                // The Applications this one renders join their side (app-of-apps).
                for (i, objects) in [(0, &base), (1, &head)] {
                    for child in objects
                        .iter()
                        .flatten()
                        .filter(|o| crate::doctor_cmd::is_application(o))
                    {
                        let child_name = app_name(child);
                        renders
                            .entry(name.clone())
                            .or_default()
                            .insert(child_name.clone());
                        sides[i].entry(child_name).or_insert_with(|| child.clone());
                    }
                }
                if let Some(cycle) = cycle(&renders) {
                    return Err(anyhow!("app-of-apps cycle: {}", cycle.join(" → ")));
                }
                if (args.live.is_some() || args.cluster.cluster)
                    && let Some(head) = &head
                {
                    touched.insert(name.clone(), touched_fields(base.as_deref(), head));
                }
                previews.push(plumb_preview::preview_app(name.clone(), base, head, &noise))
            }
            (Err(e), _) | (_, Err(e)) => previews.push(AppPreview {
                app: name.clone(),
                status: AppStatus::Error(format!("{e}")),
                objects: Vec::new(),
                preflight: Vec::new(),
            }),
        }
    }
    previews.sort_by(|a, b| a.app.cmp(&b.app));
    let head_apps = &sides[1];
    let live_argv = match (&args.live, args.cluster.cluster) {
        (Some(dir), _) => Some(vec!["--live".to_string(), dir.display().to_string()]),
        (None, true) => Some(args.cluster.argv()),
        (None, false) => None,
    };
    if let Some(live) = &live_argv {
        for p in previews
            .iter_mut()
            .filter(|p| matches!(p.status, AppStatus::Added | AppStatus::Changed))
        {
            if let Some(app) = head_apps.get(&p.app) {
                p.preflight = preflight(&args, live, app, touched.get(&p.app));
            }
        }
    }
    let full = plumb_preview::markdown(&previews, &args.base, &args.head, usize::MAX);
    if let Some(out) = &args.out {
        std::fs::write(out, &full).map_err(|e| anyhow!("--out {}: {e}", out.display()))?;
    }
    // An app that cannot be rendered is a note in the report while others render; when none
    // does, the preview says nothing, and that is an error.
    let rendered = previews
        .iter()
        .filter(|p| !matches!(p.status, AppStatus::Error(_) | AppStatus::Skipped))
        .count();
    if rendered == 0
        && let Some((app, m)) = previews.iter().find_map(|p| match &p.status {
            AppStatus::Error(m) => Some((&p.app, m)),
            _ => None,
        })
    {
        return Err(anyhow!(
            "no Application could be rendered; {app}: {}",
            m.lines().next().unwrap_or_default()
        ));
    }
    let text = match args.output {
        PreviewFormat::Markdown => plumb_preview::markdown(
            &previews,
            &args.base,
            &args.head,
            plumb_preview::COMMENT_LIMIT,
        ),
        PreviewFormat::Json => format!(
            "{:#}\n",
            serde_json::json!({"base": args.base, "head": args.head, "apps": previews})
        ),
        PreviewFormat::Text => plumb_preview::text(&previews, &args.base, &args.head),
        PreviewFormat::Html => {
            plumb_web::preview::preview_report(&previews, &args.base, &args.head)
        }
    };
    crate::output::stdout(&text)?;
    Ok(match args.fail_on {
        FailOn::Changes if plumb_preview::has_changes(&previews) => EXIT_DIFFERENCES,
        FailOn::Preflight if plumb_preview::has_warnings(&previews) => EXIT_DIFFERENCES,
        _ => EXIT_IN_SYNC,
    })
}

#[cfg(test)]
mod tests {
    use super::repo_identity;

    #[test]
    fn one_repository_whatever_the_spelling() {
        for url in [
            "https://github.com/Org/Repo.git",
            "git@github.com:org/repo",
            "ssh://git@github.com/org/repo.git/",
            "https://token@github.com/org/repo",
        ] {
            assert_eq!(repo_identity(url), "github.com/org/repo", "{url}");
        }
        assert_ne!(
            repo_identity("https://github.com/org/other"),
            "github.com/org/repo"
        );
    }
}
