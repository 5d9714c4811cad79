//! End-to-end tests of `plumb diff --cluster` and `plumb snapshot --cluster`: the
//! `plumb` binary against the real API server of `testbed/up.sh`.
//!
//! Tests that need the test bed print a skip notice and pass when `TESTBED_DIR`
//! is unset, and fail when `REQUIRE_K8S_TESTBED=1` (as plumb-cluster's tests).
//! Each test works in namespaces of its own (unique names); cluster-wide objects
//! (webhook configurations, CRDs) get unique names and are deleted at the end.
//!
//! ```sh
//! eval "$(testbed/up.sh)"
//! REQUIRE_K8S_TESTBED=1 cargo test -p plumb-cli --test cluster
//! testbed/down.sh
//! ```

#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use plumb_cluster::Cluster;
use plumb_core::{INSTANCE_LABEL, TRACKING_ID_ANNOTATION};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::webhook::{self, Webhook};
use support::{DEADLINE, apply, deployment, eventually, namespace, testbed, unique, wait_until};

// ---------------------------------------------------------------------------
// Running plumb
// ---------------------------------------------------------------------------

/// What one run of `plumb` did.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Run {
    /// The `-o json` document.
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    /// The resource named `name` in the `-o json` document.
    fn resource(&self, name: &str) -> Value {
        let doc = self.json();
        doc["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no resource {name} in:\n{}", self.stdout))
    }

    /// The status of `name` in the `-o json` document, `absent` when it is not
    /// listed.
    fn status(&self, name: &str) -> String {
        let doc = self.json();
        doc["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|r| r["name"] == name)
            .map_or("absent".to_string(), |r| {
                r["status"].as_str().unwrap_or("?").to_string()
            })
    }

    /// The lines of stderr that are not empty.
    fn stderr_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect()
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?} after {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.took, self.stdout, self.stderr
        )
    }
}

/// How long one plumb run may take before the test kills it.
const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// Runs `plumb args` (with the test process's environment, `KUBECONFIG`
/// included) and checks it never panics.
fn plumb_blocking(args: &[String]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .env_remove("PLUMB_TIMINGS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("plumb starts");
    // Read both pipes on threads so a large output cannot block the child.
    let mut out_pipe = child.stdout.take().expect("stdout");
    let mut err_pipe = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out_pipe, &mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err_pipe, &mut s).ok();
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for plumb") {
            break status;
        }
        if started.elapsed() > RUN_DEADLINE {
            // Our own child, by its handle.
            let _ = child.kill();
            let _ = child.wait();
            panic!("plumb {args:?} ran longer than {RUN_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let run = Run {
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        took: started.elapsed(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "plumb {args:?} panicked:\n{run}"
    );
    run
}

/// [`plumb_blocking`] off the async runtime (the webhook server runs on it).
async fn plumb<S: AsRef<str>>(args: &[S]) -> Run {
    let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
    tokio::task::spawn_blocking(move || plumb_blocking(&args))
        .await
        .expect("plumb runner")
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

/// A temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(prefix: &str) -> Scratch {
        let dir = std::env::temp_dir().join(unique(&format!("plumb-cli-cluster-{prefix}")));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.0.join(relative)
    }

    /// Writes `objects` as a YAML stream (JSON documents are YAML) at `relative`.
    fn write(&self, relative: &str, objects: &[Value]) -> String {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let text: Vec<String> = objects
            .iter()
            .map(|o| serde_json::to_string_pretty(o).expect("JSON"))
            .collect();
        std::fs::write(&path, text.join("\n---\n") + "\n").expect("write");
        s(&path)
    }

    /// Writes an Argo CD Application named `name` deploying to `namespace`.
    fn app(
        &self,
        file: &str,
        name: &str,
        namespace: &str,
        compare_options: Option<&str>,
        ignore_differences: Value,
    ) -> String {
        let mut app = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": "argocd"},
            "spec": {
                "project": "default",
                "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
                "ignoreDifferences": ignore_differences,
            }
        });
        if let Some(options) = compare_options {
            app["metadata"]["annotations"] = json!({"argocd.argoproj.io/compare-options": options});
        }
        self.write(file, &[app])
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

// ---------------------------------------------------------------------------
// Objects
// ---------------------------------------------------------------------------

/// `obj` as an Argo CD sync with annotation tracking leaves it live: with the
/// `argocd.argoproj.io/tracking-id` annotation of `app`.
fn synced(app: &str, mut obj: Value) -> Value {
    let group = obj["apiVersion"]
        .as_str()
        .and_then(|v| v.rsplit_once('/'))
        .map_or("", |(g, _)| g)
        .to_string();
    let id = format!(
        "{app}:{group}/{}:{}/{}",
        obj["kind"].as_str().unwrap_or_default(),
        obj["metadata"]["namespace"].as_str().unwrap_or_default(),
        obj["metadata"]["name"].as_str().unwrap_or_default()
    );
    obj["metadata"]["annotations"][TRACKING_ID_ANNOTATION] = Value::String(id);
    obj
}

fn configmap(namespace: &str, name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace}, "data": data})
}

/// A Deployment without `imagePullPolicy` (the API server defaults it).
fn deployment_without_policy(namespace: &str, name: &str) -> Value {
    let mut d = deployment(namespace, name, "IfNotPresent");
    d["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .expect("container")
        .remove("imagePullPolicy");
    d
}

/// Deletes the cluster-scoped object `name` of type `K` (best effort: clean-up).
async fn delete_cluster_object<K>(cluster: &Cluster, name: &str)
where
    K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned,
    K::DynamicType: Default,
{
    let api: kube::Api<K> = kube::Api::all(cluster.client().clone());
    if let Err(e) = api.delete(name, &Default::default()).await {
        eprintln!("clean-up: cannot delete {name}: {e}");
    }
}

// ---------------------------------------------------------------------------
// 1. missing / extra / modified, then in sync
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_extra_and_modified_then_in_sync() {
    let Some(cluster) = testbed("missing_extra_and_modified_then_in_sync").await else {
        return;
    };
    let ns = namespace(&cluster, "mem", json!({})).await;
    let app = unique("mem-app");
    let dir = Scratch::new("mem");

    // Git: A (live, but different) and B (not live). Live: A, and C tracked by
    // the app (its instance label) but not in git.
    let a = configmap(&ns, "a", json!({"mode": "desired", "same": "1"}));
    let b = configmap(&ns, "b", json!({"k": "b"}));
    let desired = dir.write("desired/objects.yaml", &[a.clone(), b.clone()]);
    let app_file = dir.app("app.yaml", &app, &ns, None, json!([]));
    let mut c = configmap(&ns, "c", json!({"k": "c"}));
    c["metadata"]["labels"] = json!({INSTANCE_LABEL: app});
    apply(
        &cluster,
        vec![
            synced(
                &app,
                configmap(&ns, "a", json!({"mode": "live", "same": "1"})),
            ),
            c,
        ],
    )
    .await;

    let run = plumb(&[
        "diff",
        "--cluster",
        "--app",
        &app_file,
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(1), "{run}");
    let doc = run.json();
    assert_eq!(
        doc["summary"],
        json!({"inSync": false, "modified": 1, "missing": 1, "extra": 1, "equal": 0}),
        "{run}"
    );
    let ra = run.resource("a");
    assert_eq!(ra["status"], "modified");
    assert_eq!(ra["namespace"], ns.as_str());
    assert_eq!(ra["kind"], "ConfigMap");
    assert_eq!(
        ra["fields"],
        json!([{"path": "/data/mode", "live": "live", "desired": "desired"}]),
        "{run}"
    );
    assert_eq!(run.resource("b")["status"], "missing");
    assert_eq!(run.resource("c")["status"], "extra");
    assert!(run.stderr_lines().is_empty(), "{run}");

    // The argocd format says the same.
    let run = plumb(&[
        "diff",
        "--cluster",
        "--app",
        &app_file,
        "--desired",
        &desired,
    ])
    .await;
    assert_eq!(run.code, Some(1), "{run}");
    for header in ["a", "b", "c"] {
        assert!(
            run.stdout
                .contains(&format!("===== /ConfigMap {ns}/{header} ======\n")),
            "{run}"
        );
    }
    assert!(
        run.stdout
            .contains("<   mode: live\n---\n>   mode: desired\n"),
        "{run}"
    );

    // Sync as Argo CD would (desired + tracking annotation, prune C): in sync.
    apply(&cluster, vec![synced(&app, a), synced(&app, b)]).await;
    let configmaps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(cluster.client().clone(), &ns);
    configmaps
        .delete("c", &Default::default())
        .await
        .expect("delete c");
    let run = plumb(&[
        "diff",
        "--cluster",
        "--app",
        &app_file,
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    let doc = run.json();
    assert_eq!(
        doc["summary"],
        json!({"inSync": true, "modified": 0, "missing": 0, "extra": 0, "equal": 2}),
        "{run}"
    );
    assert_eq!(run.status("a"), "equal", "{run}");
    assert_eq!(run.status("b"), "equal", "{run}");
    assert_eq!(run.status("c"), "absent", "{run}"); // pruned
    // Without the app (no tracking): in sync as well, and the argocd format is empty.
    let run = plumb(&["diff", "--cluster", "--desired", &desired]).await;
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(run.stdout.trim(), "", "{run}");
}

// ---------------------------------------------------------------------------
// 2. a mutating webhook: client-side against server-side diff
// ---------------------------------------------------------------------------

const PULL_LABEL: &str = "policy.lab/image-pull";
const POLICY: &str = "/spec/template/spec/containers/0/imagePullPolicy";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_webhook_client_side_against_server_side_diff() {
    let Some(cluster) = testbed("mutating_webhook_client_side_against_server_side_diff").await
    else {
        return;
    };
    let hook = Webhook::start().await;
    // A selector of this test's own: the webhook of `doctor_diagnoses_the_seed_incident_live`,
    // running alongside, must not mutate `pre` before this test's webhook exists.
    let selected = webhook::selector_value();
    let ns = namespace(&cluster, "whdiff", json!({PULL_LABEL: selected})).await;
    let app = unique("wh-app");
    let dir = Scratch::new("webhook");

    // `pre` exists before the webhook does: imagePullPolicy is not in git and
    // the server defaulted it to IfNotPresent.
    let pre = deployment_without_policy(&ns, "pre");
    apply(&cluster, vec![synced(&app, pre.clone())]).await;
    // kube-controller-manager writes new Deployments for a while (revision, status): the
    // diffs below compare live objects read at different moments, so let it finish first.
    support::deployment_observed(&cluster, &ns, "pre").await;

    let config_name = unique("plumb-cli-test-force-always");
    apply(
        &cluster,
        vec![hook.configuration(&config_name, PULL_LABEL, &selected)],
    )
    .await;
    let result = std::panic::AssertUnwindSafe(webhook_cases(&cluster, &ns, &app, &dir, pre));
    let outcome = futures::FutureExt::catch_unwind(result).await;

    // Deregister and stop the webhook whatever happened.
    delete_cluster_object::<MutatingWebhookConfiguration>(&cluster, &config_name).await;
    hook.stop().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// `plumb preview --cluster`: an Application of the cluster whose source is the repository
/// (by URL) is previewed though the repository declares no Application, and the preflight
/// against the cluster names the webhook that will rewrite the pull policy the change declares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_against_the_cluster() {
    let Some(cluster) = testbed("preview_against_the_cluster").await else {
        return;
    };
    install_application_crd(&cluster).await;
    let hook = Webhook::start().await;
    let selected = webhook::selector_value();
    let ns = namespace(&cluster, "preview", json!({PULL_LABEL: selected})).await;
    let config_name = unique("plumb-cli-test-preview-always");
    apply(
        &cluster,
        vec![hook.configuration(&config_name, PULL_LABEL, &selected)],
    )
    .await;
    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(preview_cases(
        &cluster, &ns,
    )))
    .await;
    delete_cluster_object::<MutatingWebhookConfiguration>(&cluster, &config_name).await;
    hook.stop().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn preview_cases(cluster: &Cluster, ns: &str) {
    webhook::wait_effective(cluster, ns).await;
    let dir = Scratch::new("preview");
    let repo = dir.path("repo");
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("git runs");
        assert!(o.status.success(), "git {args:?}: {o:?}");
    };
    let url = format!("file://{}", s(&repo));
    dir.write(
        "repo/web/deployment.yaml",
        &[deployment_without_policy(ns, "web")],
    );
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "base"]);
    git(&["tag", "base"]);
    // The app, synced from the base: the webhook set the pull policy git leaves out.
    let app = unique("preview-app");
    apply(
        cluster,
        vec![json!({
            "apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": app, "namespace": ns},
            "spec": {
                "project": "default",
                "source": {"repoURL": url, "targetRevision": "base", "path": "web"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": ns},
            }
        })],
    )
    .await;
    let run = plumb(&["app", "sync", &app, "--cluster", "-N", ns]).await;
    assert_eq!(run.code, Some(0), "{run}");
    // An ApplicationSet of the repository whose clusters generator reads the cluster's
    // Secrets (of its own namespace).
    apply(
        cluster,
        vec![json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "remote", "namespace": ns,
                "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
            "stringData": {"name": "remote", "server": "https://remote.example:6443", "config": "{}"}})],
    )
    .await;
    dir.write(
        "repo/argocd/web.yaml",
        &[
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"goTemplate": true, "generators": [{"clusters": {}}],
                "template": {"metadata": {"name": "{{.name}}-web"},
                    "spec": {"project": "default",
                        "source": {"repoURL": url, "targetRevision": "main", "path": "web"},
                        "destination": {"server": "{{.server}}", "namespace": ns}}}}}),
        ],
    );
    git(&["add", "."]);
    git(&["commit", "-qm", "the ApplicationSet"]);
    git(&["tag", "-f", "base"]);
    // The change: the pull policy declared, and a new Deployment declaring it too (not live
    // yet: the preflight asks admission what it would make of it).
    dir.write(
        "repo/web/deployment.yaml",
        &[
            deployment(ns, "web", "IfNotPresent"),
            deployment(ns, "fresh", "IfNotPresent"),
        ],
    );
    git(&["commit", "-qam", "pull policy"]);
    let repo_arg = s(&repo);
    let run = plumb(&[
        "preview",
        "--repo",
        &repo_arg,
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        "--cluster",
        "--repo-url",
        &url,
        "-o",
        "json",
        "--fail-on",
        "preflight",
    ])
    .await;
    assert_eq!(run.code, Some(1), "{run}");
    let v = run.json();
    let apps = v["apps"].as_array().expect("apps");
    let names: Vec<(&str, &str)> = apps
        .iter()
        .map(|a| {
            (
                a["app"].as_str().unwrap_or(""),
                a["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    // The cluster's app, and the ApplicationSet's: one per cluster (the in-cluster entry
    // Argo CD adds, and the cluster Secret of the ApplicationSet's namespace).
    let (in_cluster, remote) = (format!("{ns}/in-cluster-web"), format!("{ns}/remote-web"));
    let mine = format!("{ns}/{app}");
    let mut want = vec![
        (in_cluster.as_str(), "changed"),
        (mine.as_str(), "changed"),
        (remote.as_str(), "changed"),
    ];
    want.sort();
    assert_eq!(names, want, "{run}");
    let mine = apps
        .iter()
        .find(|a| a["app"] == mine)
        .expect("the cluster's app");
    let warnings: Vec<&str> = mine["preflight"]
        .as_array()
        .expect("preflight warnings")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in ["web", "fresh"] {
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with(&format!("apps/Deployment {ns}/{name} "))
                    && w.contains(POLICY)
                    && w.contains("mutating-webhook")
                    && w.contains("web/deployment.yaml")),
            "{name}: {run}"
        );
    }
    // The dry run created nothing.
    let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(cluster.client().clone(), ns);
    assert!(
        deployments
            .get_opt("fresh")
            .await
            .expect("get fresh")
            .is_none()
    );
    // Without a URL naming the repository, the cluster's apps are not previewed (said).
    let run = plumb(&[
        "preview",
        "--repo",
        &repo_arg,
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        "--cluster",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(1), "{run}");
    assert!(run.stderr.contains("pass --repo-url"), "{run}");
    let listed: Vec<String> = run.json()["apps"]
        .as_array()
        .expect("apps")
        .iter()
        .filter_map(|a| a["app"].as_str().map(str::to_string))
        .collect();
    assert_eq!(listed, [in_cluster.clone(), remote.clone()], "{run}");
}

async fn webhook_cases(cluster: &Cluster, ns: &str, app: &str, dir: &Scratch, pre: Value) {
    // The API server picks new webhook configurations up asynchronously.
    webhook::wait_effective(cluster, ns).await;

    // `web` is created with the webhook in place: git says IfNotPresent, live
    // has Always.
    let web = deployment(ns, "web", "IfNotPresent");
    let stored = apply(cluster, vec![synced(app, web.clone())]).await;
    assert_eq!(stored[0].pointer(POLICY), Some(&json!("Always")));
    support::deployment_observed(cluster, ns, "web").await;

    let desired = dir.write("desired/deployments.yaml", &[web, pre]);

    // Client-side (legacy) diff: the webhook's rewrite is a difference; `pre`
    // is in sync (git does not declare imagePullPolicy).
    let run = plumb(&["diff", "--cluster", "--desired", &desired]).await;
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        run.stdout
            .contains(&format!("===== apps/Deployment {ns}/web ======\n")),
        "{run}"
    );
    assert!(
        run.stdout.contains(
            "<         imagePullPolicy: Always\n---\n>         imagePullPolicy: IfNotPresent\n"
        ),
        "{run}"
    );
    assert!(!run.stdout.contains("/pre ======"), "{run}");
    let run = plumb(&["diff", "--cluster", "--desired", &desired, "-o", "json"]).await;
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(
        run.resource("web")["fields"],
        json!([{"path": POLICY, "live": "Always", "desired": "IfNotPresent"}]),
        "{run}"
    );
    assert_eq!(run.status("pre"), "equal", "{run}");

    // Server-side diff: the dry run goes through the webhook too, so it
    // predicts Always, which is what live has: in sync.
    let run = plumb(&[
        "diff",
        "--cluster",
        "--server-side",
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(run.json()["summary"]["equal"], 2, "{run}");
    // The dry runs stored nothing.
    let live: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(cluster.client().clone(), ns);
    assert!(live.get_opt("probe").await.expect("get probe").is_none());

    // The same through the Application annotation.
    let app_ssd = dir.app(
        "app-ssd.yaml",
        app,
        ns,
        Some("ServerSideDiff=true"),
        json!([]),
    );
    let run = plumb(&[
        "diff",
        "--cluster",
        "--app",
        &app_ssd,
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(run.json()["summary"]["equal"], 2, "{run}");
    // The argocd format prints nothing in sync.
    let run = plumb(&[
        "diff",
        "--cluster",
        "--app",
        &app_ssd,
        "--desired",
        &desired,
    ])
    .await;
    assert_eq!((run.code, run.stdout.trim()), (Some(0), ""), "{run}");

    // IncludeMutationWebhook=true keeps what webhooks change in the dry run
    // (Argo CD's removeWebhookMutation is skipped). For `web` that changes
    // nothing: live already carries the mutation, the sync would write Always
    // again. For `pre` it is the point of the option: the next sync would
    // have the webhook turn IfNotPresent into Always, a field nobody applies
    // (git does not declare it), so only IncludeMutationWebhook shows it.
    let app_mw = dir.app(
        "app-mw.yaml",
        app,
        ns,
        Some("ServerSideDiff=true,IncludeMutationWebhook=true"),
        json!([]),
    );
    let run = plumb(&[
        "diff",
        "--cluster",
        "--app",
        &app_mw,
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(run.status("web"), "equal", "{run}");
    let fields = run.resource("pre")["fields"].clone();
    assert!(
        fields
            .as_array()
            .expect("fields")
            .contains(&json!({"path": POLICY, "live": "IfNotPresent", "desired": "Always"})),
        "{run}"
    );
    // The dry run's result is taken whole, so the generation the update would
    // bump shows as well (as in Argo CD, where only removeWebhookMutation would
    // put live's generation back); nothing else does.
    for field in fields.as_array().expect("fields") {
        assert!(
            field["path"] == POLICY || field["path"] == "/metadata/generation",
            "{run}"
        );
    }
    // The --server-side flag wins over `ServerSideDiff=false` in the annotation
    // (a client-side diff would exit 1 on `web`).
    let app_off = dir.app(
        "app-off.yaml",
        app,
        ns,
        Some("ServerSideDiff=false"),
        json!([]),
    );
    let run = plumb(&[
        "diff",
        "--cluster",
        "--server-side",
        "--app",
        &app_off,
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run}");
}

// ---------------------------------------------------------------------------
// 3. replicas through the scale subresource
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_scaled_by_the_controller_manager() {
    let Some(cluster) = testbed("replicas_scaled_by_the_controller_manager").await else {
        return;
    };
    let ns = namespace(&cluster, "scale", json!({})).await;
    let app = unique("scale-app");
    let dir = Scratch::new("scale");

    let mut web = deployment(&ns, "web", "IfNotPresent");
    web["spec"]["replicas"] = json!(2);
    let desired = dir.write("desired/web.yaml", std::slice::from_ref(&web));
    // As `kubectl apply --server-side` would (another manager than plumb).
    let stored: Vec<Value> = cluster
        .apply(vec![synced(&app, web)], "kubectl", true)
        .await
        .into_iter()
        .map(|r| r.expect("apply"))
        .collect();
    assert_eq!(stored[0]["spec"]["replicas"], 2);

    // What the HPA / an operator does: PATCH .../scale as kube-controller-manager.
    let request = kube::core::Request::new(format!("/apis/apps/v1/namespaces/{ns}/deployments"))
        .patch_subresource(
            "scale",
            "web",
            &kube::api::PatchParams {
                field_manager: Some("kube-controller-manager".into()),
                ..Default::default()
            },
            &kube::api::Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .expect("scale request");
    let scale: Value = cluster.client().request(request).await.expect("scale");
    assert_eq!(scale["spec"]["replicas"], 5);

    let replicas = json!([{"path": "/spec/replicas", "live": 5, "desired": 2}]);
    let run = plumb(&["diff", "--cluster", "--desired", &desired, "-o", "json"]).await;
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(run.resource("web")["fields"], replicas, "{run}");
    let run = plumb(&["diff", "--cluster", "--desired", &desired]).await;
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        run.stdout
            .contains("<   replicas: 5\n---\n>   replicas: 2\n"),
        "{run}"
    );

    // An app without the rule: the same difference.
    let plain_app = dir.app("plain.yaml", &app, &ns, None, json!([]));
    let run = plumb(&[
        "diff",
        "--cluster",
        "--app",
        &plain_app,
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(run.resource("web")["fields"], replicas, "{run}");

    // ignoreDifferences by managedFieldsManagers: what kube-controller-manager
    // owns is not compared.
    let ignoring = dir.app(
        "ignoring.yaml",
        &app,
        &ns,
        None,
        json!([{"group": "apps", "kind": "Deployment",
            "managedFieldsManagers": ["kube-controller-manager"]}]),
    );
    for format in ["json", "argocd"] {
        let run = plumb(&[
            "diff",
            "--cluster",
            "--app",
            &ignoring,
            "--desired",
            &desired,
            "-o",
            format,
        ])
        .await;
        assert_eq!(run.code, Some(0), "{run}");
    }
    // ... also server-side.
    let run = plumb(&[
        "diff",
        "--cluster",
        "--server-side",
        "--app",
        &ignoring,
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run}");
}

// ---------------------------------------------------------------------------
// 4. snapshot round trip
// ---------------------------------------------------------------------------

const SECRET_PLAIN: &str = "hunter2-live-value";
const SECRET_B64: &str = "aHVudGVyMi1saXZlLXZhbHVl";
const SECRET_DESIRED_PLAIN: &str = "hunter3-desired-value";
const SECRET_DESIRED_B64: &str = "aHVudGVyMy1kZXNpcmVkLXZhbHVl";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_round_trip_gives_the_same_diff() {
    let Some(cluster) = testbed("snapshot_round_trip_gives_the_same_diff").await else {
        return;
    };
    let ns = namespace(&cluster, "snaprt", json!({})).await;
    let app = unique("snap-app");
    let dir = Scratch::new("snapshot");

    // Git: a modified ConfigMap, an equal one, a Deployment with a changed
    // image, a missing ConfigMap and a Secret in sync (a snapshot holds no Secret
    // values, so value drift is the one thing it cannot show). Live also has an
    // extra (tracked, not in git).
    let changed = configmap(&ns, "changed", json!({"k": "git"}));
    let equal = configmap(&ns, "equal", json!({"k": "same"}));
    let missing = configmap(&ns, "missing", json!({"k": "x"}));
    let mut web = deployment(&ns, "web", "IfNotPresent");
    web["spec"]["template"]["spec"]["containers"][0]["image"] = json!("registry.invalid/app:2");
    let secret = |b64: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "creds", "namespace": ns}, "data": {"password": b64}})
    };
    let desired = dir.write(
        "desired/all.yaml",
        &[changed, equal.clone(), missing, web, secret(SECRET_B64)],
    );
    let app_file = dir.app("app.yaml", &app, &ns, None, json!([]));
    let mut extra = configmap(&ns, "extra", json!({"k": "extra"}));
    extra["metadata"]["labels"] = json!({INSTANCE_LABEL: app});
    apply(
        &cluster,
        vec![
            synced(&app, configmap(&ns, "changed", json!({"k": "live"}))),
            synced(&app, equal),
            synced(&app, deployment(&ns, "web", "IfNotPresent")),
            synced(&app, secret(SECRET_B64)),
            extra,
        ],
    )
    .await;
    // kube-controller-manager annotates and updates the new Deployment: wait until it is done,
    // so the snapshot and the live diff below see the same object.
    support::deployment_observed(&cluster, &ns, "web").await;

    let snap = dir.path("snapshot");
    let run = plumb(&[
        "snapshot",
        "--cluster",
        "--app",
        &app_file,
        "--out",
        &s(&snap),
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stderr.contains("1 Secrets without their values"),
        "{run}"
    );

    // No Secret value in any snapshot file.
    let files = files_under(&snap);
    assert!(
        files
            .iter()
            .any(|f| f.ends_with(format!("core/Secret/{ns}/creds.yaml"))),
        "{files:?}"
    );
    for file in &files {
        let text = std::fs::read_to_string(file).expect("snapshot file");
        for needle in [SECRET_PLAIN, SECRET_B64] {
            assert!(
                !text.contains(needle),
                "{} holds the Secret value",
                file.display()
            );
        }
    }

    for format in ["argocd", "json", "unified"] {
        let from_cluster = plumb(&[
            "diff",
            "--cluster",
            "--app",
            &app_file,
            "--desired",
            &desired,
            "-o",
            format,
        ])
        .await;
        let from_snapshot = plumb(&[
            "diff",
            "--live",
            &s(&snap),
            "--app",
            &app_file,
            "--desired",
            &desired,
            "-o",
            format,
        ])
        .await;
        assert_eq!(from_cluster.code, Some(1), "{from_cluster}");
        assert_eq!(
            from_snapshot.code,
            from_cluster.code,
            "{format}: --live {}:\n{from_snapshot}",
            snap.display()
        );
        assert!(
            from_snapshot.stdout == from_cluster.stdout,
            "{format}: stdout differs\n--- --cluster\n{}\n--- --live snapshot\n{}",
            from_cluster.stdout,
            from_snapshot.stdout
        );
        for needle in [
            SECRET_PLAIN,
            SECRET_B64,
            SECRET_DESIRED_PLAIN,
            SECRET_DESIRED_B64,
        ] {
            assert!(
                !from_cluster.stdout.contains(needle) && !from_cluster.stderr.contains(needle),
                "{format}: the Secret value is printed:\n{from_cluster}"
            );
            assert!(!from_snapshot.stdout.contains(needle), "{from_snapshot}");
        }
        if format == "json" {
            let doc = from_cluster.json();
            assert_eq!(
                doc["summary"],
                json!({"inSync": false, "modified": 2, "missing": 1, "extra": 1, "equal": 2}),
                "{from_cluster}"
            );
            assert_eq!(from_cluster.resource("creds")["status"], "equal");
        }
    }
}

/// A Secret that is in sync stays in sync when diffed from a snapshot: the snapshot's
/// Secrets carry no values, and say so, so the diff takes git's values for them rather
/// than reporting every key as changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_round_trip_of_an_in_sync_secret() {
    let Some(cluster) = testbed("snapshot_round_trip_of_an_in_sync_secret").await else {
        return;
    };
    let ns = namespace(&cluster, "snapsec", json!({})).await;
    let app = unique("snapsec-app");
    let dir = Scratch::new("snapsec");
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "creds", "namespace": ns}, "data": {"password": SECRET_B64}});
    let desired = dir.write("desired/secret.yaml", std::slice::from_ref(&secret));
    let app_file = dir.app("app.yaml", &app, &ns, None, json!([]));
    apply(&cluster, vec![synced(&app, secret)]).await;
    let snap = dir.path("snapshot");
    let run = plumb(&[
        "snapshot",
        "--cluster",
        "--app",
        &app_file,
        "--out",
        &s(&snap),
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    let from_cluster = plumb(&[
        "diff",
        "--cluster",
        "--app",
        &app_file,
        "--desired",
        &desired,
    ])
    .await;
    assert_eq!(from_cluster.code, Some(0), "{from_cluster}");
    let from_snapshot = plumb(&[
        "diff",
        "--live",
        &s(&snap),
        "--app",
        &app_file,
        "--desired",
        &desired,
    ])
    .await;
    assert_eq!(
        (from_snapshot.code, from_snapshot.stdout.as_str()),
        (from_cluster.code, from_cluster.stdout.as_str()),
        "{from_snapshot}"
    );
}

/// An object the app tracks, of a kind git does not use at all, is an extra
/// (Argo CD watches every kind) — from the cluster as from a snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extras_of_kinds_git_does_not_use() {
    let Some(cluster) = testbed("extras_of_kinds_git_does_not_use").await else {
        return;
    };
    let ns = namespace(&cluster, "extrakind", json!({})).await;
    let app = unique("extrakind-app");
    let dir = Scratch::new("extrakind");
    let cm = configmap(&ns, "cm", json!({"k": "v"}));
    let desired = dir.write("desired/cm.yaml", std::slice::from_ref(&cm));
    let app_file = dir.app("app.yaml", &app, &ns, None, json!([]));
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "left-behind", "namespace": ns, "labels": {INSTANCE_LABEL: app}}});
    apply(&cluster, vec![synced(&app, cm), sa]).await;

    let snap = dir.path("snapshot");
    let run = plumb(&[
        "snapshot",
        "--cluster",
        "--app",
        &app_file,
        "--out",
        &s(&snap),
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    let args = |live: &[String]| -> Vec<String> {
        let mut a: Vec<String> = vec!["diff".into()];
        a.extend(live.iter().cloned());
        a.extend(["--app", &app_file, "--desired", &desired, "-o", "json"].map(String::from));
        a
    };
    let from_snapshot = plumb(&args(&["--live".into(), s(&snap)])).await;
    assert_eq!(from_snapshot.code, Some(1), "{from_snapshot}");
    assert_eq!(
        from_snapshot.resource("left-behind")["status"],
        "extra",
        "{from_snapshot}"
    );
    let from_cluster = plumb(&args(&["--cluster".into()])).await;
    assert_eq!(
        (from_cluster.code, from_cluster.stdout.as_str()),
        (from_snapshot.code, from_snapshot.stdout.as_str()),
        "{from_cluster}"
    );
}

// ---------------------------------------------------------------------------
// 5. custom resources
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_and_kinds_without_a_crd() {
    let Some(cluster) = testbed("custom_resources_and_kinds_without_a_crd").await else {
        return;
    };
    let ns = namespace(&cluster, "crd", json!({})).await;
    let dir = Scratch::new("crd");
    let group = format!("{}.plumb.test", unique("cr"));
    let crd_name = format!("widgets.{group}");
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"},
                        "color": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}}}}}}}}]}});
    apply(&cluster, vec![crd]).await;
    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
        custom_resource_cases(&cluster, &ns, &group, &dir),
    ))
    .await;
    delete_cluster_object::<CustomResourceDefinition>(&cluster, &crd_name).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn custom_resource_cases(cluster: &Cluster, ns: &str, group: &str, dir: &Scratch) {
    let widget = |size: i64, tags: Value| {
        json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
            "metadata": {"name": "w1", "namespace": ns},
            "spec": {"size": size, "color": "red", "tags": tags}})
    };
    // Served once the CRD is Established: the apply succeeds.
    let live = widget(1, json!(["a", "b"]));
    wait_until("the Widget CRD being served", || async {
        let r = cluster
            .apply(vec![live.clone()], "plumb-test", true)
            .await
            .remove(0);
        r.ok()
    })
    .await;

    let desired = dir.write("desired/widget.yaml", &[widget(3, json!(["a", "c"]))]);
    let run = plumb(&["diff", "--cluster", "--desired", &desired, "-o", "json"]).await;
    assert_eq!(run.code, Some(1), "{run}");
    let w = run.resource("w1");
    assert_eq!(w["status"], "modified", "{run}");
    assert_eq!(w["group"], group, "{run}");
    assert_eq!(w["kind"], "Widget", "{run}");
    assert_eq!(
        w["fields"],
        json!([
            {"path": "/spec/size", "live": 1, "desired": 3},
            {"path": "/spec/tags/1", "live": "b", "desired": "c"}
        ]),
        "{run}"
    );
    let run = plumb(&["diff", "--cluster", "--desired", &desired]).await;
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        run.stdout
            .contains(&format!("===== {group}/Widget {ns}/w1 ======\n")),
        "{run}"
    );
    // Server-side as well (a dry-run apply of a custom resource).
    let run = plumb(&[
        "diff",
        "--cluster",
        "--server-side",
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(run.resource("w1")["status"], "modified", "{run}");
    // In sync when git says what live has.
    let same = dir.write("same/widget.yaml", &[widget(1, json!(["a", "b"]))]);
    let run = plumb(&["diff", "--cluster", "--desired", &same]).await;
    assert_eq!((run.code, run.stdout.trim()), (Some(0), ""), "{run}");

    // A kind no CRD defines: exit 2, one line naming the kind.
    let gadget = json!({"apiVersion": "nothing.plumb.test/v1", "kind": "Gadget",
        "metadata": {"name": "g", "namespace": ns}, "spec": {}});
    let unknown = dir.write(
        "unknown/objects.yaml",
        &[gadget, widget(1, json!(["a", "b"]))],
    );
    let run = plumb(&["diff", "--cluster", "--desired", &unknown]).await;
    assert_eq!(run.code, Some(2), "{run}");
    assert_eq!(run.stdout, "", "{run}");
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{run}");
    assert!(lines[0].starts_with("error: "), "{run}");
    assert!(lines[0].contains("Gadget"), "{run}");
    assert!(lines[0].contains("nothing.plumb.test"), "{run}");
}

// ---------------------------------------------------------------------------
// 6. errors
// ---------------------------------------------------------------------------

/// A kubeconfig (JSON is YAML) with context `ctx` for `server`.
fn kubeconfig(server: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx"
    })
}

/// Checks `run` is a clean failure: exit 2, nothing on stdout, one `error:` line
/// (plus, at most, `hint:` lines).
fn assert_one_error(run: &Run) -> String {
    assert_eq!(run.code, Some(2), "{run}");
    assert_eq!(run.stdout, "", "{run}");
    let lines = run.stderr_lines();
    let errors: Vec<&&str> = lines.iter().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 1, "{run}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("error: ") || l.starts_with("hint: ")),
        "{run}"
    );
    errors[0].to_string()
}

/// How long a failure that needs no answer from a cluster may take: it must not retry for
/// minutes, but a busy machine takes its time to start a process (and the probe of a
/// silent server alone takes 9 s).
const FAILS_FAST: Duration = Duration::from_secs(30);

/// These need no cluster: they run with or without the test bed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_and_kubeconfig_errors() {
    let dir = Scratch::new("errors");
    let desired = dir.write(
        "desired/cm.yaml",
        &[configmap("default", "cm", json!({"k": "v"}))],
    );

    // Nothing listens on port 1: exit 2 at once, one line naming the server.
    let unreachable = dir.write(
        "unreachable.kubeconfig",
        &[kubeconfig("https://127.0.0.1:1")],
    );
    let run = plumb(&[
        "diff",
        "--cluster",
        "--kubeconfig",
        &unreachable,
        "--desired",
        &desired,
    ])
    .await;
    let line = assert_one_error(&run);
    assert!(run.took < FAILS_FAST, "{run}");
    assert!(line.contains("https://127.0.0.1:1"), "{run}");
    // The same through KUBECONFIG, for snapshot too.
    let run = tokio::task::spawn_blocking({
        let unreachable = unreachable.clone();
        let out = s(&dir.path("snap-out"));
        move || {
            let started = Instant::now();
            let o = Command::new(env!("CARGO_BIN_EXE_plumb"))
                .args(["snapshot", "--cluster", "--out", &out])
                .env("KUBECONFIG", &unreachable)
                .output()
                .expect("plumb runs");
            Run {
                code: o.status.code(),
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
                took: started.elapsed(),
            }
        }
    })
    .await
    .expect("runner");
    let line = assert_one_error(&run);
    assert!(!run.stderr.contains("panicked"), "{run}");
    assert!(run.took < FAILS_FAST, "{run}");
    assert!(line.contains("127.0.0.1:1"), "{run}");

    // A kubeconfig that does not exist: named.
    let run = plumb(&[
        "diff",
        "--cluster",
        "--kubeconfig",
        "/nonexistent/plumb.kubeconfig",
        "--desired",
        &desired,
    ])
    .await;
    let line = assert_one_error(&run);
    assert!(line.contains("/nonexistent/plumb.kubeconfig"), "{run}");

    // A context the kubeconfig does not have: named (with the file).
    let run = plumb(&[
        "diff",
        "--cluster",
        "--kubeconfig",
        &unreachable,
        "--context",
        "no-such-context",
        "--desired",
        &desired,
    ])
    .await;
    let line = assert_one_error(&run);
    assert!(line.contains("no-such-context"), "{run}");
    assert!(line.contains("unreachable.kubeconfig"), "{run}");
    assert!(run.took < FAILS_FAST, "{run}");
}

/// The test bed's admin credentials, impersonating `user` (kubectl's `--as`: no
/// RBAC rule names it; the admin is in system:masters, so it may impersonate).
fn impersonating_kubeconfig(dir: &Scratch, user: &str) -> String {
    let testbed = support::testbed_dir();
    let server = std::fs::read_to_string(testbed.join("server")).expect("testbed server");
    let file = |name: &str| s(&testbed.join(name));
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "testbed", "cluster": {
            "server": server.trim(), "certificate-authority": file("ca.crt")}}],
        "users": [{"name": "impersonating", "user": {
            "client-certificate": file("admin.crt"), "client-key": file("admin.key"), "as": user}}],
        "contexts": [{"name": "impersonating",
            "context": {"cluster": "testbed", "user": "impersonating"}}],
        "current-context": "impersonating"
    });
    dir.write("impersonating.kubeconfig", &[config])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_names_verb_resource_and_namespace() {
    let Some(cluster) = testbed("forbidden_names_verb_resource_and_namespace").await else {
        return;
    };
    let ns = namespace(&cluster, "forbid", json!({})).await;
    let dir = Scratch::new("forbidden");
    let user = unique("nobody");
    let kubeconfig = impersonating_kubeconfig(&dir, &user);
    let desired = dir.write(
        "desired/cm.yaml",
        &[configmap(&ns, "cm", json!({"k": "v"}))],
    );
    let app_file = dir.app("app.yaml", &unique("forbid-app"), &ns, None, json!([]));

    let run = plumb(&[
        "diff",
        "--cluster",
        "--kubeconfig",
        &kubeconfig,
        "--desired",
        &desired,
    ])
    .await;
    let line = assert_one_error(&run);
    assert!(line.contains("forbidden"), "{run}");
    assert!(line.contains(&format!("\"{user}\"")), "{run}");
    assert!(line.contains("list"), "{run}");
    assert!(line.contains("configmaps"), "{run}");
    assert!(line.contains(&format!("\"{ns}\"")), "{run}");

    // Server-side diff and an app: the same LIST fails first.
    let run = plumb(&[
        "diff",
        "--cluster",
        "--kubeconfig",
        &kubeconfig,
        "--server-side",
        "--app",
        &app_file,
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    let line = assert_one_error(&run);
    assert!(
        line.contains("list") && line.contains("configmaps") && line.contains(&ns),
        "{run}"
    );

    // Reading is allowed, the dry-run apply is not: names patch.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "read-configmaps", "namespace": ns},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "read-configmaps", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-configmaps"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]});
    apply(
        &cluster,
        vec![role, binding, configmap(&ns, "cm", json!({"k": "live"}))],
    )
    .await;
    let args = [
        "diff",
        "--cluster",
        "--kubeconfig",
        &kubeconfig,
        "--server-side",
        "--desired",
        &desired,
    ];
    // RBAC reaches the authorizer's cache quickly, but not instantly.
    let run = wait_until("the Role allowing the LIST", || async {
        let run = plumb(&args).await;
        (!run.stderr.contains("cannot list")).then_some(run)
    })
    .await;
    let line = assert_one_error(&run);
    assert!(
        line.contains("patch")
            && line.contains("configmaps")
            && line.contains(&format!("\"{ns}\"")),
        "{run}"
    );
    // Client-side needs no more than the LIST.
    let run = plumb(&[
        "diff",
        "--cluster",
        "--kubeconfig",
        &kubeconfig,
        "--desired",
        &desired,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(1), "{run}");
    assert_eq!(run.resource("cm")["status"], "modified", "{run}");
}

/// Applies deploy/crd.yaml and waits until `applications.plumb.dev` is served.
async fn install_application_crd(cluster: &Cluster) {
    let crd_text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/crd.yaml"
    ))
    .expect("deploy/crd.yaml");
    apply(cluster, {
        let docs: Vec<serde_json::Value> =
            serde_saphyr::from_str_multiple(&crd_text).expect("CRD YAML");
        docs
    })
    .await;
    wait_until("applications.plumb.dev being served", || async {
        cluster.discover().await.ok()?;
        cluster.resource_for("plumb.dev", "Application").await.ok()
    })
    .await;
}

/// `plumb app sync|get|history|list|wait` and `plumb controller --once` on a plumb
/// Application: the CRD from deploy/, a plain-directory source, one sync recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_commands_sync_and_report() {
    let Some(cluster) = testbed("app_commands_sync_and_report").await else {
        return;
    };
    install_application_crd(&cluster).await;

    let ns = namespace(&cluster, "appcmd", json!({})).await;
    let app_ns = namespace(&cluster, "appcmd-apps", json!({})).await;
    let dir = Scratch::new("appcmd");
    dir.write(
        "repo/app/cm.yaml",
        &[json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"k": "v"}})],
    );
    let name = unique("shop");
    let app = json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": app_ns},
        "spec": {"project": "default",
            "source": {"repoURL": format!("file://{}", s(&dir.path("repo"))), "path": "app", "targetRevision": "HEAD"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns},
            "syncPolicy": {"automated": {"prune": true}}}});
    apply(&cluster, vec![app.clone()]).await;

    let common = ["--cluster", "-N", app_ns.as_str()];
    let run = plumb(&[&["app", "sync", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(run.code, Some(0), "{run}");
    // A user's sync leaves its Events on the Application (written before the command
    // exits), the start in the API server's words: the revision requested (the target here).
    let events = app_events(&cluster, &app_ns, &name).await;
    let has = |reason: &str, text: &str| {
        events
            .iter()
            .any(|(r, m, _)| r == reason && m.as_str() == text)
    };
    assert!(
        has("OperationStarted", "initiated sync to HEAD"),
        "{events:?}"
    );
    assert!(
        events.iter().any(|(r, m, _)| r == "OperationCompleted"
            && m.starts_with("Sync operation to ")
            && m.ends_with(" succeeded")),
        "{events:?}"
    );
    assert!(
        has("ResourceUpdated", "Updated sync status:  -> Synced"),
        "{events:?}"
    );
    let run = plumb(&[&["app", "get", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stdout.contains("Sync Policy:        Automated (Prune)"),
        "{run}"
    );
    assert!(
        run.stdout.contains("Sync Status:        Synced to HEAD"),
        "{run}"
    );
    assert!(run.stdout.contains("ConfigMap"), "{run}");
    let run = plumb(&[&["app", "history", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(run.code, Some(0), "{run}");
    assert_eq!(run.stdout.lines().count(), 2, "one sync recorded: {run}");
    let run = plumb(
        &[
            &["app", "wait", name.as_str(), "--sync", "--timeout", "90"][..],
            &common[..],
        ]
        .concat(),
    )
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    let run = plumb(&["app", "list", "--cluster"]).await;
    assert!(run.stdout.contains(&name), "{run}");
    let run = plumb(&[&["app", "diff", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(run.code, Some(0), "in sync after the sync: {run}");
    // A hand edit shows as Argo CD prints it.
    apply(
        &cluster,
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": ns}, "data": {"k": "edited"}})],
    )
    .await;
    let run = plumb(&[&["app", "diff", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(run.code, Some(1), "{run}");
    assert!(
        run.stdout
            .contains(&format!("===== /ConfigMap {ns}/settings ======")),
        "{run}"
    );
    assert!(
        run.stdout.contains("<   k: edited") && run.stdout.contains(">   k: v"),
        "{run}"
    );
    // `get` shows what was last written; `get --refresh` compares now.
    let run = plumb(&[&["app", "get", name.as_str()][..], &common[..]].concat()).await;
    assert!(run.stdout.contains("Sync Status:        Synced"), "{run}");
    let run = plumb(&[&["app", "get", name.as_str(), "--refresh"][..], &common[..]].concat()).await;
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stdout.contains("Sync Status:        OutOfSync"),
        "{run}"
    );
    let run = plumb(&[&["app", "sync", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(run.code, Some(0), "{run}");
    // Another replica holds the leader Lease: this one does not reconcile.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let stamp = |secs: u64| {
        let t = std::time::UNIX_EPOCH + Duration::from_secs(secs);
        plumb_sync::time::format_rfc3339(t).replace('Z', ".000000Z")
    };
    // Held for 10 minutes: still held when the controller below reads it, however busy the
    // machine is.
    let lease = |renew: u64| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "plumb-controller", "namespace": app_ns},
            "spec": {"holderIdentity": "other-replica", "leaseDurationSeconds": 600,
                "renewTime": stamp(renew), "acquireTime": stamp(renew)}})
    };
    apply(&cluster, vec![lease(now)]).await;
    let controller = [
        "controller",
        "--once",
        "-N",
        app_ns.as_str(),
        "--lease-namespace",
        app_ns.as_str(),
    ];
    let run = plumb(&controller).await;
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stderr.contains("\"leader\":\"other-replica\"")
            && run.stderr.contains("\"reconciling\":false"),
        "{run}"
    );
    assert!(
        !run.stderr.contains(&name),
        "a follower does not reconcile: {run}"
    );
    // Its Lease expired: this replica takes over and reconciles, finding nothing to sync.
    apply(&cluster, vec![lease(now - 1200)]).await;
    let run = plumb(&controller).await;
    assert_eq!(run.code, Some(0), "{run}");
    assert!(run.stderr.contains(&name), "{run}");
    let held = cluster
        .get_object("coordination.k8s.io", "Lease", &app_ns, "plumb-controller")
        .await
        .expect("get lease")
        .expect("lease");
    assert_eq!(
        held["spec"]["holderIdentity"], "",
        "released on exit: {held}"
    );
    assert_eq!(held["spec"]["leaseTransitions"], 1, "{held}");
    let run = plumb(&[&["app", "history", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(run.stdout.lines().count(), 3, "two syncs recorded: {run}");

    // A dry run reports what a sync would do and changes nothing; a rollback is refused while
    // automated sync is on.
    let run = plumb(
        &[
            &["app", "sync", name.as_str(), "--dry-run"][..],
            &common[..],
        ]
        .concat(),
    )
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stdout
            .contains("configmap serverside-applied (server dry run)"),
        "{run}"
    );
    let run = plumb(&[&["app", "history", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(
        run.stdout.lines().count(),
        3,
        "a dry run is not history: {run}"
    );
    let run = plumb(&[&["app", "rollback", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(run.code, Some(2), "{run}");
    assert!(
        run.stderr
            .contains("rollback cannot be initiated when auto-sync is enabled"),
        "{run}"
    );
    assert_eq!(run.stderr.trim().lines().count(), 1, "{run}");

    // Deleting it with cascade (the default) and --wait removes its ConfigMap, then the
    // Application.
    let run = plumb(
        &[
            &["app", "delete", name.as_str(), "--wait", "--timeout", "90"][..],
            &common[..],
        ]
        .concat(),
    )
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stderr.contains("deleting 1 resource(s) of wave 0"),
        "{run}"
    );
    assert!(
        run.stdout
            .contains(&format!("application '{name}' deleted")),
        "{run}"
    );
    assert!(
        cluster
            .get_application(&app_ns, &name)
            .await
            .expect("get")
            .is_none(),
        "the Application is gone"
    );
    assert!(
        cluster
            .get_object("", "ConfigMap", &ns, "settings")
            .await
            .expect("get")
            .is_none(),
        "its resource is gone"
    );

    // An Application declared with the resources finalizer, deleted with --cascade=false:
    // the finalizer is taken off first, so its resources stay.
    let mut declared = app;
    declared["metadata"]["finalizers"] = json!(["resources-finalizer.argocd.argoproj.io"]);
    apply(&cluster, vec![declared]).await;
    let run = plumb(&[&["app", "sync", name.as_str()][..], &common[..]].concat()).await;
    assert_eq!(run.code, Some(0), "{run}");
    let run = plumb(
        &[
            &[
                "app",
                "delete",
                name.as_str(),
                "--cascade=false",
                "--wait",
                "--timeout",
                "90",
            ][..],
            &common[..],
        ]
        .concat(),
    )
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        cluster
            .get_application(&app_ns, &name)
            .await
            .expect("get")
            .is_none(),
        "the Application is gone"
    );
    assert!(
        cluster
            .get_object("", "ConfigMap", &ns, "settings")
            .await
            .expect("get")
            .is_some(),
        "--cascade=false keeps its resources"
    );
}

/// The seed's incident, live: a plumb Application syncs the payments overlay into a
/// namespace whose webhook forces `imagePullPolicy: Always`; after three syncs of the same
/// revision `plumb doctor --cluster` names the loop, the webhook and the patch line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_diagnoses_the_seed_incident_live() {
    let Some(cluster) = testbed("doctor_diagnoses_the_seed_incident_live").await else {
        return;
    };
    install_application_crd(&cluster).await;

    let hook = Webhook::start().await;
    let selected = webhook::selector_value();
    let ns = namespace(&cluster, "seedlive", json!({PULL_LABEL: selected})).await;
    let app_ns = namespace(&cluster, "seedlive-apps", json!({})).await;
    let config_name = unique("plumb-seed-force-always");
    apply(
        &cluster,
        vec![hook.configuration(&config_name, PULL_LABEL, &selected)],
    )
    .await;
    webhook::wait_effective(&cluster, &ns).await;

    let dir = Scratch::new("seedlive");
    let repo = dir.path("repo");
    let copied = Command::new("cp")
        .args([
            "-r",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/payments/repo"),
        ])
        .arg(&repo)
        .status()
        .expect("cp");
    assert!(copied.success());
    let name = unique("payments");
    let app = json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": app_ns},
        "spec": {"project": "default",
            "source": {"repoURL": format!("file://{}", s(&repo)), "path": "overlays/prod", "targetRevision": "HEAD"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns},
            "syncPolicy": {"automated": {"prune": true, "selfHeal": true}}}});
    apply(&cluster, vec![app]).await;

    let common = ["--cluster", "-N", app_ns.as_str()];
    for _ in 0..3 {
        let run = plumb(&[&["app", "sync", name.as_str()][..], &common[..]].concat()).await;
        assert_eq!(run.code, Some(0), "{run}");
    }
    let run = plumb(&[
        "doctor",
        name.as_str(),
        "--cluster",
        "--repo",
        s(&repo).as_str(),
        "-o",
        "json",
    ])
    .await;
    delete_cluster_object::<MutatingWebhookConfiguration>(&cluster, &config_name).await;
    hook.stop().await;
    assert_eq!(run.code, Some(1), "{run}");
    let doc = run.json();
    assert_eq!(doc["verdict"], "loop", "{doc:#}");
    let finding = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["path"] == POLICY)
        .unwrap_or_else(|| panic!("no imagePullPolicy finding: {doc:#}"));
    assert_eq!(finding["cause"]["type"], "mutating-webhook", "{finding:#}");
    assert_eq!(
        finding["cause"]["name"],
        config_name.as_str(),
        "{finding:#}"
    );
    assert_eq!(
        finding["declaredAt"]["file"],
        "overlays/prod/pull-policy.yaml"
    );
    assert_eq!(finding["declaredAt"]["line"], 10);
    assert_eq!(finding["fixes"][0]["type"], "stop-declaring");
}

/// `plumb controller` as a long-running process: it reconciles a new Application it sees
/// through its watch, heals a hand edit within seconds (the refresh interval is an hour),
/// logs JSON lines, releases its Lease on SIGTERM, and a leader whose Lease is taken exits
/// (exit 2) rather than reconcile beside another replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_process_watches_heals_and_hands_over() {
    let Some(cluster) = testbed("controller_process").await else {
        return;
    };
    install_application_crd(&cluster).await;
    let ns = namespace(&cluster, "ctlproc", json!({})).await;
    let app_ns = namespace(&cluster, "ctlproc-apps", json!({})).await;
    let dir = Scratch::new("ctlproc");
    dir.write(
        "repo/app/cm.yaml",
        &[json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"k": "from-git"}})],
    );
    let log = dir.path("controller.log");
    let spawn = |log: &Path| {
        Command::new(env!("CARGO_BIN_EXE_plumb"))
            .args([
                "controller",
                "-N",
                &app_ns,
                "--lease-namespace",
                &app_ns,
                "--lease-duration",
                "6",
                "--interval",
                "3600",
                "--jitter",
                "0",
                "--listen",
                "127.0.0.1:0",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("log file"))
            .spawn()
            .expect("plumb controller starts")
    };
    let mut child = spawn(&log);
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let wait_for = |what: &str, cond: &dyn Fn() -> bool| {
        support::wait_until_blocking(
            what,
            || cond().then_some(()),
            || format!("log:\n{}", read_log()),
        )
    };
    wait_for("leading", &|| read_log().contains("\"reconciling\":true"));

    let name = unique("web");
    let app = json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": app_ns},
        "spec": {"project": "default",
            "source": {"repoURL": format!("file://{}", s(&dir.path("repo"))), "path": "app", "targetRevision": "HEAD"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns},
            "syncPolicy": {"automated": {"prune": true, "selfHeal": true}}}});
    apply(&cluster, vec![app]).await;
    let data = |c: &Option<Value>| {
        c.as_ref()
            .and_then(|c| c.pointer("/data/k"))
            .and_then(Value::as_str)
            .map(String::from)
    };
    let synced = eventually(DEADLINE, || async {
        let cm = cluster
            .get_object("", "ConfigMap", &ns, "settings")
            .await
            .ok()?;
        (data(&cm).as_deref() == Some("from-git")).then_some(())
    })
    .await;
    assert!(
        synced.is_some(),
        "the new app was synced; log:\n{}",
        read_log()
    );
    // Its first reconcile is over (logged), so the edit below is drift, not a race with it.
    wait_for("the first sync logged", &|| {
        read_log()
            .lines()
            .any(|l| l.contains(&name) && l.contains("\"synced\":true"))
    });

    // A hand edit is healed through the watch.
    apply(
        &cluster,
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": ns}, "data": {"k": "edited"}})],
    )
    .await;
    let edited_at = Instant::now();
    let healed = eventually(DEADLINE, || async {
        let cm = cluster
            .get_object("", "ConfigMap", &ns, "settings")
            .await
            .ok()?;
        (data(&cm).as_deref() == Some("from-git")).then_some(())
    })
    .await;
    assert!(healed.is_some(), "self-heal; log:\n{}", read_log());
    eprintln!("healed {:?} after the edit", edited_at.elapsed());
    wait_for("a watch-triggered reconcile logged", &|| {
        read_log().lines().any(|l| {
            l.contains(&name)
                && l.contains("\"trigger\":\"watch\"")
                && l.contains("\"synced\":true")
        })
    });
    for line in read_log().lines() {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
    }
    // The HTTP endpoint: probes and Prometheus metrics naming the app and its status.
    let addr = read_log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["listening"].as_str().map(String::from))
        .expect("the listening address is logged");
    let get = |path: &str| {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(&addr).expect("connect");
        write!(conn, "GET {path} HTTP/1.1\r\nHost: plumb\r\n\r\n").expect("send");
        let mut reply = String::new();
        conn.read_to_string(&mut reply).expect("read");
        reply
    };
    assert!(
        get("/healthz").starts_with("HTTP/1.1 200"),
        "{}",
        get("/healthz")
    );
    assert!(get("/readyz").starts_with("HTTP/1.1 200"));
    assert!(get("/nope").starts_with("HTTP/1.1 404"));
    let metrics = get("/metrics");
    for want in [
        "plumb_leader 1".to_string(),
        format!(
            "plumb_app_info{{namespace=\"{app_ns}\",name=\"{name}\",sync_status=\"Synced\",health_status=\"Healthy\"}} 1"
        ),
        "plumb_app_sync_total{phase=\"Succeeded\",trigger=\"automated\"}".to_string(),
        "plumb_app_reconcile_total{result=\"ok\"}".to_string(),
    ] {
        assert!(
            metrics.contains(&want),
            "{want} missing from:\n{metrics}\nlog:\n{}",
            read_log()
        );
    }
    // Events on the Application, as Argo CD records them: the automated sync started and
    // completed, and its status changes.
    let events = wait_until("the Application's Events", || async {
        let events = app_events(&cluster, &app_ns, &name).await;
        let has = |reason: &str, text: &str| {
            events
                .iter()
                .any(|(r, m, _)| r == reason && m.contains(text))
        };
        (has("OperationStarted", "Initiated automated sync to '")
            && has("OperationCompleted", " succeeded")
            && has("ResourceUpdated", "Updated sync status:  -> Synced")
            && has("ResourceUpdated", "Updated health status:  -> Healthy"))
        .then_some(events)
    })
    .await;
    // The first sync and the heal announce the same revision: one Event, counted. (The repo
    // here is a plain directory: its events name the target revision, `HEAD`.)
    let started: Vec<_> = events
        .iter()
        .filter(|(r, _, _)| r == "OperationStarted")
        .collect();
    assert_eq!(started.len(), 1, "{events:?}");
    assert!(started[0].2 >= 2, "counted twice: {events:?}");

    // SIGTERM: a clean stop that releases the Lease.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = child.wait().expect("wait");
    assert_eq!(exit.code(), Some(0), "log:\n{}", read_log());
    let lease = cluster
        .get_object("coordination.k8s.io", "Lease", &app_ns, "plumb-controller")
        .await
        .expect("get lease")
        .expect("lease");
    assert_eq!(lease["spec"]["holderIdentity"], "", "released: {lease}");

    // A leader whose Lease another replica takes exits instead of reconciling beside it.
    let log2 = dir.path("controller2.log");
    let mut child = spawn(&log2);
    let read_log2 = || std::fs::read_to_string(&log2).unwrap_or_default();
    support::wait_until_blocking(
        "the second controller leading",
        || read_log2().contains("\"reconciling\":true").then_some(()),
        read_log2,
    );
    // Taken as another replica would: read, then replace at that version; the leader renews
    // every few seconds, so a renewal in between is a conflict, and the take is tried again.
    wait_until("another replica taking the Lease", || async {
        let mut lease = cluster
            .get_object("coordination.k8s.io", "Lease", &app_ns, "plumb-controller")
            .await
            .expect("get lease")
            .expect("lease");
        let now =
            plumb_sync::time::format_rfc3339(std::time::SystemTime::now()).replace('Z', ".000000Z");
        lease["spec"]["holderIdentity"] = json!("other-replica");
        lease["spec"]["renewTime"] = json!(now);
        lease["spec"]["leaseDurationSeconds"] = json!(60);
        if let Some(meta) = lease["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
        match cluster.replace_object(&lease, "other-replica").await {
            Ok(_) => Some(()),
            Err(e) => {
                eprintln!("taking the Lease: {e}; again");
                None
            }
        }
    })
    .await;
    let started = Instant::now();
    let exit = loop {
        if let Some(exit) = child.try_wait().expect("wait") {
            break exit;
        }
        if started.elapsed() > DEADLINE {
            // Our own child, by its handle.
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the leader kept running for {DEADLINE:?} after losing its Lease:\n{}",
                read_log2()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(exit.code(), Some(2), "{}", read_log2());
    assert!(
        read_log2().contains("lost the leader Lease"),
        "{}",
        read_log2()
    );
}

/// `plumb controller --application-namespaces`: the real controller process serves its
/// control namespace and the namespaces the list matches (a glob and a `/regex/` here), and
/// ignores an Application anywhere else — nothing deployed, its status never written, one
/// log line. A list that does not compile is a one-line exit 2 before anything connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_serves_only_its_application_namespaces() {
    let Some(cluster) = testbed("controller_application_namespaces").await else {
        return;
    };
    install_application_crd(&cluster).await;
    wait_until("appprojects.plumb.dev being served", || async {
        cluster.discover().await.ok()?;
        cluster.resource_for("plumb.dev", "AppProject").await.ok()
    })
    .await;
    let control = namespace(&cluster, "appns-ctl", json!({})).await;
    let served = namespace(&cluster, "appns-served", json!({})).await;
    let other = namespace(&cluster, "appns-other", json!({})).await;
    let dest_served = namespace(&cluster, "appns-dest-a", json!({})).await;
    let dest_other = namespace(&cluster, "appns-dest-b", json!({})).await;
    let dir = Scratch::new("appns");
    dir.write(
        "repo/app/cm.yaml",
        &[json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"k": "from-git"}})],
    );
    // The project lets any namespace use it: only the controller's flag decides here.
    apply(
        &cluster,
        vec![
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "AppProject",
            "metadata": {"name": "team", "namespace": control},
            "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                     "sourceNamespaces": ["*"]}}),
        ],
    )
    .await;
    let app = |ns: &str, dest: &str| {
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"project": "team",
                "source": {"repoURL": format!("file://{}", s(&dir.path("repo"))), "path": "app"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": dest},
                "syncPolicy": {"automated": {"prune": true}}}})
    };
    apply(
        &cluster,
        vec![app(&served, &dest_served), app(&other, &dest_other)],
    )
    .await;

    let list = format!("nothing-*,/^{served}$/");
    let run = plumb(&[
        "controller",
        "--once",
        "--control-namespace",
        control.as_str(),
        "--lease-namespace",
        control.as_str(),
        "--application-namespaces",
        list.as_str(),
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run}");
    let cm = async |ns: &str| {
        cluster
            .get_object("", "ConfigMap", ns, "settings")
            .await
            .expect("get")
    };
    assert_eq!(
        cm(&dest_served).await.expect("the served app synced")["data"]["k"],
        "from-git",
        "{run}"
    );
    assert!(
        cm(&dest_other).await.is_none(),
        "the ignored app deployed nothing: {run}"
    );
    let status = async |ns: &str| {
        cluster
            .get_object("plumb.dev", "Application", ns, "web")
            .await
            .expect("get")
            .expect("the Application")["status"]
            .clone()
    };
    assert_eq!(status(&served).await["sync"]["status"], "Synced");
    assert!(
        status(&other).await.is_null(),
        "no status written for the ignored app: {run}"
    );
    // One log line for the ignored app (other runs' leftovers may be listed too).
    let ignored = |ns: &str| {
        run.stderr
            .lines()
            .filter(|l| l.contains(&format!("\"app\":\"{ns}/web\",\"ignored\"")))
            .count()
    };
    assert_eq!((ignored(&other), ignored(&served)), (1, 0), "{run}");

    let bad = plumb(&[
        "controller",
        "--once",
        "--application-namespaces",
        "team-*,/(/",
    ])
    .await;
    assert_eq!(bad.code, Some(2), "{bad}");
    assert_eq!(bad.stderr_lines().len(), 1, "{bad}");
    assert!(
        bad.stderr
            .starts_with("error: --application-namespaces: invalid regular expression \"(\""),
        "{bad}"
    );
}

/// `plumb app get` names the sync window that blocks a sync (kind, schedule, duration, time
/// zone) and whether a manual sync may still run; `plumb app list` has Argo CD's PROJECT column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_get_names_the_blocking_window_and_list_the_project() {
    let Some(cluster) = testbed("app_get_window").await else {
        return;
    };
    install_application_crd(&cluster).await;
    wait_until("appprojects.plumb.dev being served", || async {
        cluster.discover().await.ok()?;
        cluster.resource_for("plumb.dev", "AppProject").await.ok()
    })
    .await;
    let ns = namespace(&cluster, "appwin", json!({})).await;
    apply(
        &cluster,
        vec![
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "AppProject",
                "metadata": {"name": "night", "namespace": ns},
                "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                    "syncWindows": [{"kind": "deny", "schedule": "* * * * *", "duration": "1h",
                        "applications": ["web"], "timeZone": "Europe/Berlin"}]}}),
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
                "metadata": {"name": "web", "namespace": ns},
                "spec": {"project": "night", "source": {"repoURL": "/nowhere", "path": "."},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": ns}}}),
        ],
    )
    .await;
    let run = plumb(&["app", "get", "web", "--cluster", "-N", ns.as_str()]).await;
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        run.stdout.contains(
            "\nSync Window:        Sync Denied by sync window deny '* * * * *' for 1h (Europe/Berlin); manual sync denied too\nSync Policy:"
        ),
        "{run}"
    );
    let run = plumb(&["app", "list", "--cluster", "-N", ns.as_str()]).await;
    assert_eq!(run.code, Some(0), "{run}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME "), "{run}");
    let cols: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        &cols[..4],
        ["NAME", "NAMESPACE", "PROJECT", "STATUS"],
        "{run}"
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        &row[..3],
        [format!("{ns}/web").as_str(), ns.as_str(), "night"],
        "{run}"
    );
}

/// The Events on Application `name` in `namespace`: (reason, message, count).
async fn app_events(cluster: &Cluster, namespace: &str, name: &str) -> Vec<(String, String, i64)> {
    let events = cluster
        .list_live(
            &[plumb_core::GroupKind::new("", "Event")],
            Some(&[namespace.to_string()]),
            None,
        )
        .await
        .unwrap_or_default();
    events
        .iter()
        .filter(|e| {
            e.pointer("/involvedObject/name").and_then(Value::as_str) == Some(name)
                && e.pointer("/involvedObject/kind").and_then(Value::as_str) == Some("Application")
        })
        .map(|e| {
            let s = |p: &str| {
                e.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            (
                s("/reason"),
                s("/message"),
                e.pointer("/count").and_then(Value::as_i64).unwrap_or(0),
            )
        })
        .collect()
}
