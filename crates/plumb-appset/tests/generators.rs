//! The generators and both template modes on the examples of Argo CD's ApplicationSet
//! documentation (Generators-List, -Cluster, -Git, -Matrix, -Merge; GoTemplate), each case
//! naming the page it follows. Repositories are served from memory here (the crate is pure);
//! plumb-cli's `appset` tests read real git repositories.

use plumb_appset::{Cluster, Inputs, Repos, generate};
use serde_json::{Value, json};
use std::collections::BTreeMap;

struct Files(BTreeMap<&'static str, &'static str>);

impl Repos for Files {
    fn files(&self, _: &str, _: &str) -> Result<Vec<String>, String> {
        Ok(self.0.keys().map(|k| k.to_string()).collect())
    }
    fn read(&self, _: &str, _: &str, path: &str) -> Result<Vec<u8>, String> {
        self.0
            .get(path)
            .map(|t| t.as_bytes().to_vec())
            .ok_or_else(|| format!("{path}: no such file"))
    }
}

fn repo() -> Files {
    Files(BTreeMap::from([
        ("apps/guestbook/deploy.yaml", "kind: Deployment\n"),
        ("apps/helm-guestbook/Chart.yaml", "name: x\n"),
        ("apps/exclude-this/deploy.yaml", "kind: Deployment\n"),
        ("README.md", "hello\n"),
        (
            "cluster-config/engineering/dev/config.json",
            r#"{"aws_account": "123456", "asset_id": "11223344", "cluster": {"owner": "cluster-admin@company.com", "name": "engineering-dev", "address": "https://1.2.3.4"}}"#,
        ),
        (
            "cluster-config/engineering/prod/config.json",
            r#"{"aws_account": "123456", "asset_id": "11223344", "cluster": {"owner": "cluster-admin@company.com", "name": "engineering-prod", "address": "https://1.2.3.5"}}"#,
        ),
    ]))
}

fn appset(spec: Value) -> Value {
    json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "guestbook", "namespace": "argocd"}, "spec": spec})
}

fn run(spec: Value, clusters: &[Cluster]) -> Result<Vec<Value>, String> {
    let files = repo();
    generate(
        &appset(spec),
        &Inputs {
            repos: &files,
            clusters: Some(clusters),
            services: &plumb_appset::services::NoServices,
            appset_name: "",
        },
    )
    .map_err(|e| e.0)
}

fn names(apps: &[Value]) -> Vec<String> {
    apps.iter()
        .map(|a| a["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

const TEMPLATE: &str = "{{path.basename}}";

/// Generators-List: the guestbook example.
#[test]
fn list_generator() {
    let apps = run(
        json!({"generators": [{"list": {"elements": [
                {"cluster": "engineering-dev", "url": "https://1.2.3.4"},
                {"cluster": "engineering-prod", "url": "https://2.4.6.8"}]}}],
            "template": {"metadata": {"name": "{{cluster}}-guestbook"},
                "spec": {"project": "my-project",
                    "source": {"repoURL": "https://github.com/infra-team/cluster-deployments.git",
                        "targetRevision": "HEAD", "path": "guestbook/{{cluster}}"},
                    "destination": {"server": "{{url}}", "namespace": "guestbook"}}}}),
        &[],
    )
    .expect("generated");
    assert_eq!(
        names(&apps),
        ["engineering-dev-guestbook", "engineering-prod-guestbook"]
    );
    assert_eq!(apps[1]["spec"]["destination"]["server"], "https://2.4.6.8");
    assert_eq!(
        apps[0]["spec"]["source"]["path"],
        "guestbook/engineering-dev"
    );
    assert_eq!(apps[0]["apiVersion"], "argoproj.io/v1alpha1");
    assert_eq!(apps[0]["metadata"]["namespace"], "argocd");
    // Nested values need goTemplate in the legacy mode; elementsYaml adds elements.
    let e = run(
        json!({"generators": [{"list": {"elements": [{"cluster": {"name": "x"}}]}}],
            "template": {"metadata": {"name": "x"}, "spec": {}}}),
        &[],
    )
    .unwrap_err();
    assert!(e.contains("spec.generators[0].list.elements[0].cluster: the legacy template mode takes strings only"), "{e}");
    let apps = run(
        json!({"goTemplate": true,
            "generators": [{"list": {"elementsYaml": "- cluster: {name: a, env: dev}\n- cluster: {name: b, env: prod}\n"}}],
            "template": {"metadata": {"name": "{{.cluster.name}}-{{.cluster.env}}"}, "spec": {}}}),
        &[],
    )
    .expect("generated");
    assert_eq!(names(&apps), ["a-dev", "b-prod"]);
}

/// Generators-Git: directories, with an exclusion.
#[test]
fn git_directories() {
    let apps = run(
        json!({"generators": [{"git": {"repoURL": "https://github.com/argoproj/argo-cd.git",
                "revision": "HEAD",
                "directories": [{"path": "apps/*"}, {"path": "apps/exclude-this", "exclude": true}]}}],
            "template": {"metadata": {"name": TEMPLATE},
                "spec": {"project": "default",
                    "source": {"repoURL": "https://github.com/argoproj/argo-cd.git",
                        "targetRevision": "HEAD", "path": "{{path}}"},
                    "destination": {"server": "https://kubernetes.default.svc",
                        "namespace": "{{path[1]}}"}}}}),
        &[],
    )
    .expect("generated");
    assert_eq!(names(&apps), ["guestbook", "helm-guestbook"]);
    assert_eq!(apps[1]["spec"]["source"]["path"], "apps/helm-guestbook");
    assert_eq!(
        apps[1]["spec"]["destination"]["namespace"],
        "helm-guestbook"
    );
    // goTemplate: .path.basename, .path.segments, pathParamPrefix.
    let apps = run(
        json!({"goTemplate": true,
            "generators": [{"git": {"repoURL": "r", "pathParamPrefix": "app",
                "directories": [{"path": "apps/guestbook"}]}}],
            "template": {"metadata": {"name": "{{.app.path.basename}}-{{index .app.path.segments 0}}"},
                "spec": {}}}),
        &[],
    )
    .expect("generated");
    assert_eq!(names(&apps), ["guestbook-apps"]);
}

/// Generators-Git: files (config.json per cluster), nested keys flattened in the legacy mode.
#[test]
fn git_files() {
    let apps = run(
        json!({"generators": [{"git": {"repoURL": "https://github.com/argoproj/argo-cd.git",
                "revision": "HEAD", "files": [{"path": "cluster-config/**/config.json"}]}}],
            "template": {"metadata": {"name": "{{cluster.name}}-guestbook"},
                "spec": {"source": {"path": "{{path}}", "targetRevision": "{{path.basename}}"},
                    "destination": {"server": "{{cluster.address}}", "namespace": "guestbook"}}}}),
        &[],
    )
    .expect("generated");
    assert_eq!(
        names(&apps),
        ["engineering-dev-guestbook", "engineering-prod-guestbook"]
    );
    assert_eq!(apps[0]["spec"]["destination"]["server"], "https://1.2.3.4");
    assert_eq!(
        apps[0]["spec"]["source"]["path"],
        "cluster-config/engineering/dev"
    );
    assert_eq!(apps[0]["spec"]["source"]["targetRevision"], "dev");
}

/// Generators-Cluster: every cluster Secret plus the local cluster; a selector.
#[test]
fn clusters() {
    let prod = Cluster {
        name: "prod-eu".into(),
        server: "https://prod.example.com".into(),
        labels: json!({"env": "prod"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..Cluster::default()
    };
    let spec = |generator: Value| {
        json!({"generators": [{"clusters": generator}],
            "template": {"metadata": {"name": "{{name}}-guestbook"},
                "spec": {"destination": {"server": "{{server}}"}}}})
    };
    let apps = run(spec(json!({})), std::slice::from_ref(&prod)).expect("generated");
    assert_eq!(names(&apps), ["in-cluster-guestbook", "prod-eu-guestbook"]);
    let apps = run(
        spec(json!({"selector": {"matchLabels": {"env": "prod"}}, "values": {"revision": "{{name}}-v1"}})),
        &[prod],
    )
    .expect("generated");
    assert_eq!(names(&apps), ["prod-eu-guestbook"]);
}

/// Generators-Cluster, `flatList: true`: one Application for all clusters, listed under
/// `.clusters` (Argo CD's example: one app whose Helm values name every cluster).
#[test]
fn clusters_flat_list() {
    let prod = Cluster {
        name: "prod-eu".into(),
        server: "https://prod.example.com".into(),
        ..Cluster::default()
    };
    let apps = run(
        json!({"goTemplate": true,
            "generators": [{"clusters": {"flatList": true, "values": {"team": "web"}}}],
            "template": {"metadata": {"name": "all-{{ .values.team }}"},
                "spec": {"source": {"helm": {"values": "{{ range .clusters }}{{ .name }}={{ .server }};{{ end }}"}}}}}),
        &[prod],
    )
    .expect("generated");
    assert_eq!(names(&apps), ["all-web"]);
    assert_eq!(
        apps[0]["spec"]["source"]["helm"]["values"],
        "in-cluster=https://kubernetes.default.svc;prod-eu=https://prod.example.com;"
    );
}

/// Generators-Matrix: git directories × clusters; the second child sees the first's params.
#[test]
fn matrix_and_merge() {
    let dev = Cluster {
        name: "dev".into(),
        server: "https://dev.example.com".into(),
        ..Cluster::default()
    };
    let apps = run(
        json!({"generators": [{"matrix": {"generators": [
                {"git": {"repoURL": "r", "directories": [{"path": "apps/*"}, {"path": "apps/exclude-this", "exclude": true}]}},
                {"list": {"elements": [{"cluster": "dev", "dir": "{{path.basename}}"}]}}]}}],
            "template": {"metadata": {"name": "{{path.basename}}-{{cluster}}"},
                "spec": {"source": {"path": "{{dir}}"}}}}),
        &[dev],
    )
    .expect("generated");
    assert_eq!(names(&apps), ["guestbook-dev", "helm-guestbook-dev"]);
    assert_eq!(apps[1]["spec"]["source"]["path"], "helm-guestbook");
    // Generators-Merge: the list overrides by the merge key.
    let apps = run(
        json!({"generators": [{"merge": {"mergeKeys": ["cluster"], "generators": [
                {"list": {"elements": [{"cluster": "a", "kafka": "false"}, {"cluster": "b", "kafka": "false"}]}},
                {"list": {"elements": [{"cluster": "b", "kafka": "true"}]}}]}}],
            "template": {"metadata": {"name": "{{cluster}}-{{kafka}}"}, "spec": {}}}),
        &[],
    )
    .expect("generated");
    assert_eq!(names(&apps), ["a-false", "b-true"]);
}

/// Templates: templatePatch (the GoTemplate page's valueFiles and conditional syncPolicy).
#[test]
fn template_patch() {
    let apps = run(
        json!({"goTemplate": true,
            "generators": [{"list": {"elements": [
                {"cluster": "dev", "autoSync": true, "prune": true, "valueFiles": ["values.yaml", "dev.yaml"]},
                {"cluster": "prod", "autoSync": false, "valueFiles": ["values.yaml"]}]}}],
            "template": {"metadata": {"name": "{{.cluster}}-app"},
                "spec": {"project": "default", "source": {"repoURL": "r", "path": "chart"}}},
            "templatePatch": "spec:\n  source:\n    helm:\n      valueFiles:\n      {{- range $f := .valueFiles }}\n        - {{ $f }}\n      {{- end }}\n{{- if .autoSync }}\n  syncPolicy:\n    automated:\n      prune: {{ .prune }}\n{{- end }}\n"}),
        &[],
    )
    .expect("generated");
    assert_eq!(
        apps[0]["spec"]["source"]["helm"]["valueFiles"],
        json!(["values.yaml", "dev.yaml"])
    );
    assert_eq!(apps[0]["spec"]["source"]["path"], "chart");
    assert_eq!(apps[0]["spec"]["syncPolicy"]["automated"]["prune"], true);
    assert!(apps[1]["spec"].get("syncPolicy").is_none(), "{}", apps[1]);
    let e = run(
        json!({"generators": [{"list": {"elements": [{"a": "1"}]}}],
            "template": {"metadata": {"name": "x"}, "spec": {}}, "templatePatch": "spec: {}"}),
        &[],
    )
    .unwrap_err();
    assert!(
        e.contains("spec.templatePatch: needs goTemplate: true"),
        "{e}"
    );
}

/// Bad input: one line naming the generator and field, nothing generated.
#[test]
fn errors_name_the_generator_and_field() {
    let t = json!({"metadata": {"name": "x"}, "spec": {}});
    let cases = [
        (
            json!({"generators": [{"matrix": {"generators": [{"list": {}}, {"list": {}}, {"list": {}}]}}], "template": t}),
            "spec.generators[0].matrix.generators: a matrix has exactly two child generators (found 3)",
        ),
        (
            json!({"generators": [{"nosuch": {}}], "template": t}),
            "spec.generators[0]: unknown generator \"nosuch\"",
        ),
        (
            json!({"generators": [{"list": {"elements": [{"a": "1"}, {"a": "2"}]}}], "template": t}),
            "generates Application \"x\" a second time",
        ),
        (
            json!({"generators": [{"git": {"repoURL": "r", "directories": [{"path": "../outside/*"}]}}], "template": t}),
            "spec.generators[0].git.directories[0].path: \"../outside/*\" leaves the repository",
        ),
        (
            json!({"goTemplate": true, "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": [{"a": "1"}]}}],
            "template": {"metadata": {"name": "{{.b}}"}, "spec": {}}}),
            "spec.generators[0]: template: ",
        ),
        (
            json!({"goTemplate": true, "generators": [{"list": {"elements": [{"a": "1"}]}}],
            "template": {"metadata": {"name": "{{.a"}, "spec": {}}}),
            "unclosed action",
        ),
        (
            json!({"generators": [{"pullRequest": {}}], "template": t}),
            "spec.generators[0].pullRequest: a provider (github, gitlab, gitea) is required",
        ),
        (
            json!({"generators": [{"plugin": {"configMapRef": {"name": "p"}}}], "template": t}),
            "spec.generators[0].plugin.configMapRef: ConfigMap p: no cluster to read it from",
        ),
    ];
    for (spec, want) in cases {
        let e = run(spec, &[]).unwrap_err();
        assert!(e.starts_with("ApplicationSet guestbook: "), "{e}");
        assert!(e.contains(want), "{want:?} in {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}
