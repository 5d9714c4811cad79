//! `apps/v1` StatefulSet (gitops-engine `health_statefulset.go`, after kubectl's
//! `rollout status`).
//!
//! 1. `status.observedGeneration == 0` or `generation > observedGeneration` ⇒ Progressing.
//! 2. `readyReplicas < spec.replicas` ⇒ Progressing `Waiting for N pods to be ready...`.
//! 3. `updateStrategy.type == RollingUpdate` with a `rollingUpdate` block: when both
//!    `spec.replicas` and `partition` are set and `updatedReplicas < replicas - partition` ⇒
//!    Progressing; otherwise Healthy `partitioned roll out complete: ...` (this is the usual
//!    outcome: the API server defaults `rollingUpdate.partition` to 0).
//! 4. `OnDelete` ⇒ Healthy `statefulset has N ready pods`.
//! 5. `updateRevision != currentRevision` ⇒ Progressing; else Healthy.

use serde_json::Value;

use crate::object::{Gvk, get, int_at, opt_int_at, str_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, gvk: &Gvk<'_>) -> Health {
    if gvk.version != "v1" {
        return gvk.unsupported("StatefulSet");
    }
    let generation = int_at(obj, &["metadata", "generation"]);
    let observed = int_at(obj, &["status", "observedGeneration"]);
    if observed == 0 || generation > observed {
        return Health::new(
            HealthStatus::Progressing,
            "Waiting for statefulset spec update to be observed...",
        );
    }
    let desired = opt_int_at(obj, &["spec", "replicas"]);
    let ready = int_at(obj, &["status", "readyReplicas"]);
    let updated = int_at(obj, &["status", "updatedReplicas"]);
    if let Some(desired) = desired
        && ready < desired
    {
        return Health::new(
            HealthStatus::Progressing,
            format!("Waiting for {} pods to be ready...", desired - ready),
        );
    }
    let strategy = str_at(obj, &["spec", "updateStrategy", "type"]);
    if strategy == "RollingUpdate"
        && get(obj, &["spec", "updateStrategy", "rollingUpdate"]).is_some()
    {
        let partition = opt_int_at(
            obj,
            &["spec", "updateStrategy", "rollingUpdate", "partition"],
        );
        if let (Some(desired), Some(partition)) = (desired, partition)
            && updated < desired - partition
        {
            return Health::new(
                HealthStatus::Progressing,
                format!(
                    "Waiting for partitioned roll out to finish: {updated} out of {} new pods have been updated...",
                    desired - partition
                ),
            );
        }
        return Health::new(
            HealthStatus::Healthy,
            format!("partitioned roll out complete: {updated} new pods have been updated..."),
        );
    }
    if strategy == "OnDelete" {
        return Health::new(
            HealthStatus::Healthy,
            format!("statefulset has {ready} ready pods"),
        );
    }
    let update_revision = str_at(obj, &["status", "updateRevision"]);
    let current_revision = str_at(obj, &["status", "currentRevision"]);
    if update_revision != current_revision {
        return Health::new(
            HealthStatus::Progressing,
            format!(
                "waiting for statefulset rolling update to complete {updated} pods at revision {update_revision}..."
            ),
        );
    }
    let current = int_at(obj, &["status", "currentReplicas"]);
    Health::new(
        HealthStatus::Healthy,
        format!(
            "statefulset rolling update complete {current} pods at revision {current_revision}..."
        ),
    )
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    /// A live 3-replica StatefulSet; `update_strategy` replaces `spec.updateStrategy`
    /// (`null` removes it), `status` is merged over a settled status.
    fn sts(update_strategy: Value, status: Value) -> Value {
        let mut obj = json!({
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "elasticsearch-master", "namespace": "logging", "generation": 2},
            "spec": {
                "replicas": 3,
                "serviceName": "elasticsearch-master-headless",
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "elasticsearch-master"}},
                "template": {"metadata": {"labels": {"app": "elasticsearch-master"}},
                             "spec": {"containers": [{"name": "elasticsearch", "image": "docker.elastic.co/elasticsearch/elasticsearch:8.15.0"}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "30Gi"}}}}]
            },
            "status": {
                "observedGeneration": 2,
                "replicas": 3,
                "readyReplicas": 3,
                "availableReplicas": 3,
                "currentReplicas": 3,
                "updatedReplicas": 3,
                "currentRevision": "elasticsearch-master-7d9c6b8f5d",
                "updateRevision": "elasticsearch-master-7d9c6b8f5d",
                "collisionCount": 0
            }
        });
        if !update_strategy.is_null() {
            obj["spec"]["updateStrategy"] = update_strategy;
        }
        if let (Some(into), Value::Object(patch)) = (obj["status"].as_object_mut(), status) {
            for (k, v) in patch {
                into.insert(k, v);
            }
        }
        obj
    }

    fn rolling(partition: i64) -> Value {
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": partition}})
    }

    #[test]
    fn statefulset_table() {
        check_table(&[
            (
                "defaulted RollingUpdate, settled",
                sts(rolling(0), json!({})),
                Healthy,
                "partitioned roll out complete: 3 new pods have been updated...",
            ),
            (
                "observedGeneration 0",
                sts(rolling(0), json!({"observedGeneration": 0})),
                Progressing,
                "Waiting for statefulset spec update to be observed...",
            ),
            (
                "generation ahead of observed",
                sts(rolling(0), json!({"observedGeneration": 1})),
                Progressing,
                "Waiting for statefulset spec update to be observed...",
            ),
            (
                "pods not ready",
                sts(rolling(0), json!({"readyReplicas": 1})),
                Progressing,
                "Waiting for 2 pods to be ready...",
            ),
            (
                "partitioned rollout in progress",
                sts(rolling(1), json!({"updatedReplicas": 1})),
                Progressing,
                "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...",
            ),
            (
                "partitioned rollout complete",
                sts(
                    rolling(1),
                    json!({"updatedReplicas": 2, "currentReplicas": 1}),
                ),
                Healthy,
                "partitioned roll out complete: 2 new pods have been updated...",
            ),
            (
                "OnDelete",
                sts(
                    json!({"type": "OnDelete"}),
                    json!({"updatedReplicas": 0, "updateRevision": "elasticsearch-master-5f6d7c9b8"}),
                ),
                Healthy,
                "statefulset has 3 ready pods",
            ),
            (
                "RollingUpdate without rollingUpdate block, revisions differ",
                sts(
                    json!({"type": "RollingUpdate"}),
                    json!({"updatedReplicas": 1, "updateRevision": "elasticsearch-master-5f6d7c9b8"}),
                ),
                Progressing,
                "waiting for statefulset rolling update to complete 1 pods at revision elasticsearch-master-5f6d7c9b8...",
            ),
            (
                "no update strategy, revisions equal",
                sts(Value::Null, json!({})),
                Healthy,
                "statefulset rolling update complete 3 pods at revision elasticsearch-master-7d9c6b8f5d...",
            ),
        ]);
    }
}
