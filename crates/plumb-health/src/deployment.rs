//! `apps/v1` Deployment (gitops-engine `health_deployment.go`, after kubectl's
//! `rollout status`).
//!
//! 1. `spec.paused` ⇒ Suspended `Deployment is paused`.
//! 2. `metadata.generation > status.observedGeneration` ⇒ Progressing (generation not observed).
//! 3. Otherwise, in order: Progressing condition with reason `ProgressDeadlineExceeded` ⇒
//!    Degraded; `updatedReplicas < spec.replicas` ⇒ Progressing; `status.replicas >
//!    updatedReplicas` (old replicas terminating) ⇒ Progressing; `availableReplicas <
//!    updatedReplicas` ⇒ Progressing; else Healthy with no message.
//!
//! Only `status` counters are read, so a Deployment whose status was written through the
//! status subresource (no kubelet, no controller) is Healthy once the counters agree.

use serde_json::Value;

use crate::conditions::{cond, rollout_behind};
use crate::object::{Gvk, get, go_quote, int_at, opt_int_at, str_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, gvk: &Gvk<'_>) -> Health {
    if gvk.version != "v1" {
        return gvk.unsupported("Deployment");
    }
    if get(obj, &["spec", "paused"]).and_then(Value::as_bool) == Some(true) {
        return Health::new(HealthStatus::Suspended, "Deployment is paused");
    }
    if let Some(h) = rollout_behind(obj, "deployment") {
        return h;
    }
    if cond(obj, "Progressing").is_some_and(|c| c.reason == "ProgressDeadlineExceeded") {
        let name = go_quote(str_at(obj, &["metadata", "name"]));
        return Health::new(
            HealthStatus::Degraded,
            format!("Deployment {name} exceeded its progress deadline"),
        );
    }
    let updated = int_at(obj, &["status", "updatedReplicas"]);
    let replicas = int_at(obj, &["status", "replicas"]);
    let available = int_at(obj, &["status", "availableReplicas"]);
    if let Some(desired) = opt_int_at(obj, &["spec", "replicas"])
        && updated < desired
    {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for rollout to finish: {updated} out of {desired} new replicas have been updated..."
            ),
        );
    }
    if replicas > updated {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for rollout to finish: {} old replicas are pending termination...",
                replicas - updated
            ),
        );
    }
    if available < updated {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "Waiting for rollout to finish: {available} of {updated} updated replicas are available..."
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

    /// A live Deployment as the API server returns it, with `status` merged over a
    /// settled 3-replica rollout.
    fn deployment(spec: Value, status: Value) -> Value {
        let mut obj = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "guestbook-ui",
                "namespace": "default",
                "generation": 4,
                "uid": "8a2b1c44-6f1e-4d2b-9a57-0c2f6e4b9d10",
                "resourceVersion": "151053",
                "annotations": {"deployment.kubernetes.io/revision": "3"}
            },
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "guestbook-ui"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                "progressDeadlineSeconds": 600,
                "revisionHistoryLimit": 10,
                "template": {
                    "metadata": {"labels": {"app": "guestbook-ui"}},
                    "spec": {"containers": [{"name": "guestbook-ui", "image": "gcr.io/heptio-images/ks-guestbook-demo:0.2", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}
                }
            },
            "status": {
                "observedGeneration": 4,
                "replicas": 3,
                "updatedReplicas": 3,
                "readyReplicas": 3,
                "availableReplicas": 3,
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "ReplicaSet \"guestbook-ui-85c9d8bd5b\" has successfully progressed."}
                ]
            }
        });
        merge(&mut obj["spec"], spec);
        merge(&mut obj["status"], status);
        obj
    }

    fn merge(into: &mut Value, patch: Value) {
        if let (Some(into), Value::Object(patch)) = (into.as_object_mut(), patch) {
            for (k, v) in patch {
                if v.is_null() {
                    into.remove(&k);
                } else {
                    into.insert(k, v);
                }
            }
        }
    }

    #[test]
    fn deployment_table() {
        check_table(&[
            (
                "settled rollout",
                deployment(json!({}), json!({})),
                Healthy,
                "",
            ),
            (
                // The seed's case: no kubelet, status written via the status subresource.
                "status subresource written, no kubelet",
                json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "payments-api", "namespace": "pay-prod", "generation": 1},
                    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "payments-api"}},
                             "template": {"metadata": {"labels": {"app": "payments-api"}},
                                          "spec": {"containers": [{"name": "api", "image": "registry.lab/payments-api:1.4.2"}]}}},
                    "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                               "readyReplicas": 2, "availableReplicas": 2}
                }),
                Healthy,
                "",
            ),
            (
                "paused wins over everything",
                deployment(json!({"paused": true}), json!({"observedGeneration": 1})),
                Suspended,
                "Deployment is paused",
            ),
            (
                "generation not observed",
                deployment(json!({}), json!({"observedGeneration": 3})),
                Progressing,
                "Waiting for rollout to finish: observed deployment generation less than desired generation",
            ),
            (
                "fresh object without status",
                deployment(
                    json!({}),
                    json!({"observedGeneration": null, "replicas": null, "updatedReplicas": null, "readyReplicas": null, "availableReplicas": null, "conditions": null}),
                ),
                Progressing,
                "Waiting for rollout to finish: observed deployment generation less than desired generation",
            ),
            (
                "progress deadline exceeded",
                deployment(
                    json!({}),
                    json!({"updatedReplicas": 1, "availableReplicas": 2, "conditions": [
                        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                         "message": "ReplicaSet \"guestbook-ui-75f4bd8d7d\" has timed out progressing."}
                    ]}),
                ),
                Degraded,
                "Deployment \"guestbook-ui\" exceeded its progress deadline",
            ),
            (
                "new replicas not all updated",
                deployment(
                    json!({}),
                    json!({"replicas": 4, "updatedReplicas": 1, "availableReplicas": 3}),
                ),
                Progressing,
                "Waiting for rollout to finish: 1 out of 3 new replicas have been updated...",
            ),
            (
                "old replicas pending termination",
                deployment(
                    json!({}),
                    json!({"replicas": 4, "updatedReplicas": 3, "availableReplicas": 3}),
                ),
                Progressing,
                "Waiting for rollout to finish: 1 old replicas are pending termination...",
            ),
            (
                "updated replicas not yet available",
                deployment(
                    json!({}),
                    json!({"readyReplicas": 1, "availableReplicas": 1}),
                ),
                Progressing,
                "Waiting for rollout to finish: 1 of 3 updated replicas are available...",
            ),
            (
                "scaled to zero",
                deployment(
                    json!({"replicas": 0}),
                    json!({"replicas": null, "updatedReplicas": null, "readyReplicas": null, "availableReplicas": null}),
                ),
                Healthy,
                "",
            ),
            (
                "no spec.replicas skips the desired-count check",
                deployment(
                    json!({"replicas": null}),
                    json!({"replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}),
                ),
                Healthy,
                "",
            ),
            (
                "apps/v1beta2 is not supported by the built-in check",
                {
                    let mut d = deployment(json!({}), json!({}));
                    d["apiVersion"] = json!("apps/v1beta2");
                    d
                },
                Unknown,
                "unsupported Deployment GVK: apps/v1beta2, Kind=Deployment",
            ),
            (
                "being deleted",
                {
                    let mut d = deployment(json!({}), json!({}));
                    d["metadata"]["deletionTimestamp"] = json!("2026-09-22T19:57:06Z");
                    d["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
                    d
                },
                Progressing,
                "Pending deletion",
            ),
        ]);
    }
}
