//! The generators that read services: `plugin` (an HTTP plugin service), `clusterDecisionResource`
//! (a duck-typed resource's decisions), `pullRequest` and `scmProvider` (GitHub, GitLab and
//! Gitea's HTTP APIs). Each gives its parameter sets; `values` and the legacy mode's flat keys
//! are added by the caller ([`crate::generators::run`]). The protocols are here; the I/O (HTTP requests, Kubernetes reads) is the
//! caller's, through [`Services`]. Tokens come from Secrets (`tokenRef`) and are sent only as
//! request headers: never in a parameter, a message or a log.

use serde_json::{Map, Value, json};

type Params = Map<String, Value>;

/// An HTTP answer, as [`Services::http`] gives it.
#[derive(Debug, Clone, Default)]
pub struct HttpAnswer {
    pub status: u16,
    pub body: Vec<u8>,
    /// The `Link` header (GitHub, Gitea pagination).
    pub link: Option<String>,
    /// GitLab's `X-Next-Page`.
    pub next_page: Option<String>,
}

/// What the service-reading generators need from outside.
pub trait Services {
    /// The value of `key` in Secret `name` of the control namespace.
    fn secret(&self, name: &str, key: &str) -> Result<String, String>;
    /// The `data` of ConfigMap `name` of the control namespace.
    fn config_map(&self, name: &str) -> Result<Map<String, Value>, String>;
    /// The objects of `api_version`/`kind` in the control namespace: the one named `name`, or
    /// those `label_selector` (`matchLabels`, `matchExpressions`) selects.
    fn objects(
        &self,
        api_version: &str,
        kind: &str,
        name: Option<&str>,
        label_selector: Option<&Value>,
    ) -> Result<Vec<Value>, String>;
    /// One HTTP request (`GET` or `POST`).
    fn http(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
        insecure: bool,
    ) -> Result<HttpAnswer, String>;
}

/// No services: every generator that needs one says so.
pub struct NoServices;

impl Services for NoServices {
    fn secret(&self, name: &str, _: &str) -> Result<String, String> {
        Err(format!(
            "Secret {name}: no cluster to read it from (plumb appset generate: --cluster or --secrets)"
        ))
    }
    fn config_map(&self, name: &str) -> Result<Map<String, Value>, String> {
        Err(format!(
            "ConfigMap {name}: no cluster to read it from (plumb appset generate: --cluster)"
        ))
    }
    fn objects(
        &self,
        _: &str,
        kind: &str,
        _: Option<&str>,
        _: Option<&Value>,
    ) -> Result<Vec<Value>, String> {
        Err(format!(
            "{kind}: no cluster to read it from (plumb appset generate: --cluster)"
        ))
    }
    fn http(
        &self,
        _: &str,
        url: &str,
        _: &[(String, String)],
        _: Option<&[u8]>,
        _: bool,
    ) -> Result<HttpAnswer, String> {
        Err(format!("{}: no HTTP client", plumb_core::redact_url(url)))
    }
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A `tokenRef` (`secretName`, `key`) read, or `None` without one.
fn token(body: &Value, at: &str, svc: &dyn Services) -> Result<Option<String>, String> {
    let Some(r) = body.get("tokenRef").filter(|r| !r.is_null()) else {
        return Ok(None);
    };
    let (name, key) = (s(r, "secretName"), s(r, "key"));
    if name.is_empty() || key.is_empty() {
        return Err(format!("{at}.tokenRef: secretName and key are required"));
    }
    svc.secret(name, key)
        .map(Some)
        .map_err(|e| format!("{at}.tokenRef: {e}"))
}

/// GET a JSON list, following pages (at most 100 pages).
fn get_pages(
    svc: &dyn Services,
    first: String,
    headers: &[(String, String)],
    insecure: bool,
    at: &str,
) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let mut url = Some(first);
    let mut pages = 0;
    while let Some(u) = url.take() {
        pages += 1;
        if pages > 100 {
            return Err(format!("{at}: more than 100 pages"));
        }
        let a = svc
            .http("GET", &u, headers, None, insecure)
            .map_err(|e| format!("{at}: {e}"))?;
        if !(200..300).contains(&a.status) {
            return Err(format!(
                "{at}: GET {} answered HTTP {}",
                without_query(&u),
                a.status
            ));
        }
        let v: Value = serde_json::from_slice(&a.body)
            .map_err(|e| format!("{at}: {} is not JSON: {e}", without_query(&u)))?;
        let items = v
            .as_array()
            .cloned()
            .ok_or_else(|| format!("{at}: {} is not a JSON list", without_query(&u)))?;
        let empty = items.is_empty();
        out.extend(items);
        url = next_link(a.link.as_deref());
        if url.is_none()
            && let Some(p) = a.next_page.filter(|_| !empty)
        {
            url = Some(with_page(&u, &p));
        }
    }
    Ok(out)
}

/// GET one JSON object, `None` on 404.
fn get_one(
    svc: &dyn Services,
    url: &str,
    headers: &[(String, String)],
    insecure: bool,
    at: &str,
) -> Result<Option<Value>, String> {
    let a = svc
        .http("GET", url, headers, None, insecure)
        .map_err(|e| format!("{at}: {e}"))?;
    match a.status {
        404 => Ok(None),
        200..=299 => serde_json::from_slice(&a.body)
            .map(Some)
            .map_err(|e| format!("{at}: {} is not JSON: {e}", without_query(url))),
        st => Err(format!(
            "{at}: GET {} answered HTTP {st}",
            without_query(url)
        )),
    }
}

/// `u` as a message shows it: no query, no credentials.
fn without_query(u: &str) -> String {
    plumb_core::redact_url(u.split('?').next().unwrap_or(u))
}

/// The `rel="next"` URL of a `Link` header.
fn next_link(link: Option<&str>) -> Option<String> {
    link?.split(',').find_map(|part| {
        let (url, rest) = part.split_once(';')?;
        rest.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

fn with_page(url: &str, page: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut parts: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("page="))
        .map(str::to_string)
        .collect();
    parts.push(format!("page={page}"));
    format!("{base}?{}", parts.join("&"))
}

fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn api_base(body: &Value, default: &str) -> String {
    let api = s(body, "api");
    if api.is_empty() {
        default.to_string()
    } else {
        api.trim_end_matches('/').to_string()
    }
}

/// Argo CD's branch slug: lower case, runs of characters other than letters and digits made
/// one `-`, at most 50 characters, no `-` at either end.
pub fn slug(branch: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in branch.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
            dash = false;
        } else if !dash && !out.is_empty() {
            out.push('-');
            dash = true;
        }
    }
    let mut out: String = out.chars().take(50).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

fn regex(p: &str, at: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(p).map_err(|e| format!("{at}: invalid regular expression {p:?}: {e}"))
}

// ---------------------------------------------------------------------------------------
// plugin

/// The `plugin` generator: `configMapRef` names a ConfigMap of the control namespace with
/// `baseUrl` and `token` (`$<secret>:<key>`, or `$<key>` of `argocd-secret`); the parameter
/// sets are the service's answer to `POST <baseUrl>/api/v1/getparams.execute` with
/// `{"applicationSetName", "input": {"parameters"}}` (bearer token): `output.parameters`, each
/// with `generator.input.parameters` and the generator's `values` added.
pub fn plugin(
    body: &Value,
    at: &str,
    appset_name: &str,
    svc: &dyn Services,
) -> Result<Vec<Params>, String> {
    let cm_name = body
        .pointer("/configMapRef/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| format!("{at}.configMapRef.name: required"))?;
    let cm = svc
        .config_map(cm_name)
        .map_err(|e| format!("{at}.configMapRef: {e}"))?;
    let base = cm
        .get("baseUrl")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| format!("{at}: ConfigMap {cm_name} has no baseUrl"))?;
    let token_ref = cm
        .get("token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("{at}: ConfigMap {cm_name} has no token"))?;
    let token = match token_ref.strip_prefix('$') {
        Some(r) => {
            let (secret, key) = r.split_once(':').unwrap_or(("argocd-secret", r));
            svc.secret(secret, key)
                .map_err(|e| format!("{at}: the token of ConfigMap {cm_name}: {e}"))?
        }
        None => {
            return Err(format!(
                "{at}: ConfigMap {cm_name}: token must reference a Secret ($<secret>:<key>)"
            ));
        }
    };
    let input = body
        .pointer("/input/parameters")
        .cloned()
        .unwrap_or(json!({}));
    let request = json!({"applicationSetName": appset_name, "input": {"parameters": input}});
    let url = format!("{}/api/v1/getparams.execute", base.trim_end_matches('/'));
    let headers = vec![
        ("Authorization".to_string(), format!("Bearer {token}")),
        ("Content-Type".to_string(), "application/json".to_string()),
    ];
    let a = svc
        .http(
            "POST",
            &url,
            &headers,
            Some(&serde_json::to_vec(&request).unwrap_or_default()),
            false,
        )
        .map_err(|e| format!("{at}: {e}"))?;
    if !(200..300).contains(&a.status) {
        return Err(format!(
            "{at}: the plugin service {} answered HTTP {}",
            plumb_core::redact_url(&url),
            a.status
        ));
    }
    let v: Value = serde_json::from_slice(&a.body)
        .map_err(|e| format!("{at}: the plugin service's answer is not JSON: {e}"))?;
    let list = v
        .pointer("/output/parameters")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            format!("{at}: the plugin service's answer has no output.parameters list")
        })?;
    list.iter()
        .map(|p| {
            let mut m = p
                .as_object()
                .cloned()
                .ok_or_else(|| format!("{at}: output.parameters must be objects"))?;
            m.insert(
                "generator".into(),
                json!({"input": {"parameters": input.clone()}}),
            );
            Ok(m)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// clusterDecisionResource

/// The `clusterDecisionResource` generator: `configMapRef` names a ConfigMap with `apiVersion`,
/// `kind`, `statusListKey` and `matchKey`; the resource (by `name`, or `labelSelector`) lists its
/// decisions in `status.<statusListKey>`; each decision whose `matchKey` value names a cluster
/// gives the decision's fields plus the cluster's `name` and `server` (and `values`).
pub fn cluster_decision_resource(
    body: &Value,
    at: &str,
    clusters: &[crate::Cluster],
    svc: &dyn Services,
) -> Result<Vec<Params>, String> {
    let cm_name = s(body, "configMapRef");
    if cm_name.is_empty() {
        return Err(format!("{at}.configMapRef: required"));
    }
    let cm = svc
        .config_map(cm_name)
        .map_err(|e| format!("{at}.configMapRef: {e}"))?;
    let get = |k: &str| {
        cm.get(k)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{at}: ConfigMap {cm_name} has no {k}"))
    };
    let (api_version, kind, list_key, match_key) = (
        get("apiVersion")?,
        get("kind")?,
        get("statusListKey")?,
        get("matchKey")?,
    );
    let name = Some(s(body, "name")).filter(|n| !n.is_empty());
    let selector = body.get("labelSelector").filter(|s| !s.is_null());
    if name.is_none() && selector.is_none() {
        return Err(format!("{at}: name or labelSelector is required"));
    }
    plumb_core::selector::validate(selector).map_err(|e| format!("{at}.labelSelector: {e}"))?;
    let objects = svc
        .objects(api_version, kind, name, selector)
        .map_err(|e| format!("{at}: {e}"))?;
    let mut out = Vec::new();
    for o in objects {
        for d in o
            .pointer(&format!("/status/{list_key}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let wanted = s(d, match_key);
            let Some(c) = clusters.iter().find(|c| c.name == wanted) else {
                continue;
            };
            let mut m = d.as_object().cloned().unwrap_or_default();
            m.insert("name".into(), json!(c.name));
            m.insert("server".into(), json!(c.server));
            out.push(m);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// pullRequest

/// One pull request, as every provider's is read.
struct Pull {
    number: u64,
    title: String,
    branch: String,
    target: String,
    sha: String,
    author: String,
    labels: Vec<String>,
}

impl Pull {
    /// A pull request as GitHub's and Gitea's APIs both write it.
    fn of_github_shape(p: &Value) -> Pull {
        Pull {
            number: p["number"].as_u64().unwrap_or(0),
            title: s(p, "title").into(),
            branch: at_ptr(p, "/head/ref"),
            target: at_ptr(p, "/base/ref"),
            sha: at_ptr(p, "/head/sha"),
            author: at_ptr(p, "/user/login"),
            labels: label_names(p.get("labels")),
        }
    }
}

/// The string at JSON pointer `ptr` of `v` ("" when there is none).
fn at_ptr(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The provider a `pullRequest` or `scmProvider` generator names (`github`, `gitlab`, `gitea`)
/// and its configuration; `own` are the generator's other fields besides the common ones. A
/// provider plumb does not speak is an error naming it.
fn provider_of<'a>(
    body: &'a Value,
    at: &str,
    own: &[&str],
) -> Result<(&'static str, &'a Value), String> {
    if let Some(found) = ["github", "gitlab", "gitea"]
        .into_iter()
        .find_map(|p| body.get(p).filter(|c| !c.is_null()).map(|c| (p, c)))
    {
        return Ok(found);
    }
    const COMMON: [&str; 4] = ["filters", "requeueAfterSeconds", "template", "values"];
    let other = body.as_object().and_then(|m| {
        m.keys()
            .find(|k| !COMMON.contains(&k.as_str()) && !own.contains(&k.as_str()))
    });
    Err(match other {
        None => format!("{at}: a provider (github, gitlab, gitea) is required"),
        Some(other) => {
            format!("{at}.{other}: provider not supported by plumb (github, gitlab, gitea)")
        }
    })
}

/// The request headers of `provider`'s API: GitHub's media type and bearer token, GitLab's
/// `PRIVATE-TOKEN`, Gitea's `token` authorization. The only place a token goes.
fn auth_headers(provider: &str, token: Option<&str>) -> Vec<(String, String)> {
    let mut h = Vec::new();
    if provider == "github" {
        h.push(("Accept".into(), "application/vnd.github+json".into()));
    }
    if let Some(t) = token {
        h.push(match provider {
            "github" => ("Authorization".into(), format!("Bearer {t}")),
            "gitlab" => ("PRIVATE-TOKEN".into(), t.to_string()),
            _ => ("Authorization".into(), format!("token {t}")),
        });
    }
    h
}

/// The `pullRequest` generator for `github`, `gitlab` or `gitea`: the open pull requests
/// (with all of `labels`), kept by `filters` (`branchMatch`, `targetBranchMatch`; a pull
/// request passes if any filter passes), as Argo CD's parameters: `number`, `title`, `branch`,
/// `branch_slug`, `target_branch`, `target_branch_slug`, `head_sha`, `head_short_sha`,
/// `head_short_sha_7`, `author`, `labels`.
pub fn pull_request(body: &Value, at: &str, svc: &dyn Services) -> Result<Vec<Params>, String> {
    let (provider, cfg) = provider_of(body, at, &[])?;
    let pat = format!("{at}.{provider}");
    let token = token(cfg, &pat, svc)?;
    let insecure = cfg
        .get("insecure")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let labels = strings(cfg.get("labels"));
    let pulls: Vec<Pull> = match provider {
        "github" => {
            let (owner, repo) = (s(cfg, "owner"), s(cfg, "repo"));
            if owner.is_empty() || repo.is_empty() {
                return Err(format!("{pat}: owner and repo are required"));
            }
            let headers = auth_headers(provider, token.as_deref());
            let base = api_base(cfg, "https://api.github.com");
            get_pages(
                svc,
                format!("{base}/repos/{owner}/{repo}/pulls?state=open&per_page=100"),
                &headers,
                insecure,
                &pat,
            )?
            .iter()
            .map(Pull::of_github_shape)
            .collect()
        }
        "gitlab" => {
            let project = match cfg.get("project") {
                Some(Value::String(p)) => p.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => return Err(format!("{pat}.project: required")),
            };
            let headers = auth_headers(provider, token.as_deref());
            let base = api_base(cfg, "https://gitlab.com");
            let mut url = format!(
                "{base}/api/v4/projects/{}/merge_requests?per_page=100",
                enc(&project)
            );
            // Without `pullRequestState`, every state (the API's default, as Argo CD asks).
            let state = s(cfg, "pullRequestState");
            if !state.is_empty() {
                url.push_str(&format!("&state={}", enc(state)));
            }
            if !labels.is_empty() {
                url.push_str(&format!("&labels={}", enc(&labels.join(","))));
            }
            get_pages(svc, url, &headers, insecure, &pat)?
                .iter()
                .map(|p| Pull {
                    number: p["iid"].as_u64().unwrap_or(0),
                    title: s(p, "title").into(),
                    branch: s(p, "source_branch").into(),
                    target: s(p, "target_branch").into(),
                    sha: s(p, "sha").into(),
                    author: at_ptr(p, "/author/username"),
                    labels: label_names(p.get("labels")),
                })
                .collect()
        }
        _ => {
            let (owner, repo) = (s(cfg, "owner"), s(cfg, "repo"));
            if owner.is_empty() || repo.is_empty() {
                return Err(format!("{pat}: owner and repo are required"));
            }
            let base = api_base(cfg, "");
            if base.is_empty() {
                return Err(format!("{pat}.api: required"));
            }
            let headers = auth_headers(provider, token.as_deref());
            get_pages(
                svc,
                format!("{base}/api/v1/repos/{owner}/{repo}/pulls?state=open&limit=50"),
                &headers,
                insecure,
                &pat,
            )?
            .iter()
            .map(Pull::of_github_shape)
            .collect()
        }
    };
    type Filter = (
        Option<regex::Regex>,
        Option<regex::Regex>,
        Option<regex::Regex>,
    );
    let filters: Vec<Filter> = body
        .get("filters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, f)| {
            let at = format!("{at}.filters[{i}]");
            // A filter field plumb does not read would keep every pull request: an error.
            if let Some(k) = f.as_object().and_then(|m| {
                m.keys()
                    .find(|k| !matches!(k.as_str(), "branchMatch" | "targetBranchMatch" | "titleMatch"))
            }) {
                return Err(format!("{at}.{k}: not a pull request filter plumb knows (branchMatch, targetBranchMatch, titleMatch)"));
            }
            let r = |k: &str| {
                Some(s(f, k))
                    .filter(|p| !p.is_empty())
                    .map(|p| regex(p, &format!("{at}.{k}")))
                    .transpose()
            };
            Ok((r("branchMatch")?, r("targetBranchMatch")?, r("titleMatch")?))
        })
        .collect::<Result<_, String>>()?;
    let mut out = Vec::new();
    for p in pulls {
        if !labels.iter().all(|l| p.labels.contains(l)) {
            continue;
        }
        let passes = filters.is_empty()
            || filters.iter().any(|(b, t, title)| {
                b.as_ref().is_none_or(|r| r.is_match(&p.branch))
                    && t.as_ref().is_none_or(|r| r.is_match(&p.target))
                    && title.as_ref().is_none_or(|r| r.is_match(&p.title))
            });
        if !passes {
            continue;
        }
        let short = |n: usize| p.sha.chars().take(n).collect::<String>();
        let mut m = Params::new();
        m.insert("number".into(), json!(p.number.to_string()));
        m.insert("title".into(), json!(p.title));
        m.insert("branch".into(), json!(p.branch));
        m.insert("branch_slug".into(), json!(slug(&p.branch)));
        m.insert("target_branch".into(), json!(p.target));
        m.insert("target_branch_slug".into(), json!(slug(&p.target)));
        m.insert("head_sha".into(), json!(p.sha));
        m.insert("head_short_sha".into(), json!(short(8)));
        m.insert("head_short_sha_7".into(), json!(short(7)));
        m.insert("author".into(), json!(p.author));
        m.insert("labels".into(), json!(p.labels));
        out.push(m);
    }
    Ok(out)
}

fn label_names(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|l| match l {
                    Value::String(s) => Some(s.clone()),
                    o => o.get("name").and_then(Value::as_str).map(str::to_string),
                })
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// scmProvider

/// One repository at one branch.
struct RepoBranch {
    organization: String,
    repository: String,
    url: String,
    branch: String,
    sha: String,
    labels: Vec<String>,
    id: String,
}

/// The `scmProvider` generator for `github` (an organization), `gitlab` (a group, with
/// `includeSubgroups`) or `gitea` (an organization): each repository at its default branch
/// (every branch with `allBranches`), its clone URL by `cloneProtocol` (`ssh` by default, or
/// `https`), kept by `filters` (`repositoryMatch`, `labelMatch`, `branchMatch`, `pathsExist`,
/// `pathsDoNotExist`: all of one filter's conditions, any filter). Argo CD's parameters:
/// `organization`, `repository`, `url`, `branch`, `branchNormalized`, `sha`, `short_sha`,
/// `short_sha_7`, `labels` (comma-separated), `repository_id`.
pub fn scm_provider(body: &Value, at: &str, svc: &dyn Services) -> Result<Vec<Params>, String> {
    let (provider, cfg) = provider_of(body, at, &["cloneProtocol"])?;
    let pat = format!("{at}.{provider}");
    let token = token(cfg, &pat, svc)?;
    let insecure = cfg
        .get("insecure")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let all_branches = cfg
        .get("allBranches")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let https = match s(body, "cloneProtocol") {
        "" | "ssh" => false,
        "https" => true,
        other => {
            return Err(format!("{at}.cloneProtocol: {other:?} is not ssh or https"));
        }
    };
    let filters = body
        .get("filters")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // Compile the filters first: a bad expression is an error before any request.
    struct Filter {
        repo: Option<regex::Regex>,
        label: Option<regex::Regex>,
        branch: Option<regex::Regex>,
        exist: Vec<String>,
        absent: Vec<String>,
    }
    let filters: Vec<Filter> = filters
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let fat = format!("{at}.filters[{i}]");
            let r = |k: &str| {
                Some(s(f, k))
                    .filter(|p| !p.is_empty())
                    .map(|p| regex(p, &format!("{fat}.{k}")))
                    .transpose()
            };
            Ok(Filter {
                repo: r("repositoryMatch")?,
                label: r("labelMatch")?,
                branch: r("branchMatch")?,
                exist: strings(f.get("pathsExist")),
                absent: strings(f.get("pathsDoNotExist")),
            })
        })
        .collect::<Result<_, String>>()?;

    let headers = auth_headers(provider, token.as_deref());
    let base = match provider {
        "github" => api_base(cfg, "https://api.github.com"),
        "gitlab" => format!("{}/api/v4", api_base(cfg, "https://gitlab.com")),
        _ => {
            let b = api_base(cfg, "");
            if b.is_empty() {
                return Err(format!("{pat}.api: required"));
            }
            format!("{b}/api/v1")
        }
    };
    let org_field = if provider == "gitlab" {
        "group"
    } else {
        "organization"
    };
    let org = match cfg.get(org_field) {
        Some(Value::String(o)) if !o.is_empty() => o.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(format!("{pat}.{org_field}: required")),
    };
    let repos = match provider {
        "github" => get_pages(
            svc,
            format!("{base}/orgs/{org}/repos?per_page=100"),
            &headers,
            insecure,
            &pat,
        )?,
        "gitlab" => {
            let sub = cfg
                .get("includeSubgroups")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            get_pages(
                svc,
                format!(
                    "{base}/groups/{}/projects?per_page=100&include_subgroups={sub}",
                    enc(&org)
                ),
                &headers,
                insecure,
                &pat,
            )?
        }
        _ => get_pages(
            svc,
            format!("{base}/orgs/{org}/repos?limit=50"),
            &headers,
            insecure,
            &pat,
        )?,
    };
    let mut found: Vec<RepoBranch> = Vec::new();
    for r in &repos {
        let (name, url, id, labels, default, repo_api, organization) = match provider {
            "gitlab" => (
                s(r, "path").to_string(),
                if https {
                    s(r, "http_url_to_repo")
                } else {
                    s(r, "ssh_url_to_repo")
                }
                .to_string(),
                r["id"].to_string(),
                strings(r.get("topics").or_else(|| r.get("tag_list"))),
                s(r, "default_branch").to_string(),
                format!("{base}/projects/{}", r["id"]),
                r.pointer("/namespace/full_path")
                    .and_then(Value::as_str)
                    .unwrap_or(&org)
                    .to_string(),
            ),
            _ => (
                s(r, "name").to_string(),
                if https {
                    s(r, "clone_url")
                } else {
                    s(r, "ssh_url")
                }
                .to_string(),
                r["id"].to_string(),
                strings(r.get("topics")),
                s(r, "default_branch").to_string(),
                format!("{base}/repos/{org}/{}", s(r, "name")),
                org.clone(),
            ),
        };
        // Filters on the repository alone first (no request for a repository none keeps).
        if !filters.is_empty()
            && !filters.iter().any(|f| {
                f.repo.as_ref().is_none_or(|x| x.is_match(&name))
                    && f.label
                        .as_ref()
                        .is_none_or(|x| labels.iter().any(|l| x.is_match(l)))
            })
        {
            continue;
        }
        let branches_url = match provider {
            "gitlab" => format!("{repo_api}/repository/branches"),
            _ => format!("{repo_api}/branches"),
        };
        let branches: Vec<(String, String)> = if all_branches {
            let sep = if provider == "gitea" {
                "?limit=50"
            } else {
                "?per_page=100"
            };
            get_pages(
                svc,
                format!("{branches_url}{sep}"),
                &headers,
                insecure,
                &pat,
            )?
            .iter()
            .map(|b| (s(b, "name").to_string(), commit_sha(b)))
            .collect()
        } else if default.is_empty() {
            Vec::new()
        } else {
            match get_one(
                svc,
                &format!("{branches_url}/{}", enc(&default)),
                &headers,
                insecure,
                &pat,
            )? {
                Some(b) => vec![(default.clone(), commit_sha(&b))],
                None => Vec::new(),
            }
        };
        for (branch, sha) in branches {
            found.push(RepoBranch {
                organization: organization.clone(),
                repository: name.clone(),
                url: url.clone(),
                branch,
                sha,
                labels: labels.clone(),
                id: id.clone(),
            });
        }
    }
    let path_exists = |rb: &RepoBranch, path: &str| -> Result<bool, String> {
        let url = match provider {
            "gitlab" => format!(
                "{base}/projects/{}/repository/tree?path={}&ref={}&per_page=1",
                rb.id,
                enc(path),
                enc(&rb.branch)
            ),
            _ => format!(
                "{base}/repos/{}/{}/contents/{}?ref={}",
                org,
                rb.repository,
                path.split('/').map(enc).collect::<Vec<_>>().join("/"),
                enc(&rb.branch)
            ),
        };
        match provider {
            // GitLab's tree of a missing path is an empty list (or 404); a file's path
            // answers its parent directory's entry, so look for the file by name.
            "gitlab" => {
                // A directory: its tree is not empty.
                match get_one(svc, &url, &headers, insecure, &pat)? {
                    None => return Ok(false),
                    Some(v) if v.as_array().is_some_and(|x| !x.is_empty()) => return Ok(true),
                    Some(_) => {}
                }
                // A file: an entry of its parent directory's tree (every page of it).
                let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
                let url = format!(
                    "{base}/projects/{}/repository/tree?path={}&ref={}&per_page=100",
                    rb.id,
                    enc(dir),
                    enc(&rb.branch)
                );
                let entries = match get_pages(svc, url, &headers, insecure, &pat) {
                    Ok(e) => e,
                    // GitLab answers 404 for a parent directory that does not exist.
                    Err(e) if e.contains("HTTP 404") => return Ok(false),
                    Err(e) => return Err(e),
                };
                Ok(entries.iter().any(|e| s(e, "name") == file))
            }
            _ => Ok(get_one(svc, &url, &headers, insecure, &pat)?.is_some()),
        }
    };
    let mut out = Vec::new();
    for rb in found {
        let mut keep = filters.is_empty();
        for f in &filters {
            if f.repo.as_ref().is_some_and(|x| !x.is_match(&rb.repository))
                || f.label
                    .as_ref()
                    .is_some_and(|x| !rb.labels.iter().any(|l| x.is_match(l)))
                || f.branch.as_ref().is_some_and(|x| !x.is_match(&rb.branch))
            {
                continue;
            }
            let mut ok = true;
            for p in &f.exist {
                if !path_exists(&rb, p)? {
                    ok = false;
                    break;
                }
            }
            if ok {
                for p in &f.absent {
                    if path_exists(&rb, p)? {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                keep = true;
                break;
            }
        }
        if !keep {
            continue;
        }
        let short = |n: usize| rb.sha.chars().take(n).collect::<String>();
        let mut m = Params::new();
        m.insert("organization".into(), json!(rb.organization));
        m.insert("repository".into(), json!(rb.repository));
        m.insert("url".into(), json!(rb.url));
        m.insert("branch".into(), json!(rb.branch));
        m.insert(
            "branchNormalized".into(),
            json!(crate::normalize(&rb.branch)),
        );
        m.insert("sha".into(), json!(rb.sha));
        m.insert("short_sha".into(), json!(short(8)));
        m.insert("short_sha_7".into(), json!(short(7)));
        m.insert("labels".into(), json!(rb.labels.join(",")));
        m.insert("repository_id".into(), json!(rb.id));
        out.push(m);
    }
    Ok(out)
}

fn commit_sha(b: &Value) -> String {
    b.pointer("/commit/sha")
        .or_else(|| b.pointer("/commit/id"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_as_argo_cd() {
        assert_eq!(slug("feature/New_Thing"), "feature-new-thing");
        assert_eq!(slug("--x--"), "x");
        assert_eq!(slug(&"a".repeat(60)).len(), 50);
    }

    #[test]
    fn pages_follow_link_and_x_next_page() {
        assert_eq!(
            next_link(Some(
                "<https://api.example.com/x?page=2>; rel=\"next\", <https://api.example.com/x?page=5>; rel=\"last\""
            )),
            Some("https://api.example.com/x?page=2".into())
        );
        assert_eq!(next_link(Some("<u>; rel=\"prev\"")), None);
        assert_eq!(
            with_page("http://h/p?a=1&page=1", "2"),
            "http://h/p?a=1&page=2"
        );
    }
}
