//! Argo CD `argoproj.io` Application and plumb's `plumb.dev` Application, any version:
//! the health the application reports about itself in `status.health`.
//!
//! **Not an Argo CD built-in.** Argo CD removed its built-in Application check in 1.8
//! (gitops-engine returns no health for it); app-of-apps setups restore it with the
//! customization its documentation gives (`resource.customizations.health.argoproj.io_Application`).
//! This module reproduces that documented customization, run through Argo CD's Lua
//! result validation:
//!
//! - `status.health.status` ⇒ that status, message `status.health.message` (or `""`);
//! - no `status.health` ⇒ Progressing with no message (not reconciled yet);
//! - `status.health` without a valid status (missing, or not one of the six names) ⇒
//!   Unknown `Lua returned an invalid health status`.

use std::str::FromStr;

use serde_json::Value;

use crate::object::{Gvk, get, str_at};
use crate::{Health, HealthStatus};

/// Argo CD's message for a health script result with an invalid status.
pub const INVALID_HEALTH_STATUS: &str = "Lua returned an invalid health status";

pub(crate) fn health(obj: &Value, _gvk: &Gvk<'_>) -> Health {
    let Some(reported) = get(obj, &["status", "health"]) else {
        return Health::new(HealthStatus::Progressing, "");
    };
    match HealthStatus::from_str(str_at(reported, &["status"])) {
        Ok(status) => Health::new(status, str_at(reported, &["message"])),
        Err(_) => Health::new(HealthStatus::Unknown, INVALID_HEALTH_STATUS),
    }
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    fn app(api_version: &str, health: Value) -> Value {
        let mut obj = json!({
            "apiVersion": api_version,
            "kind": "Application",
            "metadata": {"name": "payments-prod", "namespace": "argocd",
                         "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
            "spec": {
                "project": "default",
                "source": {"repoURL": "https://git.example.com/payments.git", "path": "overlays/prod", "targetRevision": "HEAD"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": "pay-prod"},
                "syncPolicy": {"automated": {"prune": true, "selfHeal": true}}
            },
            "status": {"sync": {"status": "OutOfSync", "revision": "b5e2be1"}}
        });
        if !health.is_null() {
            obj["status"]["health"] = health;
        }
        obj
    }

    #[test]
    fn application_table() {
        const ARGO: &str = "argoproj.io/v1alpha1";
        check_table(&[
            (
                "healthy",
                app(ARGO, json!({"status": "Healthy"})),
                Healthy,
                "",
            ),
            (
                "degraded with message",
                app(
                    ARGO,
                    json!({"status": "Degraded", "message": "Deployment \"payments-api\" exceeded its progress deadline"}),
                ),
                Degraded,
                "Deployment \"payments-api\" exceeded its progress deadline",
            ),
            (
                "suspended",
                app(ARGO, json!({"status": "Suspended"})),
                Suspended,
                "",
            ),
            (
                "missing",
                app(ARGO, json!({"status": "Missing"})),
                Missing,
                "",
            ),
            (
                "not reconciled yet",
                app(ARGO, Value::Null),
                Progressing,
                "",
            ),
            (
                "health without status",
                app(ARGO, json!({"message": "x"})),
                Unknown,
                "Lua returned an invalid health status",
            ),
            (
                "invalid status",
                app(ARGO, json!({"status": "Fine"})),
                Unknown,
                "Lua returned an invalid health status",
            ),
            (
                "plumb.dev application",
                app("plumb.dev/v1alpha1", json!({"status": "Progressing"})),
                Progressing,
                "",
            ),
        ]);
    }
}
