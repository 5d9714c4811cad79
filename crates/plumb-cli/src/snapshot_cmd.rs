//! `plumb snapshot`: a cluster's state, as files, for offline diffs and diagnosis.

use crate::EXIT_IN_SYNC;
use crate::cluster_args::{ClusterArgs, connect};
use anyhow::{Result, anyhow};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct SnapshotArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The Application whose objects to save (its tracking label or annotation) and whose
    /// destination namespace to include.
    #[arg(long, value_name = "FILE")]
    app: Option<PathBuf>,
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
    let app = match &args.app {
        Some(p) => Some(crate::diff_cmd::load_app(p)?),
        None => None,
    };
    let c = connect(&args.cluster)?;
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
