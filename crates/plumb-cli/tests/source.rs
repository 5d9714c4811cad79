//! End-to-end tests of desired state read from sources: git revisions (real
//! repositories made with the `git` CLI), plain directories, Argo CD's directory rules,
//! kustomize (native and fallback), Helm's absence, source locations, safety.

mod common;
use common::{TmpDir, err, git, out, write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn plumb_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(dir)
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .output()
        .expect("plumb runs")
}

fn tmp(name: &str) -> TmpDir {
    common::tmp("src", name)
}

fn deployment(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: {image}\n"
    )
}

/// A repository with two commits of `app/deploy.yaml`, an uncommitted edit and an
/// untracked file on top.
fn two_commit_repo(name: &str) -> (TmpDir, String, String) {
    let r = tmp(name);
    git(&r, &["init", "-q", "-b", "main"]);
    write(&r, "app/deploy.yaml", &deployment("web", "web:1"));
    git(&r, &["add", "."]);
    git(&r, &["commit", "-qm", "v1"]);
    let v1 = git(&r, &["rev-parse", "HEAD"]);
    write(&r, "app/deploy.yaml", &deployment("web", "web:2"));
    git(&r, &["commit", "-qam", "v2"]);
    let v2 = git(&r, &["rev-parse", "HEAD"]);
    write(&r, "app/deploy.yaml", &deployment("web", "web:dirty"));
    write(&r, "app/untracked.yaml", &deployment("untracked", "x:1"));
    (r, v1, v2)
}

#[test]
fn render_reads_the_revision_not_the_work_tree() {
    let (r, v1, v2) = two_commit_repo("revisions");
    let rs = r.to_str().expect("utf-8");
    let o = plumb_in(&r, &["render", "--repo", rs, "--path", "app"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("image: web:2"), "{text}");
    assert!(
        !text.contains("dirty") && !text.contains("untracked"),
        "{text}"
    );
    assert!(text.contains(&format!("at HEAD ({})", &v2[..7])), "{text}");

    for rev in ["HEAD~1", &v1[..8], "main~1"] {
        let o = plumb_in(
            &r,
            &["render", "--repo", rs, "--revision", rev, "--path", "app"],
        );
        assert_eq!(o.status.code(), Some(0), "{rev}: {}", err(&o));
        assert!(out(&o).contains("image: web:1"), "{rev}: {}", out(&o));
        assert!(
            out(&o).contains(&format!("at {rev} ({})", &v1[..7])),
            "{}",
            out(&o)
        );
    }
    git(&r, &["tag", "-a", "v1.0", "-m", "release", &v1]);
    let o = plumb_in(
        &r,
        &[
            "render",
            "--repo",
            rs,
            "--revision",
            "v1.0",
            "--path",
            "app",
        ],
    );
    assert!(out(&o).contains("image: web:1"), "{}", err(&o));

    let o = plumb_in(
        &r,
        &[
            "render",
            "--repo",
            rs,
            "--revision",
            "nope",
            "--path",
            "app",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("unknown revision \"nope\""), "{}", err(&o));
    assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
}

#[test]
fn a_plain_directory_is_the_working_tree() {
    let d = tmp("plain");
    write(&d, "app/deploy.yaml", &deployment("web", "web:3"));
    let o = plumb_in(&d, &["render", "--path", "app"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("at working tree"), "{}", out(&o));
    assert!(out(&o).contains("image: web:3"));
}

#[test]
fn directory_rules_recurse_include_exclude() {
    let d = tmp("dirrules");
    write(&d, "app/a.yaml", &deployment("a", "a:1"));
    write(&d, "app/skip.yml", &deployment("skip", "s:1"));
    write(&d, "app/notes.txt", "not a manifest");
    write(
        &d,
        "app/sub/b.json",
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}"#,
    );
    let names = |app: &str| -> Vec<String> {
        write(&d, "app.yaml", app);
        let o = plumb_in(&d, &["render", "--app", "app.yaml"]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        out(&o)
            .lines()
            .filter_map(|l| l.strip_prefix("  name: "))
            .map(String::from)
            .collect()
    };
    let app = |dir: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: t\nspec:\n  source:\n    repoURL: .\n    path: app\n{dir}"
        )
    };
    assert_eq!(names(&app("")), ["a", "skip"], "no recursion by default");
    assert_eq!(
        names(&app("    directory:\n      recurse: true\n")),
        ["a", "skip", "b"]
    );
    assert_eq!(
        names(&app(
            "    directory:\n      recurse: true\n      exclude: '{skip.yml,sub/*}'\n"
        )),
        ["a"]
    );
    assert_eq!(
        names(&app(
            "    directory:\n      recurse: true\n      include: '*.json'\n"
        )),
        ["b"]
    );
}

#[test]
fn a_document_that_is_not_an_object_names_file_and_line() {
    let d = tmp("notobject");
    write(&d, "app/ok.yaml", &deployment("a", "a:1"));
    write(
        &d,
        "app/bad.yaml",
        &format!("{}---\nfoo: bar\n", deployment("b", "b:1")),
    );
    let o = plumb_in(&d, &["render", "--path", "app"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    let e = err(&o);
    assert!(e.starts_with("error: app/bad.yaml:12"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn sources_never_leave_the_repository() {
    let d = tmp("escape");
    write(&d, "outside.yaml", &deployment("outside", "o:1"));
    write(
        &d,
        "repo/app/kustomization.yaml",
        "resources:\n- ../../outside.yaml\n",
    );
    let o = plumb_in(&d, &["render", "--repo", "repo", "--path", "app"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(err(&o).contains("leaves the repository"), "{}", err(&o));

    write(
        &d,
        "repo/abs/kustomization.yaml",
        "resources:\n- /etc/hostname\n",
    );
    let o = plumb_in(&d, &["render", "--repo", "repo", "--path", "abs"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("/etc/hostname"), "{}", err(&o));

    std::fs::create_dir_all(d.join("repo/link")).expect("mkdir");
    std::os::unix::fs::symlink("../../outside.yaml", d.join("repo/link/out.yaml"))
        .expect("symlink");
    let o = plumb_in(&d, &["render", "--repo", "repo", "--path", "link"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(err(&o).contains("leaves the repository"), "{}", err(&o));

    let o = plumb_in(&d, &["render", "--repo", "repo", "--path", "../outside"]);
    assert_eq!(o.status.code(), Some(2));

    write(
        &d,
        "repo/cycle/a/kustomization.yaml",
        "resources:\n- ../b\n",
    );
    write(
        &d,
        "repo/cycle/b/kustomization.yaml",
        "resources:\n- ../a\n",
    );
    let o = plumb_in(&d, &["render", "--repo", "repo", "--path", "cycle/a"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("cycle"), "{}", err(&o));
}

#[test]
fn helm_without_helm_is_a_clear_error() {
    let d = tmp("helm");
    write(
        &d,
        "chart/Chart.yaml",
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    );
    write(
        &d,
        "chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    );
    let o = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(["render", "--path", "chart"])
        .current_dir(&d)
        .env("PATH", d.join("no-such-bin"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("`helm` is not on PATH"), "{}", err(&o));
}

#[test]
fn unsupported_kustomize_features_fall_back_to_the_binary() {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("REQUIRE_KUBECTL").is_none(),
            "kubectl is required"
        );
        eprintln!("skipped: kubectl not on PATH");
        return;
    }
    let root = repo_root();
    let o = plumb_in(
        &root,
        &[
            "render",
            "--path",
            "tests/kustomize-fallback/05-builtin-transformers-field",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("source locations are unavailable"),
        "{}",
        err(&o)
    );
    let o = plumb_in(
        &root,
        &[
            "render",
            "--path",
            "tests/kustomize/71-payments-prod",
            "--renderer",
            "kustomize-binary",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("imagePullPolicy: IfNotPresent"));
}

#[test]
fn origins_name_the_patch_that_sets_a_field() {
    let root = repo_root();
    let o = plumb_in(
        &root,
        &[
            "render",
            "--path",
            "examples/payments/repo/overlays/prod",
            "--show-origins",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    let line = text
        .lines()
        .find(|l| l.contains("imagePullPolicy:"))
        .expect("imagePullPolicy rendered");
    assert!(
        line.contains("# examples/payments/repo/overlays/prod/pull-policy.yaml:"),
        "{line}"
    );
    let image = text.lines().find(|l| l.contains("image:")).expect("image");
    assert!(
        image.contains("# examples/payments/repo/base/deployment.yaml:"),
        "{image}"
    );
    assert!(
        !text.contains("correct-horse") && !text.contains("Y29ycmVjd"),
        "secret values are never printed"
    );
}

#[test]
fn diff_json_says_where_git_declares_each_field() {
    let root = repo_root();
    let o = plumb_in(
        &root,
        &[
            "diff",
            "--app",
            "examples/payments/app.yaml",
            "--repo",
            "examples/payments/repo",
            "--live",
            "examples/payments/live",
            "-o",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let doc: serde_json::Value = serde_json::from_str(&out(&o)).expect("json");
    let dep = doc["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["kind"] == "Deployment")
        .expect("deployment");
    let field = dep["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .find(|f| {
            f["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("/imagePullPolicy"))
        })
        .expect("imagePullPolicy differs");
    assert_eq!(
        field["declaredAt"]["file"], "overlays/prod/pull-policy.yaml",
        "{field}"
    );
    assert!(
        field["declaredAt"]["line"].as_u64().is_some_and(|l| l > 0),
        "{field}"
    );
}
