//! Helm charts from HTTP(S) chart repositories (`spec.source.chart` + `repoURL` with an
//! `index.yaml`), as Argo CD's repo server reads them (OCI registries: `chart/oci.rs`, through the
//! same [`ChartCache::get`]):
//!
//! - `targetRevision` is an exact version or a Helm (Masterminds) constraint — `1.2.*`,
//!   `>=1.0.0 <2.0.0`, `^1.2`, `~1.2`, `a || b` — resolved to the newest version in the
//!   index that matches ([`Constraint`], a thin adapter onto the `semver` crate);
//! - [`ChartCache`] lives inside the repository cache (`<repo cache>/helm/<sha256(repo)>/
//!   <chart>/<version>/`): a chart version is downloaded once, checked against the index's
//!   `digest` when it has one, unpacked beside its place and moved in whole; an exact version
//!   already there needs no network call; a constraint reads the index again once the
//!   cache's interval has passed (an index read, or its failure, stands for the interval:
//!   the controller's 30 s; the CLI's zero, so every run);
//! - HTTP with `ureq` (rustls + ring): every request has a deadline ([`ChartCache::timeout`],
//!   `PLUMB_HTTP_TIMEOUT`, default 30 s) and a size limit (index 32 MiB, archive 64 MiB,
//!   unpacked 256 MiB); credentials come from Argo CD's repository Secrets ([`CredStore`],
//!   replaced on a shared cache by [`ChartCache::set_creds`]) and **never appear in a
//!   message**.
//!
//! [`Constraint`] reads Helm's constraint grammar: a bare version is exact, comparators are
//! separated by spaces or commas, `x` wildcards, `v` prefixes, `A - B` ranges, `!=`, `||`.
//! Rendering is the Helm path of [`crate::render`] on the unpacked chart; the revision shown
//! is the chart's version.
//!
//! TLS roots: Mozilla's (webpki-roots), or the PEM file `SSL_CERT_FILE` names (then only
//! it, as OpenSSL reads that variable); `insecure: "true"` in the repository Secret skips
//! verification.

pub(crate) mod deps;
mod oci;

use crate::remote::redact;
use crate::repocreds::{CredStore, RepoCreds};
pub use oci::{is_oci_chart_repo, oci_reference};
use semver::{Version, VersionReq};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default deadline of one request (`PLUMB_HTTP_TIMEOUT` seconds overrides it).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest `index.yaml` read.
pub const MAX_INDEX_BYTES: u64 = 32 << 20;
/// The largest chart archive downloaded.
pub const MAX_ARCHIVE_BYTES: u64 = 64 << 20;
/// The most bytes a chart archive may unpack to.
pub const MAX_UNPACKED_BYTES: u64 = 256 << 20;

/// Why a chart could not be had. Every message is one line and names the repository
/// (its URL with any user-info hidden); none quotes a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ChartError(pub String);

/// A Helm version constraint: alternatives (`||`), each a `semver` requirement and the
/// versions `!=` excludes.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    alternatives: Vec<(VersionReq, Vec<Version>)>,
}

impl Constraint {
    /// Parses Helm's syntax. Differences from the `semver` crate's, adapted here: a bare
    /// version is exact (`1.2.3` is `=1.2.3`, not `^1.2.3`), comparators are separated by
    /// spaces or commas, `x`/`X` are wildcards, `v` prefixes, `=<`/`~>` spellings,
    /// `A - B` ranges, `!=`, and `||`.
    pub fn parse(text: &str) -> Result<Constraint, String> {
        let text = text.trim();
        let mut alternatives = Vec::new();
        for alt in text.split("||") {
            let mut tokens: Vec<String> = Vec::new();
            for t in alt.replace(',', " ").split_whitespace() {
                // An operator written apart from its version (`>= 1.2`) joins it.
                match tokens.last_mut() {
                    Some(last) if is_operator(last) => last.push_str(t),
                    _ => tokens.push(t.to_string()),
                }
            }
            let mut comparators = Vec::new();
            let mut excluded = Vec::new();
            let mut i = 0;
            while i < tokens.len() {
                if tokens.get(i + 1).map(String::as_str) == Some("-") {
                    let (Some(lo), Some(hi)) = (tokens.get(i), tokens.get(i + 2)) else {
                        return Err(format!("{text:?}: a range needs two versions"));
                    };
                    comparators.push(format!(">={}", version_part(lo)));
                    comparators.push(format!("<={}", version_part(hi)));
                    i += 3;
                    continue;
                }
                let t = &tokens[i];
                i += 1;
                let (op, v) = split_operator(t);
                let v = version_part(v);
                let wildcard = v.split('.').any(|p| p == "*");
                match op {
                    "!=" => {
                        let exact = Version::parse(&v)
                            .map_err(|_| format!("{text:?}: != needs a full version"))?;
                        excluded.push(exact);
                    }
                    "" | "=" if wildcard || v == "*" => comparators.push(v),
                    "" | "=" => comparators.push(format!("={v}")),
                    "=<" => comparators.push(format!("<={v}")),
                    "~>" => comparators.push(format!("~{v}")),
                    op => comparators.push(format!("{op}{v}")),
                }
            }
            let req = if comparators.is_empty() {
                VersionReq::STAR
            } else {
                VersionReq::parse(&comparators.join(", "))
                    .map_err(|e| format!("{text:?} is not a version constraint: {e}"))?
            };
            alternatives.push((req, excluded));
        }
        Ok(Constraint { alternatives })
    }

    pub fn matches(&self, v: &Version) -> bool {
        self.alternatives
            .iter()
            .any(|(req, excluded)| req.matches(v) && !excluded.contains(v))
    }
}

fn is_operator(t: &str) -> bool {
    matches!(
        t,
        "=" | "!=" | ">" | "<" | ">=" | "<=" | "=<" | "~" | "~>" | "^"
    )
}

fn split_operator(t: &str) -> (&str, &str) {
    for op in ["!=", ">=", "<=", "=<", "~>", ">", "<", "=", "~", "^"] {
        if let Some(rest) = t.strip_prefix(op) {
            return (op, rest.trim());
        }
    }
    ("", t)
}

/// A version as `semver` writes it: no `v`, `x`/`X` as `*`.
fn version_part(v: &str) -> String {
    let v = v.trim().trim_start_matches(['v', 'V']);
    v.split('.')
        .map(|p| if p == "x" || p == "X" { "*" } else { p })
        .collect::<Vec<_>>()
        .join(".")
}

/// A version string as semver (a `v` prefix allowed, as Helm allows it).
pub fn parse_version(v: &str) -> Option<Version> {
    Version::parse(v.trim().trim_start_matches(['v', 'V'])).ok()
}

/// One entry of `index.yaml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct IndexEntry {
    pub version: String,
    pub urls: Vec<String>,
    pub digest: String,
}

/// `index.yaml`: only what is used.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Index {
    pub entries: BTreeMap<String, Vec<IndexEntry>>,
}

/// The newest entry of `versions` that `target` selects: the exact version (by semver
/// equality, so `v1.2.3` is `1.2.3`), else the newest match of the constraint.
pub fn resolve<'a>(
    versions: &'a [IndexEntry],
    target: &str,
) -> Result<&'a IndexEntry, ResolveError> {
    let target = target.trim();
    if let Some(exact) = parse_version(target) {
        return versions
            .iter()
            .find(|e| e.version == target || parse_version(&e.version).as_ref() == Some(&exact))
            .ok_or(ResolveError::NoMatch);
    }
    let constraint = Constraint::parse(if target.is_empty() { "*" } else { target })
        .map_err(ResolveError::Syntax)?;
    versions
        .iter()
        .filter_map(|e| parse_version(&e.version).map(|v| (v, e)))
        .filter(|(v, _)| constraint.matches(v))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, e)| e)
        .ok_or(ResolveError::NoMatch)
}

/// Why [`resolve`] found nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    Syntax(String),
    NoMatch,
}

/// The newest `n` versions of `versions`, newest first, for messages.
fn newest(versions: &[IndexEntry], n: usize) -> Vec<String> {
    let mut v: Vec<(Option<Version>, &str)> = versions
        .iter()
        .map(|e| (parse_version(&e.version), e.version.as_str()))
        .collect();
    v.sort_by(|a, b| b.cmp(a));
    v.dedup_by(|a, b| a.1 == b.1);
    v.into_iter().take(n).map(|(_, s)| s.to_string()).collect()
}

/// A chart version unpacked in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedChart {
    /// The directory holding the chart's directory (named after the chart).
    pub root: PathBuf,
    /// The version, as the index spells it: the revision shown.
    pub version: String,
    /// Whether the index was consulted (read, or remembered within the interval); false
    /// when an exact version came straight from the cache directory.
    pub network: bool,
}

/// Charts downloaded from chart repositories, unpacked under `dir`.
#[derive(Debug)]
pub struct ChartCache {
    dir: PathBuf,
    /// The deadline of each request.
    pub timeout: Duration,
    /// Replaced whole when the Secrets change ([`ChartCache::set_creds`]).
    creds: std::sync::RwLock<std::sync::Arc<CredStore>>,
    /// An index read less than this long ago is used as it is, and a failure stands as long
    /// (1,000 apps of one repository read its index once per interval); zero: every time.
    interval: Duration,
    /// Per repository URL: when its index was read and what came of it.
    indexes: std::sync::Mutex<IndexMemo>,
    /// When the credentials were last set ([`ChartCache::creds_due`]).
    creds_set_at: std::sync::Mutex<Option<std::time::Instant>>,
}

type IndexMemo = std::collections::HashMap<
    String,
    (
        std::time::Instant,
        Result<std::sync::Arc<Index>, ChartError>,
    ),
>;

impl ChartCache {
    /// A cache under `dir` (the repository cache's `helm/`), with the deadline from
    /// `PLUMB_HTTP_TIMEOUT` (seconds) or [`DEFAULT_TIMEOUT`]; an index read stands for
    /// `interval`.
    pub fn new(dir: impl Into<PathBuf>, interval: Duration) -> ChartCache {
        let timeout = crate::seconds_from_env("PLUMB_HTTP_TIMEOUT", DEFAULT_TIMEOUT);
        ChartCache {
            dir: dir.into(),
            timeout,
            creds: Default::default(),
            interval,
            indexes: Default::default(),
            creds_set_at: Default::default(),
        }
    }

    /// The credentials to use from now on (a controller calls it when the repository
    /// Secrets change; the cache may be shared).
    pub fn set_creds(&self, creds: CredStore) {
        if let Ok(mut c) = self.creds.write() {
            *c = std::sync::Arc::new(creds);
        }
        if let Ok(mut at) = self.creds_set_at.lock() {
            *at = Some(std::time::Instant::now());
        }
    }

    /// Whether the credentials are older than the cache's interval (or were never set): a
    /// controller reads the repository Secrets again for a source that may need them (a
    /// chart in git whose dependencies come from a chart repository), at most once an
    /// interval.
    pub fn creds_due(&self) -> bool {
        self.creds_set_at
            .lock()
            .map(|at| at.is_none_or(|t| t.elapsed() >= self.interval))
            .unwrap_or(true)
    }

    fn creds(&self) -> std::sync::Arc<CredStore> {
        self.creds.read().map(|c| c.clone()).unwrap_or_default()
    }

    /// The URL of the repository Secret named `name` (a Helm dependency's `@name`).
    pub fn url_named(&self, name: &str) -> Option<String> {
        self.creds().url_named(name).map(str::to_string)
    }

    /// Where `chart` `version` of `repo` is (or would be) unpacked.
    pub fn path_of(&self, repo: &str, chart: &str, version: &str) -> PathBuf {
        use sha2::Digest as _;
        let h = sha2::Sha256::digest(crate::repocreds::normalize(repo).as_bytes());
        let key: String = h.iter().take(8).map(|b| format!("{b:02x}")).collect();
        self.dir.join(key).join(chart).join(version)
    }

    /// `chart` of `repo` at `target` when `target` is an exact version already unpacked: no
    /// network call.
    fn unpacked(&self, repo: &str, chart: &str, target: &str) -> Option<CachedChart> {
        if !is_exact_version(target) {
            return None;
        }
        let at = self.path_of(repo, chart, target);
        at.join(chart)
            .join("Chart.yaml")
            .is_file()
            .then(|| CachedChart {
                root: at,
                version: target.to_string(),
                network: false,
            })
    }

    /// `chart` of `repo` at `target` (a version or a constraint), unpacked. Blocking.
    /// `pass_credentials`: send the repository's credentials to a chart URL on another host
    /// too (Argo CD's `helm.passCredentials`).
    pub fn get(
        &self,
        repo: &str,
        chart: &str,
        target: &str,
        pass_credentials: bool,
    ) -> Result<CachedChart, ChartError> {
        let shown = redact(repo.trim());
        let fail = |m: String| ChartError(format!("chart repository {shown}: {m}"));
        if chart.is_empty()
            || chart == "."
            || chart == ".."
            || !chart
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(fail(format!("{chart:?} is not a chart name")));
        }
        let target = target.trim();
        if is_oci_chart_repo(repo) {
            return self.get_oci(repo, chart, target);
        }
        if let Some(cached) = self.unpacked(repo, chart, target) {
            return Ok(cached);
        }
        let creds = self.creds().lookup(repo);
        let client = Client::new(self.timeout, creds.as_ref(), &shown)?;
        let base = format!("{}/", crate::repocreds::normalize(repo));
        let index = self.index(&client, &base, &fail)?;
        let versions = index
            .entries
            .get(chart)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| fail(format!("no chart named {chart}")))?;
        let entry = resolve(versions, target).map_err(|e| match e {
            ResolveError::Syntax(m) => fail(format!("chart {chart}: targetRevision {m}")),
            ResolveError::NoMatch => fail(format!(
                "chart {chart} has no version matching {target:?} (available: {})",
                newest(versions, 10).join(", ")
            )),
        })?;
        if !is_safe_version(&entry.version) {
            return Err(fail(format!(
                "chart {chart}: version {:?} in index.yaml is not a version",
                entry.version
            )));
        }
        let at = self.path_of(repo, chart, &entry.version);
        if at.join(chart).join("Chart.yaml").is_file() {
            return Ok(CachedChart {
                root: at,
                version: entry.version.clone(),
                network: true,
            });
        }
        let url = entry.urls.first().ok_or_else(|| {
            fail(format!(
                "chart {chart} {}: no URL in index.yaml",
                entry.version
            ))
        })?;
        let url = absolute(&base, url);
        // Credentials go to another host only with passCredentials.
        let same_host = pass_credentials || host_of(&url) == host_of(&base);
        let what = format!("{chart}-{}.tgz", entry.version);
        let archive = client.get(&url, MAX_ARCHIVE_BYTES, &what, same_host)?;
        if !entry.digest.is_empty() {
            use sha2::Digest as _;
            let got: String = sha2::Sha256::digest(&archive)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let want = entry.digest.trim().trim_start_matches("sha256:");
            if !got.eq_ignore_ascii_case(want) {
                return Err(fail(format!(
                    "{what}: digest sha256:{got} does not match index.yaml's {}",
                    entry.digest.trim()
                )));
            }
        }
        install(&archive, &at, chart).map_err(|m| fail(format!("{what}: {m}")))?;
        Ok(CachedChart {
            root: at,
            version: entry.version.clone(),
            network: true,
        })
    }
}

impl ChartCache {
    /// The index of the repository at `base`, read or (within the interval) remembered.
    fn index(
        &self,
        client: &Client<'_>,
        base: &str,
        fail: &dyn Fn(String) -> ChartError,
    ) -> Result<std::sync::Arc<Index>, ChartError> {
        let read = || -> Result<std::sync::Arc<Index>, ChartError> {
            let bytes = client.get(
                &format!("{base}index.yaml"),
                MAX_INDEX_BYTES,
                "index.yaml",
                true,
            )?;
            let text =
                String::from_utf8(bytes).map_err(|_| fail("index.yaml is not UTF-8".into()))?;
            let index: Index = serde_saphyr::from_str(&text).map_err(|e| {
                fail(format!(
                    "index.yaml is not a chart index: {}",
                    e.to_string().lines().next().unwrap_or("invalid YAML")
                ))
            })?;
            Ok(std::sync::Arc::new(index))
        };
        self.memoized(base, read)
    }

    /// What `read` gives for `key` (a repository's index, a registry's tags), read or
    /// (within the interval) remembered, failures included.
    fn memoized(
        &self,
        key: &str,
        read: impl FnOnce() -> Result<std::sync::Arc<Index>, ChartError>,
    ) -> Result<std::sync::Arc<Index>, ChartError> {
        if !self.interval.is_zero()
            && let Ok(memo) = self.indexes.lock()
            && let Some((at, got)) = memo.get(key)
            && at.elapsed() < self.interval
        {
            return got.clone();
        }
        let got = read();
        if !self.interval.is_zero()
            && let Ok(mut memo) = self.indexes.lock()
        {
            memo.insert(key.to_string(), (std::time::Instant::now(), got.clone()));
        }
        got
    }
}

/// Whether `target` names one version (not a constraint) usable as a directory name.
fn is_exact_version(target: &str) -> bool {
    parse_version(target).is_some() && is_safe_version(target)
}

/// A version usable as a directory name.
fn is_safe_version(v: &str) -> bool {
    !v.is_empty()
        && !v.starts_with('.')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
}

fn absolute(base: &str, url: &str) -> String {
    if url.contains("://") {
        return url.to_string();
    }
    if let Some(path) = url.strip_prefix('/') {
        // Host-relative.
        let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
        let host = rest.split('/').next().unwrap_or("");
        return format!("{scheme}://{host}/{path}");
    }
    format!("{base}{url}")
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    authority.rsplit_once('@').map_or(authority, |(_, h)| h)
}

/// Unpacks `archive` (a chart `.tgz`) into `at/<chart>`, beside the place first and moved
/// in whole, so a half-written chart is never used.
fn install(archive: &[u8], at: &Path, chart: &str) -> Result<(), String> {
    let parent = at.parent().ok_or("no cache directory")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let staging = parent.join(format!(".staging-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let outcome = unpack(archive, &staging).and_then(|()| {
        if staging.join(chart).join("Chart.yaml").is_file() {
            Ok(())
        } else {
            Err(format!("not a chart archive: no {chart}/Chart.yaml in it"))
        }
    });
    if let Err(e) = outcome {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    if std::fs::rename(&staging, at).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
        // Another process put it there first.
        if !at.join(chart).join("Chart.yaml").is_file() {
            return Err(format!(
                "{}: cannot move the chart into place",
                at.display()
            ));
        }
    }
    Ok(())
}

fn unpack(archive: &[u8], dest: &Path) -> Result<(), String> {
    let corrupt = |e: std::io::Error| format!("corrupt chart archive: {e}");
    let gz = flate2::read::GzDecoder::new(archive).take(MAX_UNPACKED_BYTES);
    let mut tar = tar::Archive::new(gz);
    std::fs::create_dir_all(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let mut files = 0usize;
    for entry in tar.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        let path = entry.path().map_err(corrupt)?.into_owned();
        // Only plain relative paths: no `..`, no absolute paths.
        if path
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(format!(
                "chart archive has an unsafe path {}",
                path.display()
            ));
        }
        let out = dest.join(&path);
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if let Some(p) = out.parent() {
                    std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
                }
                let mut f =
                    std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
                std::io::copy(&mut entry, &mut f).map_err(corrupt)?;
                files += 1;
            }
            // Links and devices are not part of a chart.
            _ => {}
        }
    }
    if files == 0 {
        return Err("corrupt chart archive: no files in it".into());
    }
    Ok(())
}

/// One repository's HTTP client: its deadline, TLS settings and credentials.
struct Client<'a> {
    agent: ureq::Agent,
    auth: Option<String>,
    repo: &'a str,
    timeout: Duration,
    has_creds: bool,
    /// The Secret the credentials came from.
    secret: String,
}

impl<'a> Client<'a> {
    fn new(
        timeout: Duration,
        creds: Option<&RepoCreds>,
        repo: &'a str,
    ) -> Result<Client<'a>, ChartError> {
        use ureq::tls::{Certificate, ClientCert, PrivateKey};
        let fail = |m: String| ChartError(format!("chart repository {repo}: {m}"));
        let mut tls = crate::http::tls_builder().map_err(fail)?;
        let mut auth = None;
        if let Some(c) = creds {
            if c.insecure {
                tls = tls.disable_verification(true);
            }
            if !c.tls_client_cert_data.is_empty() {
                let certs: Vec<Certificate<'static>> =
                    ureq::tls::parse_pem(c.tls_client_cert_data.as_bytes())
                        .filter_map(|i| match i {
                            Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                            _ => None,
                        })
                        .collect();
                let key = PrivateKey::from_pem(c.tls_client_cert_key.as_bytes()).map_err(|_| {
                    fail(format!(
                        "{}: tlsClientCertKey is not a PEM private key",
                        c.secret
                    ))
                })?;
                if certs.is_empty() {
                    return Err(fail(format!(
                        "{}: tlsClientCertData has no PEM certificate",
                        c.secret
                    )));
                }
                tls = tls.client_cert(Some(ClientCert::new_with_certs(&certs, key)));
            }
            if !c.username.is_empty() || !c.password.is_empty() {
                use base64::Engine as _;
                let token = base64::engine::general_purpose::STANDARD
                    .encode(format!("{}:{}", c.username, c.password));
                auth = Some(format!("Basic {token}"));
            }
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(5)
            .tls_config(tls.build())
            .build()
            .into();
        Ok(Client {
            agent,
            has_creds: creds.is_some_and(RepoCreds::has_credentials),
            secret: creds.map(|c| c.secret.clone()).unwrap_or_default(),
            auth,
            repo,
            timeout,
        })
    }

    /// GET `url` (at most `limit` bytes), as `what` in messages.
    fn get(
        &self,
        url: &str,
        limit: u64,
        what: &str,
        send_auth: bool,
    ) -> Result<Vec<u8>, ChartError> {
        let fail = |m: String| ChartError(format!("chart repository {}: {m}", self.repo));
        let mut req = self.agent.get(url);
        if let (Some(a), true) = (&self.auth, send_auth) {
            req = req.header("Authorization", a);
        }
        let mut resp = req.call().map_err(|e| fail(self.transport(what, &e)))?;
        let status = resp.status().as_u16();
        match status {
            200..=299 => {}
            401 | 403 if self.has_creds => {
                return Err(fail(format!(
                    "{what}: the credentials of {} were refused (HTTP {status})",
                    self.secret
                )));
            }
            401 | 403 => {
                return Err(fail(format!(
                    "{what}: authentication required (HTTP {status}) and no repository Secret matches it"
                )));
            }
            404 => return Err(fail(format!("{what}: not found (HTTP 404)"))),
            s => return Err(fail(format!("{what}: HTTP {s}"))),
        }
        resp.body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => {
                    fail(format!("{what} is larger than {} MiB", limit >> 20))
                }
                e => fail(self.transport(what, &e)),
            })
    }

    fn transport(&self, what: &str, e: &ureq::Error) -> String {
        match e {
            ureq::Error::Timeout(_) => format!(
                "{what}: no answer within {}s (PLUMB_HTTP_TIMEOUT)",
                self.timeout.as_secs_f64()
            ),
            e => {
                let text = e.to_string();
                format!(
                    "{what}: {}",
                    text.lines().next().unwrap_or("request failed")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(vs: &[&str]) -> Vec<IndexEntry> {
        vs.iter()
            .map(|v| IndexEntry {
                version: v.to_string(),
                ..IndexEntry::default()
            })
            .collect()
    }

    fn pick(vs: &[&str], target: &str) -> Option<String> {
        let e = entries(vs);
        resolve(&e, target).ok().map(|e| e.version.clone())
    }

    #[test]
    fn helm_constraints_resolve_to_the_newest_match() {
        let vs = [
            "0.9.0",
            "1.0.0",
            "1.2.0",
            "1.2.3",
            "1.2.10",
            "1.3.0",
            "1.10.1",
            "2.0.0",
            "2.1.0-rc.1",
        ];
        let at = |t: &str| pick(&vs, t);
        assert_eq!(at("1.2.*").as_deref(), Some("1.2.10"));
        assert_eq!(at("1.2.x").as_deref(), Some("1.2.10"));
        assert_eq!(at(">=1.0.0 <2.0.0").as_deref(), Some("1.10.1"));
        assert_eq!(at(">=1.0.0, <1.3.0").as_deref(), Some("1.2.10"));
        assert_eq!(at(">= 1.0.0 < 1.3").as_deref(), Some("1.2.10"));
        assert_eq!(at("^1.2").as_deref(), Some("1.10.1"));
        assert_eq!(at("~1.2").as_deref(), Some("1.2.10"));
        assert_eq!(at("~1.2.3").as_deref(), Some("1.2.10"));
        assert_eq!(
            at("1.2.3").as_deref(),
            Some("1.2.3"),
            "a bare version is exact"
        );
        assert_eq!(at("v1.2.3").as_deref(), Some("1.2.3"));
        assert_eq!(at("=1.2").as_deref(), Some("1.2.10"));
        assert_eq!(at("1.0.0 - 1.2.5").as_deref(), Some("1.2.3"));
        assert_eq!(at("<1.0.0 || 1.3.*").as_deref(), Some("1.3.0"));
        assert_eq!(at("1.2.* != 1.2.10").as_deref(), Some("1.2.3"));
        assert_eq!(at("*").as_deref(), Some("2.0.0"), "no prerelease for *");
        assert_eq!(at("").as_deref(), Some("2.0.0"));
        assert_eq!(at(">=2.1.0-rc.0").as_deref(), Some("2.1.0-rc.1"));
        assert_eq!(at("3.*"), None);
        assert_eq!(at("9.9.9"), None);
        let e = entries(&vs);
        assert!(matches!(resolve(&e, ">>1"), Err(ResolveError::Syntax(_))));
    }

    /// A plain HTTP server on 127.0.0.1 answering every request with `body`; counts them.
    fn tiny_server(body: &'static str) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::Write as _;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = count.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut buf = Vec::new();
                let mut byte = [0u8; 1];
                while !buf.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                    buf.push(byte[0]);
                }
                c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (format!("http://127.0.0.1:{port}/charts"), count)
    }

    #[test]
    fn an_index_read_stands_for_the_interval() {
        let (repo, requests) = tiny_server(
            "apiVersion: v1\nentries:\n  shop:\n  - version: 1.0.0\n    urls: [shop-1.0.0.tgz]\n",
        );
        let dir = std::env::temp_dir().join(format!("plumb-chart-memo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cached = |cache: &ChartCache| {
            let at = cache.path_of(&repo, "shop", "1.0.0").join("shop");
            std::fs::create_dir_all(&at).expect("mkdir");
            std::fs::write(at.join("Chart.yaml"), "name: shop\n").expect("write");
        };
        let n = || requests.load(std::sync::atomic::Ordering::SeqCst);
        let cache = ChartCache::new(&dir, Duration::from_secs(600));
        cached(&cache);
        for _ in 0..3 {
            let got = cache.get(&repo, "shop", "~1.0", false).expect("resolved");
            assert_eq!((got.version.as_str(), got.network), ("1.0.0", true));
        }
        assert_eq!(n(), 1, "one index read for the interval");
        // An exact version in the cache: no request at all.
        let got = cache.get(&repo, "shop", "1.0.0", false).expect("cached");
        assert!(!got.network);
        assert_eq!(n(), 1);
        // Interval zero (the CLI): the index every time.
        let cache = ChartCache::new(&dir, Duration::ZERO);
        cache.get(&repo, "shop", "~1.0", false).expect("resolved");
        cache.get(&repo, "shop", "~1.0", false).expect("resolved");
        assert_eq!(n(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn newest_versions_for_messages() {
        let e = entries(&["1.0.0", "1.10.0", "1.2.0", "0.1.0"]);
        assert_eq!(newest(&e, 3), ["1.10.0", "1.2.0", "1.0.0"]);
    }

    #[test]
    fn urls_in_the_index() {
        assert_eq!(
            absolute("https://h/charts/", "shop-1.0.0.tgz"),
            "https://h/charts/shop-1.0.0.tgz"
        );
        assert_eq!(
            absolute("https://h/charts/", "/dl/shop.tgz"),
            "https://h/dl/shop.tgz"
        );
        assert_eq!(
            absolute("https://h/c/", "https://o/x.tgz"),
            "https://o/x.tgz"
        );
        assert_eq!(host_of("https://u:p@h:8443/x"), "h:8443");
    }

    #[test]
    fn unpacking_refuses_garbage_and_unsafe_paths() {
        let dir = std::env::temp_dir().join(format!("plumb-chart-unpack-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let e = install(b"not gzip at all", &dir.join("x/1.0.0"), "x").expect_err("garbage");
        assert!(e.starts_with("corrupt chart archive"), "{e}");
        // A tar with `../evil`.
        let mut raw = Vec::new();
        {
            let gz = flate2::write::GzEncoder::new(&mut raw, flate2::Compression::fast());
            let mut b = tar::Builder::new(gz);
            let mut h = tar::Header::new_gnu();
            let data = b"x";
            h.set_size(1);
            h.set_mode(0o644);
            // Written raw: the builder itself refuses `..`.
            let name = b"../evil";
            h.as_old_mut().name[..name.len()].copy_from_slice(name);
            h.set_cksum();
            b.append(&h, &data[..]).expect("append");
            b.into_inner().expect("tar").finish().expect("gz");
        }
        let e = install(&raw, &dir.join("x/1.0.1"), "x").expect_err("unsafe");
        assert!(e.contains("unsafe path"), "{e}");
        assert!(!dir.join("x/evil").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
