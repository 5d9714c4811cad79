//! Snapshots: the app's objects and the cluster context, as YAML files, with
//! Secret values removed.

mod support;

use plumb_core::argo::Application;
use plumb_core::{INSTANCE_LABEL, LAST_APPLIED_ANNOTATION, TRACKING_ID_ANNOTATION};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{apply, configmap, deployment, namespace, testbed, unique};

fn read_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Deployments of `ns` exactly as they were at `resource_version` (served from etcd's
/// history, whatever was written since).
async fn deployments_at(
    cluster: &plumb_cluster::Cluster,
    ns: &str,
    resource_version: &str,
) -> Vec<Value> {
    let params = kube::api::ListParams {
        resource_version: Some(resource_version.to_string()),
        version_match: Some(kube::api::VersionMatch::Exact),
        ..Default::default()
    };
    let request = kube::core::Request::new(format!("/apis/apps/v1/namespaces/{ns}/deployments"))
        .list(&params)
        .expect("list request");
    let list: Value = cluster
        .client()
        .request(request)
        .await
        .unwrap_or_else(|e| panic!("list Deployments of {ns} at {resource_version}: {e}"));
    list["items"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn snapshot_writes_app_objects_and_context_without_secret_values() {
    let Some(cluster) = testbed("snapshot").await else {
        return;
    };
    let app_name = unique("shop");
    let ns = namespace(&cluster, "snap", json!({"team": "shop"})).await;
    let tracked = json!({INSTANCE_LABEL: app_name});

    let mut by_annotation = configmap(&ns, "by-annotation", json!({}));
    by_annotation["metadata"]["annotations"] =
        json!({TRACKING_ID_ANNOTATION: format!("{app_name}:/ConfigMap:{ns}/by-annotation")});
    let mut web = deployment(&ns, "web", "IfNotPresent");
    web["metadata"]["labels"] = tracked.clone();
    // A Secret as client-side apply leaves it: values in data, stringData and
    // in the last-applied annotation.
    let applied = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds", "namespace": ns},
        "stringData": {"password": "hunter2-plain"}, "data": {"token": "c2VjcmV0LXRva2Vu"}});
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds", "namespace": ns, "labels": tracked,
            "annotations": {LAST_APPLIED_ANNOTATION: applied.to_string()}},
        "data": {"token": "c2VjcmV0LXRva2Vu", "password": "aHVudGVyMi1wbGFpbg=="}});
    let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 3}});
    let webhook_name = unique("plumb-test-snapshot");
    let webhooks = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration", "metadata": {"name": webhook_name}});
    let crd_group = format!("{}.plumb.test", unique("snap"));
    let crd_name = format!("things.{crd_group}");
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name},
        "spec": {"group": crd_group, "scope": "Cluster",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    apply(
        &cluster,
        vec![
            web,
            configmap(&ns, "by-label", tracked.clone()),
            by_annotation,
            configmap(&ns, "not-ours", json!({})),
            secret,
            hpa,
            webhooks,
            crd,
        ],
    )
    .await;

    let out = std::env::temp_dir().join(unique("plumb-snapshot"));
    let app = Application {
        name: app_name.clone(),
        destination_namespace: Some(ns.clone()),
        ..Default::default()
    };
    let summary = cluster.snapshot(Some(&app), &[], &out).await.unwrap();
    eprintln!(
        "snapshot: {} objects in {} kinds, {} secrets redacted, skipped {:?}",
        summary.objects(),
        summary.kinds.len(),
        summary.secrets_redacted,
        summary.skipped
    );
    assert!(summary.skipped.is_empty(), "{:?}", summary.skipped);

    let expect = [
        format!("apps/Deployment/{ns}/web.yaml"),
        format!("core/ConfigMap/{ns}/by-label.yaml"),
        format!("core/ConfigMap/{ns}/by-annotation.yaml"),
        format!("core/Secret/{ns}/creds.yaml"),
        format!("autoscaling/HorizontalPodAutoscaler/{ns}/web.yaml"),
        format!("core/Namespace/{ns}.yaml"),
        "core/Namespace/default.yaml".to_string(),
        format!("admissionregistration.k8s.io/MutatingWebhookConfiguration/{webhook_name}.yaml"),
        format!("apiextensions.k8s.io/CustomResourceDefinition/{crd_name}.yaml"),
    ];
    for file in &expect {
        assert!(out.join(file).is_file(), "missing {file}");
        assert!(
            summary.files.contains(&PathBuf::from(file)),
            "summary lacks {file}"
        );
    }
    assert!(
        !out.join(format!("core/ConfigMap/{ns}/not-ours.yaml"))
            .exists()
    );
    // Served kinds only: kinds the test bed does not serve are skipped, silently. (Kyverno is
    // never installed; Argo CD's CRDs are, by plumb-cli's argocd_group test, on a shared bed.)
    assert!(!out.join("kyverno.io").exists());
    if cluster
        .resource_for("argoproj.io", "Application")
        .await
        .is_err()
    {
        assert!(!out.join("argoproj.io").exists());
    }
    assert_eq!(summary.secrets_redacted, 1);

    // The Secret: keys kept, values gone (also from last-applied).
    let secret_path = out.join(format!("core/Secret/{ns}/creds.yaml"));
    let text = std::fs::read_to_string(&secret_path).unwrap();
    for value in ["c2VjcmV0LXRva2Vu", "aHVudGVyMi1wbGFpbg==", "hunter2-plain"] {
        assert!(!text.contains(value), "secret value {value} in {text}");
    }
    let secret = read_yaml(&secret_path);
    assert_eq!(secret["data"], json!({"password": "", "token": ""}));
    let last: Value = serde_json::from_str(
        secret["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["data"], json!({"token": ""}));
    assert_eq!(last["stringData"], json!({"password": ""}));

    // Other objects are written exactly as listed, managedFields included. Compared with
    // the Deployment as it was at the version the snapshot wrote (an exact-version LIST),
    // not as it is now: kube-controller-manager writes its status and annotations at
    // moments of its own choosing.
    let written = read_yaml(&out.join(format!("apps/Deployment/{ns}/web.yaml")));
    let version = written["metadata"]["resourceVersion"]
        .as_str()
        .expect("the snapshot keeps resourceVersion")
        .to_string();
    let live = deployments_at(&cluster, &ns, &version).await;
    let live = live
        .iter()
        .find(|d| d["metadata"]["name"] == "web")
        .unwrap_or_else(|| panic!("no web in {ns} at {version}"));
    assert_eq!(live["metadata"]["resourceVersion"], version.as_str());
    assert_eq!(
        written["metadata"]["managedFields"],
        live["metadata"]["managedFields"]
    );
    assert_eq!(written["metadata"], live["metadata"]);
    assert_eq!(written["spec"], live["spec"]);
    assert_eq!(written["status"], live["status"]);
    assert_eq!(written["apiVersion"], "apps/v1");
    let namespace_obj = read_yaml(&out.join(format!("core/Namespace/{ns}.yaml")));
    assert_eq!(namespace_obj["metadata"]["labels"]["team"], "shop");

    std::fs::remove_dir_all(&out).unwrap();
}
