//! `argoproj.io` Workflow (Argo Workflows), any version (gitops-engine `health_argo.go`):
//! `status.phase` empty, `Pending` or `Running` ⇒ Progressing; `Succeeded` ⇒ Healthy;
//! `Failed` or `Error` ⇒ Degraded; anything else ⇒ Unknown. The message is
//! `status.message`.

use serde_json::Value;

use crate::object::{Gvk, str_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, _gvk: &Gvk<'_>) -> Health {
    let status = match str_at(obj, &["status", "phase"]) {
        "" | "Pending" | "Running" => HealthStatus::Progressing,
        "Succeeded" => HealthStatus::Healthy,
        "Failed" | "Error" => HealthStatus::Degraded,
        _ => HealthStatus::Unknown,
    };
    Health::new(status, str_at(obj, &["status", "message"]))
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    fn wf(status: Value) -> Value {
        json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Workflow",
            "metadata": {"name": "hello-world-x7k2p", "namespace": "argo"},
            "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "busybox", "command": ["echo", "hello"]}}]},
            "status": status
        })
    }

    #[test]
    fn workflow_table() {
        check_table(&[
            ("not started", wf(Value::Null), Progressing, ""),
            (
                "running",
                wf(json!({"phase": "Running", "message": "This node is running"})),
                Progressing,
                "This node is running",
            ),
            ("succeeded", wf(json!({"phase": "Succeeded"})), Healthy, ""),
            (
                "failed",
                wf(json!({"phase": "Failed", "message": "child 'hello-world-x7k2p-123' failed"})),
                Degraded,
                "child 'hello-world-x7k2p-123' failed",
            ),
            (
                "error",
                wf(json!({"phase": "Error", "message": "pod deleted"})),
                Degraded,
                "pod deleted",
            ),
            ("odd phase", wf(json!({"phase": "Omitted"})), Unknown, ""),
        ]);
    }
}
