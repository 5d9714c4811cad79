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

#[path = "common/chrome.rs"]
mod chrome;
mod common;
use chrome::{
    BROWSER, Cdp, Proc, accessible, browser, clean, root, screenshot, start_driver, text,
};
use common::{tmp, write};
use fantoccini::Locator;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
