//! Byte-for-byte pins of the CLI's outputs on every example bundle (`examples/*`) and every
//! diff case of the Argo CD conformance suite (`../shared/conformance/argo-diff`): `plumb
//! diff` (each format), `plumb render` (with and without origins) and `plumb doctor` (each
//! format, and a preflight). The golden files under `tests/golden/` were written by the binary
//! before the application pipeline was made one (issue 11); a refactor must leave every
//! byte — stdout, stderr, exit code — as it was. `UPDATE_GOLDEN=1` rewrites them (only for an
//! intended change, said in its commit).

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn shared_dir() -> PathBuf {
    match std::env::var_os("PLUMB_SHARED_DIR") {
        Some(d) => PathBuf::from(d),
        None => root().join("../shared"),
    }
}

fn golden_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"))
}

/// One run of the binary in `cwd`, as the golden file records it.
fn run(cwd: &Path, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(cwd)
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .env_remove("PLUMB_TIMINGS")
        .env("NO_COLOR", "1")
        .output()
        .expect("plumb runs");
    format!(
        "$ plumb {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        o.status
            .code()
            .map_or_else(|| "signal".to_string(), |c| c.to_string()),
        common::out(&o),
        common::err(&o)
    )
}

/// Compares (or, with `UPDATE_GOLDEN=1`, writes) `golden/<name>.txt`; returns a failure.
fn check(name: &str, actual: &str) -> Option<String> {
    let path = golden_dir().join(format!("{name}.txt"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir golden");
        std::fs::write(&path, actual).expect("write golden");
        return None;
    }
    let want = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            return Some(format!(
                "{}: {e} (UPDATE_GOLDEN=1 writes it)",
                path.display()
            ));
        }
    };
    if want == actual {
        return None;
    }
    let line = want
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| want.lines().count().min(actual.lines().count()));
    Some(format!(
        "{name}: differs from {} at line {}:\n  want: {:?}\n  got:  {:?}",
        path.display(),
        line + 1,
        want.lines().nth(line).unwrap_or("<end>"),
        actual.lines().nth(line).unwrap_or("<end>"),
    ))
}

fn assert_none_failed(failures: Vec<String>, total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} outputs changed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The example bundles: `(directory name, Application name, source path)`.
fn examples() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root().join("examples")).expect("examples/") {
        let dir = entry.expect("entry").path();
        let app = dir.join("app.yaml");
        if !app.is_file() {
            continue;
        }
        let v: serde_json::Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&app).expect("app.yaml"))
                .expect("app.yaml parses");
        let field = |p: &str| {
            v.pointer(p)
                .and_then(|s| s.as_str())
                .unwrap_or("")
                .to_string()
        };
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        out.push((name, field("/metadata/name"), field("/spec/source/path")));
    }
    out.sort();
    out
}

#[test]
fn example_outputs_are_unchanged() {
    let root = root();
    let mut failures = Vec::new();
    let mut total = 0;
    let list = examples();
    assert!(
        list.len() >= 5,
        "expected every example bundle, found {list:?}"
    );
    for (dir, app, path) in list {
        let e = format!("examples/{dir}");
        let (file, repo, live) = (
            format!("{e}/app.yaml"),
            format!("{e}/repo"),
            format!("{e}/live"),
        );
        let runs: Vec<(&str, Vec<&str>)> = vec![
            (
                "diff",
                vec!["diff", "--app", &file, "--repo", &repo, "--live", &live],
            ),
            (
                "diff-unified",
                vec![
                    "diff", "--app", &file, "--repo", &repo, "--live", &live, "-o", "unified",
                ],
            ),
            (
                "diff-json",
                vec![
                    "diff", "--app", &file, "--repo", &repo, "--live", &live, "-o", "json",
                ],
            ),
            (
                "diff-no-app",
                vec!["diff", "--repo", &repo, "--path", &path, "--live", &live],
            ),
            ("render", vec!["render", "--app", &file, "--repo", &repo]),
            (
                "render-origins",
                vec!["render", "--app", &file, "--repo", &repo, "--show-origins"],
            ),
            (
                "doctor",
                vec!["doctor", &app, "--live", &live, "--repo", &repo],
            ),
            (
                "doctor-json",
                vec![
                    "doctor", &app, "--live", &live, "--repo", &repo, "-o", "json",
                ],
            ),
            (
                "doctor-markdown",
                vec![
                    "doctor", &app, "--live", &live, "--repo", &repo, "-o", "markdown",
                ],
            ),
            (
                "doctor-preflight",
                vec![
                    "doctor",
                    "--preflight",
                    "--live",
                    &live,
                    "--repo",
                    &repo,
                    "--path",
                    &path,
                ],
            ),
        ];
        for (what, args) in runs {
            total += 1;
            let got = run(&root, &args);
            failures.extend(check(&format!("examples/{dir}/{what}"), &got));
        }
    }
    assert_none_failed(failures, total);
}

#[test]
fn conformance_outputs_are_unchanged() {
    let dir = shared_dir().join("conformance/argo-diff");
    let text = std::fs::read_to_string(dir.join("cases.yaml"))
        .unwrap_or_else(|e| panic!("cannot read {}: {e} (set PLUMB_SHARED_DIR)", dir.display()));
    let cases: serde_json::Value = serde_saphyr::from_str(&text).expect("cases.yaml parses");
    let cases = cases["cases"].as_array().expect("cases");
    let work = common::tmp("golden", "conformance");
    let mut failures = Vec::new();
    let mut total = 0;
    for c in cases.iter().filter(|c| c["kind"] == "diff") {
        let name = c["name"].as_str().expect("name");
        let (desired, live) = (
            c["desired"].as_str().expect("desired"),
            c["live"].as_str().expect("live"),
        );
        let slug = name.replace('/', "__");
        let mut args = vec!["diff", "--desired", desired, "--live", live];
        // The case's options, as an Application and an argocd-cm beside the fixtures' paths.
        let app_file = work.join(format!("{slug}-app.yaml"));
        let settings_file = work.join(format!("{slug}-argocd-cm.yaml"));
        let app_s;
        let settings_s;
        if c["ignoreDifferences"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
        {
            let app = serde_json::json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                "metadata": {"name": "conformance"},
                "spec": {"ignoreDifferences": c["ignoreDifferences"]}});
            std::fs::write(&app_file, app.to_string()).expect("write app");
            app_s = app_file.to_string_lossy().into_owned();
            args.extend(["--app", app_s.as_str()]);
        }
        if c["ignoreAggregatedRoles"] == true {
            let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "argocd-cm"},
                "data": {"resource.compareoptions": "ignoreAggregatedRoles: true\n"}});
            std::fs::write(&settings_file, cm.to_string()).expect("write argocd-cm");
            settings_s = settings_file.to_string_lossy().into_owned();
            args.extend(["--settings", settings_s.as_str()]);
        }
        for (what, format) in [("argocd", "argocd"), ("json", "json")] {
            total += 1;
            let mut a = args.clone();
            a.extend(["-o", format]);
            // The temporary directory's name varies from run to run: shown as <tmp>.
            let got = run(&dir, &a).replace(&*work.to_string_lossy(), "<tmp>");
            failures.extend(check(&format!("conformance/{slug}/{what}"), &got));
        }
    }
    assert!(total >= 30, "expected the full suite, ran {total}");
    assert_none_failed(failures, total);
}
