//! `apps/v1` DaemonSet (gitops-engine `health_daemonset.go`, after kubectl's
//! `rollout status`).
//!
//! 1. `generation > status.observedGeneration` ⇒ Progressing.
//! 2. `updateStrategy.type == OnDelete` ⇒ Healthy `daemon set U out of D new pods have been updated`.
//! 3. `updatedNumberScheduled < desiredNumberScheduled` ⇒ Progressing.
//! 4. `numberAvailable < desiredNumberScheduled` ⇒ Progressing.
//! 5. Healthy with no message.

use serde_json::Value;

use crate::conditions::rollout_behind;
use crate::object::{Gvk, go_quote, int_at, str_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, gvk: &Gvk<'_>) -> Health {
    if gvk.version != "v1" {
        return gvk.unsupported("DaemonSet");
    }
    if let Some(h) = rollout_behind(obj, "daemon set") {
        return h;
    }
    let updated = int_at(obj, &["status", "updatedNumberScheduled"]);
    let desired = int_at(obj, &["status", "desiredNumberScheduled"]);
    let available = int_at(obj, &["status", "numberAvailable"]);
    if str_at(obj, &["spec", "updateStrategy", "type"]) == "OnDelete" {
        return Health::new(
            HealthStatus::Healthy,
            format!("daemon set {updated} out of {desired} new pods have been updated"),
        );
    }
    let name = go_quote(str_at(obj, &["metadata", "name"]));
    if updated < desired {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for daemon set {name} rollout to finish: {updated} out of {desired} new pods have been updated..."
            ),
        );
    }
    if available < desired {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for daemon set {name} rollout to finish: {available} of {desired} updated pods are available..."
            ),
        );
    }
    Health::new(HealthStatus::Healthy, "")
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    fn ds(strategy: &str, status: Value) -> Value {
        let mut obj = json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "fluent-bit", "namespace": "logging", "generation": 5},
            "spec": {
                "selector": {"matchLabels": {"app": "fluent-bit"}},
                "updateStrategy": {"type": strategy, "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "template": {"metadata": {"labels": {"app": "fluent-bit"}},
                             "spec": {"containers": [{"name": "fluent-bit", "image": "cr.fluentbit.io/fluent/fluent-bit:3.1.4"}]}}
            },
            "status": {
                "observedGeneration": 5,
                "currentNumberScheduled": 4,
                "desiredNumberScheduled": 4,
                "numberMisscheduled": 0,
                "numberReady": 4,
                "numberAvailable": 4,
                "updatedNumberScheduled": 4
            }
        });
        if let (Some(into), Value::Object(patch)) = (obj["status"].as_object_mut(), status) {
            for (k, v) in patch {
                into.insert(k, v);
            }
        }
        obj
    }

    #[test]
    fn daemonset_table() {
        check_table(&[
            ("settled", ds("RollingUpdate", json!({})), Healthy, ""),
            (
                "generation not observed",
                ds("RollingUpdate", json!({"observedGeneration": 4})),
                Progressing,
                "Waiting for rollout to finish: observed daemon set generation less than desired generation",
            ),
            (
                "OnDelete is healthy mid-rollout",
                ds("OnDelete", json!({"updatedNumberScheduled": 1})),
                Healthy,
                "daemon set 1 out of 4 new pods have been updated",
            ),
            (
                "pods not yet updated",
                ds("RollingUpdate", json!({"updatedNumberScheduled": 2})),
                Progressing,
                "Waiting for daemon set \"fluent-bit\" rollout to finish: 2 out of 4 new pods have been updated...",
            ),
            (
                "updated pods not available",
                ds(
                    "RollingUpdate",
                    json!({"numberAvailable": 3, "numberUnavailable": 1}),
                ),
                Progressing,
                "Waiting for daemon set \"fluent-bit\" rollout to finish: 3 of 4 updated pods are available...",
            ),
        ]);
    }
}
