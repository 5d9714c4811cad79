//! `plumb ui` and `plumb doctor -o html` in a real browser: headless Chromium driven through
//! Debian's chromedriver (WebDriver, from Rust with fantoccini).
//!
//! Over the shipped payments incident: the list shows payments-prod OutOfSync with the loop
//! marker; the keyboard alone reaches the app's link, with a visible focus, and opens it; the
//! app page names the webhook and `overlays/prod/pull-policy.yaml:10` with that line's text,
//! its diff shows the hand-edited Service's selector badged with `kubectl-edit`, and its
//! timeline has one mark per sync of the looping revision;
//! no page runs a script or reports a Content-Security-Policy violation (a listener installed
//! through the DevTools protocol before each page, which the pages' policy does not apply to),
//! and the page's own style applies (its hash is right). Objects whose names and fields carry
//! HTML and script render as text, and nothing runs. The `-o html` report opens with the
//! network off, shows the same content and loads nothing. axe-core (pinned, fetched by
//! `testbed/fetch-axe.sh`) finds no serious or critical accessibility violation on any page.
//! Screenshots go to
//! `target/ui-screenshots/`.
//!
//! Skipped (saying so) without chromedriver, unless REQUIRE_BROWSER=1 (`.ci/run` installs
//! Debian's `chromium` and `chromium-driver` and sets it).

mod common;
use common::{tmp, write};
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// One browser at a time: Chromium is heavy on a 2-core machine.
static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn chromedriver() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PLUMB_CHROMEDRIVER") {
        return Some(PathBuf::from(p));
    }
    ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

macro_rules! driver_or_skip {
    ($name:expr) => {
        match chromedriver() {
            Some(p) => p,
            None => {
                assert!(
                    std::env::var("REQUIRE_BROWSER").is_err(),
                    "REQUIRE_BROWSER is set but chromedriver was not found"
                );
                eprintln!(
                    "skipping {}: no chromedriver (apt install chromium-driver)",
                    $name
                );
                return;
            }
        }
    };
}

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// chromedriver on a free port, once it accepts connections (60 s at most).
fn start_driver(bin: &Path) -> (Proc, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(bin)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "chromedriver did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (Proc(child), format!("http://127.0.0.1:{port}"))
}

/// `plumb ui` over a snapshot; its URL once it listens.
fn start_ui(live: &Path, repo: Option<&Path>) -> (Proc, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plumb"));
    cmd.args(["ui", "--listen", "127.0.0.1:0", "--live"])
        .arg(live);
    if let Some(r) = repo {
        cmd.arg("--repo").arg(r);
    }
    let mut child = cmd
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("plumb ui starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("its URL");
    (Proc(child), line.trim().to_string())
}

/// A DevTools protocol command through chromedriver's `goog/cdp/execute`.
#[derive(Debug)]
struct Cdp(&'static str, Value);

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/goog/cdp/execute",
            session.unwrap_or_default()
        ))
    }
    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({"cmd": self.0, "params": self.1}).to_string()),
        )
    }
}

/// Headless Chromium with a listener for CSP violations in every page it opens.
async fn browser(driver: &str, profile: &Path) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"args": [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--window-size=1280,1000", format!("--user-data-dir={}", profile.display()),
        ]}),
    );
    let c = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(driver)
        .await
        .expect("a browser session");
    c.issue_cmd(Cdp(
        "Page.addScriptToEvaluateOnNewDocument",
        json!({"source": "window.__violations = []; document.addEventListener('securitypolicyviolation', e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));"}),
    ))
    .await
    .expect("the violation listener");
    c
}

/// The page's text, as a reader sees it.
async fn text(c: &Client) -> String {
    c.find(Locator::Css("body"))
        .await
        .expect("body")
        .text()
        .await
        .expect("text")
}

/// Every page: no script element, no CSP violation, and the page's own style applied.
async fn clean(c: &Client, what: &str) {
    let v = c
        .execute(
            "return {scripts: document.scripts.length, violations: window.__violations || ['no listener'], maxWidth: getComputedStyle(document.body).maxWidth, pwned: window.__pwned === undefined ? null : String(window.__pwned)};",
            vec![],
        )
        .await
        .expect("script");
    assert_eq!(v["scripts"], 0, "{what}: {v}");
    assert_eq!(v["violations"], json!([]), "{what}: {v}");
    assert_eq!(
        v["maxWidth"], "1440px",
        "{what}: the style did not apply: {v}"
    );
    assert_eq!(v["pwned"], Value::Null, "{what}: a script ran: {v}");
}

/// axe-core's accessibility check of the page: no serious or critical violation. axe.min.js
/// is `PLUMB_AXE` (testbed/fetch-axe.sh; required with REQUIRE_BROWSER=1), injected through
/// WebDriver (the page's policy does not apply to it).
async fn accessible(c: &Client, what: &str) {
    let path = match std::env::var("PLUMB_AXE") {
        Ok(p) => p,
        Err(_) => {
            assert!(
                std::env::var("REQUIRE_BROWSER").is_err(),
                "REQUIRE_BROWSER is set but PLUMB_AXE (testbed/fetch-axe.sh) is not"
            );
            eprintln!("{what}: accessibility not checked: PLUMB_AXE unset (testbed/fetch-axe.sh)");
            return;
        }
    };
    let source = std::fs::read_to_string(&path).expect("axe.min.js");
    c.execute(&source, vec![]).await.expect("axe loads");
    let found = c
        .execute_async(
            "const done = arguments[arguments.length - 1]; axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' '))})))).catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e)}]));",
            vec![],
        )
        .await
        .expect("axe runs");
    let serious: Vec<&Value> = found
        .as_array()
        .expect("violations")
        .iter()
        .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
        .collect();
    assert!(serious.is_empty(), "{what}: {serious:#?}");
}

async fn screenshot(c: &Client, name: &str) {
    let dir = root().join("target/ui-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let png = c.screenshot().await.expect("screenshot");
    std::fs::write(dir.join(name), png).expect("write screenshot");
}

#[tokio::test]
async fn the_incident_in_a_browser() {
    let bin = driver_or_skip!("the_incident_in_a_browser");
    let _one = BROWSER.lock().await;
    let d = tmp("browser", "incident");
    let (_driver, driver_url) = start_driver(&bin);
    let (_ui, url) = start_ui(
        &root().join("examples/payments/live"),
        Some(&root().join("examples/payments/repo")),
    );
    let c = browser(&driver_url, &d.join("profile")).await;

    c.goto(&url).await.expect("the list");
    clean(&c, "list").await;
    accessible(&c, "list").await;
    let row = c
        .find(Locator::XPath("//tr[td/a[text()='payments-prod']]"))
        .await
        .expect("the app's row")
        .text()
        .await
        .expect("row text");
    assert!(row.contains("OutOfSync"), "{row}");
    assert!(row.contains("⟳ loop"), "{row}");
    screenshot(&c, "list.png").await;

    // The keyboard alone: Tab until the app's link has the focus (it shows), Enter opens it.
    let mut reached = false;
    for _ in 0..40 {
        let active = c.active_element().await.expect("focus");
        if active.text().await.unwrap_or_default() == "payments-prod" {
            let outline = c
                .execute(
                    "return getComputedStyle(document.activeElement).outlineStyle;",
                    vec![],
                )
                .await
                .expect("outline");
            assert_ne!(outline, "none", "the focus is visible");
            active.send_keys("\u{E007}").await.expect("Enter");
            reached = true;
            break;
        }
        active.send_keys("\u{E004}").await.expect("Tab");
    }
    assert!(reached, "Tab never reached the app's link");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c
        .current_url()
        .await
        .map(|u| u.path().ends_with("/apps/argocd/payments-prod"))
        .unwrap_or(false)
    {
        assert!(Instant::now() < deadline, "Enter did not open the app page");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.find(Locator::Css("#why")).await.expect("the page loaded");
    clean(&c, "app").await;
    accessible(&c, "app").await;
    let page = text(&c).await;
    assert!(page.contains("platform-policy-mutate"), "{page}");
    assert!(page.contains("overlays/prod/pull-policy.yaml:10"), "{page}");
    let line = std::fs::read_to_string(
        root().join("examples/payments/repo/overlays/prod/pull-policy.yaml"),
    )
    .expect("file")
    .lines()
    .nth(9)
    .expect("line 10")
    .trim()
    .to_string();
    let here = c
        .find(Locator::XPath(
            "//article[contains(., 'platform-policy-mutate')]//span[@class='here']",
        ))
        .await
        .expect("the declared line, marked")
        .text()
        .await
        .expect("text");
    assert!(here.contains(&line), "{here:?} shows {line:?}");
    screenshot(&c, "app.png").await;

    // The diff, reached from the page: the hand-edited selector, badged with kubectl-edit.
    c.find(Locator::LinkText("The diff, line by line"))
        .await
        .expect("the diff link")
        .click()
        .await
        .expect("open the diff");
    let row = c
        .find(Locator::XPath("//tr[contains(., 'payments-api-canary')]"))
        .await
        .expect("the selector's line")
        .text()
        .await
        .expect("text");
    assert!(row.contains("kubectl-edit"), "{row}");
    clean(&c, "diff").await;
    accessible(&c, "diff").await;
    screenshot(&c, "diff.png").await;
    c.issue_cmd(Cdp(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    ))
    .await
    .expect("dark");
    accessible(&c, "diff, dark").await;
    screenshot(&c, "diff-dark.png").await;
    c.issue_cmd(Cdp("Emulation.setEmulatedMedia", json!({"features": []})))
        .await
        .expect("light");

    // The history: the timeline has one mark per sync of the looping revision.
    c.goto(&format!("{url}apps/argocd/payments-prod/history"))
        .await
        .expect("the history");
    let marks = c
        .find_all(Locator::Css("svg.timeline path.mark"))
        .await
        .expect("marks");
    assert_eq!(marks.len(), 5);
    clean(&c, "history").await;
    accessible(&c, "history").await;
    screenshot(&c, "history.png").await;
    c.close().await.expect("close");
}

#[tokio::test]
async fn hostile_names_and_values_render_as_text() {
    let bin = driver_or_skip!("hostile_names_and_values_render_as_text");
    let _one = BROWSER.lock().await;
    let d = tmp("browser", "xss");
    let name = "x<script>window.__pwned=1</script>";
    let project = "<img src=x onerror=\"window.__pwned=2\">";
    let revision = "javascript:window.__pwned=3";
    let app = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd",
                     "annotations": {"link.argocd.argoproj.io/external-link": "javascript:window.__pwned=4"}},
        "spec": {"project": project, "destination": {"server": "https://kubernetes.default.svc", "namespace": "web"},
                 "source": {"repoURL": "https://example.invalid/r.git", "path": "<b>p</b>"}},
        "status": {"sync": {"status": "OutOfSync", "revision": revision}, "health": {"status": "<i>Healthy</i>"}},
    });
    write(&d, "live/app.json", &app.to_string());
    let (_driver, driver_url) = start_driver(&bin);
    let (_ui, url) = start_ui(&d.join("live"), None);
    let c = browser(&driver_url, &d.join("profile")).await;

    c.goto(&url).await.expect("the list");
    clean(&c, "list").await;
    let page = text(&c).await;
    for shown in [name, project, revision, "<i>Healthy</i>"] {
        assert!(page.contains(shown), "{shown} as text in {page}");
    }
    let tags = c
        .execute(
            "return document.querySelectorAll('img, b, i, script').length;",
            vec![],
        )
        .await
        .expect("count");
    assert_eq!(tags, 0);
    // The only links are plumb's own paths.
    let hrefs = c
        .execute(
            "return Array.from(document.links).map(a => a.getAttribute('href'));",
            vec![],
        )
        .await
        .expect("links");
    for h in hrefs.as_array().expect("links") {
        let h = h.as_str().unwrap_or_default();
        assert!(h.starts_with('/') && !h.starts_with("//"), "{h}");
    }
    // The app page (its source cannot be fetched: the error page) is text too.
    let link = c.find(Locator::Css("td a")).await.expect("the app's link");
    link.click().await.expect("open");
    c.find(Locator::Css("h1")).await.expect("a page");
    clean(&c, "app").await;
    screenshot(&c, "xss.png").await;
    c.close().await.expect("close");
}

#[tokio::test]
async fn the_html_report_opens_with_the_network_off() {
    let bin = driver_or_skip!("the_html_report_opens_with_the_network_off");
    let _one = BROWSER.lock().await;
    let d = tmp("browser", "report");
    let o = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args([
            "doctor",
            "payments-prod",
            "--live",
            "examples/payments/live",
            "--repo",
            "examples/payments/repo",
            "-o",
            "html",
        ])
        .current_dir(root())
        .output()
        .expect("doctor");
    assert_eq!(o.status.code(), Some(1));
    let file = d.join("report.html");
    std::fs::write(&file, &o.stdout).expect("write report");

    let (_driver, driver_url) = start_driver(&bin);
    let c = browser(&driver_url, &d.join("profile")).await;
    c.issue_cmd(Cdp("Network.enable", json!({})))
        .await
        .expect("network");
    c.issue_cmd(Cdp(
        "Network.emulateNetworkConditions",
        json!({"offline": true, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0}),
    ))
    .await
    .expect("offline");
    c.goto(&format!("file://{}", file.display()))
        .await
        .expect("the report");
    clean(&c, "report").await;
    accessible(&c, "report").await;
    screenshot(&c, "report.png").await;
    // And in the dark scheme.
    c.issue_cmd(Cdp(
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]}),
    ))
    .await
    .expect("dark");
    accessible(&c, "report, dark").await;
    screenshot(&c, "report-dark.png").await;
    let page = text(&c).await;
    for want in [
        "payments-prod",
        "platform-policy-mutate",
        "overlays/prod/pull-policy.yaml:10",
        "Why OutOfSync",
    ] {
        assert!(page.contains(want), "{want} in {page}");
    }
    let loaded = c
        .execute(
            "return performance.getEntriesByType('resource').length;",
            vec![],
        )
        .await
        .expect("resources");
    assert_eq!(loaded, 0, "the report loaded something");
    c.close().await.expect("close");
}
