//! Orphaned resources through the runner without a watch cache (the CLI's refresh, a
//! `--namespaced` controller), on the in-memory cluster: the destination namespace is
//! LISTed kind by kind, the condition written through the status writer, set and cleared;
//! a sync with prune leaves the orphan alone. (The controller's watch-cache path is shown on
//! the test bed: `tests/orphans.rs`.)

use super::test_objects as objects;
use super::*;
use crate::request::SyncRequest;
use plumb_cluster::memory::{MemoryCluster, Verb};
use std::process::Command;
use std::time::UNIX_EPOCH;

const APPS: &str = "plumb";
const DEST: &str = "prod";

fn git(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@plumb.invalid"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
}

fn configmap(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": DEST, "labels": labels}, "data": {"k": "v"}})
}

fn project(cluster: &MemoryCluster, orphaned: Value) {
    cluster
        .put(objects::app_project(
            "team",
            APPS,
            json!({"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": DEST}],
                "orphanedResources": orphaned}),
        ))
        .expect("project");
}

fn warning(app: &Value) -> Option<String> {
    app.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == crate::orphans::ORPHANED_RESOURCE_WARNING)
        .map(|c| c["message"].as_str().unwrap_or_default().to_string())
}

#[tokio::test]
async fn without_a_cache_the_destination_namespace_is_listed() {
    let repo = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(repo.path().join("app")).expect("mkdir");
    let declared = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "declared"}, "data": {"k": "v"}});
    std::fs::write(repo.path().join("app/declared.json"), declared.to_string()).expect("write");
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "app"]);

    let cluster = MemoryCluster::new();
    for ns in [APPS, DEST] {
        cluster
            .put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .expect("namespace");
    }
    super::tests::serve_projects(&cluster);
    project(&cluster, json!({"warn": true}));
    cluster
        .put(
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "shop", "namespace": APPS},
            "spec": {"project": "team",
                "source": {"repoURL": format!("file://{}", repo.path().display()),
                    "path": "app", "targetRevision": "HEAD"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": DEST}}}),
        )
        .expect("application");
    // Application `other` exists and tracks `theirs`; `gone` was deleted: what it tracked
    // (`of-gone`, its tracking still on it) is an orphan, and a prune must not take it.
    cluster
        .put(
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "other", "namespace": APPS},
            "spec": {"project": "team", "source": {"repoURL": "https://git.example.com/o"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": DEST}}}),
        )
        .expect("application");
    let tracked = |name: &str, app: &str| {
        let mut o = configmap(name, json!({}));
        o["metadata"]["annotations"] = json!({
            "argocd.argoproj.io/tracking-id": format!("{app}:/ConfigMap:{DEST}/{name}")});
        o
    };
    for obj in [
        configmap("by-hand", json!({})),
        tracked("theirs", "other"),
        tracked("of-gone", "gone"),
    ] {
        cluster.put(obj).expect("configmap");
    }
    let app_key = ResourceKey {
        group: "plumb.dev".into(),
        kind: "Application".into(),
        namespace: APPS.into(),
        name: "shop".into(),
    };
    let app = || cluster.object(&app_key).expect("the Application");
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let opts = RunOptions {
        poll_interval: Duration::from_millis(1),
        ..RunOptions::default()
    };

    refresh_app(&cluster, &app(), &opts, now)
        .await
        .expect("refresh");
    assert_eq!(
        warning(&app()).as_deref(),
        Some("Application has 2 orphaned resources")
    );
    // The namespace was listed kind by kind (Secrets too, which the app does not use).
    assert!(
        cluster
            .log()
            .iter()
            .any(|r| r.verb == Verb::List && r.key.kind == "Secret" && r.key.namespace == DEST),
        "no LIST of the destination namespace"
    );

    // A sync with prune applies the app and deletes nothing else.
    let request = SyncRequest {
        prune: true,
        ..SyncRequest::default()
    };
    let outcome = sync_app_with(
        &cluster,
        &app(),
        &opts,
        &request,
        InitiatedBy::user("t"),
        now,
    )
    .await
    .expect("sync");
    assert!(outcome.succeeded(), "{outcome:?}");
    let cm = |name: &str| ResourceKey {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: DEST.into(),
        name: name.into(),
    };
    assert!(cluster.object(&cm("declared")).is_some());
    for orphan in ["by-hand", "of-gone"] {
        assert!(
            cluster.object(&cm(orphan)).is_some(),
            "an orphan is never pruned: {orphan}"
        );
    }
    assert!(cluster.writes().iter().all(|r| r.verb != Verb::Delete));

    // Ignored: cleared.
    project(
        &cluster,
        json!({"warn": true, "ignore": [{"group": "", "kind": "ConfigMap", "name": "by-hand"},
            {"group": "", "kind": "ConfigMap", "name": "of-gone"}]}),
    );
    refresh_app(&cluster, &app(), &opts, now)
        .await
        .expect("refresh");
    assert_eq!(warning(&app()), None);
    assert_eq!(
        app()["status"]["sync"]["status"],
        "Synced",
        "orphans never make an app OutOfSync"
    );
}
