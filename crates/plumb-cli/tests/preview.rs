//! `plumb preview` end to end on a git repository with two commits: a change to a kustomize
//! base shared by two apps lists exactly those two, with the diff; an app added by the change
//! shows as added, one removed as removed; an app whose `manifest-generate-paths` the change
//! does not touch is not rendered (counted); Secret values never show; a base revision that
//! does not exist is one line and exit 2.

mod common;
use common::{copy_tree, err, git, out, tmp, write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn plumb(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("plumb runs")
}

/// Each app of a JSON preview, with its status.
fn statuses(v: &serde_json::Value) -> Vec<(&str, &str)> {
    v["apps"]
        .as_array()
        .expect("apps")
        .iter()
        .map(|a| {
            (
                a["app"].as_str().unwrap_or(""),
                a["status"].as_str().unwrap_or(""),
            )
        })
        .collect()
}

fn app(name: &str, path: &str, annotations: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n{annotations}spec:\n  project: default\n  destination: {{server: https://kubernetes.default.svc, namespace: {name}}}\n  source: {{repoURL: https://git.example.com/platform.git, path: {path}, targetRevision: HEAD}}\n---\n"
    )
}

fn overlay(prefix: &str) -> String {
    format!("resources:\n- ../../base\nnamePrefix: {prefix}-\n")
}

#[test]
fn a_change_to_a_shared_base_lists_the_apps_that_use_it() {
    let d = tmp("preview", "shared-base");
    let repo = d.join("repo");
    copy_tree(
        &root().join("examples/payments/repo/base"),
        &repo.join("base"),
    );
    write(&repo, "apps/one/kustomization.yaml", &overlay("one"));
    write(&repo, "apps/two/kustomization.yaml", &overlay("two"));
    write(
        &repo,
        "apps/old/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\ndata: {k: v}\n",
    );
    write(
        &repo,
        "apps/solo/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: solo}\ndata: {k: v}\n",
    );
    let solo_paths = "  annotations:\n    argocd.argoproj.io/manifest-generate-paths: .\n";
    let apps = [
        app("one", "apps/one", ""),
        app("two", "apps/two", ""),
        app("old", "apps/old", ""),
        app("solo", "apps/solo", solo_paths),
    ]
    .concat();
    write(&repo, "argocd/apps.yaml", &apps);
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    // The change: the shared base's image, a new app, an app removed.
    let deployment =
        std::fs::read_to_string(repo.join("base/deployment.yaml")).expect("deployment");
    write(
        &repo,
        "base/deployment.yaml",
        &deployment.replace("api:2.14.1", "api:2.15.0"),
    );
    write(
        &repo,
        "apps/three/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: three}\ndata: {k: v}\n",
    );
    let apps = [
        app("one", "apps/one", ""),
        app("two", "apps/two", ""),
        app("solo", "apps/solo", solo_paths),
        app("three", "apps/three", ""),
    ]
    .concat();
    write(&repo, "argocd/apps.yaml", &apps);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "head"]);

    let o = plumb(
        &repo,
        &[
            "preview", "--repo", ".", "--base", "HEAD~1", "--head", "HEAD", "-o", "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON");
    let status = statuses(&v);
    assert_eq!(
        status,
        [
            ("argocd/old", "removed"),
            ("argocd/one", "changed"),
            ("argocd/solo", "skipped"),
            ("argocd/three", "added"),
            ("argocd/two", "changed")
        ],
        "{v:#}"
    );
    for app in ["one", "two"] {
        let a = v["apps"]
            .as_array()
            .expect("apps")
            .iter()
            .find(|a| a["app"] == format!("argocd/{app}"))
            .expect("app");
        let objects: Vec<&str> = a["objects"]
            .as_array()
            .expect("objects")
            .iter()
            .map(|o| o["resource"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            objects,
            [format!("apps/Deployment /{app}-payments-api")],
            "{a:#}"
        );
        let diff = a["objects"][0]["diff"].as_str().unwrap_or("");
        assert!(diff.contains("-      - image: registry.example.com/payments/api:2.14.1\n+      - image: registry.example.com/payments/api:2.15.0"), "{diff}");
    }

    // The comment: the table, the diffs folded, the counts.
    let o = plumb(
        &repo,
        &[
            "preview", "--repo", ".", "--base", "HEAD~1", "--head", "HEAD", "--out", "full.md",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let md = out(&o);
    assert!(md.starts_with("### plumb preview\n\n5 apps: 2 changed, 1 added, 1 removed, 0 unchanged, 1 not rendered"), "{md}");
    assert!(
        md.contains("| `argocd/one` | changed | 0 | 1 | 0 |"),
        "{md}"
    );
    assert!(
        md.contains("<details><summary><code>argocd/three</code> added</summary>"),
        "{md}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("full.md")).expect("--out"),
        md
    );
    for secret in [
        "correct-horse-battery-staple",
        "Y29ycmVjdC1ob3JzZS1iYXR0ZXJ5LXN0YXBsZQ",
    ] {
        assert!(!md.contains(secret), "{md}");
    }
    // --fail-on never: the same report, exit 0.
    let o = plumb(
        &repo,
        &[
            "preview",
            "--repo",
            ".",
            "--base",
            "HEAD~1",
            "--head",
            "HEAD",
            "-o",
            "text",
            "--fail-on",
            "never",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(out(&o).contains("argocd/two changed"), "{}", out(&o));
    // No change: exit 0.
    let o = plumb(
        &repo,
        &["preview", "--repo", ".", "--base", "HEAD", "--head", "HEAD"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));

    // A base that does not exist: one line, exit 2.
    let o = plumb(
        &repo,
        &[
            "preview",
            "--repo",
            ".",
            "--base",
            "no-such-branch",
            "--head",
            "HEAD",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.starts_with("error: --base no-such-branch: ") && e.lines().count() == 1,
        "{e}"
    );
}

#[test]
fn the_preflight_names_the_webhook_that_will_fight_the_change() {
    let d = tmp("preview", "preflight");
    let repo = d.join("repo");
    copy_tree(&root().join("examples/payments/repo"), &repo);
    std::fs::copy(root().join("examples/payments/app.yaml"), {
        std::fs::create_dir_all(repo.join("argocd")).expect("mkdir");
        repo.join("argocd/app.yaml")
    })
    .expect("app");
    // The base: the overlay without its pull-policy patch.
    let kustomization =
        std::fs::read_to_string(repo.join("overlays/prod/kustomization.yaml")).expect("k");
    let patched = kustomization.clone();
    let without: String = kustomization
        .lines()
        .take_while(|l| !l.starts_with("patches:"))
        .map(|l| format!("{l}\n"))
        .collect();
    write(&repo, "overlays/prod/kustomization.yaml", &without);
    std::fs::remove_file(repo.join("overlays/prod/pull-policy.yaml")).expect("rm");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    // The change: the patch that declares imagePullPolicy: IfNotPresent.
    write(&repo, "overlays/prod/kustomization.yaml", &patched);
    std::fs::copy(
        root().join("examples/payments/repo/overlays/prod/pull-policy.yaml"),
        repo.join("overlays/prod/pull-policy.yaml"),
    )
    .expect("patch");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "pull policy"]);

    let live = root().join("examples/payments/live");
    let live = live.to_str().expect("utf-8");
    let o = plumb(
        &repo,
        &[
            "preview", "--repo", ".", "--base", "HEAD~1", "--head", "HEAD", "--live", live,
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let md = out(&o);
    assert!(md.contains("| `argocd/payments-prod` | changed | 0 | 1 | 0 | ⚠ 1 field(s) the cluster will rewrite |"), "{md}");
    assert!(
        md.contains("- apps/Deployment pay-prod/payments-api `/spec/template/spec/containers/0/imagePullPolicy`: rewritten by mutating-webhook platform-policy-mutate (git declares it at overlays/prod/pull-policy.yaml:10)"),
        "{md}"
    );
    // --fail-on preflight: exit 1 for the warning.
    let o = plumb(
        &repo,
        &[
            "preview",
            "--repo",
            ".",
            "--base",
            "HEAD~1",
            "--head",
            "HEAD",
            "--live",
            live,
            "--fail-on",
            "preflight",
            "-o",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON");
    assert_eq!(
        v["apps"][0]["preflight"].as_array().map(Vec::len),
        Some(1),
        "{v:#}"
    );
}

/// An ApplicationSet over the repository's directories (its git generator reads the revision
/// being previewed), and an app-of-apps whose child apps are previewed too.
#[test]
fn applicationsets_and_app_of_apps_are_followed() {
    let d = tmp("preview", "appsets");
    let repo = d.join("repo");
    for svc in ["alpha", "beta"] {
        write(
            &repo,
            &format!("services/{svc}/cm.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {svc}}}\ndata: {{v: '1'}}\n"
            ),
        );
    }
    let appset = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: services, namespace: argocd}\nspec:\n  goTemplate: true\n  generators:\n  - git:\n      repoURL: https://git.example.com/platform.git\n      revision: HEAD\n      directories:\n      - path: services/*\n  template:\n    metadata: {name: 'svc-{{.path.basename}}'}\n    spec:\n      project: default\n      source: {repoURL: https://git.example.com/platform.git, targetRevision: HEAD, path: '{{.path.path}}'}\n      destination: {server: https://kubernetes.default.svc, namespace: '{{.path.basename}}'}\n";
    write(&repo, "argocd/appset.yaml", appset);
    // The root app renders the child apps' manifests (app-of-apps).
    write(&repo, "argocd/root.yaml", &app("root", "children", ""));
    write(
        &repo,
        "children/child.yaml",
        &app("child", "services/alpha", ""),
    );
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    // The change: alpha's ConfigMap, and a new service directory (a new generated app).
    write(
        &repo,
        "services/alpha/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: alpha}\ndata: {v: '2'}\n",
    );
    write(
        &repo,
        "services/gamma/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gamma}\ndata: {v: '1'}\n",
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "head"]);

    let o = plumb(
        &repo,
        &[
            "preview", "--repo", ".", "--base", "HEAD~1", "--head", "HEAD", "-o", "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON");
    let status = statuses(&v);
    assert_eq!(
        status,
        [
            ("argocd/child", "changed"),
            ("argocd/root", "unchanged"),
            ("argocd/svc-alpha", "changed"),
            ("argocd/svc-beta", "unchanged"),
            ("argocd/svc-gamma", "added")
        ],
        "{v:#}"
    );

    // A cycle: the child renders the root.
    write(
        &repo,
        "services/alpha/root.yaml",
        &app("root", "children", ""),
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "cycle"]);
    let o = plumb(
        &repo,
        &[
            "preview", "--repo", ".", "--base", "HEAD~1", "--head", "HEAD",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = err(&o);
    assert!(
        e.contains("app-of-apps cycle: argocd/") && e.lines().count() == 1,
        "{e}"
    );

    // An ApplicationSet whose template does not parse: one line naming the file and the set.
    git(&repo, &["rm", "-q", "services/alpha/root.yaml"]);
    write(
        &repo,
        "argocd/appset.yaml",
        &appset.replace("svc-{{.path.basename}}", "svc-{{.path.basename"),
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "broken"]);
    let o = plumb(
        &repo,
        &[
            "preview", "--repo", ".", "--base", "HEAD~1", "--head", "HEAD",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = err(&o);
    assert!(
        e.starts_with("error: argocd/appset.yaml: ApplicationSet services: ")
            && e.lines().count() == 1,
        "{e}"
    );

    // A clusters generator: a preview reads no cluster Secrets, and says so rather than
    // generating from none.
    write(&repo, "argocd/appset.yaml", &appset.replace("  - git:\n      repoURL: https://git.example.com/platform.git\n      revision: HEAD\n      directories:\n      - path: services/*\n", "  - clusters: {}\n"));
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "clusters"]);
    let o = plumb(
        &repo,
        &["preview", "--repo", ".", "--base", "HEAD", "--head", "HEAD"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = err(&o);
    assert!(
        e.starts_with("error: argocd/appset.yaml: ApplicationSet services: ") && e.contains("spec.generators[0].clusters: this generator lists the clusters Argo CD knows, and no cluster Secrets were given to read") && e.lines().count() == 1,
        "{e}"
    );
}

/// The CI examples' script (`examples/ci/preview.sh`), run as the workflows run it, without
/// posting: the comment file carries the marker it finds its comment by, the exit code is the
/// preflight's, and a missing revision fails the job.
#[test]
fn the_ci_script_writes_the_comment() {
    let d = tmp("preview", "ci-script");
    let repo = d.join("repo");
    write(
        &repo,
        "apps/one/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {k: a}\n",
    );
    write(&repo, "argocd/apps.yaml", &app("one", "apps/one", ""));
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    write(
        &repo,
        "apps/one/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {k: b}\n",
    );
    git(&repo, &["commit", "-qam", "head"]);
    let script = root().join("examples/ci/preview.sh");
    let run = |base: &str| {
        Command::new(&script)
            .current_dir(&repo)
            .env("BASE", base)
            .env("HEAD", "HEAD")
            .env("PLUMB", env!("CARGO_BIN_EXE_plumb"))
            .env_remove("POST")
            .output()
            .expect("the script runs")
    };
    // A change, no preflight warning: exit 0, the comment written.
    let o = run("HEAD~1");
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    let comment = std::fs::read_to_string(repo.join("plumb-preview.md")).expect("comment");
    assert!(
        comment.starts_with("<!-- plumb-preview -->\n### plumb preview\n"),
        "{comment}"
    );
    assert!(
        comment.contains("| `argocd/one` | changed | 0 | 1 | 0 |"),
        "{comment}"
    );
    assert!(repo.join("plumb-preview-full.md").exists());
    // A revision that does not exist fails the job.
    let o = run("no-such-branch");
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

#[path = "common/helm.rs"]
mod helm;

/// A chart `web` at `version`: one ConfigMap, labelled with its chart version as charts are.
fn package_chart(helm: &std::path::Path, dir: &Path, version: &str) {
    let src = dir.join(format!("src-{version}/web"));
    write(
        &src,
        "Chart.yaml",
        &format!("apiVersion: v2\nname: web\nversion: {version}\n"),
    );
    write(&src, "values.yaml", "greeting: hello\n");
    write(
        &src,
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-web\n  labels:\n    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
    );
    helm::run(
        helm,
        dir,
        &[
            "package",
            &src.display().to_string(),
            "-d",
            &dir.join("charts").display().to_string(),
        ],
    );
}

fn git_app(name: &str, path: &str, annotations: &str) -> String {
    app(name, path, annotations)
}

fn chart_app(name: &str, charts: &str, version: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {name}, namespace: argocd}}\nspec:\n  project: default\n  destination: {{server: https://kubernetes.default.svc, namespace: {name}}}\n  source: {{repoURL: '{charts}', chart: web, targetRevision: {version}}}\n---\n"
    )
}

/// The estate: 30 Applications of every kind at the base — 12 kustomize overlays of one
/// shared base, 2 directories, 2 charts from a chart repository, a multi-source app (a chart
/// with values from this repository), a Jsonnet app, an ApplicationSet (git directories ×
/// list: 10), and an app-of-apps with its child. The repository's `origin` names it, so the
/// chart sources are told apart by URL.
#[test]
fn an_estate_of_thirty_applications() {
    let Some(helm) = helm::helm() else {
        println!("SKIP an_estate_of_thirty_applications: helm not found");
        return;
    };
    let d = tmp("preview", "estate");
    for v in ["0.1.0", "0.1.1"] {
        package_chart(&helm, &d, v);
    }
    helm::run(&helm, &d.join("charts"), &["repo", "index", "."]);
    let charts = helm::serve_dir(&d.join("charts"));

    let repo = d.join("repo");
    copy_tree(
        &root().join("examples/payments/repo/base"),
        &repo.join("base"),
    );
    let mut apps = String::new();
    for i in 1..=12 {
        let k = format!("k{i:02}");
        let mut kustomization = overlay(&k);
        if i == 1 {
            kustomization
                .push_str("configMapGenerator:\n- name: settings\n  literals: [mode=blue]\n");
        }
        write(
            &repo,
            &format!("apps/{k}/kustomization.yaml"),
            &kustomization,
        );
        apps.push_str(&git_app(&k, &format!("apps/{k}"), ""));
    }
    let cm = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{k: v}}\n")
    };
    let generate_paths = "  annotations:\n    argocd.argoproj.io/manifest-generate-paths: .\n";
    write(&repo, "dirs/d1/cm.yaml", &cm("d1"));
    write(&repo, "dirs/d2/cm.yaml", &cm("d2"));
    write(&repo, "dirs/child/cm.yaml", &cm("child"));
    apps.push_str(&git_app("d1", "dirs/d1", generate_paths));
    apps.push_str(&git_app("d2", "dirs/d2", ""));
    apps.push_str(&chart_app("h1", &charts, "0.1.0"));
    apps.push_str(&chart_app("h2", &charts, "0.1.0"));
    apps.push_str(&format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: ms, namespace: argocd}}\nspec:\n  project: default\n  destination: {{server: https://kubernetes.default.svc, namespace: ms}}\n  sources:\n  - {{repoURL: '{charts}', chart: web, targetRevision: 0.1.0, helm: {{valueFiles: [$values/values/ms.yaml]}}}}\n  - {{repoURL: 'git@git.example.com:platform.git', targetRevision: HEAD, ref: values}}\n---\n"
    ));
    write(&repo, "values/ms.yaml", "greeting: from-git\n");
    write(
        &repo,
        "jsonnet/j1/main.jsonnet",
        "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'j1' }, data: { n: std.toString(6 * 7) } }\n",
    );
    apps.push_str(&git_app("j1", "jsonnet/j1", generate_paths));
    apps.push_str(&git_app("root", "children", ""));
    write(
        &repo,
        "children/child.yaml",
        &git_app("child", "dirs/child", ""),
    );
    for s in ["a", "b", "c", "d", "e"] {
        write(
            &repo,
            &format!("services/{s}/cm.yaml"),
            &cm(&format!("svc-{s}")),
        );
    }
    write(
        &repo,
        "argocd/services.yaml",
        "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: services, namespace: argocd}\nspec:\n  goTemplate: true\n  generators:\n  - matrix:\n      generators:\n      - git:\n          repoURL: https://git.example.com/platform.git\n          revision: HEAD\n          directories:\n          - path: services/*\n      - list:\n          elements: [{env: dev}, {env: prod}]\n  template:\n    metadata:\n      name: 'svc-{{.path.basename}}-{{.env}}'\n      annotations: {argocd.argoproj.io/manifest-generate-paths: .}\n    spec:\n      project: default\n      source: {repoURL: https://git.example.com/platform.git, targetRevision: HEAD, path: '{{.path.path}}'}\n      destination: {server: https://kubernetes.default.svc, namespace: '{{.path.basename}}-{{.env}}'}\n",
    );
    write(&repo, "argocd/apps.yaml", &apps);
    git(&repo, &["init", "-q", "-b", "main"]);
    git(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            "https://git.example.com/platform.git",
        ],
    );
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);

    // The change: the shared base's image; d3 added; d2 removed.
    let deployment =
        std::fs::read_to_string(repo.join("base/deployment.yaml")).expect("deployment");
    write(
        &repo,
        "base/deployment.yaml",
        &deployment.replace("api:2.14.1", "api:2.15.0"),
    );
    write(&repo, "dirs/d3/cm.yaml", &cm("d3"));
    let apps = apps.replace(&git_app("d2", "dirs/d2", ""), &git_app("d3", "dirs/d3", ""));
    write(&repo, "argocd/apps.yaml", &apps);
    std::fs::remove_dir_all(repo.join("dirs/d2")).expect("rm d2");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "base image 2.15.0, d3 for d2"]);

    // Noise: h2's chart version (only its version label changes) and k01's generated
    // ConfigMap (its hash-suffixed name changes).
    write(
        &repo,
        "argocd/apps.yaml",
        &apps.replace(
            &chart_app("h2", &charts, "0.1.0"),
            &chart_app("h2", &charts, "0.1.1"),
        ),
    );
    let k01 = std::fs::read_to_string(repo.join("apps/k01/kustomization.yaml")).expect("k01");
    write(
        &repo,
        "apps/k01/kustomization.yaml",
        &k01.replace("mode=blue", "mode=green"),
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "noise"]);

    let run = |args: &[&str]| -> Output {
        Command::new(env!("CARGO_BIN_EXE_plumb"))
            .arg("preview")
            .args(["--repo", ".", "--apps", "argocd"])
            .args(args)
            .current_dir(&repo)
            .env("PATH", helm::path_with(&helm, &d))
            .env("PLUMB_REPO_CACHE", d.join("cache"))
            .output()
            .expect("plumb runs")
    };

    // Every app at the base, each rendered (nothing changes between a revision and itself,
    // but each renders: a broken app would say so).
    let o = run(&["--base", "HEAD~2", "--head", "HEAD~2", "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON");
    assert_eq!(v["apps"].as_array().map(Vec::len), Some(30), "{v:#}");

    let o = run(&["--base", "HEAD~2", "--head", "HEAD~1", "-o", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON");
    let by_status = |want: &str| -> Vec<String> {
        statuses(&v)
            .into_iter()
            .filter(|(_, s)| *s == want)
            .map(|(a, _)| a.trim_start_matches("argocd/").to_string())
            .collect()
    };
    let ks: Vec<String> = (1..=12).map(|i| format!("k{i:02}")).collect();
    assert_eq!(by_status("changed"), ks, "{v:#}");
    assert_eq!(by_status("added"), ["d3"]);
    assert_eq!(by_status("removed"), ["d2"]);
    assert_eq!(by_status("unchanged"), ["child", "h1", "h2", "ms", "root"]);
    let mut skipped = vec!["d1".to_string(), "j1".to_string()];
    for s in ["a", "b", "c", "d", "e"] {
        skipped.extend([format!("svc-{s}-dev"), format!("svc-{s}-prod")]);
    }
    assert_eq!(by_status("skipped"), skipped);
    assert!(by_status("error").is_empty(), "{v:#}");
    for a in v["apps"]
        .as_array()
        .expect("apps")
        .iter()
        .filter(|a| a["status"] == "changed")
    {
        let name = a["app"]
            .as_str()
            .unwrap_or("")
            .trim_start_matches("argocd/");
        assert_eq!(a["objects"].as_array().map(Vec::len), Some(1), "{a:#}");
        assert_eq!(
            a["objects"][0]["resource"],
            format!("apps/Deployment /{name}-payments-api")
        );
        let diff = a["objects"][0]["diff"].as_str().unwrap_or("");
        assert!(diff.contains("-      - image: registry.example.com/payments/api:2.14.1\n+      - image: registry.example.com/payments/api:2.15.0"), "{diff}");
    }

    // The same as one HTML page.
    let o = run(&["--base", "HEAD~2", "--head", "HEAD~1", "-o", "html"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let page = out(&o);
    assert!(
        page.starts_with("<!doctype html>")
            && page.contains("argocd/k12</a>")
            && page.contains("api:2.15.0"),
        "{page}"
    );

    // Noise: the chart's version label alone, and a generated name renamed.
    let o = run(&["--base", "HEAD~1", "--head", "HEAD", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON");
    let changed: Vec<(&str, &str)> = statuses(&v)
        .into_iter()
        .filter(|(_, s)| *s == "changed")
        .collect();
    assert_eq!(
        changed,
        [("argocd/h2", "changed"), ("argocd/k01", "changed")],
        "{v:#}"
    );
    let k01 = v["apps"]
        .as_array()
        .expect("apps")
        .iter()
        .find(|a| a["app"] == "argocd/k01")
        .expect("k01");
    assert_eq!(k01["objects"].as_array().map(Vec::len), Some(1), "{k01:#}");
    assert_eq!(k01["objects"][0]["change"], "renamed", "{k01:#}");
    let from = k01["objects"][0]["renamed_from"].as_str().unwrap_or("");
    assert!(
        from.starts_with("k01-settings-")
            && k01["objects"][0]["resource"] != format!("/ConfigMap /{from}"),
        "{k01:#}"
    );
    let o = run(&[
        "--base",
        "HEAD~1",
        "--head",
        "HEAD",
        "-o",
        "json",
        "--ignore-label",
        "helm.sh/chart",
        "--suppress-kind",
        "ConfigMap",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
}

/// A source in another repository is read at its own pinned revision at both sides; one that
/// cannot be reached is a note on its app while the others render, and an error when no app
/// renders.
#[test]
fn sources_in_other_repositories() {
    let d = tmp("preview", "other-repos");
    let other = d.join("other");
    write(
        &other,
        "cm/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {k: pinned}\n",
    );
    git(&other, &["init", "-q", "-b", "main"]);
    git(&other, &["add", "."]);
    git(&other, &["commit", "-qm", "v1"]);
    git(&other, &["tag", "v1"]);
    write(
        &other,
        "cm/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {k: moved-on}\n",
    );
    git(&other, &["commit", "-qam", "later"]);

    let repo = d.join("repo");
    let app_at = |name: &str, url: &str, rev: &str, path: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {name}, namespace: argocd}}\nspec:\n  project: default\n  destination: {{server: https://kubernetes.default.svc, namespace: {name}}}\n  source: {{repoURL: '{url}', targetRevision: {rev}, path: {path}}}\n---\n"
        )
    };
    write(
        &repo,
        "local/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local}\ndata: {k: one}\n",
    );
    write(
        &repo,
        "argocd/local.yaml",
        &app_at("local", "git@git.example.com:platform.git", "main", "local"),
    );
    write(
        &repo,
        "argocd/other.yaml",
        &app_at("other", &other.display().to_string(), "v1", "cm"),
    );
    write(
        &repo,
        "argocd/gone.yaml",
        &app_at("gone", "http://127.0.0.1:9/gone.git", "main", "x"),
    );
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    write(
        &repo,
        "local/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local}\ndata: {k: two}\n",
    );
    git(&repo, &["commit", "-qam", "change"]);

    let run = |extra: &[&str]| -> Output {
        Command::new(env!("CARGO_BIN_EXE_plumb"))
            .args(["preview", "--repo", ".", "--head", "HEAD", "-o", "json"])
            .args(["--repo-url", "https://git.example.com/platform"])
            .args(extra)
            .current_dir(&repo)
            .env("PLUMB_REPO_CACHE", d.join("cache"))
            .output()
            .expect("plumb runs")
    };
    let o = run(&["--base", "HEAD~1"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON");
    assert_eq!(
        statuses(&v),
        [
            ("argocd/gone", "error"),
            ("argocd/local", "changed"),
            ("argocd/other", "unchanged")
        ],
        "{v:#}"
    );
    let gone = &v["apps"][0]["message"];
    assert!(
        gone.as_str().is_some_and(|m| m.contains("127.0.0.1:9")),
        "{gone}"
    );
    // Each side reads `other` at its own pin: the change moves the pin from v1 to main.
    write(
        &repo,
        "argocd/other.yaml",
        &app_at("other", &other.display().to_string(), "main", "cm"),
    );
    git(&repo, &["commit", "-qam", "other at main"]);
    let o = run(&["--base", "HEAD~1", "--apps", "argocd/other.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON");
    let diff = v["apps"][0]["objects"][0]["diff"].as_str().unwrap_or("");
    assert!(diff.contains("-  k: pinned\n+  k: moved-on\n"), "{v:#}");
    // Nothing renders: one line, exit 2.
    let o = run(&["--base", "HEAD~1", "--apps", "argocd/gone.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = err(&o);
    assert!(
        e.starts_with("error: no Application could be rendered; argocd/gone: ")
            && e.lines().count() == 1,
        "{e}"
    );
}
