//! `plumb snapshot`: a cluster's state, as files, for offline diffs and diagnosis.

use crate::EXIT_IN_SYNC;
use crate::cluster_args::{ClusterArgs, connect, connect_destination};
use anyhow::{Result, anyhow};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct SnapshotArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The Application whose objects to save (its tracking label or annotation) and whose
    /// destination namespace to include.
    /// With an Application aimed at another cluster (a cluster Secret), that cluster is saved.
    #[arg(long, value_name = "FILE")]
    app: Option<PathBuf>,
    /// With --app: where the cluster Secrets that resolve the Application's destination are
    /// read from (default: the Application's namespace).
    #[arg(long, value_name = "NAMESPACE")]
    control_namespace: Option<String>,
    /// Namespaces to save objects from (repeatable).
    #[arg(long = "namespace", short = 'n', value_name = "NS")]
    namespaces: Vec<String>,
    /// Output directory (created; should be empty).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

pub fn run(mut args: SnapshotArgs) -> Result<u8> {
    // A snapshot always reads a cluster: --cluster is implied.
    args.cluster.cluster = true;
    let (app_obj, app) = match &args.app {
        Some(p) => {
            let (v, app) = crate::diff_cmd::load_app_object(p)?;
            (Some(v), Some(app))
        }
        None => (None, None),
    };
    let home = connect(&args.cluster)?;
    let c = match &app_obj {
        Some(v) => {
            connect_destination(&args.cluster, home, v, args.control_namespace.as_deref())?.0
        }
        None => home,
    };
    let summary = c
        .block_on(
            c.cluster
                .snapshot(app.as_ref(), &args.namespaces, &args.out),
        )
        .map_err(|e| anyhow!("{e}"))?;
    eprintln!(
        "wrote {} objects to {} ({} Secrets without their values)",
        summary.files.len(),
        summary.dir.display(),
        summary.secrets_redacted
    );
    for (kind, n) in &summary.kinds {
        eprintln!("  {kind}: {n}");
    }
    for s in &summary.skipped {
        eprintln!("note: skipped {s}");
    }
    Ok(EXIT_IN_SYNC)
}
