//! Crossplane: managed resources, composite resources and claims (any group under
//! `crossplane.io` or `upbound.io` except the package and API-extension groups), and packages
//! (`pkg.crossplane.io` Provider, Configuration, Function).
//!
//! - **Managed, composite, claim**: `Synced` False (the last reconcile hit an error: bad
//!   credentials, an invalid field) ⇒ Degraded with its message. `Ready` read as the generic
//!   check reads a readiness condition: True ⇒ Healthy; False or Unknown (reason `Creating`,
//!   `Unavailable`, `Deleting`, ...) ⇒ Progressing, Degraded when the reason is terminal. No
//!   conditions yet ⇒ Progressing.
//! - **Packages**: `Healthy` False ⇒ Degraded; `Installed` not True ⇒ Progressing (still
//!   unpacking) unless its reason is terminal (Degraded); else `Healthy` as a readiness
//!   condition (True ⇒ Healthy).
//!
//! Conditions are looked up through the generic check's one lookup
//! ([`crate::generic`]'s `first_condition` and `readiness`).
//! - `apiextensions.crossplane.io` (XRD, Composition) is left to the generic check
//!   (`Established`/`Offered`).

use serde_json::Value;

use crate::conditions::{cond, no_status};
use crate::generic::{first_condition, readiness};
use crate::{Health, HealthStatus};

/// Whether `group` holds Crossplane managed/composite/claim resources.
pub(crate) fn is_resource_group(group: &str) -> bool {
    let crossplane = group == "crossplane.io"
        || group.ends_with(".crossplane.io")
        || group == "upbound.io"
        || group.ends_with(".upbound.io");
    crossplane && !matches!(group, "pkg.crossplane.io" | "apiextensions.crossplane.io")
}

pub(crate) fn health(obj: &Value, group: &str) -> Option<Health> {
    if group == "pkg.crossplane.io" {
        return Some(package(obj));
    }
    if !is_resource_group(group) {
        return None;
    }
    if let Some(h) = first_condition(obj, &[("Synced", "False", HealthStatus::Degraded)]) {
        return Some(h);
    }
    Some(match cond(obj, "Ready") {
        Some(r) => readiness(&r),
        None if no_status(obj) || cond(obj, "Synced").is_none() => Health::new(
            HealthStatus::Progressing,
            "Waiting for the resource to be reconciled",
        ),
        None => Health::new(
            HealthStatus::Progressing,
            "Waiting for the resource to be ready",
        ),
    })
}

fn package(obj: &Value) -> Health {
    if let Some(h) = first_condition(obj, &[("Healthy", "False", HealthStatus::Degraded)]) {
        return h;
    }
    // Not installed yet: Progressing, or Degraded when the reason says it failed.
    match (cond(obj, "Installed"), cond(obj, "Healthy")) {
        (Some(i), _) if !i.is_true() => readiness(&i),
        (_, Some(h)) => readiness(&h),
        _ => Health::new(
            HealthStatus::Progressing,
            "Waiting for the package to be installed",
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::{check_builtin_table, has_builtin};
    use serde_json::{Value, json};

    fn bucket(conditions: Value) -> Value {
        json!({
            "apiVersion": "s3.aws.upbound.io/v1beta1", "kind": "Bucket",
            "metadata": {"name": "logs", "generation": 1},
            "spec": {"forProvider": {"region": "eu-west-1"}},
            "status": {"conditions": conditions}
        })
    }

    fn claim(conditions: Value) -> Value {
        json!({
            "apiVersion": "database.example.crossplane.io/v1alpha1", "kind": "PostgreSQLInstance",
            "metadata": {"name": "db", "namespace": "app"},
            "spec": {"parameters": {"storageGB": 20}},
            "status": {"conditions": conditions}
        })
    }

    fn c(t: &str, s: &str, reason: &str, message: &str) -> Value {
        json!({"type": t, "status": s, "reason": reason, "message": message})
    }

    #[test]
    fn managed_and_claim_table() {
        check_builtin_table(&[
            (
                "ready",
                bucket(json!([
                    c("Synced", "True", "ReconcileSuccess", ""),
                    c("Ready", "True", "Available", "")
                ])),
                Healthy,
                "Available",
            ),
            (
                "creating",
                bucket(json!([
                    c("Synced", "True", "ReconcileSuccess", ""),
                    c("Ready", "False", "Creating", "")
                ])),
                Progressing,
                "Creating",
            ),
            (
                "sync error",
                bucket(json!([
                    c(
                        "Synced",
                        "False",
                        "ReconcileError",
                        "cannot get credentials: secret not found"
                    ),
                    c("Ready", "False", "Creating", "")
                ])),
                Degraded,
                "cannot get credentials: secret not found",
            ),
            (
                "new",
                bucket(json!([])),
                Progressing,
                "Waiting for the resource to be reconciled",
            ),
            (
                "synced not ready",
                bucket(json!([c("Synced", "True", "ReconcileSuccess", "")])),
                Progressing,
                "Waiting for the resource to be ready",
            ),
            (
                "ready false with a terminal reason (the generic readiness rule)",
                bucket(json!([
                    c("Synced", "True", "ReconcileSuccess", ""),
                    c("Ready", "False", "ProvisioningFailed", "quota exceeded")
                ])),
                Degraded,
                "quota exceeded",
            ),
            (
                "claim ready",
                claim(json!([
                    c("Synced", "True", "", ""),
                    c("Ready", "True", "Available", "")
                ])),
                Healthy,
                "Available",
            ),
            (
                "claim waiting",
                claim(json!([
                    c("Synced", "True", "", ""),
                    c(
                        "Ready",
                        "False",
                        "Waiting",
                        "Claim is waiting for composite resource to become Ready"
                    )
                ])),
                Progressing,
                "Claim is waiting for composite resource to become Ready",
            ),
        ]);
    }

    #[test]
    fn package_table() {
        let provider = |conds: Value| {
            json!({
                "apiVersion": "pkg.crossplane.io/v1", "kind": "Provider",
                "metadata": {"name": "provider-aws-s3"},
                "spec": {"package": "xpkg.upbound.io/upbound/provider-aws-s3:v1"},
                "status": {"conditions": conds}
            })
        };
        check_builtin_table(&[
            (
                "healthy",
                provider(json!([
                    c("Installed", "True", "ActivePackageRevision", ""),
                    c("Healthy", "True", "HealthyPackageRevision", "")
                ])),
                Healthy,
                "HealthyPackageRevision",
            ),
            (
                "unpacking",
                provider(json!([c("Installed", "False", "UnpackingPackage", "")])),
                Progressing,
                "UnpackingPackage",
            ),
            (
                "unhealthy",
                provider(json!([
                    c("Installed", "True", "ActivePackageRevision", ""),
                    c(
                        "Healthy",
                        "False",
                        "UnhealthyPackageRevision",
                        "cannot start provider"
                    )
                ])),
                Degraded,
                "cannot start provider",
            ),
            (
                "healthy without an Installed condition",
                provider(json!([c("Healthy", "True", "HealthyPackageRevision", "")])),
                Healthy,
                "HealthyPackageRevision",
            ),
            (
                "new",
                provider(json!([])),
                Progressing,
                "Waiting for the package to be installed",
            ),
        ]);
    }

    #[test]
    fn api_extensions_are_generic() {
        let xrd = json!({"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition", "metadata": {"name": "x"}});
        assert!(!has_builtin(&xrd));
    }
}
