//! A client-side apply racing another writer: the API server answers the patch pinned to
//! the resourceVersion plumb read with a real 409 Conflict; plumb reads the object again,
//! recomputes the patch and succeeds, and the other writer's change stays.
//!
//! The race is made by `support::proxy`, a TLS proxy in front of the test bed's real API
//! server: just before it forwards plumb's first patch of the object, another client changes
//! the object.

mod common;

use common::support::proxy::{Proxy, Rule};
use common::{application, commit, get_app, git_repo, write_files};
use plumb_sync::history::InitiatedBy;
use plumb_sync::run::{RunOptions, sync_app};
use serde_json::{Value, json};
use std::time::{Duration, UNIX_EPOCH};

fn cm(value: &str) -> String {
    serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings"}, "data": {"k": value}}))
    .expect("json")
}

async fn sync(
    cluster: &plumb_cluster::Cluster,
    apps_ns: &str,
    name: &str,
    s: u64,
) -> plumb_sync::run::SyncOutcome {
    let stored = get_app(cluster, apps_ns, name).await;
    sync_app(
        cluster,
        &stored,
        &RunOptions::default(),
        InitiatedBy::user("alice"),
        UNIX_EPOCH + Duration::from_secs(1_900_000_000 + s),
    )
    .await
    .expect("sync")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_side_apply_conflicting_with_another_writer_is_re_read_and_retried() {
    let Some((cluster, apps_ns, dest)) = common::app_testbed("sync_conflict", "conflict").await
    else {
        return;
    };
    let (repo, _) = git_repo("plumb-conflict", &[("app/cm.json", &cm("1"))]);
    let name = "conflict";
    let app = application(
        name,
        &apps_ns,
        &repo,
        "app",
        &dest,
        json!({"syncOptions": ["ServerSideApply=false"]}),
    );
    common::support::apply(&cluster, vec![app]).await;
    let first = sync(&cluster, &apps_ns, name, 0).await;
    assert!(first.succeeded(), "{}", first.message);

    write_files(&repo, &[("app/cm.json", &cm("2"))]);
    commit(&repo, "k: 2");
    let proxy = Proxy::start(Rule {
        method: axum::http::Method::PATCH,
        path: format!("/namespaces/{dest}/configmaps/settings"),
        refusals: 0,
        retry_after: 0,
        race: Some(json!({"metadata": {"labels": {"other": "writer"}}})),
        watch_gone: None,
    })
    .await;
    let through_proxy = proxy.connect().await;
    let second = sync(&through_proxy, &apps_ns, name, 60).await;
    assert!(second.succeeded(), "{}", second.message);
    let statuses: Vec<u16> = proxy.seen().iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [409, 200],
        "the pinned patch conflicted once, then the re-read one passed"
    );
    let live: Value = cluster
        .get_object("", "ConfigMap", &dest, "settings")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(live.pointer("/data/k"), Some(&json!("2")), "plumb's change");
    assert_eq!(
        live.pointer("/metadata/labels/other"),
        Some(&json!("writer")),
        "the other writer's change stays"
    );
    let _ = std::fs::remove_dir_all(&repo);
}
