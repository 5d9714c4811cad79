//! `plumb appset generate` on real git repositories: the git generators read the revision the
//! generator names (a tag here), `--repo DIR` serves a remote repoURL from a local clone, the
//! clusters generator reads cluster Secrets from a file; output as YAML or JSON; bad input is
//! one line, exit 2, nothing printed.

mod common;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;
use common::{err, git, out, write};
use serde_json::{Value, json};

fn plumb(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(dir)
        .env("PLUMB_REPO_CACHE", dir.join("cache"))
        .output()
        .expect("plumb runs")
}

const APPSET: &str = r#"apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: estate
  namespace: argocd
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
  - matrix:
      generators:
      - git:
          repoURL: REPO
          revision: REVISION
          directories:
          - path: apps/*
      - clusters:
          selector:
            matchLabels: {env: prod}
  template:
    metadata:
      name: '{{.path.basename}}-{{.name}}'
      labels: {team: '{{.path.basename | upper}}'}
      finalizers: [resources-finalizer.argocd.argoproj.io]
    spec:
      project: default
      source: {repoURL: REPO, targetRevision: REVISION, path: '{{.path.path}}'}
      destination: {server: '{{.server}}', namespace: '{{.path.basename}}'}
"#;

const CLUSTERS: &str = "apiVersion: v1
kind: Secret
metadata:
  name: prod-eu
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster, env: prod}
stringData: {name: prod-eu, server: 'https://prod-eu.example.com', config: '{}'}
---
apiVersion: v1
kind: Secret
metadata:
  name: staging
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster, env: staging}
data: {name: c3RhZ2luZw==, server: aHR0cHM6Ly9zdGFnaW5nLmV4YW1wbGUuY29t}
";

#[test]
fn generates_from_a_git_revision_and_cluster_secrets() {
    let dir = common::tmp("appset", "generate");
    let repo = dir.join("repo");
    write(&repo, "apps/billing/deploy.yaml", "kind: ConfigMap\n");
    write(&repo, "README.md", "estate\n");
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "v1"]);
    git(&repo, &["tag", "v1"]);
    write(&repo, "apps/web/deploy.yaml", "kind: ConfigMap\n");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "v2"]);
    write(&dir, "clusters.yaml", CLUSTERS);
    let url = format!("file://{}", repo.display());
    let appset =
        |revision: &str, url: &str| APPSET.replace("REPO", url).replace("REVISION", revision);
    write(&dir, "appset.yaml", &appset("HEAD", &url));
    let o = plumb(
        &dir,
        &[
            "appset",
            "generate",
            "appset.yaml",
            "--cluster-secrets",
            "clusters.yaml",
            "-o",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let apps: Vec<Value> = serde_json::from_str(&out(&o)).expect("a JSON array");
    let names: Vec<&str> = apps
        .iter()
        .filter_map(|a| a["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["billing-prod-eu", "web-prod-eu"]);
    let web = &apps[1];
    assert_eq!(web["metadata"]["namespace"], "argocd");
    assert_eq!(web["metadata"]["labels"]["team"], "WEB");
    assert_eq!(
        web["metadata"]["finalizers"][0],
        "resources-finalizer.argocd.argoproj.io"
    );
    assert_eq!(
        web["spec"]["destination"]["server"],
        "https://prod-eu.example.com"
    );
    assert_eq!(web["spec"]["source"]["path"], "apps/web");

    // At the tag, only billing exists; a remote repoURL served by --repo.
    write(
        &dir,
        "appset.yaml",
        &appset("v1", "https://git.example.com/estate.git"),
    );
    let o = plumb(
        &dir,
        &[
            "appset",
            "generate",
            "appset.yaml",
            "--repo",
            "repo",
            "--cluster-secrets",
            "clusters.yaml",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert_eq!(text.matches("kind: Application\n").count(), 1, "{text}");
    assert!(text.contains("name: billing-prod-eu"), "{text}");

    // Bad input: one line, exit 2, nothing printed.
    for (spec, want) in [
        (
            appset("HEAD", &url).replace("'{{.path.basename}}-{{.name}}'", "'{{.nope}}'"),
            "map has no entry for key",
        ),
        (
            appset("HEAD", &url).replace("- clusters:", "- nosuch:"),
            "unknown generator \"nosuch\"",
        ),
        (
            appset("HEAD", &url).replace("path: apps/*", "path: ../../etc/*"),
            "leaves the repository",
        ),
        (appset("no-such-revision", &url), "no-such-revision"),
        (
            appset("HEAD", &url).replace(
                "      - clusters:",
                "      - list: {elements: [{a: b}]}\n      - clusters:",
            ),
            "spec.generators[0].matrix",
        ),
        (
            appset("HEAD", &url).replace("'{{.path.basename}}-{{.name}}'", "'{{.path.basename'"),
            "template",
        ),
        (
            appset("HEAD", &url).replace("'{{.path.basename}}-{{.name}}'", "'{{.name}}'"),
            "generates Application \"prod-eu\" a second time",
        ),
    ] {
        write(&dir, "appset.yaml", &spec);
        let o = plumb(
            &dir,
            &[
                "appset",
                "generate",
                "appset.yaml",
                "--cluster-secrets",
                "clusters.yaml",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{want}: {}", out(&o));
        let e = err(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("appset.yaml: ApplicationSet estate: "), "{e}");
        assert!(e.contains(want), "{want:?} in {e}");
        assert!(out(&o).is_empty());
    }
}

/// `--cluster`: the cluster Secrets of the control namespace, read from the test bed (a real
/// API server); Secret values other than `name` and `server` are never read or printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_secrets_from_the_cluster() {
    let Some(cluster) = support::testbed("appset-cluster-secrets").await else {
        return;
    };
    let ns = support::namespace(&cluster, "appset-ctl", json!({})).await;
    let secret = |name: &str, env: &str| {
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": ns,
                "labels": {"argocd.argoproj.io/secret-type": "cluster", "env": env}},
            "stringData": {"name": name, "server": format!("https://{name}.example.com"),
                "config": "{\"bearerToken\": \"never-printed-token\"}"}})
    };
    support::apply(
        &cluster,
        vec![secret("eu-prod", "prod"), secret("us-dev", "dev")],
    )
    .await;
    let dir = common::tmp("appset", "cluster");
    write(
        &dir,
        "appset.yaml",
        &format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {{name: fleet, namespace: {ns}}}\nspec:\n  generators:\n  - clusters: {{selector: {{matchLabels: {{env: prod}}}}}}\n  - clusters: {{}}\n    template: {{metadata: {{name: 'all-{{{{name}}}}'}}}}\n  template:\n    metadata: {{name: 'web-{{{{name}}}}'}}\n    spec: {{destination: {{server: '{{{{server}}}}'}}}}\n"
        ),
    );
    let o = plumb(
        &dir,
        &[
            "appset",
            "generate",
            "appset.yaml",
            "--cluster",
            "-o",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(!out(&o).contains("never-printed-token"));
    let apps: Vec<Value> = serde_json::from_str(&out(&o)).expect("JSON");
    let names: Vec<&str> = apps
        .iter()
        .filter_map(|a| a["metadata"]["name"].as_str())
        .collect();
    // The selector's one cluster; then, with the generator's own name, the local cluster
    // (listed first, as Argo CD lists it) and every Secret.
    assert_eq!(
        names,
        ["web-eu-prod", "all-in-cluster", "all-eu-prod", "all-us-dev"]
    );
    assert_eq!(
        apps[0]["spec"]["destination"]["server"],
        "https://eu-prod.example.com"
    );
    assert_eq!(
        apps[1]["spec"]["destination"]["server"],
        "https://kubernetes.default.svc"
    );
}

/// `--live DIR`: a snapshot's Secrets have no values, so a cluster Secret there has no server:
/// one line saying so, exit 2, never Applications aimed at no address.
#[test]
fn a_snapshot_cluster_secret_without_values_is_an_error() {
    let dir = common::tmp("appset", "live");
    write(
        &dir,
        "live/core/Secret/argocd/prod-eu.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: prod-eu\n  namespace: argocd\n  labels: {argocd.argoproj.io/secret-type: cluster}\ndata: {name: '', server: ''}\n",
    );
    write(
        &dir,
        "set.yaml",
        "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: c, namespace: argocd}\nspec:\n  generators: [{clusters: {}}]\n  template:\n    metadata: {name: '{{name}}'}\n    spec: {project: default, source: {repoURL: 'https://x', path: .}, destination: {server: '{{server}}', namespace: x}}\n",
    );
    let o = plumb(&dir, &["appset", "generate", "set.yaml", "--live", "live"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("Secret prod-eu: server is empty"), "{e}");
    assert!(out(&o).is_empty());
}
