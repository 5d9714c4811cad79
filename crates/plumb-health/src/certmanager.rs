//! cert-manager (`cert-manager.io`): Certificate, CertificateRequest, Issuer, ClusterIssuer.
//!
//! Written from cert-manager's documented conditions:
//!
//! - **Certificate**: `Ready` True ⇒ Healthy. `Issuing` False with reason `Failed` (the last
//!   issuance failed; cert-manager retries with back-off) ⇒ Degraded. `Issuing` True (a
//!   certificate is being issued) or no `Ready` yet ⇒ Progressing. `Ready` False otherwise ⇒
//!   Degraded. A `Ready` condition for an older generation ⇒ Progressing.
//! - **CertificateRequest**: `Ready` True ⇒ Healthy; `Denied` or `InvalidRequest` True, or
//!   `Ready` False with reason `Failed`/`Denied` ⇒ Degraded; otherwise (reason `Pending`,
//!   no condition yet) ⇒ Progressing.
//! - **Issuer / ClusterIssuer**: `Ready` True ⇒ Healthy; False ⇒ Degraded; none ⇒ Progressing.
//!
//! The message is the deciding condition's message.

use serde_json::Value;

use crate::conditions::{cond, cond_stale, condition_health};
use crate::generic::first_condition;
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, kind: &str) -> Option<Health> {
    match kind {
        "Certificate" => Some(certificate(obj)),
        "CertificateRequest" => Some(request(obj)),
        "Issuer" | "ClusterIssuer" => Some(issuer(obj)),
        _ => None,
    }
}

fn certificate(obj: &Value) -> Health {
    let ready = cond(obj, "Ready");
    let issuing = cond(obj, "Issuing");
    if let Some(r) = ready.filter(|r| r.is_true() && !cond_stale(obj, r)) {
        return Health::new(HealthStatus::Healthy, r.text());
    }
    if let Some(i) = issuing.filter(|i| i.is_false() && i.reason == "Failed") {
        return Health::new(HealthStatus::Degraded, i.text());
    }
    if let Some(i) = issuing.filter(|i| i.is_true()) {
        return Health::new(HealthStatus::Progressing, i.text());
    }
    match ready {
        Some(r) if r.is_false() && !cond_stale(obj, &r) => {
            Health::new(HealthStatus::Degraded, r.text())
        }
        Some(r) => Health::new(HealthStatus::Progressing, r.text()),
        None => Health::new(
            HealthStatus::Progressing,
            "Waiting for the certificate to be issued",
        ),
    }
}

fn request(obj: &Value) -> Health {
    if let Some(h) = first_condition(
        obj,
        &[
            ("Denied", "True", HealthStatus::Degraded),
            ("InvalidRequest", "True", HealthStatus::Degraded),
        ],
    ) {
        return h;
    }
    match cond(obj, "Ready") {
        Some(r) if r.is_true() => Health::new(HealthStatus::Healthy, r.text()),
        Some(r) if r.is_false() && matches!(r.reason, "Failed" | "Denied") => {
            Health::new(HealthStatus::Degraded, r.text())
        }
        Some(r) => Health::new(HealthStatus::Progressing, r.text()),
        None => Health::new(
            HealthStatus::Progressing,
            "Waiting for the request to be processed",
        ),
    }
}

fn issuer(obj: &Value) -> Health {
    condition_health(cond(obj, "Ready"), "Initializing issuer")
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_builtin_table;
    use serde_json::{Value, json};

    fn obj(kind: &str, status: Value) -> Value {
        json!({
            "apiVersion": "cert-manager.io/v1", "kind": kind,
            "metadata": {"name": "web-tls", "namespace": "web", "generation": 2},
            "spec": {"secretName": "web-tls", "issuerRef": {"name": "letsencrypt", "kind": "ClusterIssuer"}},
            "status": status
        })
    }

    fn c(t: &str, s: &str, reason: &str, message: &str) -> Value {
        json!({"type": t, "status": s, "reason": reason, "message": message, "observedGeneration": 2})
    }

    #[test]
    fn certificate_table() {
        check_builtin_table(&[
            (
                "ready",
                obj(
                    "Certificate",
                    json!({"conditions": [c("Ready", "True", "Ready", "Certificate is up to date and has not expired")]}),
                ),
                Healthy,
                "Certificate is up to date and has not expired",
            ),
            (
                "issuing",
                obj(
                    "Certificate",
                    json!({"conditions": [c("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist"), c("Issuing", "True", "DoesNotExist", "Issuing certificate as Secret does not exist")]}),
                ),
                Progressing,
                "Issuing certificate as Secret does not exist",
            ),
            (
                "new",
                obj("Certificate", json!({})),
                Progressing,
                "Waiting for the certificate to be issued",
            ),
            (
                "failed",
                obj(
                    "Certificate",
                    json!({"conditions": [c("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist"), c("Issuing", "False", "Failed", "The certificate request has failed to complete and will be retried: 429 rate limited")]}),
                ),
                Degraded,
                "The certificate request has failed to complete and will be retried: 429 rate limited",
            ),
            (
                "ready false",
                obj(
                    "Certificate",
                    json!({"conditions": [c("Ready", "False", "Expired", "Certificate expired")]}),
                ),
                Degraded,
                "Certificate expired",
            ),
            (
                "stale ready",
                obj(
                    "Certificate",
                    json!({"conditions": [{"type": "Ready", "status": "True", "message": "old", "observedGeneration": 1}]}),
                ),
                Progressing,
                "old",
            ),
        ]);
    }

    #[test]
    fn certificate_request_table() {
        check_builtin_table(&[
            (
                "issued",
                obj(
                    "CertificateRequest",
                    json!({"conditions": [c("Approved", "True", "cert-manager.io", "approved"), c("Ready", "True", "Issued", "Certificate fetched from issuer successfully")]}),
                ),
                Healthy,
                "Certificate fetched from issuer successfully",
            ),
            (
                "pending",
                obj(
                    "CertificateRequest",
                    json!({"conditions": [c("Ready", "False", "Pending", "Waiting on certificate issuance from order")]}),
                ),
                Progressing,
                "Waiting on certificate issuance from order",
            ),
            (
                "new",
                obj("CertificateRequest", json!({})),
                Progressing,
                "Waiting for the request to be processed",
            ),
            (
                "failed",
                obj(
                    "CertificateRequest",
                    json!({"conditions": [c("Ready", "False", "Failed", "Failed to wait for order resource to become ready")]}),
                ),
                Degraded,
                "Failed to wait for order resource to become ready",
            ),
            (
                "denied",
                obj(
                    "CertificateRequest",
                    json!({"conditions": [c("Denied", "True", "policy", "denied by policy")]}),
                ),
                Degraded,
                "denied by policy",
            ),
        ]);
    }

    #[test]
    fn issuer_table() {
        for kind in ["Issuer", "ClusterIssuer"] {
            check_builtin_table(&[
                (
                    "ready",
                    obj(
                        kind,
                        json!({"conditions": [c("Ready", "True", "ACMEAccountRegistered", "The ACME account was registered with the ACME server")]}),
                    ),
                    Healthy,
                    "The ACME account was registered with the ACME server",
                ),
                (
                    "new",
                    obj(kind, json!({})),
                    Progressing,
                    "Initializing issuer",
                ),
                (
                    "failed",
                    obj(
                        kind,
                        json!({"conditions": [c("Ready", "False", "ErrRegisterACMEAccount", "Failed to register ACME account")]}),
                    ),
                    Degraded,
                    "Failed to register ACME account",
                ),
            ]);
        }
    }
}
