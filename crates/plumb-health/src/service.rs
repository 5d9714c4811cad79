//! `v1` Service (gitops-engine `health_service.go`).
//!
//! Healthy, except `spec.type: LoadBalancer` with an empty `status.loadBalancer.ingress`
//! ⇒ Progressing (no address assigned yet). Never a message.

use serde_json::Value;

use crate::object::{Gvk, array_at, str_at};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, gvk: &Gvk<'_>) -> Health {
    if gvk.version != "v1" {
        return gvk.unsupported("Service");
    }
    if str_at(obj, &["spec", "type"]) == "LoadBalancer"
        && array_at(obj, &["status", "loadBalancer", "ingress"]).is_empty()
    {
        return Health::new(HealthStatus::Progressing, "");
    }
    Health::new(HealthStatus::Healthy, "")
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    fn svc(svc_type: &str, status: Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "argocd-server", "namespace": "argocd"},
            "spec": {
                "type": svc_type,
                "clusterIP": "10.96.112.7",
                "clusterIPs": ["10.96.112.7"],
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "internalTrafficPolicy": "Cluster",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8080}],
                "selector": {"app.kubernetes.io/name": "argocd-server"},
                "sessionAffinity": "None"
            },
            "status": status
        })
    }

    #[test]
    fn service_table() {
        check_table(&[
            (
                "ClusterIP",
                svc("ClusterIP", json!({"loadBalancer": {}})),
                Healthy,
                "",
            ),
            (
                "NodePort",
                svc("NodePort", json!({"loadBalancer": {}})),
                Healthy,
                "",
            ),
            (
                "LoadBalancer with an address",
                svc(
                    "LoadBalancer",
                    json!({"loadBalancer": {"ingress": [{"hostname": "a1b2c3.elb.us-west-2.amazonaws.com"}]}}),
                ),
                Healthy,
                "",
            ),
            (
                "LoadBalancer with an IP",
                svc(
                    "LoadBalancer",
                    json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.10", "ipMode": "VIP"}]}}),
                ),
                Healthy,
                "",
            ),
            (
                "LoadBalancer unassigned",
                svc("LoadBalancer", json!({"loadBalancer": {}})),
                Progressing,
                "",
            ),
            (
                "LoadBalancer with an empty ingress list",
                svc("LoadBalancer", json!({"loadBalancer": {"ingress": []}})),
                Progressing,
                "",
            ),
        ]);
    }
}
