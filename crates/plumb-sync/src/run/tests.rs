//! The runner's logic on the in-memory cluster ([`plumb_cluster::memory::MemoryCluster`]):
//! waves and phases in order, each after the earlier one is healthy; the `allowEmpty` guard;
//! a failed apply; an operation resumed after a stop, and one terminated; `Replace=true`,
//! `Prune=false`, `CreateNamespace=true`, the dry run; a deleted Application's cascade;
//! retries counted in `retryCount` (a plain directory's keyed by its content digest); home and
//! destination as two clusters. Sources are real git repositories in temporary
//! directories; nothing sleeps (held objects are released after a number of reads, and a
//! stop is the sync's future dropped once the request log shows where it is).

use super::test_objects as objects;
use super::*;
use crate::request::SyncRequest;
use crate::tests::key;
use plumb_cluster::memory::{MemoryCluster, Verb};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

const APPS: &str = "plumb";
const DEST: &str = "prod";
const APP: &str = "shop";

fn cm_key(name: &str) -> ResourceKey {
    key("", "ConfigMap", DEST, name)
}

fn app_key() -> ResourceKey {
    key("plumb.dev", "Application", APPS, APP)
}

fn configmap(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "annotations": annotations}, "data": {"k": name}})
}

fn deployment(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "registry.invalid/web:1"}]}}}})
}

fn job(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "registry.invalid/migrate:1"}]}}}})
}

fn wave(n: i64) -> Value {
    json!({"argocd.argoproj.io/sync-wave": n.to_string()})
}

fn hook(phase: &str) -> Value {
    json!({"argocd.argoproj.io/hook": phase})
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=plumb test",
            "-c",
            "user.email=test@plumb.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A git repository whose `app/` directory holds the manifests (`name.json` each).
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new(objects: &[Value]) -> Repo {
        let repo = Repo {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        git(repo.dir.path(), &["init", "-q"]);
        std::fs::create_dir_all(repo.dir.path().join("app")).expect("app dir");
        // Keeps `app/` in git when every manifest is gone.
        std::fs::write(repo.dir.path().join("app/README.md"), "the app\n").expect("write");
        repo.commit(objects, &[]);
        repo
    }

    /// Writes `objects`, removes the manifests `removed`, commits.
    fn commit(&self, objects: &[Value], removed: &[&str]) {
        for obj in objects {
            let name = obj["metadata"]["name"].as_str().expect("name");
            let text = serde_json::to_string_pretty(obj).expect("json");
            std::fs::write(self.dir.path().join(format!("app/{name}.json")), text).expect("write");
        }
        for name in removed {
            std::fs::remove_file(self.dir.path().join(format!("app/{name}.json"))).expect("remove");
        }
        git(self.dir.path(), &["add", "-A"]);
        git(self.dir.path(), &["commit", "-q", "-m", "change"]);
    }
}

/// A cluster with the Application (`spec.syncPolicy` = `policy`) and its namespaces.
fn setup(objects: &[Value], policy: Value) -> (MemoryCluster, Repo) {
    let repo = Repo::new(objects);
    let cluster = MemoryCluster::new();
    for ns in [APPS, DEST] {
        cluster
            .put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .expect("namespace");
    }
    cluster
        .put(objects::application(
            APP,
            APPS,
            &format!("file://{}", repo.dir.path().display()),
            "app",
            DEST,
            policy,
        ))
        .expect("application");
    (cluster, repo)
}

fn app(cluster: &MemoryCluster) -> Value {
    cluster.object(&app_key()).expect("the Application")
}

fn opts() -> RunOptions {
    RunOptions {
        poll_interval: Duration::from_millis(1),
        wave_timeout: Duration::from_secs(60),
        prune_wait: Duration::from_secs(5),
        ..RunOptions::default()
    }
}

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// The writes to the app's objects (the Application's own status writes left out), as
/// `verb name`.
fn object_writes(cluster: &MemoryCluster) -> Vec<String> {
    cluster
        .writes()
        .into_iter()
        .filter(|r| r.key.kind != "Application")
        .map(|r| format!("{} {}", r.verb.as_str(), r.key.name))
        .collect()
}

/// Where `verb` on `name` is in the log.
fn position(cluster: &MemoryCluster, verb: Verb, name: &str) -> usize {
    let log = cluster.log();
    log.iter()
        .position(|r| r.verb == verb && r.key.name == name)
        .unwrap_or_else(|| {
            let all: Vec<String> = log.iter().map(ToString::to_string).collect();
            panic!("no {} of {name} in {all:#?}", verb.as_str())
        })
}

fn op_field(app: &Value, field: &str) -> String {
    app.pointer(&format!("/status/operationState/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn history(app: &Value) -> Vec<Value> {
    app.pointer("/status/history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn result<'a>(out: &'a SyncOutcome, name: &str) -> &'a ResourceResult {
    out.results
        .iter()
        .find(|r| r.key.name == name)
        .unwrap_or_else(|| panic!("no result for {name}: {:?}", out.results))
}

async fn sync(cluster: &MemoryCluster, opts: &RunOptions) -> SyncOutcome {
    sync_app(
        cluster,
        &app(cluster),
        opts,
        InitiatedBy::user("alice"),
        now(),
    )
    .await
    .expect("sync runs")
}

/// PreSync hook, waves 0 to 2, PostSync hook: each step starts once the one before is done
/// (the hook complete, the Deployment healthy), in that order.
#[tokio::test]
async fn waves_and_phases_run_in_order_each_after_the_earlier_is_healthy() {
    let (cluster, _repo) = setup(
        &[
            job("migrate", hook("PreSync")),
            configmap("config", wave(0)),
            deployment("web", wave(1)),
            configmap("after", wave(2)),
            configmap("notify", hook("PostSync")),
        ],
        json!({}),
    );
    // The Deployment rolls out slowly: Progressing for its first three reads.
    cluster.hold_for_reads(key("apps", "Deployment", DEST, "web"), json!({}), 3);
    let out = sync(&cluster, &opts()).await;
    assert!(out.succeeded(), "{}", out.message);
    assert_eq!(out.message, "successfully synced (all tasks run)");
    assert_eq!(
        object_writes(&cluster),
        [
            "apply migrate",
            "apply config",
            "apply web",
            "apply after",
            "apply notify"
        ]
    );
    // The hook was seen complete before wave 0 began.
    let log = cluster.log();
    let between = |from: usize, to: usize, name: &str| {
        log[from..to]
            .iter()
            .filter(|r| r.verb == Verb::Get && r.key.name == name)
            .count()
    };
    let (migrate, config) = (
        position(&cluster, Verb::Apply, "migrate"),
        position(&cluster, Verb::Apply, "config"),
    );
    assert!(between(migrate, config, "migrate") >= 1);
    // The Deployment was read until healthy (three reads Progressing, the fourth Healthy)
    // before wave 2 was applied.
    let (web, after) = (
        position(&cluster, Verb::Apply, "web"),
        position(&cluster, Verb::Apply, "after"),
    );
    assert_eq!(between(web, after, "web"), 4);
    let phases: Vec<(&str, &str, i64)> = out
        .results
        .iter()
        .map(|r| (r.key.name.as_str(), r.phase, r.wave))
        .collect();
    assert_eq!(
        phases,
        [
            ("migrate", "PreSync", 0),
            ("config", "Sync", 0),
            ("web", "Sync", 1),
            ("after", "Sync", 2),
            ("notify", "PostSync", 0)
        ]
    );
    let stored = app(&cluster);
    assert_eq!(op_field(&stored, "phase"), "Succeeded");
    assert_eq!(history(&stored).len(), 1);
    assert_eq!(stored["status"]["sync"]["status"], "Synced");
    assert_eq!(stored["status"]["health"]["status"], "Healthy");
}

/// A wave that never becomes healthy: the next wave and the PostSync hook are never applied;
/// the operation fails when the wave timeout is reached.
#[tokio::test]
async fn a_later_wave_does_not_start_while_an_earlier_one_is_progressing() {
    let (cluster, _repo) = setup(
        &[
            deployment("web", wave(0)),
            configmap("after", wave(1)),
            configmap("notify", hook("PostSync")),
        ],
        json!({}),
    );
    cluster.hold(key("apps", "Deployment", DEST, "web"), json!({}));
    let o = RunOptions {
        wave_timeout: Duration::from_millis(30),
        ..opts()
    };
    let out = sync(&cluster, &o).await;
    assert!(!out.succeeded());
    assert!(
        out.message
            .contains("waiting for healthy state of apps/Deployment/web"),
        "{}",
        out.message
    );
    assert_eq!(object_writes(&cluster), ["apply web"]);
    assert!(cluster.object(&cm_key("after")).is_none());
    let stored = app(&cluster);
    assert_eq!(op_field(&stored, "phase"), "Failed");
    assert!(
        history(&stored).is_empty(),
        "a failed sync records no history"
    );
}

/// The API server refuses one object: the operation fails naming it, later waves are not
/// applied, the SyncFail hook runs, no history entry is written.
#[tokio::test]
async fn a_failed_apply_fails_the_operation_and_runs_sync_fail_hooks() {
    let (cluster, _repo) = setup(
        &[
            configmap("config", wave(0)),
            configmap("bad", wave(1)),
            configmap("after", wave(2)),
            configmap("on-failure", hook("SyncFail")),
            configmap("notify", hook("PostSync")),
        ],
        json!({}),
    );
    cluster.fail(
        Verb::Apply,
        cm_key("bad"),
        ClusterError::Api {
            code: 422,
            message: "ConfigMap \"bad\" is invalid: data[k]: Invalid value".into(),
        },
    );
    let out = sync(&cluster, &opts()).await;
    assert!(!out.succeeded());
    assert!(
        out.message.contains("/ConfigMap prod/bad"),
        "{}",
        out.message
    );
    assert!(out.message.contains("is invalid"), "{}", out.message);
    assert_eq!(result(&out, "bad").status, "SyncFailed");
    assert_eq!(result(&out, "on-failure").hook_phase, Some("Succeeded"));
    assert_eq!(
        object_writes(&cluster),
        ["apply config", "apply bad", "apply on-failure"]
    );
    assert!(cluster.object(&cm_key("bad")).is_none());
    assert!(cluster.object(&cm_key("on-failure")).is_some());
    let stored = app(&cluster);
    assert_eq!(op_field(&stored, "phase"), "Failed");
    assert!(op_field(&stored, "message").contains("/ConfigMap prod/bad"));
    assert!(history(&stored).is_empty());
    assert_eq!(stored["status"]["sync"]["status"], "OutOfSync");
}

/// A sharded replica's fence refuses an apply mid-run (its Lease's renew deadline passed
/// between two writes): the run stops with that error and the operation stays `Running` — not
/// `Failed`, which would need a write the fence forbids and, landing once the Lease is renewed,
/// would have an automated sync start it all over. The next pass resumes it: what the first
/// run applied is not applied again, the rest is, one history entry.
#[tokio::test]
async fn a_fenced_apply_stops_the_run_and_the_operation_is_resumed_not_failed() {
    let (cluster, _repo) = setup(
        &[
            configmap("config", wave(0)),
            configmap("late", wave(1)),
            configmap("notify", hook("SyncFail")),
        ],
        json!({"automated": {}}),
    );
    cluster.fail_times(
        Verb::Apply,
        cm_key("late"),
        crate::controller::shard::fenced(
            "r1 has not renewed its Lease within its renew deadline: it writes nothing until it does"
                .into(),
        ),
        1,
    );
    let mut state = ReconcileState { options: opts() };
    let before = app(&cluster);
    let err = reconcile_once(&cluster, &before, now(), &mut state)
        .await
        .expect_err("a fenced write stops the run");
    assert!(
        err.to_string()
            .contains("fenced: r1 has not renewed its Lease"),
        "{err}"
    );
    let stopped = app(&cluster);
    assert_eq!(op_field(&stopped, "phase"), "Running");
    assert!(history(&stopped).is_empty());
    // No SyncFail hook: the sync did not fail, it was stopped.
    assert_eq!(object_writes(&cluster), ["apply config", "apply late"]);

    cluster.clear_log();
    let out = reconcile_once(&cluster, &stopped, now(), &mut state)
        .await
        .expect("reconcile");
    assert!(out.resumed);
    let sync = out.sync.expect("the resumed operation");
    assert!(sync.succeeded(), "{}", sync.message);
    assert_eq!(object_writes(&cluster), ["apply late"]);
    let done = app(&cluster);
    assert_eq!(op_field(&done, "phase"), "Succeeded");
    assert_eq!(history(&done).len(), 1);
}

/// Every object removed from git: an automated sync with prune refuses to delete everything
/// without `allowEmpty`, and prunes with it.
#[tokio::test]
async fn prune_of_everything_needs_allow_empty() {
    for allow_empty in [false, true] {
        let policy = json!({"automated": {"prune": true, "allowEmpty": allow_empty}});
        let (cluster, repo) = setup(
            &[configmap("a", json!({})), configmap("b", json!({}))],
            policy,
        );
        let mut state = ReconcileState { options: opts() };
        let first = reconcile_once(&cluster, &app(&cluster), now(), &mut state)
            .await
            .expect("reconcile");
        let sync = first.sync.expect("an automated sync");
        assert!(sync.succeeded(), "{}", sync.message);
        assert!(cluster.object(&cm_key("a")).is_some());

        repo.commit(&[], &["a", "b"]);
        cluster.clear_log();
        let later = now() + Duration::from_secs(60);
        let out = reconcile_once(&cluster, &app(&cluster), later, &mut state)
            .await
            .expect("reconcile");
        let sync = out.sync.expect("an automated sync of the new revision");
        let stored = app(&cluster);
        if allow_empty {
            assert!(sync.succeeded(), "{}", sync.message);
            assert_eq!(object_writes(&cluster), ["delete a", "delete b"]);
            assert_eq!(result(&sync, "a").status, "Pruned");
            assert!(cluster.object(&cm_key("a")).is_none());
            assert!(cluster.object(&cm_key("b")).is_none());
            assert_eq!(history(&stored).len(), 2);
            assert_eq!(stored["status"]["sync"]["status"], "Synced");
        } else {
            assert!(!sync.succeeded());
            assert!(sync.message.contains("allowEmpty"), "{}", sync.message);
            assert_eq!(object_writes(&cluster), Vec::<String>::new());
            assert!(cluster.object(&cm_key("a")).is_some());
            assert!(cluster.object(&cm_key("b")).is_some());
            assert_eq!(op_field(&stored, "phase"), "Failed");
            assert_eq!(history(&stored).len(), 1);
        }
    }
}

/// Waits (yielding, no clock) until `done` holds.
async fn until(mut done: impl FnMut() -> bool) {
    while !done() {
        tokio::task::yield_now().await;
    }
}

/// Runs `pass` until the runner, having applied `held`, reads it back to wait for it (a hook's
/// completion, a wave's health), then drops the pass there: a controller stopped mid-sync.
async fn stop_when_waiting_for<T: std::fmt::Debug>(
    cluster: &MemoryCluster,
    pass: impl std::future::Future<Output = T>,
    held: &ResourceKey,
) {
    let waiting = until(|| {
        let log = cluster.log();
        log.iter()
            .position(|r| r.verb == Verb::Apply && r.key == *held)
            .is_some_and(|applied| {
                log[applied..]
                    .iter()
                    .any(|r| r.verb == Verb::Get && r.key == *held)
            })
    });
    tokio::select! {
        r = pass => panic!("the pass ended before {} was done: {r:?}", held.name),
        () = waiting => {}
    }
}

/// A controller stops while the PreSync hook runs (its future is dropped): the Application
/// shows the operation `Running`. The next pass resumes it: the hook is not created again,
/// the waves run, one history entry records the operation with its original start.
#[tokio::test]
async fn an_operation_stopped_midway_resumes_without_redoing_done_hooks() {
    let (cluster, _repo) = setup(
        &[
            job("migrate", hook("PreSync")),
            configmap("config", wave(0)),
            configmap("after", wave(1)),
        ],
        json!({"automated": {"prune": true}}),
    );
    let migrate = key("batch", "Job", DEST, "migrate");
    cluster.hold(migrate.clone(), json!({}));
    let mut state = ReconcileState { options: opts() };
    let started = now();
    let app_before = app(&cluster);
    let pass = reconcile_once(&cluster, &app_before, started, &mut state);
    // Stopped once the runner reads the hook it created (it waits for its completion).
    stop_when_waiting_for(&cluster, pass, &migrate).await;
    let stopped = app(&cluster);
    assert_eq!(op_field(&stopped, "phase"), "Running");
    assert_eq!(
        op_field(&stopped, "message"),
        "waiting for completion of hook batch/Job/migrate"
    );
    assert!(history(&stopped).is_empty());
    assert_eq!(object_writes(&cluster), ["apply migrate"]);

    // The Job completes while no controller runs; the next pass resumes the operation.
    cluster.release(&migrate);
    cluster.clear_log();
    let later = started + Duration::from_secs(30);
    let out = reconcile_once(&cluster, &stopped, later, &mut state)
        .await
        .expect("reconcile");
    assert!(out.resumed);
    let sync = out.sync.expect("the resumed operation");
    assert!(sync.succeeded(), "{}", sync.message);
    assert_eq!(object_writes(&cluster), ["apply config", "apply after"]);
    assert_eq!(result(&sync, "migrate").hook_phase, Some("Succeeded"));
    let done = app(&cluster);
    assert_eq!(op_field(&done, "phase"), "Succeeded");
    assert_eq!(
        op_field(&done, "startedAt"),
        op_field(&stopped, "startedAt")
    );
    let h = history(&done);
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(
        h[0]["deployStartedAt"],
        op_field(&stopped, "startedAt").as_str()
    );
    assert_eq!(h[0]["initiatedBy"]["automated"], true);

    // Nothing is left to resume, and the synced revision is not synced again.
    cluster.clear_log();
    let out = reconcile_once(&cluster, &done, later, &mut state)
        .await
        .expect("reconcile");
    assert!(!out.resumed);
    assert!(out.sync.is_none(), "{:?}", out.decision);
    assert_eq!(object_writes(&cluster), Vec::<String>::new());
}

/// A run stops after applying wave 0, while it waits for the wave's health (a controller
/// stopped, or a sharded replica fenced past its renew deadline: the status write that would
/// have recorded the wave never lands). The resumed operation applies nothing already as git
/// declares it — no second write of wave 0 — yet still waits for its health before wave 1;
/// what differs by then is applied again.
#[tokio::test]
async fn a_resumed_operation_does_not_apply_again_what_is_in_sync() {
    let (cluster, _repo) = setup(
        &[
            configmap("config", wave(0)),
            deployment("web", wave(0)),
            configmap("drifted", wave(0)),
            configmap("after", wave(1)),
        ],
        json!({"automated": {}}),
    );
    let web = key("apps", "Deployment", DEST, "web");
    cluster.hold(web.clone(), json!({}));
    let mut state = ReconcileState { options: opts() };
    let started = now();
    let app_before = app(&cluster);
    let pass = reconcile_once(&cluster, &app_before, started, &mut state);
    // Stopped once wave 0 is applied and the runner reads the Deployment for its health.
    stop_when_waiting_for(&cluster, pass, &web).await;
    let stopped = app(&cluster);
    assert_eq!(op_field(&stopped, "phase"), "Running");
    let mut first = object_writes(&cluster);
    first.sort();
    assert_eq!(first, ["apply config", "apply drifted", "apply web"]);

    // While no run holds the app, someone changes one of wave 0's objects.
    let mut drifted = cluster.object(&cm_key("drifted")).expect("applied");
    drifted["data"] = json!({"changed": "by hand"});
    cluster.put(drifted).expect("put");
    cluster.clear_log();
    // The resumed run waits for the Deployment before wave 1, as the first run did.
    let later = started + Duration::from_secs(30);
    let resume = reconcile_once(&cluster, &stopped, later, &mut state);
    let web_waited = until(|| {
        cluster
            .log()
            .iter()
            .any(|r| r.verb == Verb::Get && r.key == web)
    });
    let resume = async {
        tokio::pin!(resume);
        tokio::select! {
            r = &mut resume => panic!("wave 1 ran before wave 0 was healthy: {:?}", r.map(|o| o.sync)),
            () = web_waited => {}
        }
        assert!(cluster.object(&cm_key("after")).is_none(), "wave 1 started");
        cluster.release(&web);
        resume.await
    };
    let out = resume.await.expect("reconcile");
    assert!(out.resumed);
    let sync = out.sync.expect("the resumed operation");
    assert!(sync.succeeded(), "{}", sync.message);
    assert_eq!(object_writes(&cluster), ["apply drifted", "apply after"]);
    for name in ["config", "web"] {
        let r = result(&sync, name);
        assert_eq!(
            (r.status, r.message.as_str()),
            ("Synced", "unchanged (in sync when the operation resumed)"),
            "{name}"
        );
    }
    assert_eq!(
        result(&sync, "drifted").message,
        "configmap serverside-applied"
    );
    let done = app(&cluster);
    assert_eq!(op_field(&done, "phase"), "Succeeded");
    assert_eq!(history(&done).len(), 1);
}

/// `Replace=true` is a PUT, `Prune=false` keeps an object git dropped, and a manual sync
/// prunes only when asked.
#[tokio::test]
async fn replace_and_prune_false() {
    let (cluster, repo) = setup(
        &[
            configmap(
                "replaced",
                json!({"argocd.argoproj.io/sync-options": "Replace=true"}),
            ),
            configmap(
                "kept",
                json!({"argocd.argoproj.io/sync-options": "Prune=false"}),
            ),
            configmap("dropped", json!({})),
        ],
        json!({}),
    );
    let out = sync(&cluster, &opts()).await;
    assert!(out.succeeded(), "{}", out.message);
    assert_eq!(
        object_writes(&cluster),
        ["create replaced", "apply dropped", "apply kept"],
        "Replace=true creates what does not exist (at once; server-side applies go as one batch)"
    );
    repo.commit(
        &[configmap(
            "replaced",
            json!({"argocd.argoproj.io/sync-options": "Replace=true", "changed": "yes"}),
        )],
        &["kept", "dropped"],
    );
    cluster.clear_log();
    let request = SyncRequest {
        prune: true,
        ..SyncRequest::default()
    };
    let out = sync_app_with(
        &cluster,
        &app(&cluster),
        &opts(),
        &request,
        InitiatedBy::user("alice"),
        now(),
    )
    .await
    .expect("sync");
    assert!(out.succeeded(), "{}", out.message);
    assert_eq!(
        object_writes(&cluster),
        ["delete dropped", "replace replaced"]
    );
    assert_eq!(result(&out, "kept").status, "PruneSkipped");
    assert!(cluster.object(&cm_key("kept")).is_some());
    assert_eq!(
        cluster.object(&cm_key("replaced")).expect("replaced")["metadata"]["annotations"]["changed"],
        "yes"
    );
}

/// Without `CreateNamespace=true` the apply into a missing namespace fails; with it the
/// namespace is created first.
#[tokio::test]
async fn create_namespace_creates_the_destination_first() {
    for create in [false, true] {
        let policy = if create {
            json!({"syncOptions": ["CreateNamespace=true"]})
        } else {
            json!({})
        };
        let (cluster, _repo) = setup(&[configmap("config", json!({}))], policy);
        let mut app_obj = app(&cluster);
        app_obj["spec"]["destination"]["namespace"] = json!("fresh");
        let app_obj = cluster.put(app_obj).expect("application");
        let out = sync_app(
            &cluster,
            &app_obj,
            &opts(),
            InitiatedBy::user("alice"),
            now(),
        )
        .await
        .expect("sync");
        if create {
            assert!(out.succeeded(), "{}", out.message);
            assert_eq!(object_writes(&cluster), ["create fresh", "apply config"]);
        } else {
            assert!(!out.succeeded());
            assert!(
                out.message.contains("namespaces \"fresh\" not found"),
                "{}",
                out.message
            );
        }
    }
}

/// A dry run applies nothing and writes no status.
#[tokio::test]
async fn a_dry_run_writes_nothing() {
    let (cluster, _repo) = setup(&[configmap("config", json!({}))], json!({}));
    let request = SyncRequest {
        dry_run: true,
        ..SyncRequest::default()
    };
    let out = sync_app_with(
        &cluster,
        &app(&cluster),
        &opts(),
        &request,
        InitiatedBy::user("alice"),
        now(),
    )
    .await
    .expect("dry run");
    assert!(out.succeeded(), "{}", out.message);
    assert!(cluster.writes().is_empty(), "{:?}", cluster.writes());
    assert!(
        cluster
            .log()
            .iter()
            .any(|r| r.verb == Verb::DryRunApply && r.key.name == "config")
    );
    assert!(cluster.object(&cm_key("config")).is_none());
}

/// What the in-memory cluster creates is Healthy for plumb-health (the runner's waits rely
/// on it), and a held object is not.
#[tokio::test]
async fn memory_objects_are_healthy_unless_held() {
    let cluster = MemoryCluster::new();
    let objects = [
        deployment("web", json!({})),
        job("once", json!({})),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"replicas": 3}}),
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {}}),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
            "spec": {"replicas": 1}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"restartPolicy": "Always"}}),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "pvc"},
            "spec": {}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb"},
            "spec": {"type": "LoadBalancer"}}),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "in"},
            "spec": {}}),
    ];
    for answer in cluster.apply(objects.to_vec(), FIELD_MANAGER, true).await {
        let obj = answer.expect("applied");
        let health = plumb_health::assess(&obj).expect("a health check");
        assert_eq!(health.status, HealthStatus::Healthy, "{obj}");
    }
    let web = key("apps", "Deployment", "default", "web");
    cluster.hold(web.clone(), json!({}));
    let held = cluster.object(&web).expect("web");
    assert_eq!(
        plumb_health::assess(&held).map(|h| h.status),
        Some(HealthStatus::Progressing)
    );
}

/// `terminate-op` while a hook runs: the runner stops at its next poll, deletes the running
/// hook, ends the operation Failed "Operation terminated" and applies nothing more.
#[tokio::test]
async fn a_terminated_operation_stops_and_deletes_its_running_hook() {
    let (cluster, _repo) = setup(
        &[
            job("migrate", hook("PreSync")),
            configmap("config", wave(0)),
        ],
        json!({}),
    );
    let migrate = key("batch", "Job", DEST, "migrate");
    cluster.hold(migrate.clone(), json!({}));
    let o = opts();
    let run = sync(&cluster, &o);
    let stop = async {
        until(|| {
            cluster.log().iter().any(|r| r.verb == Verb::PatchStatus)
                && op_field(&app(&cluster), "message").starts_with("waiting for completion")
        })
        .await;
        terminate_operation(&cluster, &app(&cluster))
            .await
            .expect("terminate");
    };
    let (out, ()) = tokio::join!(run, stop);
    assert!(!out.succeeded());
    assert_eq!(out.message, "Operation terminated");
    assert_eq!(object_writes(&cluster), ["apply migrate", "delete migrate"]);
    assert!(cluster.object(&migrate).is_none());
    let stored = app(&cluster);
    assert_eq!(op_field(&stored, "phase"), "Failed");
    assert_eq!(op_field(&stored, "message"), "Operation terminated");
}

/// A deleted Application with the resources finalizer: one step per reconcile, the highest
/// wave first, the next once it is gone, then the finalizer goes (and the Application).
#[tokio::test]
async fn a_deleted_application_cascades_in_reverse_wave_order() {
    let (cluster, _repo) = setup(
        &[configmap("first", wave(0)), configmap("second", wave(1))],
        json!({}),
    );
    let out = sync(&cluster, &opts()).await;
    assert!(out.succeeded(), "{}", out.message);
    cluster
        .patch_application(
            APPS,
            APP,
            &json!({"metadata": {"finalizers": ["resources-finalizer.argocd.argoproj.io"]}}),
        )
        .await
        .expect("finalizer");
    cluster
        .delete_object(&app_key(), Propagation::Background)
        .await
        .expect("delete");
    cluster.clear_log();
    let mut steps = Vec::new();
    while let Some(current) = cluster.object(&app_key()) {
        assert!(steps.len() < 5, "{steps:?}");
        let step = finalize_deletion(&cluster, &current, &opts())
            .await
            .expect("finalize")
            .expect("being deleted");
        steps.push(step.message);
    }
    assert_eq!(
        steps,
        [
            "deleting 1 resource(s) of wave 1",
            "deleting 1 resource(s) of wave 0",
            "resources deleted; finalizer removed"
        ]
    );
    assert_eq!(object_writes(&cluster), ["delete second", "delete first"]);
}

// ---------------------------------------------------------------------------------------
// Projects and destinations (run/tenancy.rs)

/// Makes `cluster` serve AppProjects (plumb.dev), as the runner's tenancy checks read them.
pub(super) fn serve_projects(cluster: &MemoryCluster) {
    cluster.add_kind(plumb_cluster::ResourceInfo {
        group: "plumb.dev".into(),
        kind: "AppProject".into(),
        version: "v1alpha1".into(),
        versions: vec!["v1alpha1".into()],
        plural: "appprojects".into(),
        namespaced: true,
        verbs: [
            "get", "list", "watch", "create", "patch", "update", "delete",
        ]
        .map(String::from)
        .to_vec(),
        subresources: Vec::new(),
    });
}

fn project(cluster: &MemoryCluster, name: &str, spec: Value) {
    serve_projects(cluster);
    cluster
        .put(objects::app_project(name, APPS, spec))
        .expect("project");
}

fn set_spec(cluster: &MemoryCluster, field: &str, value: Value) {
    let mut a = app(cluster);
    a["spec"][field] = value;
    cluster.put(a).expect("application");
}

fn condition(app: &Value) -> (String, String) {
    let c = &app["status"]["conditions"][0];
    (
        c["type"].as_str().unwrap_or_default().to_string(),
        c["message"].as_str().unwrap_or_default().to_string(),
    )
}

/// Every request that is not a read of the tenancy checks (AppProject, Secret) or a write
/// of the Application: what the operation itself asked of the cluster.
fn object_requests(cluster: &MemoryCluster) -> Vec<String> {
    cluster
        .log()
        .into_iter()
        .filter(|r| !matches!(r.key.kind.as_str(), "Application" | "AppProject" | "Secret"))
        .map(|r| r.to_string())
        .collect()
}

#[tokio::test]
async fn a_missing_project_is_an_invalid_spec_and_nothing_is_read_or_applied() {
    let (cluster, _repo) = setup(&[configmap("a", json!({}))], Value::Null);
    serve_projects(&cluster);
    set_spec(&cluster, "project", json!("team-a"));
    cluster.clear_log();
    let err = sync_app(
        &cluster,
        &app(&cluster),
        &opts(),
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect_err("refused");
    assert!(
        err.to_string()
            .contains("Application referencing project team-a which does not exist"),
        "{err}"
    );
    assert_eq!(object_requests(&cluster), Vec::<String>::new());
    let a = app(&cluster);
    assert_eq!(
        condition(&a),
        (
            "InvalidSpecError".into(),
            "Application referencing project team-a which does not exist".into()
        )
    );
    assert_eq!(a["status"]["sync"]["status"], "Unknown");
    // The project created: the next refresh passes and drops the condition.
    project(
        &cluster,
        "team-a",
        json!({"sourceRepos": ["*"],
        "destinations": [{"server": "*", "namespace": "*"}]}),
    );
    refresh_app(&cluster, &app(&cluster), &opts(), now())
        .await
        .expect("refresh");
    assert!(app(&cluster)["status"].get("conditions").is_none());
}

#[tokio::test]
async fn an_unknown_destination_is_applied_nowhere() {
    let (cluster, _repo) = setup(&[configmap("a", json!({}))], Value::Null);
    for (dest, message) in [
        (
            json!({"server": "https://prod-eu.example:6443", "namespace": DEST}),
            "application destination spec is invalid: cluster 'https://prod-eu.example:6443' has not been configured",
        ),
        (
            json!({"name": "prod-eu", "namespace": DEST}),
            "application destination spec is invalid: unable to find destination server: there are no clusters with this name: prod-eu",
        ),
    ] {
        set_spec(&cluster, "destination", dest);
        cluster.clear_log();
        for dry_run in [true, false] {
            let request = SyncRequest {
                dry_run,
                ..SyncRequest::default()
            };
            let err = sync_app_with(
                &cluster,
                &app(&cluster),
                &opts(),
                &request,
                InitiatedBy::user("t"),
                now(),
            )
            .await
            .expect_err("refused");
            assert!(err.to_string().contains(message), "{err}");
        }
        assert_eq!(object_requests(&cluster), Vec::<String>::new());
        assert_eq!(
            condition(&app(&cluster)),
            ("InvalidSpecError".into(), message.into())
        );
        assert_eq!(app(&cluster)["status"]["sync"]["status"], "Unknown");
    }
    // A cluster Secret naming it resolves the name; without connections to other clusters
    // (`RunOptions::destinations`), nothing is applied anywhere.
    cluster
        .put(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "eu", "namespace": APPS,
                "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
            "stringData": {"name": "prod-eu", "server": "https://prod-eu.example:6443",
                "config": "{\"bearerToken\": \"t\"}"}}))
        .expect("secret");
    cluster.clear_log();
    let err = sync_app(
        &cluster,
        &app(&cluster),
        &opts(),
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect_err("refused");
    assert!(
        err.to_string()
            .contains("this command does not connect to other clusters; nothing is applied"),
        "{err}"
    );
    assert_eq!(object_requests(&cluster), Vec::<String>::new());
    // The in-cluster name resolves to this cluster.
    set_spec(
        &cluster,
        "destination",
        json!({"name": "in-cluster", "namespace": DEST}),
    );
    let out = sync_app(
        &cluster,
        &app(&cluster),
        &opts(),
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect("sync");
    assert!(out.succeeded(), "{}", out.message);
    assert!(cluster.object(&cm_key("a")).is_some());
    assert!(app(&cluster)["status"].get("conditions").is_none());
}

#[tokio::test]
async fn a_resource_the_project_refuses_fails_the_sync_before_any_request() {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "extra"}});
    let (cluster, _repo) = setup(&[configmap("a", json!({})), ns], Value::Null);
    project(
        &cluster,
        "default",
        json!({"sourceRepos": ["*"],
        "destinations": [{"server": "*", "namespace": DEST}]}),
    );
    for dry_run in [true, false] {
        cluster.clear_log();
        let request = SyncRequest {
            dry_run,
            ..SyncRequest::default()
        };
        let err = sync_app_with(
            &cluster,
            &app(&cluster),
            &opts(),
            &request,
            InitiatedBy::user("t"),
            now(),
        )
        .await
        .expect_err("refused");
        assert!(
            err.to_string().contains(
                "resource Namespace extra is not permitted in project default: not in clusterResourceWhitelist"
            ),
            "{err}"
        );
        let writes: Vec<String> = object_requests(&cluster)
            .into_iter()
            .filter(|r| !r.starts_with("get ") && !r.starts_with("list "))
            .collect();
        assert_eq!(writes, Vec::<String>::new(), "dry run {dry_run}");
        // The operation (not the dry run) is recorded Failed, naming the resource and rule.
        let phase = op_field(&app(&cluster), "phase");
        let message = op_field(&app(&cluster), "message");
        if dry_run {
            assert_eq!(phase, "", "a dry run records no operation");
        } else {
            assert_eq!(phase, "Failed");
            assert!(
                message.contains("Namespace extra") && message.contains("clusterResourceWhitelist"),
                "{message}"
            );
        }
    }
    assert!(cluster.object(&cm_key("a")).is_none());
}

#[tokio::test]
async fn project_destinations_and_source_repos_refuse_the_app() {
    let (cluster, _repo) = setup(&[configmap("a", json!({}))], Value::Null);
    project(
        &cluster,
        "default",
        json!({"sourceRepos": ["https://git.example.com/*"],
        "destinations": [{"server": "*", "namespace": "!kube-system"}]}),
    );
    let err = refresh_app(&cluster, &app(&cluster), &opts(), now())
        .await
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("is not permitted in project 'default'"),
        "{err}"
    );
    project(
        &cluster,
        "default",
        json!({"sourceRepos": ["*"],
        "destinations": [{"server": "*", "namespace": "!kube-system"}]}),
    );
    set_spec(
        &cluster,
        "destination",
        json!({"server": "https://kubernetes.default.svc", "namespace": "kube-system"}),
    );
    cluster.clear_log();
    let err = sync_app(
        &cluster,
        &app(&cluster),
        &opts(),
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect_err("refused");
    assert!(
        err.to_string().contains("namespace 'kube-system' do not match any of the allowed destinations in project 'default'"),
        "{err}"
    );
    assert_eq!(object_requests(&cluster), Vec::<String>::new());
}

#[tokio::test]
async fn an_application_outside_the_control_namespace_needs_source_namespaces() {
    let (cluster, _repo) = setup(&[configmap("a", json!({}))], Value::Null);
    let control = RunOptions {
        control_namespace: Some("plumb-system".into()),
        ..opts()
    };
    let err = sync_app(
        &cluster,
        &app(&cluster),
        &control,
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect_err("refused");
    assert!(
        err.to_string().contains(
            "application 'shop' in namespace 'plumb' is not allowed to use project default"
        ),
        "{err}"
    );
    assert!(cluster.object(&cm_key("a")).is_none());
    serve_projects(&cluster);
    cluster
        .put(objects::app_project(
            "default",
            "plumb-system",
            json!({"sourceRepos": ["*"], "sourceNamespaces": [APPS],
                "destinations": [{"server": "*", "namespace": "*"}]}),
        ))
        .expect("project");
    let out = sync_app(
        &cluster,
        &app(&cluster),
        &control,
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect("sync");
    assert!(out.succeeded(), "{}", out.message);
}

#[tokio::test]
async fn a_deny_window_holds_automated_syncs_and_manual_sync_needs_manual_sync() {
    let automated = json!({"automated": {}});
    let (cluster, _repo) = setup(&[configmap("a", json!({}))], automated);
    let window = objects::deny_window_spec;
    project(&cluster, "default", window(false));
    let mut state = ReconcileState { options: opts() };
    let out = reconcile_once(&cluster, &app(&cluster), now(), &mut state)
        .await
        .expect("reconcile");
    assert_eq!(
        out.decision,
        Some(Decision::Nothing {
            why: crate::auto::NoSync::SyncWindow
        })
    );
    assert!(out.sync.is_none());
    assert!(
        out.blocked_by
            .as_deref()
            .is_some_and(|m| m.contains("blocked by sync window deny")),
        "{:?}",
        out.blocked_by
    );
    assert!(cluster.object(&cm_key("a")).is_none());
    let err = sync_app(
        &cluster,
        &app(&cluster),
        &opts(),
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect_err("blocked");
    assert!(
        err.to_string()
            .contains("Cannot sync: blocked by sync window"),
        "{err}"
    );
    assert!(cluster.object(&cm_key("a")).is_none());
    project(&cluster, "default", window(true));
    let out = sync_app(
        &cluster,
        &app(&cluster),
        &opts(),
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect("manual sync");
    assert!(out.succeeded(), "{}", out.message);
    assert!(cluster.object(&cm_key("a")).is_some());
}

/// In a dry run, a custom resource whose CRD the same sync installs (so the cluster does not
/// serve its kind yet) is reported as skipped, not failed, as Argo CD does: with
/// `SkipDryRunOnMissingResource=true` and without it.
#[tokio::test]
async fn a_dry_run_skips_a_kind_its_crd_brings() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": true}}}]},
    });
    let widget = |annotations: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "annotations": annotations}, "spec": {"size": 1}})
    };
    let request = SyncRequest {
        dry_run: true,
        ..SyncRequest::default()
    };
    for (skip, expected) in [
        (true, "SkipDryRunOnMissingResource=true"),
        (
            false,
            "its CustomResourceDefinition is applied by this sync",
        ),
    ] {
        let annotations = if skip {
            json!({"argocd.argoproj.io/sync-options": "SkipDryRunOnMissingResource=true"})
        } else {
            json!({})
        };
        let (cluster, _repo) = setup(&[crd.clone(), widget(annotations)], json!({}));
        let out = sync_app_with(
            &cluster,
            &app(&cluster),
            &opts(),
            &request,
            InitiatedBy::user("alice"),
            now(),
        )
        .await
        .expect("dry run");
        let w = result(&out, "w");
        assert!(out.succeeded(), "{}", out.message);
        assert!(w.message.contains("dry run skipped"), "{}", w.message);
        assert!(w.message.contains(expected), "{}", w.message);
        assert!(cluster.writes().is_empty(), "{:?}", cluster.writes());
    }
}

// ---------------------------------------------------------------------------------------
// Home and destination (run/route.rs): two in-memory clusters

const REMOTE_SERVER: &str = "https://prod-eu.example:6443";

/// Connections to one other in-memory cluster, at `REMOTE_SERVER`; any other server is
/// unreachable (as a refused connection is).
struct Remote {
    cluster: Arc<MemoryCluster>,
    up: std::sync::atomic::AtomicBool,
}

impl Destinations for Remote {
    fn connect<'a>(
        &'a self,
        cluster: &'a plumb_core::clusters::Cluster,
    ) -> futures::future::BoxFuture<'a, std::result::Result<Destination, ClusterError>> {
        Box::pin(async move {
            if cluster.server == REMOTE_SERVER && self.up.load(std::sync::atomic::Ordering::SeqCst)
            {
                Ok(Destination {
                    api: self.cluster.clone(),
                    cache: None,
                })
            } else {
                Err(ClusterError::Unreachable {
                    server: cluster.server.clone(),
                    reason: "connection refused".into(),
                })
            }
        })
    }
}

/// Home (the Application, a cluster Secret for `prod-eu`) and the remote cluster; the app
/// aimed at `prod-eu` by name.
fn setup_remote(objects: &[Value]) -> (MemoryCluster, Arc<Remote>, RunOptions, Repo) {
    let (home, repo) = setup(objects, Value::Null);
    home.put(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "eu", "namespace": APPS, "resourceVersion": "1",
            "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": "prod-eu", "server": REMOTE_SERVER,
            "config": "{\"bearerToken\": \"t\"}"}}))
        .expect("secret");
    set_spec(
        &home,
        "destination",
        json!({"name": "prod-eu", "namespace": DEST}),
    );
    let remote = MemoryCluster::new();
    remote
        .put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEST}}))
        .expect("namespace");
    let remote = Arc::new(Remote {
        cluster: Arc::new(remote),
        up: std::sync::atomic::AtomicBool::new(true),
    });
    let opts = RunOptions {
        destinations: Some(DestinationsHandle(remote.clone())),
        ..opts()
    };
    (home, remote, opts, repo)
}

/// Every write to `cluster`, as `verb kind name`.
fn all_writes(cluster: &MemoryCluster) -> Vec<String> {
    cluster
        .writes()
        .into_iter()
        .map(|r| format!("{} {} {}", r.verb.as_str(), r.key.kind, r.key.name))
        .collect()
}

/// An app aimed at another cluster: its objects are read, applied, pruned and deleted
/// there; home gets only the Application's status writes; the other cluster never sees the
/// Application.
#[tokio::test]
async fn another_clusters_app_is_applied_there_and_only_its_status_written_home() {
    let (home, remote, opts, repo) =
        setup_remote(&[configmap("a", wave(0)), configmap("b", wave(1))]);
    let dest = &remote.cluster;
    home.clear_log();
    let out = sync(&home, &opts).await;
    assert!(out.succeeded(), "{}", out.message);
    assert_eq!(object_writes(dest), ["apply a", "apply b"]);
    assert!(dest.object(&cm_key("a")).is_some());
    assert!(
        home.object(&cm_key("a")).is_none(),
        "nothing of the app at home"
    );
    let home_writes = all_writes(&home);
    assert!(
        home_writes.iter().all(|w| w.contains(" Application ")),
        "home only gets the Application's writes: {home_writes:?}"
    );
    assert!(!home_writes.is_empty());
    let asked: Vec<String> = dest
        .log()
        .iter()
        .filter(|r| r.key.namespace == APPS || r.key.kind == "AppProject")
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        asked,
        Vec::<String>::new(),
        "the destination is not asked about the Application, its project or cluster Secrets"
    );
    let stored = app(&home);
    assert_eq!(stored["status"]["sync"]["status"], "Synced");
    assert_eq!(op_field(&stored, "phase"), "Succeeded");

    // A refresh reads there and writes there nothing.
    dest.clear_log();
    let status = refresh_app(&home, &app(&home), &opts, now())
        .await
        .expect("refresh");
    assert_eq!(status.sync, SyncStatusCode::Synced);
    assert_eq!(all_writes(dest), Vec::<String>::new());
    assert!(
        !dest.log().is_empty(),
        "live state is read from the destination"
    );

    // A prune deletes there.
    repo.commit(&[], &["b"]);
    home.clear_log();
    dest.clear_log();
    let request = SyncRequest {
        prune: true,
        ..SyncRequest::default()
    };
    let out = sync_app_with(
        &home,
        &app(&home),
        &opts,
        &request,
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect("sync");
    assert!(out.succeeded(), "{}", out.message);
    assert_eq!(object_writes(dest), ["apply a", "delete b"]);
    assert!(
        all_writes(&home)
            .iter()
            .all(|w| w.contains(" Application "))
    );

    // A dry run is sent there too.
    dest.clear_log();
    home.clear_log();
    let request = SyncRequest {
        dry_run: true,
        ..SyncRequest::default()
    };
    sync_app_with(
        &home,
        &app(&home),
        &opts,
        &request,
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect("dry run");
    assert!(dest.log().iter().any(|r| r.verb == Verb::DryRunApply));
    assert_eq!(all_writes(dest), Vec::<String>::new());
    assert!(
        home.log()
            .iter()
            .all(|r| r.verb != Verb::DryRunApply && r.verb != Verb::Apply)
    );

    // The Application deleted with its resources finalizer: deleted there, not at home.
    home.patch_application(
        APPS,
        APP,
        &json!({"metadata": {"finalizers": ["resources-finalizer.argocd.argoproj.io"]}}),
    )
    .await
    .expect("finalizer");
    home.delete_object(&app_key(), Propagation::Background)
        .await
        .expect("delete");
    home.clear_log();
    dest.clear_log();
    let mut state = ReconcileState {
        options: opts.clone(),
    };
    while let Some(current) = home.object(&app_key()) {
        reconcile_once(&home, &current, now(), &mut state)
            .await
            .expect("reconcile");
    }
    assert_eq!(object_writes(dest), ["delete a"]);
    assert!(
        all_writes(&home)
            .iter()
            .all(|w| w.contains(" Application "))
    );
}

/// A destination that cannot be reached: a condition naming the cluster's server, nothing
/// written anywhere else; once it answers again, the condition goes.
#[tokio::test]
async fn an_unreachable_destination_is_a_condition_naming_its_server() {
    let (home, remote, opts, _repo) = setup_remote(&[configmap("a", json!({}))]);
    remote.up.store(false, std::sync::atomic::Ordering::SeqCst);
    home.clear_log();
    let err = sync_app(&home, &app(&home), &opts, InitiatedBy::user("t"), now())
        .await
        .expect_err("unreachable");
    assert!(matches!(err, RunError::Destination { .. }), "{err}");
    assert!(err.to_string().contains(REMOTE_SERVER), "{err}");
    let (kind, message) = condition(&app(&home));
    assert_eq!(kind, COMPARISON_ERROR);
    assert!(
        message.contains("'prod-eu' (https://prod-eu.example:6443) is unreachable"),
        "{message}"
    );
    assert!(
        all_writes(&home)
            .iter()
            .all(|w| w.contains(" Application "))
    );
    assert_eq!(all_writes(&remote.cluster), Vec::<String>::new());
    assert!(home.object(&cm_key("a")).is_none());

    remote.up.store(true, std::sync::atomic::Ordering::SeqCst);
    refresh_app(&home, &app(&home), &opts, now())
        .await
        .expect("refresh");
    assert!(app(&home)["status"].get("conditions").is_none());
}

/// A source that does not render (a Jsonnet program that fails) is a
/// `ComparisonError` naming the file, and nothing is applied or pruned — the app's objects stay
/// although git's directory now renders none of them; once the source renders, the condition
/// goes and the app syncs.
#[tokio::test]
async fn a_source_that_does_not_render_is_a_comparison_error_and_prunes_nothing() {
    let (cluster, repo) = setup(
        &[configmap("a", json!({}))],
        json!({"automated": {"prune": true, "allowEmpty": true}}),
    );
    let mut state = ReconcileState { options: opts() };
    reconcile(&cluster, &mut state, now()).await;
    assert!(cluster.object(&cm_key("a")).is_some(), "synced");

    // git replaces the manifest with a program that fails: an empty render would prune `a`
    // (automated prune, allowEmpty).
    std::fs::write(repo.dir.path().join("app/a.jsonnet"), "error 'not today'").expect("write");
    repo.commit(&[], &["a"]);
    cluster.clear_log();
    let err = reconcile_once(&cluster, &app(&cluster), now(), &mut state)
        .await
        .expect_err("the source does not render");
    assert!(matches!(err, RunError::Render { .. }), "{err}");
    let (kind, message) = condition(&app(&cluster));
    assert_eq!(kind, COMPARISON_ERROR);
    assert!(
        message.starts_with("Failed to load target state: ")
            && message.contains("app/a.jsonnet")
            && message.contains("not today"),
        "{message}"
    );
    assert_eq!(object_writes(&cluster), Vec::<String>::new());
    assert!(cluster.object(&cm_key("a")).is_some(), "nothing pruned");

    // The same failure again writes nothing new.
    cluster.clear_log();
    reconcile_once(&cluster, &app(&cluster), now(), &mut state)
        .await
        .expect_err("still");
    assert_eq!(all_writes(&cluster), Vec::<String>::new());

    // git renders again: the condition goes and the app syncs to git.
    std::fs::remove_file(repo.dir.path().join("app/a.jsonnet")).expect("remove");
    repo.commit(&[configmap("b", json!({}))], &[]);
    reconcile(&cluster, &mut state, now()).await;
    assert!(app(&cluster)["status"].get("conditions").is_none());
    assert!(cluster.object(&cm_key("b")).is_some());
    assert!(
        cluster.object(&cm_key("a")).is_none(),
        "pruned once git says so"
    );
}

/// A rollback is judged by the source it applies (the history entry's), not the current
/// spec's: a repository the project no longer permits is refused before any request.
#[tokio::test]
async fn a_rollback_checks_the_history_entrys_source_against_the_project() {
    let (cluster, old_repo) = setup(&[configmap("a", json!({}))], Value::Null);
    let out = sync(&cluster, &opts()).await;
    assert!(out.succeeded(), "{}", out.message);
    let new_repo = Repo::new(&[configmap("a", json!({"v": "2"}))]);
    let new_url = format!("file://{}", new_repo.dir.path().display());
    let mut source = app(&cluster)["spec"]["source"].clone();
    source["repoURL"] = json!(new_url);
    set_spec(&cluster, "source", source);
    let out = sync(&cluster, &opts()).await;
    assert!(out.succeeded(), "{}", out.message);
    assert_eq!(history(&app(&cluster)).len(), 2);
    // Only the new repository is permitted now.
    project(
        &cluster,
        "default",
        json!({"sourceRepos": [new_url], "destinations": [{"server": "*", "namespace": "*"}]}),
    );
    cluster.clear_log();
    let err = rollback_app(
        &cluster,
        &app(&cluster),
        &opts(),
        None,
        false,
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect_err("refused");
    let old_url = format!("file://{}", old_repo.dir.path().display());
    assert!(
        err.to_string().contains(&old_url) && err.to_string().contains("not permitted"),
        "{err}"
    );
    assert_eq!(object_requests(&cluster), Vec::<String>::new());
}

/// Status writes come from the typed model: a sync after a partial, hook-less operation
/// clears what that operation set and this one does not (its resource list, `apply`
/// strategy, end time, message), keeps what plumb does not model (at any depth), clears a
/// field of the wrong shape, and a refresh afterwards leaves the operation state as it is.
#[tokio::test]
async fn status_writes_clear_what_the_operation_clears_and_keep_unknown_fields() {
    let (cluster, _repo) = setup(&[configmap("config", json!({}))], json!({}));
    let mut stored = app(&cluster);
    stored["status"] = json!({
        "futureField": {"x": 1},
        "summary": "not an object",
        "health": {"status": "Missing", "vendorNote": "kept"},
        "sync": {"status": "OutOfSync", "revisions": ["r0"]},
        "operationState": {
            "phase": "Failed", "message": "one or more objects failed to apply",
            "startedAt": "2026-09-22T19:58:00Z", "finishedAt": "2026-09-22T19:58:11Z",
            "vendorOpField": "kept",
            "operation": {"sync": {"syncStrategy": {"apply": {}}, "prune": true,
                "resources": [{"kind": "ConfigMap", "name": "config"}]},
                "initiatedBy": {"username": "bob"}},
            "syncResult": {"revision": "r0", "resources": [{"kind": "ConfigMap",
                "name": "old", "status": "SyncFailed", "syncPhase": "Sync"}]}}});
    cluster.put(stored).expect("status");

    let out = sync(&cluster, &opts()).await;
    assert_eq!(out.phase, "Succeeded", "{out:?}");
    let status = &app(&cluster)["status"];
    let state = &status["operationState"];
    assert_eq!(state["phase"], "Succeeded");
    assert_eq!(state["vendorOpField"], "kept");
    assert_eq!(
        state["operation"]["sync"]["syncStrategy"],
        json!({"hook": {}})
    );
    assert_eq!(state["operation"]["sync"].get("resources"), None);
    assert_eq!(
        state["operation"]["sync"].get("prune"),
        None,
        "false: left out"
    );
    assert_eq!(
        state["operation"]["initiatedBy"],
        json!({"username": "alice"})
    );
    assert_ne!(state["finishedAt"], "2026-09-22T19:58:11Z");
    let names: Vec<&str> = state["syncResult"]["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["config"]);
    assert_eq!(status["futureField"], json!({"x": 1}));
    assert_eq!(
        status["health"],
        json!({"status": "Healthy", "vendorNote": "kept"})
    );
    assert_eq!(status["sync"]["revisions"], json!(["r0"]));
    assert_eq!(status.get("summary"), None, "the wrong shape is cleared");
    assert_eq!(history(&app(&cluster)).len(), 1);

    let before = app(&cluster)["status"]["operationState"].clone();
    refresh_app(
        &cluster,
        &app(&cluster),
        &opts(),
        now() + Duration::from_secs(60),
    )
    .await
    .expect("refresh");
    assert_eq!(app(&cluster)["status"]["operationState"], before);
}

/// A multi-source app (`spec.sources`): status records every source and its revision as
/// Argo CD does (`sync.revisions`, `comparedTo.sources`, the operation's and the history
/// entry's `revisions`/`sources`), and a rollback applies the entry's sources at their
/// revisions.
#[tokio::test]
async fn a_multi_source_app_records_every_revision_and_rolls_back_all_sources() {
    let (cluster, first) = setup(&[configmap("a", json!({}))], Value::Null);
    let second = Repo::new(&[configmap("b", json!({}))]);
    let url = |r: &Repo| format!("file://{}", r.dir.path().display());
    let head = |r: &Repo| git(r.dir.path(), &["rev-parse", "HEAD"]);
    set_spec(
        &cluster,
        "sources",
        json!([
            {"repoURL": url(&first), "path": "app", "targetRevision": "HEAD"},
            {"repoURL": url(&second), "path": "app", "targetRevision": "HEAD"},
        ]),
    );
    let out = sync(&cluster, &opts()).await;
    assert!(out.succeeded(), "{}", out.message);
    let v1 = json!([head(&first), head(&second)]);
    let got = app(&cluster);
    let status = &got["status"];
    assert_eq!(status["sync"]["revisions"], v1);
    assert_eq!(
        status["sync"]["comparedTo"]["sources"][1]["repoURL"],
        url(&second)
    );
    assert_eq!(
        status["operationState"]["operation"]["sync"]["revisions"],
        v1
    );
    assert_eq!(status["operationState"]["syncResult"]["revisions"], v1);
    assert_eq!(
        status["operationState"]["syncResult"]["sources"][1]["repoURL"],
        url(&second)
    );
    let entry = &history(&got)[0];
    assert_eq!(entry["revisions"], v1);
    assert_eq!(entry["sources"][0]["repoURL"], url(&first));
    assert_eq!(entry["sources"][1]["repoURL"], url(&second));

    first.commit(&[configmap("a", json!({"v": "2"}))], &[]);
    second.commit(&[configmap("b", json!({"v": "2"}))], &[]);
    let out = sync(&cluster, &opts()).await;
    assert!(out.succeeded(), "{}", out.message);
    let v2 = json!([head(&first), head(&second)]);
    assert_eq!(history(&app(&cluster))[1]["revisions"], v2);
    assert_ne!(v1, v2);

    let out = rollback_app(
        &cluster,
        &app(&cluster),
        &opts(),
        None,
        false,
        InitiatedBy::user("t"),
        now(),
    )
    .await
    .expect("rollback runs");
    assert!(out.succeeded(), "{}", out.message);
    for name in ["a", "b"] {
        let obj = cluster.object(&cm_key(name)).expect("configmap");
        assert_eq!(obj.pointer("/metadata/annotations/v"), None, "{obj}");
    }
    let got = app(&cluster);
    assert_eq!(history(&got)[2]["revisions"], v1);
    let op = &got["status"]["operationState"]["operation"]["sync"];
    assert_eq!(op["sources"][0]["targetRevision"], v1[0]);
    assert_eq!(op["sources"][1]["targetRevision"], v1[1]);
}

/// Events on the Application (Argo CD's reasons and wording): an automated sync announces
/// itself and its end and the status changes it made; a self-heal is one too; a failed
/// sync ends with a Warning naming the failure. Each sync outcome names its trigger.
#[tokio::test]
async fn syncs_record_events_with_argo_cds_reasons_and_their_trigger() {
    use plumb_cluster::events::EventType;
    use plumb_cluster::memory::CollectedEvents;
    let (cluster, repo) = setup(
        &[configmap("config", json!({}))],
        json!({"automated": {"selfHeal": true}}),
    );
    let sink = Arc::new(CollectedEvents::default());
    let mut state = ReconcileState {
        options: RunOptions {
            events: Some(EventsHandle(sink.clone())),
            ..opts()
        },
    };
    let first = reconcile_once(&cluster, &app(&cluster), now(), &mut state)
        .await
        .expect("reconcile");
    let synced = first.sync.expect("an automated sync");
    assert!(synced.succeeded(), "{}", synced.message);
    assert_eq!(synced.trigger, SyncTrigger::Automated);
    let rev = git(repo.dir.path(), &["rev-parse", "HEAD"]);
    let rev = rev.trim();
    assert_eq!(
        sink.lines(),
        [
            format!("OperationStarted: Initiated automated sync to '{rev}'"),
            format!("OperationCompleted: Sync operation to {rev} succeeded"),
            "ResourceUpdated: Updated sync status:  -> Synced".to_string(),
            "ResourceUpdated: Updated health status:  -> Healthy".to_string(),
        ]
    );
    assert!(
        sink.all()
            .iter()
            .all(|e| e.object == format!("{APPS}/{APP}") && e.kind == EventType::Normal)
    );

    // A hand edit: self-heal, the same revision again.
    let mut edited = cluster.object(&cm_key("config")).expect("config");
    edited["data"]["k"] = json!("edited by hand");
    cluster.put(edited).expect("edit");
    let later = now() + Duration::from_secs(3600);
    let healed = reconcile_once(&cluster, &app(&cluster), later, &mut state)
        .await
        .expect("reconcile")
        .sync
        .expect("a self-heal sync");
    assert_eq!(healed.trigger, SyncTrigger::SelfHeal);
    assert_eq!(
        sink.lines()[4..],
        [
            format!("OperationStarted: Initiated automated sync to '{rev}'"),
            format!("OperationCompleted: Sync operation to {rev} succeeded"),
        ]
    );

    // A manual sync that fails: a Warning with the failure, after "initiated sync".
    cluster.fail(
        Verb::Apply,
        cm_key("config"),
        ClusterError::Api {
            code: 422,
            message: "ConfigMap \"config\" is invalid".into(),
        },
    );
    let before = sink.all().len();
    let failed = sync(&cluster, &state.options).await;
    assert!(!failed.succeeded());
    assert_eq!(failed.trigger, SyncTrigger::Manual);
    let got = sink.all()[before..].to_vec();
    // The API server's words: the revision requested (none: the app's target).
    let app_obj = app(&cluster);
    let requested = app_obj["spec"]["source"]["targetRevision"]
        .as_str()
        .filter(|r| !r.is_empty())
        .unwrap_or(rev);
    assert_eq!(
        got[0].message,
        format!("initiated sync to {requested}"),
        "{got:?}"
    );
    assert_eq!(got[1].reason, "OperationCompleted");
    assert_eq!(got[1].kind, EventType::Warning);
    assert!(
        got[1]
            .message
            .starts_with(&format!("Sync operation to {rev} failed: "))
            && got[1].message.contains("is invalid"),
        "{got:?}"
    );
}

/// A multi-source operation stopped midway (the controller restarted) resumes at the
/// revisions it started with (`operation.sync.revisions`), not at the sources' new heads —
/// as a single-source one resumes at its `revision`.
#[tokio::test]
async fn a_resumed_multi_source_operation_applies_the_revisions_it_started_with() {
    let (cluster, first) = setup(
        &[job("migrate", hook("PreSync")), configmap("a", wave(0))],
        json!({"automated": {"prune": true}}),
    );
    let second = Repo::new(&[configmap("b", wave(1))]);
    let url = |r: &Repo| format!("file://{}", r.dir.path().display());
    let head = |r: &Repo| git(r.dir.path(), &["rev-parse", "HEAD"]);
    set_spec(
        &cluster,
        "sources",
        json!([
            {"repoURL": url(&first), "path": "app", "targetRevision": "HEAD"},
            {"repoURL": url(&second), "path": "app", "targetRevision": "HEAD"},
        ]),
    );
    let v1 = json!([head(&first), head(&second)]);
    let migrate = key("batch", "Job", DEST, "migrate");
    cluster.hold(migrate.clone(), json!({}));
    let mut state = ReconcileState { options: opts() };
    let started = now();
    let app_before = app(&cluster);
    let pass = reconcile_once(&cluster, &app_before, started, &mut state);
    // Stopped once the runner reads the hook it created (it waits for its completion).
    let hook_waited = until(|| {
        let log = cluster.log();
        log.iter()
            .position(|r| r.verb == Verb::Apply && r.key == migrate)
            .is_some_and(|applied| {
                log[applied..]
                    .iter()
                    .any(|r| r.verb == Verb::Get && r.key == migrate)
            })
    });
    tokio::select! {
        r = pass => panic!("the pass ended before the hook completed: {:?}", r.map(|o| o.sync)),
        () = hook_waited => {}
    }
    let stopped = app(&cluster);
    assert_eq!(op_field(&stopped, "phase"), "Running");
    assert_eq!(
        stopped["status"]["operationState"]["operation"]["sync"]["revisions"],
        v1
    );

    // Both repositories move on while no controller runs.
    first.commit(
        &[configmap(
            "a",
            json!({"v": "2", "argocd.argoproj.io/sync-wave": "0"}),
        )],
        &[],
    );
    second.commit(
        &[configmap(
            "b",
            json!({"v": "2", "argocd.argoproj.io/sync-wave": "1"}),
        )],
        &[],
    );
    assert_ne!(json!([head(&first), head(&second)]), v1);

    cluster.release(&migrate);
    cluster.clear_log();
    let later = started + Duration::from_secs(30);
    let out = reconcile_once(&cluster, &stopped, later, &mut state)
        .await
        .expect("reconcile");
    assert!(out.resumed);
    let sync = out.sync.expect("the resumed operation");
    assert!(sync.succeeded(), "{}", sync.message);
    assert_eq!(object_writes(&cluster), ["apply a", "apply b"]);
    for name in ["a", "b"] {
        let obj = cluster.object(&cm_key(name)).expect("configmap");
        assert_eq!(
            obj.pointer("/metadata/annotations/v"),
            None,
            "{name} applied at its new head: {obj}"
        );
    }
    let done = app(&cluster);
    let result = &done["status"]["operationState"]["syncResult"];
    assert_eq!(result["revisions"], v1);
    // The sources recorded are the spec's, not rewritten to the pinned commits.
    assert_eq!(result["sources"][0]["targetRevision"], "HEAD");
    let h = history(&done);
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0]["revisions"], v1);
}

/// An automated app (`syncPolicy.retry` limit 2, from 10 s doubling) of one ConfigMap, `bad`,
/// whose every apply fails (a mutating webhook that is down).
fn failing_automated_app() -> (MemoryCluster, Repo) {
    let policy = json!({"automated": {},
        "retry": {"limit": 2, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "1m"}}});
    let (cluster, repo) = setup(&[configmap("bad", json!({}))], policy);
    cluster.fail(
        Verb::Apply,
        cm_key("bad"),
        ClusterError::Api {
            code: 500,
            message: "Internal error occurred: failed calling webhook \"down.plumb.test\"".into(),
        },
    );
    (cluster, repo)
}

/// One controller pass over the app at `at`.
async fn reconcile(
    cluster: &MemoryCluster,
    state: &mut ReconcileState,
    at: SystemTime,
) -> ReconcileOutcome {
    reconcile_once(cluster, &app(cluster), at, state)
        .await
        .expect("reconcile")
}

/// `syncPolicy.retry`: each retry of a failed automated sync records its number in
/// `status.operationState.retryCount` (absent on the first attempt, as Argo CD omits a zero),
/// the limit is read back from it, and a retry that succeeds keeps the count.
#[tokio::test]
async fn retries_of_a_failed_sync_are_counted_in_retry_count() {
    let (cluster, _repo) = failing_automated_app();
    let mut state = ReconcileState { options: opts() };
    let retry_count = |cluster: &MemoryCluster| {
        app(cluster)
            .pointer("/status/operationState/retryCount")
            .cloned()
    };
    let mut at = now();
    let first = reconcile_once(&cluster, &app(&cluster), at, &mut state)
        .await
        .expect("reconcile");
    assert!(!first.sync.expect("the first attempt").succeeded());
    assert_eq!(op_field(&app(&cluster), "phase"), "Failed");
    assert_eq!(retry_count(&cluster), None, "no retry yet");
    // Two retries, each after its backoff: retryCount 1, then 2.
    for n in 1..=2 {
        at += Duration::from_secs(120);
        let out = reconcile_once(&cluster, &app(&cluster), at, &mut state)
            .await
            .expect("reconcile");
        assert!(
            matches!(
                out.decision,
                Some(Decision::SyncNow {
                    reason: SyncReason::Retry
                })
            ),
            "{:?}",
            out.decision
        );
        assert!(!out.sync.expect("a retry").succeeded());
        assert_eq!(retry_count(&cluster), Some(json!(n)));
    }
    // The limit is used up: no third retry, the count stays.
    at += Duration::from_secs(120);
    let out = reconcile_once(&cluster, &app(&cluster), at, &mut state)
        .await
        .expect("reconcile");
    assert!(out.sync.is_none(), "{:?}", out.decision);
    assert_eq!(retry_count(&cluster), Some(json!(2)));
}

/// A plain directory (not a git repository) as the source has no commit (`revision` ""):
/// the content digest of its desired objects is what was attempted. A failed automated sync
/// of the same content is retried per `syncPolicy.retry` — not again at every compare — and
/// once the limit is used up, nothing more until the directory changes; a change is synced
/// at once.
#[tokio::test]
async fn a_failed_sync_of_a_plain_directory_is_retried_per_the_backoff_until_it_changes() {
    let (cluster, repo) = failing_automated_app();
    std::fs::remove_dir_all(repo.dir.path().join(".git")).expect("no git: a plain directory");
    let applies = |cluster: &MemoryCluster| {
        cluster
            .log()
            .iter()
            .filter(|r| r.verb == Verb::Apply && r.key.name == "bad")
            .count()
    };
    let mut state = ReconcileState { options: opts() };
    let first = reconcile(&cluster, &mut state, now()).await;
    assert!(!first.sync.expect("the first attempt").succeeded());
    let recorded = app(&cluster);
    let digest = op_field(&recorded, "syncResult/contentDigest");
    assert!(digest.starts_with("sha256:"), "{recorded:#}");
    assert_eq!(
        recorded.pointer("/status/operationState/syncResult/revision"),
        None,
        "no fake commit where Argo CD expects one"
    );
    assert_eq!(applies(&cluster), 1);

    // Compared again and again at once: each time the retry waits for its backoff.
    let mut due = None;
    for _ in 0..3 {
        let out = reconcile(&cluster, &mut state, now()).await;
        assert!(out.sync.is_none(), "{:?}", out.decision);
        match out.decision {
            Some(Decision::WaitUntil {
                at,
                reason: SyncReason::Retry,
            }) => due = Some(at),
            other => panic!("wanted a retry waiting for its backoff, got {other:?}"),
        }
    }
    // Each retry when it is due; two (the limit), then nothing more.
    let mut at = due.expect("a retry is due");
    for n in 1..=2 {
        let out = reconcile(&cluster, &mut state, at).await;
        assert!(
            matches!(
                out.decision,
                Some(Decision::SyncNow {
                    reason: SyncReason::Retry
                })
            ),
            "retry {n}: {:?}",
            out.decision
        );
        assert!(!out.sync.expect("a retry").succeeded());
        let out = reconcile(&cluster, &mut state, at).await;
        match out.decision {
            Some(Decision::WaitUntil { at: next, .. }) if n < 2 => at = next,
            Some(Decision::Nothing {
                why: crate::auto::NoSync::RetriesExhausted { attempts: 2 },
            }) if n == 2 => {}
            other => panic!("after retry {n}: {other:?}"),
        }
    }
    let out = reconcile(&cluster, &mut state, at + Duration::from_secs(3600)).await;
    assert!(out.sync.is_none(), "{:?}", out.decision);
    assert_eq!(applies(&cluster), 3, "the first attempt and two retries");

    // The directory changes: a new revision, synced at once.
    let changed = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "bad"}, "data": {"changed": "yes"}});
    std::fs::write(
        repo.dir.path().join("app/bad.json"),
        serde_json::to_string_pretty(&changed).expect("json"),
    )
    .expect("write");
    let out = reconcile(&cluster, &mut state, at + Duration::from_secs(3600)).await;
    assert_eq!(
        out.decision,
        Some(Decision::SyncNow {
            reason: SyncReason::NewRevision
        })
    );
    assert!(out.sync.is_some());
    assert_eq!(applies(&cluster), 4);
    let now_digest = op_field(&app(&cluster), "syncResult/contentDigest");
    assert!(now_digest.starts_with("sha256:") && now_digest != digest);
}

/// [`failing_automated_app`] with its `app/` a plain directory (no git: `revision` ""), a
/// retry limit of 3, loop recognition on (threshold 3) and LoopGuard for every app.
fn looping_directory_app() -> (MemoryCluster, Repo, ReconcileState) {
    let (cluster, repo) = failing_automated_app();
    std::fs::remove_dir_all(repo.dir.path().join(".git")).expect("no git: a plain directory");
    set_spec(
        &cluster,
        "syncPolicy",
        json!({"automated": {},
            "retry": {"limit": 3, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "1m"}}}),
    );
    let options = RunOptions {
        loops: Some(LoopsHandle::new(crate::loops::LoopOptions {
            guard_all: true,
            ..crate::loops::LoopOptions::default()
        })),
        ..opts()
    };
    (cluster, repo, ReconcileState { options })
}

/// Writes the directory's `bad` ConfigMap with `data.v`.
fn edit_bad(repo: &Repo, v: &str) {
    let changed = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "bad"}, "data": {"v": v}});
    std::fs::write(
        repo.dir.path().join("app/bad.json"),
        serde_json::to_string_pretty(&changed).expect("json"),
    )
    .expect("write");
}

/// Sync-loop recognition keys a plain directory's syncs on its content, not on its empty
/// revision: three failed syncs of three different contents (each edit a new revision,
/// synced at once) leave the same object differing, yet are no loop.
#[tokio::test]
async fn syncs_of_different_directory_contents_are_not_one_revisions_loop() {
    let (cluster, repo, mut state) = looping_directory_app();
    for (n, v) in ["", "2", "3"].into_iter().enumerate() {
        if !v.is_empty() {
            edit_bad(&repo, v);
        }
        let out = reconcile(&cluster, &mut state, now()).await;
        assert_eq!(
            out.decision,
            Some(Decision::SyncNow {
                reason: SyncReason::NewRevision
            }),
            "content {n}"
        );
        assert!(!out.sync.expect("a sync").succeeded());
        assert!(!out.looping, "content {n}: {:#}", app(&cluster)["status"]);
    }
    assert_eq!(app(&cluster).pointer("/status/syncLoop"), None);
}

/// A loop of a plain directory's content is recorded with that content's identity (its
/// digest, named short in the condition); LoopGuard (on for every app) keeps the next retry
/// of that content from re-applying the looping object; once the directory is edited it
/// keeps nothing from the sync of the edit: it is made and applied.
#[tokio::test]
async fn a_directory_edited_out_of_its_loop_is_synced_not_guarded() {
    let (cluster, repo, mut state) = looping_directory_app();
    // The first attempt and its two retries (10 s, then 20 s later): three syncs of one
    // content with `bad` differing after each.
    let mut at = now();
    let mut looping = false;
    for n in 0..3 {
        let out = reconcile(&cluster, &mut state, at).await;
        assert!(!out.sync.expect("a sync").succeeded(), "sync {n}");
        looping = out.looping;
        at += Duration::from_secs(10 << n);
    }
    assert!(looping, "three syncs of one content: a loop");
    let got = app(&cluster);
    let digest = op_field(&got, "syncResult/contentDigest");
    assert!(digest.starts_with("sha256:"), "{got:#}");
    assert_eq!(got["status"]["syncLoop"]["revision"], json!(digest));
    let message = &got["status"]["conditions"][0]["message"];
    assert!(
        message
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("revision {} synced 3 times", &digest[..14])),
        "{message}"
    );

    // The third retry of the same content would only re-apply the looping object: not made.
    let out = reconcile(&cluster, &mut state, at).await;
    assert_eq!(
        out.decision,
        Some(Decision::Nothing {
            why: crate::auto::NoSync::LoopGuard
        })
    );
    assert!(out.sync.is_none());

    // The webhook is fixed and the directory edited: a new revision, synced and applied —
    // not kept from `bad` as the loop's revision was.
    cluster.clear_failures();
    edit_bad(&repo, "fixed");
    let out = reconcile(&cluster, &mut state, at).await;
    assert_eq!(
        out.decision,
        Some(Decision::SyncNow {
            reason: SyncReason::NewRevision
        })
    );
    assert!(out.sync.expect("a sync").succeeded());
    let bad = cluster.object(&cm_key("bad")).expect("applied");
    assert_eq!(bad.pointer("/data/v"), Some(&json!("fixed")), "{bad:#}");
}

/// A multi-source app (two git repositories) syncs automatically when any source moves: a
/// new commit of the second source, or an edit of the second source's spec, is a new
/// revision (Argo CD compares every source's revision and every source).
#[tokio::test]
async fn a_multi_source_app_syncs_a_new_commit_or_spec_edit_of_its_second_source() {
    let (cluster, first) = setup(&[configmap("a", json!({}))], json!({"automated": {}}));
    let second = Repo::new(&[configmap("b", json!({}))]);
    // The second repository's other directory, for the spec edit.
    let other = second.dir.path().join("other");
    std::fs::create_dir_all(&other).expect("other dir");
    std::fs::write(
        other.join("c.json"),
        serde_json::to_string_pretty(&configmap("c", json!({}))).expect("json"),
    )
    .expect("write");
    git(second.dir.path(), &["add", "-A"]);
    git(second.dir.path(), &["commit", "-q", "-m", "other"]);
    let url = |r: &Repo| format!("file://{}", r.dir.path().display());
    let sources = |second_path: &str| {
        json!([
            {"repoURL": url(&first), "path": "app", "targetRevision": "HEAD"},
            {"repoURL": url(&second), "path": second_path, "targetRevision": "HEAD"},
        ])
    };
    set_spec(&cluster, "sources", sources("app"));
    let mut state = ReconcileState { options: opts() };
    let mut pass = async |what: &str| {
        let out = reconcile(&cluster, &mut state, now()).await;
        if let Some(sync) = &out.sync {
            assert!(sync.succeeded(), "{what}: {}", sync.message);
        }
        (out.decision, out.sync.is_some())
    };
    let new_revision = Some(Decision::SyncNow {
        reason: SyncReason::NewRevision,
    });
    assert_eq!(pass("first").await, (new_revision, true));
    assert!(!pass("again").await.1, "synced: nothing to do");

    second.commit(&[configmap("b", json!({"v": "2"}))], &[]);
    assert_eq!(
        pass("a commit of the second source").await,
        (new_revision, true)
    );
    let b = cluster.object(&cm_key("b")).expect("b");
    assert_eq!(b.pointer("/metadata/annotations/v"), Some(&json!("2")));
    assert!(!pass("again").await.1);

    set_spec(&cluster, "sources", sources("other"));
    assert_eq!(
        pass("the second source's path edited").await,
        (new_revision, true)
    );
    assert!(cluster.object(&cm_key("c")).is_some(), "c applied");
}

/// Argo CD's `operation` field: what plumb runs from it, and what it refuses by name.
#[test]
fn a_requested_operation_is_read_as_argo_cd_writes_it() {
    let app = |op: Value| json!({"metadata": {"name": "a"}, "operation": op});
    assert!(requested_operation(&json!({"metadata": {"name": "a"}})).is_none());
    let (req, by) = requested_operation(&app(json!({
        "initiatedBy": {"username": "alice"},
        "sync": {"prune": true, "revision": "v2", "syncStrategy": {"apply": {}},
                 "resources": [{"group": "apps", "kind": "Deployment", "name": "web"}],
                 "source": {"repoURL": "https://git.example.com/r.git", "path": "app", "targetRevision": "v1"}}})))
    .expect("an operation")
    .expect("readable");
    assert_eq!(by.username, "alice");
    assert!(req.prune && req.skip_hooks && !req.dry_run);
    assert_eq!(req.revision.as_deref(), Some("v2"));
    assert_eq!(req.resources.len(), 1);
    assert_eq!(
        req.source.as_ref().expect("a rollback's source")["path"],
        "app"
    );
    for (op, want) in [
        (
            json!({"sync": {"syncOptions": ["ServerSideApply=true"]}}),
            "syncOptions",
        ),
        (
            json!({"sync": {"syncStrategy": {"hook": {"force": true}}}}),
            "forced",
        ),
        (json!({"sync": {}, "retry": {"limit": 3}}), "retry"),
        (json!({"sync": {"revisions": ["a", "b"]}}), "revisions"),
        (json!({"initiatedBy": {}}), "no sync"),
        (json!({"sync": {"prune": "yes"}}), "not readable"),
    ] {
        let e = requested_operation(&app(op))
            .expect("an operation")
            .unwrap_err();
        assert!(e.contains(want), "{want}: {e}");
    }
}
