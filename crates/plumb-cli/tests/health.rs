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
