//! Prometheus operator (`monitoring.coreos.com`): Prometheus, PrometheusAgent, Alertmanager,
//! ThanosRuler.
//!
//! `spec.paused: true` ⇒ Suspended. `Reconciled` False (the operator could not generate or
//! apply the workload: invalid configuration) ⇒ Degraded. `Available` True ⇒ Healthy;
//! `Available` `Degraded` (some replicas unavailable, as during a rolling update) or False
//! (no replica ready yet) ⇒ Progressing — a replica that never becomes ready is caught by the
//! wave timeout, not judged here. No condition (an operator older than v0.55, or not
//! reconciled yet) ⇒ Progressing.

use serde_json::Value;

use crate::conditions::{cond, spec_flag};
use crate::generic::first_condition;
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, kind: &str) -> Option<Health> {
    if !matches!(
        kind,
        "Prometheus" | "PrometheusAgent" | "Alertmanager" | "ThanosRuler"
    ) {
        return None;
    }
    if spec_flag(obj, "paused") {
        return Some(Health::new(
            HealthStatus::Suspended,
            "Reconciliation is paused",
        ));
    }
    if let Some(h) = first_condition(obj, &[("Reconciled", "False", HealthStatus::Degraded)]) {
        return Some(h);
    }
    Some(match cond(obj, "Available") {
        Some(a) if a.is_true() => Health::new(HealthStatus::Healthy, a.text()),
        Some(a) => Health::new(HealthStatus::Progressing, a.text()),
        None => Health::new(
            HealthStatus::Progressing,
            "Waiting for the operator to reconcile",
        ),
    })
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_builtin_table;
    use serde_json::{Value, json};

    fn obj(kind: &str, paused: bool, conditions: Value) -> Value {
        json!({
            "apiVersion": "monitoring.coreos.com/v1", "kind": kind,
            "metadata": {"name": "k8s", "namespace": "monitoring"},
            "spec": {"replicas": 2, "paused": paused},
            "status": {"conditions": conditions, "availableReplicas": 2}
        })
    }

    fn c(t: &str, s: &str, reason: &str, message: &str) -> Value {
        json!({"type": t, "status": s, "reason": reason, "message": message})
    }

    #[test]
    fn prometheus_and_alertmanager_table() {
        for kind in ["Prometheus", "Alertmanager"] {
            check_builtin_table(&[
                (
                    "available",
                    obj(
                        kind,
                        false,
                        json!([
                            c("Available", "True", "", ""),
                            c("Reconciled", "True", "", "")
                        ]),
                    ),
                    Healthy,
                    "",
                ),
                (
                    "rolling",
                    obj(
                        kind,
                        false,
                        json!([
                            c(
                                "Available",
                                "Degraded",
                                "SomePodsNotReady",
                                "1/2 pods ready"
                            ),
                            c("Reconciled", "True", "", "")
                        ]),
                    ),
                    Progressing,
                    "1/2 pods ready",
                ),
                (
                    "new",
                    obj(kind, false, json!([])),
                    Progressing,
                    "Waiting for the operator to reconcile",
                ),
                (
                    "invalid",
                    obj(
                        kind,
                        false,
                        json!([
                            c("Available", "False", "NoPodReady", ""),
                            c(
                                "Reconciled",
                                "False",
                                "ReconciliationFailed",
                                "failed to generate configuration: invalid remote write URL"
                            )
                        ]),
                    ),
                    Degraded,
                    "failed to generate configuration: invalid remote write URL",
                ),
                (
                    "paused",
                    obj(kind, true, json!([c("Available", "True", "", "")])),
                    Suspended,
                    "Reconciliation is paused",
                ),
            ]);
        }
    }
}
