//! Property test through the binary: for random Secrets (values in `data` and
//! `stringData`, random keys, values that are themselves base64, a live copy with other
//! values, `last-applied` holding the desired values), no output of `diff` (every
//! format, from files and from a rendered source), `render` (with and without origins),
//! `doctor` (every format), `blame` or `health` — stdout or stderr, with
//! `RUST_LOG=debug` — contains a value or its base64; nor does any page `plumb ui` serves for
//! the app (the list, the app's page, its diff unified and side by side, its history; HTML and
//! JSON, headers included).
//!
//! Each case runs the binary a dozen times, so this runs [`CASES`] cases; the same
//! property runs thousands of times in-process in `plumb-diff/tests/secrets.rs`.
//!
//! On the test bed (skipped without one, as every test-bed test), the same property for the
//! commands that read a cluster: random Secrets are stored (with a `last-applied` annotation
//! holding git's values, sometimes `immutable` so the sync fails with the API server's
//! message), an Application tracks them, and `plumb app get` (before and after a sync, and
//! with `--refresh`), `app diff`, `app sync`, `app history`, `app list` and `plumb snapshot`
//! (by namespace and by `--app`: every file it writes) print no value or its base64
//! ([`TESTBED_CASES`] cases on one test bed). `app get`/`history`/`list` have one output
//! format each: that is every format.

mod common;
#[path = "common/testbed.rs"]
mod fixture;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::process::Command;

const CASES: u32 = 24;

/// Cases of the test-bed property (each stores objects and runs the binary ten times).
const TESTBED_CASES: u32 = 16;

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
            "doctor", "demo", "--live", "live", "--repo", "repo", "-o", "html",
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
    all.push_str(&ui_pages(dir));
    all
}

/// Every page `plumb ui` serves for the app, in each format, with the headers; then what
/// the server wrote on its streams.
fn ui_pages(dir: &Path) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args([
            "ui",
            "--live",
            "live",
            "--repo",
            "repo",
            "--listen",
            "127.0.0.1:0",
        ])
        .current_dir(dir)
        .env("RUST_LOG", "debug")
        .env_remove("KUBECONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("plumb ui runs");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut url = String::new();
    stdout.read_line(&mut url).expect("its URL");
    let addr = url
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut all = format!("\n### plumb ui at {addr}\n");
    for path in [
        "/",
        "/?format=json",
        "/apps/argocd/demo",
        "/apps/argocd/demo?format=json",
        "/apps/argocd/demo/diff",
        "/apps/argocd/demo/diff?view=split",
        "/apps/argocd/demo/diff?format=json",
        "/apps/argocd/demo/history",
        "/apps/argocd/demo/history?format=json",
    ] {
        let mut s = std::net::TcpStream::connect(&addr).expect("connect");
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .expect("ask");
        let mut page = String::new();
        s.read_to_string(&mut page).expect("answer");
        assert!(page.starts_with("HTTP/1.1 200"), "{path}: {page}");
        all.push_str(&format!("\n### GET {path}\n{page}"));
    }
    let _ = child.kill();
    let _ = child.wait();
    let mut rest = String::new();
    let _ = stdout.read_to_string(&mut rest);
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut rest);
    all.push_str(&rest);
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

/// One case on the test bed: the Secret's entries, whether the stored Secret is immutable
/// (the sync then fails with the API server's message), and whether one `data` entry in git
/// holds its value without base64 (a value the API server and plumb must refuse unechoed).
type BedCase = (Entries, bool, bool);

fn bed_case() -> impl Strategy<Value = BedCase> {
    // Mostly neither, so that most cases also sync (and the synced Secret is saved).
    (
        entries(),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.3),
    )
}

/// Runs `plumb args` against the test bed (`KUBECONFIG` from the environment), with debug
/// logs; returns its stdout and stderr, headed by the command.
fn plumb_on_bed(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .env("RUST_LOG", "debug")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("plumb runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some_and(|c| c <= 2) && !stderr.contains("panicked"),
        "{args:?}: {:?}\n{stderr}",
        out.status
    );
    format!(
        "\n### {args:?} exit {:?}\n{}{stderr}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout)
    )
}

/// Every file below `dir`, as text, headed by its path.
fn files_text(dir: &Path) -> String {
    let mut all = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("snapshot file");
                all.push_str(&format!("\n### {}\n", path.display()));
                all.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    all
}

/// Stores case `i` on the test bed and returns everything the cluster commands printed and
/// wrote.
async fn bed_outputs(
    cluster: &plumb_cluster::Cluster,
    bed: &fixture::AppBed,
    i: usize,
    (e, immutable, raw): &BedCase,
) -> String {
    let (apps_ns, dest) = (bed.apps_ns.as_str(), bed.dest.as_str());
    // Unique across runs on one test bed: the tracking label must find this case's objects only.
    let name = support::unique(&format!("leak-{i}"));
    let secret = format!("creds-{i}");
    let mut data = Map::new();
    let mut string_data = Map::new();
    let mut live_data = Map::new();
    for (n, (k, d, l, in_string_data)) in e.iter().enumerate() {
        if *in_string_data {
            string_data.insert(k.clone(), json!(d));
        } else if *raw && n == 0 {
            data.insert(k.clone(), json!(d));
        } else {
            data.insert(k.clone(), json!(STANDARD.encode(d)));
        }
        live_data.insert(k.clone(), json!(STANDARD.encode(l)));
    }
    let desired = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": secret}, "type": "Opaque", "data": data, "stringData": string_data});
    let repo = bed.dir.join(format!("repo-{i}/app"));
    fixture::write_json(&repo, "secret.json", &desired);
    fixture::write_json(
        &repo,
        "cm.json",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")},
            "data": {"k": "v"}}),
    );
    let mut live = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": secret, "namespace": dest,
            "labels": {"app.kubernetes.io/instance": name},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": desired.to_string()}},
        "type": "Opaque", "data": live_data});
    if *immutable {
        live["immutable"] = json!(true);
    }
    let app = json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": apps_ns},
        "spec": {"project": "default",
            "source": {"repoURL": format!("file://{}", repo.parent().expect("repo").display()),
                       "path": "app", "targetRevision": "HEAD"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": dest}}});
    support::apply(cluster, vec![live, app.clone()]).await;
    let app_file = bed.dir.join(format!("app-{i}.json"));
    fixture::write_json(&bed.dir, &format!("app-{i}.json"), &app);

    let app_file = app_file.display().to_string();
    let by_ns = bed.dir.join(format!("snapshot-{i}"));
    let by_app = bed.dir.join(format!("snapshot-app-{i}"));
    let (by_ns_s, by_app_s) = (by_ns.display().to_string(), by_app.display().to_string());
    let on = ["--cluster", "-N", apps_ns];
    let runs: Vec<Vec<&str>> = vec![
        [&["app", "get", name.as_str()][..], &on].concat(),
        [&["app", "get", name.as_str(), "--refresh"][..], &on].concat(),
        [&["app", "diff", name.as_str()][..], &on].concat(),
        [&["app", "sync", name.as_str()][..], &on].concat(),
        [&["app", "get", name.as_str()][..], &on].concat(),
        [&["app", "history", name.as_str()][..], &on].concat(),
        vec!["app", "list", "--cluster", "-N", apps_ns],
        vec![
            "snapshot",
            "--cluster",
            "-n",
            dest,
            "-n",
            apps_ns,
            "--out",
            &by_ns_s,
        ],
        vec![
            "snapshot",
            "--cluster",
            "--app",
            &app_file,
            "--out",
            &by_app_s,
        ],
    ];
    let mut all = String::new();
    for args in runs {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let text = tokio::task::spawn_blocking(move || {
            plumb_on_bed(&args.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .await
        .expect("plumb runner");
        all.push_str(&text);
    }
    all.push_str(&files_text(&by_ns));
    all.push_str(&files_text(&by_app));
    all
}

#[test]
fn no_cluster_command_prints_or_saves_a_secret_value_or_its_base64() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let Some(cluster) = rt.block_on(support::testbed("secrets_on_the_test_bed")) else {
        return;
    };
    let bed = rt.block_on(fixture::AppBed::new(&cluster, "secrets", json!({})));
    let mut runner = TestRunner::new(Config {
        cases: TESTBED_CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let n = std::sync::atomic::AtomicUsize::new(0);
    let synced_once = std::sync::atomic::AtomicBool::new(false);
    runner
        .run(&bed_case(), |case| {
            let i = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let text = rt.block_on(bed_outputs(&cluster, &bed, i, &case));
            for (_, d, l, _) in &case.0 {
                for v in [d, l] {
                    for s in [v.clone(), STANDARD.encode(v)] {
                        prop_assert!(!text.contains(&s), "{s:?} printed or saved:\n{text}");
                    }
                }
            }
            // The commands did their work: the Secret was compared, synced or refused, and
            // saved without its values.
            prop_assert!(text.contains(&format!("creds-{i}")), "{text}");
            prop_assert!(text.contains("Operation:          Sync"), "{text}");
            if text.contains("Phase:              Succeeded") {
                synced_once.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(())
        })
        .unwrap();
    assert!(
        synced_once.load(std::sync::atomic::Ordering::Relaxed),
        "no case synced: the property only saw failed syncs"
    );
}
