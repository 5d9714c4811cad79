//! `plumb appset generate FILE`: the Applications an ApplicationSet generates, as Argo CD's
//! ApplicationSet controller would create them (plumb-appset), without a cluster. Git
//! generators read their repository through the pipeline's own fetch (`--repo DIR` serves every
//! `repoURL` from one local repository; otherwise local paths and remotes through the
//! repository cache); the clusters generator reads Argo CD cluster Secrets from
//! `--cluster-secrets PATH`.

use crate::EXIT_IN_SYNC;
use anyhow::{Result, anyhow, bail};
use plumb_appset::{Cluster, Inputs, Repos};
use plumb_cluster::ClusterApi as _;
use plumb_core::argo::AppSource;
use plumb_render::fetch::{Overrides, fetch, locate};
use plumb_render::remote::RepoCache;
use plumb_render::source::{EntryKind, SourceFs};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct AppsetArgs {
    #[command(subcommand)]
    command: AppsetCommand,
}

#[derive(clap::Subcommand)]
enum AppsetCommand {
    /// Print the Applications an ApplicationSet generates (exit 0), or one line naming the
    /// generator and field that stop it (exit 2; nothing is printed).
    Generate(GenerateArgs),
}

#[derive(clap::Args)]
struct GenerateArgs {
    /// The ApplicationSet (YAML or JSON).
    file: PathBuf,
    /// A local git repository read for every git generator, at the generator's `revision`.
    #[arg(long, value_name = "DIR")]
    repo: Option<PathBuf>,
    /// Argo CD cluster Secrets (`argocd.argoproj.io/secret-type: cluster`), a file or a
    /// directory, for the clusters generator.
    #[arg(long, value_name = "PATH", conflicts_with = "cluster")]
    cluster_secrets: Option<PathBuf>,
    /// Read the cluster Secrets from the cluster (`--cluster`, `--context`, `--kubeconfig`), in
    /// the control namespace: `--control-namespace`, else the ApplicationSet's.
    #[command(flatten)]
    cluster: crate::cluster_args::ClusterArgs,
    /// Where the cluster Secrets are read from with `--cluster`.
    #[arg(long, value_name = "NAMESPACE", requires = "cluster")]
    control_namespace: Option<String>,
    /// `yaml` (a stream) or `json` (an array).
    #[arg(short, long, default_value = "yaml", value_parser = ["yaml", "json"])]
    output: String,
}

pub fn run(args: AppsetArgs) -> Result<u8> {
    match args.command {
        AppsetCommand::Generate(a) => generate(a),
    }
}

fn generate(a: GenerateArgs) -> Result<u8> {
    let docs = plumb_render::load_file(&a.file).map_err(|e| anyhow!("{e}"))?;
    let appsets: Vec<&Value> = docs
        .iter()
        .map(|m| &m.object)
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("ApplicationSet"))
        .collect();
    let [appset] = appsets.as_slice() else {
        bail!(
            "{}: expected one ApplicationSet, found {}",
            a.file.display(),
            appsets.len()
        );
    };
    let clusters = match &a.cluster_secrets {
        Some(p) => {
            let docs =
                plumb_render::load_paths(std::slice::from_ref(p)).map_err(|e| anyhow!("{e}"))?;
            cluster_secrets(docs.iter().map(|m| &m.object), &p.display().to_string())?
        }
        None if a.cluster.cluster => {
            let control = a.control_namespace.clone().unwrap_or_else(|| {
                appset
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .unwrap_or(plumb_core::ARGOCD_NAMESPACE)
                    .to_string()
            });
            let c = crate::cluster_args::connect(&a.cluster)?;
            let secrets = c
                .block_on(c.cluster.list_labelled(
                    "",
                    "Secret",
                    &control,
                    ("argocd.argoproj.io/secret-type", "cluster"),
                ))
                .map_err(|e| anyhow!("cluster Secrets in {control}: {e}"))?;
            cluster_secrets(secrets.iter(), &format!("namespace {control}"))?
        }
        None => Vec::new(),
    };
    let base = a.file.parent().map(Path::to_path_buf);
    let repos = GitRepos {
        overrides: Overrides {
            repo: a.repo.clone(),
            ..Overrides::default()
        },
        base,
        cache: RepoCache::new(RepoCache::default_dir(), std::time::Duration::ZERO),
        opened: RefCell::new(HashMap::new()),
        listed: RefCell::new(HashMap::new()),
    };
    let apps = plumb_appset::generate(
        appset,
        &Inputs {
            repos: &repos,
            clusters: &clusters,
        },
    )
    .map_err(|e| anyhow!("{}: {e}", a.file.display()))?;
    if a.output == "json" {
        println!("{}", serde_json::to_string_pretty(&Value::Array(apps))?);
    } else {
        for app in &apps {
            print!("---\n{}", plumb_diff::text::to_yaml(app));
        }
    }
    Ok(EXIT_IN_SYNC)
}

/// A repository at a revision, opened once per run.
struct GitRepos {
    overrides: Overrides,
    base: Option<PathBuf>,
    cache: RepoCache,
    opened: RefCell<HashMap<(String, String), std::rc::Rc<dyn SourceFs>>>,
    /// Each repository's file list at a revision, walked once (a matrix runs its second git
    /// generator once per parameter set of the first).
    listed: RefCell<HashMap<(String, String), Vec<String>>>,
}

impl GitRepos {
    fn open(&self, repo_url: &str, revision: &str) -> Result<std::rc::Rc<dyn SourceFs>, String> {
        let key = (repo_url.to_string(), revision.to_string());
        if let Some(fs) = self.opened.borrow().get(&key) {
            return Ok(fs.clone());
        }
        let source = AppSource {
            repo_url: repo_url.to_string(),
            target_revision: revision.to_string(),
            ..AppSource::default()
        };
        let at =
            locate(&source, &self.overrides, self.base.as_deref()).map_err(|e| e.to_string())?;
        let fetched = fetch(&at, &self.cache).map_err(|e| e.to_string())?;
        let fs: std::rc::Rc<dyn SourceFs> = std::rc::Rc::from(fetched.fs);
        self.opened.borrow_mut().insert(key, fs.clone());
        Ok(fs)
    }
}

impl Repos for GitRepos {
    fn files(&self, repo_url: &str, revision: &str) -> Result<Vec<String>, String> {
        let key = (repo_url.to_string(), revision.to_string());
        if let Some(files) = self.listed.borrow().get(&key) {
            return Ok(files.clone());
        }
        let fs = self.open(repo_url, revision)?;
        // The source walk every renderer uses: symlink cycles end, the walk is bounded.
        let mut out = Vec::new();
        plumb_render::render::walk_tree(fs.as_ref(), &[String::new()], &mut |rel, kind| {
            if kind == EntryKind::File {
                out.push(rel.to_string());
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        out.sort();
        self.listed.borrow_mut().insert(key, out.clone());
        Ok(out)
    }

    fn read(&self, repo_url: &str, revision: &str, path: &str) -> Result<Vec<u8>, String> {
        self.open(repo_url, revision)?
            .read(path)
            .map_err(|e| e.to_string())
    }
}

/// Argo CD cluster Secrets among `objects` (read from `from`, for messages): `name`, `server`
/// from `data` (base64) or `stringData`; the Secret's labels and annotations (the clusters
/// generator's `metadata.*`). Values other than these two are never read.
fn cluster_secrets<'a>(
    objects: impl Iterator<Item = &'a Value>,
    from: &str,
) -> Result<Vec<Cluster>> {
    let mut out = Vec::new();
    for o in objects {
        let labels = o
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if o.get("kind").and_then(Value::as_str) != Some("Secret")
            || labels
                .get("argocd.argoproj.io/secret-type")
                .and_then(Value::as_str)
                != Some("cluster")
        {
            continue;
        }
        let secret = o
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let field = |key: &str| -> Result<String> {
            plumb_core::clusters::secret_string(o, key)
                .map(Option::unwrap_or_default)
                .map_err(|(field, reason)| anyhow!("{from}: Secret {secret}: {field}: {reason}"))
        };
        out.push(Cluster {
            name: field("name")?,
            server: field("server")?,
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
