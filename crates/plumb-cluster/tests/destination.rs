//! Connecting to a destination cluster declared by an Argo CD cluster Secret, on the test bed:
//! client certificates, a bearer token (a real ServiceAccount token, so the API server's
//! answer proves which identity was used), a wrong token, an unreachable server.

mod support;

use plumb_cluster::{Cluster, ClusterError};
use plumb_core::clusters::Cluster as Destination;
use serde_json::{Value, json};
use support::{testbed, testbed_dir, unique};

/// The test bed's admin kubeconfig as JSON (server, CA, client certificate and key).
fn admin_kubeconfig() -> Value {
    let text = std::fs::read_to_string(testbed_dir().join("admin.kubeconfig")).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap()
}

/// A cluster Secret for the test bed with this `config`.
fn secret(name: &str, server: &str, config: Value) -> Destination {
    Destination::from_secret(&json!({
        "metadata": {"name": name, "namespace": "plumb-system",
                     "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": name, "server": server, "config": config.to_string()},
    }))
    .unwrap()
}

#[tokio::test]
async fn a_cluster_secret_with_client_certificates_connects() {
    let Some(_) = testbed("a_cluster_secret_with_client_certificates_connects").await else {
        return;
    };
    let kc = admin_kubeconfig();
    let server = str_at(&kc, "/clusters/0/cluster/server");
    let dest = secret(
        "testbed",
        server,
        json!({"tlsClientConfig": {
            "caData": str_at(&kc, "/clusters/0/cluster/certificate-authority-data"),
            "certData": str_at(&kc, "/users/0/user/client-certificate-data"),
            "keyData": str_at(&kc, "/users/0/user/client-key-data"),
        }}),
    );
    let cluster = Cluster::connect_destination(&dest).await.unwrap();
    assert_eq!(cluster.server(), server.trim_end_matches('/'));
    assert!(cluster.server_version().starts_with("v1."));
    assert_eq!(
        cluster.config_source(),
        "cluster Secret plumb-system/testbed"
    );
    // The admin identity: reading a cluster-scoped resource works.
    cluster.resource_for("", "Namespace").await.unwrap();
}

#[tokio::test]
async fn a_bearer_token_is_the_identity_used() {
    let Some(admin) = testbed("a_bearer_token_is_the_identity_used").await else {
        return;
    };
    let ns = support::namespace(&admin, "dest-token", json!({})).await;
    let sa = unique("sa");
    support::apply(
        &admin,
        vec![json!({"apiVersion": "v1", "kind": "ServiceAccount",
                     "metadata": {"name": sa, "namespace": ns}})],
    )
    .await;
    // A real token for that ServiceAccount (TokenRequest).
    let request = http::Request::post(format!(
        "/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token"
    ))
    .header("content-type", "application/json")
    .body(
        serde_json::to_vec(&json!({"apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}))
        .unwrap(),
    )
    .unwrap();
    let answer: Value = admin.client().request(request).await.unwrap();
    let token = str_at(&answer, "/status/token").to_string();

    let kc = admin_kubeconfig();
    let server = str_at(&kc, "/clusters/0/cluster/server");
    let ca = str_at(&kc, "/clusters/0/cluster/certificate-authority-data");
    let dest = secret(
        "as-sa",
        server,
        json!({"bearerToken": token, "tlsClientConfig": {"caData": ca}}),
    );
    let cluster = Cluster::connect_destination(&dest).await.unwrap();
    // The ServiceAccount may not read Secrets: the API server refuses it by name.
    let err = cluster
        .get_object("", "Secret", &ns, "anything")
        .await
        .unwrap_err();
    let shown = err.to_string();
    assert!(
        matches!(err, ClusterError::Forbidden { .. }),
        "wanted Forbidden, got {shown}"
    );
    assert!(shown.contains(&sa), "{shown}");
    assert!(!shown.contains(&token));

    // A wrong token: refused, and the token is not in the error.
    let wrong = "not-a-valid-token-0123456789";
    let dest = secret(
        "wrong",
        server,
        json!({"bearerToken": wrong, "tlsClientConfig": {"caData": ca}}),
    );
    let err = Cluster::connect_destination(&dest).await.unwrap_err();
    let shown = err.to_string();
    assert!(!shown.contains(wrong), "{shown}");
    assert!(
        shown.contains("401") || shown.to_lowercase().contains("unauthorized"),
        "{shown}"
    );
}

#[tokio::test]
async fn an_unreachable_destination_fails_within_the_bound() {
    // No test bed needed: nothing listens on port 1.
    let dest = secret(
        "gone",
        "https://127.0.0.1:1",
        json!({"bearerToken": "t", "tlsClientConfig": {"insecure": true}}),
    );
    let started = std::time::Instant::now();
    let err = Cluster::connect_destination(&dest).await.unwrap_err();
    assert!(
        matches!(err, ClusterError::Unreachable { .. }),
        "wanted Unreachable, got {err}"
    );
    // The connection's own bound (10 s), with room for a busy machine.
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}
