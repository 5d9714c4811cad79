//! `plumb diff`: desired manifests against live objects, Argo CD's verdict and output.

use crate::cluster_args::{ClusterArgs, Connected, FIELD_MANAGER, connect, connect_destination};
use crate::output::{self, Format};
use crate::source_args::{AppFrom, SourceArgs, render_sources_on};
use crate::{EXIT_DIFFERENCES, EXIT_IN_SYNC, Hint};
use anyhow::{Result, anyhow, bail};
use plumb_core::argo::{Application, Settings};
use plumb_diff::DiffConfig;
use plumb_diff::compare::{CompareContext, Desired, ServerSide, Status, compare_prepared};
use plumb_diff::desired::{BuiltinScopes, DiscoveredScopes, Prepared, kinds_of, prepare};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args)]
pub struct DiffArgs {
    /// Desired manifests: YAML/JSON files (multi-document, `kind: List`) or directories
    /// (recursive). Instead of this, render a source: --repo/--revision/--path, or --app's spec.source.
    #[arg(long, num_args = 1.., value_name = "PATH", conflicts_with_all = ["repo", "revision", "path"])]
    desired: Vec<PathBuf>,
    #[command(flatten)]
    source: SourceArgs,
    /// Live objects, in the same forms (e.g. `kubectl get -o yaml` output, or a plumb
    /// snapshot). Instead of this, --cluster reads them from the API server.
    #[arg(long, num_args = 1.., value_name = "PATH", required_unless_present = "cluster", conflicts_with = "cluster")]
    live: Vec<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// With --cluster and --app: where the cluster Secrets that resolve the Application's
    /// destination are read from (default: the Application's namespace).
    #[arg(long, value_name = "NAMESPACE", requires = "cluster")]
    control_namespace: Option<String>,
    /// Server-side diff: predicted live is a dry-run server-side apply of desired (also
    /// turned on by the Application annotation `compare-options: ServerSideDiff=true`).
    #[arg(long, requires = "cluster")]
    server_side: bool,
    /// An Argo CD Application manifest: ignoreDifferences, destination namespace, tracking, compare options.
    #[arg(long, value_name = "FILE")]
    app: Option<PathBuf>,
    /// An argocd-cm ConfigMap: resource.customizations, resource.compareoptions, tracking method.
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Argocd)]
    output: Format,
    /// Exit 1 when there are differences (as `argocd app diff --exit-code`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    exit_code: bool,
    /// Timeout of each jqPathExpressions evaluation (Argo CD's default: 1s).
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    jq_timeout: Duration,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, mul) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. 1s, 500ms)"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("'{s}' must be positive"));
    }
    Ok(Duration::from_secs_f64(v * mul))
}

fn load_one(path: &Path, what: &str) -> Result<serde_json::Value> {
    let ms = plumb_render::load_file(path).map_err(|e| anyhow!("{e}"))?;
    match ms.len() {
        1 => Ok(ms.into_iter().next().map(|m| m.object).unwrap_or_default()),
        n => bail!("{}: expected one {what}, found {n} objects", path.display()),
    }
}

/// Reads an Argo CD Application manifest.
pub fn load_app(p: &Path) -> Result<Application> {
    Ok(load_app_object(p)?.1)
}

/// Reads an Argo CD Application manifest: the object as written and its model.
pub fn load_app_object(p: &Path) -> Result<(serde_json::Value, Application)> {
    let v = load_one(p, "Application")?;
    let app = Application::from_value(&v).map_err(|e| anyhow!("{}: {e}", p.display()))?;
    Ok((v, app))
}

/// Desired objects: files as given, or a rendered source (with source locations).
/// The revision is Argo CD's label of a rendered source (`HEAD (b5e2be1)`).
fn load_desired(
    args: &DiffArgs,
    app: Option<&Application>,
    cluster: Option<&Connected>,
) -> Result<(Vec<Desired>, Option<String>)> {
    if !args.desired.is_empty() {
        return Ok((crate::source_args::desired_from_files(&args.desired)?, None));
    }
    let from_app = app.is_some_and(|a| a.source.is_some());
    if !args.source.given() && !from_app {
        bail!(
            "no desired state: pass --desired PATH, --path SUBDIR [--repo DIR], or --app with spec.source"
        );
    }
    let app_ref = match (app, &args.app) {
        (Some(a), Some(p)) => Some((a, AppFrom::File(p.as_path()))),
        _ => None,
    };
    let mut desired = Vec::new();
    let mut revision = None;
    for source in render_sources_on(&args.source, app_ref, cluster)? {
        revision.get_or_insert(source.rendered.revision);
        desired.extend(crate::source_args::desired_of(source.rendered.objects));
    }
    Ok((desired, revision))
}

/// The live objects prepared desired (and the app's tracking) name: one LIST per kind.
fn live_from_cluster(
    c: &Connected,
    prepared: &Prepared,
    app: Option<&Application>,
) -> Result<Vec<serde_json::Value>> {
    let objects: Vec<serde_json::Value> = prepared
        .objects
        .values()
        .map(|p| p.desired.object.clone())
        .collect();
    c.block_on(c.cluster.live_for(
        &objects,
        app.map(|a| a.name.as_str()),
        plumb_core::INSTANCE_LABEL,
    ))
    .map_err(|e| anyhow!("{e}"))
}

fn load_settings(args: &DiffArgs) -> Result<Settings> {
    Ok(match &args.settings {
        Some(p) => {
            let v = load_one(p, "argocd-cm ConfigMap")?;
            Settings::from_configmap(&v).map_err(|e| anyhow!("{}: {e}", p.display()))?
        }
        None => Settings::argocd_defaults(),
    })
}

/// An error about a rule from argocd-cm names the override; this adds the file that
/// holds it (`--settings`).
fn name_settings_file(e: anyhow::Error, args: &DiffArgs) -> anyhow::Error {
    match &args.settings {
        Some(p) if e.to_string().contains("argocd-cm override") => {
            anyhow!("{}: {e}", p.display())
        }
        _ => e,
    }
}

pub fn run(args: DiffArgs) -> Result<u8> {
    let started = std::time::Instant::now();
    let (app_obj, app) = match &args.app {
        Some(p) => {
            let (v, app) = load_app_object(p)?;
            (Some(v), Some(app))
        }
        None => (None, None),
    };
    // Live is read from the Application's destination cluster (see `connect_destination`).
    let connected = match (args.cluster.cluster, &app_obj) {
        (false, _) => None,
        (true, None) => Some(connect(&args.cluster)?),
        (true, Some(app_obj)) => Some(
            connect_destination(
                &args.cluster,
                connect(&args.cluster)?,
                app_obj,
                args.control_namespace.as_deref(),
            )?
            .0,
        ),
    };
    let (desired, revision) = load_desired(&args, app.as_ref(), connected.as_ref())?;
    // Desired is prepared as the controller prepares it: scopes from the cluster's
    // discovery when there is a cluster, else from the built-in schema and the CRDs at hand.
    let (prepared, live, settings) = match &connected {
        Some(c) => {
            let settings = load_settings(&args)?;
            let scopes = DiscoveredScopes {
                served: c
                    .block_on(plumb_cluster::ClusterApi::scopes(
                        &c.cluster,
                        kinds_of(&desired),
                    ))
                    .map_err(|e| anyhow!("{e}"))?,
                offline: BuiltinScopes::with_crds_of(desired.iter().map(|d| &d.object)),
            };
            let prepared = prepare(desired, app.as_ref(), settings.tracking_method, &scopes)?
                .without_generated();
            let live = live_from_cluster(c, &prepared, app.as_ref())?;
            (prepared, live, settings)
        }
        None => {
            let live: Vec<serde_json::Value> = plumb_render::load_paths(&args.live)
                .map_err(|e| anyhow!("{e}"))?
                .into_iter()
                .map(|m| m.object)
                .collect();
            let settings = load_settings(&args)?;
            let scopes =
                BuiltinScopes::with_crds_of(desired.iter().map(|d| &d.object).chain(live.iter()));
            let prepared = prepare(desired, app.as_ref(), settings.tracking_method, &scopes)?
                .without_generated();
            (prepared, live, settings)
        }
    };
    let parsed = started.elapsed();

    let server_side = args.server_side
        || (connected.is_some()
            && app
                .as_ref()
                .is_some_and(|a| a.compare_options.server_side_diff == Some(true)));
    let include_mutation_webhook = app
        .as_ref()
        .is_some_and(|a| a.compare_options.include_mutation_webhook);
    if connected.is_none()
        && let Some(app) = &app
        && app.compare_options.server_side_diff == Some(true)
    {
        return Err(anyhow!(Hint(
            "server-side diff needs a live API server: add --cluster, or drop the annotation to compare files client-side".into()
        ))
        .context(format!("Application {} asks for ServerSideDiff=true, which a file-based diff cannot do", app.name)));
    }

    let app_origin = args
        .app
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let config = DiffConfig::for_app(&settings, app.as_ref(), &app_origin, args.jq_timeout)
        .map_err(|e| name_settings_file(e.into(), &args))?;
    let ctx = CompareContext {
        app: app.as_ref(),
        settings: Some(&settings),
        config: &config,
        keep_equal: false,
        server_side: None,
    };
    let dry_run = |objects: Vec<serde_json::Value>| -> Vec<Result<serde_json::Value, String>> {
        let Some(c) = &connected else {
            return objects
                .iter()
                .map(|_| Err("no cluster".to_string()))
                .collect();
        };
        c.block_on(c.cluster.dry_run_apply(objects, FIELD_MANAGER, true))
            .into_iter()
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
    };
    let ctx = CompareContext {
        server_side: server_side.then_some(ServerSide {
            manager: FIELD_MANAGER,
            include_mutation_webhook,
            dry_run: &dry_run,
        }),
        ..ctx
    };
    let results =
        compare_prepared(prepared, live, &ctx).map_err(|e| name_settings_file(e.into(), &args))?;
    let compared = started.elapsed();

    output::print(&results, args.output, revision.as_deref())?;
    if std::env::var_os("PLUMB_TIMINGS").is_some() {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        eprintln!(
            "timings: parse {:.1} ms, compare {:.1} ms, output {:.1} ms, total {:.1} ms, objects {}",
            ms(parsed),
            ms(compared - parsed),
            ms(started.elapsed() - compared),
            ms(started.elapsed()),
            results.len()
        );
    }
    let differs = results.iter().any(|r| r.status != Status::Equal);
    // The process exits next: freeing tens of thousands of objects one by one would
    // only delay it (a third of a second at 10,000 objects).
    std::mem::forget(results);
    Ok(if differs && args.exit_code {
        EXIT_DIFFERENCES
    } else {
        EXIT_IN_SYNC
    })
}
