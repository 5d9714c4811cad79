//! `plumb app get --orphaned` on the test bed: the objects of the app's destination
//! namespace no Application tracks are listed (also with `warn: false`, where the app has no
//! condition), the app's own and another existing app's are not (by the tracking method,
//! annotation by default: an `app.kubernetes.io/instance` label alone, as Helm sets, is no
//! tracking; an object of a deleted Application is an orphan); a project without
//! `orphanedResources` says it does not monitor them. Plain `app get` is unchanged.

#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use plumb_cluster::Cluster;
use serde_json::{Value, json};
use std::process::{Command, Output, Stdio};
use support::{apply, namespace, testbed, wait_until};

async fn install_crds(cluster: &Cluster) {
    let crd_text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/crd.yaml"
    ))
    .expect("deploy/crd.yaml");
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&crd_text).expect("CRD YAML");
    apply(cluster, docs).await;
    wait_until("plumb.dev kinds being served", || async {
        cluster.discover().await.ok()?;
        cluster
            .resource_for("plumb.dev", "Application")
            .await
            .ok()?;
        cluster.resource_for("plumb.dev", "AppProject").await.ok()
    })
    .await;
}

fn get(apps: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(["app", "get", "web", "-N", apps, "--cluster"])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("plumb runs")
}

fn project(apps: &str, dest: &str, orphaned: Option<Value>) -> Value {
    let mut spec =
        json!({"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": dest}]});
    if let Some(o) = orphaned {
        spec["orphanedResources"] = o;
    }
    json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "AppProject",
        "metadata": {"name": "team", "namespace": apps}, "spec": spec})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_get_orphaned_lists_what_no_app_tracks() {
    let Some(cluster) = testbed("app_get_orphaned_lists_what_no_app_tracks").await else {
        return;
    };
    install_crds(&cluster).await;
    let apps = namespace(&cluster, "orph-cli-apps", json!({})).await;
    let dest = namespace(&cluster, "orph-cli-dest", json!({})).await;
    let cm = |name: &str, labels: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": dest, "labels": labels}, "data": {"k": "v"}})
    };
    let tracked = |name: &str, app: &str| {
        let mut o = cm(name, json!({}));
        o["metadata"]["annotations"] = json!({
            "argocd.argoproj.io/tracking-id": format!("{app}:/ConfigMap:{dest}/{name}")});
        o
    };
    let application = |name: &str| {
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": apps},
            "spec": {"project": "team",
                "source": {"repoURL": "https://git.example.com/web", "path": "app"},
                "destination": {"server": "https://kubernetes.default.svc",
                    "namespace": dest}}})
    };
    apply(
        &cluster,
        vec![
            project(&apps, &dest, Some(json!({"warn": false}))),
            application("web"),
            application("other"),
            cm("by-hand", json!({})),
            tracked("mine", "web"),
            tracked("theirs", "other"),
            // Application `gone` does not exist: what it tracked is an orphan.
            tracked("of-gone", "gone"),
            // `helm install`'s label: no tracking under annotation tracking.
            cm(
                "helm-made",
                json!({"app.kubernetes.io/instance": "release"}),
            ),
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "stray", "namespace": dest}, "stringData": {"k": "s3cr3t"}}),
        ],
    )
    .await;

    let plain = get(&apps, &[]);
    let out = get(&apps, &["--orphaned"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    // The usual output first, unchanged, then the list.
    let plain = String::from_utf8_lossy(&plain.stdout);
    assert!(stdout.starts_with(plain.as_ref()), "{plain}\n---\n{stdout}");
    let listed = &stdout[plain.len()..];
    assert_eq!(
        listed,
        format!(
            "\nORPHANED RESOURCES\nGROUP  KIND       {:<w$}  NAME\n       ConfigMap  {dest}  by-hand\n       ConfigMap  {dest}  helm-made\n       ConfigMap  {dest}  of-gone\n       Secret     {dest}  stray\n",
            "NAMESPACE",
            w = dest.len().max(9)
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("s3cr3t"));

    // A project without orphanedResources.
    apply(&cluster, vec![project(&apps, &dest, None)]).await;
    let out = wait_until("the project change seen", || async {
        let out = get(&apps, &["--orphaned"]);
        String::from_utf8_lossy(&out.stdout)
            .contains("not monitored")
            .then_some(out)
    })
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.ends_with(
            "\nOrphaned resources: not monitored (project 'team' has no spec.orphanedResources)\n"
        ),
        "{stdout}"
    );
}
