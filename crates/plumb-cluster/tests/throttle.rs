//! An API server that turns requests away (429 Too Many Requests with `Retry-After`):
//! plumb retries them with backoff, no sooner than `Retry-After`, a bounded number of times.
//!
//! A TLS proxy in front of the test bed's real API server answers chosen requests with 429
//! and passes the rest through (with the test bed's own credentials); plumb connects to the
//! proxy through a kubeconfig trusting the proxy's test CA. The proxy records when each
//! request arrived, which is what the assertions are about.

mod support;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use plumb_cluster::{Cluster, ConnectOptions};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which requests the proxy turns away, and how.
struct Rule {
    method: http::Method,
    /// A substring of the request path.
    path: String,
    /// How many matching requests get 429 before the rest pass (`usize::MAX`: all).
    refusals: usize,
    /// The `Retry-After` header of the 429s, in seconds.
    retry_after: u64,
}

struct ProxyState {
    upstream: kube::Client,
    rule: Rule,
    /// `(arrival, answered with 429)` of every request matching the rule.
    seen: Mutex<Vec<(Instant, bool)>>,
}

struct Proxy {
    state: Arc<ProxyState>,
    kubeconfig: std::path::PathBuf,
    handle: axum_server::Handle<SocketAddr>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.handle.shutdown();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

impl Proxy {
    async fn start(rule: Rule) -> Proxy {
        let mut config = kube::Config::infer().await.expect("test bed kubeconfig");
        // The proxy must pass the server's answers on as they are.
        config.default_retry = false;
        let upstream = kube::Client::try_from(config).expect("upstream client");
        let state = Arc::new(ProxyState {
            upstream,
            rule,
            seen: Mutex::new(Vec::new()),
        });

        let certs = support::webhook::make_certs();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(certs.cert_der)],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certs.key_der)),
            )
            .expect("serving certificate");
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tls = axum_server::tls_rustls::RustlsConfig::from_config(Arc::new(tls));
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("local address").port();
        let app = Router::new().fallback(forward).with_state(state.clone());
        let handle = axum_server::Handle::new();
        let server = axum_server::from_tcp_rustls(listener, tls)
            .expect("TLS server")
            .handle(handle.clone());
        tokio::spawn(async move {
            if let Err(e) = server.serve(app.into_make_service()).await {
                eprintln!("proxy: {e}");
            }
        });
        handle.listening().await;

        // k8s-openapi's ByteString serialises as base64, as `certificate-authority-data` wants.
        let ca = serde_json::to_value(k8s_openapi::ByteString(certs.ca_pem.into_bytes()))
            .expect("base64");
        let kubeconfig =
            std::env::temp_dir().join(format!("{}.kubeconfig", support::unique("throttle")));
        let text = json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "proxy",
            "clusters": [{"name": "proxy", "cluster": {
                "server": format!("https://127.0.0.1:{port}"),
                "certificate-authority-data": ca}}],
            "users": [{"name": "proxy", "user": {"token": "the-proxy-adds-its-own"}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy"}}]
        });
        std::fs::write(&kubeconfig, text.to_string()).expect("write kubeconfig");
        Proxy {
            state,
            kubeconfig,
            handle,
        }
    }

    async fn connect(&self) -> Cluster {
        Cluster::connect(&ConnectOptions {
            kubeconfig: Some(self.kubeconfig.clone()),
            context: None,
        })
        .await
        .expect("connect through the proxy")
    }

    fn seen(&self) -> Vec<(Instant, bool)> {
        self.state.seen.lock().expect("lock").clone()
    }
}

async fn forward(State(state): State<Arc<ProxyState>>, req: Request) -> Response {
    let rule = &state.rule;
    if req.method() == rule.method && req.uri().path().contains(&rule.path) {
        let mut seen = state.seen.lock().expect("lock");
        let refuse = seen.len() < rule.refusals;
        seen.push((Instant::now(), refuse));
        if refuse {
            let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "TooManyRequests", "code": 429,
                "message": "too many requests, please try again later"});
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [
                    ("retry-after", rule.retry_after.to_string()),
                    ("content-type", "application/json".to_string()),
                ],
                status.to_string(),
            )
                .into_response();
        }
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, 64 << 20).await {
        Ok(b) => b,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    let mut upstream = http::Request::builder().method(parts.method).uri(path);
    for (name, value) in &parts.headers {
        if name != http::header::AUTHORIZATION && name != http::header::HOST {
            upstream = upstream.header(name, value);
        }
    }
    let upstream = match upstream.body(kube::client::Body::from(bytes.to_vec())) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    match state.upstream.send(upstream).await {
        Ok(response) => {
            let (parts, body) = response.into_parts();
            Response::from_parts(parts, Body::new(body))
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

fn config_map(namespace: &str, name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace}, "data": {"k": value}})
}

/// Asserts that consecutive requests arrived at least `gap` apart.
fn assert_spaced(seen: &[(Instant, bool)], gap: Duration) {
    for pair in seen.windows(2) {
        let waited = pair[1].0.duration_since(pair[0].0);
        assert!(
            waited >= gap,
            "a retry came {waited:?} after the 429, wanted >= {gap:?}"
        );
    }
}

#[tokio::test]
async fn reads_and_applies_turned_away_with_429_are_retried_after_retry_after() {
    let Some(direct) = support::testbed("throttle_read_apply").await else {
        return;
    };
    let ns = support::namespace(&direct, "throttle", json!({})).await;
    support::apply(&direct, vec![config_map(&ns, "read-me", "one")]).await;

    // A read: two 429s, then the object.
    let proxy = Proxy::start(Rule {
        method: http::Method::GET,
        path: format!("/namespaces/{ns}/configmaps/read-me"),
        refusals: 2,
        retry_after: 1,
    })
    .await;
    let cluster = proxy.connect().await;
    let live = cluster
        .get_object("", "ConfigMap", &ns, "read-me")
        .await
        .expect("the read succeeds after the 429s")
        .expect("the ConfigMap exists");
    assert_eq!(live.pointer("/data/k"), Some(&json!("one")));
    let seen = proxy.seen();
    assert_eq!(
        seen.iter().map(|s| s.1).collect::<Vec<_>>(),
        [true, true, false],
        "two refused requests, then one passed"
    );
    assert_spaced(&seen, Duration::from_secs(1));
    drop(proxy);

    // A server-side apply (PATCH): one 429, then applied once.
    let proxy = Proxy::start(Rule {
        method: http::Method::PATCH,
        path: format!("/namespaces/{ns}/configmaps/applied"),
        refusals: 1,
        retry_after: 1,
    })
    .await;
    let cluster = proxy.connect().await;
    let results = cluster
        .apply(vec![config_map(&ns, "applied", "two")], "plumb-test", true)
        .await;
    assert_eq!(results.len(), 1);
    assert!(results[0].is_ok(), "apply after a 429: {:?}", results[0]);
    let seen = proxy.seen();
    assert_eq!(seen.iter().map(|s| s.1).collect::<Vec<_>>(), [true, false]);
    assert_spaced(&seen, Duration::from_secs(1));
    let stored = direct
        .get_object("", "ConfigMap", &ns, "applied")
        .await
        .expect("read")
        .expect("applied");
    assert_eq!(stored.pointer("/data/k"), Some(&json!("two")));
}

#[tokio::test]
async fn a_server_that_keeps_answering_429_fails_the_request_after_bounded_retries() {
    let Some(direct) = support::testbed("throttle_bounded").await else {
        return;
    };
    let ns = support::namespace(&direct, "throttle", json!({})).await;
    let proxy = Proxy::start(Rule {
        method: http::Method::GET,
        path: format!("/namespaces/{ns}/configmaps/never"),
        refusals: usize::MAX,
        retry_after: 0,
    })
    .await;
    let cluster = proxy.connect().await;
    let started = Instant::now();
    let err = cluster
        .get_object("", "ConfigMap", &ns, "never")
        .await
        .expect_err("always refused");
    let message = err.to_string();
    assert!(
        message.contains("429") || message.to_lowercase().contains("too many"),
        "{message}"
    );
    let seen = proxy.seen();
    assert_eq!(
        seen.len(),
        1 + plumb_cluster::RETRY_ATTEMPTS as usize,
        "one request and {} retries",
        plumb_cluster::RETRY_ATTEMPTS
    );
    // Backoff, not a busy loop: the retries waited at least the first backoff each.
    assert_spaced(&seen, plumb_cluster::RETRY_MIN_DELAY);
    assert!(started.elapsed() < Duration::from_secs(60));
}
