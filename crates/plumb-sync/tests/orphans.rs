//! An AppProject's `orphanedResources` with the real controller on the test bed: a
//! ConfigMap made by hand in the app's destination namespace, and one still carrying the
//! tracking id of an Application that does not exist (deleted), give the app the
//! `OrphanedResourceWarning` condition ("Application has 2 orphaned resources") within the
//! deadline, the app stays Synced, an automated sync with prune leaves both alone;
//! an `ignore` entry naming them, or `warn: false`, clears the condition; deleting the
//! ConfigMaps clears it too.

mod common;

use common::objects::app_project;
use common::support::{apply, unique, wait_until};
use common::{app_testbed, application, commit, get_app, git_repo, history, write_files};
use plumb_cluster::Cluster;
use plumb_sync::controller::{Controller, ControllerOptions, Event};
use plumb_sync::run::RunOptions;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn configmap(name: &str, value: &str) -> String {
    serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"k": value}}))
    .expect("json")
}

/// The app's `OrphanedResourceWarning` message, if it has the condition.
fn orphan_warning(app: &Value) -> Option<String> {
    app.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "OrphanedResourceWarning")
        .map(|c| c["message"].as_str().unwrap_or_default().to_string())
}

async fn put_project(cluster: &Cluster, ns: &str, dest: &str, orphaned: Value) {
    let spec = json!({"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": dest}],
        "orphanedResources": orphaned});
    apply(cluster, vec![app_project("team", ns, spec)]).await;
}

async fn exists(cluster: &Cluster, ns: &str, name: &str) -> bool {
    cluster
        .get_object("", "ConfigMap", ns, name)
        .await
        .expect("get")
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hand_made_configmap_is_an_orphan_warned_about_and_never_pruned() {
    let Some((cluster, apps, dest)) = app_testbed("orphans", "orph").await else {
        return;
    };
    wait_until("appprojects.plumb.dev served", || async {
        cluster.discover().await.ok()?;
        cluster.resource_for("plumb.dev", "AppProject").await.ok()
    })
    .await;
    put_project(&cluster, &apps, &dest, json!({"warn": true})).await;
    let (repo, _) = git_repo(
        "plumb-orphans",
        &[("app/cm.json", &configmap("declared", "1"))],
    );
    let name = unique("orph");
    let mut app = application(
        &name,
        &apps,
        &repo,
        "app",
        &dest,
        json!({"automated": {"prune": true, "selfHeal": true}}),
    );
    app["spec"]["project"] = json!("team");
    apply(&cluster, vec![app]).await;

    let cluster = Arc::new(cluster);
    let opts = ControllerOptions {
        // Orphans are looked for at each refresh: a short one keeps the test quick.
        refresh: Duration::from_secs(2),
        jitter: Duration::ZERO,
        debounce: Duration::from_millis(200),
        app_namespace: Some(apps.clone()),
        run: RunOptions {
            poll_interval: Duration::from_millis(100),
            ..RunOptions::default()
        },
        ..ControllerOptions::default()
    };
    let controller = Arc::new(
        Controller::start(cluster.clone(), opts)
            .await
            .expect("controller starts"),
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let log = Arc::new(|e: Event<'_>| {
        if let Event::Failed { error, .. } = e {
            eprintln!("reconcile failed: {error}");
        }
    });
    let running = {
        let controller = controller.clone();
        tokio::spawn(async move { controller.run(log, stop_rx).await })
    };
    let app_now = || async { get_app(&cluster, &apps, &name).await };

    // Synced, nothing orphaned (the namespace's `default` ServiceAccount and
    // `kube-root-ca.crt`, when kube-controller-manager made them, are Kubernetes' own).
    let synced = wait_until("the app Synced", || async {
        let app = app_now().await;
        (common::sync_status(&app) == "Synced" && !history(&app).is_empty()).then_some(app)
    })
    .await;
    let synced_at = synced["status"]["reconciledAt"].clone();
    let refreshed = wait_until("a refresh after the sync", || async {
        let app = app_now().await;
        (app["status"]["reconciledAt"] != synced_at).then_some(app)
    })
    .await;
    assert_eq!(orphan_warning(&refreshed), None, "{refreshed:#}");

    // A ConfigMap made by hand in the destination namespace.
    apply(
        &cluster,
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "by-hand", "namespace": dest}, "data": {"k": "mine"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "by-gone-app", "namespace": dest, "annotations": {
                "argocd.argoproj.io/tracking-id": format!("gone-app:/ConfigMap:{dest}/by-gone-app")}},
            "data": {"k": "left"}})],
    )
    .await;
    let warned = wait_until("OrphanedResourceWarning", || async {
        let app = app_now().await;
        orphan_warning(&app).map(|m| (m, app))
    })
    .await;
    assert_eq!(warned.0, "Application has 2 orphaned resources");
    assert_eq!(
        common::sync_status(&warned.1),
        "Synced",
        "orphans are not drift"
    );

    // An automated sync with prune (a new commit) leaves it alone.
    let before = history(&warned.1).len();
    write_files(&repo, &[("app/cm.json", &configmap("declared", "2"))]);
    let head = commit(&repo, "change").expect("commit");
    let after_sync = wait_until("the automated sync of the new commit", || async {
        let app = app_now().await;
        (history(&app).len() > before
            && app["status"]["operationState"]["phase"] == "Succeeded"
            && app["status"]["sync"]["revision"] == head.as_str())
        .then_some(app)
    })
    .await;
    assert_eq!(
        after_sync["status"]["operationState"]["operation"]["sync"]["prune"], true,
        "{after_sync:#}"
    );
    for orphan in ["by-hand", "by-gone-app"] {
        assert!(
            exists(&cluster, &dest, orphan).await,
            "an orphan is never pruned: {orphan}"
        );
    }
    assert_eq!(
        orphan_warning(&app_now().await).as_deref(),
        Some("Application has 2 orphaned resources")
    );

    // Ignored by the project: cleared.
    put_project(
        &cluster,
        &apps,
        &dest,
        json!({"warn": true, "ignore": [{"group": "", "kind": "ConfigMap", "name": "by-*"}]}),
    )
    .await;
    wait_until("the warning cleared by ignore", || async {
        orphan_warning(&app_now().await).is_none().then_some(())
    })
    .await;

    // Not ignored any more: back; `warn: false`: cleared while the orphan stays.
    put_project(&cluster, &apps, &dest, json!({"warn": true})).await;
    wait_until("the warning back", || async {
        orphan_warning(&app_now().await)
    })
    .await;
    put_project(&cluster, &apps, &dest, json!({"warn": false})).await;
    wait_until("the warning cleared by warn: false", || async {
        orphan_warning(&app_now().await).is_none().then_some(())
    })
    .await;

    // Deleted: cleared.
    put_project(&cluster, &apps, &dest, json!({"warn": true})).await;
    wait_until("the warning back again", || async {
        orphan_warning(&app_now().await)
    })
    .await;
    for orphan in ["by-hand", "by-gone-app"] {
        cluster
            .delete_object(
                &plumb_core::ResourceKey {
                    group: String::new(),
                    kind: "ConfigMap".into(),
                    namespace: dest.clone(),
                    name: orphan.into(),
                },
                plumb_cluster::Propagation::Background,
            )
            .await
            .expect("delete");
    }
    wait_until("the warning cleared by the deletion", || async {
        orphan_warning(&app_now().await).is_none().then_some(())
    })
    .await;

    stop_tx.send(true).expect("stop");
    tokio::time::timeout(common::support::DEADLINE, running)
        .await
        .expect("the controller stops")
        .expect("joined");
    controller.stop();
    let _ = std::fs::remove_dir_all(&repo);
}
