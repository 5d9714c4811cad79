//! `autoscaling` HorizontalPodAutoscaler, versions `v1`, `v2beta1`, `v2beta2`, `v2`
//! (gitops-engine `health_hpa.go`).
//!
//! Conditions come from `status.conditions` (v2*) or, for `v1`, from the JSON in the
//! annotation `autoscaling.alpha.kubernetes.io/conditions` (absent or `[]` ⇒ Progressing
//! `Waiting to Autoscale`). The conditions are walked **in order** and the first decisive
//! one wins:
//!
//! - Degraded (its message) when `(type, reason)` is `(AbleToScale, FailedGetScale)`,
//!   `(AbleToScale, FailedUpdateScale)`, `(ScalingActive, FailedGetResourceMetric)` or
//!   `(ScalingActive, InvalidSelector)`, whatever its status;
//! - Healthy (its message) when the type is `AbleToScale` or `ScalingLimited` with status
//!   `True`.
//!
//! No decisive condition ⇒ Progressing `Waiting to Autoscale`. As the controller writes
//! `AbleToScale` first, a normal HPA is Healthy with the AbleToScale message even when a
//! later `ScalingActive` condition reports a failed metric.

use serde_json::Value;

use crate::object::{Gvk, annotation, array_at, str_at};
use crate::{Health, HealthStatus};

/// The `autoscaling/v1` annotation holding the v2 conditions as JSON.
pub const ANNOTATION_V1_CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";

const WAITING: &str = "Waiting to Autoscale";

/// The four fields Argo CD reads from an HPA condition.
#[derive(Debug, Default, PartialEq, Eq)]
struct Condition<'a> {
    cond_type: &'a str,
    reason: &'a str,
    message: &'a str,
    status: &'a str,
}

impl<'a> Condition<'a> {
    fn from_typed(v: &'a Value) -> Self {
        Condition {
            cond_type: str_at(v, &["type"]),
            reason: str_at(v, &["reason"]),
            message: str_at(v, &["message"]),
            status: str_at(v, &["status"]),
        }
    }

    fn is_degraded(&self) -> bool {
        matches!(
            (self.cond_type, self.reason),
            ("AbleToScale", "FailedGetScale" | "FailedUpdateScale")
                | (
                    "ScalingActive",
                    "FailedGetResourceMetric" | "InvalidSelector"
                )
        )
    }

    fn is_healthy(&self) -> bool {
        matches!(self.cond_type, "AbleToScale" | "ScalingLimited") && self.status == "True"
    }
}

fn check_conditions(conditions: &[Condition<'_>]) -> Health {
    for c in conditions {
        if c.is_degraded() {
            return Health::new(HealthStatus::Degraded, c.message);
        }
        if c.is_healthy() {
            return Health::new(HealthStatus::Healthy, c.message);
        }
    }
    Health::new(HealthStatus::Progressing, WAITING)
}

/// Go's name for a JSON value's type in `json: cannot unmarshal <type> ...` errors.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Decodes the v1 annotation the way Go's `json.Unmarshal` fills `[]hpaCondition`:
/// keys match field names case-insensitively, unknown keys are ignored, `null` leaves a
/// zero value, any other non-string value for a field is an error.
fn decode_v1(parsed: &Value) -> Result<Vec<Condition<'_>>, String> {
    let items = match parsed {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type []health.hpaCondition",
                json_type(other)
            ));
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let mut cond = Condition::default();
        match item {
            Value::Null => {}
            Value::Object(fields) => {
                for (key, value) in fields {
                    let (slot, field) = match key.to_ascii_lowercase().as_str() {
                        "type" => (&mut cond.cond_type, "Type"),
                        "reason" => (&mut cond.reason, "Reason"),
                        "message" => (&mut cond.message, "Message"),
                        "status" => (&mut cond.status, "Status"),
                        _ => continue,
                    };
                    match value {
                        Value::Null => {}
                        Value::String(s) => *slot = s.as_str(),
                        other => {
                            return Err(format!(
                                "json: cannot unmarshal {} into Go struct field hpaCondition.{field} of type string",
                                json_type(other)
                            ));
                        }
                    }
                }
            }
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type health.hpaCondition",
                    json_type(other)
                ));
            }
        }
        out.push(cond);
    }
    Ok(out)
}

fn v1_health(obj: &Value) -> Health {
    let Some(raw) = annotation(obj, ANNOTATION_V1_CONDITIONS) else {
        return Health::new(HealthStatus::Progressing, WAITING);
    };
    let failed = |err: String| {
        Health::new(
            HealthStatus::Unknown,
            format!("failed to convert conditions annotation to typed: {err}"),
        )
    };
    let parsed: Value = match serde_json::from_str(raw) {
        Ok(v) => v,
        Err(err) => return failed(err.to_string()),
    };
    match decode_v1(&parsed) {
        Ok(conditions) if conditions.is_empty() => Health::new(HealthStatus::Progressing, WAITING),
        Ok(conditions) => check_conditions(&conditions),
        Err(err) => failed(err),
    }
}

pub(crate) fn health(obj: &Value, gvk: &Gvk<'_>) -> Health {
    match gvk.version {
        "v1" => v1_health(obj),
        "v2" | "v2beta1" | "v2beta2" => {
            let conditions: Vec<Condition<'_>> = array_at(obj, &["status", "conditions"])
                .iter()
                .map(Condition::from_typed)
                .collect();
            check_conditions(&conditions)
        }
        _ => gvk.unsupported("HPA"),
    }
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    const ABLE: &str = "recommended size matches current size";
    const GET_SCALE_OK: &str = "the HPA controller was able to get the target's current scale";

    fn hpa_v2(api_version: &str, conditions: Value) -> Value {
        json!({
            "apiVersion": api_version,
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "argocd-repo-server-hpa", "namespace": "argocd"},
            "spec": {
                "minReplicas": 2, "maxReplicas": 10,
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "argocd-repo-server"},
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
            },
            "status": {"currentReplicas": 2, "desiredReplicas": 2, "conditions": conditions}
        })
    }

    fn hpa_v1(annotation: Option<&str>) -> Value {
        let mut obj = json!({
            "apiVersion": "autoscaling/v1",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "sample", "namespace": "argocd", "annotations": {}},
            "spec": {"minReplicas": 2, "maxReplicas": 8, "targetCPUUtilizationPercentage": 80,
                     "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "sample"}},
            "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 6}
        });
        if let Some(a) = annotation {
            obj["metadata"]["annotations"][super::ANNOTATION_V1_CONDITIONS] = json!(a);
        }
        obj
    }

    fn cond(t: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": t, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": "2026-09-22T19:57:06Z"})
    }

    #[test]
    fn hpa_table() {
        let failed_metric = "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container main of Pod sample-6d4cf56db6-xk2pq";
        check_table(&[
            (
                "v2 healthy",
                hpa_v2(
                    "autoscaling/v2",
                    json!([
                        cond("AbleToScale", "True", "ReadyForNewScale", ABLE),
                        cond(
                            "ScalingActive",
                            "True",
                            "ValidMetricFound",
                            "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"
                        ),
                        cond(
                            "ScalingLimited",
                            "False",
                            "DesiredWithinRange",
                            "the desired count is within the acceptable range"
                        ),
                    ]),
                ),
                Healthy,
                ABLE,
            ),
            (
                "v2 failed to get scale",
                hpa_v2(
                    "autoscaling/v2",
                    json!([cond(
                        "AbleToScale",
                        "False",
                        "FailedGetScale",
                        "the HPA controller was unable to get the target's current scale: deployments/scale.apps \"argocd-repo-server\" not found"
                    ),]),
                ),
                Degraded,
                "the HPA controller was unable to get the target's current scale: deployments/scale.apps \"argocd-repo-server\" not found",
            ),
            (
                "v2 failed resource metric listed before AbleToScale",
                hpa_v2(
                    "autoscaling/v2",
                    json!([
                        cond(
                            "ScalingActive",
                            "False",
                            "FailedGetResourceMetric",
                            failed_metric
                        ),
                        cond("AbleToScale", "True", "SucceededGetScale", GET_SCALE_OK),
                    ]),
                ),
                Degraded,
                failed_metric,
            ),
            (
                "v2 failed resource metric after AbleToScale: first match wins",
                hpa_v2(
                    "autoscaling/v2",
                    json!([
                        cond("AbleToScale", "True", "SucceededGetScale", GET_SCALE_OK),
                        cond(
                            "ScalingActive",
                            "False",
                            "FailedGetResourceMetric",
                            failed_metric
                        ),
                    ]),
                ),
                Healthy,
                GET_SCALE_OK,
            ),
            (
                "v2 invalid selector",
                hpa_v2(
                    "autoscaling/v2",
                    json!([cond(
                        "ScalingActive",
                        "False",
                        "InvalidSelector",
                        "the HPA target's scale is missing a selector"
                    ),]),
                ),
                Degraded,
                "the HPA target's scale is missing a selector",
            ),
            (
                "v2 scaling limited",
                hpa_v2(
                    "autoscaling/v2",
                    json!([cond(
                        "ScalingLimited",
                        "True",
                        "TooFewReplicas",
                        "the desired replica count is less than the minimum replica count"
                    ),]),
                ),
                Healthy,
                "the desired replica count is less than the minimum replica count",
            ),
            (
                "v2 no conditions yet",
                hpa_v2("autoscaling/v2", json!([])),
                Progressing,
                "Waiting to Autoscale",
            ),
            (
                "v2 scaling disabled is not decisive",
                hpa_v2(
                    "autoscaling/v2",
                    json!([cond(
                        "ScalingActive",
                        "False",
                        "ScalingDisabled",
                        "scaling is disabled since the replica count of the target is zero"
                    ),]),
                ),
                Progressing,
                "Waiting to Autoscale",
            ),
            (
                "v2beta2 healthy",
                hpa_v2(
                    "autoscaling/v2beta2",
                    json!([cond(
                        "AbleToScale",
                        "True",
                        "SucceededRescale",
                        "the HPA controller was able to update the target scale to 4"
                    )]),
                ),
                Healthy,
                "the HPA controller was able to update the target scale to 4",
            ),
            (
                "v2beta1 failed update scale",
                hpa_v2(
                    "autoscaling/v2beta1",
                    json!([cond(
                        "AbleToScale",
                        "False",
                        "FailedUpdateScale",
                        "the HPA controller was unable to update the target scale"
                    )]),
                ),
                Degraded,
                "the HPA controller was unable to update the target scale",
            ),
            (
                "v1 without annotation",
                hpa_v1(None),
                Progressing,
                "Waiting to Autoscale",
            ),
            (
                "v1 with empty annotation list",
                hpa_v1(Some("[]")),
                Progressing,
                "Waiting to Autoscale",
            ),
            (
                "v1 healthy",
                hpa_v1(Some(
                    r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2020-12-07T22:23:41Z","reason":"ReadyForNewScale","message":"recommended size matches current size"},{"type":"ScalingActive","status":"True","lastTransitionTime":"2020-12-07T22:23:41Z","reason":"ValidMetricFound","message":"the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"}]"#,
                )),
                Healthy,
                "recommended size matches current size",
            ),
            (
                "v1 degraded",
                hpa_v1(Some(
                    r#"[{"type":"ScalingActive","status":"False","reason":"FailedGetResourceMetric","message":"unable to get metrics for resource cpu"}]"#,
                )),
                Degraded,
                "unable to get metrics for resource cpu",
            ),
            (
                "v1 field names match case-insensitively",
                hpa_v1(Some(
                    r#"[{"Type":"ScalingLimited","STATUS":"True","Message":"the desired replica count is more than the maximum replica count"}]"#,
                )),
                Healthy,
                "the desired replica count is more than the maximum replica count",
            ),
            (
                "v1 annotation of the wrong shape",
                hpa_v1(Some(r#"{"type":"AbleToScale"}"#)),
                Unknown,
                "failed to convert conditions annotation to typed: json: cannot unmarshal object into Go value of type []health.hpaCondition",
            ),
            (
                "v1 field of the wrong type",
                hpa_v1(Some(r#"[{"type":"AbleToScale","status":true}]"#)),
                Unknown,
                "failed to convert conditions annotation to typed: json: cannot unmarshal bool into Go struct field hpaCondition.Status of type string",
            ),
            (
                "v2alpha1 unsupported",
                hpa_v2("autoscaling/v2alpha1", json!([])),
                Unknown,
                "unsupported HPA GVK: autoscaling/v2alpha1, Kind=HorizontalPodAutoscaler",
            ),
        ]);
    }

    #[test]
    fn v1_annotation_that_is_not_json_is_unknown() {
        let got = crate::assess(&hpa_v1(Some("[{"))).expect("HPA has a check");
        assert_eq!(got.status, Unknown);
        assert!(
            got.message
                .starts_with("failed to convert conditions annotation to typed: "),
            "{}",
            got.message
        );
    }

    #[test]
    fn v1_null_entries_are_zero_conditions() {
        let got = crate::assess(&hpa_v1(Some("[null]"))).expect("HPA has a check");
        assert_eq!(got, crate::Health::new(Progressing, "Waiting to Autoscale"));
    }
}
