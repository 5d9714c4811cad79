//! The controller with `--plugins` on the test bed: an Application whose source names a
//! config management plugin is rendered by it (the app's name, destination namespace and
//! project, and `plugin.env`, in the plugin's environment) and synced by the real
//! `plumb controller` process. Skipped without a test bed (`TESTBED_DIR`), unless
//! `REQUIRE_K8S_TESTBED=1`.

mod common;
#[path = "common/testbed.rs"]
mod fixture;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use fixture::{AppBed, app, op};
use serde_json::json;
use std::process::{Child, Command, Stdio};
use support::{apply, testbed, wait_until};

const PLUGIN: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata: {name: env}
spec:
  version: v1
  generate:
    command: [sh, -c]
    args:
      - |
        if [ -f BROKEN ]; then echo "broken on purpose: $(cat BROKEN)" >&2; exit 1; fi
        cat <<EOF
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: from-plugin}
        data:
          app: '$ARGOCD_APP_NAME'
          namespace: '$ARGOCD_APP_NAMESPACE'
          project: '$ARGOCD_APP_PROJECT_NAME'
          stage: '$ARGOCD_ENV_STAGE'
          kube: '$KUBE_VERSION'
        EOF
"#;

/// The controller process, killed and reaped when dropped.
struct Ctl(Child);

impl Drop for Ctl {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_renders_a_plugin_source_and_syncs_it() {
    let Some(cluster) = testbed("plugins-controller").await else {
        return;
    };
    let bed = AppBed::new(&cluster, "plugins-ctl", json!({})).await;
    std::fs::write(bed.repo().join("README.md"), "rendered by a plugin\n").expect("write");
    bed.commit();
    let plugins = bed.dir.join("plugins");
    std::fs::create_dir_all(&plugins).expect("mkdir");
    std::fs::write(plugins.join("env.yaml"), PLUGIN).expect("write");
    let name = "by-plugin";
    apply(
        &cluster,
        vec![
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": bed.apps_ns},
            "spec": {"project": "default",
                "source": {"repoURL": format!("file://{}", bed.dir.join("repo").display()),
                    "path": "app", "targetRevision": "HEAD",
                    "plugin": {"name": "env-v1", "env": [{"name": "STAGE", "value": "prod"}]}},
                "destination": {"server": "https://kubernetes.default.svc",
                    "namespace": bed.dest},
                "syncPolicy": {"automated": {"prune": true}}}}),
        ],
    )
    .await;
    let log = bed.dir.join("controller.log");
    let ns = bed.apps_ns.as_str();
    let _ctl = Ctl(Command::new(env!("CARGO_BIN_EXE_plumb"))
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
            "--plugins",
        ])
        .arg(&plugins)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).expect("log")))
        .spawn()
        .expect("plumb controller starts"));
    let cm = wait_until("the plugin's ConfigMap synced", || async {
        let a = app(&cluster, ns, name).await;
        let cm = cluster
            .get_object("", "ConfigMap", &bed.dest, "from-plugin")
            .await
            .expect("get")?;
        (op(&a, "phase") == "Succeeded").then_some(cm)
    })
    .await;
    let data = &cm["data"];
    assert_eq!(data["app"], name);
    assert_eq!(data["namespace"], bed.dest.as_str());
    assert_eq!(data["project"], "default");
    assert_eq!(data["stage"], "prod");
    // The destination cluster's version, as Argo CD passes it (`1.36.3`).
    let kube = data["kube"].as_str().unwrap_or_default();
    assert!(
        kube.split('.').count() == 3 && !kube.starts_with('v'),
        "{kube}; log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let a = app(&cluster, ns, name).await;
    assert_eq!(a["status"]["sync"]["status"], "Synced", "{}", a["status"]);

    // The plugin breaks (exit 1) at the next commit: a ComparisonError naming it and its
    // stderr, and nothing pruned (automated prune is on).
    std::fs::write(bed.repo().join("BROKEN"), "see the runbook\n").expect("write");
    for args in [&["add", "-A"][..], &["commit", "-q", "-m", "break"]] {
        common::git(&bed.dir.join("repo"), args);
    }
    fixture::ask_refresh(&cluster, ns, name).await;
    let message = wait_until("a ComparisonError for the broken plugin", || async {
        let a = app(&cluster, ns, name).await;
        a["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "ComparisonError")
            .and_then(|c| c["message"].as_str().map(str::to_string))
    })
    .await;
    assert!(
        message.starts_with("Failed to load target state: "),
        "{message}"
    );
    assert!(message.contains("env-v1"), "names the plugin: {message}");
    assert!(
        message.contains("broken on purpose: see the runbook"),
        "{message}"
    );
    assert!(
        cluster
            .get_object("", "ConfigMap", &bed.dest, "from-plugin")
            .await
            .expect("get")
            .is_some(),
        "the app's resources are untouched"
    );
}
