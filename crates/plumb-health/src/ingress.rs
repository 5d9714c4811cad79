//! Ingress in `networking.k8s.io` and `extensions`, any version (gitops-engine
//! `health_ingress.go`): a non-empty `status.loadBalancer.ingress` ⇒ Healthy, else
//! Progressing. Never a message.

use serde_json::Value;

use crate::object::{Gvk, array_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, _gvk: &Gvk<'_>) -> Health {
    if array_at(obj, &["status", "loadBalancer", "ingress"]).is_empty() {
        Health::new(HealthStatus::Progressing, "")
    } else {
        Health::new(HealthStatus::Healthy, "")
    }
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    fn ingress(api_version: &str, status: Value) -> Value {
        json!({
            "apiVersion": api_version,
            "kind": "Ingress",
            "metadata": {"name": "argocd-server-ingress", "namespace": "argocd",
                         "annotations": {"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS"}},
            "spec": {
                "ingressClassName": "nginx",
                "rules": [{"host": "argocd.example.com", "http": {"paths": [{
                    "path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "argocd-server", "port": {"name": "https"}}}}]}}]
            },
            "status": status
        })
    }

    #[test]
    fn ingress_table() {
        check_table(&[
            (
                "networking.k8s.io/v1 with address",
                ingress(
                    "networking.k8s.io/v1",
                    json!({"loadBalancer": {"ingress": [{"ip": "192.168.49.2"}]}}),
                ),
                Healthy,
                "",
            ),
            (
                "extensions/v1beta1 with hostname",
                ingress(
                    "extensions/v1beta1",
                    json!({"loadBalancer": {"ingress": [{"hostname": "k8s-argocd-1234.elb.amazonaws.com"}]}}),
                ),
                Healthy,
                "",
            ),
            (
                "unassigned",
                ingress("networking.k8s.io/v1", json!({"loadBalancer": {}})),
                Progressing,
                "",
            ),
            (
                "no status at all",
                ingress("networking.k8s.io/v1", Value::Null),
                Progressing,
                "",
            ),
        ]);
    }
}
