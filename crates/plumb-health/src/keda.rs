//! KEDA (`keda.sh`): ScaledObject and ScaledJob.
//!
//! Paused (condition `Paused` True, or the `autoscaling.keda.sh/paused` /
//! `autoscaling.keda.sh/paused-replicas` annotation) ⇒ Suspended. `Ready` False ⇒ Degraded (the
//! scale target or a trigger is invalid). `Fallback` True (scalers are failing and the fallback
//! replica count is in use) ⇒ Degraded. `Ready` True ⇒ Healthy; Unknown or none ⇒ Progressing.

use serde_json::Value;

use crate::conditions::{cond, condition_health};
use crate::generic::first_condition;
use crate::object::annotation;
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, kind: &str) -> Option<Health> {
    if !matches!(kind, "ScaledObject" | "ScaledJob") {
        return None;
    }
    let paused_annotation = annotation(obj, "autoscaling.keda.sh/paused") == Some("true")
        || annotation(obj, "autoscaling.keda.sh/paused-replicas").is_some();
    if let Some(h) = first_condition(obj, &[("Paused", "True", HealthStatus::Suspended)]) {
        return Some(h);
    }
    if paused_annotation {
        return Some(Health::new(
            HealthStatus::Suspended,
            "Autoscaling is paused",
        ));
    }
    if let Some(h) = first_condition(
        obj,
        &[
            ("Ready", "False", HealthStatus::Degraded),
            ("Fallback", "True", HealthStatus::Degraded),
        ],
    ) {
        return Some(h);
    }
    // `Ready` False is taken above.
    Some(condition_health(
        cond(obj, "Ready"),
        "Waiting for the scaler to be ready",
    ))
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_builtin_table;
    use serde_json::{Value, json};

    fn so(annotations: Value, conditions: Value) -> Value {
        json!({
            "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": "worker", "namespace": "jobs", "annotations": annotations},
            "spec": {"scaleTargetRef": {"name": "worker"}, "triggers": [{"type": "cpu", "metadata": {"value": "60"}}]},
            "status": {"conditions": conditions}
        })
    }

    fn c(t: &str, s: &str, reason: &str, message: &str) -> Value {
        json!({"type": t, "status": s, "reason": reason, "message": message})
    }

    #[test]
    fn scaled_object_table() {
        check_builtin_table(&[
            (
                "ready",
                so(
                    json!({}),
                    json!([
                        c(
                            "Ready",
                            "True",
                            "ScaledObjectReady",
                            "ScaledObject is defined correctly and is ready for scaling"
                        ),
                        c("Active", "False", "ScalerNotActive", ""),
                        c("Fallback", "False", "NoFallbackFound", "")
                    ]),
                ),
                Healthy,
                "ScaledObject is defined correctly and is ready for scaling",
            ),
            (
                "new",
                so(json!({}), json!([])),
                Progressing,
                "Waiting for the scaler to be ready",
            ),
            (
                "unknown",
                so(json!({}), json!([c("Ready", "Unknown", "", "")])),
                Progressing,
                "",
            ),
            (
                "invalid",
                so(
                    json!({}),
                    json!([c(
                        "Ready",
                        "False",
                        "ScaledObjectCheckFailed",
                        "ScaledObject doesn't have correct scaleTargetRef specification"
                    )]),
                ),
                Degraded,
                "ScaledObject doesn't have correct scaleTargetRef specification",
            ),
            (
                "fallback",
                so(
                    json!({}),
                    json!([
                        c("Ready", "True", "", ""),
                        c(
                            "Fallback",
                            "True",
                            "FallbackExists",
                            "At least one trigger is falling back on this scaled object"
                        )
                    ]),
                ),
                Degraded,
                "At least one trigger is falling back on this scaled object",
            ),
            (
                "paused condition",
                so(
                    json!({}),
                    json!([c(
                        "Paused",
                        "True",
                        "ScaledObjectPaused",
                        "ScaledObject is paused"
                    )]),
                ),
                Suspended,
                "ScaledObject is paused",
            ),
            (
                "paused annotation",
                so(
                    json!({"autoscaling.keda.sh/paused-replicas": "0"}),
                    json!([c("Ready", "True", "", "")]),
                ),
                Suspended,
                "Autoscaling is paused",
            ),
        ]);
    }
}
