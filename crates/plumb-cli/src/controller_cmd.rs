//! `plumb controller`: reconciles every plumb Application — refresh, automated sync,
//! self-heal with backoff, retries — on a fixed interval. (Watches and leader election
//! are not built yet: run one replica.)

use crate::EXIT_IN_SYNC;
use crate::cluster_args::{ClusterArgs, connect};
use anyhow::{Result, anyhow};
use std::time::{Duration, SystemTime};

#[derive(clap::Args)]
pub struct ControllerArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// One pass over every Application, then exit.
    #[arg(long)]
    once: bool,
    /// Seconds between passes (Argo CD refreshes every 180 s).
    #[arg(long, default_value_t = 180)]
    interval: u64,
    /// Only Applications in this namespace.
    #[arg(long = "app-namespace", short = 'N')]
    app_namespace: Option<String>,
}

pub fn run(mut args: ControllerArgs) -> Result<u8> {
    // In a pod there is no kubeconfig: the in-cluster configuration applies.
    args.cluster.cluster = true;
    let c = connect(&args.cluster)?;
    let mut state = plumb_sync::run::ReconcileState::default();
    loop {
        let apps = c
            .block_on(c.cluster.list_applications(args.app_namespace.as_deref()))
            .map_err(|e| anyhow!("{e}"))?;
        for app in &apps {
            let name = app
                .pointer("/metadata/name")
                .and_then(|v| v.as_str())
                .unwrap_or("?");
            match c.block_on(plumb_sync::run::reconcile_once(
                &c.cluster,
                app,
                SystemTime::now(),
                &mut state,
            )) {
                Ok(out) => eprintln!(
                    "{{\"app\":{name:?},\"sync\":{:?},\"health\":{:?},\"revision\":{:?},\"synced\":{}}}",
                    format!("{:?}", out.status.sync),
                    out.status.health.to_string(),
                    out.status.revision_label,
                    out.sync.is_some()
                ),
                Err(e) => eprintln!("{{\"app\":{name:?},\"error\":{:?}}}", e.to_string()),
            }
        }
        if args.once {
            return Ok(EXIT_IN_SYNC);
        }
        std::thread::sleep(Duration::from_secs(args.interval.max(1)));
    }
}
