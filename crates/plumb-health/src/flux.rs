//! Flux (`*.toolkit.fluxcd.io`): Kustomization, HelmRelease and the sources (GitRepository,
//! OCIRepository, HelmRepository, HelmChart, Bucket) — every Flux object follows kstatus.
//!
//! `spec.suspend: true` ⇒ Suspended `Reconciliation is suspended`. `status.observedGeneration`
//! behind `metadata.generation` ⇒ Progressing. `Stalled` True ⇒ Degraded (the controller gave
//! up until the spec changes). `Reconciling` True ⇒ Progressing. `Ready` True ⇒ Healthy;
//! False ⇒ Degraded (the last reconcile failed: build error, health check failed, fetch
//! failed); Unknown or none yet ⇒ Progressing. The message is the deciding condition's.

use serde_json::Value;

use crate::conditions::{cond, condition_health, generation_behind, generation_message, spec_flag};
use crate::generic::first_condition;
use crate::{Health, HealthStatus};

/// Whether `group` is a Flux toolkit API group.
pub(crate) fn is_flux_group(group: &str) -> bool {
    group.ends_with(".toolkit.fluxcd.io")
}

pub(crate) fn health(obj: &Value) -> Health {
    if spec_flag(obj, "suspend") {
        return Health::new(HealthStatus::Suspended, "Reconciliation is suspended");
    }
    if let Some((g, o)) = generation_behind(obj) {
        return Health::new(HealthStatus::Progressing, generation_message(g, o));
    }
    if let Some(h) = first_condition(
        obj,
        &[
            ("Stalled", "True", HealthStatus::Degraded),
            ("Reconciling", "True", HealthStatus::Progressing),
        ],
    ) {
        return h;
    }
    condition_health(cond(obj, "Ready"), "Waiting for reconciliation")
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_builtin_table;
    use serde_json::{Value, json};

    fn obj(api: &str, kind: &str, suspend: bool, status: Value) -> Value {
        json!({
            "apiVersion": api, "kind": kind,
            "metadata": {"name": "podinfo", "namespace": "flux-system", "generation": 3},
            "spec": {"interval": "5m", "suspend": suspend},
            "status": status
        })
    }

    fn c(t: &str, s: &str, reason: &str, message: &str) -> Value {
        json!({"type": t, "status": s, "reason": reason, "message": message})
    }

    #[test]
    fn flux_table() {
        for (api, kind) in [
            ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
            ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
            ("source.toolkit.fluxcd.io/v1", "GitRepository"),
        ] {
            check_builtin_table(&[
                (
                    "ready",
                    obj(
                        api,
                        kind,
                        false,
                        json!({"observedGeneration": 3, "conditions": [c("Ready", "True", "ReconciliationSucceeded", "Applied revision: main@sha1:abc")]}),
                    ),
                    Healthy,
                    "Applied revision: main@sha1:abc",
                ),
                (
                    "reconciling",
                    obj(
                        api,
                        kind,
                        false,
                        json!({"observedGeneration": 3, "conditions": [c("Reconciling", "True", "Progressing", "reconciliation in progress"), c("Ready", "Unknown", "Progressing", "reconciliation in progress")]}),
                    ),
                    Progressing,
                    "reconciliation in progress",
                ),
                (
                    "generation behind",
                    obj(
                        api,
                        kind,
                        false,
                        json!({"observedGeneration": 2, "conditions": [c("Ready", "True", "", "old")]}),
                    ),
                    Progressing,
                    "Waiting for the controller to observe generation 3 (observed 2)",
                ),
                (
                    "new",
                    obj(api, kind, false, json!({})),
                    Progressing,
                    "Waiting for reconciliation",
                ),
                (
                    "failed",
                    obj(
                        api,
                        kind,
                        false,
                        json!({"observedGeneration": 3, "conditions": [c("Ready", "False", "BuildFailed", "kustomize build failed: missing resource")]}),
                    ),
                    Degraded,
                    "kustomize build failed: missing resource",
                ),
                (
                    "stalled",
                    obj(
                        api,
                        kind,
                        false,
                        json!({"observedGeneration": 3, "conditions": [c("Stalled", "True", "InvalidPath", "path does not exist"), c("Ready", "False", "InvalidPath", "path does not exist")]}),
                    ),
                    Degraded,
                    "path does not exist",
                ),
                (
                    "suspended",
                    obj(api, kind, true, json!({"observedGeneration": 3})),
                    Suspended,
                    "Reconciliation is suspended",
                ),
            ]);
        }
    }
}
