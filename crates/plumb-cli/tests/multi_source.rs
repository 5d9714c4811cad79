//! Multi-source Applications (`spec.sources`) through the CLI, against real git repositories
//! served by a real `git daemon` on 127.0.0.1: a chart in one repository rendered with
//! `$values/envs/prod.yaml` from a `ref: values` source in another, plus a directory source;
//! the `ref:` source itself renders nothing (it has no path), as in Argo CD.
//!
//! helm comes from `PLUMB_HELM` (or PATH); without it the test prints `SKIP` and passes,
//! unless `REQUIRE_HELM=1`.

mod common;
#[path = "common/helm.rs"]
mod helm;
use common::{err, git, out, write};
use plumb_render::testing::GitDaemon;
use std::path::Path;
use std::process::{Command, Output};

fn plumb(dir: &Path, helm: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plumb"));
    cmd.args(args)
        .current_dir(dir)
        .env("PATH", helm::path_with(helm, dir))
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .env("PLUMB_REPO_CACHE", dir.join("cache"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0");
    helm::env(&mut cmd, dir);
    cmd.output().expect("plumb runs")
}

/// A bare repository `served/<name>.git` holding `files`, pushed from a work tree.
fn repo(root: &Path, name: &str, files: &[(&str, &str)]) {
    let origin = root.join(format!("served/{name}.git"));
    std::fs::create_dir_all(&origin).expect("mkdir");
    git(&origin, &["init", "-q", "--bare", "--initial-branch=main"]);
    let work = root.join(format!("work/{name}"));
    std::fs::create_dir_all(&work).expect("mkdir");
    git(&work, &["init", "-q", "-b", "main"]);
    for (rel, text) in files {
        write(&work, rel, text);
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", name]);
    git(
        &work,
        &["push", "-q", origin.to_str().expect("utf-8"), "HEAD:main"],
    );
}

const TEMPLATE: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
      - name: web
        image: \"shop:{{ .Values.tag }}\"
";

fn application(chart_url: &str, values_url: &str, value_file: &str, ignore: bool) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  namespace: argocd
spec:
  project: default
  sources:
  - repoURL: {chart_url}
    path: charts/shop
    targetRevision: main
    helm:
      ignoreMissingValueFiles: {ignore}
      valueFiles:
      - values-base.yaml
      - {value_file}
  - repoURL: {values_url}
    targetRevision: main
    ref: values
  - repoURL: {chart_url}
    path: extra
    targetRevision: main
  destination:
    server: https://kubernetes.default.svc
    namespace: prod
"
    )
}

#[test]
fn ref_sources_lend_value_files_to_chart_sources() {
    let Some(helm) = helm::helm() else {
        println!("SKIP ref_sources_lend_value_files_to_chart_sources: helm not found");
        return;
    };
    let root = common::tmp("multisource", "refs");
    repo(
        &root,
        "charts",
        &[
            (
                "charts/shop/Chart.yaml",
                "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
            ),
            ("charts/shop/values.yaml", "replicas: 1\ntag: v1\n"),
            ("charts/shop/values-base.yaml", "tag: base\n"),
            ("charts/shop/templates/deploy.yaml", TEMPLATE),
            (
                "extra/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  a: b\n",
            ),
        ],
    );
    repo(
        &root,
        "config",
        &[("envs/prod.yaml", "replicas: 5\ntag: v7-prod\n")],
    );
    let daemon = GitDaemon::serve(&root.join("served")).expect("git daemon");
    let (charts, config) = (daemon.url("charts.git"), daemon.url("config.git"));
    write(
        &root,
        "app.yaml",
        &application(&charts, &config, "$values/envs/prod.yaml", false),
    );

    let o = plumb(&root, &helm, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(headers.len(), 2, "the ref source renders nothing: {text}");
    assert!(
        headers[0].starts_with("# Helm source charts/shop at main ("),
        "{text}"
    );
    assert!(
        headers[1].starts_with("# Directory source extra at main ("),
        "{text}"
    );
    // The values file of the other repository wins over the chart's own, in order.
    assert!(text.contains("  replicas: 5\n"), "{text}");
    assert!(text.contains("image: shop:v7-prod\n"), "{text}");
    assert!(text.contains("  name: extra\n"), "{text}");

    // The same as helm template with the files Argo CD passes.
    let work = root.join("work");
    let mut cmd = Command::new(&helm);
    cmd.args(["template", "shop"])
        .arg(work.join("charts/charts/shop"))
        .args(["--namespace", "prod", "--values"])
        .arg(work.join("charts/charts/shop/values-base.yaml"))
        .arg("--values")
        .arg(work.join("config/envs/prod.yaml"))
        .arg("--include-crds");
    helm::env(&mut cmd, &root);
    let expected = cmd.output().expect("helm runs");
    assert!(expected.status.success(), "{}", err(&expected));
    let ms = plumb_render::parse_str(&out(&expected), Path::new("helm.yaml")).expect("YAML");
    let mut want = String::new();
    for m in ms {
        want.push_str("---\n");
        want.push_str(&plumb_diff::text::to_yaml(&m.object));
    }
    let helm_part = text
        .split("# Directory source")
        .next()
        .and_then(|s| s.split_once('\n'))
        .map(|(_, body)| body)
        .unwrap_or_default();
    assert_eq!(helm_part, want, "byte for byte");

    // diff compares every rendered source's objects with the live state.
    let live = root.join("live");
    write(
        &live,
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: prod\n  annotations:\n    argocd.argoproj.io/tracking-id: shop:/ConfigMap:prod/extra\ndata:\n  a: old\n",
    );
    let o = plumb(
        &root,
        &helm,
        &["diff", "--app", "app.yaml", "--live", "live"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let d = out(&o);
    assert!(d.contains("a: old") && d.contains("a: b"), "{d}");
    assert!(
        d.contains("shop-web"),
        "the chart's Deployment is desired too: {d}"
    );

    // A `$ref` naming no source: one line, exit 2.
    write(
        &root,
        "app.yaml",
        &application(&charts, &config, "$nope/envs/prod.yaml", false),
    );
    let o = plumb(&root, &helm, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("$nope/envs/prod.yaml: no source has ref: nope"),
        "{e}"
    );
    // A missing file of the ref source: an error, or skipped with ignoreMissingValueFiles.
    write(
        &root,
        "app.yaml",
        &application(&charts, &config, "$values/envs/gone.yaml", false),
    );
    let o = plumb(&root, &helm, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        err(&o).contains("$values/envs/gone.yaml does not exist in the source with ref: values"),
        "{}",
        err(&o)
    );
    write(
        &root,
        "app.yaml",
        &application(&charts, &config, "$values/envs/gone.yaml", true),
    );
    let o = plumb(&root, &helm, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("image: shop:base\n"), "{}", out(&o));
}
