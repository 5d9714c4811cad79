//! A TLS proxy in front of the test bed's real API server, for faults the real server does
//! not produce on demand: chosen requests answered with 429 Too Many Requests and
//! `Retry-After`, or preceded by another writer's change (a real 409 Conflict on a request
//! pinned to a resourceVersion). The rest pass through with the test bed's own credentials;
//! [`Proxy::connect`] connects plumb through a kubeconfig trusting the proxy's test CA. The
//! proxy records when each matching request arrived, which is what tests assert on.

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use plumb_cluster::{Cluster, ConnectOptions};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Which requests the proxy turns away, and how.
pub struct Rule {
    pub method: axum::http::Method,
    /// A substring of the request path.
    pub path: String,
    /// How many matching requests get 429 before the rest pass (`usize::MAX`: all).
    pub refusals: usize,
    /// The `Retry-After` header of the 429s, in seconds.
    pub retry_after: u64,
    /// Before the first matching request that passes, another writer merge-patches the
    /// object at the request's path with this (so a request pinned to the resourceVersion
    /// read before gets a real 409 Conflict).
    pub race: Option<Value>,
    /// The first matching WATCH: another writer POSTs this object to this collection path,
    /// then the proxy answers the WATCH with a `410 Gone` ERROR event (the version it asked
    /// for is too old), so the change is only seen by a new LIST.
    pub watch_gone: Option<(String, Value)>,
}

/// One matching request the proxy saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Instant,
    /// Answered 429 by the proxy.
    pub refused: bool,
    /// The status the request was answered with.
    pub status: u16,
}

struct ProxyState {
    upstream: kube::Client,
    rule: Rule,
    /// Every request matching the rule.
    seen: Mutex<Vec<Seen>>,
    /// The 410 of [`Rule::watch_gone`] was answered.
    gone_sent: Mutex<bool>,
}

pub struct Proxy {
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
    pub async fn start(rule: Rule) -> Proxy {
        let mut config = kube::Config::infer().await.expect("test bed kubeconfig");
        // The proxy must pass the server's answers on as they are.
        config.default_retry = false;
        let upstream = kube::Client::try_from(config).expect("upstream client");
        let state = Arc::new(ProxyState {
            upstream,
            rule,
            seen: Mutex::new(Vec::new()),
            gone_sent: Mutex::new(false),
        });

        let certs = super::webhook::make_certs();
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
            std::env::temp_dir().join(format!("{}.kubeconfig", super::unique("throttle")));
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

    pub async fn connect(&self) -> Cluster {
        Cluster::connect(&ConnectOptions {
            kubeconfig: Some(self.kubeconfig.clone()),
            context: None,
        })
        .await
        .expect("connect through the proxy")
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().expect("lock").clone()
    }
}

async fn forward(State(state): State<Arc<ProxyState>>, req: Request) -> Response {
    let rule = &state.rule;
    let matching = req.method() == rule.method && req.uri().path().contains(&rule.path);
    let mut index = None;
    if matching {
        let (refuse, first_pass) = {
            let mut seen = state.seen.lock().expect("lock");
            let refuse = seen.len() < rule.refusals;
            let first_pass = !refuse && seen.iter().all(|s| s.refused);
            seen.push(Seen {
                at: Instant::now(),
                refused: refuse,
                status: if refuse { 429 } else { 0 },
            });
            index = Some(seen.len() - 1);
            (refuse, first_pass)
        };
        let is_watch = req.uri().query().is_some_and(|q| q.contains("watch="));
        if let (true, Some((path, object))) = (is_watch, &rule.watch_gone) {
            let first_watch = {
                let mut seen = state.seen.lock().expect("lock");
                let first = !std::mem::replace(&mut *state.gone_sent.lock().expect("lock"), true);
                if let Some(i) = index {
                    seen[i].status = if first { 410 } else { 0 };
                }
                first
            };
            if first_watch {
                let other = axum::http::Request::builder()
                    .method(axum::http::Method::POST)
                    .uri(path.as_str())
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(object.to_string().into_bytes()))
                    .expect("create request");
                let answer = state.upstream.send(other).await.expect("the other writer");
                assert!(
                    answer.status().is_success(),
                    "the other writer: {}",
                    answer.status()
                );
                let event = json!({"type": "ERROR", "object": {"kind": "Status",
                    "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "too old resource version", "reason": "Expired", "code": 410}});
                return (
                    StatusCode::OK,
                    [("content-type", "application/json")],
                    format!("{event}\n"),
                )
                    .into_response();
            }
        }
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
        if let (true, Some(patch)) = (first_pass, &rule.race) {
            let other = axum::http::Request::builder()
                .method(axum::http::Method::PATCH)
                .uri(req.uri().path())
                .header("content-type", "application/merge-patch+json")
                .body(kube::client::Body::from(patch.to_string().into_bytes()))
                .expect("race request");
            let answer = state.upstream.send(other).await.expect("the other writer");
            assert!(
                answer.status().is_success(),
                "the other writer: {}",
                answer.status()
            );
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
    let mut upstream = axum::http::Request::builder()
        .method(parts.method)
        .uri(path);
    for (name, value) in &parts.headers {
        if name != axum::http::header::AUTHORIZATION && name != axum::http::header::HOST {
            upstream = upstream.header(name, value);
        }
    }
    let upstream = match upstream.body(kube::client::Body::from(bytes.to_vec())) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    match state.upstream.send(upstream).await {
        Ok(response) => {
            if let Some(i) = index {
                state.seen.lock().expect("lock")[i].status = response.status().as_u16();
            }
            let (parts, body) = response.into_parts();
            Response::from_parts(parts, Body::new(body))
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}
