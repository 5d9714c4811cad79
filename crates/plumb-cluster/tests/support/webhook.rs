//! A real HTTPS mutating admission webhook for tests: it forces
//! `imagePullPolicy: Always` on every container (and init container) of the
//! Deployments it is sent, with a JSONPatch.
//!
//! The server listens on `https://127.0.0.1:<free port>/mutate` with a serving
//! certificate (IP SAN 127.0.0.1) from a CA made for it, so the API server can
//! call it through a `MutatingWebhookConfiguration` with that CA as `caBundle`:
//!
//! ```ignore
//! let hook = webhook::Webhook::start().await;
//! let value = webhook::selector_value();
//! let ns = namespace(&cluster, "wh", json!({"policy.lab/image-pull": value})).await;
//! apply(&cluster, vec![hook.configuration("force-always", "policy.lab/image-pull", &value)]).await;
//! webhook::wait_effective(&cluster, &ns).await;
//! // ... Deployments in `ns` now get Always
//! hook.stop().await;
//! ```
//!
//! Two rules keep tests that use it deterministic:
//! - each test selects its namespaces by a label value of its own ([`selector_value`]):
//!   tests run in parallel, and the API server keeps calling a deleted configuration's
//!   (stopped) server for a moment after its deletion, so a shared selector lets one
//!   test's webhook mutate, or fail, another test's objects;
//! - the API server picks a new configuration up asynchronously: [`wait_effective`]
//!   before relying on it.

use axum::{Json, Router, extract::State, routing::post};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The container field the webhook sets.
const PULL_POLICY: &str = "/spec/template/spec/containers/0/imagePullPolicy";

/// How many reviews the webhook answered (and how many of them were dry runs).
#[derive(Debug, Default)]
pub struct Calls {
    pub total: AtomicUsize,
    pub dry_run: AtomicUsize,
}

/// A running webhook server; stopped by [`Webhook::stop`] or on drop.
pub struct Webhook {
    /// `https://127.0.0.1:<port>/mutate`
    pub url: String,
    /// The CA that signed the serving certificate (PEM), for `caBundle`.
    pub ca_pem: String,
    pub calls: Arc<Calls>,
    handle: axum_server::Handle<SocketAddr>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// A CA and a serving certificate for 127.0.0.1 signed by it.
pub struct Certs {
    pub ca_pem: String,
    pub cert_der: Vec<u8>,
    pub key_der: Vec<u8>,
}

pub fn make_certs() -> Certs {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "plumb test webhook CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().expect("CA key");
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA certificate");

    let mut params = CertificateParams::new(Vec::<String>::new()).expect("serving params");
    params
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    // Go verifies the IP SAN (it ignores the CN).
    params.subject_alt_names = vec![SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST))];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().expect("serving key");
    let cert = params.signed_by(&key, &ca).expect("serving certificate");
    Certs {
        ca_pem: ca.as_ref().pem(),
        cert_der: cert.der().to_vec(),
        key_der: key.serialize_der(),
    }
}

/// The JSONPatch forcing `imagePullPolicy: Always` on every container of a
/// Deployment (or any pod template holder at `spec.template`).
pub fn force_always_patch(object: &Value) -> json_patch::Patch {
    let mut ops = Vec::new();
    for list in ["containers", "initContainers"] {
        let containers = object
            .pointer(&format!("/spec/template/spec/{list}"))
            .and_then(Value::as_array)
            .map(Vec::len)
            .unwrap_or(0);
        for i in 0..containers {
            // `add` on an existing member replaces it (RFC 6902).
            ops.push(json!({"op": "add",
                "path": format!("/spec/template/spec/{list}/{i}/imagePullPolicy"),
                "value": "Always"}));
        }
    }
    serde_json::from_value(Value::Array(ops)).expect("a valid JSONPatch")
}

async fn mutate(
    State(calls): State<Arc<Calls>>,
    Json(review): Json<AdmissionReview<DynamicObject>>,
) -> Json<AdmissionReview<DynamicObject>> {
    let request: AdmissionRequest<DynamicObject> = match review.try_into() {
        Ok(request) => request,
        Err(_) => {
            return Json(AdmissionResponse::invalid("not an AdmissionRequest").into_review());
        }
    };
    calls.total.fetch_add(1, Ordering::SeqCst);
    if request.dry_run {
        calls.dry_run.fetch_add(1, Ordering::SeqCst);
    }
    let response = AdmissionResponse::from(&request);
    let object = request
        .object
        .as_ref()
        .and_then(|o| serde_json::to_value(o).ok())
        .unwrap_or(Value::Null);
    let response = match response.clone().with_patch(force_always_patch(&object)) {
        Ok(patched) => patched,
        Err(e) => response.deny(format!("cannot serialise the patch: {e}")),
    };
    Json(response.into_review())
}

impl Webhook {
    /// Starts the server on a free port of 127.0.0.1.
    pub async fn start() -> Webhook {
        let certs = make_certs();
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
        let config = axum_server::tls_rustls::RustlsConfig::from_config(Arc::new(tls));

        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let port = listener.local_addr().expect("local address").port();

        let calls = Arc::new(Calls::default());
        let app = Router::new()
            .route("/mutate", post(mutate))
            .with_state(calls.clone());
        let handle = axum_server::Handle::new();
        let server = axum_server::from_tcp_rustls(listener, config)
            .expect("TLS server")
            .handle(handle.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = server.serve(app.into_make_service()).await {
                eprintln!("webhook server: {e}");
            }
        });
        handle.listening().await;
        Webhook {
            url: format!("https://127.0.0.1:{port}/mutate"),
            ca_pem: certs.ca_pem,
            calls,
            handle,
            task: Some(task),
        }
    }

    /// A `MutatingWebhookConfiguration` calling this server for Deployment
    /// CREATE/UPDATE in namespaces labelled `label=value`.
    pub fn configuration(&self, name: &str, label: &str, value: &str) -> Value {
        // k8s-openapi's ByteString serialises as base64, as `caBundle` wants.
        let ca_bundle = k8s_openapi::ByteString(self.ca_pem.as_bytes().to_vec());
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{
                "name": "force-always.plumb.test",
                "clientConfig": {"url": self.url, "caBundle": ca_bundle},
                "rules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "resources": ["deployments"], "operations": ["CREATE", "UPDATE"],
                    "scope": "Namespaced"
                }],
                "namespaceSelector": {"matchLabels": {label: value}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
                "timeoutSeconds": 10
            }]
        })
    }

    /// Stops the server and waits for it.
    pub async fn stop(mut self) {
        self.handle.shutdown();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

/// A namespace label value unique to the calling test, for [`Webhook::configuration`]'s
/// namespace selector (see the module's rules).
pub fn selector_value() -> String {
    super::unique("always")
}

/// Waits until the API server calls the webhook for Deployments in `namespace`: a
/// server-side dry run of a new Deployment (nothing is stored) comes back with
/// `imagePullPolicy: Always`. The mutated dry-run object.
pub async fn wait_effective(cluster: &plumb_cluster::Cluster, namespace: &str) -> Value {
    let probe = super::deployment(namespace, "probe", "IfNotPresent");
    let what = format!("the mutating webhook taking effect in namespace {namespace}");
    super::wait_until(&what, || async {
        match cluster
            .dry_run_apply(vec![probe.clone()], "plumb", false)
            .await
            .remove(0)
        {
            Ok(obj) if obj.pointer(PULL_POLICY) == Some(&json!("Always")) => Some(obj),
            _ => None,
        }
    })
    .await
}
