//! Helm charts in OCI registries, as Argo CD's repo server pulls them with Helm:
//!
//! - `repoURL` is `oci://host[:port]/path` or Argo CD's form without a scheme
//!   (`host[:port]/path`, with `enableOCI: "true"` in its repository Secret); the chart is the
//!   repository `path/<chart>` of the registry;
//! - `targetRevision` an exact version is pulled by its tag (Helm writes `+` as `_` in tags);
//!   a constraint is resolved against the repository's tags list (OCI distribution's
//!   `/v2/<name>/tags/list`, followed across pages by its `Link` header), newest match first;
//! - the manifest must be a Helm chart's (config `application/vnd.cncf.helm.config.v1+json`);
//!   the chart layer (`application/vnd.cncf.helm.chart.content.v1.tar+gzip`) is downloaded and
//!   checked against its digest and size, then unpacked into the same cache as charts of
//!   HTTP repositories;
//! - authentication as registries ask for it (`WWW-Authenticate`): `Basic` with the
//!   repository Secret's username and password, or `Bearer` — a token from the realm named
//!   (`service`, `scope`), asked with those credentials when there are some;
//! - HTTPS always; plain HTTP only when the repository Secret says `insecure: "true"` (then
//!   HTTPS is tried first without verifying the certificate, as Docker treats an insecure
//!   registry).
//!
//! A constraint's tags list is remembered like an index, for the cache's interval. The chart
//! layer is installed with the same unpacking as an HTTP repository's chart. Each request
//! answers at most one `WWW-Authenticate` challenge (`Registry::get`).

use super::{
    CachedChart, ChartCache, ChartError, Client, Index, IndexEntry, MAX_ARCHIVE_BYTES,
    ResolveError, install, is_exact_version, is_safe_version, newest, resolve,
};
use crate::remote::redact;
use serde::Deserialize;
use std::cell::{Cell, RefCell};

const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";
const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
const HELM_CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// The chart layer's type before Helm 3.8 settled on the one above.
const LEGACY_CHART_LAYER: &str = "application/tar+gzip";
const MAX_MANIFEST_BYTES: u64 = 4 << 20;
const MAX_TAGS_BYTES: u64 = 16 << 20;
const MAX_TOKEN_BYTES: u64 = 1 << 20;
/// Pages of a tags list followed at most.
const MAX_TAG_PAGES: usize = 100;

/// Whether a chart source's `repoURL` names an OCI registry: `oci://…`, or no scheme at all
/// (Argo CD's form for an OCI Helm repository).
pub fn is_oci_chart_repo(url: &str) -> bool {
    let u = url.trim();
    if u.starts_with("oci://") {
        return true;
    }
    !u.is_empty()
        && !u.contains("://")
        && !u.starts_with(['/', '.', '~'])
        && u.split('/').next().is_some_and(|host| !host.is_empty())
}

/// The registry host (`host[:port]`) and repository name (`path/chart`) of `chart` in the OCI
/// `repo_url`.
pub fn oci_reference(repo_url: &str, chart: &str) -> Result<(String, String), String> {
    let u = repo_url.trim();
    let u = u.strip_prefix("oci://").unwrap_or(u).trim_end_matches('/');
    let (host, path) = u.split_once('/').unwrap_or((u, ""));
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
    {
        return Err(format!("{host:?} is not a registry host"));
    }
    let name = if path.is_empty() {
        chart.to_string()
    } else {
        format!("{path}/{chart}")
    };
    // OCI distribution's repository name grammar, loosely: lower-case components.
    let ok = name.split('/').all(|c| {
        !c.is_empty()
            && c.chars().all(|ch| {
                ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '_' | '-')
            })
    });
    if !ok {
        return Err(format!(
            "{name:?} is not an OCI repository name (lower-case letters, digits, '.', '_', '-', '/')"
        ));
    }
    Ok((host.to_string(), name))
}

/// A challenge of `WWW-Authenticate`: its scheme (lower-case) and parameters.
fn parse_challenge(header: &str) -> (String, Vec<(String, String)>) {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    let mut params = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let mut key = String::new();
        while let Some(c) = chars.peek().copied() {
            if c == '=' || c == ',' {
                break;
            }
            key.push(c);
            chars.next();
        }
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'=') {
            chars.next();
            if chars.peek() == Some(&'"') {
                chars.next();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some(n) = chars.next() {
                                value.push(n);
                            }
                        }
                        '"' => break,
                        c => value.push(c),
                    }
                }
            } else {
                while let Some(c) = chars.peek().copied() {
                    if c == ',' {
                        break;
                    }
                    value.push(c);
                    chars.next();
                }
            }
        }
        params.push((key.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    (scheme.to_ascii_lowercase(), params)
}

#[derive(Deserialize)]
struct Descriptor {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    #[serde(default)]
    digest: String,
    #[serde(default)]
    size: u64,
}

#[derive(Deserialize)]
struct Manifest {
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

#[derive(Deserialize)]
struct Tags {
    #[serde(default)]
    tags: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct Token {
    #[serde(default)]
    token: String,
    #[serde(default)]
    access_token: String,
}

/// A response read whole: its body and the headers used.
struct Got {
    body: Vec<u8>,
    digest: Option<String>,
    link: Option<String>,
}

/// One repository of one registry, for the span of one pull.
struct Registry<'a> {
    client: &'a Client<'a>,
    host: String,
    name: String,
    insecure: bool,
    /// Plain HTTP: chosen when HTTPS fails and the repository is insecure.
    plain: Cell<bool>,
    /// The `Authorization` header that works (Basic, or a Bearer token).
    auth: RefCell<Option<String>>,
}

impl<'a> Registry<'a> {
    fn fail(&self, m: String) -> ChartError {
        ChartError(format!("chart repository {}: {m}", self.client.repo))
    }

    fn url(&self, path_and_query: &str) -> String {
        let scheme = if self.plain.get() { "http" } else { "https" };
        format!("{scheme}://{}{path_and_query}", self.host)
    }

    /// GET `url` (absolute, or a path on the registry), answering one authentication
    /// challenge. `Ok(None)`: not found.
    fn get(
        &self,
        path: &str,
        accept: Option<&str>,
        limit: u64,
        what: &str,
    ) -> Result<Option<Got>, ChartError> {
        let mut challenged = false;
        loop {
            let url = if path.contains("://") {
                path.to_string()
            } else {
                self.url(path)
            };
            let mut req = self.client.agent.get(&url);
            if let Some(a) = accept {
                req = req.header("Accept", a);
            }
            if let Some(a) = self.auth.borrow().as_deref() {
                req = req.header("Authorization", a);
            }
            let mut resp = match req.call() {
                Ok(r) => r,
                Err(e) => {
                    // An insecure registry may speak plain HTTP.
                    if self.insecure
                        && !self.plain.get()
                        && !path.contains("://")
                        && !matches!(e, ureq::Error::Timeout(_))
                    {
                        self.plain.set(true);
                        continue;
                    }
                    return Err(self.fail(self.client.transport(what, &e)));
                }
            };
            let status = resp.status().as_u16();
            let header = |name: &str| {
                resp.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            match status {
                200..=299 => {
                    let digest = header("docker-content-digest");
                    let link = header("link");
                    let body = resp
                        .body_mut()
                        .with_config()
                        .limit(limit)
                        .read_to_vec()
                        .map_err(|e| match e {
                            ureq::Error::BodyExceedsLimit(_) => {
                                self.fail(format!("{what} is larger than {} MiB", limit >> 20))
                            }
                            e => self.fail(self.client.transport(what, &e)),
                        })?;
                    return Ok(Some(Got { body, digest, link }));
                }
                401 if !challenged => {
                    challenged = true;
                    let challenge = header("www-authenticate").unwrap_or_default();
                    self.answer(&challenge, what)?;
                }
                401 | 403 => return Err(self.refused(what, status)),
                404 => return Ok(None),
                s => return Err(self.fail(format!("{what}: HTTP {s}"))),
            }
        }
    }

    fn refused(&self, what: &str, status: u16) -> ChartError {
        if self.client.has_creds {
            self.fail(format!(
                "{what}: the credentials of {} were refused (HTTP {status})",
                self.client.secret
            ))
        } else {
            self.fail(format!(
                "{what}: authentication required (HTTP {status}) and no repository Secret matches it"
            ))
        }
    }

    /// Sets the `Authorization` a challenge asks for.
    fn answer(&self, challenge: &str, what: &str) -> Result<(), ChartError> {
        let (scheme, params) = parse_challenge(challenge);
        let param = |k: &str| {
            params
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        match scheme.as_str() {
            "bearer" => {
                let realm = param("realm")
                    .filter(|r| r.starts_with("https://") || r.starts_with("http://"))
                    .ok_or_else(|| {
                        self.fail(format!("{what}: a Bearer challenge without a usable realm"))
                    })?;
                // Credentials never go from HTTPS down to plain HTTP (as Helm refuses it).
                if realm.starts_with("http://") && !self.plain.get() {
                    return Err(self.fail(format!(
                        "{what}: the Bearer realm {} is plain HTTP but the registry is HTTPS",
                        redact(realm)
                    )));
                }
                let scope = param("scope")
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("repository:{}:pull", self.name));
                let mut req = self.client.agent.get(realm).query("scope", &scope);
                if let Some(service) = param("service") {
                    req = req.query("service", service);
                }
                if let Some(basic) = &self.client.auth {
                    req = req.header("Authorization", basic);
                }
                let what_token = format!("{what} (token from {})", redact(realm));
                let mut resp = req
                    .call()
                    .map_err(|e| self.fail(self.client.transport(&what_token, &e)))?;
                let status = resp.status().as_u16();
                match status {
                    200..=299 => {}
                    401 | 403 => return Err(self.refused(&what_token, status)),
                    s => return Err(self.fail(format!("{what_token}: HTTP {s}"))),
                }
                let body = resp
                    .body_mut()
                    .with_config()
                    .limit(MAX_TOKEN_BYTES)
                    .read_to_vec()
                    .map_err(|e| self.fail(self.client.transport(&what_token, &e)))?;
                let token: Token = serde_json::from_slice(&body)
                    .map_err(|_| self.fail(format!("{what_token}: not a token response")))?;
                let token = if token.token.is_empty() {
                    token.access_token
                } else {
                    token.token
                };
                if token.is_empty() {
                    return Err(self.fail(format!("{what_token}: no token in the response")));
                }
                *self.auth.borrow_mut() = Some(format!("Bearer {token}"));
                Ok(())
            }
            _ => match &self.client.auth {
                Some(basic) => {
                    *self.auth.borrow_mut() = Some(basic.clone());
                    Ok(())
                }
                None => Err(self.refused(what, 401)),
            },
        }
    }

    /// The repository's tags as chart versions (`_` read as `+`), each with its tag.
    fn tags(&self, chart: &str) -> Result<Index, ChartError> {
        let mut entries = Vec::new();
        let mut next = Some(format!("/v2/{}/tags/list?n=1000", self.name));
        let mut pages = 0;
        while let Some(path) = next.take() {
            pages += 1;
            if pages > MAX_TAG_PAGES {
                return Err(self.fail(format!(
                    "{}: the tags list has more than {MAX_TAG_PAGES} pages",
                    self.name
                )));
            }
            let what = format!("{} tags", self.name);
            let got = self
                .get(&path, None, MAX_TAGS_BYTES, &what)?
                .ok_or_else(|| self.fail(format!("no repository {} (HTTP 404)", self.name)))?;
            let tags: Tags = serde_json::from_slice(&got.body)
                .map_err(|_| self.fail(format!("{what}: not a tags list")))?;
            for tag in tags.tags.unwrap_or_default() {
                entries.push(IndexEntry {
                    version: tag.replace('_', "+"),
                    urls: vec![tag],
                    digest: String::new(),
                });
            }
            // `Link: </v2/…/tags/list?last=x&n=1000>; rel="next"`.
            next = got.link.and_then(|l| {
                let l = l.trim();
                let (target, rel) = l.strip_prefix('<')?.split_once('>')?;
                rel.contains("next").then(|| target.to_string())
            });
        }
        let mut index = Index::default();
        index.entries.insert(chart.to_string(), entries);
        Ok(index)
    }

    /// The chart archive of `tag`; `Ok(None)` when there is no such tag.
    fn chart_archive(&self, tag: &str) -> Result<Option<Vec<u8>>, ChartError> {
        let what = format!("{}:{tag}", self.name);
        let Some(got) = self.get(
            &format!("/v2/{}/manifests/{tag}", self.name),
            Some(MANIFEST_ACCEPT),
            MAX_MANIFEST_BYTES,
            &format!("{what} manifest"),
        )?
        else {
            return Ok(None);
        };
        if let Some(d) = got.digest.as_deref()
            && let Some(want) = d.trim().strip_prefix("sha256:")
            && !sha256_hex(&got.body).eq_ignore_ascii_case(want)
        {
            return Err(self.fail(format!(
                "{what}: the manifest's digest does not match the registry's {}",
                d.trim()
            )));
        }
        let manifest: Manifest = serde_json::from_slice(&got.body)
            .map_err(|_| self.fail(format!("{what}: not an OCI image manifest")))?;
        if manifest.config.media_type != HELM_CONFIG {
            return Err(self.fail(format!(
                "{what} is not a Helm chart (config media type {:?})",
                manifest.config.media_type
            )));
        }
        let layer = manifest
            .layers
            .iter()
            .find(|l| l.media_type == HELM_CHART_LAYER)
            .or_else(|| {
                manifest
                    .layers
                    .iter()
                    .find(|l| l.media_type == LEGACY_CHART_LAYER)
            })
            .ok_or_else(|| self.fail(format!("{what}: no chart layer in the manifest")))?;
        let want = layer
            .digest
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
            .ok_or_else(|| {
                self.fail(format!(
                    "{what}: the chart layer's digest {:?} is not a sha256 digest",
                    layer.digest
                ))
            })?;
        if layer.size > MAX_ARCHIVE_BYTES {
            return Err(self.fail(format!(
                "{what}: the chart layer is larger than {} MiB",
                MAX_ARCHIVE_BYTES >> 20
            )));
        }
        let blob = self
            .get(
                &format!("/v2/{}/blobs/{}", self.name, layer.digest),
                None,
                MAX_ARCHIVE_BYTES,
                &format!("{what} chart layer"),
            )?
            .ok_or_else(|| self.fail(format!("{what}: chart layer {} not found", layer.digest)))?;
        let got = sha256_hex(&blob.body);
        if !got.eq_ignore_ascii_case(want) {
            return Err(self.fail(format!(
                "{what}: chart layer digest sha256:{got} does not match the manifest's {}",
                layer.digest
            )));
        }
        Ok(Some(blob.body))
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl ChartCache {
    /// `chart` of the OCI registry `repo` at `target` (a version or a constraint), unpacked.
    pub(super) fn get_oci(
        &self,
        repo: &str,
        chart: &str,
        target: &str,
    ) -> Result<CachedChart, ChartError> {
        let shown = redact(repo.trim());
        let fail = |m: String| ChartError(format!("chart repository {shown}: {m}"));
        let (host, name) = oci_reference(repo, chart).map_err(fail)?;
        if let Some(cached) = self.unpacked(repo, chart, target) {
            return Ok(cached);
        }
        let exact = is_exact_version(target);
        // Argo CD keeps an OCI repository's URL without the scheme; `oci://` is accepted too.
        let store = self.creds();
        let bare = repo.trim().trim_start_matches("oci://");
        let creds = store
            .lookup(repo)
            .or_else(|| store.lookup(bare))
            .or_else(|| store.lookup(&format!("oci://{bare}")));
        let client = Client::new(self.timeout, creds.as_ref(), &shown)?;
        let registry = Registry {
            client: &client,
            host: host.clone(),
            name: name.clone(),
            insecure: creds.as_ref().is_some_and(|c| c.insecure),
            plain: Cell::new(false),
            auth: RefCell::new(None),
        };
        let tags = || {
            self.memoized(&format!("oci://{host}/{name}"), || {
                registry.tags(chart).map(std::sync::Arc::new)
            })
        };
        let pick = |index: &Index| -> Result<(String, String), ChartError> {
            let versions = index.entries.get(chart).map(Vec::as_slice).unwrap_or(&[]);
            let entry = resolve(versions, target).map_err(|e| match e {
                ResolveError::Syntax(m) => fail(format!("chart {chart}: targetRevision {m}")),
                ResolveError::NoMatch if versions.is_empty() => {
                    fail(format!("chart {chart}: {name} has no tags"))
                }
                ResolveError::NoMatch => fail(format!(
                    "chart {chart} has no version matching {target:?} (available: {})",
                    newest(versions, 10).join(", ")
                )),
            })?;
            let tag = entry.urls.first().cloned().unwrap_or_default();
            Ok((entry.version.clone(), tag))
        };
        let (mut version, mut tag) = if exact {
            (target.to_string(), target.replace('+', "_"))
        } else {
            pick(&*tags()?)?
        };
        let mut archive = None;
        for _ in 0..2 {
            if !is_safe_version(&version) {
                return Err(fail(format!("chart {chart}: tag {tag:?} is not a version")));
            }
            let at = self.path_of(repo, chart, &version);
            if at.join(chart).join("Chart.yaml").is_file() {
                return Ok(CachedChart {
                    root: at,
                    version,
                    network: true,
                });
            }
            match registry.chart_archive(&tag)? {
                Some(a) => {
                    archive = Some(a);
                    break;
                }
                // An exact version under another spelling (`v1.0.0`), else the versions
                // there are.
                None if exact => (version, tag) = pick(&*tags()?)?,
                None => {
                    return Err(fail(format!(
                        "chart {chart}: tag {tag} listed but not found"
                    )));
                }
            }
        }
        let archive = archive.ok_or_else(|| fail(format!("chart {chart}: tag {tag} not found")))?;
        let at = self.path_of(repo, chart, &version);
        let what = format!("{name}:{tag}");
        install(&archive, &at, chart).map_err(|m| fail(format!("{what}: {m}")))?;
        Ok(CachedChart {
            root: at,
            version,
            network: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oci_repo_urls() {
        assert!(is_oci_chart_repo("oci://r.example/charts"));
        assert!(is_oci_chart_repo("registry.example:5000/charts"));
        assert!(is_oci_chart_repo("ghcr.io"));
        assert!(!is_oci_chart_repo("https://charts.example"));
        assert!(!is_oci_chart_repo("/srv/charts"));
        assert!(!is_oci_chart_repo(""));
        assert_eq!(
            oci_reference("oci://r.example:5000/charts/", "shop").unwrap(),
            ("r.example:5000".into(), "charts/shop".into())
        );
        assert_eq!(
            oci_reference("ghcr.io", "shop").unwrap(),
            ("ghcr.io".into(), "shop".into())
        );
        assert!(oci_reference("r.example/Charts", "shop").is_err());
        assert!(oci_reference("oci:///charts", "shop").is_err());
    }

    #[test]
    fn challenges() {
        let (s, p) = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(s, "bearer");
        assert_eq!(
            p,
            [
                ("realm".into(), "https://auth.example/token".into()),
                ("service".into(), "registry.example".into()),
                ("scope".into(), "repository:a/b:pull,push".into()),
            ]
        );
        let (s, p) = parse_challenge(r#"Basic realm="Registry Realm""#);
        assert_eq!((s.as_str(), p.len()), ("basic", 1));
        assert_eq!(parse_challenge("").0, "");
    }
}
