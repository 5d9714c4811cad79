//! `plumb controller`: reconciles every plumb Application — refresh, automated sync,
//! self-heal with backoff, retries — on a fixed interval. Replicas elect a leader with a
//! `coordination.k8s.io` Lease, so two are safe: only the holder reconciles. (Watches are
//! not built yet: drift is seen at the next interval.)

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
    /// The namespace of the leader-election Lease `plumb-controller`.
    #[arg(long, default_value = "plumb-system")]
    lease_namespace: String,
    /// Seconds a leader's Lease stays valid without renewal.
    #[arg(long, default_value_t = 30)]
    lease_duration: u64,
}

const LEASE: &str = "plumb-controller";

/// Who holds the Lease after an attempt to take or renew it.
enum Leadership {
    Leader,
    Follower(String),
}

fn micro_time(t: SystemTime) -> String {
    let s = plumb_sync::time::format_rfc3339(t);
    match s.strip_suffix('Z') {
        Some(base) if !base.contains('.') => format!("{base}.000000Z"),
        _ => s,
    }
}

/// Takes the Lease when it is free, expired or already ours (renewing it); optimistic
/// concurrency (the Lease's resourceVersion) makes two replicas agree on one winner.
async fn elect(
    cluster: &plumb_cluster::Cluster,
    ns: &str,
    me: &str,
    duration: u64,
    now: SystemTime,
) -> Result<Leadership> {
    let stamp = micro_time(now);
    let lease = cluster
        .get_object("coordination.k8s.io", "Lease", ns, LEASE)
        .await
        .map_err(|e| anyhow!("{e}"))?;
    let Some(mut lease) = lease else {
        let fresh = serde_json::json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": LEASE, "namespace": ns},
            "spec": {"holderIdentity": me, "leaseDurationSeconds": duration,
                "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0}});
        return Ok(match cluster.create_object(&fresh, "plumb").await {
            Ok(_) => Leadership::Leader,
            Err(plumb_cluster::ClusterError::Api { code: 409, .. }) => {
                Leadership::Follower("another replica".into())
            }
            Err(e) => return Err(anyhow!("{e}")),
        });
    };
    let spec = &lease["spec"];
    let holder = spec["holderIdentity"].as_str().unwrap_or("").to_string();
    let valid_for = spec["leaseDurationSeconds"].as_u64().unwrap_or(duration);
    let renewed = spec["renewTime"]
        .as_str()
        .and_then(|t| plumb_sync::time::parse_rfc3339(t).ok());
    let expired = renewed.is_none_or(|r| r + Duration::from_secs(valid_for) < now);
    if holder != me && !holder.is_empty() && !expired {
        return Ok(Leadership::Follower(holder));
    }
    if holder != me {
        let transitions = spec["leaseTransitions"].as_u64().unwrap_or(0) + 1;
        lease["spec"]["leaseTransitions"] = transitions.into();
        lease["spec"]["acquireTime"] = stamp.clone().into();
    }
    lease["spec"]["holderIdentity"] = me.into();
    lease["spec"]["leaseDurationSeconds"] = duration.into();
    lease["spec"]["renewTime"] = stamp.into();
    Ok(match cluster.replace_object(&lease, "plumb").await {
        Ok(_) => Leadership::Leader,
        Err(plumb_cluster::ClusterError::Api { code: 409, .. }) => {
            Leadership::Follower("another replica".into())
        }
        Err(e) => return Err(anyhow!("{e}")),
    })
}

/// Gives the Lease up (on exit), so another replica takes over at once.
async fn release(cluster: &plumb_cluster::Cluster, ns: &str, me: &str) {
    if let Ok(Some(mut lease)) = cluster
        .get_object("coordination.k8s.io", "Lease", ns, LEASE)
        .await
        && lease["spec"]["holderIdentity"] == me
    {
        lease["spec"]["holderIdentity"] = "".into();
        let _ = cluster.replace_object(&lease, "plumb").await;
    }
}

pub fn run(mut args: ControllerArgs) -> Result<u8> {
    // In a pod there is no kubeconfig: the in-cluster configuration applies.
    args.cluster.cluster = true;
    let c = connect(&args.cluster)?;
    let mut state = plumb_sync::run::ReconcileState::default();
    let me = format!(
        "{}-{}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "plumb".into()),
        std::process::id()
    );
    loop {
        match c.block_on(elect(
            &c.cluster,
            &args.lease_namespace,
            &me,
            args.lease_duration,
            SystemTime::now(),
        ))? {
            Leadership::Leader => {}
            Leadership::Follower(holder) => {
                eprintln!("{{\"leader\":{holder:?},\"me\":{me:?},\"reconciling\":false}}");
                if args.once {
                    return Ok(EXIT_IN_SYNC);
                }
                std::thread::sleep(Duration::from_secs((args.lease_duration / 3).max(1)));
                continue;
            }
        }
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
            c.block_on(release(&c.cluster, &args.lease_namespace, &me));
            return Ok(EXIT_IN_SYNC);
        }
        // Renew well within the Lease's validity while waiting for the next pass.
        let step = Duration::from_secs((args.lease_duration / 3).max(1));
        let mut waited = Duration::ZERO;
        while waited < Duration::from_secs(args.interval.max(1)) {
            std::thread::sleep(step);
            waited += step;
            if let Ok(Leadership::Follower(_)) = c.block_on(elect(
                &c.cluster,
                &args.lease_namespace,
                &me,
                args.lease_duration,
                SystemTime::now(),
            )) {
                break;
            }
        }
    }
}
