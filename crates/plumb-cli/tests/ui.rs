//! `plumb ui` end to end, over HTTP: the list and the app page over the shipped payments
//! incident (the page is `plumb doctor`'s report: its JSON is the command's), the filters and
//! `?format=json`, and the security defaults — loopback only without a token, the Host
//! allow-list, GET only, the token as bearer or exchanged once for a cookie, the policy
//! headers, and no Secret value in any answer.

mod common;
use common::{copy_tree, err, git, out, tmp, write};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A running `plumb ui`, stopped when dropped.
struct Ui {
    child: Child,
    /// `127.0.0.1:PORT`.
    addr: String,
    /// The first line it printed.
    url: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(extra: &[&str]) -> Ui {
    start_on(
        &root().join("examples/payments/live"),
        &root().join("examples/payments/repo"),
        extra,
    )
}

fn start_on(live: &std::path::Path, repo: &std::path::Path, extra: &[&str]) -> Ui {
    let mut child = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(["ui", "--listen", "127.0.0.1:0", "--live"])
        .arg(live)
        .arg("--repo")
        .arg(repo)
        .args(extra)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("plumb ui starts");
    // The URL is printed once the server listens: reading it is the wait.
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("first line");
    let url = line.trim().to_string();
    let addr = url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("a URL first: {url:?}"))
        .to_string();
    Ui { child, addr, url }
}

/// One HTTP/1.1 exchange; (status, headers lower-cased, body).
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_lowercase(), body.to_string())
}

fn get(ui: &Ui, path: &str) -> (u16, String, String) {
    request(&ui.addr, "GET", path, &[])
}

/// The payments example's Secret values (git's and the cluster's), plain and base64.
const SECRETS: &[&str] = &[
    "correct-horse-battery-staple",
    "Y29ycmVjdC1ob3JzZS1iYXR0ZXJ5LXN0YXBsZQ==",
    "rotated-by-hand-at-3am",
    "cm90YXRlZC1ieS1oYW5kLWF0LTNhbQ==",
];

#[test]
fn the_list_and_the_app_page_over_the_incident() {
    let ui = start(&[]);
    assert!(
        ui.url.starts_with("http://127.0.0.1:") && ui.url.ends_with('/'),
        "{}",
        ui.url
    );

    let (status, head, list) = get(&ui, "/");
    assert_eq!(status, 200, "{list}");
    assert!(
        head.contains("content-security-policy: default-src 'none'"),
        "{head}"
    );
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
    let row = list
        .split("<tr>")
        .find(|r| r.contains(">payments-prod</a>"))
        .unwrap_or_else(|| panic!("a row for payments-prod: {list}"));
    assert!(
        row.contains(r#"<a href="/apps/argocd/payments-prod">"#),
        "{row}"
    );
    assert!(row.contains("OutOfSync"), "{row}");
    // The loop marker: icon and word.
    assert!(
        row.contains(r#"<span aria-hidden="true">⟳</span> loop"#),
        "{row}"
    );

    let (status, _, json) = get(&ui, "/?format=json");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["total"], 1);
    assert_eq!(v["apps"][0]["verdict"], "loop");
    assert_eq!(v["apps"][0]["sync"], "OutOfSync");

    // Filters, on the server.
    let (_, _, json) = get(&ui, "/?format=json&verdict=in-sync");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json).expect("JSON")["total"],
        0
    );
    let (_, _, json) = get(&ui, "/?format=json&q=PAYMENTS&sync=OutOfSync");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json).expect("JSON")["total"],
        1
    );
    let (_, _, page) = get(&ui, "/?project=nope");
    assert!(
        page.contains("No application matches these filters"),
        "{page}"
    );

    // The app page: the webhook, the place git declares the field, that line's text.
    let (status, _, app) = get(&ui, "/apps/argocd/payments-prod");
    assert_eq!(status, 200, "{app}");
    assert!(app.contains("platform-policy-mutate"), "{app}");
    assert!(
        app.contains("<code>overlays/prod/pull-policy.yaml:10</code>"),
        "{app}"
    );
    let line = std::fs::read_to_string(
        root().join("examples/payments/repo/overlays/prod/pull-policy.yaml"),
    )
    .expect("file")
    .lines()
    .nth(9)
    .expect("line 10")
    .to_string();
    assert!(
        app.contains(&format!(
            "<span class=\"here\"><span class=\"lineno\">  10 </span>{line}"
        )),
        "{line} in {app}"
    );
    assert!(!app.contains("<script"), "{app}");

    // The resources as a tree with sync and health, and the last sync operation.
    let tree = app
        .split("<h2 id=\"tree\">Resources</h2>")
        .nth(1)
        .and_then(|t| t.split("</section>").next())
        .unwrap_or_else(|| panic!("a resource tree: {app}"));
    for (resource, sync) in [
        ("/Service pay-prod/payments-api", "OutOfSync"),
        ("apps/Deployment pay-prod/payments-api", "OutOfSync"),
        ("/ConfigMap pay-prod/payments-config", "Synced"),
    ] {
        let item = tree
            .split("<li>")
            .find(|i| i.contains(&format!("<span>{resource}</span>")))
            .unwrap_or_else(|| panic!("{resource} in {tree}"));
        assert!(item.contains(&format!("</span> {sync}</span>")), "{item}");
    }
    assert!(
        app.contains("<h2 id=\"operation\">Last sync operation</h2>"),
        "{app}"
    );
    assert!(
        app.contains("<strong>Succeeded</strong>: successfully synced (all tasks run)"),
        "{app}"
    );

    // Its JSON is the command's report.
    let (_, _, page_json) = get(&ui, "/apps/argocd/payments-prod?format=json");
    let cli = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args([
            "doctor",
            "argocd/payments-prod",
            "--live",
            "examples/payments/live",
            "--repo",
            "examples/payments/repo",
            "-o",
            "json",
        ])
        .current_dir(root())
        .output()
        .expect("doctor");
    let a: serde_json::Value = serde_json::from_str(&page_json).expect("page JSON");
    let b: serde_json::Value = serde_json::from_str(&out(&cli)).expect("doctor JSON");
    assert_eq!(a, b);

    // The diff: the hand-edited Service's selector, badged with who wrote it.
    let (status, _, diff) = get(&ui, "/apps/argocd/payments-prod/diff");
    assert_eq!(status, 200, "{diff}");
    let row = diff
        .split("<tr class=\"removed\">")
        .find(|r| r.contains("app: payments-api-canary"))
        .unwrap_or_else(|| panic!("the live selector line: {diff}"));
    assert!(
        row.contains(r#"<span class="badge">kubectl-edit</span>"#),
        "{row}"
    );
    assert!(
        app.contains(r#"<a href="/apps/argocd/payments-prod/diff">"#),
        "{app}"
    );
    let (_, _, json) = get(&ui, "/apps/argocd/payments-prod/diff?format=json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["actors"]["kubectl-edit"], 2, "{v:#}");
    let service = v["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["resource"] == "/Service pay-prod/payments-api")
        .expect("the Service");
    let changed: Vec<(&str, &str)> = service["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| l["kind"] != "same")
        .map(|l| {
            (
                l["text"].as_str().unwrap_or(""),
                l["actor"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            ("    app: payments-api-canary", "kubectl-edit"),
            ("    app: payments-api", "kubectl-edit")
        ]
    );
    // Hiding the lines kubectl-edit wrote; side by side.
    let (_, _, hidden) = get(&ui, "/apps/argocd/payments-prod/diff?hide=kubectl-edit");
    assert!(!hidden.contains("payments-api-canary"), "{hidden}");
    assert!(hidden.contains("imagePullPolicy: Always"), "{hidden}");
    let (_, _, split) = get(&ui, "/apps/argocd/payments-prod/diff?view=split");
    let row = split
        .split("<tr>")
        .find(|r| r.contains("app: payments-api-canary"))
        .unwrap_or_else(|| panic!("the selector's row: {split}"));
    assert!(
        row.contains("+    app: payments-api<"),
        "both sides on one row: {row}"
    );

    // The history: one mark per sync of the looping revision, and the loop's banner.
    let (status, _, history) = get(&ui, "/apps/argocd/payments-prod/history");
    assert_eq!(status, 200, "{history}");
    let svg = history
        .split("<svg class=\"timeline\"")
        .nth(1)
        .and_then(|rest| rest.split("</svg>").next())
        .unwrap_or_else(|| panic!("a timeline: {history}"));
    assert_eq!(svg.matches("<path class=\"mark ").count(), 5, "{svg}");
    assert_eq!(
        svg.matches("<path class=\"mark self-heal\"").count(),
        4,
        "{svg}"
    );
    assert!(
        history.contains("loop: 5 syncs of b5e2be1f3c9d8a7e6b5c4d3e2f1a0b9c8d7e6f5a in 84s, rewritten by platform-policy-mutate"),
        "{history}"
    );
    assert!(
        app.contains(r#"<a href="/apps/argocd/payments-prod/history">"#),
        "{app}"
    );
    let (_, _, json) = get(&ui, "/apps/argocd/payments-prod/history?format=json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let triggers: Vec<&str> = v["syncs"]
        .as_array()
        .expect("syncs")
        .iter()
        .map(|s| s["trigger"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        triggers,
        [
            "automated",
            "self-heal",
            "self-heal",
            "self-heal",
            "self-heal"
        ]
    );

    // The fleet by cause: the webhook and the person, each with the field it fights.
    let (_, _, json) = get(&ui, "/actors?format=json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let webhook = v["actors"]
        .as_array()
        .expect("actors")
        .iter()
        .find(|a| a["name"] == "platform-policy-mutate")
        .unwrap_or_else(|| panic!("the webhook: {v:#}"));
    assert_eq!(webhook["cause"], "mutating-webhook");
    assert_eq!(
        webhook["apps"]["argocd/payments-prod"],
        serde_json::json!([
            "apps/Deployment pay-prod/payments-api /spec/template/spec/containers/0/imagePullPolicy"
        ])
    );
    let (status, _, page) = get(&ui, "/actors?sort=name");
    assert_eq!(status, 200);
    let at = |needle: &str| {
        page.find(needle)
            .unwrap_or_else(|| panic!("{needle} in {page}"))
    };
    assert!(at("<strong>kubectl-edit</strong>") < at("<strong>platform-policy-mutate</strong>"));
    assert!(
        page.contains(r#"<a href="/apps/argocd/payments-prod">argocd/payments-prod</a>"#),
        "{page}"
    );

    // Not found, in the page's own form.
    let (status, _, body) = get(&ui, "/apps/argocd/nope");
    assert_eq!(status, 404);
    assert!(
        body.contains("There is no Application argocd/nope."),
        "{body}"
    );
    let (status, _, _) = get(&ui, "/elsewhere");
    assert_eq!(status, 404);

    for path in [
        "/",
        "/?format=json",
        "/apps/argocd/payments-prod",
        "/apps/argocd/payments-prod?format=json",
    ] {
        let (_, head, body) = get(&ui, path);
        for s in SECRETS {
            assert!(
                !body.contains(s) && !head.contains(&s.to_lowercase()),
                "{s} in {path}"
            );
        }
    }
}

/// `plumb ui ARGS` run from the root: its exit code and what it wrote on stderr.
fn refused(args: &[&str], more: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_plumb"))
        .arg("ui")
        .args(args)
        .args(more)
        .current_dir(root())
        .output()
        .expect("plumb ui");
    (o.status.code(), err(&o))
}

#[test]
fn refusals_by_default() {
    let ui = start(&[]);
    // DNS rebinding: a name the server was not started for.
    let (status, _, _) = request(&ui.addr, "GET", "/", &[("Host", "attacker.example:80")]);
    assert_eq!(status, 421);
    let port = ui.addr.rsplit(':').next().expect("port");
    let (status, _, _) = request(
        &ui.addr,
        "GET",
        "/",
        &[("Host", &format!("localhost:{port}"))],
    );
    assert_eq!(status, 200);
    // Read-only.
    for method in ["POST", "PUT", "DELETE"] {
        let (status, head, _) = request(&ui.addr, method, "/", &[("Content-Length", "0")]);
        assert_eq!(status, 405, "{method}");
        assert!(head.contains("allow: get, head"), "{head}");
    }

    // Anything but loopback needs a token.
    let (code, e) = refused(
        &["--live", "examples/payments/live", "--listen", "0.0.0.0:0"],
        &[],
    );
    assert_eq!(code, Some(2));
    assert!(
        e.contains("--listen 0.0.0.0:0: not a loopback address; pass --token-file"),
        "{e}"
    );
}

#[test]
fn a_token_as_bearer_or_exchanged_once_for_a_cookie() {
    let d = tmp("ui", "token");
    let token = "s3cret-token-0123456789";
    write(&d, "token", &format!("{token}\n"));
    let file = d.join("token");
    let ui = start(&["--token-file", file.to_str().expect("utf-8 path")]);
    assert!(ui.url.ends_with(&format!("/?token={token}")), "{}", ui.url);

    let (status, _, body) = get(&ui, "/");
    assert_eq!(status, 401);
    assert!(!body.contains(token));
    let (status, _, _) = request(
        &ui.addr,
        "GET",
        "/",
        &[("Authorization", "Bearer wrong-token-0123456789")],
    );
    assert_eq!(status, 401);
    let (status, _, _) = request(
        &ui.addr,
        "GET",
        "/",
        &[("Authorization", &format!("Bearer {token}"))],
    );
    assert_eq!(status, 200);

    // The URL token: a cookie, and the same page without it.
    let (status, head, _) = get(&ui, &format!("/?verdict=loop&token={token}"));
    assert_eq!(status, 303, "{head}");
    assert!(head.contains("location: /?verdict=loop\r\n"), "{head}");
    let cookie = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("a cookie: {head}"));
    assert!(
        cookie.contains("httponly") && cookie.contains("samesite=strict"),
        "{cookie}"
    );
    assert!(
        !cookie.contains(token),
        "the cookie is a session, not the token: {cookie}"
    );
    let pair = cookie.split(';').next().expect("name=value");
    // Header names were lower-cased: the value is the session's, case and all, in hex.
    let (status, _, body) = request(&ui.addr, "GET", "/", &[("Cookie", pair)]);
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = get(&ui, "/?token=wrong-token-0123456789");
    assert_eq!(status, 401);
}

#[test]
fn a_short_token_is_refused() {
    let d = tmp("ui", "short");
    write(&d, "token", "short\n");
    let token = d.join("token");
    let (code, e) = refused(
        &[
            "--live",
            "examples/payments/live",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
        ],
        &[token.as_os_str()],
    );
    assert_eq!(code, Some(2));
    assert!(
        e.contains("the token must be at least 16 characters"),
        "{e}"
    );
}

#[test]
fn what_git_changed_between_two_syncs() {
    let d = tmp("ui", "history-diff");
    let repo = d.join("repo");
    copy_tree(&root().join("examples/payments/repo"), &repo);
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "one"]);
    let one = git(&repo, &["rev-parse", "HEAD"]);
    let deployment =
        std::fs::read_to_string(repo.join("base/deployment.yaml")).expect("deployment");
    write(
        &repo,
        "base/deployment.yaml",
        &deployment.replace("api:2.14.1", "api:2.15.0"),
    );
    git(&repo, &["commit", "-qam", "two"]);
    let two = git(&repo, &["rev-parse", "HEAD"]);
    // The snapshot, its Application synced at one, then at two.
    copy_tree(&root().join("examples/payments/live"), &d.join("live"));
    let app_file = d.join("live/application-payments-prod.json");
    let mut app: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&app_file).expect("app")).expect("JSON");
    let entry = |id: i64, rev: &str, at: &str| {
        serde_json::json!({"id": id, "revision": rev, "deployedAt": at, "deployStartedAt": at,
            "source": app["spec"]["source"].clone(), "initiatedBy": {"automated": true}})
    };
    app["status"]["history"] = serde_json::json!([
        entry(0, &one, "2026-09-22T19:00:00Z"),
        entry(1, &two, "2026-09-22T20:00:00Z")
    ]);
    app["status"]["sync"]["revision"] = serde_json::json!(two);
    std::fs::write(&app_file, app.to_string()).expect("write app");
    let ui = start_on(&d.join("live"), &repo, &[]);

    // The history proposes the two syncs of different revisions.
    let (status, _, history) = get(&ui, "/apps/argocd/payments-prod/history");
    assert_eq!(status, 200, "{history}");
    assert!(
        history.contains(r#"action="/apps/argocd/payments-prod/history/diff""#),
        "{history}"
    );
    assert!(
        history.contains(&format!(r#"<option value="0" selected>0: {one}</option>"#)),
        "{history}"
    );

    let (status, _, json) = get(
        &ui,
        "/apps/argocd/payments-prod/history/diff?from=0&to=1&format=json",
    );
    assert_eq!(status, 200, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let resources: Vec<&str> = v["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["resource"].as_str().unwrap_or(""))
        .collect();
    // As git renders it: the destination's namespace is added by the comparison, not here.
    assert_eq!(resources, ["apps/Deployment /payments-api"], "{v:#}");
    let changed: Vec<(&str, &str)> = v["resources"][0]["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| l["kind"] != "same")
        .map(|l| {
            (
                l["kind"].as_str().unwrap_or(""),
                l["text"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            (
                "removed",
                "      - image: registry.example.com/payments/api:2.14.1"
            ),
            (
                "added",
                "      - image: registry.example.com/payments/api:2.15.0"
            )
        ]
    );
    let (status, _, page) = get(&ui, "/apps/argocd/payments-prod/history/diff?from=0&to=1");
    assert_eq!(status, 200);
    assert!(page.contains("<th scope=\"col\">Sync 0</th>"), "{page}");
    assert!(page.contains("api:2.15.0"), "{page}");
    // Both revisions render the Secret: its value is masked, and it did not change.
    let (_, _, both) = get(
        &ui,
        "/apps/argocd/payments-prod/history/diff?from=1&to=0&format=json",
    );
    assert!(!both.contains("correct-horse-battery-staple"), "{both}");
    let (status, _, _) = get(&ui, "/apps/argocd/payments-prod/history/diff?from=0&to=9");
    assert_eq!(status, 400);
}
