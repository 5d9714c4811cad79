//! Generic health for any kind, from the standard fields of its `status` (Kubernetes API
//! conventions and kstatus), for kinds with neither a user Lua check nor a built-in one.
//!
//! Rules, first match wins:
//!
//! | # | when | health | message |
//! |---|---|---|---|
//! | 1 | no `status` (absent, `null` or `{}`) | none (counts as Healthy, source `none`) | |
//! | 2 | `status.observedGeneration` < `metadata.generation` | Progressing | `Waiting for the controller to observe generation G (observed O)` |
//! | 3 | condition `Stalled` True | Degraded | the condition's message (else reason) |
//! | 4 | condition `Failed` True | Degraded | the condition's message |
//! | 5 | condition `Reconciling` True | Progressing | the condition's message |
//! | 6 | the first of `Ready`, `Available`, `Established`, `Succeeded` present: True | Healthy | its message |
//! | 7 | ... False with a terminal reason | Degraded | its message |
//! | 8 | ... False with another reason, or Unknown | Progressing | its message |
//! | 9 | none of these conditions | none (counts as Healthy, source `none`) | |
//!
//! A reason is terminal when it ends in `Failed`, `Failure`, `Error` or `Exceeded`
//! (`ReconciliationFailed`, `InstallFailure`, `ProgressDeadlineExceeded`, ...), or is one of
//! `Invalid`, `InvalidSpec`, `InvalidConfiguration`, `Denied`, `Forbidden`.

use serde_json::Value;

use crate::conditions::{Cond, cond, generation_behind, generation_message, no_status};
use crate::{Health, HealthStatus};

/// The condition types whose True means "this object works", in the order they are consulted.
pub const READY_CONDITIONS: [&str; 4] = ["Ready", "Available", "Established", "Succeeded"];

/// Whether a `False` condition's reason says the failure will not go away by waiting.
pub fn is_terminal_reason(reason: &str) -> bool {
    ["Failed", "Failure", "Error", "Exceeded"]
        .iter()
        .any(|s| reason.ends_with(s))
        || matches!(
            reason,
            "Invalid" | "InvalidSpec" | "InvalidConfiguration" | "Denied" | "Forbidden"
        )
}

/// The generic health of `obj`; `None` when its status says nothing this check reads.
pub fn health(obj: &Value) -> Option<Health> {
    if no_status(obj) {
        return None;
    }
    if let Some((generation, observed)) = generation_behind(obj) {
        return Some(Health::new(
            HealthStatus::Progressing,
            generation_message(generation, observed),
        ));
    }
    if let Some(h) = first_condition(
        obj,
        &[
            ("Stalled", "True", HealthStatus::Degraded),
            ("Failed", "True", HealthStatus::Degraded),
            ("Reconciling", "True", HealthStatus::Progressing),
        ],
    ) {
        return Some(h);
    }
    let c = READY_CONDITIONS.iter().find_map(|t| cond(obj, t))?;
    Some(readiness(&c))
}

/// The condition lookup the generic check and the operator checks share: the first
/// `(type, status, health)` rule whose condition `type` has that `status` (`"True"`,
/// `"False"`) gives `health`, with the condition's message (else its reason).
pub(crate) fn first_condition(obj: &Value, rules: &[(&str, &str, HealthStatus)]) -> Option<Health> {
    rules.iter().find_map(|(cond_type, want, health)| {
        cond(obj, cond_type)
            .filter(|c| c.status == *want)
            .map(|c| Health::new(*health, c.text()))
    })
}

/// A readiness condition's health (rules 6–8): True ⇒ Healthy; False with a terminal reason
/// ⇒ Degraded; False with another reason, or Unknown ⇒ Progressing; with its text.
pub(crate) fn readiness(c: &Cond<'_>) -> Health {
    let status = if c.is_true() {
        HealthStatus::Healthy
    } else if c.is_false() && is_terminal_reason(c.reason) {
        HealthStatus::Degraded
    } else {
        HealthStatus::Progressing
    };
    Health::new(status, c.text())
}

#[cfg(test)]
mod tests {
    use super::*;
    use HealthStatus::*;
    use serde_json::json;

    fn obj(generation: i64, status: Value) -> Value {
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "generation": generation},
            "status": status
        })
    }

    fn cond(t: &str, s: &str, reason: &str, message: &str) -> Value {
        json!({"type": t, "status": s, "reason": reason, "message": message})
    }

    /// Name, object, expected health (`None`: the generic check has no opinion).
    type Row<'a> = (&'a str, Value, Option<(HealthStatus, &'a str)>);

    #[test]
    fn generic_table() {
        let rows: Vec<Row<'_>> = vec![
            (
                "no status",
                json!({"apiVersion": "example.com/v1", "kind": "Widget"}),
                None,
            ),
            ("empty status", obj(1, json!({})), None),
            (
                "status without conditions",
                obj(1, json!({"observedGeneration": 1, "replicas": 2})),
                None,
            ),
            (
                "generation behind",
                obj(
                    3,
                    json!({"observedGeneration": 2, "conditions": [cond("Ready", "True", "Ok", "")]}),
                ),
                Some((
                    Progressing,
                    "Waiting for the controller to observe generation 3 (observed 2)",
                )),
            ),
            (
                "stalled",
                obj(
                    1,
                    json!({"conditions": [cond("Ready", "False", "Progressing", ""), cond("Stalled", "True", "BadSpec", "spec.size must be positive")]}),
                ),
                Some((Degraded, "spec.size must be positive")),
            ),
            (
                "failed",
                obj(
                    1,
                    json!({"conditions": [cond("Failed", "True", "BackoffLimitExceeded", "")]}),
                ),
                Some((Degraded, "BackoffLimitExceeded")),
            ),
            (
                "reconciling",
                obj(
                    1,
                    json!({"conditions": [cond("Reconciling", "True", "Scaling", "scaling to 3")]}),
                ),
                Some((Progressing, "scaling to 3")),
            ),
            (
                "ready",
                obj(
                    1,
                    json!({"observedGeneration": 1, "conditions": [cond("Ready", "True", "Ok", "all good")]}),
                ),
                Some((Healthy, "all good")),
            ),
            (
                "available",
                obj(
                    1,
                    json!({"conditions": [cond("Available", "True", "MinimumReplicasAvailable", "")]}),
                ),
                Some((Healthy, "MinimumReplicasAvailable")),
            ),
            (
                "established",
                obj(
                    1,
                    json!({"conditions": [cond("Established", "True", "InitialNamesAccepted", "the initial names have been accepted")]}),
                ),
                Some((Healthy, "the initial names have been accepted")),
            ),
            (
                "succeeded",
                obj(
                    1,
                    json!({"conditions": [cond("Succeeded", "True", "", "done")]}),
                ),
                Some((Healthy, "done")),
            ),
            (
                "ready false terminal",
                obj(
                    1,
                    json!({"conditions": [cond("Ready", "False", "ReconciliationFailed", "bad chart")]}),
                ),
                Some((Degraded, "bad chart")),
            ),
            (
                "ready false waiting",
                obj(
                    1,
                    json!({"conditions": [cond("Ready", "False", "Pending", "waiting for dependency")]}),
                ),
                Some((Progressing, "waiting for dependency")),
            ),
            (
                "ready unknown",
                obj(1, json!({"conditions": [cond("Ready", "Unknown", "", "")]})),
                Some((Progressing, "")),
            ),
            (
                "ready wins over available",
                obj(
                    1,
                    json!({"conditions": [cond("Available", "True", "", ""), cond("Ready", "False", "InvalidSpec", "no")]}),
                ),
                Some((Degraded, "no")),
            ),
        ];
        for (name, o, want) in rows {
            let got = health(&o);
            assert_eq!(got, want.map(|(s, m)| Health::new(s, m)), "{name}");
        }
    }

    #[test]
    fn terminal_reasons() {
        for r in [
            "ReconciliationFailed",
            "InstallFailure",
            "ProgressDeadlineExceeded",
            "SecretSyncedError",
            "Invalid",
            "Denied",
        ] {
            assert!(is_terminal_reason(r), "{r}");
        }
        for r in [
            "",
            "Pending",
            "Progressing",
            "DependencyNotReady",
            "Creating",
        ] {
            assert!(!is_terminal_reason(r), "{r}");
        }
    }
}
