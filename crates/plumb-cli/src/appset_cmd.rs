//! `plumb appset generate FILE`: the Applications an ApplicationSet generates, as Argo CD's
//! ApplicationSet controller would create them (plumb-appset), without a cluster. Git
//! generators read their repository through the pipeline's own fetch (`--repo DIR` serves every
//! `repoURL` from one local repository; otherwise local paths and remotes through the
//! repository cache); the clusters generator reads Argo CD cluster Secrets from
//! `--cluster-secrets PATH`.

use crate::EXIT_IN_SYNC;
use anyhow::{Result, anyhow, bail};
use plumb_appset::Inputs;
use plumb_render::remote::RepoCache;
use serde_json::Value;
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
    /// directory (`--live DIR`: a `plumb snapshot` directory), for the clusters generator.
    #[arg(
        long,
        visible_alias = "live",
        value_name = "PATH",
        conflicts_with = "cluster"
    )]
    cluster_secrets: Option<PathBuf>,
    /// Read the cluster Secrets from the cluster (`--cluster`, `--context`, `--kubeconfig`), in
    /// the control namespace: `--control-namespace`, else the ApplicationSet's.
    #[command(flatten)]
    cluster: crate::cluster_args::ClusterArgs,
    /// Where the cluster Secrets are read from with `--cluster`.
    #[arg(long, value_name = "NAMESPACE", requires = "cluster")]
    control_namespace: Option<String>,
    /// Kubernetes objects the generators read, as manifests (a file or a directory), in place
    /// of the cluster's: Secrets (a `tokenRef`, a plugin's token), ConfigMaps (a plugin's or a
    /// clusterDecisionResource's configuration) and decision resources. With `--cluster`,
    /// what is not given is read from the control namespace.
    #[arg(long, value_name = "PATH")]
    objects: Option<PathBuf>,
    /// `yaml` (a stream) or `json` (an array).
    #[arg(short, long, default_value = "yaml", value_parser = ["yaml", "json"])]
    output: String,
}

pub fn run(args: AppsetArgs) -> Result<u8> {
    match args.command {
        AppsetCommand::Generate(a) => generate(a),
    }
}

/// The clusters the `clusters` generator sees: the Argo CD cluster Secrets of `control` in the
/// cluster, read as the controller reads them.
pub fn cluster_list(
    rt: &tokio::runtime::Runtime,
    cluster: &plumb_cluster::Cluster,
    control: &str,
) -> Result<Vec<plumb_appset::Cluster>> {
    let secrets = rt
        .block_on(plumb_sync::run::tenancy::cluster_secrets(
            cluster, None, control,
        ))
        .map_err(|e| anyhow!("cluster Secrets in {control}: {e}"))?;
    Ok(plumb_appset::clusters_from_secrets(
        secrets.iter(),
        &format!("namespace {control}"),
    )?)
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
    let control = a.control_namespace.clone().unwrap_or_else(|| {
        appset
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(plumb_core::ARGOCD_NAMESPACE)
            .to_string()
    });
    // The runtime lives to the end of the generation (the generators' reads wait on it).
    let (rt, cluster) = if a.cluster.cluster {
        let c = crate::cluster_args::connect(&a.cluster)?;
        (Some(c.rt), Some(std::sync::Arc::new(c.cluster)))
    } else {
        (None, None)
    };
    let clusters = match &a.cluster_secrets {
        Some(p) => {
            let docs =
                plumb_render::load_paths(std::slice::from_ref(p)).map_err(|e| anyhow!("{e}"))?;
            plumb_appset::clusters_from_secrets(
                docs.iter().map(|m| &m.object),
                &p.display().to_string(),
            )?
        }
        None if cluster.is_some() => cluster_list(
            rt.as_ref().expect("runtime"),
            cluster.as_ref().expect("cluster"),
            &control,
        )?,
        None => Vec::new(),
    };
    let base = a.file.parent().map(Path::to_path_buf);
    let repos = plumb_sync::controller::appsets::FetchRepos::new(
        a.repo.clone(),
        base,
        std::sync::Arc::new(RepoCache::new(
            RepoCache::default_dir(),
            std::time::Duration::ZERO,
        )),
    );
    let objects = match &a.objects {
        Some(p) => plumb_render::load_paths(std::slice::from_ref(p))
            .map_err(|e| anyhow!("{e}"))?
            .into_iter()
            .map(|m| m.object)
            .collect(),
        None => Vec::new(),
    };
    let services = plumb_sync::controller::appsets::GenServices {
        cluster: rt
            .as_ref()
            .zip(cluster)
            .map(|(rt, c)| (c, rt.handle().clone(), control.clone())),
        objects,
        allowed_urls: None,
    };
    let apps = plumb_appset::generate(
        appset,
        &Inputs {
            repos: &repos,
            clusters: Some(&clusters),
            services: &services,
            appset_name: "",
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
