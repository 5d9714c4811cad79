//! Faults on the test bed, with the real `plumb controller` process.
//!
//! - SIGKILL in the middle of a multi-wave sync: a new controller (after the dead one's Lease
//!   expires) resumes the operation from the Application's status; no wave is applied before
//!   the one it waits for is healthy, nothing is recreated, and one history entry is written.
//! - etcd paused (SIGSTOP) for 20 s under a running controller, while git changes: the
//!   controller survives, and once etcd is back a refresh syncs the change (watches resumed).
//! - The API server restarted (etcd kept, testbed/restart-apiserver.sh) while a sync waits
//!   for wave 0: the operation completes once wave 0 is healthy, with no manual action.
//! - A mutating webhook with `failurePolicy: Fail` that is down: the sync fails naming the
//!   webhook, is retried with backoff (`syncPolicy.retry`; each retry counted in
//!   `operationState.retryCount`, which `plumb app get` shows), and succeeds once it answers.
//! - A field another manager owns by server-side apply: forced, as Argo CD does.
//! - A source that fails to render (its path missing): retried after 5 s, doubling, not at
//!   the next refresh, and synced once it is back.
//! - An automated sync of a plain directory (no commit) that the API server refuses: retried
//!   per `syncPolicy.retry` (the same content is the same revision), then not again until the
//!   directory changes, which is synced at once.
//!
//! Each test's Application, namespaces, repository directory and controller process come
//! from one fixture, `common/testbed.rs` (`AppBed`).

mod common;
#[path = "common/testbed.rs"]
mod fixture;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use fixture::{AppBed, Controller, app, ask_refresh, op, plumb};
use plumb_cluster::Cluster;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::SystemTime;
use support::{apply, assign_lb, testbed, unique, wait_until};

fn kill(child: Controller) {
    drop(child);
}

/// The faults here stop parts of the shared test bed: one test at a time.
static FAULT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A test's start: its turn (the [`FAULT`] lock, taken before it connects: a connection tried
/// while another test restarts the API server fails), the test bed, and its [`AppBed`] (`prefix`
/// names it and the test in a notice, `dest_labels` label its destination namespace). `None`
/// without a test bed.
async fn start(
    prefix: &str,
    dest_labels: Value,
) -> Option<(tokio::sync::MutexGuard<'static, ()>, Cluster, AppBed)> {
    let turn = FAULT.lock().await;
    let cluster = testbed(prefix).await?;
    let bed = AppBed::new(&cluster, prefix, dest_labels).await;
    Some((turn, cluster, bed))
}

/// The test bed's etcd process (from `$TESTBED_DIR/pids`).
fn etcd_pid() -> String {
    let pids = std::fs::read_to_string(support::testbed_dir().join("pids")).expect("pids");
    pids.lines()
        .find_map(|l| l.strip_prefix("etcd "))
        .expect("etcd in pids")
        .trim()
        .to_string()
}

fn signal(pid: &str, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, pid])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "kill {sig} {pid}");
}

/// etcd stopped (SIGSTOP) while it lives; SIGCONT when dropped, also on a failed assertion.
struct Paused(String);

impl Paused {
    fn etcd() -> Paused {
        let pid = etcd_pid();
        signal(&pid, "-STOP");
        Paused(pid)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0]).status();
    }
}

async fn get(cluster: &Cluster, group: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
    cluster
        .get_object(group, kind, ns, name)
        .await
        .expect("get object")
}

/// `status.operationState.retryCount` (0 when absent).
fn retry_count(app: &Value) -> i64 {
    app.pointer("/status/operationState/retryCount")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

async fn cm_value(cluster: &Cluster, ns: &str) -> Option<String> {
    cluster
        .get_object("", "ConfigMap", ns, "settings")
        .await
        .ok()
        .flatten()
        .and_then(|c| {
            c.pointer("/data/k")
                .and_then(Value::as_str)
                .map(String::from)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_killed_mid_sync_is_resumed_by_the_next() {
    let Some((_one_at_a_time, cluster, bed)) = start("fault-kill", json!({})).await else {
        return;
    };
    let (apps_ns, dest) = (&bed.apps_ns, &bed.dest);
    // Wave 0: a LoadBalancer Service, Progressing until it has an address (nobody assigns one
    // until the test does). Waves 1 and 2: ConfigMaps.
    bed.write(
        "lb.json",
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "front", "annotations": {"argocd.argoproj.io/sync-wave": "0"}},
            "spec": {"type": "LoadBalancer", "selector": {"app": "front"},
                     "ports": [{"port": 80, "targetPort": 8080}]}}),
    );
    for (name, wave) in [("one", "1"), ("two", "2")] {
        bed.write(
            &format!("{name}.json"),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "annotations": {"argocd.argoproj.io/sync-wave": wave}},
                "data": {"k": name}}),
        );
    }
    let name = "waves";
    bed.application(&cluster, name, json!({"automated": {"prune": true}}))
        .await;

    let (first, _) = bed.controller("first.log");
    // The first controller is in wave 0's health wait: the operation is Running in the
    // Application's status, the Service exists, the later waves do not.
    let running = wait_until("the sync waiting for wave 0", || async {
        let a = app(&cluster, apps_ns, name).await;
        (op(&a, "phase") == "Running" && op(&a, "message").starts_with("waiting for")).then_some(a)
    })
    .await;
    kill(first);
    let started_at = op(&running, "startedAt");
    let service = get(&cluster, "", "Service", dest, "front")
        .await
        .expect("wave 0 applied");
    for cm in ["one", "two"] {
        assert!(
            get(&cluster, "", "ConfigMap", dest, cm).await.is_none(),
            "{cm} applied before wave 0 was healthy"
        );
    }
    // Still Running with the controller dead: nothing ended the operation.
    let after_kill = app(&cluster, apps_ns, name).await;
    assert_eq!(op(&after_kill, "phase"), "Running");
    assert!(
        after_kill
            .pointer("/status/history")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    );

    assign_lb(&cluster, dest, "front").await;
    let healthy_at = SystemTime::now();
    let (second, second_log) = bed.controller("second.log");
    let done = wait_until("the resumed sync ending", || async {
        let a = app(&cluster, apps_ns, name).await;
        (op(&a, "phase") == "Succeeded").then_some(a)
    })
    .await;
    // The controller logs a reconcile after it has written the status that ends it: wait for
    // that line, not for the status alone, before stopping it.
    let resumed_line = format!("{apps_ns}/{name}");
    let log = wait_until(
        "the second controller logging the resumed operation",
        || async {
            let log = std::fs::read_to_string(&second_log).unwrap_or_default();
            log.lines()
                .any(|l| l.contains(&resumed_line) && l.contains("\"resumed\":true"))
                .then_some(log)
        },
    )
    .await;
    kill(second);

    // The same operation, resumed (its start time kept), one history entry.
    assert_eq!(op(&done, "startedAt"), started_at);
    let history = done["status"]["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(history.len(), 1, "{history:?}");
    assert!(!log.contains("panicked"), "{log}");
    // Wave 0 not recreated; waves 1 and 2 applied after wave 0 was healthy, in order.
    let service_now = get(&cluster, "", "Service", dest, "front")
        .await
        .expect("service");
    assert_eq!(service_now["metadata"]["uid"], service["metadata"]["uid"]);
    let created = |obj: &Value| {
        obj["metadata"]["creationTimestamp"]
            .as_str()
            .and_then(|t| plumb_sync::time::parse_rfc3339(t).ok())
            .expect("creationTimestamp")
    };
    let one = get(&cluster, "", "ConfigMap", dest, "one")
        .await
        .expect("wave 1");
    let two = get(&cluster, "", "ConfigMap", dest, "two")
        .await
        .expect("wave 2");
    // creationTimestamp has second resolution.
    let healthy_s = healthy_at
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let secs = |t: SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    };
    assert!(
        secs(created(&one)) >= healthy_s,
        "wave 1 before wave 0 was healthy"
    );
    assert!(created(&one) <= created(&two), "wave 2 before wave 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_survives_etcd_paused_for_20_seconds() {
    let Some((_one_at_a_time, cluster, bed)) = start("fault-etcd", json!({})).await else {
        return;
    };
    let (apps_ns, dest) = (&bed.apps_ns, &bed.dest);
    let cm = |v: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
            "data": {"k": v}})
    };
    bed.write("cm.json", cm("before"));
    let name = "steady";
    bed.application(&cluster, name, json!({"automated": {"prune": true}}))
        .await;
    let (mut ctl, log) = bed.controller("controller.log");
    let synced = |entries: usize| {
        let cluster = &cluster;
        async move {
            let a = app(cluster, apps_ns, name).await;
            let entries_now = a["status"]["history"].as_array().map_or(0, Vec::len);
            (op(&a, "phase") == "Succeeded" && entries_now >= entries)
                .then_some((a, cm_value(cluster, dest).await))
        }
    };
    let (_, first) = wait_until("the first sync recorded", || synced(1)).await;
    assert_eq!(first.as_deref(), Some("before"));

    // The fault: etcd stopped for 20 s (the API server's requests hang, then fail); git
    // changes meanwhile.
    {
        let _paused = Paused::etcd();
        bed.write("cm.json", cm("after"));
        tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    }
    assert!(
        ctl.alive(),
        "the controller exited while etcd was paused:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    // A refresh, once the API answers again.
    ask_refresh(&cluster, apps_ns, name).await;
    let (stored, now) = wait_until(
        "the change synced and recorded after etcd came back",
        || synced(2),
    )
    .await;
    assert_eq!(now.as_deref(), Some("after"));
    assert!(ctl.alive());
    let history = stored["status"]["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(history.len(), 2, "one entry per sync: {history:?}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!text.contains("panicked"), "{text}");
    drop(ctl);
}

/// Whether `manager`'s managedFields entry (operation Apply) owns `data.<key>`.
fn owns(obj: &Value, manager: &str, key: &str) -> bool {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["manager"] == manager)
        .any(|e| e.pointer(&format!("/fieldsV1/f:data/f:{key}")).is_some())
}

/// A field another manager owns by server-side apply: a sync with `ServerSideApply=true`
/// forces the conflict as Argo CD does (the field is git's value and plumb's), leaving the
/// other manager's other fields alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflicting_field_manager_is_overridden_as_argo_cd_does() {
    let Some((_one_at_a_time, cluster, bed)) = start("fault-ssa", json!({})).await else {
        return;
    };
    let (apps_ns, dest) = (&bed.apps_ns, &bed.dest);
    // Another team's apply owns data.k and data.theirs.
    let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": dest},
        "data": {"k": "theirs", "theirs": "kept"}});
    for answer in cluster.apply(vec![theirs], "other-team", false).await {
        answer.expect("the other team's apply");
    }
    bed.write(
        "cm.json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
            "data": {"k": "git"}}),
    );
    let name = "ssa";
    bed.application(
        &cluster,
        name,
        json!({"automated": {"prune": true}, "syncOptions": ["ServerSideApply=true"]}),
    )
    .await;
    let out = plumb(&[
        "controller",
        "--once",
        "--app-namespace",
        apps_ns,
        "--lease-namespace",
        apps_ns,
    ]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{log}");
    let a = app(&cluster, apps_ns, name).await;
    assert_eq!(op(&a, "phase"), "Succeeded", "{log}");
    let cm = get(&cluster, "", "ConfigMap", dest, "settings")
        .await
        .expect("configmap");
    assert_eq!(cm["data"]["k"], "git");
    assert_eq!(
        cm["data"]["theirs"], "kept",
        "the other manager's field stays"
    );
    assert!(
        owns(&cm, "plumb", "k"),
        "plumb owns data.k: {}",
        cm["metadata"]
    );
    assert!(!owns(&cm, "other-team", "k"), "the conflict was forced");
    assert!(owns(&cm, "other-team", "theirs"));
}

/// Restarts the test bed's API server (etcd and its data kept); returns once it is ready.
fn restart_apiserver() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testbed/restart-apiserver.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(support::testbed_dir())
        .stdin(Stdio::null())
        .output()
        .expect("restart-apiserver.sh runs");
    assert!(
        out.status.success(),
        "restart-apiserver.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_survives_an_api_server_restart() {
    let Some((_one_at_a_time, cluster, bed)) = start("fault-api", json!({})).await else {
        return;
    };
    let (apps_ns, dest) = (&bed.apps_ns, &bed.dest);
    bed.write(
        "lb.json",
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "front", "annotations": {"argocd.argoproj.io/sync-wave": "0"}},
            "spec": {"type": "LoadBalancer", "selector": {"app": "front"},
                     "ports": [{"port": 80, "targetPort": 8080}]}}),
    );
    bed.write(
        "one.json",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "one", "annotations": {"argocd.argoproj.io/sync-wave": "1"}},
            "data": {"k": "one"}}),
    );
    let name = "restart";
    bed.application(&cluster, name, json!({"automated": {"prune": true}}))
        .await;
    let (mut ctl, log) = bed.controller("controller.log");
    wait_until("the sync waiting for wave 0", || async {
        let a = app(&cluster, apps_ns, name).await;
        (op(&a, "phase") == "Running" && op(&a, "message").starts_with("waiting for")).then_some(())
    })
    .await;

    tokio::task::spawn_blocking(restart_apiserver)
        .await
        .expect("restart");
    // The new API server answers this client again (its connections were closed).
    wait_until("the API server answering after its restart", || async {
        cluster.get_application(apps_ns, name).await.ok().flatten()
    })
    .await;
    assign_lb(&cluster, dest, "front").await;
    let done = wait_until("the operation ending after the restart", || async {
        let a = app(&cluster, apps_ns, name).await;
        matches!(op(&a, "phase").as_str(), "Succeeded" | "Failed" | "Error").then_some(a)
    })
    .await;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        ctl.alive(),
        "the controller exited after the restart:\n{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
    // Either it resumed and succeeded, or it failed and the retry/self-heal synced it: in both
    // cases the app ends synced with wave 1 applied, without manual action.
    let synced = wait_until("the app synced after the restart", || async {
        let a = app(&cluster, apps_ns, name).await;
        (op(&a, "phase") == "Succeeded"
            && a.pointer("/status/sync/status").and_then(Value::as_str) == Some("Synced"))
        .then_some(a)
    })
    .await;
    assert!(
        get(&cluster, "", "ConfigMap", dest, "one").await.is_some(),
        "wave 1 applied (first outcome: {} {})",
        op(&done, "phase"),
        op(&done, "message")
    );
    let history = synced["status"]["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(history.len(), 1, "{history:?}");
    drop(ctl);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_through_a_down_webhook_fails_naming_it_and_is_retried() {
    let value = support::webhook::selector_value();
    let label = "policy.lab/image-pull";
    let Some((_one_at_a_time, cluster, bed)) = start("fault-hook", json!({label: value})).await
    else {
        return;
    };
    let hook = support::webhook::Webhook::start().await;
    let (apps_ns, dest) = (&bed.apps_ns, &bed.dest);
    // The webhook (for ConfigMaps here) points at a port nothing listens on: down.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let config_name = unique("fault-hook");
    let mut config = hook.configuration(&config_name, label, &value);
    config["webhooks"][0]["rules"][0]["apiGroups"] = json!([""]);
    config["webhooks"][0]["rules"][0]["resources"] = json!(["configmaps"]);
    let working_url = config["webhooks"][0]["clientConfig"]["url"].clone();
    config["webhooks"][0]["clientConfig"]["url"] =
        json!(format!("https://127.0.0.1:{dead}/mutate"));
    config["webhooks"][0]["timeoutSeconds"] = json!(2);
    apply(&cluster, vec![config.clone()]).await;
    let probe = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "probe", "namespace": dest}, "data": {"k": "v"}});
    wait_until("the down webhook refusing ConfigMaps", || async {
        match cluster
            .dry_run_apply(vec![probe.clone()], "plumb-test", false)
            .await
            .remove(0)
        {
            Err(e) if e.to_string().contains("force-always.plumb.test") => Some(()),
            _ => None,
        }
    })
    .await;

    bed.write(
        "cm.json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
            "data": {"k": "v"}}),
    );
    // A commit (a plain directory is retried alike: see the test after this one).
    bed.commit();
    let name = "hooked";
    bed.application(
        &cluster,
        name,
        json!({"automated": {"prune": true},
            "retry": {"limit": 20, "backoff": {"duration": "1s", "factor": 2, "maxDuration": "4s"}}}),
    )
    .await;
    let (mut ctl, log) = bed.controller("controller.log");
    // Failed, naming the webhook, and retried: the controller syncs again (after the retry
    // backoff), not only at the next refresh (an hour here).
    let attempts = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(&format!("{apps_ns}/{name}")) && l.contains("\"synced\":true"))
            .count()
    };
    let failed = wait_until("failed attempts naming the webhook, retried", || async {
        let a = app(&cluster, apps_ns, name).await;
        (op(&a, "message").contains("force-always.plumb.test")
            && attempts() >= 2
            && retry_count(&a) >= 1)
            .then_some(a)
    })
    .await;
    assert!(
        get(&cluster, "", "ConfigMap", dest, "settings")
            .await
            .is_none(),
        "nothing passed the webhook: {}",
        failed["status"]["operationState"]
    );
    // The webhook is back: the next retry succeeds, through it.
    config["webhooks"][0]["clientConfig"]["url"] = working_url;
    apply(&cluster, vec![config]).await;
    let done = wait_until(
        "the retried sync succeeding once the webhook answers",
        || async {
            let a = app(&cluster, apps_ns, name).await;
            (op(&a, "phase") == "Succeeded").then_some(a)
        },
    )
    .await;
    assert!(
        get(&cluster, "", "ConfigMap", dest, "settings")
            .await
            .is_some()
    );
    assert!(
        hook.calls.total.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "the webhook was called"
    );
    let history = done["status"]["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(history.len(), 1, "{history:?}");
    // The operation that succeeded was a retry: it carries the count, and `app get` shows it.
    let retries = retry_count(&done);
    assert!(retries >= 1, "{}", done["status"]["operationState"]);
    let get = plumb(&["app", "get", name, "--cluster", "-N", apps_ns]);
    let shown = String::from_utf8_lossy(&get.stdout);
    assert_eq!(get.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains(&format!("\nRetry Count:        {retries}\n")),
        "{shown}"
    );
    assert!(ctl.alive());
    drop(ctl);
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
}

/// The controller's log lines about `app` (`ns/name`), parsed.
fn log_lines(log: &Path, app: &str) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["app"] == app)
        .collect()
}

/// How many of `lines` are reconciles that synced.
fn syncs(lines: &[Value]) -> usize {
    lines.iter().filter(|l| l["synced"] == true).count()
}

/// A plain directory (no git: no commit, `revision` "") whose automated sync the API server
/// refuses: the same content counts as the same revision, so the failure is retried per
/// `syncPolicy.retry` — with limit 2, exactly three attempts — and then not again, however
/// often the app is compared, until the directory changes; the change is synced at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sync_of_a_plain_directory_is_retried_per_the_backoff_until_it_changes() {
    // No fault of the bed here, but the attempts are counted: another test's fault (the API
    // server restarted) would fail a reconcile in between, and the retry with it.
    let Some((_one_at_a_time, cluster, bed)) = start("fault-dir", json!({})).await else {
        return;
    };
    let (apps_ns, dest) = (&bed.apps_ns, &bed.dest);
    let cm = |key: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
            "data": {key: "v"}})
    };
    // A data key with a space: invalid, the API server refuses the ConfigMap.
    bed.write("cm.json", cm("not a key"));
    let name = "plain";
    bed.application(
        &cluster,
        name,
        json!({"automated": {"prune": true},
            "retry": {"limit": 2, "backoff": {"duration": "1s", "factor": 2, "maxDuration": "4s"}}}),
    )
    .await;
    let (mut ctl, log) = bed.controller("controller.log");
    let key = format!("{apps_ns}/{name}");
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();

    // Three failed attempts (the first and two retries), then a reconcile that does not sync:
    // the limit is used up. (Before plumb identified a directory by its content, each compare
    // synced it again, about once a second.)
    let failed = wait_until(
        "three failed attempts, then a compare that does not sync",
        || async {
            let lines = log_lines(&log, &key);
            let third = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l["synced"] == true)
                .nth(2)?
                .0;
            if !lines[third + 1..].iter().any(|l| l["synced"] == false) {
                return None;
            }
            let a = app(&cluster, apps_ns, name).await;
            (op(&a, "phase") == "Failed").then_some(a)
        },
    )
    .await;
    let lines = log_lines(&log, &key);
    assert_eq!(syncs(&lines), 3, "log:\n{}", read_log());
    assert!(
        lines
            .iter()
            .filter(|l| l["synced"] == true)
            .all(|l| l["operation"] == "Failed"),
        "log:\n{}",
        read_log()
    );
    assert_eq!(
        retry_count(&failed),
        2,
        "{}",
        failed["status"]["operationState"]
    );
    let digest = failed
        .pointer("/status/operationState/syncResult/contentDigest")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    assert!(digest.starts_with("sha256:"), "{}", failed["status"]);
    assert!(
        get(&cluster, "", "ConfigMap", dest, "settings")
            .await
            .is_none(),
        "refused, never applied"
    );

    // Compared again (a refresh asked for, twice): no sync, the content is unchanged.
    for _ in 0..2 {
        let seen = log_lines(&log, &key).len();
        ask_refresh(&cluster, apps_ns, name).await;
        wait_until("the asked-for refresh logged", || async {
            log_lines(&log, &key)[seen..]
                .iter()
                .any(|l| l["trigger"] == "app")
                .then_some(())
        })
        .await;
    }
    assert_eq!(syncs(&log_lines(&log, &key)), 3, "log:\n{}", read_log());

    // The directory changes (a valid key now): synced at the next compare.
    bed.write("cm.json", cm("k"));
    ask_refresh(&cluster, apps_ns, name).await;
    let done = wait_until("the changed directory synced", || async {
        let a = app(&cluster, apps_ns, name).await;
        (op(&a, "phase") == "Succeeded").then_some(a)
    })
    .await;
    assert!(
        get(&cluster, "", "ConfigMap", dest, "settings")
            .await
            .is_some()
    );
    let changed = done
        .pointer("/status/operationState/syncResult/contentDigest")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        changed.starts_with("sha256:") && changed != digest,
        "{}",
        done["status"]
    );
    // The controller logs a reconcile after the status write that ends it: wait for the line.
    wait_until("the fourth sync logged", || async {
        (syncs(&log_lines(&log, &key)) >= 4).then_some(())
    })
    .await;
    assert_eq!(syncs(&log_lines(&log, &key)), 4, "log:\n{}", read_log());
    assert!(ctl.alive());
    drop(ctl);
}

/// A source that cannot be rendered for a while (its path missing, as when a git server is
/// down or a push is half done): the controller, whose refresh interval is an hour, tries
/// again after 5 s, then 10 s (doubling up to the interval), and syncs the app once the source
/// is back, with no refresh asked for and nothing changed on the cluster to wake it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_that_fails_to_render_is_retried_soon_not_at_the_next_refresh() {
    // No fault of the bed here, but a restarted API server would fail a read of the app.
    let Some((_one_at_a_time, cluster, bed)) = start("fault-render", json!({})).await else {
        return;
    };
    let (apps_ns, dest) = (&bed.apps_ns, &bed.dest);
    bed.write(
        "cm.json",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
            "data": {"k": "v"}}),
    );
    // The app's path is moved away before the controller starts.
    let away = bed.dir.join("repo/away");
    std::fs::rename(bed.repo(), &away).expect("move the path away");
    let name = "late";
    bed.application(&cluster, name, json!({"automated": {"prune": true}}))
        .await;
    let (mut ctl, log) = bed.controller("controller.log");
    let key = format!("{apps_ns}/{name}");
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let failures = || {
        log_lines(&log, &key)
            .iter()
            .filter(|l| l.get("error").is_some())
            .count()
    };
    // Two failed reconciles: the second is a retry (the interval is an hour, and nothing
    // else queues the app).
    wait_until("two failed reconciles of the missing path", || async {
        (failures() >= 2).then_some(())
    })
    .await;
    let first = &log_lines(&log, &key)[0];
    assert!(first.get("error").is_some(), "log:\n{}", read_log());
    // Meanwhile the Application says why, as Argo CD's does: a ComparisonError.
    let comparison_error = |a: &Value| {
        a.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "ComparisonError"
                        && c["message"]
                            .as_str()
                            .is_some_and(|m| m.starts_with("Failed to load target state: "))
                })
            })
    };
    wait_until("a ComparisonError on the app", || async {
        comparison_error(&app(&cluster, apps_ns, name).await).then_some(())
    })
    .await;

    std::fs::rename(&away, bed.repo()).expect("move the path back");
    wait_until("the app synced once its path is back", || async {
        let a = app(&cluster, apps_ns, name).await;
        let cm = get(&cluster, "", "ConfigMap", dest, "settings").await?;
        (op(&a, "phase") == "Succeeded" && cm["data"]["k"] == "v").then_some(())
    })
    .await;
    // Every reconcile from the first failure to the sync was the retry timer's. (The
    // controller logs a reconcile after the status write that ends it: wait for the line.)
    wait_until("the sync logged", || async {
        (syncs(&log_lines(&log, &key)) >= 1).then_some(())
    })
    .await;
    wait_until("the ComparisonError gone", || async {
        (!comparison_error(&app(&cluster, apps_ns, name).await)).then_some(())
    })
    .await;
    let lines = log_lines(&log, &key);
    let synced = lines
        .iter()
        .position(|l| l["synced"] == true)
        .expect("a reconcile that synced");
    assert!(
        lines[1..=synced].iter().all(|l| l["trigger"] == "timer"),
        "log:\n{}",
        read_log()
    );
    assert!(ctl.alive());
    drop(ctl);
}
