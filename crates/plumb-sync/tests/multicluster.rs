//! Two API servers: the test bed of `TESTBED_DIR` (home: Applications, the cluster Secret,
//! status) and a second one this test starts with `testbed/up.sh` (and stops with
//! `testbed/down.sh`). Through the controller: apps aimed at the second cluster by `name`
//! and by `server` deploy there and nothing of theirs appears at home, while their status is
//! written at home; one connection serves both; an app aimed at home syncs alongside. The
//! second cluster stopped: its apps get a condition naming its server, the home app still
//! syncs. The cluster Secret removed: an `InvalidSpecError` condition, and the connection is
//! dropped.

mod common;

use common::support::second_bed::SecondBed;
use common::support::{DEADLINE, apply, wait_until};
use common::{app_testbed, application, get_app, git_repo};
use plumb_cluster::{Cluster, ClusterError, ConnectOptions, Propagation};
use plumb_core::ResourceKey;
use plumb_sync::controller::{Controller, ControllerOptions, Event};
use plumb_sync::run::RunOptions;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn configmap(name: &str) -> String {
    serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"k": "v"}}))
    .expect("json")
}

async fn exists(cluster: &Cluster, ns: &str, name: &str) -> bool {
    cluster
        .get_object("", "ConfigMap", ns, name)
        .await
        .expect("get")
        .is_some()
}

fn conditions(app: &Value) -> Vec<(String, String)> {
    app.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["type"].as_str().unwrap_or_default().to_string(),
                        c["message"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_deploy_to_the_second_cluster_and_one_down_fails_only_its_apps() {
    let Some((home, apps, dest)) = app_testbed("multicluster", "multi").await else {
        return;
    };
    let mut bed_b = SecondBed::start();
    let b = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(bed_b.kubeconfig()),
        context: None,
    })
    .await
    .expect("second test bed");
    apply(
        &b,
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": dest}})],
    )
    .await;
    let server_b = bed_b.server();
    // The cluster Secret, at home, in the control namespace (the Applications' own here):
    // client certificates of the second bed's admin.
    let config = json!({"tlsClientConfig": {
        "caData": bed_b.kubeconfig_field("certificate-authority-data"),
        "certData": bed_b.kubeconfig_field("client-certificate-data"),
        "keyData": bed_b.kubeconfig_field("client-key-data"),
    }});
    apply(
        &home,
        vec![json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "bed-b", "namespace": apps,
                "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
            "stringData": {"name": "bed-b", "server": server_b, "config": config.to_string()}})],
    )
    .await;

    let (repo, _) = git_repo(
        "multicluster",
        &[
            ("by-name/cm.json", &configmap("by-name-cm")),
            ("by-server/cm.json", &configmap("by-server-cm")),
            ("home/cm.json", &configmap("home-cm")),
        ],
    );
    let policy = json!({"automated": {"prune": true, "selfHeal": true}});
    let mut by_name = application("by-name", &apps, &repo, "by-name", &dest, policy.clone());
    by_name["spec"]["destination"] = json!({"name": "bed-b", "namespace": dest});
    let mut by_server = application(
        "by-server",
        &apps,
        &repo,
        "by-server",
        &dest,
        policy.clone(),
    );
    by_server["spec"]["destination"] = json!({"server": server_b, "namespace": dest});
    let home_app = application("home", &apps, &repo, "home", &dest, policy);
    apply(&home, vec![by_name, by_server, home_app]).await;

    let home = Arc::new(home);
    let opts = ControllerOptions {
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
        Controller::start(home.clone(), opts)
            .await
            .expect("controller starts"),
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let log = Arc::new(|e: Event<'_>| {
        if let Event::Failed {
            app,
            error,
            trigger,
        } = e
        {
            eprintln!(
                "reconcile of {}/{} ({}) failed: {error}",
                app.0,
                app.1,
                trigger.as_str()
            );
        }
    });
    let running = {
        let controller = controller.clone();
        tokio::spawn(async move { controller.run(log, stop_rx).await })
    };

    // Both remote apps deploy to the second cluster, the home app at home.
    wait_until(
        "the remote apps' ConfigMaps in the second cluster",
        || async {
            (exists(&b, &dest, "by-name-cm").await && exists(&b, &dest, "by-server-cm").await)
                .then_some(())
        },
    )
    .await;
    wait_until("the home app's ConfigMap at home", || async {
        exists(&home, &dest, "home-cm").await.then_some(())
    })
    .await;
    // Their status is written at home.
    for name in ["by-name", "by-server", "home"] {
        wait_until(&format!("{name} Synced at home"), || async {
            (common::sync_status(&get_app(&home, &apps, name).await) == "Synced").then_some(())
        })
        .await;
    }
    // Nothing of the remote apps at home; nothing of the home app, and no Application, there.
    assert!(!exists(&home, &dest, "by-name-cm").await);
    assert!(!exists(&home, &dest, "by-server-cm").await);
    assert!(!exists(&b, &dest, "home-cm").await);
    assert!(matches!(
        b.resource_for("plumb.dev", "Application").await,
        Err(ClusterError::UnknownKind { .. })
    ));
    // One connection (and watch cache) for the Secret, shared by both apps.
    assert_eq!(controller.destinations(), [format!("{apps}/bed-b")]);
    // Drift in the second cluster is seen through its watch cache and healed there.
    b.delete_object(
        &ResourceKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: dest.clone(),
            name: "by-name-cm".into(),
        },
        Propagation::Background,
    )
    .await
    .expect("delete");
    wait_until("by-name-cm healed in the second cluster", || async {
        exists(&b, &dest, "by-name-cm").await.then_some(())
    })
    .await;

    // The second cluster goes down: its apps get a condition naming its server...
    bed_b.stop();
    for name in ["by-name", "by-server"] {
        wait_until(
            &format!("{name}'s condition naming the cluster"),
            || async {
                conditions(&get_app(&home, &apps, name).await)
                    .iter()
                    .any(|(t, m)| t == "ComparisonError" && m.contains(&server_b))
                    .then_some(())
            },
        )
        .await;
    }
    // ...while the home app keeps syncing (its deleted ConfigMap comes back).
    home.delete_object(
        &ResourceKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: dest.clone(),
            name: "home-cm".into(),
        },
        Propagation::Background,
    )
    .await
    .expect("delete");
    wait_until(
        "home-cm healed while the second cluster is down",
        || async { exists(&home, &dest, "home-cm").await.then_some(()) },
    )
    .await;
    assert!(conditions(&get_app(&home, &apps, "home").await).is_empty());

    // The cluster Secret removed: the apps aimed at it by name get InvalidSpecError, and the
    // connection is dropped.
    home.delete_object(
        &ResourceKey {
            group: String::new(),
            kind: "Secret".into(),
            namespace: apps.clone(),
            name: "bed-b".into(),
        },
        Propagation::Background,
    )
    .await
    .expect("delete the Secret");
    wait_until("by-name's InvalidSpecError", || async {
        conditions(&get_app(&home, &apps, "by-name").await)
            .iter()
            .any(|(t, m)| {
                t == "InvalidSpecError" && m.contains("there are no clusters with this name: bed-b")
            })
            .then_some(())
    })
    .await;
    wait_until("the connection dropped", || async {
        controller.destinations().is_empty().then_some(())
    })
    .await;

    stop_tx.send(true).expect("stop");
    tokio::time::timeout(DEADLINE, running)
        .await
        .expect("controller stops")
        .expect("controller task");
    controller.stop();
}
