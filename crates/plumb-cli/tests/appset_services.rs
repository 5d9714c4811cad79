//! `plumb appset generate` with the generators that read services, against a local HTTP server
//! (axum on 127.0.0.1) that answers as GitHub's, GitLab's and Gitea's REST APIs and as an
//! ApplicationSet plugin service answer (their paths, authentication headers, JSON shapes and
//! pagination: GitHub's and Gitea's `Link`, GitLab's `X-Next-Page`), following Argo CD's
//! documentation of the Pull Request, SCM Provider, Plugin and Cluster Decision Resource
//! generators. Tokens come from Secrets given with `--objects` and never appear in the output or
//! an error; a wrong token is one line naming the generator.

mod common;
use common::{err, out, write};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const GH: &str = "gh-token-1";
const GL: &str = "gl-token-2";
const GT: &str = "gt-token-3";
const PLUGIN: &str = "plugin-token-4";

/// A request as the server saw it: method, path, query, the header that carried a token.
type Seen = Arc<Mutex<Vec<String>>>;

fn sha(n: u8) -> String {
    format!("{n:x}").repeat(40)[..40].to_string()
}

/// The answer to one request: status, extra headers, JSON body.
fn answer(
    method: &str,
    path: &str,
    query: &str,
    auth: &str,
    base: &str,
) -> (u16, Vec<(String, String)>, Value) {
    let page = query
        .split('&')
        .find_map(|p| p.strip_prefix("page="))
        .unwrap_or("1");
    let pr = |n: u64, branch: &str, labels: &[&str], s: u8| {
        json!({"number": n, "title": format!("PR {n}"), "head": {"ref": branch, "sha": sha(s)},
               "base": {"ref": "main"}, "user": {"login": "dev"},
               "labels": labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>()})
    };
    let none = Vec::new();
    match (method, path) {
        // GitHub
        (_, p) if p.starts_with("/gh/") && auth != format!("Bearer {GH}") => {
            (401, none, json!({"message": "Bad credentials"}))
        }
        ("GET", "/gh/repos/acme/web/pulls") => {
            if page == "1" {
                let next = format!(
                    "<{base}/gh/repos/acme/web/pulls?state=open&per_page=100&page=2>; rel=\"next\""
                );
                (
                    200,
                    vec![("Link".into(), next)],
                    json!([pr(7, "feature/Login_Page", &["preview"], 1)]),
                )
            } else {
                (200, none, json!([pr(8, "fix-typo", &[], 2)]))
            }
        }
        ("GET", "/gh/orgs/acme/repos") => (
            200,
            none,
            json!([
            {"id": 11, "name": "web", "clone_url": "https://git.example.com/acme/web.git",
             "ssh_url": "git@git.example.com:acme/web.git", "default_branch": "main", "topics": ["deploy"]},
            {"id": 12, "name": "docs", "clone_url": "https://git.example.com/acme/docs.git",
             "ssh_url": "git@git.example.com:acme/docs.git", "default_branch": "main", "topics": []}]),
        ),
        ("GET", "/gh/repos/acme/web/branches/main") => (
            200,
            none,
            json!({"name": "main", "commit": {"sha": sha(3)}}),
        ),
        ("GET", "/gh/repos/acme/docs/branches/main") => (
            200,
            none,
            json!({"name": "main", "commit": {"sha": sha(4)}}),
        ),
        ("GET", "/gh/repos/acme/web/contents/deploy/kustomization.yaml") => {
            (200, none, json!({"type": "file"}))
        }
        ("GET", p) if p.starts_with("/gh/repos/acme/docs/contents/") => {
            (404, none, json!({"message": "Not Found"}))
        }
        // GitLab
        (_, p) if p.starts_with("/gl/") && auth != GL => {
            (401, none, json!({"message": "401 Unauthorized"}))
        }
        ("GET", "/gl/api/v4/projects/acme%2Fweb/merge_requests") => {
            let mr = |iid: u64, branch: &str, s: u8| {
                json!({"iid": iid, "title": format!("MR {iid}"),
                "source_branch": branch, "target_branch": "main", "sha": sha(s),
                "author": {"username": "dev"}, "labels": ["preview"]})
            };
            if page == "1" {
                (
                    200,
                    vec![("X-Next-Page".into(), "2".into())],
                    json!([mr(3, "gl-one", 5)]),
                )
            } else {
                (
                    200,
                    vec![("X-Next-Page".into(), String::new())],
                    json!([mr(4, "gl-two", 6)]),
                )
            }
        }
        ("GET", "/gl/api/v4/groups/acme/projects") => (
            200,
            none,
            json!([
            {"id": 21, "path": "api", "http_url_to_repo": "https://gitlab.example.com/acme/api.git",
             "ssh_url_to_repo": "git@gitlab.example.com:acme/api.git", "default_branch": "main",
             "topics": ["deploy"], "namespace": {"full_path": "acme"}}]),
        ),
        ("GET", "/gl/api/v4/projects/21/repository/branches") => (
            200,
            none,
            json!([
            {"name": "main", "commit": {"id": sha(7)}}, {"name": "release-1", "commit": {"id": sha(8)}}]),
        ),
        // Gitea
        (_, p) if p.starts_with("/gt/") && auth != format!("token {GT}") => {
            (401, none, json!({"message": "token is required"}))
        }
        ("GET", "/gt/api/v1/repos/acme/web/pulls") => {
            (200, none, json!([pr(12, "gitea-branch", &[], 9)]))
        }
        ("GET", "/gt/api/v1/orgs/acme/repos") => (
            200,
            none,
            json!([
            {"id": 31, "name": "svc", "clone_url": "https://gitea.example.com/acme/svc.git",
             "ssh_url": "git@gitea.example.com:acme/svc.git", "default_branch": "trunk"}]),
        ),
        ("GET", "/gt/api/v1/repos/acme/svc/branches/trunk") => (
            200,
            none,
            json!({"name": "trunk", "commit": {"id": sha(10)}}),
        ),
        // A plugin service.
        ("POST", "/plugin/api/v1/getparams.execute") if auth == format!("Bearer {PLUGIN}") => {
            (200, none, Value::Null)
        }
        ("POST", "/plugin/api/v1/getparams.execute") => (403, none, json!({"error": "forbidden"})),
        _ => (404, none, json!({"message": "Not Found"})),
    }
}

struct Server {
    base: String,
    seen: Seen,
    _rt: tokio::runtime::Runtime,
}

fn serve() -> Server {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let seen: Seen = Arc::default();
    let (b, s) = (base.clone(), seen.clone());
    let app = axum::Router::new().fallback(
        move |method: axum::http::Method,
              uri: axum::http::Uri,
              headers: axum::http::HeaderMap,
              body: axum::body::Bytes| {
            let (b, s) = (b.clone(), s.clone());
            async move {
                let auth = ["authorization", "private-token"]
                    .iter()
                    .find_map(|h| headers.get(*h).and_then(|v| v.to_str().ok()))
                    .unwrap_or("")
                    .to_string();
                let (path, query) = (
                    uri.path().to_string(),
                    uri.query().unwrap_or("").to_string(),
                );
                s.lock()
                    .expect("lock")
                    .push(format!("{method} {path}?{query}"));
                let (status, extra, mut json) = answer(method.as_str(), &path, &query, &auth, &b);
                if method == axum::http::Method::POST && status == 200 {
                    // The plugin echoes its input as two parameter sets.
                    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let input = req
                        .pointer("/input/parameters")
                        .cloned()
                        .unwrap_or(json!({}));
                    json = json!({"output": {"parameters": [
                        {"app": "alpha", "set": req["applicationSetName"], "input": input.clone()},
                        {"app": "beta", "set": req["applicationSetName"], "input": input}]}});
                }
                let mut resp = axum::response::Response::builder()
                    .status(status)
                    .header("Content-Type", "application/json");
                for (k, v) in extra {
                    resp = resp.header(k, v);
                }
                resp.body(axum::body::Body::from(json.to_string()))
                    .expect("response")
            }
        },
    );
    rt.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
        axum::serve(listener, app).await.expect("serve");
    });
    Server {
        base,
        seen,
        _rt: rt,
    }
}

const OBJECTS: &str = "apiVersion: v1
kind: Secret
metadata: {name: scm-tokens, namespace: argocd}
stringData: {github: GH, gitlab: GL, gitea: GT}
---
apiVersion: v1
kind: Secret
metadata: {name: plugin-secret, namespace: argocd}
stringData: {token: PLUGIN}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: my-plugin, namespace: argocd}
data: {baseUrl: BASE/plugin, token: '$plugin-secret:token'}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ocm-placement, namespace: argocd}
data: {apiVersion: cluster.open-cluster-management.io/v1beta1, kind: PlacementDecision, statusListKey: decisions, matchKey: clusterName}
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: PlacementDecision
metadata: {name: placement-1, namespace: argocd, labels: {placement: web}}
status:
  decisions:
  - {clusterName: prod-eu, reason: chosen}
  - {clusterName: unknown, reason: not a cluster}
---
apiVersion: v1
kind: Secret
metadata:
  name: prod-eu
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster}
stringData: {name: prod-eu, server: 'https://prod-eu.example.com'}
";

/// The ApplicationSet with `goTemplate` on (`go`) or in the legacy mode.
fn appset_in(generator: Value, name: &str, go: bool) -> String {
    serde_json::to_string(&json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "svc", "namespace": "argocd"},
        "spec": {"goTemplate": go, "goTemplateOptions": if go { json!(["missingkey=error"]) } else { json!([]) },
            "generators": [generator],
            "template": {"metadata": {"name": name},
                "spec": {"project": "default",
                    "source": {"repoURL": "https://git.example.com/acme/web.git", "path": "."},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "x"}}}}}))
    .expect("JSON")
}

struct Env {
    dir: common::TmpDir,
    server: Server,
}

impl Env {
    fn new(name: &str) -> Env {
        let dir = common::tmp("appset-services", name);
        let server = serve();
        let objects = OBJECTS
            .replace("BASE", &server.base)
            .replace("GH", GH)
            .replace("GL", GL)
            .replace("GT", GT)
            .replace("PLUGIN", PLUGIN);
        write(&dir, "objects.yaml", &objects);
        Env { dir, server }
    }

    /// The Applications generated (JSON), or the one-line error.
    fn generate(&self, generator: Value, name: &str) -> Result<Vec<Value>, String> {
        self.generate_in(generator, name, true)
    }

    /// [`Env::generate`] with `goTemplate` on or off.
    fn generate_in(&self, generator: Value, name: &str, go: bool) -> Result<Vec<Value>, String> {
        write(&self.dir, "set.json", &appset_in(generator, name, go));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_plumb"))
            .args([
                "appset",
                "generate",
                "set.json",
                "--objects",
                "objects.yaml",
            ])
            .args(["--cluster-secrets", "objects.yaml", "-o", "json"])
            .current_dir(&*self.dir)
            .env("PLUMB_REPO_CACHE", self.dir.join("cache"))
            .output()
            .expect("plumb runs");
        for t in [GH, GL, GT, PLUGIN] {
            assert!(
                !out(&o).contains(t) && !err(&o).contains(t),
                "a token leaked"
            );
        }
        if o.status.code() == Some(0) {
            Ok(serde_json::from_str(&out(&o)).expect("JSON"))
        } else {
            assert_eq!(o.status.code(), Some(2), "{}", err(&o));
            assert_eq!(err(&o).lines().count(), 1, "{}", err(&o));
            Err(err(&o))
        }
    }

    fn api(&self, prefix: &str) -> String {
        format!("{}/{prefix}", self.server.base)
    }
}

fn names(apps: &[Value]) -> Vec<&str> {
    apps.iter()
        .map(|a| a["metadata"]["name"].as_str().unwrap_or(""))
        .collect()
}

#[test]
fn pull_requests_of_github_gitlab_and_gitea() {
    let env = Env::new("pull-requests");
    let name = "pr-{{.number}}-{{.branch_slug}}-{{.head_short_sha}}-{{.target_branch}}";
    let token = |key: &str| json!({"secretName": "scm-tokens", "key": key});
    // GitHub: two pages (Link), a label filter.
    let gh = json!({"pullRequest": {"github": {"owner": "acme", "repo": "web",
        "api": env.api("gh"), "tokenRef": token("github")}}});
    let apps = env.generate(gh.clone(), name).expect("github");
    assert_eq!(
        names(&apps),
        [
            "pr-7-feature-login-page-11111111-main",
            "pr-8-fix-typo-22222222-main"
        ]
    );
    let mut labelled = gh.clone();
    labelled["pullRequest"]["github"]["labels"] = json!(["preview"]);
    assert_eq!(
        names(&env.generate(labelled, name).expect("labels")),
        ["pr-7-feature-login-page-11111111-main"]
    );
    let mut filtered = gh.clone();
    filtered["pullRequest"]["filters"] = json!([{"branchMatch": "^fix-"}]);
    assert_eq!(
        names(&env.generate(filtered, name).expect("filters")),
        ["pr-8-fix-typo-22222222-main"]
    );
    let mut titled = gh.clone();
    titled["pullRequest"]["filters"] = json!([{"titleMatch": "7$"}]);
    assert_eq!(
        names(&env.generate(titled, name).expect("titleMatch")),
        ["pr-7-feature-login-page-11111111-main"]
    );
    // A filter field plumb does not know would keep every pull request: an error.
    let mut unknown = gh.clone();
    unknown["pullRequest"]["filters"] = json!([{"labelMatch": "x"}]);
    let e = env.generate(unknown, name).unwrap_err();
    assert!(
        e.contains("filters[0].labelMatch: not a pull request filter"),
        "{e}"
    );
    let apps = env
        .generate(
            gh.clone(),
            "{{.number}}-{{.head_short_sha_7}}-{{len .labels}}-{{.author}}",
        )
        .expect("parameters");
    assert_eq!(names(&apps), ["7-1111111-1-dev", "8-2222222-0-dev"]);
    // GitLab: two pages (X-Next-Page), PRIVATE-TOKEN.
    let gl = json!({"pullRequest": {"gitlab": {"project": "acme/web", "api": env.api("gl"),
        "tokenRef": token("gitlab"), "labels": ["preview"]}}});
    assert_eq!(
        names(&env.generate(gl, name).expect("gitlab")),
        ["pr-3-gl-one-55555555-main", "pr-4-gl-two-66666666-main"]
    );
    let seen = env.server.seen.lock().expect("lock").clone();
    assert!(
        seen.iter().any(
            |r| r.starts_with("GET /gl/api/v4/projects/acme%2Fweb/merge_requests?")
                && r.contains("labels=preview")
                // No state asked for: every state, as Argo CD asks GitLab.
                && !r.contains("state=")
        ),
        "{seen:?}"
    );
    // Gitea: `token` authorization.
    let gt = json!({"pullRequest": {"gitea": {"owner": "acme", "repo": "web", "api": env.api("gt"),
        "tokenRef": token("gitea")}}});
    assert_eq!(
        names(&env.generate(gt, name).expect("gitea")),
        ["pr-12-gitea-branch-99999999-main"]
    );
    // A wrong token: one line naming the generator; the token never shown.
    let wrong = json!({"pullRequest": {"github": {"owner": "acme", "repo": "web",
        "api": env.api("gh"), "tokenRef": token("gitea")}}});
    let e = env.generate(wrong, name).unwrap_err();
    assert!(
        e.contains("spec.generators[0].pullRequest.github") && e.contains("HTTP 401"),
        "{e}"
    );
    let e = env
        .generate(
            json!({"pullRequest": {"bitbucketServer": {"project": "x"}}}),
            name,
        )
        .unwrap_err();
    assert!(
        e.contains("pullRequest.bitbucketServer: provider not supported"),
        "{e}"
    );
}

#[test]
fn scm_providers_of_github_gitlab_and_gitea() {
    let env = Env::new("scm");
    let name = "{{.organization}}-{{.repository}}-{{.branchNormalized}}-{{.short_sha_7}}";
    let token = |key: &str| json!({"secretName": "scm-tokens", "key": key});
    let gh = json!({"scmProvider": {"github": {"organization": "acme", "api": env.api("gh"),
        "tokenRef": token("github")}}});
    let apps = env.generate(gh.clone(), name).expect("github");
    assert_eq!(
        names(&apps),
        ["acme-web-main-3333333", "acme-docs-main-4444444"]
    );
    assert_eq!(
        apps[0]["spec"]["source"]["repoURL"],
        "https://git.example.com/acme/web.git"
    );
    // Filters: a path that must exist, a label, the clone URL by protocol.
    let mut f = gh.clone();
    f["scmProvider"]["filters"] =
        json!([{"pathsExist": ["deploy/kustomization.yaml"], "labelMatch": "deploy"}]);
    f["scmProvider"]["cloneProtocol"] = json!("https");
    let apps = env
        .generate(
            f,
            "{{.repository}}-{{.labels}}-{{.repository_id}}-{{.url | sha256sum | trunc 6}}",
        )
        .expect("filters");
    let https = "https://git.example.com/acme/web.git";
    use sha2::Digest as _;
    let h: String = sha2::Sha256::digest(https.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(names(&apps), [format!("web-deploy-11-{}", &h[..6])]);
    let mut f = gh;
    f["scmProvider"]["filters"] =
        json!([{"repositoryMatch": "^doc", "pathsDoNotExist": ["deploy/kustomization.yaml"]}]);
    assert_eq!(
        names(&env.generate(f, "{{.repository}}").expect("filters")),
        ["docs"]
    );
    // GitLab: every branch.
    let gl = json!({"scmProvider": {"gitlab": {"group": "acme", "api": env.api("gl"),
        "tokenRef": token("gitlab"), "allBranches": true}, "filters": [{"branchMatch": "^release-"}]}});
    assert_eq!(
        names(&env.generate(gl, name).expect("gitlab")),
        ["acme-api-release-1-8888888"]
    );
    // Gitea: the default branch (`trunk`).
    let gt = json!({"scmProvider": {"gitea": {"organization": "acme", "api": env.api("gt"),
        "tokenRef": token("gitea")}}});
    assert_eq!(
        names(&env.generate(gt, name).expect("gitea")),
        ["acme-svc-trunk-aaaaaaa"]
    );
}

#[test]
fn a_plugin_service_and_a_cluster_decision_resource() {
    let env = Env::new("plugin");
    let plugin = json!({"plugin": {"configMapRef": {"name": "my-plugin"},
        "input": {"parameters": {"env": "prod"}}, "values": {"tier": "gold"}}});
    let apps = env
        .generate(
            plugin,
            "{{.app}}-{{.set}}-{{.generator.input.parameters.env}}-{{.values.tier}}",
        )
        .expect("plugin");
    assert_eq!(names(&apps), ["alpha-svc-prod-gold", "beta-svc-prod-gold"]);
    let seen = env.server.seen.lock().expect("lock").clone();
    assert!(
        seen.contains(&"POST /plugin/api/v1/getparams.execute?".to_string()),
        "{seen:?}"
    );
    let e = env
        .generate(
            json!({"plugin": {"configMapRef": {"name": "missing"}}}),
            "x",
        )
        .unwrap_err();
    assert!(
        e.contains("spec.generators[0].plugin.configMapRef: ConfigMap missing"),
        "{e}"
    );

    let cdr = json!({"clusterDecisionResource": {"configMapRef": "ocm-placement",
        "labelSelector": {"matchLabels": {"placement": "web"}}}});
    let apps = env
        .generate(cdr, "{{.clusterName}}-{{.reason}}")
        .expect("clusterDecisionResource");
    assert_eq!(
        names(&apps),
        ["prod-eu-chosen"],
        "a decision naming no cluster is skipped"
    );
    assert_eq!(
        apps[0]["spec"]["destination"]["server"],
        "https://kubernetes.default.svc"
    );
}

/// The legacy template mode (Argo CD's fasttemplate): the service generators' parameters as flat
/// `a.b.c` keys, `values.KEY` filled from them.
#[test]
fn service_generators_in_the_legacy_mode() {
    let env = Env::new("legacy");
    let plugin = json!({"plugin": {"configMapRef": {"name": "my-plugin"},
        "input": {"parameters": {"env": "prod"}}, "values": {"tier": "gold-{{app}}"}}});
    let apps = env
        .generate_in(
            plugin,
            "{{app}}-{{generator.input.parameters.env}}-{{values.tier}}",
            false,
        )
        .expect("plugin");
    assert_eq!(
        names(&apps),
        ["alpha-prod-gold-alpha", "beta-prod-gold-beta"]
    );
    let gh = json!({"pullRequest": {"github": {"owner": "acme", "repo": "web",
        "api": env.api("gh"), "tokenRef": {"secretName": "scm-tokens", "key": "github"}}}});
    let apps = env
        .generate_in(
            gh,
            "pr-{{number}}-{{branch_slug}}-{{head_short_sha_7}}",
            false,
        )
        .expect("github");
    assert_eq!(
        names(&apps),
        ["pr-7-feature-login-page-1111111", "pr-8-fix-typo-2222222"]
    );
}
