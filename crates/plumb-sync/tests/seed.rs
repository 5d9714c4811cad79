//! Sync, prune, self-heal and history on the test bed (a real kube-apiserver with
//! kube-controller-manager), each test in its own namespaces:
//!
//! - `basic_sync_prune_and_removed_field`: an automated, pruning Application syncs a
//!   kustomize overlay from a git repository; a commit removing an object prunes it, and a
//!   field removed from git is detected after the sync and removed by the next one.
//! - `seed_incident_webhook_loop_then_fix`: issue 5's seed — a real mutating webhook forces
//!   `imagePullPolicy: Always` where git declares `IfNotPresent`; with selfHeal the history
//!   fills with the same revision and the app stays OutOfSync; the seed's fix (remove the
//!   patch) makes it Synced and the history stops growing.
//! - `hpa_owned_replicas_loop_then_respect_ignore_differences`: `spec.replicas` written
//!   through the scale subresource by `kube-controller-manager` after each sync loops the
//!   same way; the narrow ignoreDifferences with `RespectIgnoreDifferences=true` fixes it.
//!
//! A fake clock drives `reconcile_once` past the self-heal backoff (0, 2, 6, 18 s …).

mod common;

use common::support::webhook::{self, Webhook};
use common::support::{DEADLINE, apply, eventually, namespace, testbed, unique};
use common::{application, commit, get_app, git, git_repo, history, install_crd, sync_status};
use plumb_cluster::Cluster;
use plumb_sync::auto::{Decision, SyncReason};
use plumb_sync::history::InitiatedBy;
use plumb_sync::run::{ReconcileOutcome, ReconcileState, RunOptions, reconcile_once, sync_app};
use plumb_sync::status::SyncStatusCode;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TRACKING: &str = "argocd.argoproj.io/tracking-id";

fn t0() -> SystemTime {
    // A fixed, whole-second fake clock (status times are RFC 3339 seconds).
    UNIX_EPOCH + Duration::from_secs(1_900_000_000)
}

async fn reconcile(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    now: SystemTime,
    state: &mut ReconcileState,
) -> ReconcileOutcome {
    let app = get_app(cluster, ns, name).await;
    let out = reconcile_once(cluster, &app, now, state)
        .await
        .unwrap_or_else(|e| panic!("reconcile {name}: {e}"));
    if let Some(s) = &out.sync {
        eprintln!(
            "{name}: {:?} -> {} ({} resources) render {:?} compare {:?} execute {:?} compare-after {:?} status {:?} total {:?}",
            out.decision,
            s.phase,
            s.results.len(),
            s.timings.render,
            s.timings.compare,
            s.timings.execute,
            s.timings.compare_after,
            s.timings.write_status,
            s.timings.total
        );
    }
    out
}

async fn get(cluster: &Cluster, group: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
    cluster
        .get_object(group, kind, ns, name)
        .await
        .unwrap_or_else(|e| panic!("get {kind} {name}: {e}"))
}

fn revisions(app: &Value) -> Vec<String> {
    history(app)
        .iter()
        .map(|h| h["revision"].as_str().unwrap_or_default().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------

const BASE_KUSTOMIZATION: &str = "resources:\n- config.yaml\n- extra.yaml\n- deployment.yaml\n";
const CONFIG: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  LOG_LEVEL: info\n  DEBUG: \"true\"\n";
const EXTRA: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\ndata:\n  old: \"1\"\n";
const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 0\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: registry.invalid/web:1\n";
const OVERLAY: &str = "resources:\n- ../../base\nnamePrefix: prod-\ncommonLabels:\n  tier: web\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn basic_sync_prune_and_removed_field() {
    let Some(cluster) = testbed("basic_sync").await else {
        return;
    };
    install_crd(&cluster).await;
    let ns = namespace(&cluster, "sync-basic", json!({})).await;
    let (repo, sha1) = git_repo(
        "plumb-basic",
        &[
            ("base/kustomization.yaml", BASE_KUSTOMIZATION),
            ("base/config.yaml", CONFIG),
            ("base/extra.yaml", EXTRA),
            ("base/deployment.yaml", DEPLOYMENT),
            ("overlays/prod/kustomization.yaml", OVERLAY),
        ],
    );
    let name = "web-prod";
    apply(
        &cluster,
        vec![application(
            name,
            &ns,
            &repo,
            "overlays/prod",
            &ns,
            json!({"automated": {"prune": true}}),
        )],
    )
    .await;
    let mut state = ReconcileState::default();
    let now = t0();

    // First pass: a new revision, synced.
    let out = reconcile(&cluster, &ns, name, now, &mut state).await;
    assert_eq!(
        out.decision,
        Some(Decision::SyncNow {
            reason: SyncReason::NewRevision
        })
    );
    let sync = out.sync.expect("a sync");
    assert!(sync.succeeded(), "{}", sync.message);
    assert_eq!(sync.results.len(), 3, "{:?}", sync.results);
    assert_eq!(out.status.sync, SyncStatusCode::Synced, "{:?}", out.status);
    let app = get_app(&cluster, &ns, name).await;
    assert_eq!(sync_status(&app), "Synced");
    assert_eq!(app["status"]["sync"]["revision"], json!(sha1));
    assert_eq!(app["status"]["operationState"]["phase"], "Succeeded");
    assert_eq!(
        app["status"]["operationState"]["syncResult"]["revision"],
        json!(sha1)
    );
    assert_eq!(app["status"]["sourceType"], "Kustomize");
    assert_eq!(revisions(&app), std::slice::from_ref(&sha1));
    let h = &history(&app)[0];
    assert_eq!(h["id"], 0);
    assert_eq!(h["initiatedBy"], json!({"automated": true}));
    assert_eq!(h["source"]["path"], "overlays/prod");
    assert!(h["deployStartedAt"].is_string() && h["deployedAt"].is_string());
    assert_eq!(app["status"]["resources"].as_array().map(Vec::len), Some(3));
    // Objects exist, with the tracking annotation and git's values.
    for (group, kind, obj_name) in [
        ("", "ConfigMap", "prod-web-config"),
        ("", "ConfigMap", "prod-legacy"),
        ("apps", "Deployment", "prod-web"),
    ] {
        let obj = get(&cluster, group, kind, &ns, obj_name)
            .await
            .unwrap_or_else(|| panic!("{kind} {obj_name} was not created"));
        let expected = format!("{name}:{group}/{kind}:{ns}/{obj_name}");
        assert_eq!(obj["metadata"]["annotations"][TRACKING], json!(expected));
        assert_eq!(obj["metadata"]["labels"]["tier"], "web");
        let managers: Vec<&str> = obj["metadata"]["managedFields"]
            .as_array()
            .map(|m| m.iter().filter_map(|e| e["manager"].as_str()).collect())
            .unwrap_or_default();
        assert!(managers.contains(&"plumb"), "{managers:?}");
    }

    // Nothing changed: no second sync for the same revision.
    let out = reconcile(
        &cluster,
        &ns,
        name,
        now + Duration::from_secs(10),
        &mut state,
    )
    .await;
    assert!(out.sync.is_none(), "{:?}", out.decision);
    assert_eq!(revisions(&get_app(&cluster, &ns, name).await).len(), 1);

    // A commit removes the legacy ConfigMap and the DEBUG key: the refresh sees both
    // (the removed field through the last-applied configuration the sync wrote).
    common::write_files(
        &repo,
        &[
            (
                "base/kustomization.yaml",
                "resources:\n- config.yaml\n- deployment.yaml\n",
            ),
            (
                "base/config.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  LOG_LEVEL: info\n",
            ),
        ],
    );
    git(&repo, &["rm", "-q", "base/extra.yaml"]);
    let sha2 = commit(&repo, "drop legacy config and DEBUG").expect("commit");
    let app = get_app(&cluster, &ns, name).await;
    let status = plumb_sync::run::refresh_app(&cluster, &app, &RunOptions::default(), now)
        .await
        .expect("refresh");
    assert_eq!(status.sync, SyncStatusCode::OutOfSync);
    assert_eq!(status.revision, sha2);
    let by_name = |n: &str| {
        status
            .resources
            .iter()
            .find(|r| r.key.name == n)
            .unwrap_or_else(|| panic!("{n} in {:?}", status.resources))
            .clone()
    };
    assert_eq!(by_name("prod-web-config").status, SyncStatusCode::OutOfSync);
    assert!(by_name("prod-legacy").requires_pruning);
    assert_eq!(by_name("prod-web").status, SyncStatusCode::Synced);

    // The next reconcile syncs the new revision: prune and field removal.
    let out = reconcile(
        &cluster,
        &ns,
        name,
        now + Duration::from_secs(20),
        &mut state,
    )
    .await;
    let sync = out.sync.expect("a sync of the new revision");
    assert!(sync.succeeded(), "{}", sync.message);
    assert!(
        sync.results
            .iter()
            .any(|r| r.key.name == "prod-legacy" && r.status == "Pruned"),
        "{:?}",
        sync.results
    );
    assert_eq!(out.status.sync, SyncStatusCode::Synced, "{:?}", out.status);
    let gone = eventually(DEADLINE, || async {
        get(&cluster, "", "ConfigMap", &ns, "prod-legacy")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    assert!(gone.is_some(), "the pruned ConfigMap is still there");
    let config = get(&cluster, "", "ConfigMap", &ns, "prod-web-config")
        .await
        .expect("config");
    assert_eq!(config["data"], json!({"LOG_LEVEL": "info"}));
    let app = get_app(&cluster, &ns, name).await;
    assert_eq!(revisions(&app), [sha1, sha2]);
    assert_eq!(sync_status(&app), "Synced");
    // Health (plumb-health): the Deployment (0 replicas) is Healthy once
    // kube-controller-manager has observed it; ConfigMaps have no health check.
    let healthy = eventually(DEADLINE, || async {
        let app = get_app(&cluster, &ns, name).await;
        let status = plumb_sync::run::refresh_app(&cluster, &app, &RunOptions::default(), now)
            .await
            .ok()?;
        (status.health == plumb_health::HealthStatus::Healthy).then_some(())
    })
    .await;
    assert!(healthy.is_some(), "the app never became Healthy");
    assert_eq!(
        get_app(&cluster, &ns, name).await["status"]["health"]["status"],
        "Healthy"
    );
    let _ = std::fs::remove_dir_all(&repo);
}

// ---------------------------------------------------------------------------------------

const LABEL: &str = "policy.lab/image-pull";

/// The shipped example repository (`examples/payments/repo`) as a fresh git repository.
fn payments_repo() -> (std::path::PathBuf, String) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/payments/repo");
    let mut files: Vec<(String, String)> = Vec::new();
    for rel in [
        "base/kustomization.yaml",
        "base/deployment.yaml",
        "base/service.yaml",
        "base/configmap.yaml",
        "base/secret.yaml",
        "overlays/prod/kustomization.yaml",
        "overlays/prod/pull-policy.yaml",
    ] {
        let text = std::fs::read_to_string(src.join(rel)).expect("example file");
        files.push((rel.to_string(), text));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    git_repo("plumb-payments", &refs)
}

fn pull_policy(obj: &Value) -> &str {
    obj.pointer("/spec/template/spec/containers/0/imagePullPolicy")
        .and_then(Value::as_str)
        .unwrap_or("<none>")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seed_incident_webhook_loop_then_fix() {
    let Some(cluster) = testbed("seed_incident").await else {
        return;
    };
    install_crd(&cluster).await;
    let hook = Webhook::start().await;
    // A selector of this test's own (see support::webhook).
    let selected = webhook::selector_value();
    let ns = namespace(
        &cluster,
        "pay-prod",
        json!({LABEL: selected, "sysop/lab": "ch25"}),
    )
    .await;
    let config_name = unique("platform-policy-mutate");
    apply(
        &cluster,
        vec![hook.configuration(&config_name, LABEL, &selected)],
    )
    .await;
    // The API server picks up the webhook asynchronously: wait for a mutated dry run.
    webhook::wait_effective(&cluster, &ns).await;

    let (repo, sha1) = payments_repo();
    let name = "payments-prod";
    apply(
        &cluster,
        vec![application(
            name,
            &ns,
            &repo,
            "overlays/prod",
            &ns,
            json!({"automated": {"prune": true, "selfHeal": true}}),
        )],
    )
    .await;
    let mut state = ReconcileState::default();

    // Sync, mutate, OutOfSync, self-heal syncs again, mutate: the loop, with backoff.
    let mut now = t0();
    let mut reasons = Vec::new();
    for round in 0..5 {
        let out = reconcile(&cluster, &ns, name, now, &mut state).await;
        let Some(Decision::SyncNow { reason }) = out.decision else {
            panic!("round {round}: expected a sync, got {:?}", out.decision);
        };
        reasons.push(reason);
        let sync = out.sync.expect("a sync");
        assert!(sync.succeeded(), "round {round}: {}", sync.message);
        assert_eq!(out.status.sync, SyncStatusCode::OutOfSync, "round {round}");
        let deploy = get(&cluster, "apps", "Deployment", &ns, "payments-api")
            .await
            .expect("deployment");
        assert_eq!(pull_policy(&deploy), "Always", "the webhook rewrote it");
        assert_eq!(deploy["spec"]["replicas"], 3);
        if round == 2 {
            // Two self-heals done: the next waits 6 s after the last sync.
            let early = reconcile(
                &cluster,
                &ns,
                name,
                now + Duration::from_secs(3),
                &mut state,
            )
            .await;
            match early.decision {
                Some(Decision::WaitUntil {
                    reason: SyncReason::SelfHeal,
                    at,
                }) => {
                    let wait = at.duration_since(now).unwrap_or_default();
                    assert!(
                        (Duration::from_secs(6)..Duration::from_secs(8)).contains(&wait),
                        "{wait:?}"
                    );
                }
                other => panic!("expected a self-heal backoff, got {other:?}"),
            }
            assert!(early.sync.is_none());
        }
        now += Duration::from_secs(60);
    }
    assert_eq!(reasons[0], SyncReason::NewRevision);
    assert!(
        reasons[1..].iter().all(|r| *r == SyncReason::SelfHeal),
        "{reasons:?}"
    );
    let app = get_app(&cluster, &ns, name).await;
    assert_eq!(sync_status(&app), "OutOfSync");
    assert_eq!(
        revisions(&app),
        vec![sha1.clone(); 5],
        "the same revision again and again"
    );
    let ids: Vec<i64> = history(&app)
        .iter()
        .filter_map(|h| h["id"].as_i64())
        .collect();
    assert_eq!(ids, [0, 1, 2, 3, 4]);
    assert_eq!(
        app["status"]["operationState"]["operation"]["sync"]["autoHealAttemptsCount"],
        4
    );
    let deploy_status = app["status"]["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["kind"] == "Deployment"))
        .cloned()
        .expect("deployment in status.resources");
    assert_eq!(deploy_status["status"], "OutOfSync");
    for r in app["status"]["resources"].as_array().into_iter().flatten() {
        if r["kind"] != "Deployment" {
            assert_eq!(r["status"], "Synced", "{r}");
        }
    }

    // The seed's fix: stop declaring imagePullPolicy (platform policy owns it).
    git(&repo, &["rm", "-q", "overlays/prod/pull-policy.yaml"]);
    let path = repo.join("overlays/prod/kustomization.yaml");
    let text = std::fs::read_to_string(&path).expect("kustomization");
    let fixed: String = text
        .lines()
        .filter(|l| !l.contains("save registry traffic") && !l.contains("path: pull-policy.yaml"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, fixed).expect("write");
    let sha2 = commit(
        &repo,
        "prod: do not declare imagePullPolicy (platform policy owns it)",
    )
    .expect("commit");

    let out = reconcile(&cluster, &ns, name, now, &mut state).await;
    assert_eq!(
        out.decision,
        Some(Decision::SyncNow {
            reason: SyncReason::NewRevision
        })
    );
    assert_eq!(out.status.sync, SyncStatusCode::Synced, "{:?}", out.status);
    let app = get_app(&cluster, &ns, name).await;
    assert_eq!(sync_status(&app), "Synced");
    assert_eq!(app["status"]["sync"]["revision"], json!(sha2));
    assert_eq!(history(&app).len(), 6);

    // A minute later, and later still: Synced, and the history has stopped growing.
    for later in [60, 120, 600] {
        let out = reconcile(
            &cluster,
            &ns,
            name,
            now + Duration::from_secs(later),
            &mut state,
        )
        .await;
        assert!(out.sync.is_none(), "{:?}", out.decision);
        assert_eq!(out.status.sync, SyncStatusCode::Synced);
    }
    let app = get_app(&cluster, &ns, name).await;
    assert_eq!(history(&app).len(), 6);
    assert_eq!(revisions(&app).last(), Some(&sha2));
    assert_eq!(sync_status(&app), "Synced");
    // Seen Synced: the self-heal attempt count is reset.
    assert_eq!(
        app["status"]["operationState"]["operation"]["sync"]["autoHealAttemptsCount"],
        0
    );

    let _ = cluster
        .delete_object(
            &plumb_core::ResourceKey {
                group: "admissionregistration.k8s.io".into(),
                kind: "MutatingWebhookConfiguration".into(),
                namespace: String::new(),
                name: config_name,
            },
            plumb_cluster::Propagation::Background,
        )
        .await;
    hook.stop().await;
    let _ = std::fs::remove_dir_all(&repo);
}

// ---------------------------------------------------------------------------------------

const HPA_DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: api}\n  template:\n    metadata:\n      labels: {app: api}\n    spec:\n      containers:\n      - name: api\n        image: registry.invalid/api:1\n";

/// What an HPA does: `spec.replicas` through the scale subresource, as kube-controller-manager.
async fn hpa_scale(cluster: &Cluster, ns: &str, name: &str, replicas: i64) {
    let params = kube::api::PatchParams {
        field_manager: Some("kube-controller-manager".into()),
        ..Default::default()
    };
    let request = kube::core::Request::new(format!("/apis/apps/v1/namespaces/{ns}/deployments"))
        .patch_subresource(
            "scale",
            name,
            &params,
            &kube::api::Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .expect("scale request");
    cluster
        .client()
        .request::<Value>(request)
        .await
        .expect("scale patch");
}

async fn replicas(cluster: &Cluster, ns: &str) -> i64 {
    get(cluster, "apps", "Deployment", ns, "api")
        .await
        .and_then(|d| d["spec"]["replicas"].as_i64())
        .unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hpa_owned_replicas_loop_then_respect_ignore_differences() {
    let Some(cluster) = testbed("hpa_replicas").await else {
        return;
    };
    install_crd(&cluster).await;
    let ns = namespace(&cluster, "sync-hpa", json!({})).await;
    let (repo, sha) = git_repo("plumb-hpa", &[("app/deployment.yaml", HPA_DEPLOYMENT)]);
    let name = "api";
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
    let mut now = t0();

    // Sync; the "HPA" scales to 5; self-heal resets to 2; the HPA scales again ...
    for round in 0..4 {
        let out = reconcile(&cluster, &ns, name, now, &mut state).await;
        assert!(
            matches!(out.decision, Some(Decision::SyncNow { .. })),
            "round {round}: {:?}",
            out.decision
        );
        assert_eq!(
            replicas(&cluster, &ns).await,
            2,
            "round {round}: the sync reset replicas"
        );
        hpa_scale(&cluster, &ns, "api", 5).await;
        now += Duration::from_secs(60);
    }
    let app = get_app(&cluster, &ns, name).await;
    assert_eq!(revisions(&app), vec![sha.clone(); 4]);
    let out = reconcile(&cluster, &ns, name, now, &mut state).await;
    assert_eq!(
        out.decision,
        Some(Decision::SyncNow {
            reason: SyncReason::SelfHeal
        }),
        "still fighting the HPA"
    );
    hpa_scale(&cluster, &ns, "api", 5).await;
    now += Duration::from_secs(60);

    // The narrow fix: ignore what kube-controller-manager owns, and respect it when syncing.
    cluster
        .patch_application(
            &ns,
            name,
            &json!({"spec": {
                "ignoreDifferences": [{
                    "group": "apps", "kind": "Deployment", "name": "api",
                    "managedFieldsManagers": ["kube-controller-manager"]
                }],
                "syncPolicy": {"syncOptions": ["RespectIgnoreDifferences=true"]}
            }}),
        )
        .await
        .expect("patch spec");
    let before = history(&get_app(&cluster, &ns, name).await).len();
    for _ in 0..3 {
        let out = reconcile(&cluster, &ns, name, now, &mut state).await;
        assert!(out.sync.is_none(), "{:?}", out.decision);
        assert_eq!(out.status.sync, SyncStatusCode::Synced, "{:?}", out.status);
        now += Duration::from_secs(60);
    }
    assert_eq!(replicas(&cluster, &ns).await, 5);
    assert_eq!(history(&get_app(&cluster, &ns, name).await).len(), before);

    // A manual sync keeps the HPA's replicas (RespectIgnoreDifferences) and stays Synced.
    let app = get_app(&cluster, &ns, name).await;
    let sync = sync_app(
        &cluster,
        &app,
        &RunOptions::default(),
        InitiatedBy::user("admin"),
        now,
    )
    .await
    .expect("manual sync");
    assert!(sync.succeeded(), "{}", sync.message);
    assert_eq!(
        replicas(&cluster, &ns).await,
        5,
        "the sync must not reset replicas"
    );
    assert_eq!(sync.status.sync, SyncStatusCode::Synced);
    let app = get_app(&cluster, &ns, name).await;
    assert_eq!(history(&app).len(), before + 1);
    assert_eq!(
        history(&app).last().map(|h| h["initiatedBy"].clone()),
        Some(json!({"username": "admin"}))
    );
    // The HPA keeps scaling; plumb keeps agreeing.
    hpa_scale(&cluster, &ns, "api", 7).await;
    let out = reconcile(
        &cluster,
        &ns,
        name,
        now + Duration::from_secs(60),
        &mut state,
    )
    .await;
    assert!(out.sync.is_none(), "{:?}", out.decision);
    assert_eq!(out.status.sync, SyncStatusCode::Synced);
    assert_eq!(replicas(&cluster, &ns).await, 7);
    let _ = std::fs::remove_dir_all(&repo);
}
