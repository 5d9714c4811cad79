//! Live state from a cluster: `--cluster`, `--context`, `--kubeconfig`, and the tokio
//! runtime the (async) cluster crate runs on. The rest of the CLI stays synchronous.

use anyhow::{Result, anyhow};
use plumb_cluster::{Cluster, ConnectOptions};
use std::path::PathBuf;

/// The field manager plumb applies (and dry-runs) with.
pub const FIELD_MANAGER: &str = "plumb";

#[derive(clap::Args, Debug, Default)]
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
    let cluster = rt
        .block_on(Cluster::connect(&opts))
        .map_err(|e| anyhow!("{e}"))?;
    Ok(Connected { rt, cluster })
}
