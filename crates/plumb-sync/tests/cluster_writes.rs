//! plumb-cluster's writes a sync uses (write.rs), on the test bed: replace, create,
//! delete, namespaces, Applications; errors are one line.

mod common;

use common::install_crd;
use common::support::{namespace, testbed, unique};
use plumb_cluster::{ClusterError, Deleted, Propagation};
use plumb_core::ResourceKey;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_delete_namespace_and_application_errors() {
    let Some(cluster) = testbed("cluster_writes").await else {
        return;
    };
    install_crd(&cluster).await;
    let ns = namespace(&cluster, "writes", json!({})).await;
    let cm = |v: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "r", "namespace": ns}, "data": {"v": v}})
    };
    // Replace of an absent object creates it; then it is a PUT.
    let created = cluster
        .replace_object(&cm("1"), "plumb")
        .await
        .expect("create");
    assert_eq!(created["data"]["v"], "1");
    let replaced = cluster
        .replace_object(&cm("2"), "plumb")
        .await
        .expect("replace");
    assert_eq!(replaced["data"]["v"], "2");
    assert_ne!(
        created["metadata"]["resourceVersion"],
        replaced["metadata"]["resourceVersion"]
    );
    let key = ResourceKey {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: ns.clone(),
        name: "r".into(),
    };
    assert_eq!(
        cluster
            .delete_object(&key, Propagation::Background)
            .await
            .unwrap(),
        Deleted::Deleted
    );
    assert_eq!(
        cluster
            .delete_object(&key, Propagation::Foreground)
            .await
            .unwrap(),
        Deleted::NotFound
    );
    assert!(
        cluster
            .get_object("", "ConfigMap", &ns, "r")
            .await
            .unwrap()
            .is_none()
    );

    // Namespaces.
    let fresh = unique("writes-ns");
    assert!(cluster.ensure_namespace(&fresh, "plumb").await.unwrap());
    assert!(!cluster.ensure_namespace(&fresh, "plumb").await.unwrap());

    // Errors: one line, naming what failed.
    let unknown = ResourceKey {
        group: "example.invalid".into(),
        kind: "Widget".into(),
        namespace: ns.clone(),
        name: "w".into(),
    };
    let e = cluster
        .delete_object(&unknown, Propagation::Background)
        .await
        .unwrap_err();
    assert!(matches!(e, ClusterError::UnknownKind { .. }), "{e}");
    assert!(e.to_string().contains("Widget"));
    assert!(
        cluster
            .get_application(&ns, "missing")
            .await
            .unwrap()
            .is_none()
    );
    let e = cluster
        .patch_application_status(&ns, "missing", &json!({"status": {}}))
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with("API error 404"), "{text}");
    assert!(!text.contains('\n'));
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns}});
    let e = cluster.replace_object(&bad, "plumb").await.unwrap_err();
    assert!(e.to_string().contains("metadata.name"), "{e}");

    for name in [fresh, ns] {
        let _ = cluster
            .delete_object(
                &ResourceKey {
                    group: String::new(),
                    kind: "Namespace".into(),
                    namespace: String::new(),
                    name,
                },
                Propagation::Background,
            )
            .await;
    }
}
