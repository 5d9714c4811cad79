//! Dry-run server-side apply of many objects runs concurrently and keeps the
//! input order.

mod support;

use serde_json::{Value, json};
use std::time::Instant;
use support::{apply, configmap, deployment, namespace, testbed};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_apply_of_200_objects_is_concurrent_and_ordered() {
    let Some(cluster) = testbed("dry_run_200").await else {
        return;
    };
    let ns = namespace(&cluster, "dryrun", json!({})).await;
    // Half exist already (UPDATE path), half are new (CREATE path).
    let existing: Vec<Value> = (0..50)
        .map(|i| configmap(&ns, &format!("cm-{i:03}"), json!({})))
        .chain((0..50).map(|i| deployment(&ns, &format!("deploy-{i:03}"), "IfNotPresent")))
        .collect();
    apply(&cluster, existing).await;
    let objects: Vec<Value> = (0..100)
        .map(|i| configmap(&ns, &format!("cm-{i:03}"), json!({"changed": "yes"})))
        .chain((0..100).map(|i| deployment(&ns, &format!("deploy-{i:03}"), "Always")))
        .collect();
    let names: Vec<String> = objects
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();

    // Warm the discovery cache and connections, then time.
    cluster.api_resources().await.unwrap();
    let started = Instant::now();
    let results = cluster.dry_run_apply(objects.clone(), "plumb", true).await;
    let concurrent = started.elapsed();

    assert_eq!(results.len(), 200);
    for (result, name) in results.iter().zip(&names) {
        let obj = result.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(obj["metadata"]["name"], name.as_str(), "order kept");
        assert!(obj["metadata"]["managedFields"].is_array());
    }
    assert_eq!(
        results[0].as_ref().unwrap()["metadata"]["labels"]["changed"],
        "yes"
    );
    // Defaulted by the server in its prediction.
    let d = results[150].as_ref().unwrap();
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");

    // For comparison: the same, one request at a time.
    let started = Instant::now();
    for obj in objects {
        cluster
            .dry_run_apply(vec![obj], "plumb", true)
            .await
            .remove(0)
            .unwrap();
    }
    let sequential = started.elapsed();
    println!(
        "dry-run apply of 200 objects: {:.0} ms concurrent ({} in flight), {:.0} ms one at a time",
        concurrent.as_secs_f64() * 1000.0,
        plumb_cluster::APPLY_CONCURRENCY,
        sequential.as_secs_f64() * 1000.0
    );
    eprintln!("dry-run apply of 200 objects: {concurrent:?} concurrent, {sequential:?} sequential");

    // Nothing was stored: the new ones do not exist.
    let live = cluster
        .list_live(
            &[plumb_core::GroupKind::new("", "ConfigMap")],
            Some(&[ns]),
            None,
        )
        .await
        .unwrap();
    assert!(live.iter().all(|o| o["metadata"]["name"] != "cm-099"));
}
