//! Where desired state comes from: `--repo/--revision/--path`, an Application's
//! `spec.source`, shared by `plumb render`, `plumb diff`, `plumb doctor` and `plumb app diff`.
//!
//! [`render_sources_on`] runs the pipeline's first steps for a command (Application →
//! sources → located → fetched → rendered: `plumb_render::fetch`, `plumb_render::render`);
//! a remote `repoURL` goes through the repository cache. `diff --cluster` then prepares
//! desired with the cluster's discovery.

use anyhow::{Result, anyhow, bail};
use plumb_core::argo::{AppSource, Application};
use plumb_render::fetch::{FetchError, Overrides, fetch, locate};
use plumb_render::remote::RepoCache;
use plumb_render::render::{
    Refs, RenderOptions, Rendered, RenderedObject, Renderer, is_ref_only, ref_name,
    render_fetched_with,
};
use plumb_render::repocreds::CredStore;
use plumb_render::source::SourceFs;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug, Default)]
pub struct SourceArgs {
    /// A git repository (read at --revision from its object database, never the work
    /// tree) or a plain directory. Default: the Application's spec.source.repoURL, else `.`.
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Git revision: branch, tag, SHA, `HEAD~1`… Default: the Application's
    /// targetRevision, else HEAD.
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,
    /// The source path inside the repository. Default: the Application's spec.source.path.
    #[arg(long, value_name = "SUBDIR")]
    pub path: Option<String>,
    /// Kustomize renderer: plumb's own (with source locations) or the kustomize binary.
    #[arg(long, value_enum, default_value_t = RendererArg::Native)]
    pub renderer: RendererArg,
    /// Credentials for chart repositories: a file or directory of Argo CD repository
    /// Secrets (labelled argocd.argoproj.io/secret-type: repository or repo-creds).
    #[arg(long, value_name = "PATH")]
    pub repo_creds: Option<PathBuf>,
    /// Config management plugins: a directory of Argo CD `ConfigManagementPlugin` manifests
    /// (`NAME.yaml`, or `NAME/plugin.yaml`). Without it a source with `plugin:` is refused.
    #[arg(long, value_name = "DIR")]
    pub plugins: Option<PathBuf>,
    /// kustomize build options, as Argo CD's `kustomize.buildOptions` in argocd-cm: only
    /// `--enable-helm` (a kustomization's `helmCharts`, inflated natively with
    /// the `helm` on PATH).
    #[arg(long, value_name = "OPTIONS", allow_hyphen_values = true)]
    pub kustomize_build_options: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RendererArg {
    #[default]
    Native,
    KustomizeBinary,
}

impl SourceArgs {
    /// Whether any source option was given.
    pub fn given(&self) -> bool {
        self.repo.is_some() || self.revision.is_some() || self.path.is_some()
    }
}

/// A rendered source, with the repository it came from, opened at its revision.
pub struct RenderedSource {
    pub rendered: Rendered,
    /// The path rendered, inside the repository.
    pub path: String,
    /// The repository's work tree (for fixes); `None` when it is the repository cache's
    /// mirror of a remote `repoURL`.
    pub work_tree: Option<PathBuf>,
    /// The repository at the rendered revision.
    pub fs: Box<dyn SourceFs>,
}

/// Where an Application was read from.
#[derive(Debug, Clone, Copy)]
pub enum AppFrom<'a> {
    /// A file: a relative `repoURL` is relative to its directory.
    File(&'a Path),
    /// A snapshot's file, or a cluster (`None`): a relative `repoURL` is refused, naming the
    /// file (there is no directory it would mean anything relative to).
    Object(Option<&'a Path>),
}

/// Renders the sources the options and the Application describe (the pipeline's
/// [`plumb_render::fetch::locate`] → [`plumb_render::fetch::fetch`] →
/// [`render_fetched`](plumb_render::render::render_fetched), as the controller runs them):
/// one per source of the Application, or the one the options name. With a cluster at hand
/// (`--cluster`), charts are rendered with its version and API versions (`helm template
/// --kube-version/--api-versions`), as Argo CD renders them for the destination cluster.
pub fn render_sources_on(
    args: &SourceArgs,
    app: Option<(&Application, AppFrom<'_>)>,
    cluster: Option<&crate::cluster_args::Connected>,
) -> Result<Vec<RenderedSource>> {
    if args.path.is_none() && app.is_none() {
        bail!("no source path: pass --path SUBDIR (or --app with spec.source.path)");
    }
    let default = [AppSource::default()];
    let sources = match app.map(|(a, _)| a.sources.as_slice()) {
        Some(s) if !s.is_empty() => s,
        _ => &default[..],
    };
    let overrides = Overrides {
        repo: args.repo.clone(),
        revision: args.revision.clone(),
        path: args.path.clone(),
    };
    // A relative repoURL is relative to the Application file's directory; an Application
    // from a cluster or a snapshot has none (refused, naming the field).
    let base = match app {
        None => Some(Path::new(".")),
        Some((_, AppFrom::File(file))) => Some(file.parent().unwrap_or(Path::new("."))),
        Some((_, AppFrom::Object(_))) => None,
    };
    // A CLI run fetches a remote once; the cache keeps the mirror for the next run.
    let mut cache = RepoCache::new(RepoCache::default_dir(), std::time::Duration::ZERO);
    if let Some(path) = &args.repo_creds {
        let creds = CredStore::load(path).map_err(|e| anyhow!("--repo-creds: {e}"))?;
        cache = cache.with_creds(creds);
    }
    let renderer = match args.renderer {
        RendererArg::Native => Renderer::Native,
        RendererArg::KustomizeBinary => Renderer::KustomizeBinary,
    };
    let mut opts = RenderOptions::for_app(app.map(|(a, _)| a), renderer);
    opts.charts = Some(cache.charts().clone());
    if let Some(dir) = &args.plugins {
        let plugins =
            plumb_render::plugin::Plugins::load(dir).map_err(|e| anyhow!("--plugins: {e}"))?;
        opts.plugins = Some(std::sync::Arc::new(plugins));
    }
    if let Some(text) = &args.kustomize_build_options {
        opts.kustomize_build_options = plumb_render::render::kustomize_build_options(text)
            .map_err(|e| anyhow!("--kustomize-build-options: {e}"))?;
    }
    if let Some(c) = cluster {
        let api = c
            .block_on(c.cluster.api_resources())
            .map_err(|e| anyhow!("{e}"))?;
        opts = opts.with_cluster(
            c.cluster.server_version(),
            api.iter().flat_map(|i| {
                i.versions
                    .iter()
                    .map(move |v| (i.group.as_str(), v.as_str(), i.kind.as_str()))
            }),
        );
    }
    // Every source fetched first: a `ref:` source lends its files to the others' `$NAME/…`
    // value files (and is rendered itself only when it has a path or a chart).
    let mut fetched_all = Vec::with_capacity(sources.len());
    for (i, source) in sources.iter().enumerate() {
        let fetched =
            locate(source, &overrides, base).and_then(|at| fetch(&at, &cache).map(|f| (at, f)));
        let (at, fetched) = match (fetched, app) {
            (Ok(f), _) => f,
            (Err(FetchError::Open(e)), _) => bail!("{e}"),
            // A relative repoURL with nothing to resolve it from: the file (a snapshot's) and
            // the field are named.
            (Err(e @ FetchError::RelativeRepoUrl { .. }), Some((a, from))) => {
                let field = if sources.len() > 1 {
                    format!("spec.sources[{i}]")
                } else {
                    "spec.source".to_string()
                };
                match from {
                    AppFrom::File(file) | AppFrom::Object(Some(file)) => {
                        bail!("{}: Application {}: {field}: {e}", file.display(), a.name)
                    }
                    AppFrom::Object(None) => bail!("Application {}: {field}: {e}", a.name),
                }
            }
            (Err(e), Some((a, AppFrom::File(file)))) => {
                bail!("{}: Application {}: {e}", file.display(), a.name)
            }
            // An Application read from a cluster or snapshot: as before, no file named.
            (Err(e), Some((a, AppFrom::Object(_)))) => bail!("Application {}: {e}", a.name),
            (Err(e), None) => bail!("{e}"),
        };
        fetched_all.push((at, fetched));
    }
    let refs: Refs<'_> = fetched_all
        .iter()
        .filter_map(|(at, f)| ref_name(&at.source).map(|r| (r.to_string(), f.fs.as_ref())))
        .collect();
    let mut rendered_all = Vec::with_capacity(fetched_all.len());
    for ((at, fetched), source) in fetched_all.iter().zip(sources) {
        // As written (not as `--path` overrides it).
        if is_ref_only(source) {
            rendered_all.push(None);
            continue;
        }
        let rendered =
            render_fetched_with(fetched, &at.source, &opts, &refs).map_err(|e| anyhow!("{e}"))?;
        rendered_all.push(Some(rendered));
    }
    drop(refs);
    let mut out = Vec::with_capacity(fetched_all.len());
    for ((at, fetched), rendered) in fetched_all.into_iter().zip(rendered_all) {
        let Some(rendered) = rendered else {
            continue;
        };
        for note in &rendered.notes {
            eprintln!("note: {note}");
        }
        out.push(RenderedSource {
            rendered,
            path: at.source.path,
            work_tree: (!fetched.mirrored).then(|| fetched.dir.clone()),
            fs: fetched.fs,
        });
    }
    Ok(out)
}

/// Rendered objects as the compare's desired objects, with their source locations
/// (converted from the renderer's trees on every core).
pub fn desired_of(objects: Vec<RenderedObject>) -> Vec<plumb_diff::compare::Desired> {
    plumb_core::parallel::map_owned(objects, |o| {
        let at = o.location();
        plumb_diff::compare::Desired::of_rendered(o.object, at, true)
    })
}

/// Manifest files and directories as they are, as the compare's desired objects.
pub fn desired_from_files(paths: &[PathBuf]) -> Result<Vec<plumb_diff::compare::Desired>> {
    let ms = plumb_render::load_paths(paths).map_err(|e| anyhow!("{e}"))?;
    Ok(ms
        .into_iter()
        .map(|m| {
            let origin = m.location();
            plumb_diff::compare::Desired::new(m.object, origin)
        })
        .collect())
}
