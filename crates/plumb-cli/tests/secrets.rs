//! Property test through the binary: for random Secrets (values in `data` and
//! `stringData`, random keys, values that are themselves base64, a live copy with other
//! values, `last-applied` holding the desired values), no output of `diff` (every
//! format, from files and from a rendered source), `render` (with and without origins),
//! `doctor` (every format), `blame` or `health` — stdout or stderr, with
//! `RUST_LOG=debug` — contains a value or its base64.
//!
//! Each case runs the binary a dozen times, so this runs [`CASES`] cases; the same
//! property runs thousands of times in-process in `plumb-diff/tests/secrets.rs`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::process::Command;

const CASES: u32 = 24;

fn secret_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9!#%&()*+,./:;<=>?@^_{|}~-]{8,24}",
        prop::collection::vec(any::<u8>(), 6..18).prop_map(|b| STANDARD.encode(b)),
    ]
}

type Entries = Vec<(String, String, String, bool)>;

fn entries() -> impl Strategy<Value = Entries> {
    prop::collection::btree_map(
        "[a-z][a-z0-9._-]{0,10}",
        (secret_value(), secret_value(), any::<bool>()),
        1..4,
    )
    .prop_map(|m| m.into_iter().map(|(k, (d, l, sd))| (k, d, l, sd)).collect())
}

fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, serde_json::to_string_pretty(v).expect("json")).expect("write");
}

fn setup(dir: &Path, e: &Entries) {
    let mut data = Map::new();
    let mut string_data = Map::new();
    let mut live_data = Map::new();
    for (k, d, l, in_string_data) in e {
        if *in_string_data {
            string_data.insert(k.clone(), json!(d));
        } else {
            data.insert(k.clone(), json!(STANDARD.encode(d)));
        }
        live_data.insert(k.clone(), json!(STANDARD.encode(l)));
    }
    let desired = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "prod", "labels": {"app.kubernetes.io/instance": "demo"}},
        "type": "Opaque", "data": data, "stringData": string_data,
    });
    let live = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": "creds", "namespace": "prod", "resourceVersion": "3",
            "labels": {"app.kubernetes.io/instance": "demo"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": desired.to_string()},
            "managedFields": [{
                "manager": "kubectl-edit", "operation": "Update", "fieldsType": "FieldsV1",
                "time": "2026-01-01T00:00:00Z",
                "fieldsV1": {"f:data": live_data.keys().map(|k| (format!("f:{k}"), json!({}))).collect::<Map<_, _>>()},
            }],
        },
        "type": "Opaque", "data": live_data,
    });
    let app = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "demo", "namespace": "argocd"},
        "spec": {
            "source": {"repoURL": "../repo", "path": "app"},
            "destination": {"namespace": "prod"},
        },
        "status": {"sync": {"status": "OutOfSync"}},
    });
    write(&dir.join("repo/app/secret.json"), &desired);
    write(&dir.join("live/secret.json"), &live);
    write(&dir.join("live/app.json"), &app);
    write(&dir.join("apps/app.json"), &app);
}

fn outputs(dir: &Path) -> String {
    let runs: &[&[&str]] = &[
        &[
            "diff",
            "--app",
            "apps/app.json",
            "--live",
            "live/secret.json",
        ],
        &[
            "diff",
            "--app",
            "apps/app.json",
            "--live",
            "live/secret.json",
            "-o",
            "unified",
        ],
        &[
            "diff",
            "--app",
            "apps/app.json",
            "--live",
            "live/secret.json",
            "-o",
            "json",
        ],
        &[
            "diff",
            "--desired",
            "repo/app/secret.json",
            "--live",
            "live/secret.json",
            "-o",
            "json",
        ],
        &["render", "--app", "apps/app.json"],
        &["render", "--app", "apps/app.json", "--show-origins"],
        &["doctor", "demo", "--live", "live", "--repo", "repo"],
        &[
            "doctor", "demo", "--live", "live", "--repo", "repo", "-o", "json",
        ],
        &[
            "doctor", "demo", "--live", "live", "--repo", "repo", "-o", "markdown",
        ],
        &[
            "doctor",
            "--preflight",
            "--desired",
            "repo/app",
            "--live",
            "live",
        ],
        &["blame", "Secret/creds", "-n", "prod", "--live", "live"],
        &["health", "live"],
    ];
    let mut all = String::new();
    for args in runs {
        let out = Command::new(env!("CARGO_BIN_EXE_plumb"))
            .args(*args)
            .current_dir(dir)
            .env("RUST_LOG", "debug")
            .env_remove("KUBECONFIG")
            .output()
            .expect("plumb runs");
        assert!(
            out.status.code().is_some_and(|c| c <= 2),
            "{args:?}: {:?}",
            out.status
        );
        all.push_str(&format!("\n### {args:?} exit {:?}\n", out.status.code()));
        all.push_str(&String::from_utf8_lossy(&out.stdout));
        all.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    all
}

#[test]
fn no_command_prints_a_secret_value_or_its_base64() {
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let base = std::env::temp_dir().join(format!("plumb-secrets-{}", std::process::id()));
    let n = std::sync::atomic::AtomicUsize::new(0);
    runner
        .run(&entries(), |e| {
            let i = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = base.join(i.to_string());
            setup(&dir, &e);
            let text = outputs(&dir);
            let _ = std::fs::remove_dir_all(&dir);
            for (_, d, l, _) in &e {
                for v in [d, l] {
                    for s in [v.clone(), STANDARD.encode(v)] {
                        prop_assert!(!text.contains(&s), "{s:?} printed:\n{text}");
                    }
                }
            }
            // The commands did their work (not all failing early).
            prop_assert!(text.contains("Secret"), "{text}");
            Ok(())
        })
        .unwrap();
    let _ = std::fs::remove_dir_all(&base);
}
