//! Helpers of plumb-sync's test-bed tests: the CRD, git repositories, Applications.

#![allow(dead_code)]

use plumb_cluster::Cluster;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../../plumb-cluster/tests/support/mod.rs"]
pub mod support;

pub mod objects;

/// The repository's `deploy/` directory.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

/// The objects of a YAML file of `deploy/`.
pub fn deploy_objects(file: &str) -> Vec<Value> {
    let path = deploy_dir().join(file);
    plumb_render::load_file(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .map(|m| m.object)
        .collect()
}

/// Installs the Application CRD and waits until it is Established and served.
pub async fn install_crd(cluster: &Cluster) {
    support::apply(cluster, deploy_objects("crd.yaml")).await;
    let established = support::eventually(support::DEADLINE, || async {
        let crd = cluster
            .get_object(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "",
                "applications.plumb.dev",
            )
            .await
            .ok()
            .flatten()?;
        let conditions = crd.pointer("/status/conditions")?.as_array()?.clone();
        conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
            .then_some(())
    })
    .await;
    assert!(
        established.is_some(),
        "applications.plumb.dev never became Established"
    );
    // Served (discovery refreshed, the list answers).
    let served = support::eventually(support::DEADLINE, || async {
        cluster.discover().await.ok()?;
        cluster.list_applications(None).await.ok().map(|_| ())
    })
    .await;
    assert!(served.is_some(), "applications.plumb.dev is not served");
}

/// Runs git in `dir`, panicking with its output on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
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

/// A fresh git repository in a temporary directory, holding `files` (path, content),
/// committed. Returns the directory and the commit id.
pub fn git_repo(prefix: &str, files: &[(&str, &str)]) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(support::unique(prefix));
    std::fs::create_dir_all(&dir).expect("temp dir");
    git(&dir, &["init", "-q"]);
    write_files(&dir, files);
    commit(&dir, "initial")
        .map(|sha| (dir.clone(), sha))
        .expect("initial commit")
}

pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, content).expect("write");
    }
}

/// Commits everything in the work tree; the new commit id.
pub fn commit(dir: &Path, message: &str) -> Option<String> {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
    Some(git(dir, &["rev-parse", "HEAD"]))
}

/// [`objects::application`] for the local repository `repo`.
pub fn application(
    name: &str,
    namespace: &str,
    repo: &Path,
    path: &str,
    destination: &str,
    sync_policy: Value,
) -> Value {
    objects::application(
        name,
        namespace,
        &format!("file://{}", repo.display()),
        path,
        destination,
        sync_policy,
    )
}

/// The Application as stored now.
pub async fn get_app(cluster: &Cluster, namespace: &str, name: &str) -> Value {
    cluster
        .get_application(namespace, name)
        .await
        .expect("get application")
        .expect("application exists")
}

/// `status.history` of an Application.
pub fn history(app: &Value) -> Vec<Value> {
    app.pointer("/status/history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

pub fn sync_status(app: &Value) -> &str {
    app.pointer("/status/sync/status")
        .and_then(Value::as_str)
        .unwrap_or("<none>")
}

/// A test bed with plumb's CRD installed and two fresh namespaces, `<prefix>-apps` for the
/// Applications and `<prefix>-dest` for what they deploy; `None` without a test bed.
pub async fn app_testbed(name: &str, prefix: &str) -> Option<(Cluster, String, String)> {
    let cluster = support::testbed(name).await?;
    install_crd(&cluster).await;
    let apps_ns =
        support::namespace(&cluster, &format!("{prefix}-apps"), serde_json::json!({})).await;
    let dest = support::namespace(&cluster, &format!("{prefix}-dest"), serde_json::json!({})).await;
    Some((cluster, apps_ns, dest))
}
