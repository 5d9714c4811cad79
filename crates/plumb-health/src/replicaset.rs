//! `apps/v1` ReplicaSet (gitops-engine `health_replicaset.go`).
//!
//! 1. `generation > status.observedGeneration` ⇒ Progressing.
//! 2. A `ReplicaFailure` condition with status `True` ⇒ Degraded with its message.
//! 3. `availableReplicas < spec.replicas` ⇒ Progressing.
//! 4. Healthy with no message.

use serde_json::Value;

use crate::conditions::{cond, rollout_behind};
use crate::object::{Gvk, int_at, opt_int_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, gvk: &Gvk<'_>) -> Health {
    if gvk.version != "v1" {
        return gvk.unsupported("ReplicaSet");
    }
    if let Some(h) = rollout_behind(obj, "replica set") {
        return h;
    }
    if let Some(c) = cond(obj, "ReplicaFailure").filter(|c| c.is_true()) {
        return Health::new(HealthStatus::Degraded, c.message);
    }
    let available = int_at(obj, &["status", "availableReplicas"]);
    if let Some(desired) = opt_int_at(obj, &["spec", "replicas"])
        && available < desired
    {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for rollout to finish: {available} out of {desired} new replicas are available..."
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

    fn rs(status: Value) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "guestbook-ui-85c9d8bd5b",
                "namespace": "default",
                "generation": 2,
                "labels": {"app": "guestbook-ui", "pod-template-hash": "85c9d8bd5b"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "guestbook-ui", "uid": "8a2b1c44-6f1e-4d2b-9a57-0c2f6e4b9d10", "controller": true}]
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "guestbook-ui", "pod-template-hash": "85c9d8bd5b"}},
                "template": {"metadata": {"labels": {"app": "guestbook-ui", "pod-template-hash": "85c9d8bd5b"}},
                             "spec": {"containers": [{"name": "guestbook-ui", "image": "gcr.io/heptio-images/ks-guestbook-demo:0.2"}]}}
            },
            "status": status
        })
    }

    #[test]
    fn replicaset_table() {
        check_table(&[
            (
                "all available",
                rs(
                    json!({"observedGeneration": 2, "replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}),
                ),
                Healthy,
                "",
            ),
            (
                "generation not observed",
                rs(json!({"observedGeneration": 1, "replicas": 2})),
                Progressing,
                "Waiting for rollout to finish: observed replica set generation less than desired generation",
            ),
            (
                "replica failure (quota)",
                rs(
                    json!({"observedGeneration": 2, "replicas": 0, "conditions": [{
                        "type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                        "message": "pods \"guestbook-ui-85c9d8bd5b-x7k2p\" is forbidden: exceeded quota: compute, requested: cpu=500m, used: cpu=2, limited: cpu=2"
                    }]}),
                ),
                Degraded,
                "pods \"guestbook-ui-85c9d8bd5b-x7k2p\" is forbidden: exceeded quota: compute, requested: cpu=500m, used: cpu=2, limited: cpu=2",
            ),
            (
                "replicas not yet available",
                rs(
                    json!({"observedGeneration": 2, "replicas": 2, "readyReplicas": 1, "availableReplicas": 1,
                          "conditions": [{"type": "ReplicaFailure", "status": "False", "reason": "FailedCreate"}]}),
                ),
                Progressing,
                "Waiting for rollout to finish: 1 out of 2 new replicas are available...",
            ),
        ]);
    }
}
