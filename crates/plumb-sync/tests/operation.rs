//! Sync operations on the test bed: health-gated waves, hooks (PreSync / PostSync / SyncFail,
//! `generateName`, delete policies), and an interrupted operation resumed without losing or
//! duplicating history; a running operation terminated; PreDelete / PostDelete hooks around an
//! Application's cascade deletion.
//!
//! The test bed has no kubelet and no cloud controller, so the tests play those parts: a
//! `type: LoadBalancer` Service is Progressing until the test writes its
//! `status.loadBalancer`, and Jobs carry `spec.managedBy` (kube-controller-manager's Job
//! controller leaves them alone) so the test writes their completion.

mod common;

use common::support::{DEADLINE, apply, assign_lb, namespace, patch_status, testbed, unique};
use common::{application, get_app, git_repo, history, install_crd};
use plumb_cluster::Cluster;
use plumb_sync::history::InitiatedBy;
use plumb_sync::run::{
    ReconcileState, RunOptions, SyncOutcome, reconcile_once, resume_app, sync_app,
    terminate_operation,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant, SystemTime};

fn opts() -> RunOptions {
    RunOptions {
        poll_interval: Duration::from_millis(100),
        // Generous (the machine may be busy): nothing here waits for them to run out.
        wave_timeout: DEADLINE,
        prune_wait: DEADLINE,
        ..RunOptions::default()
    }
}

fn to_json(v: Value) -> String {
    serde_json::to_string_pretty(&v).expect("json")
}

fn lb_service(name: &str, wave: &str) -> String {
    to_json(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "annotations": {"argocd.argoproj.io/sync-wave": wave}},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"port": 80, "targetPort": 8080}]}}))
}

fn configmap(name: &str, annotations: Value) -> String {
    to_json(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "annotations": annotations}, "data": {"k": name}}))
}

/// A Job nobody runs (`spec.managedBy`): the test decides how it ends.
fn job(metadata: Value) -> String {
    to_json(
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
        "spec": {"managedBy": "plumb.dev/test", "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.invalid/migrate:1"}]}}}}),
    )
}

async fn get(cluster: &Cluster, group: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
    cluster
        .get_object(group, kind, ns, name)
        .await
        .expect("get object")
}

/// What the Job controller does when a Job ends.
async fn finish_job(cluster: &Cluster, ns: &str, name: &str, succeeded: bool) {
    let now = plumb_sync::time::format_rfc3339(SystemTime::now());
    let status = if succeeded {
        json!({"startTime": now, "completionTime": now, "succeeded": 1, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
            {"type": "Complete", "status": "True", "lastTransitionTime": now}]})
    } else {
        json!({"startTime": now, "failed": 1, "conditions": [
            {"type": "FailureTarget", "status": "True", "lastTransitionTime": now,
             "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"},
            {"type": "Failed", "status": "True", "lastTransitionTime": now,
             "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]})
    };
    patch_status(
        cluster,
        &format!("/apis/batch/v1/namespaces/{ns}/jobs"),
        name,
        status,
    )
    .await;
}

fn op_field<'a>(app: &'a Value, field: &str) -> &'a str {
    app.pointer(&format!("/status/operationState/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Polls the Application until its running operation's message satisfies `want`.
async fn wait_message(
    cluster: &Cluster,
    ns: &str,
    app: &str,
    want: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let a = get_app(cluster, ns, app).await;
        let m = op_field(&a, "message").to_string();
        if op_field(&a, "phase") == "Running" && want(&m) {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "operation message never matched; last: {m:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Jobs in `ns` whose name starts with `prefix`.
async fn jobs_named(cluster: &Cluster, ns: &str, prefix: &str) -> Vec<String> {
    cluster
        .list_live(
            &[plumb_core::GroupKind::new("batch", "Job")],
            Some(&[ns.to_string()]),
            None,
        )
        .await
        .expect("list jobs")
        .iter()
        .filter_map(|j| j.pointer("/metadata/name").and_then(Value::as_str))
        .filter(|n| n.starts_with(prefix))
        .map(String::from)
        .collect()
}

async fn setup(
    cluster: &Cluster,
    prefix: &str,
    files: &[(&str, String)],
    sync_policy: Value,
) -> (String, String, String) {
    install_crd(cluster).await;
    let apps_ns = namespace(cluster, &format!("{prefix}-apps"), json!({})).await;
    let dest = namespace(cluster, &format!("{prefix}-dest"), json!({})).await;
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let (repo, _) = git_repo(prefix, &refs);
    let name = unique(prefix);
    apply(
        cluster,
        vec![application(
            &name,
            &apps_ns,
            &repo,
            "app",
            &dest,
            sync_policy,
        )],
    )
    .await;
    (apps_ns, dest, name)
}

fn results(out: &SyncOutcome) -> Vec<(String, &'static str, &'static str, Option<&'static str>)> {
    out.results
        .iter()
        .map(|r| (r.key.name.clone(), r.phase, r.status, r.hook_phase))
        .collect()
}

/// Deleting an Application whose git declares PreDelete and PostDelete hooks: the controller
/// adds their finalizers; on deletion the PreDelete Job runs before any resource goes, the
/// PostDelete Job once they are gone, then the hooks whose delete policy says so are removed
/// and the Application goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn delete_hooks_run_around_the_cascade() {
    let Some(cluster) = testbed("delete_hooks").await else {
        return;
    };
    let files = [
        ("app/cm.json", configmap("settings", json!({}))),
        (
            "app/backup.json",
            job(json!({"name": "backup", "annotations": {"argocd.argoproj.io/hook": "PreDelete"}})),
        ),
        (
            "app/farewell.json",
            job(
                json!({"name": "farewell", "annotations": {"argocd.argoproj.io/hook": "PostDelete",
                "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"}}),
            ),
        ),
    ];
    let (apps_ns, dest, name) = setup(&cluster, "delhooks", &files, json!({})).await;
    let o = opts();
    let out = sync_app(
        &cluster,
        &get_app(&cluster, &apps_ns, &name).await,
        &o,
        InitiatedBy::user("alice"),
        SystemTime::now(),
    )
    .await
    .expect("sync");
    assert!(out.succeeded(), "{}", out.message);
    assert!(
        jobs_named(&cluster, &dest, "").await.is_empty(),
        "delete hooks do not run on sync"
    );

    // A reconcile adds the hooks' finalizers (the test adds the cascade one, as `app delete`).
    let mut state = ReconcileState { options: o.clone() };
    reconcile_once(
        &cluster,
        &get_app(&cluster, &apps_ns, &name).await,
        SystemTime::now(),
        &mut state,
    )
    .await
    .expect("reconcile");
    let app = get_app(&cluster, &apps_ns, &name).await;
    let mut finalizers: Vec<Value> = app["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for f in [
        "pre-delete-finalizer.argocd.argoproj.io",
        "pre-delete-finalizer.argocd.argoproj.io/cleanup",
        "post-delete-finalizer.argocd.argoproj.io",
        "post-delete-finalizer.argocd.argoproj.io/cleanup",
    ] {
        assert!(
            finalizers.contains(&json!(f)),
            "{f} missing: {finalizers:?}"
        );
    }
    finalizers.push(json!("resources-finalizer.argocd.argoproj.io"));
    cluster
        .patch_application(
            &apps_ns,
            &name,
            &json!({"metadata": {"finalizers": finalizers}}),
        )
        .await
        .expect("add the cascade finalizer");
    cluster
        .delete_object(
            &plumb_core::ResourceKey {
                group: "plumb.dev".into(),
                kind: "Application".into(),
                namespace: apps_ns.clone(),
                name: name.clone(),
            },
            plumb_cluster::Propagation::Background,
        )
        .await
        .expect("delete the Application");

    let mut seen = Vec::new();
    let deadline = Instant::now() + DEADLINE;
    while let Some(current) = cluster.get_application(&apps_ns, &name).await.expect("get") {
        assert!(Instant::now() < deadline, "still there; seen {seen:?}");
        let out = reconcile_once(&cluster, &current, SystemTime::now(), &mut state)
            .await
            .expect("reconcile");
        let step = out.deletion.expect("a deletion step");
        if seen.last() != Some(&step.message) {
            seen.push(step.message.clone());
        }
        let cm_there = get(&cluster, "", "ConfigMap", &dest, "settings")
            .await
            .is_some();
        // Play the Job controller: each hook Job completes once it exists.
        for (job, must_see_cm) in [("backup", true), ("farewell", false)] {
            let Some(j) = get(&cluster, "batch", "Job", &dest, job).await else {
                continue;
            };
            if j.pointer("/status/completionTime").is_none() {
                assert_eq!(
                    cm_there, must_see_cm,
                    "{job} runs while the ConfigMap exists: {must_see_cm}"
                );
                finish_job(&cluster, &dest, job, true).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let position = |m: &str| {
        seen.iter()
            .position(|s| s.starts_with(m))
            .unwrap_or_else(|| panic!("{m} not in {seen:?}"))
    };
    assert!(
        position("created 1 PreDelete hook") < position("deleting 1 resource"),
        "{seen:?}"
    );
    assert!(
        position("resources deleted") < position("created 1 PostDelete hook"),
        "{seen:?}"
    );
    assert!(
        position("PostDelete hooks completed") < position("delete hooks cleaned up"),
        "{seen:?}"
    );
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "settings")
            .await
            .is_none()
    );
    assert!(
        get(&cluster, "batch", "Job", &dest, "farewell")
            .await
            .is_none(),
        "HookSucceeded: deleted"
    );
    assert!(
        get(&cluster, "batch", "Job", &dest, "backup")
            .await
            .is_some(),
        "no policy given: kept"
    );
}

/// `plumb app terminate-op`: an operation waiting for a wave's health stops, ends Failed with
/// "Operation terminated", starts no later wave and runs no SyncFail hook; with nothing
/// running, terminating is an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_running_operation_is_terminated() {
    let Some(cluster) = testbed("terminate").await else {
        return;
    };
    let files = [
        ("app/lb.json", lb_service("front", "0")),
        (
            "app/after.json",
            configmap("after", json!({"argocd.argoproj.io/sync-wave": "1"})),
        ),
        (
            "app/on-fail.json",
            job(json!({"name": "on-fail", "annotations": {"argocd.argoproj.io/hook": "SyncFail"}})),
        ),
    ];
    let (apps_ns, dest, name) = setup(&cluster, "terminate", &files, json!({})).await;
    let app = get_app(&cluster, &apps_ns, &name).await;
    let refused = terminate_operation(&cluster, &app)
        .await
        .expect_err("nothing runs yet");
    assert!(
        refused.to_string().contains("No operation is in progress"),
        "{refused}"
    );
    let o = opts();
    let sync = sync_app(
        &cluster,
        &app,
        &o,
        InitiatedBy::user("alice"),
        SystemTime::now(),
    );
    let play = async {
        wait_message(&cluster, &apps_ns, &name, |m| m.starts_with("waiting for")).await;
        let running = get_app(&cluster, &apps_ns, &name).await;
        terminate_operation(&cluster, &running)
            .await
            .expect("terminate");
    };
    let (out, ()) = tokio::join!(sync, play);
    let out = out.expect("sync");
    assert_eq!(
        (out.phase, out.message.as_str()),
        ("Failed", "Operation terminated")
    );
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "after")
            .await
            .is_none()
    );
    assert!(
        jobs_named(&cluster, &dest, "on-fail").await.is_empty(),
        "no SyncFail hook"
    );
    let stored = get_app(&cluster, &apps_ns, &name).await;
    assert_eq!(op_field(&stored, "phase"), "Failed");
    assert_eq!(op_field(&stored, "message"), "Operation terminated");
    assert!(history(&stored).is_empty());

    // An operation left Terminating by a process that died: the next reconcile ends it.
    let stuck = || {
        let cluster = &cluster;
        let (apps_ns, name) = (&apps_ns, &name);
        async move {
            cluster
                .patch_application_status(
                    apps_ns,
                    name,
                    &json!({"status": {"operationState": {"phase": "Terminating", "finishedAt": null}}}),
                )
                .await
                .expect("simulate");
            get_app(cluster, apps_ns, name).await
        }
    };
    let mut state = ReconcileState { options: o.clone() };
    let app = stuck().await;
    reconcile_once(&cluster, &app, SystemTime::now(), &mut state)
        .await
        .expect("reconcile");
    let ended = get_app(&cluster, &apps_ns, &name).await;
    assert_eq!(op_field(&ended, "phase"), "Failed");
    assert_eq!(op_field(&ended, "message"), "Operation terminated");
    assert!(!op_field(&ended, "finishedAt").is_empty());
    // Without a controller, a manual sync ends it too, then runs.
    let app = stuck().await;
    let out = sync_app(
        &cluster,
        &app,
        &o,
        InitiatedBy::user("bob"),
        SystemTime::now(),
    );
    let play = async {
        wait_message(&cluster, &apps_ns, &name, |m| m.starts_with("waiting for")).await;
        assign_lb(&cluster, &dest, "front").await;
    };
    let (out, ()) = tokio::join!(out, play);
    let out = out.expect("sync");
    assert!(out.succeeded(), "{}", out.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wave_waits_for_the_previous_waves_health() {
    let Some(cluster) = testbed("wave_health").await else {
        return;
    };
    let files = [
        ("app/lb.json", lb_service("front", "0")),
        (
            "app/after.json",
            configmap("after", json!({"argocd.argoproj.io/sync-wave": "1"})),
        ),
    ];
    let (apps_ns, dest, name) = setup(&cluster, "wavehealth", &files, json!({})).await;
    let app = get_app(&cluster, &apps_ns, &name).await;
    let o = opts();
    let sync = sync_app(
        &cluster,
        &app,
        &o,
        InitiatedBy::user("alice"),
        SystemTime::now(),
    );
    let play = async {
        let m = wait_message(&cluster, &apps_ns, &name, |m| m.starts_with("waiting for")).await;
        assert_eq!(m, "waiting for healthy state of /Service/front");
        // Wave 1 has not started while wave 0 is Progressing.
        assert!(
            get(&cluster, "", "ConfigMap", &dest, "after")
                .await
                .is_none()
        );
        assert!(history(&get_app(&cluster, &apps_ns, &name).await).is_empty());
        assign_lb(&cluster, &dest, "front").await;
    };
    let (out, ()) = tokio::join!(sync, play);
    let out = out.expect("sync");
    assert!(out.succeeded(), "{}", out.message);
    // No hooks: the last wave is not waited for.
    assert_eq!(out.message, "successfully synced (no more tasks)");
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "after")
            .await
            .is_some()
    );
    let stored = get_app(&cluster, &apps_ns, &name).await;
    assert_eq!(op_field(&stored, "phase"), "Succeeded");
    assert_eq!(history(&stored).len(), 1);

    // A Degraded resource fails its wave: the next wave never starts.
    let files = [
        (
            "app/job.json",
            job(json!({"name": "batch", "annotations": {"argocd.argoproj.io/sync-wave": "0"}})),
        ),
        (
            "app/after.json",
            configmap("after", json!({"argocd.argoproj.io/sync-wave": "1"})),
        ),
    ];
    let (apps_ns, dest, name) = setup(&cluster, "wavedegraded", &files, json!({})).await;
    let app = get_app(&cluster, &apps_ns, &name).await;
    let sync = sync_app(
        &cluster,
        &app,
        &o,
        InitiatedBy::user("alice"),
        SystemTime::now(),
    );
    let play = async {
        wait_message(&cluster, &apps_ns, &name, |m| m.contains("batch/Job/batch")).await;
        finish_job(&cluster, &dest, "batch", false).await;
    };
    let (out, ()) = tokio::join!(sync, play);
    let out = out.expect("sync");
    assert!(!out.succeeded());
    assert!(
        out.message
            .starts_with("one or more synchronization tasks completed unsuccessfully")
            && out.message.contains("backoff limit"),
        "{}",
        out.message
    );
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "after")
            .await
            .is_none()
    );
    assert!(history(&get_app(&cluster, &apps_ns, &name).await).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hooks_run_in_their_phases_and_follow_delete_policies() {
    let Some(cluster) = testbed("hooks").await else {
        return;
    };
    let files = [
        (
            "app/migrate.json",
            job(json!({"generateName": "migrate-", "annotations": {
                "argocd.argoproj.io/hook": "PreSync",
                "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"}})),
        ),
        ("app/web.json", configmap("web", json!({}))),
        (
            "app/notify.json",
            configmap("notify", json!({"argocd.argoproj.io/hook": "PostSync"})),
        ),
        (
            "app/failed.json",
            configmap("on-failure", json!({"argocd.argoproj.io/hook": "SyncFail"})),
        ),
    ];
    let (apps_ns, dest, name) = setup(&cluster, "hooks", &files, json!({})).await;
    let app = get_app(&cluster, &apps_ns, &name).await;
    let o = opts();
    let sync = sync_app(
        &cluster,
        &app,
        &o,
        InitiatedBy::user("alice"),
        SystemTime::now(),
    );
    let play = async {
        let m = wait_message(&cluster, &apps_ns, &name, |m| {
            m.starts_with("waiting for completion of hook")
        })
        .await;
        assert!(
            m.starts_with("waiting for completion of hook batch/Job/migrate-"),
            "{m}"
        );
        // PreSync runs before the Sync phase: nothing else exists yet.
        assert!(get(&cluster, "", "ConfigMap", &dest, "web").await.is_none());
        let jobs = jobs_named(&cluster, &dest, "migrate-").await;
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        finish_job(&cluster, &dest, &jobs[0], true).await;
    };
    let (out, ()) = tokio::join!(sync, play);
    let out = out.expect("sync");
    assert!(out.succeeded(), "{}", out.message);
    assert_eq!(out.message, "successfully synced (all tasks run)");
    let r = results(&out);
    assert!(
        r[0].0.starts_with("migrate-") && r[0].1 == "PreSync" && r[0].3 == Some("Succeeded"),
        "{r:?}"
    );
    assert_eq!(r[1], ("web".to_string(), "Sync", "Synced", None));
    assert_eq!(
        r[2],
        (
            "notify".to_string(),
            "PostSync",
            "Synced",
            Some("Succeeded")
        )
    );
    assert_eq!(
        r.len(),
        3,
        "the SyncFail hook runs only when the sync fails: {r:?}"
    );
    // HookSucceeded: the Job is deleted; the PostSync hook (BeforeHookCreation) stays.
    assert!(jobs_named(&cluster, &dest, "migrate-").await.is_empty());
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "notify")
            .await
            .is_some()
    );
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "on-failure")
            .await
            .is_none()
    );
    // Hooks are neither in the app's resources nor in its sync status.
    let stored = get_app(&cluster, &apps_ns, &name).await;
    let listed: Vec<&str> = stored["status"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(listed, ["web"]);
    assert_eq!(common::sync_status(&stored), "Synced");
    let hooks: Vec<(&str, &str)> = stored
        .pointer("/status/operationState/syncResult/resources")
        .and_then(Value::as_array)
        .expect("syncResult")
        .iter()
        .filter_map(|r| Some((r["hookType"].as_str()?, r["hookPhase"].as_str()?)))
        .collect();
    assert_eq!(hooks, [("PreSync", "Succeeded"), ("PostSync", "Succeeded")]);

    // A second sync: a new Job name (generateName), the PostSync ConfigMap re-created; this
    // time the PreSync Job fails: the sync fails, the SyncFail hook runs, nothing else does.
    let first_job_name = r[0].0.clone();
    let app = get_app(&cluster, &apps_ns, &name).await;
    let started = SystemTime::now() + Duration::from_secs(2);
    let sync = sync_app(&cluster, &app, &o, InitiatedBy::user("bob"), started);
    let play = async {
        wait_message(&cluster, &apps_ns, &name, |m| {
            m.starts_with("waiting for completion of hook")
        })
        .await;
        let jobs = jobs_named(&cluster, &dest, "migrate-").await;
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        assert_ne!(jobs[0], first_job_name);
        finish_job(&cluster, &dest, &jobs[0], false).await;
    };
    let (out, ()) = tokio::join!(sync, play);
    let out = out.expect("sync");
    assert!(!out.succeeded());
    assert!(out.message.contains("backoff limit"), "{}", out.message);
    let r = results(&out);
    assert_eq!(
        r.last().map(|x| (x.0.as_str(), x.1, x.3)),
        Some(("on-failure", "SyncFail", Some("Succeeded"))),
        "{r:?}"
    );
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "on-failure")
            .await
            .is_some()
    );
    // HookSucceeded only: the failed Job stays for inspection.
    assert_eq!(jobs_named(&cluster, &dest, "migrate-").await.len(), 1);
    assert_eq!(history(&get_app(&cluster, &apps_ns, &name).await).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_interrupted_operation_resumes_without_losing_or_duplicating_history() {
    let Some(cluster) = testbed("resume").await else {
        return;
    };
    let files = [
        (
            "app/migrate.json",
            job(json!({"generateName": "migrate-", "annotations": {
                "argocd.argoproj.io/hook": "PreSync",
                "argocd.argoproj.io/hook-delete-policy": "HookFailed"}})),
        ),
        ("app/lb.json", lb_service("front", "0")),
        (
            "app/after.json",
            configmap("after", json!({"argocd.argoproj.io/sync-wave": "1"})),
        ),
    ];
    let policy = json!({"automated": {"prune": true, "selfHeal": true}});
    let (apps_ns, dest, name) = setup(&cluster, "resume", &files, policy).await;
    let app = get_app(&cluster, &apps_ns, &name).await;
    let mut state = ReconcileState { options: opts() };
    let t0 = SystemTime::now();

    // The controller starts the automated sync and "crashes" (the future is dropped) while
    // the PreSync Job runs.
    let interrupted = tokio::time::timeout(
        DEADLINE,
        async {
            let pass = reconcile_once(&cluster, &app, t0, &mut state);
            let watch = wait_message(&cluster, &apps_ns, &name, |m| m.starts_with("waiting for completion of hook"));
            tokio::select! {
                r = pass => panic!("the pass finished before the hook completed: {:?}", r.map(|o| o.status.sync)),
                m = watch => m,
            }
        },
    )
    .await
    .expect("the operation reached the hook");
    assert!(interrupted.contains("batch/Job/migrate-"), "{interrupted}");
    let stored = get_app(&cluster, &apps_ns, &name).await;
    assert_eq!(op_field(&stored, "phase"), "Running");
    let started_at = op_field(&stored, "startedAt").to_string();
    assert!(history(&stored).is_empty());
    let jobs = jobs_named(&cluster, &dest, "migrate-").await;
    assert_eq!(jobs.len(), 1);

    // A manual sync refuses to start a second operation.
    let refused = sync_app(
        &cluster,
        &stored,
        &opts(),
        InitiatedBy::user("alice"),
        SystemTime::now(),
    )
    .await
    .expect_err("an operation is running");
    assert!(
        refused.to_string().contains("already in progress"),
        "{refused}"
    );

    // The Job finishes while no controller runs. A new controller pass resumes the same
    // operation: no second Job, then it waits for wave 0's health, and crashes again there.
    finish_job(&cluster, &dest, &jobs[0], true).await;
    let mut state = ReconcileState { options: opts() };
    let again = get_app(&cluster, &apps_ns, &name).await;
    tokio::time::timeout(DEADLINE, async {
        let pass = reconcile_once(&cluster, &again, SystemTime::now(), &mut state);
        let watch = wait_message(&cluster, &apps_ns, &name, |m| m == "waiting for healthy state of /Service/front");
        tokio::select! {
            r = pass => panic!("the pass finished before the Service was healthy: {:?}", r.map(|o| o.status.sync)),
            _ = watch => {}
        }
    })
    .await
    .expect("the resumed operation reached wave 0");
    assert_eq!(jobs_named(&cluster, &dest, "migrate-").await, jobs);
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "after")
            .await
            .is_none()
    );

    // Third controller: the Service gets its address; the operation completes once.
    assign_lb(&cluster, &dest, "front").await;
    let again = get_app(&cluster, &apps_ns, &name).await;
    let out = reconcile_once(&cluster, &again, SystemTime::now(), &mut state)
        .await
        .expect("pass");
    assert!(out.resumed);
    let sync = out.sync.expect("the resumed sync");
    assert!(sync.succeeded(), "{}", sync.message);
    assert_eq!(sync.message, "successfully synced (all tasks run)");
    let stored = get_app(&cluster, &apps_ns, &name).await;
    let h = history(&stored);
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0]["deployStartedAt"], started_at.as_str());
    assert_eq!(h[0]["initiatedBy"]["automated"], true);
    assert_eq!(op_field(&stored, "phase"), "Succeeded");
    assert_eq!(op_field(&stored, "startedAt"), started_at);
    assert_eq!(
        jobs_named(&cluster, &dest, "migrate-").await,
        jobs,
        "HookFailed keeps a succeeded Job"
    );
    assert!(
        get(&cluster, "", "ConfigMap", &dest, "after")
            .await
            .is_some()
    );

    // Nothing is left to resume: the next pass does not sync again (the revision is synced).
    let again = get_app(&cluster, &apps_ns, &name).await;
    assert!(
        resume_app(&cluster, &again, &opts(), SystemTime::now())
            .await
            .expect("resume")
            .is_none()
    );
    let out = reconcile_once(&cluster, &again, SystemTime::now(), &mut state)
        .await
        .expect("pass");
    assert!(out.sync.is_none(), "{:?}", out.decision);
    assert_eq!(history(&get_app(&cluster, &apps_ns, &name).await).len(), 1);
}
