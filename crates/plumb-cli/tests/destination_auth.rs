//! How `plumb diff --app --cluster` reaches an Application's destination, on the test bed:
//!
//! - through a cluster Secret whose `config.execProviderConfig` is a real credential plugin
//!   (a shell script printing an `ExecCredential` with a ServiceAccount's token, the only
//!   credential the Secret gives): the diff reads the destination with it; a plugin that
//!   fails is one error line naming the cluster, without the plugin's output or the token;
//! - `--context CTX` reads CTX's cluster instead of the app's destination (here a cluster
//!   Secret whose server does not answer: without `--context` the diff fails naming it).

#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use plumb_cluster::Cluster;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::{apply, namespace, testbed, unique, wait_until};

async fn install_application_crd(cluster: &Cluster) {
    let crd_text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/crd.yaml"
    ))
    .expect("deploy/crd.yaml");
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(&crd_text).expect("CRD YAML");
    apply(cluster, docs).await;
    wait_until("applications.plumb.dev being served", || async {
        cluster.discover().await.ok()?;
        cluster.resource_for("plumb.dev", "Application").await.ok()
    })
    .await;
}

/// A field of the test bed's kubeconfig (`up.sh` writes one per line).
fn kubeconfig_field(field: &str) -> String {
    let path = std::env::var("KUBECONFIG").expect("KUBECONFIG");
    let text = std::fs::read_to_string(&path).expect("kubeconfig");
    text.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{field}: ")))
        .unwrap_or_else(|| panic!("{field} in {path}"))
        .to_string()
}

/// A directory with the app's manifest (`app/cm.json`: ConfigMap `web`) and an Application
/// file aimed at the cluster named `cluster`.
fn app_files(dir: &Path, apps: &str, dest: &str, cluster: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("app")).expect("mkdir");
    std::fs::write(
        dir.join("app/cm.json"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
            "data": {"k": "from-git"}})
        .to_string(),
    )
    .expect("manifest");
    let file = dir.join(format!("{cluster}-app.json"));
    std::fs::write(
        &file,
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "web", "namespace": apps},
            "spec": {"project": "default",
                "source": {"repoURL": format!("file://{}", dir.display()), "path": "app",
                    "targetRevision": "HEAD"},
                "destination": {"name": cluster, "namespace": dest}}})
        .to_string(),
    )
    .expect("app file");
    file
}

fn cluster_secret(apps: &str, name: &str, server: &str, config: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": apps,
            "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": name, "server": server, "config": config.to_string()}})
}

/// The drifted live copy of the app's ConfigMap (tracked by the app).
fn drifted(dest: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "web", "namespace": dest,
            "labels": {"app.kubernetes.io/instance": "web"}},
        "data": {"k": value}})
}

fn plumb(args: &[&str], app_file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .arg("--app")
        .arg(app_file)
        .args(["-o", "json"])
        .stdin(Stdio::null())
        .output()
        .expect("plumb runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).expect("script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_secret_s_exec_plugin_authenticates_the_diff() {
    let Some(home) = testbed("a_cluster_secret_s_exec_plugin_authenticates_the_diff").await else {
        return;
    };
    install_application_crd(&home).await;
    let apps = namespace(&home, "exec-apps", json!({})).await;
    let dest = namespace(&home, "exec-dest", json!({})).await;
    let sa = "plumb-exec";
    apply(
        &home,
        vec![
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": sa, "namespace": apps}}),
            // Read-only, everywhere (the bootstrap `view` is aggregated: empty without
            // kube-controller-manager).
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": format!("{apps}-read")},
                "rules": [{"apiGroups": ["*"], "resources": ["*"],
                    "verbs": ["get", "list", "watch"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": format!("{apps}-{sa}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": format!("{apps}-read")},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": apps}]}),
        ],
    )
    .await;
    // The binding is effective (the authorizer's cache) before the diff runs.
    let user = format!("system:serviceaccount:{apps}:{sa}");
    wait_until(&format!("{user} may list configmaps"), || async {
        support::may(&home, &user, "list", "", "configmaps", &dest)
            .await?
            .then_some(())
    })
    .await;
    // A real token of the ServiceAccount (TokenRequest), kept in a file the plugin reads:
    // neither the Secret nor the plugin's environment holds it.
    let token = support::sa_token(&home, &apps, sa).await;
    let dir = std::env::temp_dir().join(unique("plumb-exec"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let token_file = dir.join("token");
    std::fs::write(&token_file, &token).expect("token file");
    let marker = dir.join("plugin-ran");
    let good = dir.join("good-plugin.sh");
    script(
        &good,
        "touch \"$MARKER\"\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}\\n' \"$(cat \"$TOKEN_FILE\")\"\n",
    );
    let bad = dir.join("bad-plugin.sh");
    script(
        &bad,
        "echo \"cannot log in; token was $(cat \"$TOKEN_FILE\")\" >&2\nprintf 'partial %s' \"$(cat \"$TOKEN_FILE\")\"\nexit 3\n",
    );
    let exec = |command: &Path| {
        json!({"tlsClientConfig": {"caData": kubeconfig_field("certificate-authority-data")},
            "execProviderConfig": {"command": command.display().to_string(),
                "apiVersion": "client.authentication.k8s.io/v1",
                "env": {"TOKEN_FILE": token_file.display().to_string(),
                    "MARKER": marker.display().to_string()}}})
    };
    // The test bed's own API server, addressed by its URL: another cluster than in-cluster
    // for plumb, reached only with the plugin's credentials.
    let server = kubeconfig_field("server");
    apply(
        &home,
        vec![
            cluster_secret(&apps, "via-exec", &server, exec(&good)),
            cluster_secret(&apps, "via-broken", &server, exec(&bad)),
            drifted(&dest, "drifted"),
        ],
    )
    .await;
    let good_app = app_files(&dir, &apps, &dest, "via-exec");
    let bad_app = app_files(&dir, &apps, &dest, "via-broken");

    // The plugin's token reads the destination (as the ServiceAccount, which may only
    // read): the drift is found.
    let out = plumb(&["diff", "--cluster"], &good_app);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("diff JSON");
    assert_eq!(doc["summary"]["modified"], 1, "{stdout}");
    assert!(stdout.contains("drifted"), "{stdout}");
    assert!(marker.exists(), "the credential plugin ran");
    assert!(!format!("{stdout}{stderr}").contains(&token));

    // A failing plugin: exit 2, one line naming the app and the cluster; neither the
    // plugin's output nor the token.
    let out = plumb(&["diff", "--cluster"], &bad_app);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("Application web: spec.destination: cluster 'via-broken'")
            && stderr.contains("the credential plugin failed (exit status: 3)"),
        "{stderr}"
    );
    assert!(!stderr.contains(&token), "{stderr}");
    assert!(
        !stderr.contains("cannot log in") && !stderr.contains("partial"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_overrides_the_app_s_destination() {
    let Some(home) = testbed("context_overrides_the_app_s_destination").await else {
        return;
    };
    install_application_crd(&home).await;
    let apps = namespace(&home, "ctx-apps", json!({})).await;
    let dest = namespace(&home, "ctx-dest", json!({})).await;
    // The app's destination: a cluster whose server does not answer.
    apply(
        &home,
        vec![
            cluster_secret(
                &apps,
                "far-away",
                "https://127.0.0.1:9",
                json!({"bearerToken": "not-used", "tlsClientConfig": {"insecure": true}}),
            ),
            drifted(&dest, "drifted-at-home"),
        ],
    )
    .await;
    let dir = std::env::temp_dir().join(unique("plumb-ctx"));
    let app = app_files(&dir, &apps, &dest, "far-away");

    // Without --context: the destination is read, and it does not answer.
    let out = plumb(&["diff", "--cluster"], &app);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cluster 'far-away'"), "{stderr}");

    // With --context: that context's cluster (the test bed) is read instead.
    let context = kubeconfig_field("current-context");
    let out = plumb(&["diff", "--cluster", "--context", &context], &app);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("diff JSON");
    assert_eq!(doc["summary"]["modified"], 1, "{stdout}");
    assert!(stdout.contains("drifted-at-home"), "{stdout}");
    assert!(!stderr.contains("far-away"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
