//! `plumb health`: the health of objects in files, as sync waves and app health judge it
//! (user Lua scripts, built-in checks, the generic status-conditions check).
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

/// Health customizations for a process that syncs (the controller, `plumb app sync`): read
/// once at start, used by every sync wave and app health it computes.
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

pub fn run(args: HealthArgs) -> Result<u8> {
    let checker = checker(
        args.settings.as_ref(),
        args.resource_customizations.as_ref(),
    )?;
    let objects: Vec<Value> = plumb_render::load_paths(&args.paths)
        .map_err(|e| anyhow!("{e}"))?
        .into_iter()
        .map(|m| m.object)
        .collect();
    let results: Vec<Assessment> = plumb_core::parallel::map(&objects, |o| checker.check(o));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
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
