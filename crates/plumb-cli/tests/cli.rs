//! End-to-end tests of the `plumb` binary on real files (the shipped example and
//! temporary inputs). One test binary for all CLI behaviour.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn plumb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .current_dir(repo())
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .output()
        .expect("plumb runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const EXAMPLE: [&str; 7] = [
    "diff",
    "--app",
    "examples/payments/app.yaml",
    "--repo",
    "examples/payments/repo",
    "--live",
    "examples/payments/live",
];

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("plumb-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[test]
fn example_shows_the_webhook_fight_as_argocd_prints_it() {
    let o = plumb(&EXAMPLE);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    let dep = out
        .find("\n===== apps/Deployment pay-prod/payments-api ======\n")
        .expect(&out);
    let after = &out[dep..];
    assert!(
        after.contains(
            "<         imagePullPolicy: Always\n---\n>         imagePullPolicy: IfNotPresent\n"
        ),
        "{out}"
    );
    assert!(out.contains("===== /Service pay-prod/payments-api ======"));
    assert!(out.contains("<     app: payments-api-canary\n---\n>     app: payments-api\n"));
    // replicas is owned by the HPA and ignored by the app's jsonPointers rule.
    assert!(!out.contains("replicas: 5\n---"), "{out}");
    // The ConfigMap is in sync, the CronJob is tracked but not in git: extra.
    assert!(!out.contains("/ConfigMap"));
    assert!(out.contains("===== batch/CronJob pay-prod/payments-reconcile ======\n1,22d0\n"));
    // Sorted by group/kind/namespace/name.
    let order: Vec<usize> = ["/Secret", "/Service", "apps/Deployment", "batch/CronJob"]
        .iter()
        .map(|h| out.find(&format!("===== {h}")).expect(h))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{out}");
}

#[test]
fn secrets_are_never_printed() {
    let needles = ["correct-horse-battery-staple", "rotated-by-hand-at-3am"];
    let b64: Vec<String> = [
        "Y29ycmVjdC1ob3JzZS1iYXR0ZXJ5LXN0YXBsZQ",
        "cm90YXRlZC1ieS1oYW5kLWF0LTNhbQ",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for format in ["argocd", "unified", "json"] {
        let mut args = EXAMPLE.to_vec();
        args.extend(["-o", format]);
        let o = plumb(&args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        for n in needles
            .iter()
            .map(|s| s.to_string())
            .chain(b64.iter().cloned())
        {
            assert!(!all.contains(&n), "{format} output leaks {n}");
        }
        assert!(
            all.contains("++++++++"),
            "{format}: the Secret still shows as changed"
        );
    }
}

#[test]
fn json_output_lists_differing_fields() {
    let mut args = EXAMPLE.to_vec();
    args.extend(["-o", "json"]);
    let o = plumb(&args);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(
        v["summary"],
        serde_json::json!({"inSync": false, "modified": 3, "missing": 0, "extra": 1, "equal": 1})
    );
    let dep = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "Deployment")
        .unwrap();
    assert_eq!(dep["status"], "modified");
    assert_eq!(
        dep["fields"],
        serde_json::json!([{"path": "/spec/template/spec/containers/0/imagePullPolicy", "live": "Always", "desired": "IfNotPresent",
            "declaredAt": {"file": "overlays/prod/pull-policy.yaml", "line": 10}}])
    );
}

#[test]
fn unified_output_and_exit_code_switch() {
    let mut args = EXAMPLE.to_vec();
    args.extend(["-o", "unified", "--exit-code=false"]);
    let o = plumb(&args);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("--- live\n+++ desired\n"));
    assert!(
        out.contains("-        imagePullPolicy: Always\n+        imagePullPolicy: IfNotPresent\n"),
        "{out}"
    );
}

#[test]
fn in_sync_exits_zero_with_no_output() {
    let d = tmp("insync");
    let obj =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: x\ndata:\n  k: v\n";
    std::fs::write(d.join("desired.yaml"), obj).unwrap();
    std::fs::write(d.join("live.yaml"), format!("{obj}  extra: only-live\n")).unwrap();
    let o = plumb(&[
        "diff",
        "--desired",
        d.join("desired.yaml").to_str().unwrap(),
        "--live",
        d.join("live.yaml").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "");
    // A missing object is a difference: everything on the desired side.
    std::fs::write(d.join("empty.yaml"), "").unwrap();
    let o = plumb(&[
        "diff",
        "--desired",
        d.join("desired.yaml").to_str().unwrap(),
        "--live",
        d.join("empty.yaml").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).starts_with("\n===== /ConfigMap x/a ======\n0a1,7\n> apiVersion: v1\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn external_diff_tool_is_used_when_set() {
    let o = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(EXAMPLE)
        .current_dir(repo())
        .env("KUBECTL_EXTERNAL_DIFF", "diff -u")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(out.contains("payments-api-live.yaml"), "{out}");
    assert!(
        out.contains("+        imagePullPolicy: IfNotPresent"),
        "{out}"
    );
}

fn assert_one_line_error(o: &Output, must_contain: &[&str]) {
    assert_eq!(
        o.status.code(),
        Some(2),
        "stdout: {} stderr: {}",
        stdout(o),
        stderr(o)
    );
    let err = stderr(o);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error: ")).count(),
        1,
        "{err}"
    );
    for m in must_contain {
        assert!(err.contains(m), "missing {m:?} in {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_is_one_line_exit_two() {
    let d = tmp("bad");
    let good = d.join("good.yaml");
    std::fs::write(
        &good,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    )
    .unwrap();
    let p = |n: &str| d.join(n).to_str().unwrap().to_string();

    std::fs::write(
        d.join("broken.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a\n",
    )
    .unwrap();
    assert_one_line_error(
        &plumb(&[
            "diff",
            "--desired",
            &p("broken.yaml"),
            "--live",
            &p("good.yaml"),
        ]),
        &["broken.yaml:4:", "invalid YAML"],
    );

    std::fs::write(
        d.join("broken.json"),
        "{\"apiVersion\": \"v1\",\n \"kind\": }",
    )
    .unwrap();
    assert_one_line_error(
        &plumb(&[
            "diff",
            "--desired",
            &p("good.yaml"),
            "--live",
            &p("broken.json"),
        ]),
        &["broken.json:2:10: invalid JSON"],
    );

    std::fs::write(
        d.join("noname.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
    )
    .unwrap();
    assert_one_line_error(
        &plumb(&[
            "diff",
            "--desired",
            &p("noname.yaml"),
            "--live",
            &p("good.yaml"),
        ]),
        &["noname.yaml:1: not a Kubernetes object: missing metadata.name"],
    );

    std::fs::write(d.join("twice.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n").unwrap();
    assert_one_line_error(
        &plumb(&[
            "diff",
            "--desired",
            &p("twice.yaml"),
            "--live",
            &p("good.yaml"),
        ]),
        &["declared twice", "twice.yaml:1", "twice.yaml:6"],
    );

    assert_one_line_error(
        &plumb(&[
            "diff",
            "--desired",
            &p("nope.yaml"),
            "--live",
            &p("good.yaml"),
        ]),
        &["nope.yaml: cannot read: no such file or directory"],
    );

    let o = plumb(&[
        "diff",
        "--desired",
        &p("good.yaml"),
        "--live",
        &p("good.yaml"),
        "-o",
        "xml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid value 'xml'"));

    let app = |rule: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: a\nspec:\n  ignoreDifferences:\n  - {rule}\n"
        )
    };
    std::fs::write(
        d.join("app-ptr.yaml"),
        app("{kind: ConfigMap, jsonPointers: [data]}"),
    )
    .unwrap();
    assert_one_line_error(
        &plumb(&[
            "diff",
            "--app",
            &p("app-ptr.yaml"),
            "--desired",
            &p("good.yaml"),
            "--live",
            &p("good.yaml"),
        ]),
        &["spec.ignoreDifferences[0]", "invalid JSON pointer 'data'"],
    );
    std::fs::write(
        d.join("app-jq.yaml"),
        app("{kind: ConfigMap, jqPathExpressions: ['.data[']}"),
    )
    .unwrap();
    assert_one_line_error(
        &plumb(&[
            "diff",
            "--app",
            &p("app-jq.yaml"),
            "--desired",
            &p("good.yaml"),
            "--live",
            &p("good.yaml"),
        ]),
        &[
            "spec.ignoreDifferences[0]",
            "jq expression '.data['",
            "compile error",
        ],
    );
    std::fs::write(
        d.join("app-slow.yaml"),
        app("{kind: ConfigMap, jqPathExpressions: ['last(range(1e15)) as $x | .data']}"),
    )
    .unwrap();
    assert_one_line_error(
        &plumb(&[
            "diff",
            "--app",
            &p("app-slow.yaml"),
            "--desired",
            &p("good.yaml"),
            "--live",
            &p("good.yaml"),
            "--jq-timeout",
            "200ms",
        ]),
        &["spec.ignoreDifferences[0]", "timed out"],
    );
}

#[test]
fn settings_overrides_apply() {
    let d = tmp("settings");
    let p = |n: &str| d.join(n).to_str().unwrap().to_string();
    std::fs::write(
        d.join("desired.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: x\ndata:\n  k: git\n",
    )
    .unwrap();
    std::fs::write(d.join("live.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: x\ndata:\n  k: cluster\n").unwrap();
    let o = plumb(&[
        "diff",
        "--desired",
        &p("desired.yaml"),
        "--live",
        &p("live.yaml"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    std::fs::write(d.join("argocd-cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\ndata:\n  resource.customizations.ignoreDifferences.ConfigMap: |\n    jsonPointers:\n    - /data/k\n").unwrap();
    let o = plumb(&[
        "diff",
        "--desired",
        &p("desired.yaml"),
        "--live",
        &p("live.yaml"),
        "--settings",
        &p("argocd-cm.yaml"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn blame_names_each_values_writer() {
    let o = plumb(&[
        "blame",
        "deployments.apps/payments-api",
        "-n",
        "pay-prod",
        "--live",
        "examples/payments/live",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let replicas = out
        .lines()
        .find(|l| l.trim_start().starts_with("replicas:"))
        .expect("replicas line");
    assert!(
        replicas.contains("kube-controller-manager (Update /scale)"),
        "{replicas}"
    );
    assert!(!out.contains("managedFields"), "{out}");
    let o = plumb(&["blame", "nonsense", "--live", "examples/payments/live"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("expected KIND/NAME"), "{}", stderr(&o));
    let o = plumb(&[
        "blame",
        "Deployment/nope",
        "-n",
        "pay-prod",
        "--live",
        "examples/payments/live",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn doctor_explains_the_webhook_fight() {
    let o = plumb(&[
        "doctor",
        "payments-prod",
        "--live",
        "examples/payments/live",
        "--repo",
        "examples/payments/repo",
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(doc["app"], "payments-prod");
    assert_eq!(doc["verdict"], "loop");
    assert_eq!(doc["loop"]["syncs"], 5, "{doc:#}");
    let finding = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["path"] == "/spec/template/spec/containers/0/imagePullPolicy")
        .expect("the pull policy finding");
    assert_eq!(finding["resource"]["kind"], "Deployment");
    assert_eq!(finding["desired"], "IfNotPresent");
    assert_eq!(finding["live"], "Always");
    assert_eq!(finding["cause"]["type"], "mutating-webhook");
    assert_eq!(finding["cause"]["name"], "platform-policy-mutate");
    assert_eq!(
        finding["declaredAt"]["file"],
        "overlays/prod/pull-policy.yaml"
    );
    assert_eq!(finding["declaredAt"]["line"], 10);
    let fixes: Vec<&str> = finding["fixes"]
        .as_array()
        .expect("fixes")
        .iter()
        .map(|f| f["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        fixes,
        ["stop-declaring", "ignore-differences", "server-side-diff"]
    );
    assert!(!stdout(&o).contains("correct-horse"), "no Secret value");

    let text = plumb(&[
        "doctor",
        "payments-prod",
        "--live",
        "examples/payments/live",
        "--repo",
        "examples/payments/repo",
    ]);
    assert_eq!(text.status.code(), Some(1));
    assert!(
        stdout(&text).contains("git rm overlays/prod/pull-policy.yaml"),
        "{}",
        stdout(&text)
    );

    let missing = plumb(&["doctor", "nope", "--live", "examples/payments/live"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("\"nope\" not found"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn preflight_catches_the_fight_before_merge() {
    let args = [
        "doctor",
        "--preflight",
        "--repo",
        "examples/payments/repo",
        "--path",
        "overlays/prod",
        "--live",
        "examples/payments/live",
        "-o",
        "json",
    ];
    let o = plumb(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let found: Vec<(String, String)> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap_or("").to_string(),
                f["cause"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "/spec/replicas".to_string(),
                "kube-controller-manager".to_string()
            ),
            (
                "/spec/template/spec/containers/0/imagePullPolicy".to_string(),
                "platform-policy-mutate".to_string()
            )
        ],
        "{doc:#}"
    );
    // The fixed overlay (no pull-policy patch, no replicas) has nothing to warn about.
    let d = tmp("preflight-fixed");
    std::fs::write(
        d.join("deploy.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: payments-api\n  namespace: pay-prod\nspec:\n  template:\n    spec:\n      containers:\n      - name: api\n        image: registry.example.com/payments/api:2.14.1\n",
    )
    .unwrap();
    let o = plumb(&[
        "doctor",
        "--preflight",
        "--desired",
        d.join("deploy.yaml").to_str().unwrap(),
        "--live",
        "examples/payments/live",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn doctor_fix_writes_the_seeds_git_change() {
    let d = tmp("doctor-fix");
    let copy = Command::new("cp")
        .args(["-r", "examples/payments/repo"])
        .arg(d.join("repo"))
        .current_dir(repo())
        .status()
        .expect("cp");
    assert!(copy.success());
    let repo_dir = d.join("repo");
    let o = plumb(&[
        "doctor",
        "payments-prod",
        "--live",
        "examples/payments/live",
        "--repo",
        repo_dir.to_str().unwrap(),
        "--fix",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("fix: deleted overlays/prod/pull-policy.yaml"),
        "{}",
        stderr(&o)
    );
    assert!(!repo_dir.join("overlays/prod/pull-policy.yaml").exists());
    let k = std::fs::read_to_string(repo_dir.join("overlays/prod/kustomization.yaml")).unwrap();
    assert!(
        !k.contains("pull-policy.yaml") && !k.contains("save registry traffic"),
        "{k}"
    );
    // Drift (the hand-edited Service selector) is fixed by a sync, not by editing git.
    let svc = std::fs::read_to_string(repo_dir.join("base/service.yaml")).unwrap();
    assert!(svc.contains("app: payments-api"), "{svc}");
    // The fixed overlay still renders, and kubectl agrees when it is there.
    let r = plumb(&[
        "render",
        "--repo",
        repo_dir.to_str().unwrap(),
        "--path",
        "overlays/prod",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(!stdout(&r).contains("imagePullPolicy"), "{}", stdout(&r));
    // Asked again before a sync: the field is a removal the next sync makes, not a change to git.
    let again = plumb(&[
        "doctor",
        "payments-prod",
        "--live",
        "examples/payments/live",
        "--repo",
        repo_dir.to_str().unwrap(),
        "-o",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&again.stdout).expect("json");
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/spec/template/spec/containers/0/imagePullPolicy")
        .expect("the imagePullPolicy finding");
    assert_eq!(finding["fixes"][0]["type"], "sync", "{finding}");
    assert!(
        finding["fixes"][0]["note"]
            .as_str()
            .unwrap()
            .contains("git no longer declares this field"),
        "{finding}"
    );
}

/// A relative `repoURL` of an Application read from a snapshot is refused, naming the file
/// and the field, rather than read from the working directory (where it happens to exist
/// here); `--repo` still supplies the repository.
#[test]
fn a_snapshot_application_with_a_relative_repo_url_is_refused() {
    let d = tmp("relative-repo-url");
    let live = d.join("live");
    std::fs::create_dir_all(&live).expect("mkdir");
    for entry in std::fs::read_dir(repo().join("examples/payments/live")).expect("example") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), live.join(entry.file_name())).expect("copy");
    }
    let app_file = live.join("application-payments-prod.json");
    let mut app: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&app_file).expect("read")).expect("json");
    app["spec"]["source"]["repoURL"] = "examples/payments/repo".into();
    std::fs::write(&app_file, app.to_string()).expect("write");
    let live_arg = live.to_str().expect("utf-8");
    let o = plumb(&["doctor", "payments-prod", "--live", live_arg]);
    assert_one_line_error(
        &o,
        &[
            &app_file.display().to_string(),
            "Application payments-prod: spec.source: repoURL \"examples/payments/repo\" is a relative path",
        ],
    );
    let o = plumb(&[
        "doctor",
        "payments-prod",
        "--live",
        live_arg,
        "--repo",
        "examples/payments/repo",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// Each command's own help opens with the description `plumb --help` lists for it: the
/// commands' arguments are built only for the command run, and nothing built then (a
/// flattened argument group's doc comment) may replace what the list says.
#[test]
fn each_command_help_opens_with_its_listed_description() {
    let top = plumb(&["--help"]);
    assert_eq!(top.status.code(), Some(0), "{}", stderr(&top));
    let text = stdout(&top);
    let listed: Vec<(&str, &str)> = text
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.trim().split_once(char::is_whitespace))
        .map(|(name, about)| (name, about.trim()))
        .filter(|(name, _)| *name != "help")
        .collect();
    assert!(listed.len() >= 11, "commands listed: {listed:?}");
    for (name, about) in listed {
        let o = plumb(&[name, "-h"]);
        assert_eq!(o.status.code(), Some(0), "{name} -h: {}", stderr(&o));
        let first = stdout(&o).lines().next().unwrap_or_default().to_string();
        assert_eq!(
            first, about,
            "`plumb {name} -h` opens with another description"
        );
    }
}
