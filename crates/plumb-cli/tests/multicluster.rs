//! The real `plumb controller` process with two API servers: an Application in the test bed
//! of `TESTBED_DIR` aimed (by the cluster Secret's name) at a second test bed deploys there
//! and nothing of it at home, and its status is written at home; `plumb diff --app --cluster`
//! reads that app's live objects from the second test bed.

mod common;
#[path = "common/testbed.rs"]
mod fixture;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use fixture::install_application_crd;
use plumb_cluster::{Cluster, ConnectOptions};
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use support::second_bed::SecondBed;
use support::{apply, namespace, testbed, unique};

async fn configmap_exists(cluster: &Cluster, ns: &str, name: &str) -> bool {
    cluster
        .get_object("", "ConfigMap", ns, name)
        .await
        .expect("get")
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_process_syncs_an_app_to_another_cluster() {
    let Some(home) = testbed("the_controller_process_syncs_an_app_to_another_cluster").await else {
        return;
    };
    install_application_crd(&home).await;
    let apps = namespace(&home, "mc-apps", json!({})).await;
    let dest = unique("mc-dest");
    let bed_b = SecondBed::start();
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
    let config = json!({"tlsClientConfig": {
        "caData": bed_b.kubeconfig_field("certificate-authority-data"),
        "certData": bed_b.kubeconfig_field("client-certificate-data"),
        "keyData": bed_b.kubeconfig_field("client-key-data"),
    }});
    // A plain directory as the source.
    let repo = std::env::temp_dir().join(unique("plumb-mc-repo"));
    std::fs::create_dir_all(repo.join("app")).expect("repo dir");
    std::fs::write(
        repo.join("app/cm.json"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "far"},
            "data": {"k": "v"}})
        .to_string(),
    )
    .expect("manifest");
    apply(
        &home,
        vec![
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "bed-b", "namespace": apps,
                    "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
                "stringData": {"name": "bed-b", "server": bed_b.server(),
                    "config": config.to_string()}}),
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
                "metadata": {"name": "far", "namespace": apps},
                "spec": {"project": "default",
                    "source": {"repoURL": format!("file://{}", repo.display()), "path": "app",
                        "targetRevision": "HEAD"},
                    "destination": {"name": "bed-b", "namespace": dest},
                    "syncPolicy": {"automated": {}}}}),
        ],
    )
    .await;

    let out = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args([
            "controller",
            "--once",
            "-N",
            apps.as_str(),
            "--lease-namespace",
            apps.as_str(),
        ])
        .stdin(Stdio::null())
        .output()
        .expect("plumb controller runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Credentials never reach the log.
    assert!(
        !stderr.contains(&bed_b.kubeconfig_field("client-key-data")),
        "{stderr}"
    );

    assert!(configmap_exists(&b, &dest, "far").await, "{stderr}");
    assert!(
        home.get_object("", "Namespace", "", &dest)
            .await
            .expect("get")
            .is_none(),
        "nothing of the app at home"
    );
    let app = home
        .get_application(&apps, "far")
        .await
        .expect("get")
        .expect("app");
    assert_eq!(app["status"]["sync"]["status"], "Synced", "{stderr}");
    assert_eq!(app["status"]["operationState"]["phase"], "Succeeded");

    // `plumb diff --app --cluster` reads live from the app's destination, not from the
    // kubeconfig's cluster: a drifted copy of the object at home is not its business...
    let app_file = repo.join("far-app.json");
    std::fs::write(
        &app_file,
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "far", "namespace": apps},
            "spec": {"project": "default",
                "source": {"repoURL": format!("file://{}", repo.display()), "path": "app",
                    "targetRevision": "HEAD"},
                "destination": {"name": "bed-b", "namespace": dest}}})
        .to_string(),
    )
    .expect("app file");
    let drifted = |value: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "far", "namespace": dest, "labels": {"app.kubernetes.io/instance": "far"}},
            "data": {"k": value}})
    };
    apply(
        &home,
        vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": dest}}),
            drifted("drifted-at-home"),
        ],
    )
    .await;
    let diff = |app_file: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_plumb"))
            .args(["diff", "--cluster", "--app"])
            .arg(app_file)
            .args(["-o", "json"])
            .stdin(Stdio::null())
            .output()
            .expect("plumb diff runs")
    };
    let out = diff(&app_file);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "in sync on bed B: {text}");
    assert!(!text.contains("drifted-at-home"), "{text}");

    // ... while drift made on the destination is reported.
    apply(&b, vec![drifted("drifted-on-b")]).await;
    let out = diff(&app_file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("diff JSON");
    assert_eq!(doc["summary"]["modified"], 1, "{stdout}");
    assert!(stdout.contains("drifted-on-b"), "{stdout}");
    assert!(!stdout.contains("drifted-at-home"), "{stdout}");
    assert!(
        !stderr.contains(&bed_b.kubeconfig_field("client-key-data")),
        "{stderr}"
    );

    // `plumb snapshot --app` saves the destination's objects, `plumb doctor --cluster` reads
    // the app's live objects there.
    let snap = repo.join("snapshot");
    let out = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(["snapshot", "--cluster", "--app"])
        .arg(&app_file)
        .arg("--out")
        .arg(&snap)
        .stdin(Stdio::null())
        .output()
        .expect("plumb snapshot runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = std::fs::read_to_string(snap.join(format!("core/ConfigMap/{dest}/far.yaml")))
        .expect("the ConfigMap saved");
    assert!(saved.contains("drifted-on-b"), "{saved}");
    let out = Command::new(env!("CARGO_BIN_EXE_plumb"))
        // NAMESPACE/NAME: a re-run on the same test bed (tests/stress.sh) leaves an earlier
        // run's `far`, in its own namespace, whose destination bed is gone.
        .args(["doctor", &format!("{apps}/far"), "--cluster", "-o", "json"])
        .stdin(Stdio::null())
        .output()
        .expect("plumb doctor runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("drifted-on-b"), "{stdout}");
    assert!(!stdout.contains("drifted-at-home"), "{stdout}");

    // A destination no cluster Secret names: one line naming the Application and the
    // field, exit 2, nothing read anywhere.
    let nowhere = repo.join("nowhere-app.json");
    std::fs::write(
        &nowhere,
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "nowhere", "namespace": apps},
            "spec": {"project": "default",
                "source": {"repoURL": format!("file://{}", repo.display()), "path": "app",
                    "targetRevision": "HEAD"},
                "destination": {"name": "no-such-cluster", "namespace": dest}}})
        .to_string(),
    )
    .expect("app file");
    let out = diff(&nowhere);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("Application nowhere: spec.destination:")
            && stderr.contains("no-such-cluster"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&repo);
}
