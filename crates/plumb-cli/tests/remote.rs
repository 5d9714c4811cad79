//! A remote `repoURL` read by the CLI through the repository cache, as the controller reads
//! it: `plumb diff --app`, `render` and `doctor` without `--repo`, against a real `git daemon`
//! on 127.0.0.1 (a bare repository pushed to between runs). `--repo` still overrides it.

mod common;
use common::{err, git, out, write};
use plumb_render::testing::GitDaemon;
use std::path::Path;
use std::process::{Command, Output};

fn plumb(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(dir)
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .env("PLUMB_REPO_CACHE", cache)
        // git run by plumb: no user or system configuration, never a prompt.
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("plumb runs")
}

fn deployment(image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: {image}\n"
    )
}

/// The live Deployment (in `prod`, tracked by the app) running `image`.
fn live_deployment(image: &str) -> String {
    serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod",
            "annotations": {"argocd.argoproj.io/tracking-id": "web-prod:apps/Deployment:prod/web"}},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}})
    .to_string()
}

fn application(url: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "web-prod", "namespace": "argocd"},
        "spec": {"source": {"repoURL": url, "path": "app", "targetRevision": "main"},
                 "destination": {"namespace": "prod"}}})
}

/// Commits `image` into the work repository and pushes it to the served bare repository.
fn push(work: &Path, origin: &Path, image: &str) -> String {
    write(work, "app/deploy.yaml", &deployment(image));
    git(work, &["add", "-A"]);
    git(work, &["commit", "-qm", image]);
    git(
        work,
        &["push", "-q", origin.to_str().expect("utf-8"), "HEAD:main"],
    );
    git(work, &["rev-parse", "HEAD"])
}

#[test]
fn a_remote_repo_url_is_read_through_the_repository_cache() {
    let root = common::tmp("remote", "cache");
    let (served, cache, live) = (root.join("served"), root.join("cache"), root.join("live"));
    let origin = served.join("web.git");
    std::fs::create_dir_all(&origin).expect("mkdir");
    git(&origin, &["init", "-q", "--bare", "--initial-branch=main"]);
    let work = root.join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    git(&work, &["init", "-q", "-b", "main"]);
    let first = push(&work, &origin, "web:1");
    let daemon = GitDaemon::serve(&served).expect("git daemon");
    let url = daemon.url("web.git");

    write(&root, "app.yaml", &application(&url).to_string());
    write(&live, "deploy.json", &live_deployment("web:0"));

    // diff: the remote is cloned into the cache and its targetRevision compared.
    let o = plumb(
        &root,
        &cache,
        &["diff", "--app", "app.yaml", "--live", "live"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let text = out(&o);
    assert!(
        text.contains("<       - image: web:0\n---\n>       - image: web:1\n"),
        "{text}"
    );
    let mirrors: Vec<_> = std::fs::read_dir(&cache)
        .expect("the cache holds the mirror")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(mirrors.len(), 1, "{mirrors:?}");
    assert_eq!(git(&mirrors[0], &["rev-parse", "main"]), first);

    // A push is fetched by the next run; -o json names the revision rendered.
    let second = push(&work, &origin, "web:2");
    let o = plumb(
        &root,
        &cache,
        &["diff", "--app", "app.yaml", "--live", "live", "-o", "json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let json: serde_json::Value = serde_json::from_str(&out(&o)).expect("json");
    let text = json.to_string();
    assert!(text.contains("web:2") && !text.contains("web:1"), "{text}");
    assert!(text.contains(&second[..7]), "the revision: {text}");

    // render reads it the same way.
    let o = plumb(&root, &cache, &["render", "--app", "app.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(
        text.starts_with("# Directory source app at main (")
            && text.contains(&second[..7])
            && text.contains("image: web:2"),
        "{text}"
    );

    // doctor, with the Application in the snapshot.
    write(&live, "app.json", &application(&url).to_string());
    let o = plumb(&root, &cache, &["doctor", "web-prod", "--live", "live"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(out(&o).contains("web:2"), "{}", out(&o));
    // --fix edits a work tree: never the cache's mirror.
    let o = plumb(
        &root,
        &cache,
        &["doctor", "web-prod", "--live", "live", "--fix"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        err(&o).contains("--fix edits a work tree") && err(&o).contains("--repo"),
        "{}",
        err(&o)
    );

    // --repo still overrides the repoURL.
    let clone = root.join("clone");
    std::fs::create_dir_all(clone.join("app")).expect("mkdir");
    write(&clone, "app/deploy.yaml", &deployment("web:local"));
    let o = plumb(
        &root,
        &cache,
        &[
            "diff", "--app", "app.yaml", "--repo", "clone", "--live", "live",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(out(&o).contains("image: web:local"), "{}", out(&o));

    // A repository the server does not have: one error line naming the Application file.
    write(
        &root,
        "missing.yaml",
        &application(&daemon.url("nope.git")).to_string(),
    );
    let o = plumb(
        &root,
        &cache,
        &["diff", "--app", "missing.yaml", "--live", "live"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = err(&o);
    assert!(
        e.starts_with(&format!(
            "error: missing.yaml: Application web-prod: git clone {}: ",
            daemon.url("nope.git")
        )) && e.trim_end().lines().count() == 1,
        "{e}"
    );
}
