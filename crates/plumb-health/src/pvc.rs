//! `v1` PersistentVolumeClaim (gitops-engine `health_pvc.go`): `status.phase` Bound ⇒
//! Healthy, Pending ⇒ Progressing (also for `WaitForFirstConsumer` storage classes),
//! Lost ⇒ Degraded, anything else ⇒ Unknown. Never a message.

use serde_json::Value;

use crate::object::{Gvk, str_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, gvk: &Gvk<'_>) -> Health {
    if gvk.version != "v1" {
        return gvk.unsupported("PersistentVolumeClaim");
    }
    let status = match str_at(obj, &["status", "phase"]) {
        "Lost" => HealthStatus::Degraded,
        "Pending" => HealthStatus::Progressing,
        "Bound" => HealthStatus::Healthy,
        _ => HealthStatus::Unknown,
    };
    Health::new(status, "")
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    fn pvc(status: Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "data-elasticsearch-master-0",
                "namespace": "logging",
                "annotations": {"volume.beta.kubernetes.io/storage-provisioner": "rancher.io/local-path"},
                "finalizers": ["kubernetes.io/pvc-protection"]
            },
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "30Gi"}},
                "storageClassName": "standard",
                "volumeMode": "Filesystem"
            },
            "status": status
        })
    }

    #[test]
    fn pvc_table() {
        check_table(&[
            (
                "bound",
                pvc(
                    json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "30Gi"}}),
                ),
                Healthy,
                "",
            ),
            ("pending", pvc(json!({"phase": "Pending"})), Progressing, ""),
            ("lost", pvc(json!({"phase": "Lost"})), Degraded, ""),
            ("no phase", pvc(json!({})), Unknown, ""),
        ]);
    }
}
