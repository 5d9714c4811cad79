//! The controller loop on the test bed: watches make drift visible (and healed) within
//! seconds although the refresh interval is an hour; a new Application is picked up from its
//! watch; status writes do not make the controller spin.

mod common;

use common::support::{DEADLINE, apply, namespace, testbed, unique, wait_until};
use common::{application, get_app, git_repo, history, install_crd};
use plumb_sync::controller::{Controller, ControllerOptions, Event};
use plumb_sync::run::RunOptions;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn configmap(name: &str, value: &str) -> String {
    serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"k": value}}))
    .expect("json")
}

async fn data(cluster: &plumb_cluster::Cluster, ns: &str, name: &str) -> Option<String> {
    cluster
        .get_object("", "ConfigMap", ns, name)
        .await
        .ok()
        .flatten()
        .and_then(|c| {
            c.pointer("/data/k")
                .and_then(Value::as_str)
                .map(String::from)
        })
}

/// Waits (up to [`DEADLINE`]) until `check` returns `Some`; what it returned, and after how
/// long.
async fn until<T, F, Fut>(what: &str, check: F) -> (T, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    let v = wait_until(what, check).await;
    (v, started.elapsed())
}

/// How long the reconcile count must stay the same for the controller to count as quiet.
/// A controller that spins on its own status writes reconciles every debounce (200 ms
/// here) plus a reconcile's duration, so it is never quiet that long.
const QUIET: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn watches_see_drift_within_seconds_and_self_heal_it() {
    let Some(cluster) = testbed("controller_watch").await else {
        return;
    };
    install_crd(&cluster).await;
    let apps_ns = namespace(&cluster, "ctl-apps", json!({})).await;
    let dest = namespace(&cluster, "ctl-dest", json!({})).await;
    let (repo, _) = git_repo(
        "plumb-ctl",
        &[
            ("app/a.json", &configmap("settings", "from-git")),
            ("app/b.json", &configmap("other", "x")),
        ],
    );
    let cluster = Arc::new(cluster);
    let reconciles = Arc::new(AtomicUsize::new(0));
    let watch_triggered = Arc::new(AtomicUsize::new(0));
    let opts = ControllerOptions {
        // An hour: anything seen within seconds was seen through a watch.
        refresh: Duration::from_secs(3600),
        jitter: Duration::ZERO,
        debounce: Duration::from_millis(200),
        app_namespace: Some(apps_ns.clone()),
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
    let log = {
        let (reconciles, watch_triggered) = (reconciles.clone(), watch_triggered.clone());
        Arc::new(move |e: Event<'_>| {
            if let Event::Reconciled { trigger, .. } = e {
                reconciles.fetch_add(1, Ordering::SeqCst);
                if trigger == plumb_sync::controller::Trigger::Watch {
                    watch_triggered.fetch_add(1, Ordering::SeqCst);
                }
            }
            if let Event::Failed { error, .. } = e {
                eprintln!("reconcile failed: {error}");
            }
        })
    };
    let running = {
        let controller = controller.clone();
        tokio::spawn(async move { controller.run(log, stop_rx).await })
    };

    // A new Application is seen through its watch and synced (automated).
    let name = unique("ctl");
    let policy = json!({"automated": {"prune": true, "selfHeal": true}});
    apply(
        &cluster,
        vec![application(&name, &apps_ns, &repo, "app", &dest, policy)],
    )
    .await;
    until("first sync", || async {
        (data(&cluster, &dest, "settings").await.as_deref() == Some("from-git")).then_some(())
    })
    .await;
    until("Synced status", || async {
        let app = get_app(&cluster, &apps_ns, &name).await;
        (common::sync_status(&app) == "Synced").then_some(())
    })
    .await;
    let synced_history = history(&get_app(&cluster, &apps_ns, &name).await).len();
    assert_eq!(synced_history, 1);

    // Quiet: with nothing changing, status writes alone do not trigger more reconciles. The
    // sync's own writes (the objects it applied, seen through the watches) cause one more
    // reconcile, at a moment a busy machine decides: so wait until the count stays the same
    // for a while, which a controller that spins on its status writes never does.
    let mut last = (reconciles.load(Ordering::SeqCst), Instant::now());
    until(
        "the controller to be quiet (it reconciles without cause?)",
        || {
            let now = reconciles.load(Ordering::SeqCst);
            if now != last.0 {
                last = (now, Instant::now());
            }
            let quiet = last.1.elapsed() >= QUIET;
            async move { quiet.then_some(()) }
        },
    )
    .await;

    // A refresh asked for by hand (the annotation; same generation) is done at once, and the
    // annotation removed.
    let before_refresh = reconciles.load(Ordering::SeqCst);
    cluster
        .patch_application(
            &apps_ns,
            &name,
            &json!({"metadata": {"annotations": {"argocd.argoproj.io/refresh": "hard"}}}),
        )
        .await
        .expect("annotate");
    until("refresh done", || async {
        let app = get_app(&cluster, &apps_ns, &name).await;
        (reconciles.load(Ordering::SeqCst) > before_refresh
            && app
                .pointer("/metadata/annotations/argocd.argoproj.io~1refresh")
                .is_none())
        .then_some(())
    })
    .await;

    // Someone edits a tracked ConfigMap: the watch sees it, self-heal restores git's value.
    let before = watch_triggered.load(Ordering::SeqCst);
    let mut edited = cluster
        .get_object("", "ConfigMap", &dest, "settings")
        .await
        .expect("get")
        .expect("exists");
    edited["data"]["k"] = json!("edited-by-hand");
    if let Some(meta) = edited["metadata"].as_object_mut() {
        meta.remove("managedFields");
    }
    cluster
        .replace_object(&edited, "kubectl-edit")
        .await
        .expect("edit");
    let (_, healed_after) = until("self-heal", || async {
        (data(&cluster, &dest, "settings").await.as_deref() == Some("from-git")).then_some(())
    })
    .await;
    eprintln!("drift healed {healed_after:?} after the edit");
    // The reconcile that healed it was triggered by the watch (its log comes at its end).
    until("a watch-triggered reconcile", || async {
        (watch_triggered.load(Ordering::SeqCst) > before).then_some(())
    })
    .await;
    let (app, _) = until("history entry", || async {
        let app = get_app(&cluster, &apps_ns, &name).await;
        (history(&app).len() == 2).then_some(app)
    })
    .await;
    assert_eq!(
        app["status"]["history"][1]["initiatedBy"]["automated"],
        true
    );

    // Deleting a tracked object is drift too.
    cluster
        .delete_object(
            &plumb_core::ResourceKey {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: dest.clone(),
                name: "other".into(),
            },
            plumb_cluster::Propagation::Background,
        )
        .await
        .expect("delete");
    until("re-created", || async {
        data(&cluster, &dest, "other").await
    })
    .await;

    stop_tx.send(true).expect("stop");
    tokio::time::timeout(DEADLINE, running)
        .await
        .expect("the controller stops")
        .expect("joined");
    controller.stop();
}
