//! Refresh on push: a git provider's push webhook, read and checked, and which Applications
//! it refreshes. Pure (no I/O): the controller's HTTP endpoint hands in the headers and the
//! body, and queues the apps [`refreshes`] names (see `controller::push`).
//!
//! - **One entry per provider** in [`PROVIDERS`]: the header that selects it, its push and
//!   ping events, how a request is authenticated, and how its payload names the repository,
//!   the pushed refs, the default branch and the changed files (GitHub, GitLab, Bitbucket
//!   Cloud, Bitbucket Server, Gitea, Gogs — Gitea before GitHub and Gogs, whose headers it
//!   also sends). Adding a provider is one entry and its fixture.
//! - **Authentication** ([`Secrets`], read from `--webhook-secret-file`, keys named as in
//!   Argo CD's `argocd-secret`): when a provider's secret is configured, a request without
//!   a valid signature (HMAC-SHA256 of the body for GitHub, Gitea, Gogs and Bitbucket Server;
//!   the token for GitLab; the hook UUID for Bitbucket Cloud) is refused before its body is
//!   parsed, and every comparison runs in constant time (`ring`'s HMAC; a token or UUID is
//!   compared as HMACs). Without a secret the provider's
//!   requests are taken unauthenticated, as Argo CD does.
//! - **Matching** ([`refreshes`]), as Argo CD's webhook does: any source of the app (also
//!   `spec.sources` and a hydrator's `drySource`) whose `repoURL` names the pushed repository
//!   (scheme, user, port, `.git`, `scp`-like `git@host:path`, an `ssh.`/`altssh.` host and
//!   case aside) and whose `targetRevision` is a pushed branch or tag (`HEAD` or empty: the
//!   repository's default branch); with the annotation
//!   `argocd.argoproj.io/manifest-generate-paths`, only when a changed file is under one of
//!   its paths (`;`-separated, relative to the source's `path`, or to the repository root
//!   with a leading `/`). A payload without a file list (Bitbucket) refreshes regardless.
//!   URLs compare by [`repo_key`].
//!
//! **Invariants:** nothing in a request is parsed before it is authenticated (when a secret
//! is configured); no secret appears in an error or in `Debug` output.
//!
//! ```
//! use plumb_sync::webhook::{Headers, Received, Secrets, receive, refreshes};
//! let body = br#"{"ref": "refs/heads/main", "repository": {"html_url":
//!     "https://github.com/org/web", "default_branch": "main"}, "commits": []}"#;
//! let headers = Headers::from_pairs([("X-GitHub-Event", "push")]);
//! let Ok(Received::Push(push)) = receive(&headers, body, &Secrets::default()) else { panic!() };
//! let app = serde_json::json!({"spec": {"source": {
//!     "repoURL": "git@github.com:org/web.git", "targetRevision": "HEAD"}}});
//! assert!(refreshes(&app, &push));
//! ```

use ring::hmac;
use serde_json::Value;
use std::collections::BTreeMap;

/// A git hosting service whose push webhooks plumb reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    GitHub,
    GitLab,
    Bitbucket,
    BitbucketServer,
    Gitea,
    Gogs,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::GitHub => "github",
            Provider::GitLab => "gitlab",
            Provider::Bitbucket => "bitbucket",
            Provider::BitbucketServer => "bitbucketserver",
            Provider::Gitea => "gitea",
            Provider::Gogs => "gogs",
        }
    }
}

/// Why a webhook request is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WebhookError {
    /// No provider's event header (HTTP 400).
    #[error(
        "unknown webhook: no X-GitHub-Event, X-Gitlab-Event, X-Gitea-Event, X-Gogs-Event, X-Hook-UUID or X-Event-Key header"
    )]
    UnknownProvider,
    /// The provider's secret is configured and the request does not prove it (HTTP 401).
    #[error("{provider} webhook: {reason}")]
    Unauthenticated {
        provider: &'static str,
        reason: &'static str,
    },
    /// The body is not the provider's push payload (HTTP 400).
    #[error("{provider} webhook: {reason}")]
    Payload {
        provider: &'static str,
        reason: String,
    },
}

impl WebhookError {
    /// The HTTP status the endpoint answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            WebhookError::Unauthenticated { .. } => 401,
            _ => 400,
        }
    }
}

/// The webhook secrets, by provider: the keys of Argo CD's `argocd-secret`
/// (`webhook.github.secret`, `webhook.gitlab.secret`, `webhook.bitbucket.uuid`,
/// `webhook.bitbucketserver.secret`, `webhook.gogs.secret`) and plumb's
/// `webhook.gitea.secret` (default: the Gogs secret, as Gitea signs like Gogs).
#[derive(Default, Clone, PartialEq, Eq)]
pub struct Secrets {
    pub github: Option<String>,
    pub gitlab: Option<String>,
    pub bitbucket_uuid: Option<String>,
    pub bitbucket_server: Option<String>,
    pub gogs: Option<String>,
    pub gitea: Option<String>,
}

impl std::fmt::Debug for Secrets {
    /// Which secrets are set, never their values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.configured()).finish()
    }
}

/// The keys [`Secrets::from_document`] reads.
pub const SECRET_KEYS: [&str; 6] = [
    "webhook.github.secret",
    "webhook.gitlab.secret",
    "webhook.bitbucket.uuid",
    "webhook.bitbucketserver.secret",
    "webhook.gogs.secret",
    "webhook.gitea.secret",
];

impl Secrets {
    /// Reads a secret file's document: a Kubernetes Secret (`data`, base64, and
    /// `stringData`), e.g. `argocd-secret` itself, or a plain map of keys to strings. Keys
    /// outside `webhook.*` are ignored (an `argocd-secret` holds others); an unknown
    /// `webhook.*` key is an error, so a typo does not leave a provider unauthenticated.
    pub fn from_document(doc: &Value) -> Result<Secrets, String> {
        let Some(map) = doc.as_object() else {
            return Err("expected a map of keys to secrets, or a Secret".into());
        };
        let mut values: BTreeMap<String, String> = BTreeMap::new();
        if doc.get("kind").and_then(Value::as_str) == Some("Secret") {
            if let Some(data) = doc.get("data").and_then(Value::as_object) {
                for (k, v) in data {
                    let text = v
                        .as_str()
                        .ok_or_else(|| format!("data.{k}: not a string"))?;
                    let bytes =
                        base64_decode(text).ok_or_else(|| format!("data.{k}: not base64"))?;
                    let s = String::from_utf8(bytes)
                        .map_err(|_| format!("data.{k}: not UTF-8 text"))?;
                    values.insert(k.clone(), s);
                }
            }
            if let Some(data) = doc.get("stringData").and_then(Value::as_object) {
                for (k, v) in data {
                    let s = v
                        .as_str()
                        .ok_or_else(|| format!("stringData.{k}: not a string"))?;
                    values.insert(k.clone(), s.to_string());
                }
            }
        } else {
            for (k, v) in map {
                if !k.starts_with("webhook.") {
                    continue;
                }
                let s = v.as_str().ok_or_else(|| format!("{k}: not a string"))?;
                values.insert(k.clone(), s.to_string());
            }
        }
        let mut secrets = Secrets::default();
        for (k, v) in values {
            if !k.starts_with("webhook.") {
                continue;
            }
            // Trailing newlines are a file's, not the secret's (`echo secret > file`).
            let v = v.trim_end_matches(['\n', '\r']).to_string();
            let v = (!v.is_empty()).then_some(v);
            match k.as_str() {
                "webhook.github.secret" => secrets.github = v,
                "webhook.gitlab.secret" => secrets.gitlab = v,
                "webhook.bitbucket.uuid" => secrets.bitbucket_uuid = v,
                "webhook.bitbucketserver.secret" => secrets.bitbucket_server = v,
                "webhook.gogs.secret" => secrets.gogs = v,
                "webhook.gitea.secret" => secrets.gitea = v,
                _ => {
                    return Err(format!(
                        "{k}: unknown webhook key (known: {})",
                        SECRET_KEYS.join(", ")
                    ));
                }
            }
        }
        Ok(secrets)
    }

    /// The keys that are set.
    pub fn configured(&self) -> Vec<&'static str> {
        let set = [
            self.github.is_some(),
            self.gitlab.is_some(),
            self.bitbucket_uuid.is_some(),
            self.bitbucket_server.is_some(),
            self.gogs.is_some(),
            self.gitea.is_some(),
        ];
        SECRET_KEYS
            .iter()
            .zip(set)
            .filter(|(_, s)| *s)
            .map(|(k, _)| *k)
            .collect()
    }
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let clean: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(clean).ok()
}

/// Request headers, by lower-case name (HTTP header names are case-insensitive).
#[derive(Debug, Default, Clone)]
pub struct Headers(BTreeMap<String, String>);

impl Headers {
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Headers {
        Headers(
            pairs
                .into_iter()
                .map(|(k, v)| (k.as_ref().to_ascii_lowercase(), v.as_ref().to_string()))
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// A push, as the payload tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    pub provider: Provider,
    /// The repository's URLs in the payload (its web page, and clone URLs when given).
    pub repo_urls: Vec<String>,
    /// The branches and tags pushed, without `refs/heads/` or `refs/tags/`.
    pub revisions: Vec<String>,
    /// Whether the repository's default branch (what `HEAD` means) was pushed; `true` when
    /// the payload cannot tell (Bitbucket), as Argo CD assumes.
    pub touched_head: bool,
    /// Files the pushed commits added, modified or removed; empty when the payload does not
    /// list them.
    pub changed_files: Vec<String>,
}

impl Push {
    /// Whether `repo_url` (an app's) names the pushed repository.
    pub fn names_repo(&self, repo_url: &str) -> bool {
        let Some(app) = repo_key(repo_url) else {
            return false;
        };
        self.repo_urls
            .iter()
            .filter_map(|u| repo_key(u))
            .any(|pushed| same_repo(&app, &pushed))
    }
}

/// What a webhook request turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    Push(Push),
    /// Authenticated, but not a push (a ping, a pull request, …): nothing to do.
    Ignored {
        provider: Provider,
        event: String,
    },
}

/// One provider: how its requests are recognised, authenticated and read.
pub struct ProviderSpec {
    pub provider: Provider,
    /// The event named by the request, when the request is this provider's.
    pub event: fn(&Headers) -> Option<&str>,
    /// Events that are pushes.
    pub push_events: &'static [&'static str],
    /// Checks the request against the configured secret (if any).
    pub authenticate: fn(&Headers, &[u8], &Secrets) -> Result<(), &'static str>,
    /// Reads a push payload.
    pub read: fn(&Value) -> Result<Push, String>,
}

/// The providers, in the order they are tried: Gitea and Gogs first, since Gitea also sends
/// GitHub's and Gogs' headers, and Gogs GitHub's.
pub const PROVIDERS: &[ProviderSpec] = &[
    ProviderSpec {
        provider: Provider::Gitea,
        event: |h| h.get("X-Gitea-Event"),
        push_events: &["push"],
        authenticate: |h, body, s| {
            let secret = s.gitea.as_ref().or(s.gogs.as_ref());
            hmac_hex(secret, h.get("X-Gitea-Signature"), body)
        },
        read: read_github_like,
    },
    ProviderSpec {
        provider: Provider::Gogs,
        event: |h| h.get("X-Gogs-Event"),
        push_events: &["push"],
        authenticate: |h, body, s| hmac_hex(s.gogs.as_ref(), h.get("X-Gogs-Signature"), body),
        read: read_github_like,
    },
    ProviderSpec {
        provider: Provider::GitHub,
        event: |h| h.get("X-GitHub-Event"),
        push_events: &["push"],
        authenticate: |h, body, s| {
            hmac_sha256_prefixed(
                s.github.as_ref(),
                h.get("X-Hub-Signature-256"),
                body,
                "X-Hub-Signature-256 is not sha256=HEX",
            )
        },
        read: read_github_like,
    },
    ProviderSpec {
        provider: Provider::GitLab,
        event: |h| h.get("X-Gitlab-Event"),
        push_events: &["Push Hook", "Tag Push Hook", "System Hook"],
        authenticate: |h, _, s| {
            same_secret(s.gitlab.as_ref(), h.get("X-Gitlab-Token"), "X-Gitlab-Token")
        },
        read: read_gitlab,
    },
    ProviderSpec {
        provider: Provider::Bitbucket,
        // Bitbucket Cloud sends the hook's UUID with each request; Bitbucket Server does not.
        event: |h| h.get("X-Hook-UUID").and(h.get("X-Event-Key")),
        push_events: &["repo:push"],
        authenticate: |h, _, s| {
            same_secret(
                s.bitbucket_uuid.as_ref(),
                h.get("X-Hook-UUID"),
                "X-Hook-UUID",
            )
        },
        read: read_bitbucket,
    },
    ProviderSpec {
        provider: Provider::BitbucketServer,
        event: |h| h.get("X-Event-Key"),
        push_events: &["repo:refs_changed"],
        authenticate: |h, body, s| {
            hmac_sha256_prefixed(
                s.bitbucket_server.as_ref(),
                h.get("X-Hub-Signature"),
                body,
                "X-Hub-Signature is not sha256=HEX",
            )
        },
        read: read_bitbucket_server,
    },
];

/// Reads one webhook request: its provider (by header), authenticated against `secrets`
/// before the body is parsed, then its push.
pub fn receive(
    headers: &Headers,
    body: &[u8],
    secrets: &Secrets,
) -> Result<Received, WebhookError> {
    let (spec, event) = PROVIDERS
        .iter()
        .find_map(|p| (p.event)(headers).map(|e| (p, e)))
        .ok_or(WebhookError::UnknownProvider)?;
    let provider = spec.provider.as_str();
    (spec.authenticate)(headers, body, secrets)
        .map_err(|reason| WebhookError::Unauthenticated { provider, reason })?;
    if !spec.push_events.contains(&event) {
        return Ok(Received::Ignored {
            provider: spec.provider,
            event: event.to_string(),
        });
    }
    let payload: Value = serde_json::from_slice(body).map_err(|e| WebhookError::Payload {
        provider,
        reason: format!("the body is not JSON: {e}"),
    })?;
    // A GitLab system hook carries every kind of event: only its pushes count.
    if spec.provider == Provider::GitLab
        && event == "System Hook"
        && !matches!(
            payload.get("object_kind").and_then(Value::as_str),
            Some("push" | "tag_push")
        )
    {
        return Ok(Received::Ignored {
            provider: spec.provider,
            event: event.to_string(),
        });
    }
    let mut push =
        (spec.read)(&payload).map_err(|reason| WebhookError::Payload { provider, reason })?;
    push.provider = spec.provider;
    if push.repo_urls.is_empty() {
        return Err(WebhookError::Payload {
            provider,
            reason: "the payload names no repository URL".into(),
        });
    }
    Ok(Received::Push(push))
}

/// [`hmac_hex`] of a signature written `sha256=HEX` (GitHub's `X-Hub-Signature-256`,
/// Bitbucket Server's `X-Hub-Signature`); `malformed` when it lacks the prefix.
fn hmac_sha256_prefixed(
    expected: Option<&String>,
    signature: Option<&str>,
    body: &[u8],
    malformed: &'static str,
) -> Result<(), &'static str> {
    match signature.map(|v| v.strip_prefix("sha256=")) {
        Some(None) => Err(malformed),
        Some(hex) => hmac_hex(expected, hex, body),
        None => hmac_hex(expected, None, body),
    }
}

/// `expected` unset: anything goes. Else `given` must be the hex HMAC-SHA256 of `body`
/// keyed with it (checked in constant time).
fn hmac_hex(
    expected: Option<&String>,
    given: Option<&str>,
    body: &[u8],
) -> Result<(), &'static str> {
    let Some(secret) = expected else {
        return Ok(());
    };
    let Some(given) = given else {
        return Err("the request is not signed and a secret is configured");
    };
    let Some(tag) = hex_decode(given.trim()) else {
        return Err("the signature is not hexadecimal");
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    hmac::verify(&key, body, &tag).map_err(|_| "the signature does not match the body")
}

/// `expected` unset: anything goes. Else `given` (a header) must equal it; compared in
/// constant time (as HMACs under one key, so neither length nor content leaks).
fn same_secret(
    expected: Option<&String>,
    given: Option<&str>,
    header: &'static str,
) -> Result<(), &'static str> {
    let Some(secret) = expected else {
        return Ok(());
    };
    let Some(given) = given else {
        return Err(match header {
            "X-Gitlab-Token" => "no X-Gitlab-Token and a secret is configured",
            _ => "no hook UUID and one is configured",
        });
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, b"plumb webhook secret comparison");
    let want = hmac::sign(&key, secret.as_bytes());
    hmac::verify(&key, given.as_bytes(), want.as_ref()).map_err(|_| match header {
        "X-Gitlab-Token" => "X-Gitlab-Token does not match the configured secret",
        _ => "X-Hook-UUID does not match the configured UUID",
    })
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The HMAC-SHA256 of `body` keyed with `secret`, as lower-case hex (what GitHub, Gitea,
/// Gogs and Bitbucket Server send; for tests and tools that sign payloads).
pub fn sign_hex(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    hmac::sign(&key, body)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// A ref without `refs/heads/` or `refs/tags/`.
fn short_ref(r: &str) -> &str {
    r.strip_prefix("refs/heads/")
        .or_else(|| r.strip_prefix("refs/tags/"))
        .unwrap_or(r)
}

/// Files of `commits[]`' `added`, `modified` and `removed` (GitHub, GitLab, Gitea, Gogs).
fn commit_files(payload: &Value) -> Vec<String> {
    let mut files = Vec::new();
    for commit in payload
        .get("commits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for list in ["added", "modified", "removed"] {
            for f in commit
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(f) = f.as_str() {
                    files.push(f.to_string());
                }
            }
        }
    }
    files
}

fn urls(payload: &Value, pointers: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in pointers {
        if let Some(u) = str_at(payload, p)
            && !out.iter().any(|o| o == u)
        {
            out.push(u.to_string());
        }
    }
    out
}

/// GitHub's push payload (Gitea and Gogs send the same shape).
fn read_github_like(payload: &Value) -> Result<Push, String> {
    let r = str_at(payload, "/ref").ok_or("no ref")?;
    let revision = short_ref(r).to_string();
    let default_branch = str_at(payload, "/repository/default_branch");
    Ok(Push {
        provider: Provider::GitHub,
        repo_urls: urls(
            payload,
            &[
                "/repository/html_url",
                "/repository/clone_url",
                "/repository/ssh_url",
            ],
        ),
        touched_head: default_branch == Some(revision.as_str()),
        revisions: vec![revision],
        changed_files: commit_files(payload),
    })
}

fn read_gitlab(payload: &Value) -> Result<Push, String> {
    let r = str_at(payload, "/ref").ok_or("no ref")?;
    let revision = short_ref(r).to_string();
    let default_branch = str_at(payload, "/project/default_branch");
    Ok(Push {
        provider: Provider::GitLab,
        repo_urls: urls(
            payload,
            &[
                "/project/web_url",
                "/project/git_http_url",
                "/project/git_ssh_url",
                "/repository/homepage",
            ],
        ),
        touched_head: default_branch == Some(revision.as_str()),
        revisions: vec![revision],
        changed_files: commit_files(payload),
    })
}

/// Bitbucket Cloud's `repo:push`: one entry per pushed ref in `push.changes` (`new` is null
/// for a deleted ref). The payload names no default branch nor changed files.
fn read_bitbucket(payload: &Value) -> Result<Push, String> {
    let changes = payload
        .pointer("/push/changes")
        .and_then(Value::as_array)
        .ok_or("no push.changes")?;
    let revisions = changes
        .iter()
        .filter_map(|c| str_at(c, "/new/name"))
        .map(str::to_string)
        .collect();
    Ok(Push {
        provider: Provider::Bitbucket,
        repo_urls: urls(payload, &["/repository/links/html/href"]),
        revisions,
        touched_head: true,
        changed_files: Vec::new(),
    })
}

/// Bitbucket Server's `repo:refs_changed`: the clone links name the repository.
fn read_bitbucket_server(payload: &Value) -> Result<Push, String> {
    let changes = payload
        .get("changes")
        .and_then(Value::as_array)
        .ok_or("no changes")?;
    let revisions = changes
        .iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some("DELETE"))
        .filter_map(|c| str_at(c, "/ref/id").or_else(|| str_at(c, "/refId")))
        .map(|r| short_ref(r).to_string())
        .collect();
    let repo_urls = payload
        .pointer("/repository/links/clone")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|l| str_at(l, "/href"))
        .map(str::to_string)
        .collect();
    Ok(Push {
        provider: Provider::BitbucketServer,
        repo_urls,
        revisions,
        touched_head: true,
        changed_files: Vec::new(),
    })
}

/// A repository URL as host and path, for comparison: `https://`, `http://`, `ssh://`,
/// `git://` (user and port dropped) and `scp`-like `user@host:path`; lower-case, without
/// surrounding slashes and `.git`.
pub fn repo_key(url: &str) -> Option<(String, String)> {
    let url = url.trim();
    let (authority, path) = match url.split_once("://") {
        Some((_, rest)) => rest.split_once('/')?,
        // scp-like: host:path, no scheme.
        None => {
            let (host, path) = url.split_once(':')?;
            if host.contains('/') {
                return None;
            }
            (host, path)
        }
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => host,
    };
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    if host.is_empty() || path.is_empty() {
        return None;
    }
    Some((host.to_ascii_lowercase(), path.to_ascii_lowercase()))
}

/// The app's (`app`) and the payload's (`pushed`) repository keys name one repository: the
/// same path on the same host, or on its `ssh.`/`altssh.` host (Azure DevOps, Bitbucket).
fn same_repo(app: &(String, String), pushed: &(String, String)) -> bool {
    if app.1 != pushed.1 {
        return false;
    }
    let host = app.0.as_str();
    host == pushed.0
        || host
            .strip_prefix("ssh.")
            .or_else(|| host.strip_prefix("altssh."))
            .is_some_and(|h| h == pushed.0)
}

/// Whether a source at `target_revision` follows one of the pushed refs.
fn revision_matches(target_revision: &str, push: &Push) -> bool {
    let target = target_revision.trim();
    if target.is_empty() || target == "HEAD" {
        return push.touched_head;
    }
    let target = short_ref(target);
    push.revisions.iter().any(|r| r == target)
}

/// The annotation naming the paths whose change refreshes the app (Argo CD's).
pub const REFRESH_PATHS_ANNOTATION: &str = "argocd.argoproj.io/manifest-generate-paths";

/// The sources of an app: `spec.source`, every `spec.sources[]`, and a hydrator's
/// `spec.sourceHydrator.drySource`.
fn sources(app: &Value) -> Vec<&Value> {
    let spec = app.get("spec");
    let mut out: Vec<&Value> = Vec::new();
    if let Some(s) = spec.and_then(|s| s.get("source")).filter(|s| s.is_object()) {
        out.push(s);
    }
    if let Some(list) = spec
        .and_then(|s| s.get("sources"))
        .and_then(Value::as_array)
    {
        out.extend(list.iter());
    }
    if let Some(s) = app.pointer("/spec/sourceHydrator/drySource") {
        out.push(s);
    }
    out
}

/// `dir/rel` with `.` and `..` resolved, without surrounding slashes.
fn join_path(dir: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in dir.split('/').chain(rel.split('/')) {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// The repository paths whose change refreshes an app through `source`; `None` without the
/// annotation (every change does).
fn refresh_paths(app: &Value, source: &Value) -> Option<Vec<String>> {
    let value = plumb_core::value::annotation(app, REFRESH_PATHS_ANNOTATION)?;
    let base = source.get("path").and_then(Value::as_str).unwrap_or("");
    Some(
        value
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| match p.strip_prefix('/') {
                Some(abs) => join_path("", abs),
                None => join_path(base, p),
            })
            .collect(),
    )
}

fn files_touch(paths: &[String], files: &[String]) -> bool {
    if files.is_empty() {
        // The payload lists no files (or the push changed none it knows of): refresh.
        return true;
    }
    files.iter().any(|f| {
        let f = f.trim_start_matches('/');
        paths.iter().any(|p| {
            p.is_empty()
                || f == p
                || f.strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    })
}

/// Whether `push` refreshes the Application `app` (see the module's documentation).
pub fn refreshes(app: &Value, push: &Push) -> bool {
    sources(app).into_iter().any(|source| {
        let repo = source.get("repoURL").and_then(Value::as_str).unwrap_or("");
        let target = source
            .get("targetRevision")
            .and_then(Value::as_str)
            .unwrap_or("");
        push.names_repo(repo)
            && revision_matches(target, push)
            && refresh_paths(app, source)
                .is_none_or(|paths| files_touch(&paths, &push.changed_files))
    })
}

#[cfg(test)]
mod tests;
