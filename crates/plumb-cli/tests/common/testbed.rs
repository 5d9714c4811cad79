//! Test-bed fixtures for the CLI's end-to-end test binaries that run the real `plumb
//! controller` (or `plumb app …`) against the test bed: the Application CRD installed, an app
//! with its own namespaces and a git-less `file://` repository directory, and the controller
//! process, killed and reaped when dropped (`AppBed`). Used by `faults.rs`,
//! `least_privilege.rs`, `multicluster.rs` and `secrets.rs`.
//!
//! A test binary includes it after plumb-cluster's test support, which it uses:
//!
//! ```ignore
//! #[path = "../../plumb-cluster/tests/support/mod.rs"]
//! mod support;
//! mod common;
//! #[path = "common/testbed.rs"]
//! mod fixture;
//! ```

#![allow(dead_code)] // each test binary uses its own subset

use crate::support::{apply, namespace, unique, wait_until};
use plumb_cluster::Cluster;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The documents of `deploy/<file>`.
pub fn deploy(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("deploy file");
    serde_saphyr::from_str_multiple(&text).expect("deploy YAML")
}

/// Applies `deploy/crd.yaml` and waits until every kind it defines is served
/// (`applications.plumb.dev`, `appprojects.plumb.dev`, `applicationsets.plumb.dev`).
pub async fn install_application_crd(cluster: &Cluster) {
    apply(cluster, deploy("crd.yaml")).await;
    wait_until("plumb's CRDs being served", || async {
        cluster.discover().await.ok()?;
        cluster.list_applications(None).await.ok()?;
        for kind in ["AppProject", "ApplicationSet"] {
            cluster
                .get_object("plumb.dev", kind, "default", "none")
                .await
                .ok()?;
        }
        Some(())
    })
    .await;
}

/// The stored Application `ns/name` (it must exist).
pub async fn app(cluster: &Cluster, ns: &str, name: &str) -> Value {
    cluster
        .get_application(ns, name)
        .await
        .expect("get application")
        .expect("application exists")
}

/// `status.operationState.<field>` as text ("" when absent).
pub fn op(app: &Value, field: &str) -> String {
    app.pointer(&format!("/status/operationState/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Writes `obj` as pretty JSON to `dir/name`.
pub fn write_json(dir: &Path, name: &str, obj: &Value) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(
        dir.join(name),
        serde_json::to_string_pretty(obj).expect("json"),
    )
    .expect("write");
}

/// One app's surroundings on the test bed: the Application CRD installed, a namespace for
/// the Application (`apps_ns`) and one for its resources (`dest`), and a scratch directory
/// whose `repo/app` holds the manifests (`repoURL: file://<dir>/repo`, `path: app`).
pub struct AppBed {
    pub apps_ns: String,
    pub dest: String,
    pub dir: PathBuf,
}

impl AppBed {
    /// `prefix` names the namespaces (`<prefix>-apps`, `<prefix>-dest`, with `dest_labels`)
    /// and the scratch directory.
    pub async fn new(cluster: &Cluster, prefix: &str, dest_labels: Value) -> AppBed {
        install_application_crd(cluster).await;
        let apps_ns = namespace(cluster, &format!("{prefix}-apps"), json!({})).await;
        let dest = namespace(cluster, &format!("{prefix}-dest"), dest_labels).await;
        let dir = std::env::temp_dir().join(unique(&format!("plumb-{prefix}")));
        std::fs::create_dir_all(dir.join("repo/app")).expect("mkdir");
        AppBed { apps_ns, dest, dir }
    }

    /// The directory of the app's manifests.
    pub fn repo(&self) -> PathBuf {
        self.dir.join("repo/app")
    }

    /// Writes a manifest of the app.
    pub fn write(&self, name: &str, obj: Value) {
        write_json(&self.repo(), name, &obj);
    }

    /// Makes the repository directory a git repository and commits what it holds, so the
    /// app's revision is a commit (a plain directory's is the digest of its desired objects).
    pub fn commit(&self) {
        let dir = self.dir.join("repo");
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &["commit", "-q", "-m", "app"],
        ] {
            crate::common::git(&dir, args);
        }
    }

    /// Applies the Application `name` (project `default`, the in-cluster destination `dest`)
    /// with `sync_policy`.
    pub async fn application(&self, cluster: &Cluster, name: &str, sync_policy: Value) {
        apply(cluster, vec![self.application_at(name, "app", sync_policy)]).await;
    }

    /// The Application `name` (project `default`) of directory `path` of the repository, to
    /// the in-cluster destination `dest`, with `sync_policy`: not applied.
    pub fn application_at(&self, name: &str, path: &str, sync_policy: Value) -> Value {
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": self.apps_ns},
            "spec": {"project": "default",
                "source": {"repoURL": format!("file://{}", self.dir.join("repo").display()),
                           "path": path, "targetRevision": "HEAD"},
                "destination": {"server": "https://kubernetes.default.svc",
                                "namespace": self.dest},
                "syncPolicy": sync_policy}})
    }

    /// The stored Application `name`.
    pub async fn app(&self, cluster: &Cluster, name: &str) -> Value {
        app(cluster, &self.apps_ns, name).await
    }

    /// Starts a controller for the Applications of `apps_ns`; its log is `dir/<log>`.
    pub fn controller(&self, log: &str) -> (Controller, PathBuf) {
        let path = self.dir.join(log);
        (controller(&self.apps_ns, &path), path)
    }
}

impl Drop for AppBed {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Runs `plumb args` to its end against the test bed (the kubeconfig of the environment).
pub fn plumb(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("plumb {args:?}: {e}"))
}

/// `plumb controller` for the Applications of `ns` (Lease there too, 3 s; refresh every
/// hour, so only watches, retries and the refresh annotation make it act), its stderr (JSON
/// log lines) to `log`.
pub fn controller(ns: &str, log: &Path) -> Controller {
    controller_with(ns, log, &[])
}

/// [`controller`] with more arguments.
pub fn controller_with(ns: &str, log: &Path, extra: &[&str]) -> Controller {
    let file = std::fs::File::create(log).expect("log file");
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args([
            "controller",
            "--app-namespace",
            ns,
            "--lease-namespace",
            ns,
            "--lease-duration",
            "3",
            "--interval",
            "3600",
            "--jitter",
            "0",
        ])
        .args(extra)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(file))
        .spawn()
        .map(Controller)
        .expect("plumb controller starts")
}

/// A controller process the test started: SIGKILLed (through its handle) and reaped when
/// dropped, also when an assertion fails.
pub struct Controller(pub Child);

impl Controller {
    pub fn alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Asks for a refresh of the Application `ns/name`, as `argocd app get --refresh` does (the
/// annotation `argocd.argoproj.io/refresh`), retrying the write until the API answers.
pub async fn ask_refresh(cluster: &Cluster, ns: &str, name: &str) {
    wait_until("the refresh annotation written", || async {
        cluster
            .patch_application(
                ns,
                name,
                &json!({"metadata": {"annotations": {"argocd.argoproj.io/refresh": "normal"}}}),
            )
            .await
            .ok()
    })
    .await;
}
