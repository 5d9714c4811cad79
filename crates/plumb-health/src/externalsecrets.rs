//! external-secrets (`external-secrets.io`): ExternalSecret, ClusterExternalSecret,
//! SecretStore, ClusterSecretStore.
//!
//! All four report a `Ready` condition: True ⇒ Healthy; False ⇒ Degraded (the operator sets
//! it False with reason `SecretSyncedError`, `InvalidProviderConfig`, ... when it could not
//! do its work; for an ExternalSecret, reason `SecretDeleted` too); Unknown or not there yet
//! ⇒ Progressing. An ExternalSecret with `spec.refreshInterval: 0` that synced once stays
//! Healthy. The message is the condition's message.

use serde_json::Value;

use crate::conditions::{
    cond, cond_stale, condition_health, generation_behind, generation_message,
};
use crate::{Health, HealthStatus};

pub(crate) fn health(obj: &Value, kind: &str) -> Option<Health> {
    let waiting = match kind {
        "ExternalSecret" | "ClusterExternalSecret" => "Waiting for the secret to be synced",
        "SecretStore" | "ClusterSecretStore" => "Waiting for the store to be validated",
        _ => return None,
    };
    if let Some((g, o)) = generation_behind(obj) {
        return Some(Health::new(
            HealthStatus::Progressing,
            generation_message(g, o),
        ));
    }
    Some(match cond(obj, "Ready") {
        Some(r) if cond_stale(obj, &r) => Health::new(HealthStatus::Progressing, r.text()),
        ready => condition_health(ready, waiting),
    })
}

#[cfg(test)]
mod tests {
    use crate::HealthStatus::*;
    use crate::testutil::check_builtin_table;
    use serde_json::{Value, json};

    fn obj(kind: &str, status: Value) -> Value {
        json!({
            "apiVersion": "external-secrets.io/v1beta1", "kind": kind,
            "metadata": {"name": "db", "namespace": "app", "generation": 1},
            "spec": {"refreshInterval": "1h", "secretStoreRef": {"name": "vault", "kind": "SecretStore"}},
            "status": status
        })
    }

    fn ready(s: &str, reason: &str, message: &str) -> Value {
        json!({"conditions": [{"type": "Ready", "status": s, "reason": reason, "message": message}], "observedGeneration": 1})
    }

    #[test]
    fn external_secret_table() {
        check_builtin_table(&[
            (
                "synced",
                obj(
                    "ExternalSecret",
                    ready("True", "SecretSynced", "Secret was synced"),
                ),
                Healthy,
                "Secret was synced",
            ),
            (
                "new",
                obj("ExternalSecret", json!({})),
                Progressing,
                "Waiting for the secret to be synced",
            ),
            (
                "error",
                obj(
                    "ExternalSecret",
                    ready(
                        "False",
                        "SecretSyncedError",
                        "could not get secret data from provider",
                    ),
                ),
                Degraded,
                "could not get secret data from provider",
            ),
            (
                "deleted",
                obj(
                    "ExternalSecret",
                    ready(
                        "False",
                        "SecretDeleted",
                        "secret deleted because of DeletionPolicy=Delete",
                    ),
                ),
                Degraded,
                "secret deleted because of DeletionPolicy=Delete",
            ),
            (
                "unknown",
                obj("ExternalSecret", ready("Unknown", "", "")),
                Progressing,
                "",
            ),
        ]);
    }

    #[test]
    fn secret_store_table() {
        for kind in ["SecretStore", "ClusterSecretStore"] {
            check_builtin_table(&[
                (
                    "valid",
                    obj(kind, ready("True", "Valid", "store validated")),
                    Healthy,
                    "store validated",
                ),
                (
                    "new",
                    obj(kind, json!({})),
                    Progressing,
                    "Waiting for the store to be validated",
                ),
                (
                    "invalid",
                    obj(
                        kind,
                        ready("False", "InvalidProviderConfig", "unable to validate store"),
                    ),
                    Degraded,
                    "unable to validate store",
                ),
            ]);
        }
    }
}
