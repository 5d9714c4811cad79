//! End-to-end tests of Helm charts rendered through a real `helm template`, as Argo CD's
//! repo server renders them: release name, value files, inline values, parameters and
//! their precedence, missing value files, template errors, `plumb diff` against live
//! objects, and git revisions (never the work tree).
//!
//! helm is found through `PLUMB_HELM` (the path of a helm binary, e.g.
//! `PLUMB_HELM="$(testbed/build-helm.sh)/helm"`) or `PATH`. Without it every test prints
//! `SKIP` and passes, unless `REQUIRE_HELM=1`, which makes a missing helm a failure.
//!

mod common;
use common::{TmpDir, err, git, out, write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

// ---------------------------------------------------------------------------------------
// Finding helm

/// The directory to put in front of PATH so that plumb finds `helm`, or None (skip).
fn helm_dir() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(find_helm_dir).clone()
}

fn find_helm_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PLUMB_HELM").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "PLUMB_HELM={} is not a file", p.display());
        let p = std::fs::canonicalize(&p).expect("PLUMB_HELM resolves");
        if p.file_name().is_some_and(|n| n == "helm") {
            return Some(p.parent().expect("helm has a directory").to_path_buf());
        }
        // plumb looks for a program named `helm`: give it one.
        let d = std::env::temp_dir().join(format!("plumb-helm-test-{}-bin", std::process::id()));
        std::fs::create_dir_all(&d).expect("bin dir");
        let link = d.join("helm");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&p, &link).expect("symlink helm");
        return Some(d);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|d| d.join("helm").is_file())
}

/// helm's directory, or None after printing `SKIP` (a failure under `REQUIRE_HELM=1`).
fn require_helm(test: &str) -> Option<PathBuf> {
    let dir = helm_dir();
    if dir.is_none() {
        assert!(
            std::env::var("REQUIRE_HELM").as_deref() != Ok("1"),
            "REQUIRE_HELM=1 but helm was not found: set PLUMB_HELM to a helm binary \
             (testbed/build-helm.sh builds one) or put helm on PATH"
        );
        println!("SKIP {test}: helm not found (set PLUMB_HELM or put helm on PATH)");
    }
    dir
}

/// Returns from the test (after printing SKIP) when helm is absent.
macro_rules! helm_or_skip {
    ($name:expr) => {
        match require_helm($name) {
            Some(d) => d,
            None => return,
        }
    };
}

// ---------------------------------------------------------------------------------------
// Running plumb

fn plumb(helm: &Path, dir: &Path, args: &[&str]) -> Output {
    let mut paths = vec![helm.to_path_buf()];
    if let Some(p) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&p));
    }
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(dir)
        .env("PATH", std::env::join_paths(paths).expect("PATH"))
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        // helm must not pick up a user's repositories, plugins or kubeconfig.
        .env("HELM_CONFIG_HOME", dir.join(".helm-home/config"))
        .env("HELM_CACHE_HOME", dir.join(".helm-home/cache"))
        .env("HELM_DATA_HOME", dir.join(".helm-home/data"))
        .env("KUBECONFIG", dir.join(".helm-home/no-kubeconfig"))
        .output()
        .expect("plumb runs")
}

fn tmp(name: &str) -> TmpDir {
    common::tmp("helm", name)
}

/// How many YAML documents plumb printed (the first comment line is not one).
fn doc_count(text: &str) -> usize {
    text.split("---\n")
        .filter(|d| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
        })
        .count()
}

/// The object of `kind` named `name` in plumb's output, as text.
fn object<'a>(text: &'a str, kind: &str, name: &str) -> &'a str {
    text.split("---\n")
        .find(|d| {
            d.lines().any(|l| l == format!("kind: {kind}"))
                && d.lines().any(|l| l.trim() == format!("name: {name}"))
        })
        .unwrap_or_else(|| panic!("no {kind} {name} in:\n{text}"))
}

/// The value of the first line `key: value` (at any indentation) in `doc`.
fn field<'a>(doc: &'a str, key: &str) -> &'a str {
    let prefix = format!("{key}:");
    doc.lines()
        .map(str::trim_start)
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().trim_matches('\'').trim_matches('"'))
        .unwrap_or_else(|| panic!("no {key} in:\n{doc}"))
}

// ---------------------------------------------------------------------------------------
// The chart

const CHART_YAML: &str = "apiVersion: v2\nname: shop\ndescription: plumb's helm test chart\ntype: application\nversion: 0.1.0\nappVersion: \"1.0\"\n";

const VALUES_YAML: &str = "\
replicaCount: 1
image:
  repository: registry.example.com/shop
  tag: \"1.0\"
config:
  logLevel: info
  color: blue
  size: small
  tier: base
  greeting: hello
  port: 8080
";

/// Value file: overrides the chart's defaults.
const VALUES_PROD_YAML: &str = "\
replicaCount: 3
image:
  tag: \"2.0\"
config:
  color: green
  size: large
  tier: prod
";

const DEPLOYMENT_TPL: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
    app.kubernetes.io/name: {{ .Chart.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      containers:
      - name: web
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        env:
        - name: LOG_LEVEL
          value: {{ .Values.config.logLevel | quote }}
"#;

const CONFIGMAP_TPL: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
data:
  releaseName: {{ .Release.Name | quote }}
  releaseNamespace: {{ .Release.Namespace | quote }}
  color: {{ .Values.config.color | quote }}
  size: {{ .Values.config.size | quote }}
  tier: {{ .Values.config.tier | quote }}
  greeting: {{ .Values.config.greeting | quote }}
  logLevel: {{ .Values.config.logLevel | quote }}
  portIsString: {{ kindIs "string" .Values.config.port | quote }}
"#;

/// `chart/` in `root`.
fn write_chart(root: &Path) {
    write(root, "chart/Chart.yaml", CHART_YAML);
    write(root, "chart/values.yaml", VALUES_YAML);
    write(root, "chart/values-prod.yaml", VALUES_PROD_YAML);
    write(root, "chart/templates/deployment.yaml", DEPLOYMENT_TPL);
    write(root, "chart/templates/configmap.yaml", CONFIGMAP_TPL);
    write(
        root,
        "chart/templates/_helpers.tpl",
        "{{- define \"shop.unused\" -}}x{{- end -}}\n",
    );
}

/// An Application named `name` for `chart/`, with `helm` (indented YAML for
/// `spec.source.helm`, already indented by 6 spaces) and destination namespace `shop`.
fn app_yaml(name: &str, helm: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: {name}
  namespace: argocd
spec:
  project: default
  source:
    repoURL: .
    path: chart
    helm:
{helm}  destination:
    server: https://kubernetes.default.svc
    namespace: shop
"
    )
}

/// Every kind of value at once: value file < values (ignored: valuesObject is set, as
/// Argo CD's `ValuesYAML` ignores `values` then) < valuesObject < parameters.
const FULL_HELM: &str = "      releaseName: shop-prod
      valueFiles:
      - values-prod.yaml
      parameters:
      - name: config.size
        value: xl
      - name: config.port
        value: \"9090\"
        forceString: true
      values: |
        config:
          greeting: from-values
          color: red
      valuesObject:
        config:
          color: purple
          size: medium
";

// ---------------------------------------------------------------------------------------
// Tests

#[test]
fn app_renders_with_value_files_values_object_and_parameters() {
    let helm = helm_or_skip!("app_renders_with_value_files_values_object_and_parameters");
    let d = tmp("full");
    write_chart(&d);
    write(&d, "app.yaml", &app_yaml("shop", FULL_HELM));
    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let first = text.lines().next().unwrap_or_default();
    assert!(first.starts_with("# Helm source "), "{first}");
    assert_eq!(first, "# Helm source chart at working tree: 2 objects");
    assert_eq!(doc_count(&text), 2, "{text}");
    assert!(
        err(&o).contains("rendered with `helm template`"),
        "{}",
        err(&o)
    );

    let dep = object(&text, "Deployment", "shop-prod-web");
    assert_eq!(
        field(dep, "replicas"),
        "3",
        "value file overrides values.yaml"
    );
    assert_eq!(field(dep, "image"), "registry.example.com/shop:2.0");
    assert_eq!(field(dep, "app.kubernetes.io/instance"), "shop-prod");
    assert_eq!(field(dep, "value"), "info", "nested default kept");

    let cm = object(&text, "ConfigMap", "shop-prod-config");
    assert_eq!(field(cm, "releaseName"), "shop-prod");
    assert_eq!(field(cm, "size"), "xl", "parameters win over valuesObject");
    assert_eq!(
        field(cm, "color"),
        "purple",
        "valuesObject wins over values and value files"
    );
    assert_eq!(
        field(cm, "tier"),
        "prod",
        "value file wins over values.yaml"
    );
    assert_eq!(
        field(cm, "greeting"),
        "hello",
        "values is ignored when valuesObject is set (Argo CD's ValuesYAML)"
    );
    assert_eq!(field(cm, "logLevel"), "info");
    assert_eq!(
        field(cm, "portIsString"),
        "true",
        "forceString parameters use --set-string"
    );
}

#[test]
fn values_win_over_value_files_and_parameters_over_values() {
    let helm = helm_or_skip!("values_win_over_value_files_and_parameters_over_values");
    let d = tmp("values");
    write_chart(&d);
    let helm_spec = "      releaseName: shop
      valueFiles:
      - values-prod.yaml
      parameters:
      - name: config.size
        value: xs
      - name: config.port
        value: \"9090\"
      values: |
        config:
          color: red
          size: huge
          greeting: from-values
";
    write(&d, "app.yaml", &app_yaml("shop", helm_spec));
    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let cm = object(&text, "ConfigMap", "shop-config");
    assert_eq!(field(cm, "color"), "red", "values win over value files");
    assert_eq!(field(cm, "greeting"), "from-values");
    assert_eq!(field(cm, "size"), "xs", "parameters win over values");
    assert_eq!(field(cm, "tier"), "prod", "value file still applies");
    assert_eq!(
        field(cm, "portIsString"),
        "false",
        "a plain parameter is --set: 9090 is a number"
    );
}

#[test]
fn helm_namespace_is_the_release_namespace() {
    let helm = helm_or_skip!("helm_namespace_is_the_release_namespace");
    let d = tmp("helm-namespace");
    write_chart(&d);
    write(
        &d,
        "app.yaml",
        &app_yaml(
            "shop",
            "      releaseName: shop\n      namespace: payments\n",
        ),
    );
    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let cm = object(&out(&o), "ConfigMap", "shop-config").to_string();
    assert_eq!(field(&cm, "releaseNamespace"), "payments");
}

#[test]
fn path_without_app_renders_default_values() {
    let helm = helm_or_skip!("path_without_app_renders_default_values");
    let d = tmp("defaults");
    write_chart(&d);
    let o = plumb(&helm, &d, &["render", "--path", "chart"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(
        text.starts_with("# Helm source chart at working tree: 2 objects\n"),
        "{text}"
    );
    // helm's own default release name, as `helm template` without a name.
    let dep = object(&text, "Deployment", "release-name-web");
    assert_eq!(field(dep, "replicas"), "1");
    assert_eq!(field(dep, "image"), "registry.example.com/shop:1.0");
    let cm = object(&text, "ConfigMap", "release-name-config");
    assert_eq!(field(cm, "color"), "blue");
    assert_eq!(field(cm, "tier"), "base");
    assert_eq!(field(cm, "releaseNamespace"), "default");
    assert_eq!(doc_count(&text), 2, "{text}");
}

#[test]
fn a_missing_value_file_is_a_one_line_error_unless_ignored() {
    let helm = helm_or_skip!("a_missing_value_file_is_a_one_line_error_unless_ignored");
    let d = tmp("missing");
    write_chart(&d);
    let spec = "      releaseName: shop\n      valueFiles:\n      - values-prod.yaml\n      - values-staging.yaml\n";
    write(&d, "app.yaml", &app_yaml("shop", spec));
    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", out(&o), err(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(e.starts_with("error: "), "{e}");
    assert!(e.contains("chart/values-staging.yaml"), "{e}");
    assert!(out(&o).is_empty(), "{}", out(&o));

    let spec = format!("{spec}      ignoreMissingValueFiles: true\n");
    write(&d, "app.yaml", &app_yaml("shop", &spec));
    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert_eq!(
        field(object(&text, "Deployment", "shop-web"), "replicas"),
        "3",
        "the value file that exists still applies"
    );
}

#[test]
fn a_template_error_is_one_error_line_naming_helm() {
    let helm = helm_or_skip!("a_template_error_is_one_error_line_naming_helm");
    let d = tmp("template-error");
    write_chart(&d);
    write(
        &d,
        "chart/templates/broken.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-broken\ndata:\n  x: {{ required \"config.mandatory is required\" .Values.config.mandatory }}\n",
    );
    for args in [
        &["render", "--path", "chart"][..],
        &["render", "--app", "app.yaml"][..],
    ] {
        write(
            &d,
            "app.yaml",
            &app_yaml("shop", "      releaseName: shop\n"),
        );
        let o = plumb(&helm, &d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}{}", out(&o), err(&o));
        let e = err(&o);
        assert_eq!(e.lines().count(), 1, "{args:?}: one line: {e}");
        assert!(e.starts_with("error: "), "{e}");
        assert!(e.contains("helm"), "{e}");
        assert!(e.contains("config.mandatory is required"), "{e}");
        assert!(out(&o).is_empty(), "{}", out(&o));
    }
    // A syntax error, too.
    write(
        &d,
        "chart/templates/broken.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name\n",
    );
    let o = plumb(&helm, &d, &["render", "--path", "chart"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(e.starts_with("error: ") && e.contains("helm"), "{e}");
    assert!(e.contains("broken.yaml"), "{e}");
}

#[test]
fn diff_against_live_shows_the_differing_field() {
    let helm = helm_or_skip!("diff_against_live_shows_the_differing_field");
    let d = tmp("diff");
    write_chart(&d);
    // helm.namespace as well as the destination: the chart writes .Release.Namespace.
    let spec = "      releaseName: shop\n      namespace: shop\n      valueFiles:\n      - values-prod.yaml\n";
    write(&d, "app.yaml", &app_yaml("shop", spec));
    let live_cm = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-config
  namespace: shop
  uid: 4b0d3c1e-0000-4000-8000-000000000001
  resourceVersion: "1001"
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels:
    app.kubernetes.io/instance: shop
data:
  releaseName: shop
  releaseNamespace: shop
  color: green
  size: large
  tier: prod
  greeting: hello
  logLevel: info
  portIsString: "false"
"#;
    // Deployment as the API server returns it: defaults filled in, replicas scaled to 5.
    let live_dep = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop-web
  namespace: shop
  uid: 4b0d3c1e-0000-4000-8000-000000000002
  resourceVersion: "1002"
  generation: 2
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels:
    app.kubernetes.io/instance: shop
    app.kubernetes.io/name: shop
spec:
  replicas: 5
  selector:
    matchLabels:
      app.kubernetes.io/instance: shop
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: shop
    spec:
      containers:
      - name: web
        image: registry.example.com/shop:2.0
        env:
        - name: LOG_LEVEL
          value: info
"#;
    write(&d, "live/configmap.yaml", live_cm);
    write(&d, "live/deployment.yaml", live_dep);
    let o = plumb(
        &helm,
        &d,
        &["diff", "--app", "app.yaml", "--live", "live", "-o", "json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let doc: serde_json::Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(doc["summary"]["modified"], 1, "{doc:#}");
    assert_eq!(doc["summary"]["missing"], 0, "{doc:#}");
    assert_eq!(doc["summary"]["extra"], 0, "{doc:#}");
    let changed: Vec<&serde_json::Value> = doc["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter(|r| r["status"] == "modified")
        .collect();
    assert_eq!(changed.len(), 1, "{doc:#}");
    assert_eq!(changed[0]["kind"], "Deployment", "{doc:#}");
    assert_eq!(changed[0]["name"], "shop-web", "{doc:#}");
    let fields = changed[0]["fields"].as_array().expect("fields");
    assert_eq!(fields.len(), 1, "{doc:#}");
    assert_eq!(fields[0]["path"], "/spec/replicas");
    assert_eq!(fields[0]["live"], 5);
    assert_eq!(fields[0]["desired"], 3);

    // The default (argocd) format names the field too.
    let o = plumb(&helm, &d, &["diff", "--app", "app.yaml", "--live", "live"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("apps/Deployment shop/shop-web"), "{text}");
    assert!(text.contains("<   replicas: 5"), "{text}");
    assert!(text.contains(">   replicas: 3"), "{text}");
    assert!(!text.contains("ConfigMap"), "{text}");

    // And in sync once live matches.
    write(
        &d,
        "live/deployment.yaml",
        &live_dep.replace("replicas: 5", "replicas: 3"),
    );
    let o = plumb(&helm, &d, &["diff", "--app", "app.yaml", "--live", "live"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
}

#[test]
fn git_repositories_render_the_committed_chart_not_the_work_tree() {
    let helm = helm_or_skip!("git_repositories_render_the_committed_chart_not_the_work_tree");
    let d = tmp("git");
    git(&d, &["init", "-q", "-b", "main"]);
    write_chart(&d);
    let spec = "      releaseName: shop\n      valueFiles:\n      - values-prod.yaml\n";
    write(&d, "app.yaml", &app_yaml("shop", spec));
    git(&d, &["add", "."]);
    git(&d, &["commit", "-qm", "chart"]);
    let head = git(&d, &["rev-parse", "--short=7", "HEAD"]);
    // Uncommitted edits: a value file, a chart default, and an untracked template.
    write(
        &d,
        "chart/values-prod.yaml",
        &VALUES_PROD_YAML.replace("replicaCount: 3", "replicaCount: 9"),
    );
    write(
        &d,
        "chart/values.yaml",
        &VALUES_YAML.replace("greeting: hello", "greeting: uncommitted"),
    );
    write(
        &d,
        "chart/templates/untracked.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: untracked\n",
    );

    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert_eq!(
        text.lines().next().unwrap_or_default(),
        format!("# Helm source chart at HEAD ({head}): 2 objects")
    );
    assert_eq!(
        field(object(&text, "Deployment", "shop-web"), "replicas"),
        "3",
        "the committed value file, not the work tree's"
    );
    assert_eq!(
        field(object(&text, "ConfigMap", "shop-config"), "greeting"),
        "hello"
    );
    assert!(
        !text.contains("untracked") && !text.contains("replicas: 9"),
        "{text}"
    );

    // Once committed, the new value renders; the earlier revision still renders the old.
    git(&d, &["commit", "-qam", "scale"]);
    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert_eq!(
        field(object(&text, "Deployment", "shop-web"), "replicas"),
        "9"
    );
    assert!(!text.contains("name: untracked"), "still untracked: {text}");
    let o = plumb(
        &helm,
        &d,
        &["render", "--app", "app.yaml", "--revision", "HEAD~1"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(
        field(object(&out(&o), "Deployment", "shop-web"), "replicas"),
        "3"
    );
}

// ---------------------------------------------------------------------------------------
// Argo CD behaviour plumb does not match yet (see each reason).

#[test]
fn release_namespace_defaults_to_the_destination_namespace() {
    let helm = helm_or_skip!("release_namespace_defaults_to_the_destination_namespace");
    let d = tmp("dest-namespace");
    write_chart(&d);
    write(
        &d,
        "app.yaml",
        &app_yaml("shop", "      releaseName: shop\n"),
    );
    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    // Argo CD: helm template --namespace <helm.namespace, else destination.namespace>.
    assert_eq!(
        field(
            object(&text, "ConfigMap", "shop-config"),
            "releaseNamespace"
        ),
        "shop"
    );
}

#[test]
fn release_name_defaults_to_the_application_name() {
    let helm = helm_or_skip!("release_name_defaults_to_the_application_name");
    let d = tmp("app-name");
    write_chart(&d);
    write(
        &d,
        "app.yaml",
        &app_yaml(
            "storefront",
            "      valueFiles:\n      - values-prod.yaml\n",
        ),
    );
    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    object(&text, "Deployment", "storefront-web");
    assert_eq!(
        field(
            object(&text, "ConfigMap", "storefront-config"),
            "releaseName"
        ),
        "storefront"
    );
}

#[test]
fn parameter_values_with_commas_are_one_value() {
    let helm = helm_or_skip!("parameter_values_with_commas_are_one_value");
    let d = tmp("commas");
    write_chart(&d);
    let spec = "      releaseName: shop\n      parameters:\n      - name: config.greeting\n        value: hello,world\n";
    write(&d, "app.yaml", &app_yaml("shop", spec));
    let o = plumb(&helm, &d, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(
        field(object(&out(&o), "ConfigMap", "shop-config"), "greeting"),
        "hello,world"
    );
}

/// `kubectl kustomize --enable-helm` on `dir/path` (the oracle), its objects; helm on PATH.
fn kubectl_kustomize_helm(helm: &Path, dir: &Path, path: &str) -> Vec<serde_json::Value> {
    let mut paths = vec![helm.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let kubectl = Command::new("kubectl")
        .args(["kustomize", "--enable-helm"])
        .arg(dir.join(path))
        .env("PATH", std::env::join_paths(paths).expect("PATH"))
        .env("HELM_CONFIG_HOME", dir.join(".helm-home/config"))
        .env("HELM_CACHE_HOME", dir.join(".helm-home/cache"))
        .env("HELM_DATA_HOME", dir.join(".helm-home/data"))
        .output()
        .expect("kubectl runs");
    assert!(kubectl.status.success(), "{}", err(&kubectl));
    let want = plumb_render::parse_str(&out(&kubectl), Path::new("-")).expect("kubectl's YAML");
    want.into_iter().map(|m| m.object).collect()
}

fn objects_of(text: &str) -> Vec<serde_json::Value> {
    plumb_render::parse_str(text, Path::new("-"))
        .expect("plumb's YAML")
        .into_iter()
        .map(|m| m.object)
        .collect()
}

/// A small chart: a ConfigMap of its values (and release, namespace, capabilities), a
/// test Pod, a hook Job and a CRD, as kustomize's own HelmChartInflationGenerator tests
/// exercise them (plugin/builtin/helmchartinflationgenerator: IncludeCRDs, SkipHooks,
/// ValuesOverride/Replace/Merge; api/krusty: MultipleValuesFiles, ApiVersions, SkipTests,
/// NameTemplate).
fn mini_chart(dir: &Path, at: &str, version: &str) {
    let w = |rel: &str, text: &str| write(dir, &format!("{at}/{rel}"), text);
    w(
        "Chart.yaml",
        &format!("apiVersion: v2\nname: mini\nversion: {version}\n"),
    );
    w(
        "values.yaml",
        "color: blue\nsize: small\nlist: [1, 2]\nnested: {b: 2, gone: {x: 1}}\n",
    );
    w(
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  color: {{ .Values.color | quote }}\n  size: {{ .Values.size | quote }}\n  list: {{ .Values.list | toJson | quote }}\n  nested: {{ .Values.nested | toJson | quote }}\n  extra: {{ .Values.extra | default \"none\" | quote }}\n  namespace: {{ .Release.Namespace }}\n  chart: {{ .Chart.Version | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n  widgets: {{ .Capabilities.APIVersions.Has \"example.com/v1\" | quote }}\n",
    );
    w(
        "templates/tests/test-pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers:\n  - name: t\n    image: busybox\n",
    );
    w(
        "templates/hook.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n  annotations:\n    helm.sh/hook: pre-install\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: m\n        image: busybox\n",
    );
    w(
        "crds/widget.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object}\n",
    );
}

/// `helmCharts` natively, with Argo CD's `kustomize.buildOptions: --enable-helm`: each of
/// kustomize's options (values merge modes, additional values files, CRDs, tests, hooks,
/// name template, API and Kubernetes versions, `helmGlobals.chartHome`, a vendored
/// `<name>-<version>` directory), under an overlay's namespace, prefix and labels; equal to
/// `kubectl kustomize --enable-helm` object for object and in order, every object declared
/// at its `helmCharts` entry. Without the option it is one line saying so (exit 2); an
/// option plumb does not pass on is refused before any render.
#[test]
fn kustomize_helm_charts_render_natively_as_kubectl_kustomize_enable_helm() {
    let helm = helm_or_skip!("kustomize_helm_charts_render_natively");
    let dir = tmp("kustomize-helm-charts");
    let w = |rel: &str, text: &str| write(&dir, rel, text);
    mini_chart(&dir, "app/charts/mini", "0.1.0");
    mini_chart(&dir, "vendored/vendor/mini-0.2.0/mini", "0.2.0");
    mini_chart(&dir, "vendored/vendor/mini", "0.1.5");
    w("app/values/extra.yaml", "extra: from-additional\n");
    w("app/values/own.yaml", "color: green\nsize: tiny\n");
    w(
        "app/kustomization.yaml",
        "helmCharts:
- name: mini
  releaseName: over
  includeCRDs: true
  valuesInline:
    color: red
    list: [9]
    nested: {a: 1, gone: null}
- name: mini
  releaseName: merged
  valuesMerge: merge
  skipTests: true
  skipHooks: true
  valuesInline:
    color: red
    list: [9]
    nested: {a: 1}
- name: mini
  releaseName: replaced
  valuesMerge: replace
  valuesFile: values/own.yaml
  additionalValuesFiles: [values/extra.yaml]
  valuesInline:
    size: huge
  kubeVersion: \"1.29.0\"
  apiVersions: [example.com/v1]
- name: mini
  nameTemplate: templated
  namespace: chart-ns
  valuesFile: values/own.yaml
",
    );
    // A second kustomization: its own chart home, a vendored `<name>-<version>` (repo and
    // version given, so no pull).
    w(
        "vendored/kustomization.yaml",
        "helmGlobals:\n  chartHome: vendor\nhelmCharts:\n- name: mini\n  version: 0.2.0\n  repo: https://charts.invalid/never\n  releaseName: pinned\n",
    );
    w(
        "overlay/kustomization.yaml",
        "namespace: shop\nnamePrefix: prod-\nlabels:\n- pairs: {env: prod}\nresources:\n- ../app\n",
    );
    for path in ["app", "overlay"] {
        let o = plumb(
            &helm,
            &dir,
            &[
                "render",
                "--path",
                path,
                "--kustomize-build-options=--enable-helm",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{path}: {}", err(&o));
        let got = objects_of(&out(&o));
        assert_eq!(got, kubectl_kustomize_helm(&helm, &dir, path), "{path}");
        // over: CRD, ConfigMap, test Pod, hook Job; merged: ConfigMap (no tests, no hooks);
        // replaced and templated: ConfigMap, test Pod, hook Job.
        assert_eq!(got.len(), 11, "{path}");
    }
    // The vendored chart: kubectl's output is checked on a copy, since kustomize would pull
    // into the chart home if the directory were missing.
    let o = plumb(
        &helm,
        &dir,
        &[
            "render",
            "--path",
            "vendored",
            "--kustomize-build-options=--enable-helm",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert_eq!(
        objects_of(&text),
        kubectl_kustomize_helm(&helm, &dir, "vendored")
    );
    assert!(text.contains("chart: 0.2.0"), "{text}");

    // What the values came to, spelled out (kyaml's merge2).
    let o = plumb(
        &helm,
        &dir,
        &[
            "render",
            "--path",
            "overlay",
            "--kustomize-build-options=--enable-helm",
            "--show-origins",
        ],
    );
    let text = out(&o);
    for line in [
        "  color: red # app/kustomization.yaml:2",
        // An inline null removes the field from the merged values; helm then takes the
        // chart's default again.
        "  nested: '{\"a\":1,\"b\":2,\"gone\":{\"x\":1}}' # app/kustomization.yaml:2",
        "  color: blue # app/kustomization.yaml:9",
        "  list: '[1,2]' # app/kustomization.yaml:9",
        "  extra: from-additional # app/kustomization.yaml:18",
        "  size: huge # app/kustomization.yaml:18",
        "  kube: v1.29.0 # app/kustomization.yaml:18",
        "  widgets: \"true\" # app/kustomization.yaml:18",
        "  namespace: chart-ns # app/kustomization.yaml:27",
        "  name: prod-templated-cm # overlay/kustomization.yaml:2",
        "  namespace: shop # overlay/kustomization.yaml:1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
    assert!(!text.contains("kustomize binary"), "native: {text}");
    // Nothing was written into the repository.
    assert!(!dir.join("app/charts/mini/charts").exists());

    // Without --enable-helm: kustomize's refusal, one line naming the entry.
    let o = plumb(&helm, &dir, &["render", "--path", "app"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains(
            "app/kustomization.yaml:2:9: helmCharts: chart mini: must specify --enable-helm"
        ),
        "{e}"
    );
    // Bad entries: one line each, naming the file and line.
    for (k, want) in [
        (
            "helmCharts:\n- name: mini\n  valuesMerge: mix\n  valuesInline: {a: 1}\n",
            "bad/kustomization.yaml:2:9: helmCharts: valuesMerge must be one of [merge override replace]",
        ),
        (
            "helmCharts:\n- name: mini\n  releaseName: --post-renderer=sh\n",
            "bad/kustomization.yaml:3:16: helmCharts: releaseName \"--post-renderer=sh\" is not a valid release name",
        ),
        (
            "helmCharts:\n- name: absent\n",
            "bad/kustomization.yaml:2:9: helmCharts: no repo specified for pull, no chart found at 'bad/charts/absent'",
        ),
        (
            "helmCharts:\n- name: mini\n  valuesFile: ../app/values/own.yaml\n",
            "security; file 'app/values/own.yaml' is not in or below 'bad'",
        ),
        (
            "helmGlobals:\n  chartHome: ../app/charts\nhelmCharts:\n- name: mini\n",
            "security; file 'app/charts/mini/values.yaml' is not in or below 'bad'",
        ),
        (
            "helmCharts:\n- name: mini\n  chartVersion: 1\n",
            "bad/kustomization.yaml:3:17: invalid Kustomization: json: unknown field \"chartVersion\"",
        ),
    ] {
        w("bad/kustomization.yaml", k);
        mini_chart(&dir, "bad/charts/mini", "0.1.0");
        let o = plumb(
            &helm,
            &dir,
            &[
                "render",
                "--path",
                "bad",
                "--kustomize-build-options=--enable-helm",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{k}: {}", err(&o));
        let e = err(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(want), "{k}: {e}");
    }

    let o = plumb(
        &helm,
        &dir,
        &[
            "render",
            "--path",
            "app",
            "--kustomize-build-options",
            "--load-restrictor LoadRestrictionsNone",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("\"--load-restrictor\" is not supported"),
        "{}",
        err(&o)
    );
}
