//! Headless Chromium for the tests: chromedriver started on a free port, a session whose
//! pages carry a listener for Content-Security-Policy violations, and the checks every page
//! gets (no script, no violation, the page's own style applied, axe-core's accessibility
//! rules). Included by `browser.rs` and `sync_loop.rs` (`#[path]`); skipped without
//! chromedriver unless REQUIRE_BROWSER=1.
#![allow(dead_code)]

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// One browser at a time: Chromium is heavy on a 2-core machine.
pub static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub fn chromedriver() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PLUMB_CHROMEDRIVER") {
        return Some(PathBuf::from(p));
    }
    ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

#[macro_export]
macro_rules! driver_or_skip {
    ($name:expr) => {
        match $crate::chrome::chromedriver() {
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
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// chromedriver on a free port, once it accepts connections (60 s at most).
pub fn start_driver(bin: &Path) -> (Proc, String) {
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

/// A DevTools protocol command through chromedriver's `goog/cdp/execute`.
#[derive(Debug)]
pub struct Cdp(pub &'static str, pub Value);

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
pub async fn browser(driver: &str, profile: &Path) -> Client {
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
pub async fn text(c: &Client) -> String {
    c.find(Locator::Css("body"))
        .await
        .expect("body")
        .text()
        .await
        .expect("text")
}

/// Every page: no script element, no CSP violation, and the page's own style applied.
pub async fn clean(c: &Client, what: &str) {
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
pub async fn accessible(c: &Client, what: &str) {
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

pub async fn screenshot(c: &Client, name: &str) {
    let dir = root().join("target/ui-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let png = c.screenshot().await.expect("screenshot");
    std::fs::write(dir.join(name), png).expect("write screenshot");
}
