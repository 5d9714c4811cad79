//! Writes a snapshot of the current kubeconfig context's cluster.
//!
//! ```sh
//! cargo run --example snapshot -- OUT_DIR [APP_NAME] [NAMESPACE...]
//! ```

use plumb_cluster::{Cluster, ConnectOptions};
use plumb_core::argo::Application;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .ok_or("usage: snapshot OUT_DIR [APP_NAME] [NAMESPACE...]")?;
    let app = args.next().map(|name| Application {
        name,
        ..Default::default()
    });
    let namespaces: Vec<String> = args.collect();
    let cluster = Cluster::connect(&ConnectOptions::default()).await?;
    let started = std::time::Instant::now();
    let summary = cluster
        .snapshot(app.as_ref(), &namespaces, std::path::Path::new(&out))
        .await?;
    println!(
        "{} objects written to {} in {:?} ({} secrets redacted)",
        summary.objects(),
        summary.dir.display(),
        started.elapsed(),
        summary.secrets_redacted
    );
    for (kind, count) in &summary.kinds {
        println!("  {count:5}  {kind}");
    }
    for skipped in &summary.skipped {
        println!("  skipped: {skipped}");
    }
    Ok(())
}
