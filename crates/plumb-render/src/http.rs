//! Plain HTTP(S) requests to the services ApplicationSet generators read (SCM provider APIs,
//! plugin services): one blocking request with a deadline, a size cap on the answer, the
//! system's trust roots or `SSL_CERT_FILE`'s. A message never carries a request header (a
//! token is sent only as a header).

use std::path::Path;
use std::time::Duration;

/// The largest answer read (a page of an API's list).
pub const MAX_BODY: u64 = 16 << 20;

/// One answer: status, body, and the headers a paginated API links the next page by.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// `Link` (GitHub, Gitea) and `X-Next-Page` (GitLab), when present.
    pub link: Option<String>,
    pub next_page: Option<String>,
}

/// `method` `url` with `headers` and `body`, within `timeout`; `insecure` skips TLS
/// verification (a generator's `insecure: true`).
pub fn request(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
    timeout: Duration,
    insecure: bool,
) -> Result<Response, String> {
    let mut tls = tls_builder()?;
    if insecure {
        tls = tls.disable_verification(true);
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(5)
        .tls_config(tls.build())
        .build()
        .into();
    let shown = plumb_core::redact_url(url);
    let fail = |e: ureq::Error| format!("{method} {shown}: {e}");
    let mut resp = match (method, body) {
        ("POST", b) => {
            let mut req = agent.post(url);
            for (k, v) in headers {
                req = req.header(k, v);
            }
            req.send(b.unwrap_or_default()).map_err(fail)?
        }
        _ => {
            let mut req = agent.get(url);
            for (k, v) in headers {
                req = req.header(k, v);
            }
            req.call().map_err(fail)?
        }
    };
    let status = resp.status().as_u16();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (link, next_page) = (header("link"), header("x-next-page"));
    let body = resp
        .body_mut()
        .with_config()
        .limit(MAX_BODY)
        .read_to_vec()
        .map_err(|e| format!("{method} {shown}: reading the answer: {e}"))?;
    Ok(Response {
        status,
        body,
        link,
        next_page: next_page.filter(|p| !p.is_empty()),
    })
}

/// A TLS configuration trusting the system's roots, or `SSL_CERT_FILE`'s certificates when it
/// is set (chart repositories and the generators' services read it alike).
pub(crate) fn tls_builder() -> Result<ureq::tls::TlsConfigBuilder, String> {
    use ureq::tls::{Certificate, RootCerts, TlsConfig};
    let mut tls = TlsConfig::builder();
    if let Some(file) = std::env::var_os("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
        let pem = std::fs::read(&file)
            .map_err(|e| format!("SSL_CERT_FILE {}: {e}", Path::new(&file).display()))?;
        let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&pem)
            .filter_map(|i| match i {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        tls = tls.root_certs(RootCerts::new_with_certs(&certs));
    }
    Ok(tls)
}
