//! Benchmark: create N objects in a fresh namespace of a cluster (the test bed:
//! `eval "$(testbed/up.sh)"`), then time `list_live` over them.
//!
//! ```sh
//! cargo run --release --example bench_list -- [N=5000] [configmaps|deployments|both]
//! ```
//!
//! Objects are created with concurrent server-side applies
//! (`APPLY_CONCURRENCY` in flight). The namespace is deleted at the end
//! (without kube-controller-manager its objects stay in etcd until the test
//! bed is torn down).

use plumb_cluster::{Cluster, ConnectOptions};
use plumb_core::GroupKind;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn configmap(ns: &str, i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:05}"), "namespace": ns,
            "labels": {"app.kubernetes.io/instance": "bench"}},
        "data": {"index": i.to_string(), "payload": "x".repeat(200)}})
}

fn deployment(ns: &str, i: usize) -> Value {
    let name = format!("deploy-{i:05}");
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns,
            "labels": {"app.kubernetes.io/instance": "bench"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                    "ports": [{"containerPort": 8080}],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}})
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(5000);
    let what = args.next().unwrap_or_else(|| "both".to_string());
    let (with_cm, with_deploy) = match what.as_str() {
        "configmaps" => (true, false),
        "deployments" => (false, true),
        "both" => (true, true),
        other => return Err(format!("unknown object kind {other:?}").into()),
    };

    let cluster = Cluster::connect(&ConnectOptions::default()).await?;
    println!(
        "cluster {} ({}), {n} objects of each of: {what}",
        cluster.server(),
        cluster.server_version()
    );
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos();
    let ns = format!("bench-{:x}", nanos & 0xff_ffff);
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    for r in cluster.apply(vec![namespace], "plumb-bench", true).await {
        r?;
    }

    let mut kinds = Vec::new();
    let mut objects = Vec::new();
    if with_cm {
        kinds.push(GroupKind::new("", "ConfigMap"));
        objects.extend((0..n).map(|i| configmap(&ns, i)));
    }
    if with_deploy {
        kinds.push(GroupKind::new("apps", "Deployment"));
        objects.extend((0..n).map(|i| deployment(&ns, i)));
    }
    let total = objects.len();
    let started = Instant::now();
    let failures = cluster
        .apply(objects, "plumb-bench", true)
        .await
        .into_iter()
        .filter(Result::is_err)
        .count();
    let created = started.elapsed();
    println!(
        "create: {total} objects in {} ({:.0} objects/s, {} in flight){}",
        ms(created),
        total as f64 / created.as_secs_f64(),
        plumb_cluster::APPLY_CONCURRENCY,
        if failures > 0 {
            format!(", {failures} FAILED")
        } else {
            String::new()
        }
    );

    let namespaces = [ns.clone()];
    let mut times = Vec::new();
    let mut listed = 0;
    for round in 0..5 {
        let started = Instant::now();
        let live = cluster.list_live(&kinds, Some(&namespaces), None).await?;
        let took = started.elapsed();
        listed = live.len();
        let bytes: usize = if round == 0 {
            live.iter()
                .map(|o| serde_json::to_vec(o).map(|v| v.len()).unwrap_or(0))
                .sum()
        } else {
            0
        };
        if round == 0 {
            println!(
                "list_live: {listed} objects ({} kinds, one LIST each), first run {} (~{:.1} MB of JSON)",
                kinds.len(),
                ms(took),
                bytes as f64 / 1e6
            );
        }
        times.push(took);
    }
    times.sort();
    println!(
        "list_live: {listed} objects, 5 runs: min {}, median {}, max {} ({:.0} objects/s at the median)",
        ms(times[0]),
        ms(times[2]),
        ms(times[4]),
        listed as f64 / times[2].as_secs_f64()
    );

    // Best-effort cleanup.
    let request = kube::core::Request::new("/api/v1/namespaces")
        .delete(&ns, &kube::api::DeleteParams::default())?;
    let _ = cluster.client().request::<Value>(request).await;
    Ok(())
}
