//! Refresh on push, end to end: the real `plumb controller` process (refresh interval 600 s)
//! on the test bed, its app's repository served by a real `git daemon`, and push webhooks
//! posted to its `--listen` address. For each provider (GitHub, GitLab, Bitbucket Cloud,
//! Bitbucket Server, Gitea) a new commit is pushed, then an unsigned and a wrongly signed
//! payload are refused (401) with the app still at the old commit, then the signed payload
//! syncs the new commit, far sooner than the refresh interval (the latency is printed). A
//! 10 MB payload is refused with 413.

#[path = "../../plumb-cluster/tests/support/mod.rs"]
mod support;

mod common;
use common::{git, write};
use plumb_cluster::Cluster;
use plumb_render::testing::GitDaemon;
use plumb_sync::webhook::sign_hex;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{apply, eventually, namespace, testbed, unique, wait_until};

/// A controller process: SIGKILLed and reaped when dropped, also on a failed assertion.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn install_application_crd(cluster: &Cluster) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crd.yaml");
    let text = std::fs::read_to_string(&path).expect("deploy/crd.yaml");
    apply(
        cluster,
        serde_saphyr::from_str_multiple(&text).expect("CRD YAML"),
    )
    .await;
    wait_until("applications.plumb.dev being served", || async {
        cluster.discover().await.ok()?;
        cluster.list_applications(None).await.ok().map(|_| ())
    })
    .await;
}

/// A POST to `/api/webhook` at `addr`; the body is written from another thread so that an
/// answer sent before the body is read (413) is read too. Status and body.
fn post(addr: &str, headers: &[(&str, String)], body: &[u8]) -> (u16, String) {
    let stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut head = format!(
        "POST /api/webhook HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut writer = stream.try_clone().expect("clone");
    let body = body.to_vec();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(head.as_bytes());
        let _ = writer.write_all(&body);
    });
    let mut answer = String::new();
    let mut reader = stream;
    let _ = reader.read_to_string(&mut answer);
    let _ = sender.join();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plumb-sync/src/webhook/testdata")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("JSON")
}

/// One provider's signed request for a push of `main` of the repository at `web` (its web
/// URL: `http://127.0.0.1:PORT/web`) and `clone` (the app's `git://` URL): headers without
/// and with the signature, the wrong signature, and the body.
struct Delivery {
    provider: &'static str,
    headers: Vec<(&'static str, String)>,
    signed: (&'static str, String),
    wrong: String,
    body: Vec<u8>,
}

const GITHUB: &str = "gh-secret-1";
const GITLAB: &str = "gl-token-1";
const BITBUCKET_UUID: &str = "{82b7d8d6-1c4a-4f0e-9ef3-1d2c3b4a5f60}";
const BITBUCKET_SERVER: &str = "bbs-secret-1";
const GITEA: &str = "gitea-secret-1";

fn deliveries(web: &str, clone: &str) -> Vec<Delivery> {
    let bytes = |v: &Value| serde_json::to_vec(v).expect("JSON");
    let mut github = fixture("github-push.json");
    github["repository"]["html_url"] = json!(web);
    github["repository"]["clone_url"] = json!(format!("{web}.git"));
    github["repository"]["ssh_url"] = json!(clone);
    let github = bytes(&github);
    let mut gitlab = fixture("gitlab-push.json");
    gitlab["project"]["web_url"] = json!(web);
    gitlab["project"]["git_http_url"] = json!(format!("{web}.git"));
    gitlab["project"]["git_ssh_url"] = json!(clone);
    let gitlab = bytes(&gitlab);
    let mut bitbucket = fixture("bitbucket-push.json");
    bitbucket["repository"]["links"]["html"]["href"] = json!(web);
    let bitbucket = bytes(&bitbucket);
    let mut server = fixture("bitbucketserver-refs-changed.json");
    server["repository"]["links"]["clone"] =
        json!([{"href": clone, "name": "ssh"}, {"href": format!("{web}.git"), "name": "http"}]);
    let server = bytes(&server);
    let mut gitea = fixture("gitea-push.json");
    gitea["repository"]["html_url"] = json!(web);
    gitea["repository"]["clone_url"] = json!(format!("{web}.git"));
    gitea["repository"]["ssh_url"] = json!(clone);
    let gitea = bytes(&gitea);
    vec![
        Delivery {
            provider: "github",
            headers: vec![("X-GitHub-Event", "push".into())],
            signed: (
                "X-Hub-Signature-256",
                format!("sha256={}", sign_hex(GITHUB, &github)),
            ),
            wrong: format!("sha256={}", sign_hex("not-the-secret", &github)),
            body: github,
        },
        Delivery {
            provider: "gitlab",
            headers: vec![("X-Gitlab-Event", "Push Hook".into())],
            signed: ("X-Gitlab-Token", GITLAB.into()),
            wrong: "gl-token-2".into(),
            body: gitlab,
        },
        Delivery {
            provider: "bitbucket",
            headers: vec![("X-Event-Key", "repo:push".into())],
            signed: ("X-Hook-UUID", BITBUCKET_UUID.into()),
            wrong: "{00000000-0000-0000-0000-000000000000}".into(),
            body: bitbucket,
        },
        Delivery {
            provider: "bitbucketserver",
            headers: vec![("X-Event-Key", "repo:refs_changed".into())],
            signed: (
                "X-Hub-Signature",
                format!("sha256={}", sign_hex(BITBUCKET_SERVER, &server)),
            ),
            wrong: format!("sha256={}", sign_hex(GITEA, &server)),
            body: server,
        },
        Delivery {
            provider: "gitea",
            // Gitea also sends GitHub's and Gogs' headers.
            headers: vec![
                ("X-Gitea-Event", "push".into()),
                ("X-Gogs-Event", "push".into()),
                ("X-GitHub-Event", "push".into()),
            ],
            signed: ("X-Gitea-Signature", sign_hex(GITEA, &gitea)),
            wrong: sign_hex(GITHUB, &gitea),
            body: gitea,
        },
    ]
}

fn configmap(value: &str) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
        "data": {"k": value}})
    .to_string()
}

/// The app's synced revision and the ConfigMap's value.
async fn state(cluster: &Cluster, apps: &str, dest: &str) -> (String, Option<String>) {
    let app = cluster
        .get_application(apps, "web")
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    let revision = app
        .pointer("/status/sync/revision")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let value = cluster
        .get_object("", "ConfigMap", dest, "settings")
        .await
        .ok()
        .flatten()
        .and_then(|c| {
            c.pointer("/data/k")
                .and_then(Value::as_str)
                .map(String::from)
        });
    (revision, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_push_webhook_of_each_provider_syncs_the_new_commit_at_once() {
    let Some(cluster) =
        testbed("a_signed_push_webhook_of_each_provider_syncs_the_new_commit_at_once").await
    else {
        return;
    };
    install_application_crd(&cluster).await;
    let apps_ns = namespace(&cluster, "webhook-apps", json!({})).await;
    let dest = namespace(&cluster, "webhook-dest", json!({})).await;
    let root = std::env::temp_dir().join(unique("plumb-webhook"));
    let origin = root.join("served/web.git");
    std::fs::create_dir_all(&origin).expect("mkdir");
    git(&origin, &["init", "-q", "--bare", "--initial-branch=main"]);
    let work = root.join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    git(&work, &["init", "-q", "-b", "main"]);
    let commit = |value: &str| {
        write(&work, "app/cm.json", &configmap(value));
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-qm", value]);
        git(
            &work,
            &["push", "-q", origin.to_str().expect("utf-8"), "HEAD:main"],
        );
        git(&work, &["rev-parse", "HEAD"])
    };
    let first = commit("v0");
    let daemon = GitDaemon::serve(&root.join("served")).expect("git daemon");
    let clone = daemon.url("web.git");
    let web = format!("http://127.0.0.1:{}/web", daemon.port());

    apply(
        &cluster,
        vec![
            json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "web", "namespace": apps_ns},
            "spec": {"project": "default",
                "source": {"repoURL": clone, "path": "app", "targetRevision": "HEAD"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": dest},
                "syncPolicy": {"automated": {"prune": true}}}}),
        ],
    )
    .await;
    let secrets = root.join("webhook-secrets.yaml");
    std::fs::write(
        &secrets,
        format!(
            "webhook.github.secret: {GITHUB}\nwebhook.gitlab.secret: {GITLAB}\n\
             webhook.bitbucket.uuid: \"{BITBUCKET_UUID}\"\n\
             webhook.bitbucketserver.secret: {BITBUCKET_SERVER}\nwebhook.gitea.secret: {GITEA}\n"
        ),
    )
    .expect("secret file");
    let log = root.join("controller.log");
    let _controller = Running(
        Command::new(env!("CARGO_BIN_EXE_plumb"))
            .args([
                "controller",
                "--app-namespace",
                &apps_ns,
                "--lease-namespace",
                &apps_ns,
            ])
            .args([
                "--lease-duration",
                "3",
                "--interval",
                "600",
                "--jitter",
                "0",
            ])
            .args(["--listen", "127.0.0.1:0", "--webhook-secret-file"])
            .arg(&secrets)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("PLUMB_REPO_CACHE", root.join("cache"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log).expect("log")))
            .spawn()
            .expect("plumb controller starts"),
    );
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    let addr = wait_until("the controller's listening address", || async {
        log_text().lines().find_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            v.get("listening")?.as_str().map(String::from)
        })
    })
    .await;
    let (cluster, apps, dest_ns) = (&cluster, &apps_ns, &dest);
    wait_until("the first commit synced", || async {
        let (revision, value) = state(cluster, apps, dest_ns).await;
        (revision == first && value.as_deref() == Some("v0")).then_some(())
    })
    .await;
    assert!(
        log_text().contains(r#""webhookSecrets":["webhook.github.secret","webhook.gitlab.secret","webhook.bitbucket.uuid","webhook.bitbucketserver.secret","webhook.gitea.secret"]"#),
        "{}",
        log_text()
    );
    for secret in [GITHUB, GITLAB, BITBUCKET_SERVER, GITEA] {
        assert!(!log_text().contains(secret), "a secret in the log");
    }

    let mut previous = first;
    for (n, d) in deliveries(&web, &clone).into_iter().enumerate() {
        let value = format!("v{}", n + 1);
        let pushed = commit(&value);
        // Unsigned and wrongly signed: refused, nothing queued (the refusal is decided
        // before any app is looked at), the app still at the previous commit.
        let (status, body) = post(&addr, &d.headers, &d.body);
        assert_eq!(status, 401, "{} unsigned: {body}", d.provider);
        let mut wrong = d.headers.clone();
        wrong.push((d.signed.0, d.wrong.clone()));
        let (status, body) = post(&addr, &wrong, &d.body);
        assert_eq!(status, 401, "{} wrongly signed: {body}", d.provider);
        assert_eq!(
            state(cluster, apps, dest_ns).await,
            (previous.clone(), Some(format!("v{n}"))),
            "{}: a refused payload changed the app",
            d.provider
        );

        let mut signed = d.headers.clone();
        signed.push((d.signed.0, d.signed.1.clone()));
        let started = Instant::now();
        let (status, body) = post(&addr, &signed, &d.body);
        assert_eq!(status, 200, "{} signed: {body}", d.provider);
        let answer: Value = serde_json::from_str(&body).expect("JSON answer");
        assert_eq!(answer["provider"], d.provider, "{body}");
        assert_eq!(
            answer["refreshed"],
            json!([format!("{apps}/web")]),
            "{body}"
        );
        let synced = eventually(Duration::from_secs(60), || async {
            let (revision, v) = state(cluster, apps, dest_ns).await;
            (revision == pushed && v.as_deref() == Some(value.as_str())).then_some(())
        })
        .await;
        assert!(
            synced.is_some(),
            "{}: the pushed commit was not synced within 60 s (refresh interval 600 s)\n{}",
            d.provider,
            log_text()
        );
        eprintln!(
            "{}: pushed commit synced {} ms after the webhook",
            d.provider,
            started.elapsed().as_millis()
        );
        previous = pushed;
    }
    assert!(
        log_text().contains(r#""trigger":"webhook""#),
        "{}",
        log_text()
    );

    // A 10 MB payload: refused before it is read, with 413.
    let big = vec![b' '; 10 << 20];
    let (status, body) = post(&addr, &[("X-GitHub-Event", "push".into())], &big);
    assert_eq!(status, 413, "{body}");
    let text = log_text();
    assert!(!text.contains("panicked"), "{text}");
    drop(daemon);
    let _ = std::fs::remove_dir_all(&root);
}
