//! Argo Rollouts (`argoproj.io`): Rollout and AnalysisRun.
//!
//! - **Rollout**: `status.observedGeneration` (a string in Rollouts) different from
//!   `metadata.generation` ⇒ Progressing `Waiting for the rollout spec to be observed`.
//!   `spec.paused` or a non-empty `status.pauseConditions` ⇒ Suspended. Otherwise the
//!   controller's own `status.phase` decides: `Healthy`, `Progressing`, `Degraded` map to
//!   themselves and `Paused` to Suspended, with `status.message`. Without a phase (a
//!   controller older than v1.0, or not started yet): an `InvalidSpec` condition True ⇒
//!   Degraded, else Progressing.
//! - **AnalysisRun**: `status.phase` `Successful` ⇒ Healthy; `Failed`, `Error` ⇒ Degraded;
//!   `Inconclusive` ⇒ Suspended (the rollout waits for a person); empty, `Pending`, `Running`
//!   ⇒ Progressing; anything else ⇒ Unknown. The message is `status.message`.

use serde_json::Value;

use crate::conditions::{cond, spec_flag};
use crate::object::{array_at, get, str_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, kind: &str) -> Option<Health> {
    match kind {
        "Rollout" => Some(rollout(obj)),
        "AnalysisRun" => Some(analysis_run(obj)),
        _ => None,
    }
}

/// A number or a numeric string, as Rollouts writes `observedGeneration`.
fn generation_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn rollout(obj: &Value) -> Health {
    let message = str_at(obj, &["status", "message"]);
    let generation = generation_text(get(obj, &["metadata", "generation"]));
    let observed = generation_text(get(obj, &["status", "observedGeneration"]));
    if let (Some(g), Some(o)) = (&generation, &observed)
        && g != o
    {
        return Health::new(
            HealthStatus::Progressing,
            "Waiting for the rollout spec to be observed",
        );
    }
    if spec_flag(obj, "paused") || !array_at(obj, &["status", "pauseConditions"]).is_empty() {
        let m = if message.is_empty() {
            "Rollout is paused"
        } else {
            message
        };
        return Health::new(HealthStatus::Suspended, m);
    }
    match str_at(obj, &["status", "phase"]) {
        "Healthy" => Health::new(HealthStatus::Healthy, message),
        "Progressing" => Health::new(HealthStatus::Progressing, message),
        "Degraded" => Health::new(HealthStatus::Degraded, message),
        "Paused" => Health::new(HealthStatus::Suspended, message),
        "" => match cond(obj, "InvalidSpec").filter(|c| c.is_true()) {
            Some(c) => Health::new(HealthStatus::Degraded, c.text()),
            None => Health::new(HealthStatus::Progressing, "Waiting for rollout status"),
        },
        other => Health::new(
            HealthStatus::Unknown,
            format!("unknown rollout phase {other:?}"),
        ),
    }
}

fn analysis_run(obj: &Value) -> Health {
    let message = str_at(obj, &["status", "message"]);
    let status = match str_at(obj, &["status", "phase"]) {
        "Successful" => HealthStatus::Healthy,
        "Failed" | "Error" => HealthStatus::Degraded,
        "Inconclusive" => HealthStatus::Suspended,
        "" | "Pending" | "Running" => HealthStatus::Progressing,
        _ => HealthStatus::Unknown,
    };
    Health::new(status, message)
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_builtin_table;
    use serde_json::{Value, json};

    fn rollout(spec_extra: Value, status: Value) -> Value {
        let mut spec = json!({"replicas": 3, "strategy": {"canary": {"steps": [{"setWeight": 20}, {"pause": {}}]}}});
        if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
            s.extend(extra.clone());
        }
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "web", "namespace": "web", "generation": 4},
            "spec": spec,
            "status": status
        })
    }

    fn run(status: Value) -> Value {
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
            "metadata": {"name": "web-7d9f-2", "namespace": "web"},
            "spec": {"metrics": [{"name": "success-rate", "provider": {"prometheus": {"query": "up"}}}]},
            "status": status
        })
    }

    #[test]
    fn rollout_table() {
        check_builtin_table(&[
            (
                "healthy",
                rollout(
                    json!({}),
                    json!({"observedGeneration": "4", "phase": "Healthy"}),
                ),
                Healthy,
                "",
            ),
            (
                "progressing",
                rollout(
                    json!({}),
                    json!({"observedGeneration": "4", "phase": "Progressing", "message": "more replicas need to be updated"}),
                ),
                Progressing,
                "more replicas need to be updated",
            ),
            (
                "degraded",
                rollout(
                    json!({}),
                    json!({"observedGeneration": "4", "phase": "Degraded", "message": "ProgressDeadlineExceeded: ReplicaSet \"web-7d9f\" has timed out progressing."}),
                ),
                Degraded,
                "ProgressDeadlineExceeded: ReplicaSet \"web-7d9f\" has timed out progressing.",
            ),
            (
                "paused step",
                rollout(
                    json!({}),
                    json!({"observedGeneration": "4", "phase": "Paused", "message": "CanaryPauseStep", "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": "2026-01-01T00:00:00Z"}]}),
                ),
                Suspended,
                "CanaryPauseStep",
            ),
            (
                "spec paused",
                rollout(
                    json!({"paused": true}),
                    json!({"observedGeneration": "4", "phase": "Healthy"}),
                ),
                Suspended,
                "Rollout is paused",
            ),
            (
                "generation behind",
                rollout(
                    json!({}),
                    json!({"observedGeneration": "3", "phase": "Healthy"}),
                ),
                Progressing,
                "Waiting for the rollout spec to be observed",
            ),
            (
                "new",
                rollout(json!({}), json!({})),
                Progressing,
                "Waiting for rollout status",
            ),
            (
                "invalid spec",
                rollout(
                    json!({}),
                    json!({"conditions": [{"type": "InvalidSpec", "status": "True", "message": "The Rollout \"web\" is invalid"}]}),
                ),
                Degraded,
                "The Rollout \"web\" is invalid",
            ),
        ]);
    }

    #[test]
    fn analysis_run_table() {
        check_builtin_table(&[
            (
                "successful",
                run(json!({"phase": "Successful"})),
                Healthy,
                "",
            ),
            ("running", run(json!({"phase": "Running"})), Progressing, ""),
            ("new", run(json!({})), Progressing, ""),
            (
                "failed",
                run(
                    json!({"phase": "Failed", "message": "Metric \"success-rate\" assessed Failed due to failed (3) > failureLimit (0)"}),
                ),
                Degraded,
                "Metric \"success-rate\" assessed Failed due to failed (3) > failureLimit (0)",
            ),
            (
                "inconclusive",
                run(json!({"phase": "Inconclusive"})),
                Suspended,
                "",
            ),
            ("odd", run(json!({"phase": "Sideways"})), Unknown, ""),
        ]);
    }
}
