//! `plumb health`: the Lua test set (Argo CD's `resource_customizations` layout with
//! `health_test.yaml` expectations), settings scripts, built-in and generic checks, JSON output.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/health")
}

fn plumb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .output()
        .expect("plumb runs")
}

fn json_rows(o: &Output) -> Vec<Value> {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON output");
    v.as_array().expect("an array").clone()
}

/// Every `<group>/<kind>/health_test.yaml` under the test set: (input file, status, message).
fn expectations(root: &Path) -> Vec<(PathBuf, String, String)> {
    let mut out = Vec::new();
    let mut groups: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("test set")
        .map(|e| e.expect("entry").path())
        .collect();
    groups.sort();
    for g in groups {
        let mut kinds: Vec<PathBuf> = std::fs::read_dir(&g)
            .expect("group dir")
            .map(|e| e.expect("entry").path())
            .collect();
        kinds.sort();
        for k in kinds {
            let text =
                std::fs::read_to_string(k.join("health_test.yaml")).expect("health_test.yaml");
            let tests: Value = serde_saphyr::from_str(&text).expect("YAML");
            for t in tests["tests"].as_array().expect("tests") {
                out.push((
                    k.join(t["inputPath"].as_str().expect("inputPath")),
                    t["healthStatus"]["status"]
                        .as_str()
                        .expect("status")
                        .to_owned(),
                    t["healthStatus"]["message"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned(),
                ));
            }
        }
    }
    out
}

#[test]
fn lua_test_set_in_argo_layout() {
    let root = fixtures().join("resource_customizations");
    let cases = expectations(&root);
    let scripts = cases
        .iter()
        .map(|(p, _, _)| p.parent().and_then(Path::parent))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert!(scripts >= 20, "only {scripts} scripts");
    let mut args = vec![
        "health".to_owned(),
        "--resource-customizations".to_owned(),
        root.display().to_string(),
        "-o".to_owned(),
        "json".to_owned(),
    ];
    args.extend(cases.iter().map(|(p, _, _)| p.display().to_string()));
    // One more object of a kind without a script: bad scripts leave it unaffected.
    args.push(fixtures().join("objects/mixed.yaml").display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let rows = json_rows(&plumb(&args));
    // The infinite loop is stopped within its limit (0.5 s), scripts run in parallel.
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    assert_eq!(rows.len(), cases.len() + 7);
    for ((path, status, message), row) in cases.iter().zip(&rows) {
        assert_eq!(row["status"], status.as_str(), "{}: {row}", path.display());
        assert_eq!(
            row["message"],
            message.as_str(),
            "{}: {row}",
            path.display()
        );
        assert_eq!(row["source"], "lua", "{}", path.display());
    }
    let web = &rows[cases.len()];
    assert_eq!(
        (
            web["kind"].as_str(),
            web["status"].as_str(),
            web["source"].as_str()
        ),
        (Some("Deployment"), Some("Healthy"), Some("builtin"))
    );
}

#[test]
fn builtin_generic_none_and_settings() {
    let objects = fixtures().join("objects/mixed.yaml");
    let objects = objects.display().to_string();
    let row = |r: &Value| {
        format!(
            "{}/{} {}/{} {} {:?} {}",
            r["group"].as_str().unwrap_or("?"),
            r["kind"].as_str().unwrap_or("?"),
            r["namespace"].as_str().unwrap_or("?"),
            r["name"].as_str().unwrap_or("?"),
            r["status"].as_str().unwrap_or("?"),
            r["message"].as_str().unwrap_or("?"),
            r["source"].as_str().unwrap_or("?"),
        )
    };
    let rows: Vec<String> = json_rows(&plumb(&["health", "-o", "json", &objects]))
        .iter()
        .map(row)
        .collect();
    assert_eq!(
        rows,
        [
            "apps/Deployment demo/web Healthy \"\" builtin",
            "/ConfigMap demo/settings Healthy \"\" none",
            "widgets.example.com/Widget demo/w1 Degraded \"bad widget size\" generic",
            "cert-manager.io/Certificate demo/tls Healthy \"Certificate is up to date and has not expired\" builtin",
            "widgets.example.com/Gadget demo/g1 Healthy \"\" none",
            "apiextensions.k8s.io/CustomResourceDefinition /widgets.widgets.example.com Progressing \"Waiting for the CRD to be established\" builtin",
            "widgets.example.com/Widget demo/ignored Healthy \"\" none",
        ]
    );
    // With the ConfigMap: its scripts win over built-in checks and the generic one.
    let cm = fixtures().join("argocd-cm.yaml").display().to_string();
    let o = plumb(&["health", "--settings", &cm, &objects]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        text,
        "apps/Deployment demo/web Healthy\n\
         /ConfigMap demo/settings Healthy\n\
         widgets.example.com/Widget demo/w1 Degraded bad widget size\n\
         cert-manager.io/Certificate demo/tls Suspended overridden by the ConfigMap\n\
         widgets.example.com/Gadget demo/g1 Progressing Gadget is Spinning\n\
         apiextensions.k8s.io/CustomResourceDefinition /widgets.widgets.example.com Progressing Waiting for the CRD to be established\n\
         widgets.example.com/Widget demo/ignored Healthy\n"
    );
}

#[test]
fn a_bad_settings_file_is_an_error() {
    let dir = std::env::temp_dir().join(format!("plumb-health-bad-cm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let cm = dir.join("cm.yaml");
    std::fs::write(&cm, "data: [1, 2]\n").expect("write");
    let objects = fixtures().join("objects/mixed.yaml");
    let o = plumb(&[
        "health",
        "--settings",
        &cm.display().to_string(),
        &objects.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err, format!("error: {}: data: not a map\n", cm.display()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `plumb app sync` takes the controller's health-script flags; the directory is read before
/// anything connects, so a missing one is a one-line error (exit 2) even without a cluster.
#[test]
fn app_sync_takes_the_health_script_flags() {
    let missing = std::env::temp_dir().join(format!("plumb-no-scripts-{}", std::process::id()));
    let o = plumb(&[
        "app",
        "sync",
        "demo",
        "--settings-configmap",
        "argocd/argocd-cm",
        "--resource-customizations",
        &missing.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains(&missing.display().to_string()),
        "{err}"
    );
}

/// A scratch directory, removed at the end of the test.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("plumb-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
        std::fs::write(&p, text).expect("write");
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The payments example's snapshot, copied (less the files named) into `dir`.
fn payments_live(dir: &Path, without: &[&str]) {
    std::fs::create_dir_all(dir).expect("live dir");
    let live = repo_root().join("examples/payments/live");
    for e in std::fs::read_dir(&live).expect("payments live") {
        let p = e.expect("entry").path();
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        if !without.contains(&name.as_str()) {
            std::fs::copy(&p, dir.join(&name)).expect("copy");
        }
    }
}

fn doctor(live: &Path, extra: &[&str]) -> Output {
    let repo = repo_root().join("examples/payments/repo");
    let mut args = vec![
        "doctor".to_owned(),
        "payments-prod".to_owned(),
        "--live".to_owned(),
        live.display().to_string(),
        "--repo".to_owned(),
        repo.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    plumb(&args)
}

fn health_rows(o: &Output) -> (String, Vec<Value>) {
    assert_eq!(
        o.status.code(),
        Some(1),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON output");
    let h = &v["health"];
    (
        h["status"].as_str().expect("app health").to_owned(),
        h["resources"].as_array().expect("resources").clone(),
    )
}

fn row<'a>(rows: &'a [Value], kind: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} row in {rows:?}"))
}

/// `plumb doctor` judges health with the one `plumb_health` entry: user Lua scripts from
/// `--resource-customizations` win over the built-in checks, in every output format; a Secret
/// reaches a script masked, so its value is never printed.
#[test]
fn doctor_reports_health_with_the_user_scripts() {
    let s = Scratch::new("doctor-health-lua");
    payments_live(&s.0.join("live"), &[]);
    s.write(
        "scripts/_/Service/health.lua",
        "hs = {}\nhs.status = \"Degraded\"\nhs.message = \"no endpoints for \" .. obj.metadata.name\nreturn hs\n",
    );
    s.write(
        "scripts/_/Secret/health.lua",
        "return {status = \"Progressing\", message = \"password \" .. tostring(obj.data.password)}\n",
    );
    let scripts = s.0.join("scripts").display().to_string();
    let live = s.0.join("live");

    // Without scripts: the built-in checks.
    let (app, rows) = health_rows(&doctor(&live, &["-o", "json"]));
    assert_eq!(app, "Healthy");
    assert_eq!(row(&rows, "Service")["source"], "builtin");
    assert_eq!(row(&rows, "Secret")["source"], "none");

    let (app, rows) = health_rows(&doctor(
        &live,
        &["-o", "json", "--resource-customizations", &scripts],
    ));
    assert_eq!(app, "Degraded");
    let svc = row(&rows, "Service");
    assert_eq!(
        (&svc["status"], &svc["message"], &svc["source"]),
        (
            &Value::from("Degraded"),
            &Value::from("no endpoints for payments-api"),
            &Value::from("lua")
        )
    );
    let secret = row(&rows, "Secret");
    assert_eq!(secret["source"], "lua");
    let message = secret["message"].as_str().expect("message");
    assert!(message.starts_with("password +"), "{message}");

    for format in ["text", "markdown", "json"] {
        let o = doctor(
            &live,
            &["-o", format, "--resource-customizations", &scripts],
        );
        let out = String::from_utf8_lossy(&o.stdout);
        for secret in ["cm90YXRlZC1ieS1oYW5kLWF0LTNhbQ", "rotated-by-hand-at-3am"] {
            assert!(!out.contains(secret), "{format} prints the secret:\n{out}");
        }
        match format {
            "text" => {
                assert!(out.contains("\nhealth: Degraded\n"), "{out}");
                assert!(
                    out.contains("\n  /Service pay-prod/payments-api Degraded no endpoints for payments-api\n"),
                    "{out}"
                );
            }
            "markdown" => assert!(out.contains("Health: **Degraded**"), "{out}"),
            _ => {}
        }
    }
}

/// A resource absent from the cluster is Missing and does not make the app worse (as Argo CD
/// aggregates); `--settings-configmap` is read from the snapshot with `--live`.
#[test]
fn doctor_health_missing_and_settings_from_the_snapshot() {
    let s = Scratch::new("doctor-health-cm");
    let live = s.0.join("live");
    payments_live(&live, &["deployment-payments-api.json"]);
    let (app, rows) = health_rows(&doctor(&live, &["-o", "json"]));
    assert_eq!(app, "Healthy");
    let deploy = row(&rows, "Deployment");
    assert_eq!(
        (&deploy["status"], &deploy["source"]),
        (&Value::from("Missing"), &Value::from("none"))
    );
    let text = doctor(&live, &[]);
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains("\n  apps/Deployment pay-prod/payments-api Missing\n"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );

    // Not in the snapshot: one line, exit 2.
    let o = doctor(&live, &["--settings-configmap", "argocd/argocd-cm"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--settings-configmap argocd/argocd-cm: not found in the snapshot"),
        "{err}"
    );

    s.write(
        "live/argocd-cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\ndata:\n  resource.customizations.health._Service: |\n    return {status = \"Suspended\", message = \"from argocd-cm\"}\n",
    );
    let (app, rows) = health_rows(&doctor(
        &live,
        &["-o", "json", "--settings-configmap", "argocd/argocd-cm"],
    ));
    assert_eq!(app, "Suspended");
    let svc = row(&rows, "Service");
    assert_eq!(
        (&svc["message"], &svc["source"]),
        (&Value::from("from argocd-cm"), &Value::from("lua"))
    );
}

#[test]
fn objects_without_a_name_are_judged() {
    let s = Scratch::new("health-unnamed");
    let yaml = s.write(
        "objects.yaml",
        "apiVersion: v1\nkind: Pod\nstatus:\n  phase: Succeeded\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  namespace: ns\nstatus:\n  phase: Bound\n---\n\
         apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: PersistentVolumeClaim\n  metadata: {name: named}\n  status: {phase: Pending}\n\
         - apiVersion: v1\n  kind: PersistentVolumeClaim\n  status: {phase: Bound}\n",
    );
    let json = s.write(
        "object.json",
        r#"{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"namespace": "ns"}, "status": {"phase": "Pending"}}"#,
    );
    let named = s.write(
        "named.yaml",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: pvc}\nstatus: {phase: Bound}\n",
    );
    let args = |o: &str| {
        let mut a = vec!["health".to_owned(), "-o".to_owned(), o.to_owned()];
        for p in [&named, &yaml, &json] {
            a.push(p.display().to_string());
        }
        a
    };
    let run = |o: &str| {
        let a = args(o);
        plumb(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let rows = json_rows(&run("json"));
    let got: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("?");
            (s("kind"), s("namespace"), s("name"), s("status"))
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("PersistentVolumeClaim", "", "pvc", "Healthy"),
            ("Pod", "", "", "Healthy"),
            ("PersistentVolumeClaim", "ns", "", "Healthy"),
            ("PersistentVolumeClaim", "", "named", "Progressing"),
            ("PersistentVolumeClaim", "", "", "Healthy"),
            ("PersistentVolumeClaim", "ns", "", "Progressing"),
        ]
    );
    // Text: the name is empty, as the namespace of a cluster-wide object is.
    let text = run("text");
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[1], "/Pod / Healthy", "{text}");
    assert_eq!(lines[2], "/PersistentVolumeClaim ns/ Healthy", "{text}");

    // An unnamed object is still checked as any object is: one error line, exit 2.
    let long = "n".repeat(70);
    for (file, text, want) in [
        (
            "no-kind.yaml",
            "apiVersion: v1\nstatus: {}\n".to_owned(),
            "no-kind.yaml:1: not a Kubernetes object: missing kind".to_owned(),
        ),
        (
            "long-ns.yaml",
            format!(
                "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\nmetadata: {{namespace: {long}}}\n"
            ),
            "long-ns.yaml:4: Pod (no name): metadata.namespace is 70 characters".to_owned(),
        ),
        (
            "bad.yaml",
            "apiVersion: v1\nkind: Pod\n---\nkind: [\n".to_owned(),
            "bad.yaml:4".to_owned(),
        ),
    ] {
        let p = s.write(file, &text);
        let o = plumb(&["health", p.to_str().expect("path")]);
        assert_eq!(o.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{file}: {err}");
        assert!(err.contains(&want), "{file}: {err}");
    }
}

/// Argo CD's own health scripts and test inputs (pinned by plumb-health), through
/// `plumb health` at once: every input judged, unnamed or not, with Argo CD's status and
/// message — or, for an input being deleted, Progressing "Pending deletion", which Argo CD's
/// `argocd admin settings resource-overrides health` says too (its health check looks at
/// `metadata.deletionTimestamp` before any script; Argo CD's script tests call the script
/// alone).
#[test]
fn argo_cd_health_inputs_through_plumb_health() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plumb-health/tests/argocd-lua/resource_customizations");
    let mut cases = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        let tests = dir.join("health_test.yaml");
        if tests.is_file() {
            let text = std::fs::read_to_string(&tests).expect("health_test.yaml");
            let tests: Value = serde_saphyr::from_str(&text).expect("YAML");
            for t in tests["tests"].as_array().expect("tests") {
                // Argo CD reads the keys case-insensitively; one file spells it `inputpath`.
                let input = t.get("inputPath").or_else(|| t.get("inputpath"));
                let h = &t["healthStatus"];
                cases.push((
                    dir.join(input.and_then(Value::as_str).expect("inputPath")),
                    h["status"].as_str().expect("status").to_owned(),
                    h["message"].as_str().unwrap_or("").to_owned(),
                ));
            }
        }
        for e in std::fs::read_dir(&dir).expect("dir") {
            let p = e.expect("entry").path();
            if p.is_dir() && !p.ends_with("testdata") {
                dirs.push(p);
            }
        }
    }
    // One input repeats a mapping key, which plumb's loader refuses (as kubectl does).
    cases.retain(|(p, _, _)| !p.ends_with("rabbitmq.com/User/testdata/unknown.yaml"));
    assert!(cases.len() > 1000, "{} cases", cases.len());
    let mut args = vec![
        "health".to_owned(),
        "--resource-customizations".to_owned(),
        root.display().to_string(),
        "-o".to_owned(),
        "json".to_owned(),
    ];
    args.extend(cases.iter().map(|(p, _, _)| p.display().to_string()));
    let rows = json_rows(&plumb(&args.iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(rows.len(), cases.len());
    let mut unnamed = 0;
    for ((path, status, message), row) in cases.iter().zip(&rows) {
        let text = std::fs::read_to_string(path).expect("input");
        let docs: Vec<Value> = serde_saphyr::from_str_multiple(&text).expect("input YAML");
        let deleting = docs
            .first()
            .and_then(|o| o.pointer("/metadata/deletionTimestamp"));
        let (status, message) = if deleting.is_some_and(|t| !t.is_null()) {
            ("Progressing", "Pending deletion")
        } else {
            (status.as_str(), message.as_str())
        };
        assert_eq!(
            (row["status"].as_str(), row["message"].as_str()),
            (Some(status), Some(message)),
            "{}",
            path.display()
        );
        unnamed += usize::from(row["name"] == "");
    }
    assert!(unnamed > 100, "{unnamed} unnamed objects");
}
