//! A real mutating admission webhook (HTTPS, served by this test) changes what
//! the server stores, and what a dry-run apply predicts.

mod support;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use plumb_core::GroupKind;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use support::webhook::{self, Webhook};
use support::{apply, deployment, namespace, testbed, unique};

const LABEL: &str = "policy.lab/image-pull";

fn pull_policy(obj: &Value) -> &str {
    obj.pointer("/spec/template/spec/containers/0/imagePullPolicy")
        .and_then(Value::as_str)
        .unwrap_or("<none>")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_webhook_shows_in_live_objects_and_dry_runs() {
    let Some(cluster) = testbed("mutating_webhook").await else {
        return;
    };
    let hook = Webhook::start().await;
    let selected = webhook::selector_value();
    let labelled = namespace(&cluster, "wh-on", json!({LABEL: selected})).await;
    let plain = namespace(&cluster, "wh-off", json!({})).await;
    let config_name = unique("plumb-test-force-always");
    apply(
        &cluster,
        vec![hook.configuration(&config_name, LABEL, &selected)],
    )
    .await;

    // The API server picks up new webhook configurations asynchronously: wait
    // until a dry run of a new Deployment comes back mutated.
    let mutated = webhook::wait_effective(&cluster, &labelled).await;
    assert!(mutated["metadata"]["managedFields"].is_array());
    assert!(hook.calls.dry_run.load(Ordering::SeqCst) >= 1);

    // Applied for real in the labelled namespace: stored with Always.
    let stored = apply(&cluster, vec![deployment(&labelled, "web", "IfNotPresent")]).await;
    assert_eq!(pull_policy(&stored[0]), "Always");
    let live = cluster
        .list_live(
            &[GroupKind::new("apps", "Deployment")],
            Some(std::slice::from_ref(&labelled)),
            None,
        )
        .await
        .unwrap();
    let web = live
        .iter()
        .find(|o| o["metadata"]["name"] == "web")
        .unwrap();
    assert_eq!(pull_policy(web), "Always");

    // Dry-run of the desired state (IfNotPresent), for an existing object
    // (UPDATE) and a new one (CREATE): the prediction carries the mutation.
    let dry_before = hook.calls.dry_run.load(Ordering::SeqCst);
    let predicted = cluster
        .dry_run_apply(
            vec![
                deployment(&labelled, "web", "IfNotPresent"),
                deployment(&labelled, "new", "IfNotPresent"),
            ],
            "plumb",
            true,
        )
        .await;
    for p in &predicted {
        let p = p.as_ref().unwrap();
        assert_eq!(pull_policy(p), "Always", "{p}");
    }
    assert!(hook.calls.dry_run.load(Ordering::SeqCst) >= dry_before + 2);
    // ... and nothing was stored by the dry run.
    let live = cluster
        .list_live(
            &[GroupKind::new("apps", "Deployment")],
            Some(std::slice::from_ref(&labelled)),
            None,
        )
        .await
        .unwrap();
    assert!(live.iter().all(|o| o["metadata"]["name"] != "new"));

    // Unlabelled namespace: the webhook is not called, IfNotPresent stays.
    let calls_before = hook.calls.total.load(Ordering::SeqCst);
    let stored = apply(&cluster, vec![deployment(&plain, "web", "IfNotPresent")]).await;
    assert_eq!(pull_policy(&stored[0]), "IfNotPresent");
    let predicted = cluster
        .dry_run_apply(
            vec![deployment(&plain, "web", "IfNotPresent")],
            "plumb",
            true,
        )
        .await;
    assert_eq!(pull_policy(predicted[0].as_ref().unwrap()), "IfNotPresent");
    assert_eq!(hook.calls.total.load(Ordering::SeqCst), calls_before);

    // Clean up the cluster-wide registration before the server goes away.
    let api: kube::Api<MutatingWebhookConfiguration> = kube::Api::all(cluster.client().clone());
    api.delete(&config_name, &Default::default()).await.unwrap();
    hook.stop().await;
}

#[test]
fn the_patch_covers_every_container() {
    let d = json!({"spec": {"template": {"spec": {
        "containers": [{"name": "a"}, {"name": "b", "imagePullPolicy": "Never"}],
        "initContainers": [{"name": "i"}]}}}});
    let patch = support::webhook::force_always_patch(&d);
    let mut patched = d.clone();
    json_patch::patch(&mut patched, &patch).unwrap();
    for pointer in [
        "/spec/template/spec/containers/0/imagePullPolicy",
        "/spec/template/spec/containers/1/imagePullPolicy",
        "/spec/template/spec/initContainers/0/imagePullPolicy",
    ] {
        assert_eq!(patched.pointer(pointer).unwrap(), "Always");
    }
}
