//! `plumb doctor APP`: why an app stays OutOfSync — per differing field, who rewrites it
//! (with evidence), where git declares it, whether it is a loop, and the fix.

use crate::cluster_args::{ClusterArgs, Connected, connect, connect_destination};
use crate::source_args::{AppFrom, SourceArgs, render_sources_on};
use crate::{EXIT_DIFFERENCES, EXIT_IN_SYNC};
use anyhow::{Result, anyhow, bail};
use plumb_core::argo::{Application, Settings};
use plumb_diff::DiffConfig;
use plumb_diff::compare::{CompareContext, compare};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DoctorFormat {
    Text,
    Json,
    Markdown,
    /// The app page as one self-contained HTML file (no script, nothing loaded from elsewhere).
    Html,
}

#[derive(clap::Args)]
pub struct DoctorArgs {
    /// The Application (Argo CD's or plumb's), looked up by name in the snapshot or the
    /// cluster: NAME, or NAMESPACE/NAME when Applications of that name live in more than one
    /// namespace (with --cluster, looked up in that namespace only). Optional with --preflight.
    #[arg(required_unless_present = "preflight")]
    app: Option<String>,
    /// Before merge: for the desired state of a change (--desired, or --repo/--path), warn
    /// about each declared field that a webhook, admission policy or controller in the
    /// snapshot will rewrite — the fight, caught before it starts. Exit 1 on a warning.
    #[arg(long)]
    preflight: bool,
    /// With --preflight: desired manifests (files or directories) instead of a source.
    #[arg(long, num_args = 1.., value_name = "PATH", requires = "preflight", conflicts_with_all = ["repo", "revision", "path"])]
    desired: Vec<PathBuf>,
    /// A `plumb snapshot` directory: the Application, its live objects and the context
    /// (namespaces, webhooks, policies, HPAs, CRDs).
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "cluster",
        conflicts_with = "cluster"
    )]
    live: Option<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// With --cluster: where the cluster Secrets that resolve the Application's destination
    /// are read from (default: the Application's namespace).
    #[arg(long, value_name = "NAMESPACE", requires = "cluster")]
    control_namespace: Option<String>,
    #[command(flatten)]
    source: SourceArgs,
    /// User health scripts the report's health is judged with, as the controller's; with
    /// --live, the --settings-configmap ConfigMap is looked up in the snapshot.
    #[command(flatten)]
    health: crate::health_cmd::HealthScriptArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = DoctorFormat::Text)]
    output: DoctorFormat,
    /// Apply the first fix of each finding caused by the cluster (a webhook, a policy, a
    /// controller) when it is a git change: edit the work tree of --repo; never commits.
    #[arg(long, conflicts_with = "preflight")]
    fix: bool,
}

/// The Applications of a `plumb snapshot` directory.
pub fn snapshot_applications(dir: &Path) -> Result<Vec<Value>> {
    Ok(plumb_render::load_paths(&[dir.to_path_buf()])
        .map_err(|e| anyhow!("{e}"))?
        .into_iter()
        .map(|m| m.object)
        .filter(is_application)
        .collect())
}

pub fn is_application(o: &Value) -> bool {
    o.get("kind").and_then(Value::as_str) == Some("Application")
        && o.get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("argoproj.io/") || v.starts_with("plumb.dev/"))
}

/// Every object of a snapshot directory (or of a fresh snapshot of the cluster).
/// The objects of the snapshot (or of a snapshot of the cluster), each with its file in
/// the snapshot (`None` for a cluster's), and with --cluster the app's destination cluster
/// (charts are rendered for its version and APIs, as `diff --cluster` does).
/// Then the --settings-configmap ConfigMap, read from the cluster the app is in. Last, with
/// --cluster, the Application as found at home (the snapshot of its destination may hold
/// others of the same name).
type State = (
    Vec<Value>,
    Vec<Option<PathBuf>>,
    Option<Connected>,
    Option<Value>,
    Option<Value>,
);

fn load_state(args: &DoctorArgs, change_namespaces: &[String]) -> Result<State> {
    let dir: PathBuf;
    let _cleanup;
    let mut destination = None;
    // An Application read at home whose destination is another cluster: the snapshot of
    // that cluster does not hold it.
    let mut remote_app = None;
    let mut found_app = None;
    let mut settings_cm = None;
    let path: &Path = match &args.live {
        Some(d) => d,
        None => {
            if !args.cluster.cluster {
                bail!("pass --live DIR (a plumb snapshot) or --cluster");
            }
            let home = connect(&args.cluster)?;
            if let Some((ns, name)) = args.health.settings_configmap()? {
                settings_cm = Some(
                    home.block_on(home.cluster.get_object("", "ConfigMap", ns, name))
                        .map_err(|e| anyhow!("--settings-configmap {ns}/{name}: {e}"))?
                        .ok_or_else(|| anyhow!("--settings-configmap {ns}/{name}: not found"))?,
                );
            }
            dir = std::env::temp_dir().join(format!("plumb-doctor-{}", std::process::id()));
            _cleanup = RemoveOnDrop(dir.clone());
            // The snapshot of the app: its objects in its destination namespace (in its
            // destination cluster), and the context (namespaces, webhooks, policies, HPAs,
            // CRDs, Applications).
            let found = match &args.app {
                Some(name) => find_application(&home, name)?,
                None => None,
            };
            let (c, app) = match found {
                Some((obj, app)) => {
                    let (c, remote) = connect_destination(
                        &args.cluster,
                        home,
                        &obj,
                        args.control_namespace.as_deref(),
                    )?;
                    if remote {
                        remote_app = Some(obj.clone());
                    }
                    found_app = Some(obj);
                    (c, Some(app))
                }
                None => (home, None),
            };
            let namespaces: Vec<String> = app
                .as_ref()
                .and_then(|a| a.destination_namespace.clone())
                .into_iter()
                .chain(change_namespaces.iter().cloned())
                .collect();
            c.block_on(c.cluster.snapshot(app.as_ref(), &namespaces, &dir))
                .map_err(|e| anyhow!("{e}"))?;
            destination = Some(c);
            &dir
        }
    };
    let from_snapshot = args.live.is_some();
    let (mut state, mut files): (Vec<Value>, Vec<Option<PathBuf>>) =
        plumb_render::load_paths(&[path.to_path_buf()])
            .map_err(|e| anyhow!("{e}"))?
            .into_iter()
            .map(|m| (m.object, from_snapshot.then_some(m.file)))
            .unzip();
    if let Some(app) = remote_app {
        state.push(app);
        files.push(None);
    }
    if settings_cm.is_none()
        && let Some((ns, name)) = args.health.settings_configmap()?
    {
        let found = state.iter().find(|o| {
            o.get("apiVersion").and_then(Value::as_str) == Some("v1")
                && o.get("kind").and_then(Value::as_str) == Some("ConfigMap")
                && o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        });
        settings_cm = Some(found.cloned().ok_or_else(|| {
            anyhow!(
                "--settings-configmap {ns}/{name}: not found in the snapshot {}",
                path.display()
            )
        })?);
    }
    Ok((state, files, destination, settings_cm, found_app))
}

/// The Application `spec` names (plumb's, else Argo CD's where the server has them).
fn find_application(
    c: &crate::cluster_args::Connected,
    spec: &str,
) -> Result<Option<(Value, Application)>> {
    // NAMESPACE/NAME is looked for in that namespace only, so rights limited to it suffice.
    let namespace = spec.split_once('/').map(|(ns, _)| ns.to_string());
    let (mut candidates, plumb_err) =
        match c.block_on(c.cluster.list_applications(namespace.as_deref())) {
            Ok(found) => (found, None),
            Err(e) => (Vec::new(), Some(e)),
        };
    let argo = plumb_core::GroupKind {
        group: "argoproj.io".into(),
        kind: "Application".into(),
    };
    // Argo CD's Applications where the server has them (an error here is most often their
    // CRD not being installed).
    let scope = namespace.map(|ns| vec![ns]);
    if let Ok(more) = c.block_on(c.cluster.list_live(&[argo], scope.as_deref(), None)) {
        candidates.extend(more);
    }
    let picked = pick_application(&candidates, spec)?;
    if let (None, Some(e)) = (picked, plumb_err) {
        // Not found because it could not be listed (e.g. forbidden): say so, not "not found".
        let hint = if spec.contains('/') {
            String::new()
        } else {
            format!(" (name it as NAMESPACE/{spec} to look in one namespace only)")
        };
        bail!("Application {spec}: {e}{hint}");
    }
    picked
        .map(|i| {
            let o = &candidates[i];
            Application::from_value(o)
                .map(|a| (o.clone(), a))
                .map_err(|e| anyhow!("Application {spec}: {e}"))
        })
        .transpose()
}

/// Which of `objects` is the Application `spec` names: `NAME`, or `NAMESPACE/NAME` as Argo CD
/// names an app outside its own namespace (`argocd app get ns/name`). A bare name that
/// Applications in more than one namespace carry is an error naming them: the first found
/// would be a guess (plumb's and Argo CD's Application of one namespace and name count once,
/// plumb's first).
fn pick_application(objects: &[Value], spec: &str) -> Result<Option<usize>> {
    let (namespace, name) = match spec.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, spec),
    };
    let meta = |o: &Value, field: &str| {
        o.pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut found: Vec<usize> = (0..objects.len())
        .filter(|&i| {
            let o = &objects[i];
            is_application(o)
                && meta(o, "name") == name
                && namespace.is_none_or(|ns| meta(o, "namespace") == ns)
        })
        .collect();
    // plumb's before Argo CD's (a stable sort keeps the order found otherwise).
    found.sort_by_key(|&i| {
        !objects[i]
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("plumb.dev/"))
    });
    let mut namespaces: Vec<String> = found
        .iter()
        .map(|&i| match meta(&objects[i], "namespace") {
            ns if ns.is_empty() => "(none)".to_string(),
            ns => ns,
        })
        .collect();
    namespaces.sort();
    namespaces.dedup();
    if namespaces.len() > 1 {
        bail!(
            "Application {name}: there is one in each of the namespaces {}; name one as NAMESPACE/{name}",
            namespaces.join(", ")
        );
    }
    Ok(found.first().copied())
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The kustomization files of the repository (repo-relative path → content), so the
/// doctor can name the kustomization that pulls a patch in and write the fix.
fn kustomizations(fs: &dyn plumb_render::source::SourceFs) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut stack = vec![String::new()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs.list(&dir) else { continue };
        for (name, kind) in entries {
            let path = if dir.is_empty() {
                name.clone()
            } else {
                format!("{dir}/{name}")
            };
            match kind {
                plumb_render::source::EntryKind::Dir => stack.push(path),
                plumb_render::source::EntryKind::File
                    if plumb_render::kustomize::FILE_NAMES.contains(&name.as_str()) =>
                {
                    if let Some(v) = fs
                        .read(&path)
                        .ok()
                        .and_then(|b| String::from_utf8(b).ok())
                        .and_then(|t| serde_saphyr::from_str::<Value>(&t).ok())
                    {
                        out.push((path, v));
                    }
                }
                _ => {}
            }
        }
        if out.len() > 10_000 {
            break;
        }
    }
    out
}

/// The doctor's report on `args`'s app, and the sources it rendered (to read the files its
/// `declaredAt`s name, at the rendered revision; `None` for a preflight of files).
pub struct Diagnosis {
    pub report: plumb_doctor::Report,
    pub sources: Option<Vec<crate::source_args::RenderedSource>>,
    /// The comparison the report explains (Secret values masked).
    pub diffs: Vec<plumb_diff::compare::ResourceDiff>,
    /// The live objects compared, as read.
    pub live: Vec<Value>,
    /// The objects the source rendered (Secrets in clear: mask before showing).
    pub rendered: Vec<Value>,
}

impl Diagnosis {
    /// A repository file at the rendered revision, as text.
    pub fn file(&self, path: &str) -> Option<String> {
        self.sources
            .iter()
            .flatten()
            .find_map(|s| s.fs.read(path).ok())
            .and_then(|b| String::from_utf8(b).ok())
    }
}

/// `plumb doctor` for a page (`plumb ui`): the arguments a user would give, parsed as the
/// command parses them, so that the page and the command diagnose alike.
pub fn diagnose_argv(argv: &[String]) -> Result<Diagnosis> {
    #[derive(clap::Parser)]
    struct Doctor {
        #[command(flatten)]
        args: DoctorArgs,
    }
    let parsed = <Doctor as clap::Parser>::try_parse_from(
        std::iter::once("doctor".to_string()).chain(argv.iter().cloned()),
    )
    .map_err(|e| {
        anyhow!(
            "{}",
            e.to_string().lines().next().unwrap_or("bad arguments")
        )
    })?;
    diagnose(&parsed.args)
}

pub fn run(args: DoctorArgs) -> Result<u8> {
    let diagnosis = diagnose(&args)?;
    if args.fix {
        let Some(source) = diagnosis.sources.iter().flatten().next() else {
            bail!("--fix changes a repository: render one with --repo/--path or the Application");
        };
        let Some(work_tree) = &source.work_tree else {
            bail!(
                "--fix edits a work tree, and this source was fetched into the repository cache: pass --repo DIR with a clone of it"
            );
        };
        for change in apply_fixes(&diagnosis.report, work_tree)? {
            eprintln!("fix: {change}");
        }
    }
    let report = &diagnosis.report;
    let text = match args.output {
        DoctorFormat::Text => report.to_text(),
        DoctorFormat::Markdown => report.to_markdown(),
        DoctorFormat::Json => format!("{:#}\n", report.to_json()),
        // The lines around each declaredAt come from the rendered revision's files.
        DoctorFormat::Html => plumb_web::doctor_report(report, &|path: &str| diagnosis.file(path)),
    };
    crate::output::stdout(&text)?;
    Ok(if report.has_findings() {
        EXIT_DIFFERENCES
    } else {
        EXIT_IN_SYNC
    })
}

/// The desired objects not in `live`, as a server-side dry run of their creation returns them
/// (what admission makes of them). One that the server refuses is a note and left out: the
/// preflight says what it can check.
fn admitted_new_objects(
    c: &Connected,
    desired: &[plumb_diff::compare::Desired],
    live: &[Value],
) -> Vec<Value> {
    let present: std::collections::HashSet<plumb_core::ResourceKey> = live
        .iter()
        .filter_map(plumb_core::ResourceKey::of)
        .collect();
    let new: Vec<Value> = desired
        .iter()
        .filter(|d| plumb_core::ResourceKey::of(&d.object).is_some_and(|k| !present.contains(&k)))
        .map(|d| d.object.clone())
        .collect();
    if new.is_empty() {
        return Vec::new();
    }
    let keys: Vec<String> = new
        .iter()
        .map(|o| {
            plumb_core::ResourceKey::of(o)
                .map(|k| k.to_string())
                .unwrap_or_default()
        })
        .collect();
    c.block_on(
        c.cluster
            .dry_run_apply(new, crate::cluster_args::FIELD_MANAGER, true),
    )
    .into_iter()
    .zip(keys)
    .filter_map(|(r, key)| match r {
        Ok(v) => Some(v),
        Err(e) => {
            eprintln!("note: preflight: {key} not checked against admission: {e}");
            None
        }
    })
    .collect()
}

/// The namespaces the objects of a preflight's change are in.
fn preflight_namespaces(args: &DoctorArgs) -> Result<Vec<String>> {
    let objects: Vec<Value> = if !args.desired.is_empty() {
        crate::source_args::desired_from_files(&args.desired)?
            .into_iter()
            .map(|d| d.object)
            .collect()
    } else {
        render_sources_on(&args.source, None, None)?
            .into_iter()
            .flat_map(|s| s.rendered.objects)
            .map(|o| o.object.into_value())
            .collect()
    };
    let mut namespaces: Vec<String> = objects
        .iter()
        .filter_map(|o| o.pointer("/metadata/namespace").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    namespaces.sort();
    namespaces.dedup();
    Ok(namespaces)
}

/// The diagnosis of `args`'s app (or change, for a preflight).
pub fn diagnose(args: &DoctorArgs) -> Result<Diagnosis> {
    // Local scripts first: a bad directory fails before any connection.
    let scripts = args.health.load_dir()?;
    // A preflight of a change alone against the cluster reads the namespaces the change
    // declares objects in (a snapshot has them already; an app names its own).
    let change_namespaces = if args.preflight && args.app.is_none() && args.cluster.cluster {
        preflight_namespaces(args)?
    } else {
        Vec::new()
    };
    let (state, files, destination, settings_cm, found_app) = load_state(args, &change_namespaces)?;
    args.health.install_with(settings_cm.as_ref(), scripts)?;
    let mut app_file = None;
    let app_obj = match (&args.app, found_app) {
        (Some(_), Some(found)) => found,
        (Some(name), None) => {
            let i = pick_application(&state, name)?.ok_or_else(|| {
                anyhow!("Application {name:?} not found in the snapshot or cluster")
            })?;
            app_file = files[i].clone();
            state[i].clone()
        }
        // Preflight without an Application: a change is checked on its own.
        (None, _) => serde_json::json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "preflight"}, "spec": {}}),
    };
    let app = Application::from_value(&app_obj)
        .map_err(|e| anyhow!("Application {}: {e}", app_obj["metadata"]["name"]))?;

    // Desired: files as given (preflight), else the Application's source, rendered with
    // source locations.
    let (desired, source) = if !args.desired.is_empty() {
        (crate::source_args::desired_from_files(&args.desired)?, None)
    } else {
        // Without a named Application (a preflight), the source is what --repo/--path say:
        // no path is an error, not an empty render that passes.
        // A relative repoURL is refused: a snapshot's or a cluster's Application has no
        // directory it would be relative to.
        let named = args
            .app
            .as_ref()
            .map(|_| (&app, AppFrom::Object(app_file.as_deref())));
        let mut sources = render_sources_on(&args.source, named, destination.as_ref())?;
        let mut desired = Vec::new();
        for source in &mut sources {
            let objects = std::mem::take(&mut source.rendered.objects);
            desired.extend(crate::source_args::desired_of(objects));
        }
        (desired, Some(sources))
    };

    let settings = Settings::argocd_defaults();
    let config = DiffConfig::for_app(
        &settings,
        Some(&app),
        &format!("Application {}", app.name),
        Duration::from_secs(1),
    )?;
    let ctx = CompareContext {
        // A preflight without an Application checks the change alone: no tracking injected.
        app: args.app.as_ref().map(|_| &app),
        settings: Some(&settings),
        config: &config,
        keep_equal: false,
        server_side: None,
    };
    let mut live: Vec<Value> = state
        .iter()
        .filter(|o| !is_application(o))
        .cloned()
        .collect();
    if args.preflight {
        // A preflight asks about the fields the change declares: compare two-way (desired
        // against live), not against what an earlier apply left in last-applied.
        for o in &mut live {
            if let Some(a) = o
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                a.remove(plumb_core::LAST_APPLIED_ANNOTATION);
            }
        }
        // An object the change adds is not live yet: with a cluster at hand, what admission
        // would make of it is (a server-side dry run of its creation, webhooks and policies
        // included) and stands for live, so a field a webhook will rewrite is caught before
        // the object exists.
        if let Some(c) = &destination {
            live.extend(admitted_new_objects(c, &desired, &live));
        }
    }
    // The rendered objects as they are (before the comparison prepares them).
    let rendered: Vec<Value> = desired.iter().map(|d| d.object.clone()).collect();
    let diffs = compare(desired, live.clone(), &ctx)?;

    // The kustomizations of the repository at the rendered revision (none for files).
    let kustomizations: Vec<(String, Value)> = source
        .iter()
        .flatten()
        .flat_map(|s| kustomizations(s.fs.as_ref()))
        .collect();
    let mut report = plumb_doctor::diagnose(&plumb_doctor::Inputs {
        app: &app_obj,
        diffs: &diffs,
        live: &live,
        context: &state,
        kustomizations: &kustomizations,
        now: std::time::SystemTime::now(),
    });
    if args.preflight {
        // Only what the cluster will rewrite: differences the change itself settles (a new
        // value, a hand edit it overwrites) are not a fight.
        report.findings.retain(|f| f.cause.kind.preflight());
        // A preflight checks a change, not an app: there is no app health to report.
        report.health = None;
    }
    Ok(Diagnosis {
        report,
        sources: source,
        diffs,
        live,
        rendered,
    })
}

/// The work tree of `--repo`, as `--fix` reads it.
struct WorkTree<'a>(&'a Path);

impl plumb_doctor::apply::RepoFiles for WorkTree<'_> {
    type Error = anyhow::Error;
    fn exists(&self, file: &str) -> bool {
        self.0.join(file).exists()
    }
    fn read(&self, file: &str) -> Result<String> {
        let path = self.0.join(file);
        std::fs::read_to_string(&path).map_err(|e| anyhow!("{}: cannot read: {e}", path.display()))
    }
}

/// Writes the `stop-declaring` fixes of the findings the cluster causes (computed by
/// plumb-doctor) into the work tree at `repo`; returns what it changed. Git is never touched
/// beyond the files.
fn apply_fixes(report: &plumb_doctor::Report, repo: &Path) -> Result<Vec<String>> {
    let fixed = plumb_doctor::apply::plan(report, &WorkTree(repo))?;
    for edit in &fixed.edits {
        match edit {
            plumb_doctor::apply::Edit::Write { file, content } => {
                let path = repo.join(file);
                std::fs::write(&path, content)
                    .map_err(|e| anyhow!("{}: cannot write: {e}", path.display()))?;
            }
            plumb_doctor::apply::Edit::Delete { file } => {
                let path = repo.join(file);
                std::fs::remove_file(&path)
                    .map_err(|e| anyhow!("{}: cannot delete: {e}", path.display()))?;
            }
        }
    }
    Ok(fixed.changes)
}

#[cfg(test)]
mod tests {
    use super::pick_application;
    use serde_json::{Value, json};

    fn app(api: &str, ns: Option<&str>, name: &str) -> Value {
        let mut meta = json!({"name": name});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        json!({"apiVersion": api, "kind": "Application", "metadata": meta})
    }

    #[test]
    fn an_app_is_picked_by_name_or_namespace_and_name_plumbs_first() {
        let argo = "argoproj.io/v1alpha1";
        let plumb = "plumb.dev/v1alpha1";
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}}),
            app(argo, Some("apps"), "web"),
            app(plumb, Some("apps"), "web"),
            app(argo, Some("team-b"), "api"),
            app(argo, None, "api"),
        ];
        // One namespace, Argo CD's and plumb's: plumb's, found second.
        assert_eq!(pick_application(&objects, "web").unwrap(), Some(2));
        assert_eq!(pick_application(&objects, "apps/web").unwrap(), Some(2));
        assert_eq!(pick_application(&objects, "team-b/web").unwrap(), None);
        assert_eq!(pick_application(&objects, "team-b/api").unwrap(), Some(3));
        let err = pick_application(&objects, "api").unwrap_err().to_string();
        assert_eq!(
            err,
            "Application api: there is one in each of the namespaces (none), team-b; \
             name one as NAMESPACE/api"
        );
    }
}
