//! Live state from a cluster: `--cluster`, `--context`, `--kubeconfig`, and the tokio
//! runtime the (async) cluster crate runs on. The rest of the CLI stays synchronous.
//!
//! [`connect_destination`] (for `diff --app`, `snapshot --app` and `doctor --cluster`) resolves
//! the Application's destination with the runner's own resolution
//! (`plumb_sync::run::tenancy::destination_cluster`) and connects with
//! `Cluster::connect_destination`; the in-cluster destination is the kubeconfig's cluster, and
//! an explicit `--context` skips the resolution. `tests/destination_auth.rs` shows both, and a
//! cluster Secret whose only credential is a real exec plugin.

use anyhow::{Result, anyhow};
use plumb_cluster::{Cluster, ConnectOptions};
use std::path::PathBuf;

/// The field manager plumb applies (and dry-runs) with.
pub const FIELD_MANAGER: &str = "plumb";

#[derive(clap::Args, Debug, Default, Clone)]
pub struct ClusterArgs {
    /// Read live objects from the cluster of the current kubeconfig context.
    #[arg(long)]
    pub cluster: bool,
    /// The kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME", requires = "cluster")]
    pub context: Option<String>,
    /// The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE", requires = "cluster")]
    pub kubeconfig: Option<PathBuf>,
    /// The Applications and AppProjects to read and write: plumb's own (`plumb.dev`) or
    /// Argo CD's (`argoproj.io`; the Application namespace then defaults to `argocd`).
    #[arg(long, value_name = "GROUP", default_value = plumb_core::PLUMB_GROUP,
          value_parser = [plumb_core::PLUMB_GROUP, plumb_core::ARGO_GROUP])]
    pub api_group: String,
}

impl ClusterArgs {
    /// `--api-group` as the constant it names.
    pub fn app_group(&self) -> &'static str {
        if self.api_group == plumb_core::ARGO_GROUP {
            plumb_core::ARGO_GROUP
        } else {
            plumb_core::PLUMB_GROUP
        }
    }

    /// The namespace Applications live in unless `-N` says otherwise: `plumb`, or `argocd`
    /// for Argo CD's group.
    pub fn default_app_namespace(&self) -> &'static str {
        match self.app_group() {
            plumb_core::ARGO_GROUP => plumb_core::ARGOCD_NAMESPACE,
            _ => plumb_core::PLUMB_APP_NAMESPACE,
        }
    }

    /// These options as another command takes them (`--cluster --context … --kubeconfig …
    /// --api-group …`), for a command run through another's arguments (`plumb doctor`).
    pub fn argv(&self) -> Vec<String> {
        let mut argv = vec!["--cluster".to_string()];
        if let Some(c) = &self.context {
            argv.extend(["--context".into(), c.clone()]);
        }
        if let Some(k) = &self.kubeconfig {
            argv.extend(["--kubeconfig".into(), k.display().to_string()]);
        }
        argv.extend(["--api-group".into(), self.api_group.clone()]);
        argv
    }
}

/// A connected cluster and the runtime its calls run on.
pub struct Connected {
    pub rt: tokio::runtime::Runtime,
    pub cluster: Cluster,
}

impl Connected {
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }
}

pub fn connect(args: &ClusterArgs) -> Result<Connected> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| anyhow!("cannot start the async runtime: {e}"))?;
    let opts = ConnectOptions {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
    };
    let mut cluster = rt
        .block_on(Cluster::connect(&opts))
        .map_err(|e| anyhow!("{e}"))?;
    cluster.set_app_group(args.app_group());
    Ok(Connected { rt, cluster })
}

/// Where an Application's live objects are read from: its destination
/// (`spec.destination`), resolved as the controller resolves it
/// ([`plumb_sync::run::tenancy::destination_cluster`]: the cluster Secrets of the control
/// namespace, `control_namespace` or else the Application's own). The in-cluster
/// destination is the kubeconfig's cluster itself; another cluster is connected to with its
/// Secret's credentials. `--context` overrides: the context's cluster is read, unresolved.
/// A destination that names no cluster is an error naming the Application and the field.
///
/// Returns the cluster to read live objects from (`home` itself for the in-cluster
/// destination) and whether it is another cluster than home.
pub fn connect_destination(
    args: &ClusterArgs,
    home: Connected,
    app: &serde_json::Value,
    control_namespace: Option<&str>,
) -> Result<(Connected, bool)> {
    if args.context.is_some() {
        return Ok((home, false));
    }
    let name = app
        .pointer("/metadata/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let has_namespace = app
        .pointer("/metadata/namespace")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|n| !n.is_empty());
    // Without cluster Secrets to read, only the in-cluster destination resolves (through
    // the same resolution, without Secrets); `why` says why they were not read.
    let in_cluster_only = |home: Connected, why: String| {
        let (model, _) = plumb_core::argo::model::Application::read_lenient(app);
        let d = &model.spec.destination;
        let dest = plumb_core::project::Destination::new(&d.server, &d.name, &d.namespace);
        match plumb_core::clusters::Clusters::in_cluster_only().resolve(&dest) {
            Ok(_) => Ok((home, false)),
            Err(e) => Err(anyhow!("Application {name}: spec.destination: {e} ({why})")),
        }
    };
    if control_namespace.is_none() && !has_namespace {
        return in_cluster_only(
            home,
            "the Application has no metadata.namespace: pass --control-namespace with the namespace of its cluster Secrets".into(),
        );
    }
    let opts = plumb_sync::run::RunOptions {
        control_namespace: control_namespace.map(str::to_string),
        ..Default::default()
    };
    let resolved = match home.block_on(plumb_sync::run::tenancy::destination_cluster(
        &home.cluster,
        app,
        &opts,
    )) {
        Ok(resolved) => resolved,
        // Credentials that may not read Secrets still diff an in-cluster app, as before.
        Err(e @ plumb_cluster::ClusterError::Forbidden { .. }) => {
            return in_cluster_only(home, format!("the cluster Secrets cannot be read: {e}"));
        }
        Err(e) => return Err(anyhow!("Application {name}: spec.destination: {e}")),
    };
    let cluster = resolved.map_err(|e| anyhow!("Application {name}: spec.destination: {e}"))?;
    if cluster.is_in_cluster() {
        return Ok((home, false));
    }
    let Connected { rt, .. } = home;
    let remote = rt
        .block_on(Cluster::connect_destination(&cluster))
        .map_err(|e| {
            anyhow!(
                "Application {name}: spec.destination: cluster '{}' ({}, Secret {}): {e}",
                cluster.name,
                cluster.server,
                cluster.secret
            )
        })?;
    Ok((
        Connected {
            rt,
            cluster: remote,
        },
        true,
    ))
}
