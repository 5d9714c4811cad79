//! Sync options and plan rules on the test bed: CreateNamespace, waves, Replace=true,
//! Prune=false, the allowEmpty guard; client-side apply (ServerSideApply=false); Force=true; manual sync flags
//! (dry run, selected resources, prune, revision); deleting an
//! Application with cascade; and the time a sync of N objects takes.

mod common;

use common::support::{DEADLINE, apply, namespace, testbed, unique};
use common::{application, commit, get_app, git, git_repo, history, install_crd};
use plumb_sync::auto::{Decision, SyncReason};
use plumb_sync::history::InitiatedBy;
use plumb_sync::request::{ResourceSelector, SyncRequest};
use plumb_sync::run::{
    ReconcileState, RunOptions, reconcile_once, rollback_app, sync_app, sync_app_with,
};
use plumb_sync::status::SyncStatusCode;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, UNIX_EPOCH};

fn configmap(name: &str, annotations: Value) -> String {
    serde_json::to_string_pretty(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "annotations": annotations},
        "data": {"name": name}
    }))
    .expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_namespace_waves_replace_prune_false_and_allow_empty() {
    let Some(cluster) = testbed("sync_options").await else {
        return;
    };
    install_crd(&cluster).await;
    let apps_ns = namespace(&cluster, "sync-opts-apps", json!({})).await;
    let dest = unique("sync-opts-dest");
    let files = [
        (
            "app/a.json",
            configmap("early", json!({"argocd.argoproj.io/sync-wave": "-1"})),
        ),
        (
            "app/b.json",
            configmap(
                "late",
                json!({"argocd.argoproj.io/sync-wave": "1",
            "argocd.argoproj.io/sync-options": "Replace=true"}),
            ),
        ),
        (
            "app/c.json",
            configmap(
                "keep",
                json!({"argocd.argoproj.io/sync-options": "Prune=false"}),
            ),
        ),
        ("app/d.json", configmap("plain", json!({}))),
        ("app/README.md", "not a manifest".to_string()),
    ];
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let (repo, _) = git_repo("plumb-opts", &refs);
    let name = "opts";
    let mut app = application(
        name,
        &apps_ns,
        &repo,
        "app",
        &dest,
        json!({"syncOptions": ["CreateNamespace=true"]}),
    );
    apply(&cluster, vec![app.clone()]).await;

    // A manual sync: the namespace first, then waves -1, 0, 1 (Replace=true as a PUT).
    let stored = get_app(&cluster, &apps_ns, name).await;
    let sync = sync_app(
        &cluster,
        &stored,
        &RunOptions::default(),
        InitiatedBy::user("alice"),
        UNIX_EPOCH + Duration::from_secs(1_900_000_000),
    )
    .await
    .expect("sync");
    assert!(sync.succeeded(), "{}", sync.message);
    let order: Vec<(String, i64)> = sync
        .results
        .iter()
        .map(|r| (format!("{}/{}", r.key.kind, r.key.name), r.wave))
        .collect();
    assert_eq!(
        order,
        [
            (format!("Namespace/{dest}"), 0),
            ("ConfigMap/early".to_string(), -1),
            ("ConfigMap/keep".to_string(), 0),
            ("ConfigMap/plain".to_string(), 0),
            ("ConfigMap/late".to_string(), 1),
        ]
    );
    assert_eq!(
        sync.status.sync,
        SyncStatusCode::Synced,
        "{:?}",
        sync.status
    );
    assert!(
        cluster
            .get_object("", "Namespace", "", &dest)
            .await
            .unwrap()
            .is_some()
    );
    let late = cluster
        .get_object("", "ConfigMap", &dest, "late")
        .await
        .unwrap()
        .expect("late");
    let ops: Vec<(&str, &str)> = late["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| Some((m["manager"].as_str()?, m["operation"].as_str()?)))
        .collect();
    assert_eq!(
        ops,
        [("plumb", "Update")],
        "Replace=true is a PUT, not an apply"
    );
    let plain = cluster
        .get_object("", "ConfigMap", &dest, "plain")
        .await
        .unwrap()
        .expect("plain");
    assert_eq!(plain["metadata"]["managedFields"][0]["operation"], "Apply");

    // Automated with prune; git drops "plain" and "keep": one pruned, one kept (Prune=false).
    app["spec"]["syncPolicy"] =
        json!({"automated": {"prune": true}, "syncOptions": ["CreateNamespace=true"]});
    apply(&cluster, vec![app.clone()]).await;
    git(&repo, &["rm", "-q", "app/c.json", "app/d.json"]);
    commit(&repo, "drop keep and plain");
    let mut state = ReconcileState::default();
    let now = UNIX_EPOCH + Duration::from_secs(1_900_000_100);
    let out = reconcile_once(
        &cluster,
        &get_app(&cluster, &apps_ns, name).await,
        now,
        &mut state,
    )
    .await
    .expect("reconcile");
    let sync = out.sync.expect("sync of the new revision");
    assert!(sync.succeeded(), "{}", sync.message);
    let status_of = |n: &str| {
        sync.results
            .iter()
            .find(|r| r.key.name == n)
            .map(|r| r.status)
            .unwrap_or("<none>")
    };
    assert_eq!(status_of("plain"), "Pruned");
    assert_eq!(status_of("keep"), "PruneSkipped");
    assert!(
        cluster
            .get_object("", "ConfigMap", &dest, "plain")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        cluster
            .get_object("", "ConfigMap", &dest, "keep")
            .await
            .unwrap()
            .is_some()
    );
    // "keep" still needs pruning: OutOfSync, as in Argo CD.
    assert_eq!(sync.status.sync, SyncStatusCode::OutOfSync);
    let histories = history(&get_app(&cluster, &apps_ns, name).await).len();

    // git renders nothing: an automated sync refuses to prune everything.
    git(&repo, &["rm", "-q", "app/a.json", "app/b.json"]);
    commit(&repo, "empty");
    let out = reconcile_once(
        &cluster,
        &get_app(&cluster, &apps_ns, name).await,
        now + Duration::from_secs(60),
        &mut state,
    )
    .await
    .expect("reconcile");
    assert_eq!(
        out.decision,
        Some(Decision::SyncNow {
            reason: SyncReason::NewRevision
        })
    );
    let sync = out.sync.expect("an attempted sync");
    assert!(!sync.succeeded());
    assert!(sync.message.contains("allowEmpty"), "{}", sync.message);
    for n in ["early", "late", "keep"] {
        assert!(
            cluster
                .get_object("", "ConfigMap", &dest, n)
                .await
                .unwrap()
                .is_some(),
            "{n} was deleted"
        );
    }
    let stored = get_app(&cluster, &apps_ns, name).await;
    assert_eq!(stored["status"]["operationState"]["phase"], "Failed");
    assert_eq!(
        history(&stored).len(),
        histories,
        "a failed sync is not history"
    );
    // The failed sync is retried (plumb, unlike argo-cd#18442), with the retry backoff.
    let out = reconcile_once(&cluster, &stored, now + Duration::from_secs(61), &mut state)
        .await
        .expect("reconcile");
    assert!(
        matches!(
            out.decision,
            Some(Decision::WaitUntil {
                reason: SyncReason::Retry,
                ..
            })
        ),
        "{:?}",
        out.decision
    );
    let _ = std::fs::remove_dir_all(&repo);
}

/// `ServerSideApply=false`: client-side apply as kubectl does it — a create, then three-way
/// patches recorded as `Update`s by `plumb`: a field removed from git is removed, a field
/// someone else added stays, a Deployment switching to `Recreate` loses `rollingUpdate`
/// (`$retainKeys`), and an apply with nothing to change changes nothing. Switching back to
/// server-side apply migrates the client-side apply's field ownership.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn client_side_apply_when_server_side_apply_is_off() {
    let Some((cluster, apps_ns, dest)) = common::app_testbed("sync_csa", "sync-csa").await else {
        return;
    };
    let cm = |data: Value, labels: Value| {
        serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "labels": labels}, "data": data}))
        .expect("json")
    };
    let deploy = |strategy: Value, image: &str| {
        serde_json::to_string_pretty(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "strategy": strategy,
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": image}]}}}}))
        .expect("json")
    };
    let (repo, _) = git_repo(
        "plumb-csa",
        &[
            (
                "app/cm.json",
                &cm(
                    json!({"k": "1", "gone": "2"}),
                    json!({"team": "a", "old": "x"}),
                ),
            ),
            (
                "app/deploy.json",
                &deploy(
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}),
                    "example/web:1",
                ),
            ),
        ],
    );
    let name = "csa";
    let mut app = application(
        name,
        &apps_ns,
        &repo,
        "app",
        &dest,
        json!({"syncOptions": ["ServerSideApply=false"]}),
    );
    apply(&cluster, vec![app.clone()]).await;
    let at = |s: u64| UNIX_EPOCH + Duration::from_secs(1_900_000_000 + s);
    let sync_now = |s: u64| {
        let cluster = &cluster;
        let apps_ns = &apps_ns;
        async move {
            let stored = get_app(cluster, apps_ns, name).await;
            let sync = sync_app(
                cluster,
                &stored,
                &RunOptions::default(),
                InitiatedBy::user("alice"),
                at(s),
            )
            .await
            .expect("sync");
            assert!(sync.succeeded(), "{}", sync.message);
            let mut messages: Vec<String> =
                sync.results.iter().map(|r| r.message.clone()).collect();
            messages.sort();
            (sync, messages)
        }
    };
    let (_, messages) = sync_now(0).await;
    assert_eq!(messages, ["configmap created", "deployment created"]);
    let live = |kind: &'static str, name: &'static str| {
        let cluster = &cluster;
        let dest = &dest;
        async move {
            let group = if kind == "Deployment" { "apps" } else { "" };
            cluster
                .get_object(group, kind, dest, name)
                .await
                .expect("get")
                .expect("exists")
        }
    };
    let managers = |obj: &Value| -> Vec<(String, String)> {
        obj["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                (
                    m["manager"].as_str().unwrap_or("").to_string(),
                    m["operation"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let settings = live("ConfigMap", "settings").await;
    assert_eq!(
        managers(&settings),
        [("plumb".to_string(), "Update".to_string())],
        "a client-side apply is an Update, not an Apply"
    );
    assert!(
        settings["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );

    // Someone labels the ConfigMap by hand; git drops a key and a label, and the Deployment
    // switches to Recreate with a new image.
    cluster
        .merge_patch_object(
            &settings,
            &json!({"metadata": {"labels": {"hand": "y"}}}),
            "kubectl-edit",
        )
        .await
        .expect("hand edit");
    common::write_files(
        &repo,
        &[
            ("app/cm.json", &cm(json!({"k": "1"}), json!({"team": "a"}))),
            (
                "app/deploy.json",
                &deploy(json!({"type": "Recreate"}), "example/web:2"),
            ),
        ],
    );
    commit(&repo, "drop a key and a label; Recreate");
    let (sync, messages) = sync_now(60).await;
    assert_eq!(messages, ["configmap configured", "deployment configured"]);
    assert_eq!(
        sync.status.sync,
        SyncStatusCode::Synced,
        "{:?}",
        sync.status
    );
    let settings = live("ConfigMap", "settings").await;
    assert_eq!(settings["data"], json!({"k": "1"}));
    assert_eq!(
        settings["metadata"]["labels"],
        json!({"team": "a", "hand": "y"})
    );
    let web = live("Deployment", "web").await;
    assert_eq!(web["spec"]["strategy"], json!({"type": "Recreate"}));
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"][0]["image"],
        "example/web:2"
    );

    // Nothing left to change: every apply is a no-op.
    let rv = settings["metadata"]["resourceVersion"].clone();
    let (_, messages) = sync_now(120).await;
    assert_eq!(messages, ["configmap unchanged", "deployment unchanged"]);
    assert_eq!(
        live("ConfigMap", "settings").await["metadata"]["resourceVersion"],
        rv
    );

    // Back to server-side apply (ClientSideApplyMigration on, as by default): plumb's Apply
    // entry takes over what its client-side applies owned, so a key git drops now goes.
    app["spec"]["syncPolicy"] = json!({"syncOptions": ["ServerSideApply=true"]});
    apply(&cluster, vec![app]).await;
    common::write_files(
        &repo,
        &[("app/cm.json", &cm(json!({"k2": "2"}), json!({"team": "a"})))],
    );
    commit(&repo, "replace k with k2");
    let (sync, messages) = sync_now(180).await;
    assert_eq!(
        messages,
        [
            "configmap serverside-applied",
            "deployment serverside-applied"
        ]
    );
    assert_eq!(
        sync.status.sync,
        SyncStatusCode::Synced,
        "{:?}",
        sync.status
    );
    let settings = live("ConfigMap", "settings").await;
    assert_eq!(
        settings["data"],
        json!({"k2": "2"}),
        "the key owned by the client-side apply is removed"
    );
    assert_eq!(settings["metadata"]["labels"]["hand"], "y");
    let mut owners = managers(&settings);
    owners.sort();
    assert_eq!(
        owners,
        [
            ("kubectl-edit".to_string(), "Update".to_string()),
            ("plumb".to_string(), "Apply".to_string())
        ]
    );
    let _ = std::fs::remove_dir_all(&repo);
}

/// A manual sync as `plumb app sync` flags ask: a dry run changes nothing; `--resource` syncs
/// only what it names and records no history; without `--prune` an extra resource is left
/// ("ignored (requires pruning)"), with it deleted; `--revision` syncs an older commit;
/// rollback syncs the deployment before the last, and is refused under automated sync.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn manual_sync_dry_run_selected_resources_prune_revision_and_rollback() {
    let Some((cluster, apps_ns, dest)) = common::app_testbed("sync_manual", "sync-manual").await
    else {
        return;
    };
    let cm = |name: &str, v: &str| {
        serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"v": v}}))
        .expect("json")
    };
    let (repo, first) = git_repo(
        "plumb-manual",
        &[
            ("app/a.json", &cm("a", "1")),
            ("app/b.json", &cm("b", "1")),
            ("app/c.json", &cm("c", "1")),
            (
                "app/hook.json",
                &serde_json::to_string(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "announce", "annotations": {
                        "argocd.argoproj.io/hook": "PostSync",
                        "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"}},
                    "data": {}}))
                .expect("json"),
            ),
        ],
    );
    let name = "manual";
    // Automated prune is set, but it governs automated syncs only.
    apply(
        &cluster,
        vec![application(
            name,
            &apps_ns,
            &repo,
            "app",
            &dest,
            json!({"automated": {"prune": true}}),
        )],
    )
    .await;
    let sync = |s: u64, request: SyncRequest| {
        let cluster = &cluster;
        let apps_ns = &apps_ns;
        async move {
            let out = sync_app_with(
                cluster,
                &get_app(cluster, apps_ns, name).await,
                &RunOptions::default(),
                &request,
                InitiatedBy::user("alice"),
                UNIX_EPOCH + Duration::from_secs(1_900_000_000 + s),
            )
            .await
            .expect("sync");
            assert!(out.succeeded(), "{}", out.message);
            out
        }
    };
    let value = |n: &'static str| {
        let cluster = &cluster;
        let dest = &dest;
        async move {
            cluster
                .get_object("", "ConfigMap", dest, n)
                .await
                .expect("get")
                .map(|o| o["data"]["v"].as_str().unwrap_or("").to_string())
        }
    };
    let histories = |app: Value| history(&app).len();
    sync(0, SyncRequest::default()).await;
    assert_eq!(histories(get_app(&cluster, &apps_ns, name).await), 1);

    common::write_files(
        &repo,
        &[("app/a.json", &cm("a", "2")), ("app/b.json", &cm("b", "2"))],
    );
    git(&repo, &["rm", "-q", "app/c.json"]);
    commit(&repo, "a and b to 2, c dropped");

    // Dry run: every apply checked by the server, nothing changed, nothing recorded.
    let before = get_app(&cluster, &apps_ns, name).await;
    let out = sync(
        10,
        SyncRequest {
            dry_run: true,
            prune: true,
            ..Default::default()
        },
    )
    .await;
    let mut messages: Vec<(String, String)> = out
        .results
        .iter()
        .map(|r| (r.key.name.clone(), r.message.clone()))
        .collect();
    messages.sort();
    assert_eq!(
        messages,
        [
            (
                "a".into(),
                "configmap serverside-applied (server dry run)".into()
            ),
            (
                "b".into(),
                "configmap serverside-applied (server dry run)".into()
            ),
            ("c".into(), "pruned (dry run)".into()),
        ]
    );
    assert_eq!(out.history_id, None);
    assert_eq!(
        (value("a").await, value("c").await),
        (Some("1".into()), Some("1".into()))
    );
    let after = get_app(&cluster, &apps_ns, name).await;
    assert_eq!(
        after["status"], before["status"],
        "a dry run writes no status"
    );

    // Only `a`: a partial sync, not history.
    let out = sync(
        20,
        SyncRequest {
            resources: vec![ResourceSelector::parse(":ConfigMap:a").expect("selector")],
            ..Default::default()
        },
    )
    .await;
    assert_eq!(out.results.len(), 1, "{:?}", out.results);
    assert_eq!(out.history_id, None);
    assert_eq!(
        (value("a").await, value("b").await),
        (Some("2".into()), Some("1".into()))
    );
    let stored = get_app(&cluster, &apps_ns, name).await;
    assert_eq!(histories(stored.clone()), 1);
    assert_eq!(
        stored["status"]["operationState"]["operation"]["sync"]["resources"],
        // Written through the typed model: an empty group is left out, as Argo CD's omitempty.
        json!([{"kind": "ConfigMap", "name": "a"}])
    );

    // The whole app without --prune: c stays, reported.
    let out = sync(30, SyncRequest::default()).await;
    let c = out.results.iter().find(|r| r.key.name == "c").expect("c");
    assert_eq!(
        (c.status, c.message.as_str()),
        ("PruneSkipped", "ignored (requires pruning)")
    );
    assert_eq!(value("b").await, Some("2".into()));
    assert_eq!(value("c").await, Some("1".into()));
    assert_eq!(
        out.status.sync,
        SyncStatusCode::OutOfSync,
        "c still needs pruning"
    );
    // With --prune: c goes.
    let out = sync(
        40,
        SyncRequest {
            prune: true,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(out.status.sync, SyncStatusCode::Synced);
    assert!(
        out.results
            .iter()
            .any(|r| r.key.name == "announce" && r.hook_phase == Some("Succeeded")),
        "a full sync runs the hook: {:?}",
        out.results
    );
    assert_eq!(value("c").await, None);
    let stored = get_app(&cluster, &apps_ns, name).await;
    assert_eq!(histories(stored.clone()), 3);
    assert_eq!(
        stored["status"]["operationState"]["operation"]["sync"]["prune"],
        true
    );

    // --revision: back to the first commit (c re-created), recorded at that revision.
    let out = sync(
        50,
        SyncRequest {
            revision: Some(first.clone()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(out.revision, first);
    assert_eq!(
        (value("a").await, value("c").await),
        (Some("1".into()), Some("1".into()))
    );
    let stored = get_app(&cluster, &apps_ns, name).await;
    assert_eq!(
        history(&stored).last().expect("entry")["revision"],
        json!(first)
    );

    // Rollback: refused while automated sync is on; without it, back to the deployment
    // before the last (the pruning sync of the second commit), recorded as a new entry.
    let second = history(&stored)[2]["revision"].clone();
    assert_ne!(second, json!(first));
    let roll = |s: u64| {
        let cluster = &cluster;
        let apps_ns = &apps_ns;
        async move {
            rollback_app(
                cluster,
                &get_app(cluster, apps_ns, name).await,
                &RunOptions::default(),
                None,
                false,
                InitiatedBy::user("alice"),
                UNIX_EPOCH + Duration::from_secs(1_900_000_000 + s),
            )
            .await
        }
    };
    let refused = roll(60).await.expect_err("auto-sync is on");
    assert!(
        refused.to_string().contains("auto-sync is enabled"),
        "{refused}"
    );
    // The app's path has moved on since (to one this repository lacks): a rollback renders
    // the source the deployment used.
    apply(
        &cluster,
        vec![application(
            name,
            &apps_ns,
            &repo,
            "moved",
            &dest,
            json!({"syncOptions": ["Validate=true"]}),
        )],
    )
    .await;
    let out = roll(70).await.expect("rollback");
    assert!(out.succeeded(), "{}", out.message);
    assert!(
        out.results.iter().all(|r| r.hook_phase.is_none()),
        "a rollback runs no hooks: {:?}",
        out.results
    );
    assert_eq!(json!(out.revision), second);
    assert_eq!(value("a").await, Some("2".into()));
    assert_eq!(
        value("c").await,
        Some("1".into()),
        "no prune without asking"
    );
    let stored = get_app(&cluster, &apps_ns, name).await;
    assert_eq!(histories(stored.clone()), 5);
    // Recorded, so that a resumed rollback renders the same source.
    let op_sync = &stored["status"]["operationState"]["operation"]["sync"];
    assert_eq!(op_sync["source"]["path"], "app");
    assert_eq!(op_sync["syncStrategy"], json!({"apply": {}}));
    assert_eq!(history(&stored).last().expect("entry")["revision"], second);
    let _ = std::fs::remove_dir_all(&repo);
}

/// `Force=true`: a change the API server refuses (an immutable ConfigMap's data) is made by
/// deleting the object and creating it again — after a server-side apply's or a client-side
/// apply's refusal, and always with `Replace=true` (`kubectl replace --force`). Without it
/// the sync fails naming the refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn force_recreates_what_cannot_be_changed() {
    let Some((cluster, apps_ns, dest)) = common::app_testbed("sync_force", "sync-force").await
    else {
        return;
    };
    let frozen = |name: &str, options: &str, v: &str| {
        let mut annotations = json!({});
        if !options.is_empty() {
            annotations["argocd.argoproj.io/sync-options"] = json!(options);
        }
        let mut data = json!({"v": v});
        if name == "forced-invalid" && v == "2" {
            data["not a valid key!"] = json!("x");
        }
        serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "annotations": annotations},
            "immutable": true, "data": data}))
        .expect("json")
    };
    let cases = [
        ("plain", ""),
        ("forced-invalid", "Force=true"),
        ("forced", "Force=true"),
        ("forced-csa", "Force=true,ServerSideApply=false"),
        ("forced-replace", "Force=true,Replace=true"),
    ];
    let write = |v: &str| -> Vec<(String, String)> {
        cases
            .iter()
            .map(|(n, o)| (format!("app/{n}.json"), frozen(n, o, v)))
            .collect()
    };
    let files = write("1");
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let (repo, _) = git_repo("plumb-force", &refs);
    let name = "force";
    apply(
        &cluster,
        vec![application(name, &apps_ns, &repo, "app", &dest, json!({}))],
    )
    .await;
    let sync = |s: u64| {
        let cluster = &cluster;
        let apps_ns = &apps_ns;
        async move {
            sync_app(
                cluster,
                &get_app(cluster, apps_ns, name).await,
                &RunOptions::default(),
                InitiatedBy::user("alice"),
                UNIX_EPOCH + Duration::from_secs(1_900_000_000 + s),
            )
            .await
            .expect("sync")
        }
    };
    assert!(sync(0).await.succeeded());
    let uid = |obj: &Value| obj["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let mut before = BTreeMap::new();
    for (n, _) in cases {
        let obj = cluster
            .get_object("", "ConfigMap", &dest, n)
            .await
            .unwrap()
            .expect("created");
        before.insert(n, uid(&obj));
    }

    let files = write("2");
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    common::write_files(&repo, &refs);
    commit(&repo, "v2");
    let outcome = sync(60).await;
    assert!(!outcome.succeeded(), "the plain one cannot change");
    let result = |n: &str| {
        outcome
            .results
            .iter()
            .find(|r| r.key.name == n)
            .map(|r| (r.status, r.message.clone()))
            .expect("a result")
    };
    let (status, message) = result("plain");
    assert_eq!(status, "SyncFailed");
    assert!(message.contains("immutable"), "{message}");
    // Re-creating what is invalid fails: the object as it was is created again.
    let (status, message) = result("forced-invalid");
    assert_eq!(status, "SyncFailed");
    assert!(
        message.contains("the previous object was created again"),
        "{message}"
    );
    let restored = cluster
        .get_object("", "ConfigMap", &dest, "forced-invalid")
        .await
        .unwrap()
        .expect("restored");
    assert_eq!(restored["data"], json!({"v": "1"}));
    for (n, _) in &cases[2..] {
        assert_eq!(
            result(n),
            ("Synced", "configmap replaced".to_string()),
            "{n}"
        );
        let obj = cluster
            .get_object("", "ConfigMap", &dest, n)
            .await
            .unwrap()
            .expect("re-created");
        assert_eq!(obj["data"]["v"], "2", "{n}");
        assert_ne!(uid(&obj), before[n], "{n} is a new object");
    }
    let plain = cluster
        .get_object("", "ConfigMap", &dest, "plain")
        .await
        .unwrap()
        .expect("plain");
    assert_eq!(plain["data"]["v"], "1");
    assert_eq!(uid(&plain), before["plain"]);
    let _ = std::fs::remove_dir_all(&repo);
}

/// Deleting an Application with the resources finalizer: its resources go highest wave
/// first (the next wave only once the last is gone), `Delete=false` keeps one, an object the
/// app does not track is left alone, then the finalizer goes and with it the Application.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleting_an_application_cascades_in_reverse_wave_order() {
    let Some((cluster, apps_ns, dest)) = common::app_testbed("sync_delete", "sync-del").await
    else {
        return;
    };
    let files = [
        ("app/first.json", configmap("first", json!({}))),
        (
            "app/second.json",
            configmap("second", json!({"argocd.argoproj.io/sync-wave": "1"})),
        ),
        (
            "app/kept.json",
            configmap(
                "kept",
                json!({"argocd.argoproj.io/sync-options": "Delete=false"}),
            ),
        ),
        // A hook the sync leaves behind (BeforeHookCreation): the cascade deletes it too.
        (
            "app/hook.json",
            configmap("after-sync", json!({"argocd.argoproj.io/hook": "PostSync"})),
        ),
        // A CRD (highest wave): never deleted with the app, as in Argo CD.
        (
            "app/crd.json",
            serde_json::to_string(&json!({"apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "gadgets.delete-test.plumb.dev",
                    "annotations": {"argocd.argoproj.io/sync-wave": "5"}},
                "spec": {"group": "delete-test.plumb.dev", "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object"}}}]}}))
            .expect("json"),
        ),
    ];
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let (repo, _) = git_repo("plumb-delete", &refs);
    let name = "doomed";
    let mut app = application(name, &apps_ns, &repo, "app", &dest, json!({}));
    app["metadata"]["finalizers"] = json!([plumb_sync::deletion::RESOURCES_FINALIZER]);
    apply(&cluster, vec![app]).await;
    let sync = sync_app(
        &cluster,
        &get_app(&cluster, &apps_ns, name).await,
        &RunOptions::default(),
        InitiatedBy::user("alice"),
        UNIX_EPOCH + Duration::from_secs(1_900_000_000),
    )
    .await
    .expect("sync");
    assert!(sync.succeeded(), "{}", sync.message);
    assert!(
        cluster
            .get_object("", "ConfigMap", &dest, "after-sync")
            .await
            .unwrap()
            .is_some(),
        "the hook stays after the sync"
    );
    // An object of the same name the app does not track stays whatever happens.
    apply(
        &cluster,
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bystander", "namespace": dest}, "data": {}})],
    )
    .await;

    let app_key = plumb_core::ResourceKey {
        group: "plumb.dev".into(),
        kind: "Application".into(),
        namespace: apps_ns.clone(),
        name: name.into(),
    };
    cluster
        .delete_object(&app_key, plumb_cluster::Propagation::Background)
        .await
        .expect("delete the Application");
    let exists = |n: &'static str| {
        let cluster = &cluster;
        let dest = &dest;
        async move {
            cluster
                .get_object("", "ConfigMap", dest, n)
                .await
                .expect("get")
                .is_some()
        }
    };
    let mut state = ReconcileState::default();
    let mut deleted_in_order: Vec<Vec<String>> = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let Some(current) = cluster
            .get_application(&apps_ns, name)
            .await
            .expect("get app")
        else {
            break;
        };
        assert!(Instant::now() < deadline, "the Application is still there");
        let out = reconcile_once(&cluster, &current, UNIX_EPOCH, &mut state)
            .await
            .expect("reconcile");
        assert!(out.sync.is_none(), "a deleted app is never synced");
        let step = out.deletion.expect("a deletion step");
        if !step.deleted.is_empty() {
            // A wave is deleted only once the waves above it are gone.
            if step.deleted.iter().any(|k| k.name == "first") {
                assert!(
                    !exists("second").await,
                    "wave 0 went before wave 1 was gone"
                );
            }
            deleted_in_order.push(step.deleted.iter().map(|k| k.name.clone()).collect());
        }
        if step.finalized {
            assert_eq!(step.kept.len(), 2, "Delete=false and the CRD: {step:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        deleted_in_order,
        [vec!["second"], vec!["after-sync", "first"]]
    );
    assert!(
        cluster
            .get_object(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "",
                "gadgets.delete-test.plumb.dev"
            )
            .await
            .unwrap()
            .is_some(),
        "a CRD is never deleted with the app"
    );
    assert!(!exists("first").await);
    assert!(!exists("second").await);
    assert!(exists("kept").await, "Delete=false keeps it");
    assert!(exists("bystander").await, "not the app's");
    let _ = std::fs::remove_dir_all(&repo);
}

/// A remote `repoURL` (here `git://`, served by git-daemon): mirrored into the repository
/// cache and synced; a push is fetched and the new revision synced by the automated policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_remote_repository_is_mirrored_and_fetched() {
    let Some((cluster, apps_ns, dest)) = common::app_testbed("sync_remote", "sync-remote").await
    else {
        return;
    };
    // The "remote": a bare repository served by git-daemon on a free port.
    let root = std::env::temp_dir().join(unique("plumb-remote"));
    let served = root.join("served");
    let origin = served.join("app.git");
    std::fs::create_dir_all(&origin).expect("mkdir");
    git(&origin, &["init", "-q", "--bare", "--initial-branch=main"]);
    let (work, first) = git_repo(
        "plumb-remote-work",
        &[("app/cm.json", &configmap("remote", json!({})))],
    );
    git(
        &work,
        &["push", "-q", origin.to_str().expect("utf-8"), "HEAD:main"],
    );
    let daemon = plumb_render::testing::GitDaemon::serve(&served).expect("git daemon");
    let url = daemon.url("app.git");
    let mut app = application(
        "remote",
        &apps_ns,
        &work,
        "app",
        &dest,
        json!({"automated": {}}),
    );
    app["spec"]["source"]["repoURL"] = json!(url);
    app["spec"]["source"]["targetRevision"] = json!("main");
    apply(&cluster, vec![app]).await;
    let opts = RunOptions {
        repos: std::sync::Arc::new(plumb_render::remote::RepoCache::new(
            root.join("cache"),
            Duration::ZERO,
        )),
        ..RunOptions::default()
    };
    let mut state = ReconcileState { options: opts };
    let reconcile = |state: &mut ReconcileState, s: u64| {
        let cluster = &cluster;
        let apps_ns = &apps_ns;
        let mut state = state.clone();
        async move {
            let app = get_app(cluster, apps_ns, "remote").await;
            reconcile_once(
                cluster,
                &app,
                UNIX_EPOCH + Duration::from_secs(1_900_000_000 + s),
                &mut state,
            )
            .await
            .unwrap_or_else(|e| panic!("reconcile: {e}"))
        }
    };
    let out = reconcile(&mut state, 0).await;
    let sync = out.sync.expect("the first revision is synced");
    assert!(sync.succeeded(), "{}", sync.message);
    assert_eq!(sync.revision, first);
    assert!(
        cluster
            .get_object("", "ConfigMap", &dest, "remote")
            .await
            .unwrap()
            .is_some()
    );

    // A push to the remote: fetched, synced.
    common::write_files(
        &work,
        &[("app/second.json", &configmap("second", json!({})))],
    );
    let second = commit(&work, "second").expect("commit");
    git(
        &work,
        &["push", "-q", origin.to_str().expect("utf-8"), "HEAD:main"],
    );
    let out = reconcile(&mut state, 60).await;
    let sync = out.sync.expect("the pushed revision is synced");
    assert_eq!(sync.revision, second);
    assert!(
        cluster
            .get_object("", "ConfigMap", &dest, "second")
            .await
            .unwrap()
            .is_some()
    );
    drop(daemon);
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&work);
}

/// Time per sync of N objects (printed; run with --nocapture), and steady state.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sync_timing_of_n_objects() {
    let Some(cluster) = testbed("sync_timing").await else {
        return;
    };
    install_crd(&cluster).await;
    let n: usize = std::env::var("PLUMB_SYNC_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let ns = namespace(&cluster, "sync-timing", json!({})).await;
    let mut files: Vec<(String, String)> = (0..n)
        .map(|i| {
            (
                format!("app/cm-{i:04}.json"),
                configmap(&format!("cm-{i:04}"), json!({})),
            )
        })
        .collect();
    files.push(("app/README.md".into(), "x".into()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let (repo, _) = git_repo("plumb-timing", &refs);
    let name = "timing";
    apply(
        &cluster,
        vec![application(
            name,
            &ns,
            &repo,
            "app",
            &ns,
            json!({"automated": {"prune": true, "selfHeal": true}}),
        )],
    )
    .await;
    let mut state = ReconcileState::default();
    let now = UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let t = Instant::now();
    let out = reconcile_once(
        &cluster,
        &get_app(&cluster, &ns, name).await,
        now,
        &mut state,
    )
    .await
    .expect("reconcile");
    let first = t.elapsed();
    let sync = out.sync.expect("first sync");
    assert!(sync.succeeded(), "{}", sync.message);
    assert_eq!(sync.status.sync, SyncStatusCode::Synced);
    assert_eq!(sync.results.len(), n);
    let t = Instant::now();
    let out = reconcile_once(
        &cluster,
        &get_app(&cluster, &ns, name).await,
        now + Duration::from_secs(60),
        &mut state,
    )
    .await
    .expect("reconcile");
    let steady = t.elapsed();
    assert!(out.sync.is_none());
    assert_eq!(out.status.sync, SyncStatusCode::Synced);
    eprintln!(
        "TIMING sync of {n} objects: total {first:?} (render {:?}, compare {:?}, apply {:?}, compare after {:?}, status {:?}); steady-state reconcile {steady:?}",
        sync.timings.render,
        sync.timings.compare,
        sync.timings.execute,
        sync.timings.compare_after,
        sync.timings.write_status
    );
    let _ = std::fs::remove_dir_all(&repo);
}
