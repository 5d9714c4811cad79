//! Where desired state comes from: `--repo/--revision/--path`, an Application's
//! `spec.source`, shared by `plumb render` and `plumb diff`.

use anyhow::{Result, anyhow, bail};
use plumb_core::argo::{AppSource, Application};
use plumb_render::render::{RenderOptions, Rendered, RenderedObject, Renderer, render};
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
    /// The repository directory (its work tree, for fixes).
    pub repo: PathBuf,
    /// The repository at the rendered revision.
    pub fs: Box<dyn SourceFs>,
}

/// Renders the source the options and the Application describe.
pub fn render_source(
    args: &SourceArgs,
    app: Option<(&Application, &Path)>,
) -> Result<RenderedSource> {
    let app_source = app.and_then(|(a, _)| a.source.clone()).unwrap_or_default();
    let repo = match &args.repo {
        Some(r) => r.clone(),
        None => match app {
            Some((a, file)) if !app_source.repo_url.is_empty() => {
                repo_from_url(&app_source.repo_url, file).map_err(|e| {
                    // An Application read from a cluster or snapshot has no file to name.
                    let shown = file.display().to_string();
                    if shown.starts_with('<') {
                        anyhow!("Application {}: {e}", a.name)
                    } else {
                        anyhow!("{shown}: Application {}: {e}", a.name)
                    }
                })?
            }
            _ => PathBuf::from("."),
        },
    };
    // The Application's targetRevision applies to git repositories; a plain directory
    // has only its working tree (an explicit --revision there is an error).
    let revision = args.revision.clone().or_else(|| {
        let r = app_source.target_revision.trim();
        (!r.is_empty() && plumb_render::source::is_git_repository(&repo)).then(|| r.to_string())
    });
    let path = match (&args.path, app) {
        (Some(p), _) => p.clone(),
        (None, Some(_)) => app_source.path.clone(),
        (None, None) => {
            bail!("no source path: pass --path SUBDIR (or --app with spec.source.path)")
        }
    };
    let fs = plumb_render::source::open_source(&repo, revision.as_deref())
        .map_err(|e| anyhow!("{e}"))?;
    let renderer = match args.renderer {
        RendererArg::Native => Renderer::Native,
        RendererArg::KustomizeBinary => Renderer::KustomizeBinary,
    };
    let source = AppSource {
        path: path.clone(),
        ..app_source
    };
    let opts = RenderOptions {
        renderer,
        app_name: app.map(|(a, _)| a.name.clone()),
        namespace: app.and_then(|(a, _)| a.destination_namespace.clone()),
    };
    let rendered = render(fs.as_ref(), &path, &source, &opts).map_err(|e| {
        let mut e = e;
        // Paths in errors are repository-relative; say which repository.
        if e.file.is_relative() && repo != Path::new(".") {
            e.file = repo.join(&e.file);
        }
        anyhow!("{e}")
    })?;
    for note in &rendered.notes {
        eprintln!("note: {note}");
    }
    Ok(RenderedSource { rendered, repo, fs })
}

/// `spec.source.repoURL` as a local repository: a path (relative to the Application
/// file's directory) or a `file://` URL. Remote URLs need a local clone (`--repo`).
fn repo_from_url(url: &str, app_file: &Path) -> Result<PathBuf, String> {
    let local = if let Some(rest) = url.strip_prefix("file://") {
        PathBuf::from(rest)
    } else if url.contains("://") || url.starts_with("git@") {
        return Err(format!(
            "repoURL {url} is remote; plumb reads local repositories: pass --repo DIR with a clone of it"
        ));
    } else {
        PathBuf::from(url)
    };
    Ok(if local.is_absolute() {
        local
    } else {
        app_file.parent().unwrap_or(Path::new(".")).join(local)
    })
}

/// Rendered objects as the compare's desired objects, with their source locations.
pub fn desired_of(objects: Vec<RenderedObject>) -> Vec<plumb_diff::compare::Desired> {
    objects
        .into_iter()
        .map(|o| plumb_diff::compare::Desired {
            origin: o.location(),
            object: o.object,
            origins: o.origins,
        })
        .collect()
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
