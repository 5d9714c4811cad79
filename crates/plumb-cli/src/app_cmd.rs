//! `plumb app …`: plumb's Applications (`applications.plumb.dev`) in a cluster, printed in
//! the shapes `argocd app get` and `argocd app history` print.
//!
//! `app get --orphaned` lists the destination namespace's orphaned resources (through
//! `ClusterApi::namespace_objects` and `plumb_sync::orphans::find`). `app sync` and
//! `app rollback` keep the run's Events in [`CliEvents`] and write them, awaited, when the
//! operation ends. `app delete --wait` loops on `plumb_sync::run::finalize_deletion`.

use crate::EXIT_IN_SYNC;
use crate::cluster_args::{ClusterArgs, Connected, connect};
use anyhow::{Result, anyhow, bail};
use plumb_core::GroupKind;
use plumb_core::argo::AppSource;
use plumb_core::argo::model::Application;
use plumb_core::duration::GoDuration;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct AppArgs {
    #[command(subcommand)]
    command: AppCommand,
}

#[derive(clap::Subcommand)]
enum AppCommand {
    /// An Application's source, sync and health status, and its resources.
    Get(GetArgs),
    /// The Application's sync history: every sync, manual, automated or self-heal.
    History(NamedArgs),
    /// Every Application, one line each.
    List(ListArgs),
    /// Sync now: render, compare, apply in waves (server-side apply as `plumb`), prune with
    /// `--prune`, record the history.
    Sync(SyncCmd),
    /// Wait until the Application is Synced and/or Healthy.
    Wait(WaitArgs),
    /// What a sync would change, as `argocd app diff` prints it (exit 1 on differences).
    Diff(SyncArgs),
    /// Stop the running sync operation (before its next wave, or while it waits); it ends
    /// Failed with "Operation terminated", as `argocd app terminate-op`.
    TerminateOp(NamedArgs),
    /// Sync the revision of a history entry again (default: the deployment before the last),
    /// as `argocd app rollback`; refused while automated sync is enabled.
    Rollback(RollbackArgs),
    /// Delete the Application. With `--cascade` (the default) its resources are deleted
    /// first, highest sync wave first (`Delete=false` keeps one, `Delete=confirm` waits for
    /// approval), by the controller — or by this command with `--wait`.
    Delete(DeleteArgs),
}

#[derive(clap::Args)]
struct GetArgs {
    #[command(flatten)]
    app: NamedArgs,
    /// Refresh first: render git, compare with the cluster and write the status now (as
    /// `argocd app get --refresh`), instead of showing what the controller last wrote.
    #[arg(long)]
    refresh: bool,
    /// A local clone to read instead of the Application's (remote) repoURL, with --refresh.
    #[arg(long, value_name = "DIR", requires = "refresh")]
    repo: Option<std::path::PathBuf>,
    /// Also list the app's orphaned resources (its project's `spec.orphanedResources`,
    /// `warn` or not): the objects of its destination namespace no Application tracks, read
    /// with one LIST per namespaced kind there.
    #[arg(long)]
    orphaned: bool,
}

#[derive(clap::Args)]
struct RollbackArgs {
    #[command(flatten)]
    base: SyncArgs,
    /// The history ID to roll back to (`plumb app history`); default: the one before the last.
    id: Option<i64>,
    /// Delete resources that revision does not declare.
    #[arg(long)]
    prune: bool,
}

#[derive(clap::Args)]
struct DeleteArgs {
    #[command(flatten)]
    app: NamedArgs,
    /// Delete the Application's resources too (the resources finalizer).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    cascade: bool,
    /// How resources are deleted: foreground (dependents first) or background.
    #[arg(long, default_value = "foreground", value_parser = ["foreground", "background"])]
    propagation_policy: String,
    /// Do the cascade here and wait until the Application is gone (no controller needed).
    #[arg(long)]
    wait: bool,
    /// With --wait: give up after this many seconds (exit 1).
    #[arg(long, default_value_t = 180)]
    timeout: u64,
}

#[derive(clap::Args)]
struct SyncArgs {
    #[command(flatten)]
    app: NamedArgs,
    /// A local clone to read instead of the Application's (remote) repoURL.
    #[arg(long, value_name = "DIR")]
    repo: Option<std::path::PathBuf>,
}

#[derive(clap::Args)]
struct SyncCmd {
    #[command(flatten)]
    base: SyncArgs,
    /// Finish the operation the Application shows Running (one a stopped controller or
    /// CLI left behind) instead of starting a new one.
    #[arg(long, conflicts_with_all = ["prune", "dry_run", "revision", "resource", "strategy"])]
    resume: bool,
    /// Delete resources git no longer declares (a manual sync prunes only when asked).
    #[arg(long)]
    prune: bool,
    /// Send every apply as a server-side dry run and report; nothing is changed or recorded.
    #[arg(long)]
    dry_run: bool,
    /// Sync this revision (commit, branch, tag) instead of the Application's target.
    #[arg(long, value_name = "REV")]
    revision: Option<String>,
    /// Sync only this resource, GROUP:KIND:NAME or GROUP:KIND:NAMESPACE/NAME (repeatable;
    /// empty GROUP for the core group). A partial sync runs no hooks and records no history.
    #[arg(long, value_name = "GROUP:KIND:NAME", value_parser = plumb_sync::request::ResourceSelector::parse)]
    resource: Vec<plumb_sync::request::ResourceSelector>,
    /// `hook` runs hooks; `apply` applies without them (Argo CD's sync strategies).
    #[arg(long, default_value = "hook", value_parser = ["hook", "apply"])]
    strategy: String,
    /// User health scripts the waves judge with, as the controller's.
    #[command(flatten)]
    health: crate::health_cmd::HealthScriptArgs,
}

#[derive(clap::Args)]
struct WaitArgs {
    #[command(flatten)]
    app: NamedArgs,
    /// Wait for Synced.
    #[arg(long)]
    sync: bool,
    /// Wait for Healthy.
    #[arg(long)]
    health: bool,
    /// Give up after this many seconds (exit 1).
    #[arg(long, default_value_t = 180)]
    timeout: u64,
}

#[derive(clap::Args)]
struct NamedArgs {
    /// The Application's name.
    name: String,
    /// The namespace the Application lives in (default: `plumb`; `argocd` with
    /// `--api-group argoproj.io`).
    #[arg(long = "app-namespace", short = 'N')]
    app_namespace: Option<String>,
    /// Where AppProjects and cluster Secrets are read from (the controller's namespace);
    /// default: the Application's namespace.
    #[arg(long, value_name = "NAMESPACE")]
    control_namespace: Option<String>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(clap::Args)]
struct ListArgs {
    /// Only Applications in this namespace (default: all).
    #[arg(long = "app-namespace", short = 'N')]
    app_namespace: Option<String>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

impl NamedArgs {
    /// `-N`, else the group's namespace of Applications.
    fn namespace(&self) -> String {
        self.app_namespace
            .clone()
            .unwrap_or_else(|| self.cluster.default_app_namespace().to_string())
    }
}

/// The Application kind of the group `--api-group` names.
fn application_kind(cluster: &ClusterArgs) -> GroupKind {
    GroupKind {
        group: cluster.app_group().into(),
        kind: "Application".into(),
    }
}

pub fn read_apps(cluster: &ClusterArgs, namespace: Option<&str>) -> Result<Vec<Value>> {
    let c = connect(cluster)?;
    let kinds = [application_kind(cluster)];
    let namespaces = namespace.map(|n| vec![n.to_string()]);
    c.block_on(c.cluster.list_live(&kinds, namespaces.as_deref(), None))
        .map_err(|e| anyhow!("{e}"))
}

fn one_app(args: &NamedArgs) -> Result<Value> {
    if !args.cluster.cluster {
        bail!("plumb app reads Applications from a cluster: pass --cluster");
    }
    let namespace = args.namespace();
    read_apps(&args.cluster, Some(&namespace))?
        .into_iter()
        .find(|a| a.pointer("/metadata/name").and_then(Value::as_str) == Some(&args.name))
        .ok_or_else(|| {
            anyhow!(
                "application {:?} not found in namespace {:?}",
                args.name,
                namespace
            )
        })
}

pub fn run(args: AppArgs) -> Result<u8> {
    let text = match &args.command {
        AppCommand::Sync(a) => return sync(a),
        AppCommand::Wait(a) => return wait(a),
        AppCommand::Diff(a) => return diff(a),
        AppCommand::Delete(a) => return delete(a),
        AppCommand::Rollback(a) => return rollback(a),
        AppCommand::TerminateOp(a) => {
            let app = one_app(a)?;
            let c = connect(&a.cluster)?;
            c.block_on(plumb_sync::run::terminate_operation(&c.cluster, &app))
                .map_err(|e| anyhow!("{e}"))?;
            format!("Application '{}' operation terminating\n", a.name)
        }
        AppCommand::Get(a) => {
            if a.refresh {
                let app = one_app(&a.app)?;
                let c = connect(&a.app.cluster)?;
                let opts = plumb_sync::run::RunOptions {
                    repo_override: a.repo.clone(),
                    control_namespace: a.app.control_namespace.clone(),
                    destinations: Some(destinations()),
                    ..Default::default()
                };
                c.block_on(plumb_sync::run::refresh_app(
                    &c.cluster,
                    &app,
                    &opts,
                    std::time::SystemTime::now(),
                ))
                .map_err(|e| anyhow!("{e}"))?;
            }
            let app = one_app(&a.app)?;
            let window = sync_window(&a.app, &app)?;
            let mut text = format_get_with_window(&app, window.as_deref());
            if a.orphaned {
                text.push_str(&orphaned(&a.app, &app)?);
            }
            text
        }
        AppCommand::History(a) => format_history(&one_app(a)?),
        AppCommand::List(a) => {
            if !a.cluster.cluster {
                bail!("plumb app reads Applications from a cluster: pass --cluster");
            }
            format_list(&read_apps(&a.cluster, a.app_namespace.as_deref())?)
        }
    };
    crate::output::stdout(&text)?;
    Ok(EXIT_IN_SYNC)
}

/// The app's project from the control namespace (the Application's own unless
/// `--control-namespace`): `Ok(None)` when it cannot be read, `Err(why)` when it exists and
/// is invalid. A missing `default` is Argo CD's permissive default.
fn read_project(
    args: &NamedArgs,
    app: &Application,
) -> Result<Option<Result<plumb_core::project::AppProject, String>>> {
    let project = match app.spec.project.as_str() {
        "" => plumb_core::project::DEFAULT_PROJECT,
        p => p,
    };
    let control = args
        .control_namespace
        .clone()
        .unwrap_or_else(|| args.namespace());
    let c = connect(&args.cluster)?;
    Ok(
        match c.block_on(c.cluster.get_object(
            c.cluster.app_group(),
            "AppProject",
            &control,
            project,
        )) {
            Ok(Some(obj)) => {
                Some(plumb_core::project::AppProject::from_value(&obj).map_err(|e| e.to_string()))
            }
            Ok(None) if project == plumb_core::project::DEFAULT_PROJECT => {
                Some(Ok(plumb_core::project::AppProject::permissive_default()))
            }
            _ => None,
        },
    )
}

/// `plumb app get --orphaned`: the orphaned resources of the app's destination namespace
/// (`plumb_sync::orphans::find`, the controller's decision), read from its destination
/// cluster (`--context` overrides, as for `diff --cluster`).
fn orphaned(args: &NamedArgs, app_obj: &Value) -> Result<String> {
    let (app, _) = Application::read_lenient(app_obj);
    let name = &app.metadata.name;
    let project = match read_project(args, &app)? {
        Some(Ok(p)) => p,
        Some(Err(e)) => bail!("Application {name}: {e}"),
        None => bail!(
            "Application {name}: project {:?} not found",
            app.spec.project
        ),
    };
    if project.orphans_warn().is_none() {
        return Ok(format!(
            "\nOrphaned resources: not monitored (project '{}' has no spec.orphanedResources)\n",
            project.name
        ));
    }
    let namespace = app.spec.destination.namespace.clone();
    if namespace.is_empty() {
        return Ok("\nOrphaned resources: none (the app has no destination namespace)\n".into());
    }
    let home = connect(&args.cluster)?;
    // The Applications that exist (by name, in the app's namespace): another app's tracking
    // on an object counts only when that Application exists, as in Argo CD.
    let existing: std::collections::BTreeSet<String> = home
        .block_on(
            home.cluster
                .list_applications(Some(&app.metadata.namespace)),
        )
        .map_err(|e| anyhow!("Application {name}: listing Applications: {e}"))?
        .iter()
        .filter_map(|a| a.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    let (c, _) = crate::cluster_args::connect_destination(
        &args.cluster,
        home,
        app_obj,
        args.control_namespace.as_deref(),
    )?;
    let (objects, skipped) = c
        .block_on(c.cluster.namespace_objects(&namespace))
        .map_err(|e| anyhow!("Application {name}: orphaned resources in {namespace}: {e}"))?;
    for (gk, why) in &skipped {
        eprintln!("warning: orphaned resources: {gk} in {namespace} not listed: {why}");
    }
    let own: std::collections::BTreeSet<plumb_core::ResourceKey> = app
        .status
        .resources
        .iter()
        .map(|r| plumb_core::ResourceKey {
            group: r.group.clone(),
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
        })
        .collect();
    let owners = plumb_sync::orphans::Owners {
        app: name,
        // As `plumb app sync` and `get --refresh` track: the default settings' method.
        method: plumb_sync::run::RunOptions::default()
            .settings
            .tracking_method,
        existing: &existing,
    };
    let found = plumb_sync::orphans::find(&project, &namespace, owners, &own, &objects)
        .map(|o| o.resources)
        .unwrap_or_default();
    if found.is_empty() {
        return Ok(format!(
            "\nOrphaned resources: none in namespace {namespace}\n"
        ));
    }
    let mut rows = vec![[
        "GROUP".to_string(),
        "KIND".to_string(),
        "NAMESPACE".to_string(),
        "NAME".to_string(),
    ]];
    rows.extend(
        found
            .into_iter()
            .map(|k| [k.group, k.kind, k.namespace, k.name]),
    );
    Ok(format!("\nORPHANED RESOURCES\n{}", table(&rows, 0)))
}

/// The sync windows' verdict for `app` now, from its project in the control namespace (the
/// Application's own unless `--control-namespace`); `None` when no window applies or the
/// project is missing or invalid (its condition says so).
fn sync_window(args: &NamedArgs, app: &Value) -> Result<Option<String>> {
    let (typed, _) = Application::read_lenient(app);
    let Some(Ok(project)) = read_project(args, &typed)? else {
        return Ok(None);
    };
    let d = &typed.spec.destination;
    let dest = plumb_core::project::Destination::new(&d.server, &d.name, &d.namespace);
    Ok(project.window_summary(&typed.metadata.name, &dest, std::time::SystemTime::now()))
}

impl SyncArgs {
    /// The Application, a connection, and run options reading `--repo` when given.
    /// The Events the operation records go to `events` (see [`CliEvents`]).
    fn open(
        &self,
        events: &Arc<CliEvents>,
    ) -> Result<(Value, Connected, plumb_sync::run::RunOptions)> {
        let app = one_app(&self.app)?;
        let c = connect(&self.app.cluster)?;
        let opts = plumb_sync::run::RunOptions {
            repo_override: self.repo.clone(),
            control_namespace: self.app.control_namespace.clone(),
            destinations: Some(destinations()),
            events: Some(plumb_sync::run::EventsHandle(events.clone())),
            ..Default::default()
        };
        Ok((app, c, opts))
    }
}

/// The Kubernetes Events of a sync, rollback or resume from the command line (as the
/// controller records them: `OperationStarted`, `OperationCompleted`, `ResourceUpdated`),
/// kept while it runs and written on the Application when it ends, each awaited
/// ([`CliEvents::write`]).
#[derive(Default)]
struct CliEvents(std::sync::Mutex<Vec<CliEvent>>);

type CliEvent = (
    plumb_cluster::AppRef,
    plumb_cluster::EventType,
    String,
    String,
);

impl plumb_cluster::EventSink for CliEvents {
    fn record(
        &self,
        object: &plumb_cluster::AppRef,
        kind: plumb_cluster::EventType,
        reason: &str,
        message: &str,
    ) {
        if let Ok(mut q) = self.0.lock() {
            q.push((object.clone(), kind, reason.into(), message.into()));
        }
    }
}

impl CliEvents {
    /// Writes the Events kept, in order (deduplicated as the controller's). Best effort: a
    /// refused write (no RBAC for Events) is one `warning:` line and the rest are dropped;
    /// the sync's outcome and exit code are unchanged.
    fn write(&self, c: &Connected) {
        let pending = self.0.lock().map(|mut q| std::mem::take(&mut *q));
        let Ok(pending) = pending else { return };
        if pending.is_empty() {
            return;
        }
        let writer = plumb_cluster::events::EventWriter::new(&c.cluster, "plumb-cli");
        for (object, kind, reason, message) in pending {
            if let Err(e) = c.block_on(writer.write(&object, kind, &reason, &message)) {
                eprintln!(
                    "warning: Events on Application {} not recorded: {e}",
                    object.name
                );
                break;
            }
        }
    }
}

/// Connections to an app's destination cluster through its cluster Secret (read with the
/// user's own credentials from the control namespace).
pub fn destinations() -> plumb_sync::run::DestinationsHandle {
    plumb_sync::run::DestinationsHandle(std::sync::Arc::new(
        plumb_sync::run::destinations::Connections::new(),
    ))
}

/// Who a sync from this command line is by: `$USER`.
fn cli_user() -> plumb_sync::history::InitiatedBy {
    plumb_sync::history::InitiatedBy::user(std::env::var("USER").unwrap_or_else(|_| "plumb".into()))
}

fn sync(cmd: &SyncCmd) -> Result<u8> {
    let args = &cmd.base;
    let scripts = cmd.health.load_dir()?;
    let events = Arc::new(CliEvents::default());
    let (app, c, opts) = args.open(&events)?;
    c.block_on(cmd.health.install(&c.cluster, scripts))?;
    let now = std::time::SystemTime::now();
    let outcome = (|| -> Result<plumb_sync::run::SyncOutcome> {
        Ok(if cmd.resume {
            c.block_on(plumb_sync::run::resume_app(&c.cluster, &app, &opts, now))
                .map_err(|e| anyhow!("{e}"))?
                .ok_or_else(|| anyhow!("Application {}: no operation is running", args.app.name))?
        } else {
            let request = plumb_sync::request::SyncRequest {
                prune: cmd.prune,
                dry_run: cmd.dry_run,
                revision: cmd.revision.clone(),
                resources: cmd.resource.clone(),
                skip_hooks: cmd.strategy == "apply",
                source: None,
                rollback: None,
            };
            c.block_on(plumb_sync::run::sync_app_with(
                &c.cluster,
                &app,
                &opts,
                &request,
                cli_user(),
                now,
            ))
            .map_err(|e| anyhow!("{e}"))?
        })
    })();
    events.write(&c);
    let outcome = outcome?;
    Ok(report_sync(&args.app.name, &outcome))
}

fn rollback(args: &RollbackArgs) -> Result<u8> {
    let events = Arc::new(CliEvents::default());
    let (app, c, opts) = args.base.open(&events)?;
    let outcome = c.block_on(plumb_sync::run::rollback_app(
        &c.cluster,
        &app,
        &opts,
        args.id,
        args.prune,
        cli_user(),
        std::time::SystemTime::now(),
    ));
    events.write(&c);
    let outcome = outcome.map_err(|e| anyhow!("{e}"))?;
    Ok(report_sync(&args.base.app.name, &outcome))
}

/// Prints a sync's results table and its one-line outcome; the exit code.
fn report_sync(name: &str, outcome: &plumb_sync::run::SyncOutcome) -> u8 {
    print!("{}", results_table(&outcome.results));
    eprintln!(
        "{name}: {} ({}) at {}",
        outcome.phase, outcome.message, outcome.revision
    );
    if outcome.phase == "Succeeded" {
        EXIT_IN_SYNC
    } else {
        crate::EXIT_DIFFERENCES
    }
}

fn delete(args: &DeleteArgs) -> Result<u8> {
    use plumb_sync::deletion::{RESOURCES_FINALIZER, RESOURCES_FINALIZER_BACKGROUND};
    let app = one_app(&args.app)?;
    let c = connect(&args.app.cluster)?;
    let ns = args.app.namespace();
    let (ns, name) = (ns.as_str(), args.app.name.as_str());
    // The resources finalizer says what happens to the resources: set for --cascade (the
    // propagation policy's variant), removed for --cascade=false, as `argocd app delete` does.
    let current: Vec<Value> = app
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut finalizers: Vec<Value> = current
        .iter()
        .filter(|f| {
            !matches!(
                f.as_str(),
                Some(RESOURCES_FINALIZER) | Some(RESOURCES_FINALIZER_BACKGROUND)
            )
        })
        .cloned()
        .collect();
    if args.cascade {
        let wanted = match args.propagation_policy.as_str() {
            "background" => RESOURCES_FINALIZER_BACKGROUND,
            _ => RESOURCES_FINALIZER,
        };
        finalizers.push(Value::String(wanted.to_string()));
    }
    let mut sorted_now = current.clone();
    let mut sorted_wanted = finalizers.clone();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    sorted_now.sort_by_key(text);
    sorted_wanted.sort_by_key(text);
    if sorted_now != sorted_wanted {
        let patch = serde_json::json!({"metadata": {"finalizers": finalizers,
            "resourceVersion": app.pointer("/metadata/resourceVersion")}});
        c.block_on(c.cluster.patch_application(ns, name, &patch))
            .map_err(|e| anyhow!("{e}"))?;
    }
    let kind = application_kind(&args.app.cluster);
    let key = plumb_core::ResourceKey {
        group: kind.group,
        kind: kind.kind,
        namespace: ns.into(),
        name: name.into(),
    };
    c.block_on(
        c.cluster
            .delete_object(&key, plumb_cluster::Propagation::Background),
    )
    .map_err(|e| anyhow!("{e}"))?;
    if !args.wait {
        println!(
            "application '{name}' deleted{}",
            if args.cascade {
                " (the controller deletes its resources first)"
            } else {
                ""
            }
        );
        return Ok(EXIT_IN_SYNC);
    }
    let opts = plumb_sync::run::RunOptions {
        destinations: Some(destinations()),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let deadline = std::time::Duration::from_secs(args.timeout);
    loop {
        let current = c
            .block_on(c.cluster.get_application(ns, name))
            .map_err(|e| anyhow!("{e}"))?;
        let Some(current) = current else {
            println!("application '{name}' deleted");
            return Ok(EXIT_IN_SYNC);
        };
        if let Some(step) = c
            .block_on(plumb_sync::run::finalize_deletion(
                &c.cluster, &current, &opts,
            ))
            .map_err(|e| anyhow!("{e}"))?
        {
            eprintln!("{name}: {}", step.message);
        }
        if started.elapsed() >= deadline {
            eprintln!("{name}: still not deleted after {} s", args.timeout);
            return Ok(crate::EXIT_DIFFERENCES);
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// The per-resource results of a sync, as `argocd app sync` lists them.
fn results_table(results: &[plumb_sync::run::ResourceResult]) -> String {
    let mut rows = vec![[
        "GROUP".to_string(),
        "KIND".into(),
        "NAMESPACE".into(),
        "NAME".into(),
        "STATUS".into(),
        "HOOK".into(),
        "MESSAGE".into(),
    ]];
    for r in results {
        let hook = r
            .hook_phase
            .map(|_| r.phase.to_string())
            .unwrap_or_default();
        let status = r.hook_phase.unwrap_or(r.status).to_string();
        rows.push([
            r.key.group.clone(),
            r.key.kind.clone(),
            r.key.namespace.clone(),
            r.key.name.clone(),
            status,
            hook,
            r.message.clone(),
        ]);
    }
    table(&rows, 0)
}

/// `plumb diff --cluster --app <the Application>`, with the cluster options passed on.
fn diff(args: &SyncArgs) -> Result<u8> {
    use clap::Parser as _;
    let app = one_app(&args.app)?;
    let file = std::env::temp_dir().join(format!(
        "plumb-app-diff-{}-{}.json",
        std::process::id(),
        args.app.name
    ));
    std::fs::write(&file, serde_json::to_vec(&app)?)
        .map_err(|e| anyhow!("{}: cannot write: {e}", file.display()))?;
    let mut argv: Vec<std::ffi::OsString> =
        vec!["plumb".into(), "--cluster".into(), "--app".into()];
    argv.push(file.clone().into());
    if let Some(ctx) = &args.app.cluster.context {
        argv.extend(["--context".into(), ctx.into()]);
    }
    if let Some(kc) = &args.app.cluster.kubeconfig {
        argv.extend(["--kubeconfig".into(), kc.clone().into()]);
    }
    if let Some(repo) = &args.repo {
        argv.extend(["--repo".into(), repo.clone().into()]);
    }
    #[derive(clap::Parser)]
    struct Wrap {
        #[command(flatten)]
        diff: crate::diff_cmd::DiffArgs,
    }
    let parsed = Wrap::try_parse_from(argv).map_err(|e| anyhow!("{e}"));
    let result = parsed.and_then(|w| crate::diff_cmd::run(w.diff));
    let _ = std::fs::remove_file(&file);
    result
}

fn wait(args: &WaitArgs) -> Result<u8> {
    let started = std::time::Instant::now();
    let deadline = std::time::Duration::from_secs(args.timeout);
    loop {
        let app = one_app(&args.app)?;
        let (typed, _) = Application::read_lenient(&app);
        let status = &typed.status;
        let sync = status.sync.status.clone();
        let health = status.health.status.clone();
        let ok = (!args.sync || sync == "Synced") && (!args.health || health == "Healthy");
        if ok {
            print!("{}", format_get(&app));
            return Ok(EXIT_IN_SYNC);
        }
        if started.elapsed() >= deadline {
            eprintln!(
                "timed out after {} s: sync {sync}, health {health}",
                args.timeout
            );
            return Ok(crate::EXIT_DIFFERENCES);
        }
        let operation = match &status.operation_state {
            Some(op) if op.phase == "Running" => {
                format!(", operation Running: {}", op.message)
            }
            _ => String::new(),
        };
        eprintln!(
            "waiting for {}: sync {sync}, health {health}{operation} ({} s)",
            args.app.name,
            started.elapsed().as_secs()
        );
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
}

/// `HEAD (b5e2be1)`: the target revision and the short commit it resolved to.
fn revision_label(target: &str, sha: &str) -> String {
    let target = if target.is_empty() { "HEAD" } else { target };
    if sha.is_empty() {
        target.to_string()
    } else {
        format!("{target} ({})", &sha[..sha.len().min(7)])
    }
}

/// `spec.source` (`app get/list/history` show the single source, as before multi-source).
fn single_source(app: &Application) -> AppSource {
    app.spec.source.clone().unwrap_or_default()
}

fn sync_policy(app: &Application) -> &'static str {
    match app
        .spec
        .sync_policy
        .as_ref()
        .and_then(|p| p.automated.as_ref())
    {
        Some(a) if a.prune => "Automated (Prune)",
        Some(_) => "Automated",
        None => "Manual",
    }
}

/// `argocd app get`'s header and resource table.
pub fn format_get(app: &Value) -> String {
    format_get_with_window(app, None)
}

/// [`format_get`] with the sync windows' verdict (`Sync Window:`, shown when a window of the
/// app's project applies to it).
pub fn format_get_with_window(app: &Value, window: Option<&str>) -> String {
    // Sharded controllers: the replica that owns the app (`status.controller`).
    let owner = plumb_sync::shard::claim_of(app);
    let (app, _) = Application::read_lenient(app);
    let source = single_source(&app);
    let target = source.target_revision.as_str();
    let status = &app.status;
    let sync = match status.sync.status.as_str() {
        "" => "Unknown",
        other => other,
    };
    let preposition = if sync == "Synced" { "to" } else { "from" };
    let mut out = String::new();
    let mut line = |k: &str, v: &str| {
        let _ = writeln!(out, "{:<20}{v}", format!("{k}:"));
    };
    line(
        "Name",
        &format!("{}/{}", app.metadata.namespace, app.metadata.name),
    );
    line(
        "Project",
        match app.spec.project.as_str() {
            "" => "default",
            p => p,
        },
    );
    line("Server", &app.spec.destination.server);
    if !app.spec.destination.name.is_empty() {
        line("Cluster", &app.spec.destination.name);
    }
    line("Namespace", &app.spec.destination.namespace);
    if app.spec.sources.is_empty() {
        line("Repo", &source.repo_url);
        line("Target", target);
        line("Path", &source.path);
    } else {
        // A multi-source app: every source, as `argocd app get` lists them.
        out.push_str("Sources:\n");
        for s in &app.spec.sources {
            let _ = writeln!(out, "- {:<18}{}", "Repo:", s.repo_url);
            for (k, v) in [
                ("Target:", s.target_revision.as_str()),
                ("Path:", s.path.as_str()),
                ("Chart:", s.chart.as_deref().unwrap_or_default()),
                (
                    "Ref:",
                    s.extra
                        .get("ref")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
            ] {
                if !v.is_empty() || k == "Target:" {
                    let _ = writeln!(out, "  {k:<18}{v}");
                }
            }
        }
    }
    let mut line = |k: &str, v: &str| {
        let _ = writeln!(out, "{:<20}{v}", format!("{k}:"));
    };
    if let Some(w) = window {
        line("Sync Window", w);
    }
    line("Sync Policy", sync_policy(&app));
    line(
        "Sync Status",
        &format!(
            "{sync} {preposition} {}",
            if status.sync.revisions.is_empty() {
                revision_label(target, &status.sync.revision)
            } else {
                multi_revision_label(&app.spec.sources, &status.sync.revisions)
            }
        ),
    );
    line(
        "Health Status",
        match status.health.status.as_str() {
            "" => "Unknown",
            h => h,
        },
    );
    if let Some((owner, epoch)) = &owner {
        line("Controller", &format!("{owner} (epoch {epoch})"));
    }
    // Conditions (a refused spec: unknown project or destination), as Argo CD lists them; a
    // sync loop first.
    if !status.conditions.is_empty() {
        out.push('\n');
        let _ = writeln!(out, "{:<20}MESSAGE", "CONDITION");
        let mut conditions: Vec<_> = status.conditions.iter().collect();
        conditions.sort_by_key(|c| c.type_name != plumb_sync::loops::CONDITION);
        for c in conditions {
            let _ = writeln!(out, "{:<20}{}", c.type_name, c.message);
        }
    }
    // The last (or running) operation, as `argocd app get` shows it.
    if let Some(op) = status
        .operation_state
        .as_ref()
        .filter(|o| !o.phase.is_empty())
    {
        out.push('\n');
        let mut line = |k: &str, v: &str| {
            let _ = writeln!(out, "{:<20}{v}", format!("{k}:"));
        };
        line("Operation", "Sync");
        line(
            "Sync Revision",
            &op.sync_result.as_ref().map_or(String::new(), |r| {
                if r.revisions.is_empty() {
                    r.revision.clone()
                } else {
                    r.revisions.join(", ")
                }
            }),
        );
        line("Phase", &op.phase);
        line("Start", &go_time(op.started_at));
        if let Some(finished) = op.finished_at {
            line("Finished", &go_time(Some(finished)));
            if let Some(started) = op.started_at {
                let secs = finished
                    .duration_since(started)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let d = GoDuration::from_secs(i64::try_from(secs).unwrap_or(i64::MAX));
                line("Duration", &d.to_string());
            }
        }
        line("Message", &op.message);
        // Retries of this revision's failed sync (`syncPolicy.retry`); absent before one.
        if let Some(n) = op.retry_count.filter(|n| *n > 0) {
            line("Retry Count", &n.to_string());
        }
    }
    out.push('\n');
    let mut rows = vec![
        [
            "GROUP",
            "KIND",
            "NAMESPACE",
            "NAME",
            "STATUS",
            "HEALTH",
            "HOOK",
            "MESSAGE",
        ]
        .map(String::from),
    ];
    for r in &status.resources {
        let health = r.health.clone().unwrap_or_default();
        rows.push([
            r.group.clone(),
            r.kind.clone(),
            r.namespace.clone(),
            r.name.clone(),
            r.status.clone(),
            health.status,
            // Argo CD records `hook` as a boolean here; the column names a hook type, which
            // `status.resources` does not carry, so it stays empty (as it always printed).
            String::new(),
            health.message,
        ]);
    }
    out.push_str(&table(&rows, 0));
    out
}

/// Every source's `TARGET (sha)`, comma-separated (a multi-source app's sync status).
fn multi_revision_label(sources: &[AppSource], revisions: &[String]) -> String {
    revisions
        .iter()
        .enumerate()
        .map(|(i, rev)| {
            let target = sources.get(i).map_or("", |s| s.target_revision.as_str());
            revision_label(target, rev)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `argocd app history`: ID, DATE (Go's time format), REVISION. A multi-source app's
/// history (entries with `sources`): one table per source repository, headed `SOURCE URL`.
pub fn format_history(app: &Value) -> String {
    let (app, _) = Application::read_lenient(app);
    if app.status.history.iter().any(|h| !h.sources.is_empty()) {
        let mut repos: Vec<&str> = Vec::new();
        let mut rows: BTreeMap<&str, Vec<[String; 3]>> = BTreeMap::new();
        for h in &app.status.history {
            for (i, s) in h.sources.iter().enumerate() {
                let rev = h.revisions.get(i).map_or("", String::as_str);
                if !repos.contains(&s.repo_url.as_str()) {
                    repos.push(&s.repo_url);
                }
                rows.entry(&s.repo_url).or_default().push([
                    h.id.to_string(),
                    go_time(h.deployed_at),
                    revision_label(&s.target_revision, rev),
                ]);
            }
        }
        let mut out = String::new();
        for repo in repos {
            // `SOURCE` takes the ID column; the URL does not widen DATE (as a tab writer's
            // last cell of a line).
            let mut table_rows = vec![["SOURCE", "", ""].map(String::from)];
            table_rows.push(["ID", "DATE", "REVISION"].map(String::from));
            table_rows.extend(rows.remove(repo).unwrap_or_default());
            let text = table(&table_rows, 8);
            let (_, body) = text.split_once('\n').unwrap_or_default();
            let date_at = body.find("DATE").unwrap_or(8);
            let _ = writeln!(out, "{:<date_at$}{repo}", "SOURCE");
            out.push_str(body);
            out.push('\n');
        }
        return out;
    }
    let source = single_source(&app);
    let mut rows = vec![["ID", "DATE", "REVISION"].map(String::from)];
    for h in &app.status.history {
        let target = match h.source.target_revision.as_str() {
            "" => source.target_revision.as_str(),
            t => t,
        };
        rows.push([
            h.id.to_string(),
            go_time(h.deployed_at),
            revision_label(target, &h.revision),
        ]);
    }
    table(&rows, 8)
}

/// `argocd app list`'s main columns, in its order (NAME, NAMESPACE, PROJECT, STATUS, …).
pub fn format_list(apps: &[Value]) -> String {
    let mut rows = vec![
        [
            "NAME",
            "NAMESPACE",
            "PROJECT",
            "STATUS",
            "HEALTH",
            "SYNCPOLICY",
            "REPO",
            "PATH",
            "TARGET",
        ]
        .map(String::from),
    ];
    for a in apps {
        let (a, _) = Application::read_lenient(a);
        let source = single_source(&a);
        rows.push([
            format!("{}/{}", a.metadata.namespace, a.metadata.name),
            a.spec.destination.namespace.clone(),
            match a.spec.project.as_str() {
                "" => plumb_core::project::DEFAULT_PROJECT.to_string(),
                p => p.to_string(),
            },
            // A recognised sync loop is marked (`OutOfSync (SyncLoop)`).
            match &a.status.sync_loop {
                Some(_) => format!(
                    "{} ({})",
                    a.status.sync.status,
                    plumb_sync::loops::CONDITION
                ),
                None => a.status.sync.status.clone(),
            },
            a.status.health.status.clone(),
            match sync_policy(&a) {
                "Manual" => "Manual",
                "Automated (Prune)" => "Auto-Prune",
                _ => "Auto",
            }
            .to_string(),
            source.repo_url,
            source.path,
            source.target_revision,
        ]);
    }
    table(&rows, 0)
}

/// A time as Go prints a `time.Time` in UTC: `2026-09-22 19:57:06 +0000 UTC`; empty for none.
fn go_time(t: Option<std::time::SystemTime>) -> String {
    let Some(t) = t else {
        return String::new();
    };
    let rfc3339 = plumb_core::time::format_rfc3339(t);
    match rfc3339.strip_suffix('Z').and_then(|t| t.split_once('T')) {
        Some((date, time)) => format!("{date} {time} +0000 UTC"),
        None => rfc3339,
    }
}

/// Columns separated by at least two spaces (Go's tabwriter with padding 2), each column at
/// least `min_width` wide; trailing spaces trimmed.
fn table<const N: usize>(rows: &[[String; N]], min_width: usize) -> String {
    let mut widths = [min_width.saturating_sub(2); N];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            line.push_str(c);
            if i + 1 < N {
                let pad = widths[i] + 2 - c.chars().count();
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payments() -> Value {
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "payments-prod", "namespace": "argocd"},
            "spec": {"project": "default",
                "source": {"repoURL": "https://git.example.com/platform/payments.git", "path": "overlays/prod", "targetRevision": "HEAD"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": "pay-prod"},
                "syncPolicy": {"automated": {"prune": true, "selfHeal": true}}},
            "status": {"sync": {"status": "OutOfSync", "revision": "b5e2be1c0ffee"},
                "health": {"status": "Healthy"},
                "resources": [{"group": "apps", "kind": "Deployment", "namespace": "pay-prod", "name": "payments-api",
                    "status": "OutOfSync", "health": {"status": "Healthy"}}],
                "history": [
                    {"id": 0, "revision": "b5e2be1c0ffee", "deployedAt": "2026-09-22T19:57:06Z"},
                    {"id": 1, "revision": "b5e2be1c0ffee", "deployedAt": "2026-09-22T19:57:09Z"}]}})
    }

    #[test]
    fn get_prints_the_seed_shape() {
        let out = format_get(&payments());
        assert!(
            out.starts_with("Name:               argocd/payments-prod\n"),
            "{out}"
        );
        assert!(
            out.contains("\nSync Policy:        Automated (Prune)\n"),
            "{out}"
        );
        assert!(
            out.contains("\nSync Status:        OutOfSync from HEAD (b5e2be1)\n"),
            "{out}"
        );
        assert!(out.contains("\nHealth Status:      Healthy\n"), "{out}");
        assert!(
            out.contains("\napps   Deployment  pay-prod   payments-api  OutOfSync  Healthy\n"),
            "{out}"
        );
        let mut synced = payments();
        synced["status"]["sync"] = json!({"status": "Synced", "revision": "72e773bdead"});
        assert!(format_get(&synced).contains("Sync Status:        Synced to HEAD (72e773b)\n"));
        // A running operation shows what it waits for, as `argocd app get` does.
        let mut running = payments();
        running["status"]["operationState"] = json!({"phase": "Running",
            "message": "waiting for healthy state of apps/Deployment/payments-api",
            "startedAt": "2026-09-22T19:57:06Z", "syncResult": {"revision": "b5e2be1aa"}});
        let out = format_get(&running);
        assert!(
            out.contains("\nHealth Status:      Healthy\n\nOperation:          Sync\nSync Revision:      b5e2be1aa\nPhase:              Running\nStart:              2026-09-22 19:57:06 +0000 UTC\nMessage:            waiting for healthy state of apps/Deployment/payments-api\n\nGROUP"),
            "{out}"
        );
        running["status"]["operationState"]["phase"] = json!("Succeeded");
        running["status"]["operationState"]["finishedAt"] = json!("2026-09-22T19:58:11Z");
        let out = format_get(&running);
        assert!(
            out.contains(
                "\nFinished:           2026-09-22 19:58:11 +0000 UTC\nDuration:           1m5s\n"
            ),
            "{out}"
        );
    }

    /// `testdata/apps-golden.json` was printed by the raw-JSON readers before `app get`,
    /// `history` and `list` read the typed model: the output must stay byte-identical
    /// (Argo CD-written status with multi-source fields, a hook resource, a running and a
    /// failed operation, an Application without status). One deliberate change since: the
    /// failed operation's `retryCount` is shown (`Retry Count:`).
    #[test]
    fn typed_reads_print_what_the_raw_reads_printed() {
        let apps: Vec<Value> = serde_json::from_str(include_str!("testdata/apps.json")).unwrap();
        let golden: Vec<Value> =
            serde_json::from_str(include_str!("testdata/apps-golden.json")).unwrap();
        for (app, want) in apps.iter().zip(&golden) {
            assert_eq!(format_get(app), want["get"].as_str().unwrap());
            assert_eq!(format_history(app), want["history"].as_str().unwrap());
        }
        assert_eq!(
            format_list(&apps),
            golden.last().unwrap()["list"].as_str().unwrap()
        );
    }

    /// A multi-source history: one table per source repository, each revision labelled
    /// with that source's target; a long URL does not widen the DATE column.
    #[test]
    fn multi_source_history_prints_one_table_per_source() {
        let app = json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "m"},
            "spec": {"sources": [{"repoURL": "https://charts.example/", "chart": "web"}]},
            "status": {"history": [
                {"id": 3, "deployedAt": "2026-09-20T10:00:00Z", "revisions": ["1.2.2", "abc0000ff"],
                 "sources": [{"repoURL": "https://charts.example/", "targetRevision": "1.2.*"},
                             {"repoURL": "https://git.example/a-long-repository-name/values.git"}]}]}});
        assert_eq!(
            format_history(&app),
            "SOURCE  https://charts.example/\n\
             ID      DATE                           REVISION\n\
             3       2026-09-20 10:00:00 +0000 UTC  1.2.* (1.2.2)\n\n\
             SOURCE  https://git.example/a-long-repository-name/values.git\n\
             ID      DATE                           REVISION\n\
             3       2026-09-20 10:00:00 +0000 UTC  HEAD (abc0000)\n\n"
        );
    }

    /// A status field of the wrong shape blanks that field only.
    #[test]
    fn an_odd_status_field_does_not_hide_the_rest() {
        let mut app = payments();
        app["status"]["reconciledAt"] = json!("yesterday");
        app["status"]["health"] = json!("Healthy");
        let out = format_get(&app);
        assert!(out.contains("\nHealth Status:      Unknown\n"), "{out}");
        assert!(
            out.contains("\nSync Status:        OutOfSync from HEAD (b5e2be1)\n"),
            "{out}"
        );
        assert!(format_history(&app).contains("\n1       2026-09-22 19:57:09 +0000 UTC"));
    }

    #[test]
    fn history_prints_the_seed_shape() {
        let out = format_history(&payments());
        assert_eq!(
            out,
            "ID      DATE                           REVISION\n\
             0       2026-09-22 19:57:06 +0000 UTC  HEAD (b5e2be1)\n\
             1       2026-09-22 19:57:09 +0000 UTC  HEAD (b5e2be1)\n"
        );
    }

    #[test]
    fn list_one_line_per_app() {
        let out = format_list(&[payments()]);
        assert!(
            out.lines().nth(1).unwrap().starts_with(
                "argocd/payments-prod  pay-prod   default  OutOfSync  Healthy  Auto-Prune"
            ),
            "{out}"
        );
    }

    #[test]
    fn a_sync_loop_is_marked_in_list_and_first_in_get() {
        let mut app = payments();
        app["status"]["conditions"] = json!([
            {"type": "ComparisonError", "message": "x"},
            {"type": "SyncLoop", "message": "revision b5e2be1 synced 3 times"}]);
        app["status"]["syncLoop"] = json!({"revision": "b5e2be1", "syncs": 3, "fields": []});
        let out = format_list(&[app.clone()]);
        assert!(
            out.lines()
                .nth(1)
                .unwrap()
                .contains("default  OutOfSync (SyncLoop)  Healthy"),
            "{out}"
        );
        let get = format_get(&app);
        let loop_at = get.find("SyncLoop ").expect("the loop condition");
        let other_at = get.find("ComparisonError").expect("the other condition");
        assert!(loop_at < other_at, "{get}");
    }

    #[test]
    fn get_shows_the_replica_that_owns_the_app() {
        let app = json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "a", "namespace": "plumb"},
            "spec": {"source": {"repoURL": "r", "path": "p"}, "destination": {}},
            "status": {"controller": {"owner": "plumb-controller-1", "epoch": 4}}});
        assert!(
            format_get(&app).contains("\nController:         plumb-controller-1 (epoch 4)\n"),
            "{}",
            format_get(&app)
        );
    }
}
