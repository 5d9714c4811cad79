//! `apiregistration.k8s.io` APIService, versions `v1` and `v1beta1` (gitops-engine
//! `health_apiservice.go`): the first `Available` condition decides — status `True` ⇒
//! Healthy, anything else ⇒ Progressing, both with message `<reason>: <message>`; no such
//! condition ⇒ Progressing `Waiting to be processed`.

use serde_json::Value;

use crate::conditions::cond;
use crate::object::Gvk;
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, gvk: &Gvk<'_>) -> Health {
    if !matches!(gvk.version, "v1" | "v1beta1") {
        return gvk.unsupported("APIService");
    }
    let Some(c) = cond(obj, "Available") else {
        return Health::new(HealthStatus::Progressing, "Waiting to be processed");
    };
    let message = format!("{}: {}", c.reason, c.message);
    if c.is_true() {
        Health::new(HealthStatus::Healthy, message)
    } else {
        Health::new(HealthStatus::Progressing, message)
    }
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_table;
    use serde_json::{Value, json};

    fn apiservice(api_version: &str, conditions: Value) -> Value {
        json!({
            "apiVersion": api_version,
            "kind": "APIService",
            "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": {"k8s-app": "metrics-server"}},
            "spec": {
                "group": "metrics.k8s.io", "version": "v1beta1",
                "groupPriorityMinimum": 100, "versionPriority": 100,
                "insecureSkipTLSVerify": true,
                "service": {"name": "metrics-server", "namespace": "kube-system", "port": 443}
            },
            "status": {"conditions": conditions}
        })
    }

    #[test]
    fn apiservice_table() {
        check_table(&[
            (
                "v1 available",
                apiservice(
                    "apiregistration.k8s.io/v1",
                    json!([
                    {"type": "Available", "status": "True", "reason": "Passed", "message": "all checks passed", "lastTransitionTime": "2026-09-22T19:57:06Z"}]),
                ),
                Healthy,
                "Passed: all checks passed",
            ),
            (
                "v1 missing endpoints",
                apiservice(
                    "apiregistration.k8s.io/v1",
                    json!([
                    {"type": "Available", "status": "False", "reason": "MissingEndpoints",
                     "message": "endpoints for service/metrics-server in \"kube-system\" have no addresses with port name \"https\""}]),
                ),
                Progressing,
                "MissingEndpoints: endpoints for service/metrics-server in \"kube-system\" have no addresses with port name \"https\"",
            ),
            (
                "v1beta1 available, local",
                apiservice(
                    "apiregistration.k8s.io/v1beta1",
                    json!([
                    {"type": "Available", "status": "True", "reason": "Local", "message": "Local APIServices are always available"}]),
                ),
                Healthy,
                "Local: Local APIServices are always available",
            ),
            (
                "not processed yet",
                apiservice("apiregistration.k8s.io/v1", json!([])),
                Progressing,
                "Waiting to be processed",
            ),
        ]);
    }
}
