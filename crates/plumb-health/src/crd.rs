//! `apiextensions.k8s.io` CustomResourceDefinition.
//!
//! `NamesAccepted` False (the plural or short names clash with another CRD) ⇒ Degraded with
//! its message. `Established` True ⇒ Healthy (the API server serves the new kind; a custom
//! resource of it can now be applied). `NonStructuralSchema` True ⇒ Degraded. `Terminating`
//! True ⇒ Progressing. Otherwise (no conditions yet, `Established` False) ⇒ Progressing
//! `Waiting for the CRD to be established`.

use serde_json::Value;

use crate::conditions::cond;
use crate::generic::first_condition;
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value) -> Health {
    if let Some(h) = first_condition(
        obj,
        &[
            ("NamesAccepted", "False", HealthStatus::Degraded),
            ("NonStructuralSchema", "True", HealthStatus::Degraded),
            ("Terminating", "True", HealthStatus::Progressing),
        ],
    ) {
        return h;
    }
    match cond(obj, "Established") {
        Some(e) if e.is_true() => Health::new(HealthStatus::Healthy, e.text()),
        _ => Health::new(
            HealthStatus::Progressing,
            "Waiting for the CRD to be established",
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_builtin_table;
    use serde_json::{Value, json};

    fn crd(conditions: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced"},
            "status": {"conditions": conditions}
        })
    }

    fn c(t: &str, s: &str, reason: &str, message: &str) -> Value {
        json!({"type": t, "status": s, "reason": reason, "message": message})
    }

    #[test]
    fn crd_table() {
        check_builtin_table(&[
            (
                "established",
                crd(json!([
                    c("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
                    c(
                        "Established",
                        "True",
                        "InitialNamesAccepted",
                        "the initial names have been accepted"
                    )
                ])),
                Healthy,
                "the initial names have been accepted",
            ),
            (
                "new",
                crd(json!([])),
                Progressing,
                "Waiting for the CRD to be established",
            ),
            (
                "names accepted only",
                crd(json!([
                    c("NamesAccepted", "True", "NoConflicts", ""),
                    c(
                        "Established",
                        "False",
                        "Installing",
                        "the initial names have not been accepted"
                    )
                ])),
                Progressing,
                "Waiting for the CRD to be established",
            ),
            (
                "name conflict",
                crd(json!([
                    c(
                        "NamesAccepted",
                        "False",
                        "AllConflicts",
                        "\"widgets\" is already in use"
                    ),
                    c(
                        "Established",
                        "False",
                        "NotAccepted",
                        "not all names are accepted"
                    )
                ])),
                Degraded,
                "\"widgets\" is already in use",
            ),
            (
                "terminating",
                crd(json!([
                    c("Established", "True", "", ""),
                    c(
                        "Terminating",
                        "True",
                        "InstanceDeletionInProgress",
                        "CustomResource deletion is in progress"
                    )
                ])),
                Progressing,
                "CustomResource deletion is in progress",
            ),
        ]);
    }
}
