//! The controller explains its own loops (issue 16), on the test bed with the real
//! `plumb controller` process and the seed incident: a real mutating webhook forces
//! `imagePullPolicy: Always` where git (`overlays/prod/pull-policy.yaml:10`) declares
//! `IfNotPresent`, and self-heal is on.
//!
//! - `the_seed_loop_is_named_on_the_application_and_cleared_after_the_fix`: within 60 s the
//!   Application carries the `SyncLoop` condition naming the webhook, the file and line and
//!   the fix, `status.syncLoop` holds the finding, the Event `SyncLoopDetected` is recorded,
//!   `plumb_app_sync_loop` is 1; after the seed's git fix the condition and the finding are
//!   gone, `SyncLoopCleared` is recorded and the metric is 0. Meanwhile the controller's pages
//!   (`--ui`) mark the loop in the list, and the app's page names the webhook and the line —
//!   over HTTP and in headless Chromium (no script, no CSP violation, axe-core) — and
//!   `plumb ui --cluster --allow-refresh` refuses a Refresh without the page's CSRF token.
//! - `loop_guard_stops_the_fight_and_still_heals_other_drift`: with
//!   `plumb.dev/LoopGuard=true`, a hand edit of the Service selector made during the loop is
//!   healed within 10 s, and the history then stops growing: reconciles keep coming (every
//!   refresh) and none syncs, across more than two self-heal backoff steps.

#[path = "common/chrome.rs"]
mod chrome;
mod common;
#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

use common::git;
use plumb_cluster::Cluster;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::webhook::{self, Webhook};
use support::{apply, eventually, namespace, testbed, unique, wait_until};

const LABEL: &str = "policy.lab/image-pull";
const PULL: &str = "/spec/template/spec/containers/0/imagePullPolicy";

fn deploy(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("deploy file");
    serde_saphyr::from_str_multiple(&text).expect("deploy YAML")
}

async fn install_application_crd(cluster: &Cluster) {
    apply(cluster, deploy("crd.yaml")).await;
    wait_until("applications.plumb.dev being served", || async {
        cluster.discover().await.ok()?;
        cluster.list_applications(None).await.ok().map(|_| ())
    })
    .await;
}

fn commit(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// The shipped example (`examples/payments/repo`) as a fresh git repository; its commit.
fn payments_repo() -> (PathBuf, String) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/payments/repo");
    let dir = std::env::temp_dir().join(unique("plumb-loop-payments"));
    for rel in [
        "base/kustomization.yaml",
        "base/deployment.yaml",
        "base/service.yaml",
        "base/configmap.yaml",
        "base/secret.yaml",
        "overlays/prod/kustomization.yaml",
        "overlays/prod/pull-policy.yaml",
    ] {
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(src.join(rel), &to).expect("copy example file");
    }
    git(&dir, &["init", "-q"]);
    let sha = commit(&dir, "initial");
    (dir, sha)
}

/// The seed's fix: stop declaring imagePullPolicy (platform policy owns it).
fn seed_fix(repo: &Path) -> String {
    git(repo, &["rm", "-q", "overlays/prod/pull-policy.yaml"]);
    let path = repo.join("overlays/prod/kustomization.yaml");
    let text = std::fs::read_to_string(&path).expect("kustomization");
    let fixed: String = text
        .lines()
        .filter(|l| !l.contains("save registry traffic") && !l.contains("path: pull-policy.yaml"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, fixed).expect("write");
    commit(repo, "prod: do not declare imagePullPolicy")
}

/// A controller process the test started: killed and reaped when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `plumb controller` for the Applications of `ns`, refreshing every 5 s, with a short
/// self-heal backoff (1, 2, 4, 4 … s) and `/metrics` on a free port; stderr to `log`.
fn controller(ns: &str, log: &Path) -> Running {
    let file = std::fs::File::create(log).expect("log file");
    Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args([
            "controller",
            "--app-namespace",
            ns,
            "--lease-namespace",
            ns,
            "--lease-duration",
            "3",
            "--interval",
            "5",
            "--jitter",
            "0",
            "--self-heal-backoff-timeout-seconds",
            "1",
            "--self-heal-backoff-factor",
            "2",
            "--self-heal-backoff-cap-seconds",
            "4",
            "--listen",
            "127.0.0.1:0",
            "--ui",
        ])
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(file))
        .spawn()
        .map(Running)
        .expect("plumb controller starts")
}

/// The controller's JSON log lines so far.
fn log_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Waits until the controller leads and reconciles; the address `/metrics` is served at.
async fn controller_ready(log: &Path) -> String {
    wait_until("the controller reconciling (its log)", || async {
        let lines = log_lines(log);
        let addr = lines
            .iter()
            .find_map(|l| l["listening"].as_str().map(String::from))?;
        lines
            .iter()
            .any(|l| l["reconciling"] == true)
            .then_some(addr)
    })
    .await
}

/// `/metrics` as the controller serves it.
async fn metrics(addr: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return String::new();
    };
    let _ = s
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: plumb\r\n\r\n")
        .await;
    let mut out = String::new();
    let _ = s.read_to_string(&mut out).await;
    out
}

/// A page of the controller's `/ui/`: (status line, body).
async fn ui_get(addr: &str, path: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("ask");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out).await;
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// A form POST to a page of `plumb ui`: (status line, body).
async fn ui_post(addr: &str, path: &str, form: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    );
    s.write_all(request.as_bytes()).await.expect("ask");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out).await;
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// The value of `plumb_app_sync_loop` for the app, once it is `want`.
async fn wait_loop_metric(addr: &str, ns: &str, name: &str, want: u8) {
    let line = format!("plumb_app_sync_loop{{namespace=\"{ns}\",name=\"{name}\"}} {want}\n");
    wait_until(&format!("metrics: {}", line.trim()), || async {
        metrics(addr).await.contains(&line).then_some(())
    })
    .await;
}

async fn app(cluster: &Cluster, ns: &str, name: &str) -> Value {
    cluster
        .get_application(ns, name)
        .await
        .expect("get application")
        .expect("application exists")
}

fn loop_condition(app: &Value) -> Option<Value> {
    app.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "SyncLoop")
        .cloned()
}

fn history_len(app: &Value) -> usize {
    app.pointer("/status/history")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The seed's cluster side: the webhook, the labelled destination namespace (and one for the
/// Application), the repository.
struct Seed {
    hook: Webhook,
    config: String,
    apps: String,
    dest: String,
    repo: PathBuf,
    dir: PathBuf,
}

async fn seed(cluster: &Cluster, prefix: &str) -> Seed {
    install_application_crd(cluster).await;
    let hook = Webhook::start().await;
    let selected = webhook::selector_value();
    let dest = namespace(
        cluster,
        "pay-prod",
        json!({LABEL: selected, "sysop/lab": "ch25"}),
    )
    .await;
    let apps = namespace(cluster, &format!("{prefix}-apps"), json!({})).await;
    let config = unique("platform-policy-mutate");
    apply(cluster, vec![hook.configuration(&config, LABEL, &selected)]).await;
    webhook::wait_effective(cluster, &dest).await;
    let (repo, _) = payments_repo();
    let dir = std::env::temp_dir().join(unique(prefix));
    std::fs::create_dir_all(&dir).expect("scratch");
    Seed {
        hook,
        config,
        apps,
        dest,
        repo,
        dir,
    }
}

impl Seed {
    fn application(&self, name: &str, sync_options: &[&str]) -> Value {
        json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": self.apps},
            "spec": {"project": "default",
                "source": {"repoURL": format!("file://{}", self.repo.display()),
                           "path": "overlays/prod", "targetRevision": "HEAD"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": self.dest},
                "syncPolicy": {"automated": {"prune": true, "selfHeal": true},
                               "syncOptions": sync_options}}})
    }

    async fn stop(self, cluster: &Cluster) {
        let _ = cluster
            .delete_object(
                &plumb_core::ResourceKey {
                    group: "admissionregistration.k8s.io".into(),
                    kind: "MutatingWebhookConfiguration".into(),
                    namespace: String::new(),
                    name: self.config.clone(),
                },
                plumb_cluster::Propagation::Background,
            )
            .await;
        self.hook.stop().await;
        let _ = std::fs::remove_dir_all(&self.repo);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_loop_is_named_on_the_application_and_cleared_after_the_fix() {
    let Some(cluster) = testbed("the_seed_loop_is_named_on_the_application").await else {
        return;
    };
    let seed = seed(&cluster, "plumb-loop").await;
    let log = seed.dir.join("controller.log");
    let _controller = controller(&seed.apps, &log);
    let addr = controller_ready(&log).await;
    let name = "payments-prod";
    apply(&cluster, vec![seed.application(name, &[])]).await;
    let created = Instant::now();

    // Within 60 s: the condition, naming the webhook, the file and line, and the fix.
    let recognised = eventually(Duration::from_secs(60), || async {
        let a = app(&cluster, &seed.apps, name).await;
        loop_condition(&a).map(|c| (a, c))
    })
    .await;
    let Some((a, condition)) = recognised else {
        panic!(
            "no SyncLoop condition within 60 s: {:#}\n{}",
            app(&cluster, &seed.apps, name).await,
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    };
    eprintln!(
        "SyncLoop after {:?}: {}",
        created.elapsed(),
        condition["message"]
    );
    let message = condition["message"].as_str().expect("message");
    for want in [
        format!("apps/Deployment {}/payments-api {PULL}", seed.dest),
        format!("rewritten by mutating webhook {}", seed.config),
        "declared at overlays/prod/pull-policy.yaml:10".to_string(),
        "fix: stop declaring it".to_string(),
    ] {
        assert!(message.contains(&want), "{want:?} not in {message}");
    }
    assert!(seed.config.starts_with("platform-policy-mutate"));
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");
    // The structured finding.
    let found = &a["status"]["syncLoop"];
    assert_eq!(found["fields"].as_array().map(Vec::len), Some(1), "{found}");
    let field = &found["fields"][0];
    assert_eq!(field["kind"], "Deployment");
    assert_eq!(field["path"], PULL);
    assert_eq!(
        field["rewrittenBy"],
        json!(format!("mutating webhook {}", seed.config))
    );
    assert_eq!(field["declaredAt"], "overlays/prod/pull-policy.yaml:10");
    assert_eq!(field["fix"], "stop declaring it");
    assert!(found["syncs"].as_u64().is_some_and(|n| n >= 3), "{found}");
    assert_eq!(found["revision"], a["status"]["sync"]["revision"]);
    wait_loop_metric(&addr, &seed.apps, name, 1).await;
    // The Event, a Warning carrying the condition's message.
    wait_until("the SyncLoopDetected Event", || async {
        app_events(&cluster, &seed.apps, name)
            .await
            .iter()
            .any(|(reason, kind, text)| {
                reason == "SyncLoopDetected"
                    && kind == "Warning"
                    && text.contains("rewritten by mutating webhook platform-policy-mutate")
            })
            .then_some(())
    })
    .await;

    // The controller's pages (`--ui`), over the running incident: the list marks the loop,
    // the app's page names the webhook and the line git declares the field at.
    // (The status changes with every sync of the loop: the list is read until it shows it.)
    let row = wait_until("the list marking the loop", || async {
        let (status, list) = ui_get(&addr, "/ui/").await;
        assert!(status.contains(" 200 "), "{status}\n{list}");
        list.split("<tr>")
            // This test's app (other tests' apps of that name live in other namespaces).
            .find(|r| r.contains(&format!("href=\"/ui/apps/{}/{name}\"", seed.apps)))
            .filter(|r| r.contains(r#"<span aria-hidden="true">⟳</span> loop"#))
            .map(str::to_string)
    })
    .await;
    assert!(
        row.contains(&format!("href=\"/ui/apps/{}/{name}\"", seed.apps)),
        "{row}"
    );
    let (status, page) = ui_get(&addr, &format!("/ui/apps/{}/{name}", seed.apps)).await;
    assert!(status.contains(" 200 "), "{status}\n{page}");
    assert!(page.contains(&seed.config), "{page}");
    assert!(
        page.contains("<code>overlays/prod/pull-policy.yaml:10</code>"),
        "{page}"
    );
    assert!(
        page.contains("imagePullPolicy: IfNotPresent"),
        "the declared line: {page}"
    );
    let (status, _) = ui_get(&addr, "/ui/nowhere").await;
    assert!(status.contains(" 404 "), "{status}");

    // The same pages in headless Chromium, when there is one (REQUIRE_BROWSER=1 in CI): the
    // list marks the loop, the app's page names the webhook; no script, no CSP violation,
    // no serious accessibility violation.
    if let Some(driver_bin) = chrome::chromedriver() {
        let profile = seed.dir.join("chromium");
        let (_driver, driver_url) = chrome::start_driver(&driver_bin);
        let _one = chrome::BROWSER.lock().await;
        let c = chrome::browser(&driver_url, &profile).await;
        let list_url = format!("http://{addr}/ui/");
        wait_until("the list marking the loop, in the browser", || async {
            c.goto(&list_url).await.ok()?;
            let row = c
                .find(fantoccini::Locator::XPath(&format!(
                    "//tr[td/a[@href='/ui/apps/{}/{name}']]",
                    seed.apps
                )))
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            row.contains("⟳ loop").then_some(())
        })
        .await;
        chrome::clean(&c, "controller list").await;
        chrome::accessible(&c, "controller list").await;
        chrome::screenshot(&c, "testbed-list.png").await;
        c.goto(&format!("http://{addr}/ui/apps/{}/{name}", seed.apps))
            .await
            .expect("the app page");
        let page = chrome::text(&c).await;
        assert!(page.contains(&seed.config), "{page}");
        assert!(page.contains("overlays/prod/pull-policy.yaml:10"), "{page}");
        chrome::clean(&c, "controller app").await;
        chrome::screenshot(&c, "testbed-app.png").await;
        c.close().await.expect("close");
    } else {
        assert!(
            std::env::var("REQUIRE_BROWSER").is_err(),
            "REQUIRE_BROWSER is set but chromedriver was not found"
        );
    }

    // `plumb ui --cluster --allow-refresh`: "Refresh now" is a POST that must carry the
    // page's CSRF token; with it, an Application no controller watches gets its status.
    let quiet = namespace(&cluster, "plumb-ui-refresh", json!({})).await;
    let mut manual = seed.application("payments-manual", &[]);
    manual["metadata"]["namespace"] = json!(quiet);
    manual["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("syncPolicy");
    apply(&cluster, vec![manual]).await;
    let mut ui = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args([
            "ui",
            "--cluster",
            "--allow-refresh",
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map(Running)
        .expect("plumb ui starts");
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(ui.0.stdout.take().expect("stdout")),
        &mut first,
    )
    .expect("its URL");
    let ui_addr = first
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let page_path = format!("/apps/{quiet}/payments-manual");
    let (status, page) = ui_get(&ui_addr, &page_path).await;
    assert!(status.contains(" 200 "), "{status}\n{page}");
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("a Refresh form: {page}"))
        .to_string();
    let (status, _) = ui_post(&ui_addr, &format!("{page_path}/refresh"), "csrf=forged").await;
    assert!(status.contains(" 403 "), "{status}");
    let (status, _) = ui_post(&ui_addr, &format!("{page_path}/refresh"), "").await;
    assert!(status.contains(" 403 "), "{status}");
    assert!(app(&cluster, &quiet, "payments-manual").await["status"]["sync"]["status"].is_null());
    let (status, _) = ui_post(
        &ui_addr,
        &format!("{page_path}/refresh"),
        &format!("csrf={csrf}"),
    )
    .await;
    assert!(status.contains(" 303 "), "{status}");
    let refreshed = app(&cluster, &quiet, "payments-manual").await;
    assert!(
        refreshed["status"]["sync"]["status"].is_string(),
        "refreshed: {:#}",
        refreshed["status"]
    );
    drop(ui);

    // `plumb app get` shows it first; `plumb app list` marks the app.
    let get = plumb(&["app", "get", name, "--cluster", "-N", &seed.apps]);
    assert!(get.contains("SyncLoop "), "{get}");
    let list = plumb(&["app", "list", "--cluster", "-N", &seed.apps]);
    assert!(list.contains("OutOfSync (SyncLoop)"), "{list}");

    // The seed's fix: the condition clears once the app has stayed Synced for a refresh
    // interval, and the metric is 0.
    let fixed = seed_fix(&seed.repo);
    let cleared = wait_until("the SyncLoop condition cleared after the fix", || async {
        let a = app(&cluster, &seed.apps, name).await;
        (loop_condition(&a).is_none()
            && a["status"]["syncLoop"].is_null()
            && a["status"]["sync"]["status"] == "Synced"
            && a["status"]["sync"]["revision"] == json!(fixed))
        .then_some(a)
    })
    .await;
    assert_eq!(cleared["status"]["sync"]["status"], "Synced");
    wait_loop_metric(&addr, &seed.apps, name, 0).await;
    wait_until("the SyncLoopCleared Event", || async {
        app_events(&cluster, &seed.apps, name)
            .await
            .iter()
            .any(|(reason, kind, _)| reason == "SyncLoopCleared" && kind == "Normal")
            .then_some(())
    })
    .await;
    seed.stop(&cluster).await;
}

/// The Events on the Application: reason, type, message.
async fn app_events(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    let events = cluster
        .list_live(
            &[plumb_core::GroupKind::new("", "Event")],
            Some(&[namespace.to_string()]),
            None,
        )
        .await
        .unwrap_or_default();
    events
        .iter()
        .filter(|e| {
            e.pointer("/involvedObject/name").and_then(Value::as_str) == Some(name)
                && e.pointer("/involvedObject/kind").and_then(Value::as_str) == Some("Application")
        })
        .map(|e| {
            let s = |p: &str| {
                e.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            (s("/reason"), s("/type"), s("/message"))
        })
        .collect()
}

/// The `plumb` binary's stdout, then its stderr (on the test bed's kubeconfig).
fn plumb(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(args)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("plumb runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The controller's reconciles of `name` logged after the first `skip` lines: whether each
/// synced.
fn reconciles(log: &Path, ns: &str, name: &str, skip: usize) -> Vec<bool> {
    let app = format!("{ns}/{name}");
    log_lines(log)
        .iter()
        .skip(skip)
        .filter(|l| l["app"] == json!(app) && l.get("synced").is_some())
        .map(|l| l["synced"] == true)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loop_guard_stops_the_fight_and_still_heals_other_drift() {
    let Some(cluster) = testbed("loop_guard_stops_the_fight").await else {
        return;
    };
    let seed = seed(&cluster, "plumb-guard").await;
    let log = seed.dir.join("controller.log");
    let _controller = controller(&seed.apps, &log);
    controller_ready(&log).await;
    let name = "payments-prod";
    apply(
        &cluster,
        vec![seed.application(name, &["plumb.dev/LoopGuard=true"])],
    )
    .await;
    wait_until("the SyncLoop condition", || async {
        loop_condition(&app(&cluster, &seed.apps, name).await)
    })
    .await;

    // A hand edit of the Service selector during the loop: healed within 10 s.
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "payments-api", "namespace": seed.dest},
        "spec": {"selector": {"app": "someone-else"}}});
    let before = cluster
        .get_object("", "Service", &seed.dest, "payments-api")
        .await
        .expect("get")
        .expect("the Service");
    let git_selector = before["spec"]["selector"].clone();
    cluster
        .merge_patch_object(&service, &service, "kubectl-edit")
        .await
        .expect("hand edit");
    let edited = Instant::now();
    let healed = eventually(Duration::from_secs(10), || async {
        let s = cluster
            .get_object("", "Service", &seed.dest, "payments-api")
            .await
            .ok()??;
        (s["spec"]["selector"] == git_selector).then_some(())
    })
    .await;
    assert!(
        healed.is_some(),
        "the Service selector was not healed within 10 s\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    eprintln!("selector healed after {:?}", edited.elapsed());

    // The history stops growing: after the heal, reconciles keep coming and none syncs —
    // four in a row, 5 s apart (the refresh interval), span more than two self-heal backoff
    // steps (the backoff is capped at 4 s here, so without LoopGuard each would sync).
    let mark = log_lines(&log).len();
    wait_until("four reconciles in a row without a sync", || async {
        let r = reconciles(&log, &seed.apps, name, mark);
        let tail = r.iter().rev().take_while(|s| !**s).count();
        (tail >= 4).then_some(())
    })
    .await;
    let a = app(&cluster, &seed.apps, name).await;
    let length = history_len(&a);
    // And it stays so for one more reconcile.
    let mark = log_lines(&log).len();
    wait_until("one more reconcile", || async {
        (!reconciles(&log, &seed.apps, name, mark).is_empty()).then_some(())
    })
    .await;
    let a = app(&cluster, &seed.apps, name).await;
    assert_eq!(history_len(&a), length, "the history grew");
    assert!(loop_condition(&a).is_some(), "the loop is still recorded");
    assert_eq!(
        a["status"]["sync"]["status"], "OutOfSync",
        "the fight is shown"
    );
    let deploy = cluster
        .get_object("apps", "Deployment", &seed.dest, "payments-api")
        .await
        .expect("get")
        .expect("deployment");
    assert_eq!(deploy.pointer(PULL), Some(&json!("Always")));
    let service = cluster
        .get_object("", "Service", &seed.dest, "payments-api")
        .await
        .expect("get")
        .expect("service");
    assert_eq!(service["spec"]["selector"], git_selector, "still healed");
    seed.stop(&cluster).await;
}
