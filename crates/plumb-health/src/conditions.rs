//! Reading `status.conditions` the way Kubernetes API conventions define them, shared by the
//! generic check and the operator checks.

use serde_json::Value;

use crate::object::{condition, int_at, opt_int_at, str_at};
use crate::{Health, HealthStatus};

/// One condition of `status.conditions`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cond<'a> {
    /// `"True"`, `"False"`, `"Unknown"` (or whatever the operator wrote).
    pub status: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
    /// The condition's own `observedGeneration`, if set.
    pub observed_generation: Option<i64>,
}

impl<'a> Cond<'a> {
    pub(crate) fn is_true(&self) -> bool {
        self.status == "True"
    }

    pub(crate) fn is_false(&self) -> bool {
        self.status == "False"
    }

    /// The message, else the reason (so a condition never reads as empty when it says why).
    pub(crate) fn text(&self) -> &'a str {
        if self.message.is_empty() {
            self.reason
        } else {
            self.message
        }
    }
}

/// The condition of `cond_type`, if the object has it.
pub(crate) fn cond<'a>(obj: &'a Value, cond_type: &str) -> Option<Cond<'a>> {
    condition(obj, cond_type).map(|c| Cond {
        status: str_at(c, &["status"]),
        reason: str_at(c, &["reason"]),
        message: str_at(c, &["message"]),
        observed_generation: opt_int_at(c, &["observedGeneration"]),
    })
}

/// The health one condition speaks for: `True` ⇒ Healthy, `False` ⇒ Degraded, any other
/// status ⇒ Progressing, each with the condition's text; no condition ⇒ Progressing
/// `waiting`.
pub(crate) fn condition_health(c: Option<Cond<'_>>, waiting: &str) -> Health {
    match c {
        Some(c) if c.is_true() => Health::new(HealthStatus::Healthy, c.text()),
        Some(c) if c.is_false() => Health::new(HealthStatus::Degraded, c.text()),
        Some(c) => Health::new(HealthStatus::Progressing, c.text()),
        None => Health::new(HealthStatus::Progressing, waiting),
    }
}

/// `metadata.generation` when `status.observedGeneration` is set and behind it: the
/// controller has not yet seen the latest spec.
pub(crate) fn generation_behind(obj: &Value) -> Option<(i64, i64)> {
    let generation = opt_int_at(obj, &["metadata", "generation"])?;
    let observed = opt_int_at(obj, &["status", "observedGeneration"])?;
    (observed < generation).then_some((generation, observed))
}

/// A workload whose controller has not observed its latest spec yet (`metadata.generation`
/// above `status.observedGeneration`, either absent read as 0) ⇒ Progressing `Waiting for
/// rollout to finish: observed <what> generation less than desired generation`, as
/// gitops-engine words it for DaemonSets, Deployments and ReplicaSets.
pub(crate) fn rollout_behind(obj: &Value, what: &str) -> Option<Health> {
    let generation = int_at(obj, &["metadata", "generation"]);
    let observed = int_at(obj, &["status", "observedGeneration"]);
    (generation > observed).then(|| {
        Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for rollout to finish: observed {what} generation less than desired generation"
            ),
        )
    })
}

/// The message for an object whose controller is behind its spec.
pub(crate) fn generation_message(generation: i64, observed: i64) -> String {
    format!("Waiting for the controller to observe generation {generation} (observed {observed})")
}

/// Whether a condition's `observedGeneration` is behind `metadata.generation` (the condition
/// speaks of an older spec).
pub(crate) fn cond_stale(obj: &Value, c: &Cond<'_>) -> bool {
    match (
        c.observed_generation,
        opt_int_at(obj, &["metadata", "generation"]),
    ) {
        (Some(seen), Some(generation)) => seen < generation,
        _ => false,
    }
}

/// Whether `status` is absent, `null` or an empty object.
pub(crate) fn no_status(obj: &Value) -> bool {
    match obj.get("status") {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(_) => false,
    }
}

/// Whether `spec.<field>` is the boolean `true`.
pub(crate) fn spec_flag(obj: &Value, field: &str) -> bool {
    obj.get("spec")
        .and_then(|s| s.get(field))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}
