//! `plumb controller --api-group argoproj.io` on the test bed, with Argo CD's own CRDs
//! (`testbed/argocd-crds/`, pinned from argoproj/argo-cd): an app-of-apps whose Helm chart
//! emits argoproj.io child Applications of four source kinds (a directory, kustomize,
//! Jsonnet, a Helm chart), all created, synced and healthy through plumb; Argo CD's AppProject
//! read from Argo CD's group; `plumb app list/get --api-group argoproj.io`; and the refusal
//! to start while Argo CD's application controller is deployed in the control namespace.
//! Skipped without a test bed (`TESTBED_DIR`) or helm (`PLUMB_HELM`), unless
//! `REQUIRE_K8S_TESTBED=1` / `REQUIRE_HELM=1`.

mod common;
#[path = "common/testbed.rs"]
mod fixture;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use plumb_cluster::Cluster;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use support::{apply, namespace, testbed, unique, wait_until};

/// The controller process, killed and reaped when dropped.
struct Ctl(Child);

impl Drop for Ctl {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn helm_dir() -> Option<PathBuf> {
    let helm = std::env::var_os("PLUMB_HELM").filter(|p| !p.is_empty());
    match helm {
        Some(p) => {
            let p = std::fs::canonicalize(PathBuf::from(p)).expect("PLUMB_HELM resolves");
            assert_eq!(p.file_name().and_then(|n| n.to_str()), Some("helm"));
            Some(p.parent().expect("a directory").to_path_buf())
        }
        None => {
            assert!(
                std::env::var("REQUIRE_HELM").as_deref() != Ok("1"),
                "REQUIRE_HELM=1 but PLUMB_HELM is not set"
            );
            None
        }
    }
}

/// Argo CD's CRDs, as Argo CD installs them; waits until all three are served.
async fn install_argocd_crds(cluster: &Cluster) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testbed/argocd-crds");
    let mut crds = Vec::new();
    for f in [
        "application-crd.yaml",
        "appproject-crd.yaml",
        "applicationset-crd.yaml",
    ] {
        let text = std::fs::read_to_string(dir.join(f)).expect("Argo CD CRD");
        let docs: Vec<Value> = serde_saphyr::from_str_multiple(&text).expect("CRD YAML");
        crds.extend(docs);
    }
    apply(cluster, crds).await;
    wait_until(
        "argoproj.io Applications and AppProjects served",
        || async {
            cluster.discover().await.ok()?;
            let a = cluster
                .resource_for("argoproj.io", "Application")
                .await
                .ok();
            let p = cluster.resource_for("argoproj.io", "AppProject").await.ok();
            let s = cluster
                .resource_for("argoproj.io", "ApplicationSet")
                .await
                .ok();
            (a.is_some() && p.is_some() && s.is_some()).then_some(())
        },
    )
    .await;
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// The estate's repository: the parent chart and its four children.
fn estate(repo: &Path, control: &str, dest: &str) {
    let url = format!("file://{}", repo.display());
    write(
        repo,
        "parent/Chart.yaml",
        "apiVersion: v2\nname: parent\nversion: 1.0.0\n",
    );
    write(
        repo,
        "parent/values.yaml",
        &format!(
            "repoURL: {url}\ncontrol: {control}\ndest: {dest}\nchildren:\n- {{name: plain, path: children/plain}}\n- {{name: kust, path: children/kust}}\n- {{name: jsonnet, path: children/jsonnet}}\n- {{name: chart, path: children/chart}}\n"
        ),
    );
    write(
        repo,
        "parent/templates/children.yaml",
        r#"{{- range .Values.children }}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {{ .name }}
  namespace: {{ $.Values.control }}
spec:
  project: estate
  source:
    repoURL: {{ $.Values.repoURL }}
    path: {{ .path }}
    targetRevision: HEAD
  destination:
    server: https://kubernetes.default.svc
    namespace: {{ $.Values.dest }}
  syncPolicy:
    automated: {prune: true, selfHeal: true}
{{- end }}
"#,
    );
    write(
        repo,
        "children/plain/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-plain\ndata:\n  kind: directory\n",
    );
    write(
        repo,
        "children/kust/kustomization.yaml",
        "configMapGenerator:\n- name: from-kust\n  literals: [kind=kustomize]\ngeneratorOptions:\n  disableNameSuffixHash: true\n",
    );
    write(
        repo,
        "children/jsonnet/cm.jsonnet",
        "local kind = 'jsonnet';\n{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'from-' + kind }, data: { kind: std.asciiUpper(kind) } }\n",
    );
    write(
        repo,
        "children/chart/Chart.yaml",
        "apiVersion: v2\nname: chart\nversion: 0.1.0\n",
    );
    write(
        repo,
        "children/chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-chart\ndata:\n  kind: helm\n  release: {{ .Release.Name }}\n",
    );
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "estate"],
    ] {
        common::git(repo, args);
    }
}

fn controller(args: &[&str], helm: &Path, log: &Path) -> Command {
    let mut paths = vec![helm.to_path_buf()];
    if let Some(p) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&p));
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plumb"));
    cmd.arg("controller")
        .args(args)
        .env("PATH", std::env::join_paths(paths).expect("PATH"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(log).expect("log")));
    cmd
}

fn status<'a>(app: &'a Value, pointer: &str) -> &'a str {
    app.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argo_cd_app_of_apps_is_served_unchanged() {
    let Some(mut cluster) = testbed("argocd-group").await else {
        return;
    };
    let Some(helm) = helm_dir() else {
        eprintln!("SKIP an_argo_cd_app_of_apps_is_served_unchanged: no helm (PLUMB_HELM)");
        return;
    };
    install_argocd_crds(&cluster).await;
    cluster.set_app_group(plumb_core::ARGO_GROUP);
    let control = namespace(&cluster, "argocd-ctl", json!({})).await;
    let dest = namespace(&cluster, "argocd-dest", json!({})).await;
    let dir = std::env::temp_dir().join(unique("plumb-argocd-group"));
    let repo = dir.join("repo");
    estate(&repo, &control, &dest);
    // Argo CD's AppProject, in Argo CD's group: the estate may deploy to both namespaces.
    apply(
        &cluster,
        vec![
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
            "metadata": {"name": "estate", "namespace": control},
            "spec": {"sourceRepos": ["*"],
                "destinations": [
                    {"server": "https://kubernetes.default.svc", "namespace": control},
                    {"server": "https://kubernetes.default.svc", "namespace": dest}]}}),
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "estate", "namespace": control},
            "spec": {"project": "estate",
                "source": {"repoURL": format!("file://{}", repo.display()),
                    "path": "parent", "targetRevision": "HEAD"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": control},
                "syncPolicy": {"automated": {"prune": true}}}}),
        ],
    )
    .await;
    let log = dir.join("controller.log");
    let _ctl = Ctl(controller(
        &[
            "--api-group",
            "argoproj.io",
            "--app-namespace",
            &control,
            "--lease-namespace",
            &control,
            "--lease-duration",
            "3",
            "--interval",
            "3600",
            "--jitter",
            "0",
        ],
        &helm,
        &log,
    )
    .spawn()
    .expect("plumb controller starts"));
    let show_log = || std::fs::read_to_string(&log).unwrap_or_default();

    // Every child: created by the parent's sync, synced and healthy by its own.
    for (child, cm, kind) in [
        ("plain", "from-plain", "directory"),
        ("kust", "from-kust", "kustomize"),
        ("jsonnet", "from-jsonnet", "JSONNET"),
        ("chart", "from-chart", "helm"),
    ] {
        let app = wait_until(&format!("child {child} synced and healthy"), || async {
            let a = cluster.get_application(&control, child).await.ok()??;
            let healthy = matches!(
                status(&a, "/status/health/status"),
                "Healthy" | "Progressing"
            );
            (status(&a, "/status/sync/status") == "Synced" && healthy).then_some(a)
        })
        .await;
        assert_eq!(app["apiVersion"], "argoproj.io/v1alpha1");
        assert_eq!(
            status(&app, "/status/operationState/phase"),
            "Succeeded",
            "{}",
            app["status"]
        );
        let obj = cluster
            .get_object("", "ConfigMap", &dest, cm)
            .await
            .expect("get")
            .unwrap_or_else(|| panic!("{cm} synced; log:\n{}", show_log()));
        assert_eq!(obj["data"]["kind"], kind, "{child}");
    }
    // The parent: Synced too (its children's status is theirs, not a difference).
    let parent = wait_until("the parent synced and healthy", || async {
        let a = cluster.get_application(&control, "estate").await.ok()??;
        (status(&a, "/status/sync/status") == "Synced"
            && status(&a, "/status/health/status") == "Healthy")
            .then_some(a)
    })
    .await;
    assert_eq!(
        parent["status"]["resources"].as_array().map(Vec::len),
        Some(4),
        "{}",
        parent["status"]
    );
    assert!(show_log().contains("\"apiGroup\":\"argoproj.io\""));

    // The CLI's app commands in Argo CD's group.
    let o = fixture::plumb(&[
        "app",
        "list",
        "--cluster",
        "--api-group",
        "argoproj.io",
        "-N",
        &control,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::err(&o));
    let list = common::out(&o);
    for child in ["estate", "plain", "kust", "jsonnet", "chart"] {
        let row = format!("{control}/{child} ");
        assert!(
            list.lines().any(|l| l.starts_with(&row)),
            "{child} in:\n{list}"
        );
    }
    let o = fixture::plumb(&[
        "app",
        "get",
        "jsonnet",
        "--cluster",
        "--api-group",
        "argoproj.io",
        "-N",
        &control,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::err(&o));
    assert!(common::out(&o).contains("Synced"), "{}", common::out(&o));

    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_refuses_to_start_beside_argo_cds_application_controller() {
    let Some(cluster) = testbed("argocd-group-refusal").await else {
        return;
    };
    install_argocd_crds(&cluster).await;
    let control = namespace(&cluster, "argocd-busy", json!({})).await;
    // Argo CD's application controller, as its install names it, at `replicas`.
    let argocd_controller = |replicas: u32| {
        let labels = json!({"app.kubernetes.io/name": "argocd-application-controller"});
        vec![json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "argocd-application-controller", "namespace": control},
        "spec": {"replicas": replicas, "serviceName": "argocd-application-controller",
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.invalid/argocd:v3"}]}}}})]
    };
    apply(&cluster, argocd_controller(1)).await;
    let dir = std::env::temp_dir().join(unique("plumb-argocd-refusal"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let log = dir.join("controller.log");
    let run = |group: &str| {
        controller(
            &[
                "--api-group",
                group,
                "--control-namespace",
                &control,
                "--app-namespace",
                &control,
                "--lease-namespace",
                &control,
                "--once",
            ],
            Path::new("/nonexistent"),
            &log,
        )
        .status()
        .expect("plumb controller runs")
    };
    let st = run("argoproj.io");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(st.code(), Some(2), "{text}");
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{text}");
    assert!(
        errors[0].contains(&format!(
            "Argo CD's application controller is deployed in {control} (StatefulSet {control}/argocd-application-controller (1 replicas))"
        )),
        "{text}"
    );
    // Scaled to zero, plumb takes over.
    apply(&cluster, argocd_controller(0)).await;
    let st = run("argoproj.io");
    assert_eq!(
        st.code(),
        Some(0),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An `argoproj.io` ApplicationSet (Argo CD's own CRD) served by `plumb controller --api-group
/// argoproj.io`: its Applications are Argo CD's, owned by it, synced; its status has Argo CD's
/// conditions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argo_cd_applicationset_is_served_unchanged() {
    let Some(mut cluster) = testbed("argocd-appset").await else {
        return;
    };
    install_argocd_crds(&cluster).await;
    cluster.set_app_group(plumb_core::ARGO_GROUP);
    let control = namespace(&cluster, "argocd-as", json!({})).await;
    let dest = namespace(&cluster, "argocd-as-dest", json!({})).await;
    let dir = std::env::temp_dir().join(unique("plumb-argocd-appset"));
    let repo = dir.join("repo");
    for env in ["dev", "prod"] {
        write(
            &repo,
            &format!("envs/{env}/cm.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-{env}\n"),
        );
    }
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "envs"],
    ] {
        common::git(&repo, args);
    }
    let url = format!("file://{}", repo.display());
    apply(
        &cluster,
        vec![
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
                "metadata": {"name": "default", "namespace": control},
                "spec": {"sourceRepos": ["*"],
                    "destinations": [{"server": "https://kubernetes.default.svc", "namespace": "*"}]}}),
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                "metadata": {"name": "envs", "namespace": control},
                "spec": {"generators": [{"git": {"repoURL": url, "revision": "HEAD",
                                                "directories": [{"path": "envs/*"}]}}],
                    "template": {"metadata": {"name": "{{path.basename}}"},
                        "spec": {"project": "default",
                            "source": {"repoURL": url, "targetRevision": "HEAD", "path": "{{path}}"},
                            "destination": {"server": "https://kubernetes.default.svc",
                                            "namespace": dest},
                            "syncPolicy": {"automated": {}}}}}}),
        ],
    )
    .await;
    let log = dir.join("controller.log");
    let _ctl = Ctl(controller(
        &[
            "--api-group",
            "argoproj.io",
            "--app-namespace",
            &control,
            "--lease-namespace",
            &control,
            "--lease-duration",
            "3",
            "--interval",
            "3600",
            "--jitter",
            "0",
        ],
        &dir,
        &log,
    )
    .spawn()
    .expect("plumb controller starts"));
    let show_log = || std::fs::read_to_string(&log).unwrap_or_default();
    for env in ["dev", "prod"] {
        wait_until(&format!("{env} synced"), || async {
            cluster
                .get_object("", "ConfigMap", &dest, &format!("settings-{env}"))
                .await
                .ok()??;
            Some(())
        })
        .await;
        let app = cluster
            .get_object("argoproj.io", "Application", &control, env)
            .await
            .expect("get")
            .unwrap_or_else(|| panic!("{env}: {}", show_log()));
        assert_eq!(app["apiVersion"], "argoproj.io/v1alpha1");
        assert_eq!(
            app["metadata"]["ownerReferences"][0]["kind"],
            "ApplicationSet"
        );
        assert_eq!(app["metadata"]["ownerReferences"][0]["name"], "envs");
    }
    let set = wait_until("the ApplicationSet's status", || async {
        let s = cluster
            .get_object("argoproj.io", "ApplicationSet", &control, "envs")
            .await
            .ok()??;
        let up = s
            .pointer("/status/conditions")?
            .as_array()?
            .iter()
            .any(|c| c["type"] == "ResourcesUpToDate" && c["status"] == "True");
        up.then_some(s)
    })
    .await;
    assert_eq!(
        set["status"]["resources"][0]["name"],
        "dev",
        "{}",
        show_log()
    );
    assert_eq!(set["status"]["resources"][0]["group"], "argoproj.io");
}

/// While Argo CD's ApplicationSet controller runs, `--api-group argoproj.io` leaves
/// ApplicationSets to it: a log line says so, and no Application of theirs is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applicationsets_are_left_to_argo_cds_running_applicationset_controller() {
    let Some(mut cluster) = testbed("argocd-appset-left").await else {
        return;
    };
    install_argocd_crds(&cluster).await;
    cluster.set_app_group(plumb_core::ARGO_GROUP);
    let control = namespace(&cluster, "argocd-as-left", json!({})).await;
    let dir = std::env::temp_dir().join(unique("plumb-argocd-appset-left"));
    std::fs::create_dir_all(&dir).expect("dir");
    apply(
        &cluster,
        vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "argocd-applicationset-controller", "namespace": control},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "as"}},
                    "template": {"metadata": {"labels": {"app": "as"}},
                        "spec": {"containers": [{"name": "c", "image": "registry.example.com/as:1"}]}}}}),
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                "metadata": {"name": "left", "namespace": control},
                "spec": {"generators": [{"list": {"elements": [{"env": "dev"}]}}],
                    "template": {"metadata": {"name": "{{env}}"},
                        "spec": {"project": "default",
                            "source": {"repoURL": "https://git.example.com/x.git", "path": "."},
                            "destination": {"server": "https://kubernetes.default.svc",
                                            "namespace": "x"}}}}}),
        ],
    )
    .await;
    let log = dir.join("controller.log");
    let _ctl = Ctl(controller(
        &[
            "--api-group",
            "argoproj.io",
            "--app-namespace",
            &control,
            "--lease-namespace",
            &control,
            "--lease-duration",
            "3",
        ],
        &dir,
        &log,
    )
    .spawn()
    .expect("plumb controller starts"));
    let line = wait_until("the ApplicationSets left to Argo CD", || async {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .find(|l| l.contains("\"applicationSets\":\"not served\""))
            .map(str::to_string)
    })
    .await;
    assert!(line.contains("argocd-applicationset-controller"), "{line}");
    // The controller is reconciling (its start line came before), and created nothing.
    assert!(
        cluster
            .get_object("argoproj.io", "Application", &control, "dev")
            .await
            .expect("get")
            .is_none()
    );
}
