//! A config management plugin through the runner (the controller's path), on the in-memory
//! cluster: with `RunOptions::plugins` an Application whose source has `plugin:` renders
//! through it (with the app's name, destination namespace, project and commit in the plugin's
//! environment) and syncs; without, the source is a `ComparisonError` naming the missing
//! `--plugins` directory and nothing is applied.

use super::test_objects as objects;
use super::*;
use plumb_cluster::memory::MemoryCluster;
use std::process::Command;
use std::time::UNIX_EPOCH;

const APPS: &str = "plumb";
const DEST: &str = "prod";

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@plumb.invalid"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

const PLUGIN: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata: {name: env}
spec:
  generate:
    command: [sh, -c]
    args:
      - |
        cat <<EOF
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: from-plugin}
        data:
          app: '$ARGOCD_APP_NAME'
          namespace: '$ARGOCD_APP_NAMESPACE'
          project: '$ARGOCD_APP_PROJECT_NAME'
          revision: '$ARGOCD_APP_REVISION'
          stage: '$ARGOCD_ENV_STAGE'
        EOF
"#;

#[tokio::test]
async fn an_application_with_a_plugin_source_renders_through_it_and_syncs() {
    let repo = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(repo.path().join("app")).expect("mkdir");
    std::fs::write(repo.path().join("app/README.md"), "rendered by a plugin\n").expect("write");
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "app"]);
    let commit = git(repo.path(), &["rev-parse", "HEAD"]);
    let plugins = tempfile::tempdir().expect("temp dir");
    std::fs::write(plugins.path().join("env.yaml"), PLUGIN).expect("write");

    let cluster = MemoryCluster::new();
    for ns in [APPS, DEST] {
        cluster
            .put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .expect("namespace");
    }
    super::tests::serve_projects(&cluster);
    cluster
        .put(objects::app_project(
            "team",
            APPS,
            json!({"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": DEST}]}),
        ))
        .expect("project");
    cluster
        .put(
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "shop", "namespace": APPS},
            "spec": {"project": "team",
                "source": {"repoURL": format!("file://{}", repo.path().display()),
                    "path": "app", "targetRevision": "HEAD",
                    "plugin": {"name": "env", "env": [{"name": "STAGE", "value": "prod"}]}},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": DEST},
                "syncPolicy": {"automated": {"prune": true, "allowEmpty": true}}}}),
        )
        .expect("application");
    let app_key = ResourceKey {
        group: "plumb.dev".into(),
        kind: "Application".into(),
        namespace: APPS.into(),
        name: "shop".into(),
    };
    let cm_key = ResourceKey {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: DEST.into(),
        name: "from-plugin".into(),
    };
    let app = || cluster.object(&app_key).expect("the Application");
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let base = RunOptions {
        poll_interval: Duration::from_millis(1),
        ..RunOptions::default()
    };

    // Without --plugins: a ComparisonError, nothing applied.
    let mut state = ReconcileState {
        options: base.clone(),
    };
    let err = reconcile_once(&cluster, &app(), now, &mut state)
        .await
        .expect_err("no plugins");
    assert!(matches!(err, RunError::Render { .. }), "{err}");
    let message = app()["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.starts_with("Failed to load target state: ")
            && message.contains("no --plugins directory was given"),
        "{message}"
    );
    assert!(cluster.object(&cm_key).is_none());

    // With them: rendered by the plugin and synced.
    let plugins =
        plumb_render::plugin::Plugins::load(plugins.path()).expect("the plugins directory");
    let mut state = ReconcileState {
        options: RunOptions {
            plugins: Some(std::sync::Arc::new(plugins)),
            ..base
        },
    };
    let out = reconcile_once(&cluster, &app(), now, &mut state)
        .await
        .expect("reconcile");
    let sync = out.sync.expect("an automated sync");
    assert!(sync.succeeded(), "{}", sync.message);
    let cm = cluster.object(&cm_key).expect("applied");
    assert_eq!(
        cm["data"],
        json!({"app": "shop", "namespace": DEST, "project": "team", "revision": commit,
            "stage": "prod"})
    );
    assert!(
        app()["status"].get("conditions").is_none(),
        "{}",
        app()["status"]
    );
}
