//! `deploy/` on the test bed: the CRD is Established, the controller's RBAC allows what a
//! sync needs (and not more), the Deployment is accepted, and an Argo CD Application converted
//! by changing its apiVersion is accepted, with a patchable status subresource.

mod common;

use common::support::{apply, namespace, testbed, wait_until};
use common::{deploy_objects, install_crd};
use serde_json::{Value, json};

/// Whether the controller's ServiceAccount may do `verb` on `resource` (SubjectAccessReview).
async fn allowed(
    cluster: &plumb_cluster::Cluster,
    verb: &str,
    group: &str,
    resource: &str,
    subresource: &str,
) -> bool {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:plumb-system:plumb-controller",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:plumb-system", "system:authenticated"],
            "resourceAttributes": {
                "verb": verb, "group": group, "resource": resource,
                "subresource": subresource, "namespace": "somewhere"
            }
        }
    });
    let answer = cluster
        .create_object(&review, "plumb-test")
        .await
        .expect("SubjectAccessReview");
    answer.pointer("/status/allowed") == Some(&Value::Bool(true))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_manifests_install_and_accept_applications() {
    let Some(cluster) = testbed("deploy_manifests").await else {
        return;
    };
    install_crd(&cluster).await;
    let rbac = apply(&cluster, deploy_objects("rbac.yaml")).await;
    assert_eq!(
        rbac.len(),
        6,
        "namespace, service account, cluster role and binding, cluster-Secret role and binding"
    );
    let controller = apply(&cluster, deploy_objects("controller.yaml")).await;
    assert_eq!(controller[0]["spec"]["replicas"], 2);
    assert_eq!(
        controller[0]["spec"]["template"]["spec"]["serviceAccountName"],
        "plumb-controller"
    );
    let container = &controller[0]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["args"],
        json!(["controller", "--listen=0.0.0.0:8082"])
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["port"], "metrics");
    assert_eq!(container["ports"][0]["containerPort"], 8082);

    // Least privilege, as the API server's authorizer sees it.
    for (verb, group, resource, sub) in [
        ("list", "apps", "deployments", ""),
        ("watch", "", "secrets", ""),
        ("patch", "apps", "deployments", ""),
        ("update", "apps", "deployments", ""),
        ("delete", "", "configmaps", ""),
        ("create", "", "namespaces", ""),
        ("patch", "plumb.dev", "applications", "status"),
        ("list", "plumb.dev", "applications", ""),
        ("create", "coordination.k8s.io", "leases", ""),
        ("update", "coordination.k8s.io", "leases", ""),
    ] {
        // New RBAC objects reach the authorizer's cache quickly, but not at once.
        wait_until(
            &format!("the controller being allowed to {verb} {resource}/{sub} in {group:?}"),
            || async {
                allowed(&cluster, verb, group, resource, sub)
                    .await
                    .then_some(())
            },
        )
        .await;
    }
    for (verb, group, resource) in [
        ("impersonate", "", "users"),
        ("escalate", "rbac.authorization.k8s.io", "clusterroles"),
        ("bind", "rbac.authorization.k8s.io", "clusterroles"),
        ("deletecollection", "", "configmaps"),
    ] {
        assert!(
            !allowed(&cluster, verb, group, resource, "").await,
            "the controller must not be allowed to {verb} {resource}"
        );
    }

    // An Argo CD Application (the shipped example), converted by changing its apiVersion.
    let ns = namespace(&cluster, "deploy-apps", json!({})).await;
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/payments/app.yaml");
    let mut app = plumb_render::load_file(&path)
        .expect("example app")
        .remove(0)
        .object;
    assert_eq!(app["apiVersion"], "argoproj.io/v1alpha1");
    app["apiVersion"] = json!("plumb.dev/v1alpha1");
    app["metadata"]["namespace"] = json!(ns);
    let stored = apply(&cluster, vec![app.clone()]).await.remove(0);
    // Everything Argo CD's spec says survives (no field pruned by the structural schema).
    assert_eq!(stored["spec"], app["spec"]);

    let status = json!({"status": {
        "sync": {"status": "OutOfSync", "revision": "b5e2be1", "comparedTo": {"source": app["spec"]["source"]}},
        "health": {"status": "Healthy"},
        "history": [{"id": 0, "revision": "b5e2be1", "deployedAt": "2026-09-22T19:57:06Z",
                     "source": app["spec"]["source"], "initiatedBy": {"automated": true}}],
        "operationState": {"phase": "Succeeded", "message": "successfully synced (all tasks run)"}
    }});
    let patched = cluster
        .patch_application_status(&ns, "payments-prod", &status)
        .await
        .expect("status patch");
    assert_eq!(patched["status"]["sync"]["status"], "OutOfSync");
    assert_eq!(patched["status"]["history"][0]["revision"], "b5e2be1");
    // The status subresource does not change the spec, and vice versa.
    let spec_patch =
        json!({"spec": {"revisionHistoryLimit": 3}, "status": {"health": {"status": "Degraded"}}});
    let patched = cluster
        .patch_application(&ns, "payments-prod", &spec_patch)
        .await
        .expect("spec patch");
    assert_eq!(patched["spec"]["revisionHistoryLimit"], 3);
    assert_eq!(patched["status"]["health"]["status"], "Healthy");

    let listed = cluster.list_applications(Some(&ns)).await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["kind"], "Application");

    // A spec the schema refuses: destination missing, a wrong type.
    let mut bad = app.clone();
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["syncPolicy"]["automated"]["prune"] = json!("yes");
    let refused = cluster.apply(vec![bad], "plumb-test", true).await.remove(0);
    let message = refused.expect_err("schema validation").to_string();
    assert!(message.contains("prune"), "{message}");

    // Clean up what is not namespaced to the test (the controller Deployment stays harmless:
    // no kubelet runs it), and the namespace.
    let _ = cluster
        .delete_object(
            &plumb_core::ResourceKey {
                group: String::new(),
                kind: "Namespace".into(),
                namespace: String::new(),
                name: ns,
            },
            plumb_cluster::Propagation::Background,
        )
        .await;
}
