//! The sync options the table (`options::TABLE`) marks "acted on" that were once parsed and
//! never read, on the test bed: `FailOnSharedResource=true` fails a sync before anything is
//! applied when another Application tracks a resource; `Validate=false` applies with
//! `fieldValidation=Ignore`, which the API server accepts.

mod common;

use common::support::{apply, unique};
use common::{application, get_app, git_repo};
use plumb_sync::history::InitiatedBy;
use plumb_sync::run::{RunOptions, sync_app};
use serde_json::{Value, json};
use std::time::{Duration, UNIX_EPOCH};

fn json_file(v: Value) -> String {
    serde_json::to_string_pretty(&v).expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fail_on_shared_resource_and_validate_false() {
    let Some((cluster, apps_ns, dest)) = common::app_testbed("option_rows", "opt-rows").await
    else {
        return;
    };
    // Another Application's ConfigMap, already in the cluster.
    apply(
        &cluster,
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "shared", "namespace": dest, "annotations": {
                "argocd.argoproj.io/tracking-id": format!("other:/ConfigMap:{dest}/shared")}},
            "data": {"v": "other"}})],
    )
    .await;
    let (repo, _) = git_repo(
        "plumb-opt-rows",
        &[
            (
                "app/shared.json",
                &json_file(json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "shared"}, "data": {"v": "mine"}})),
            ),
            (
                "app/loose.json",
                &json_file(json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "loose", "annotations": {
                        "argocd.argoproj.io/sync-options": "Validate=false"}},
                    "data": {"v": "1"}})),
            ),
        ],
    );
    let get = |name: &'static str| {
        let cluster = &cluster;
        let dest = &dest;
        async move {
            cluster
                .get_object("", "ConfigMap", dest, name)
                .await
                .expect("get")
        }
    };

    let strict = unique("strict");
    apply(
        &cluster,
        vec![application(
            &strict,
            &apps_ns,
            &repo,
            "app",
            &dest,
            json!({"syncOptions": ["FailOnSharedResource=true"]}),
        )],
    )
    .await;
    let out = sync_app(
        &cluster,
        &get_app(&cluster, &apps_ns, &strict).await,
        &RunOptions::default(),
        InitiatedBy::user("alice"),
        UNIX_EPOCH + Duration::from_secs(1_900_000_000),
    )
    .await
    .expect("sync");
    assert_eq!(out.phase, "Failed", "{}", out.message);
    assert!(
        out.message.contains(&format!(
            "FailOnSharedResource=true: /ConfigMap {dest}/shared is already tracked by Application other"
        )),
        "{}",
        out.message
    );
    assert!(out.results.is_empty(), "{:?}", out.results);
    let shared = get("shared").await.expect("still there");
    assert_eq!(shared["data"]["v"], "other", "nothing applied");
    assert!(get("loose").await.is_none(), "nothing applied");

    // Without the option the sync takes the resource over (Argo CD's default), and the
    // Validate=false ConfigMap is applied (the API server takes `fieldValidation=Ignore`; a
    // built-in kind with an unknown field is refused by server-side apply either way).
    let lenient = unique("lenient");
    apply(
        &cluster,
        vec![application(
            &lenient,
            &apps_ns,
            &repo,
            "app",
            &dest,
            json!({}),
        )],
    )
    .await;
    let out = sync_app(
        &cluster,
        &get_app(&cluster, &apps_ns, &lenient).await,
        &RunOptions::default(),
        InitiatedBy::user("alice"),
        UNIX_EPOCH + Duration::from_secs(1_900_000_010),
    )
    .await
    .expect("sync");
    assert!(out.succeeded(), "{}: {:?}", out.message, out.results);
    let shared = get("shared").await.expect("there");
    assert_eq!(shared["data"]["v"], "mine");
    let loose = get("loose").await.expect("applied");
    assert_eq!(loose["data"]["v"], "1");
}
