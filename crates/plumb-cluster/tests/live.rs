//! LIST per kind, live objects for a diff, managedFields written through the
//! scale subresource, and CRDs appearing in discovery — on the real test bed.

mod support;

use plumb_cluster::ClusterError;
use plumb_core::{GroupKind, INSTANCE_LABEL, TRACKING_ID_ANNOTATION};
use serde_json::{Value, json};
use support::{apply, configmap, deployment, eventually, names, namespace, testbed, unique};

#[tokio::test]
async fn list_live_lists_each_kind_with_api_version_and_kind() {
    let Some(cluster) = testbed("list_live").await else {
        return;
    };
    let a = namespace(&cluster, "live-a", json!({})).await;
    let b = namespace(&cluster, "live-b", json!({})).await;
    let labels = json!({"plumb.test/set": "one"});
    apply(
        &cluster,
        vec![
            configmap(&a, "cm-1", labels.clone()),
            configmap(&a, "cm-2", labels.clone()),
            configmap(&b, "cm-3", labels.clone()),
            configmap(&b, "cm-unlabelled", json!({})),
            deployment(&a, "web", "IfNotPresent"),
        ],
    )
    .await;

    let kinds = [
        GroupKind::new("", "ConfigMap"),
        GroupKind::new("apps", "Deployment"),
    ];
    let ns = [a.clone(), b.clone()];
    let live = cluster.list_live(&kinds, Some(&ns), None).await.unwrap();
    // KCM (when running) adds kube-root-ca.crt to every namespace: ignore it.
    let live: Vec<Value> = live
        .into_iter()
        .filter(|o| o["metadata"]["name"] != "kube-root-ca.crt")
        .collect();
    assert_eq!(
        names(&live),
        ["cm-1", "cm-2", "cm-3", "cm-unlabelled", "web"]
    );
    for obj in &live {
        let expected = if obj["metadata"]["name"] == "web" {
            ("apps/v1", "Deployment")
        } else {
            ("v1", "ConfigMap")
        };
        assert_eq!(obj["apiVersion"], expected.0, "{obj}");
        assert_eq!(obj["kind"], expected.1, "{obj}");
        // managedFields are kept: the test's field manager applied them.
        let managers = obj["metadata"]["managedFields"].as_array().unwrap();
        assert!(
            managers.iter().any(|m| m["manager"] == "plumb-test"),
            "{obj}"
        );
    }

    // A label selector narrows each LIST.
    let selected = cluster
        .list_live(&kinds[..1], Some(&ns), Some("plumb.test/set=one"))
        .await
        .unwrap();
    assert_eq!(names(&selected), ["cm-1", "cm-2", "cm-3"]);

    // All namespaces: one LIST per kind still finds them.
    let everywhere = cluster
        .list_live(&kinds[..1], None, Some("plumb.test/set=one"))
        .await
        .unwrap();
    let ours: Vec<Value> = everywhere
        .into_iter()
        .filter(|o| {
            o["metadata"]["namespace"] == a.as_str() || o["metadata"]["namespace"] == b.as_str()
        })
        .collect();
    assert_eq!(names(&ours), ["cm-1", "cm-2", "cm-3"]);
}

#[tokio::test]
async fn live_for_finds_desired_objects_and_tracked_extras() {
    let Some(cluster) = testbed("live_for").await else {
        return;
    };
    let ns = namespace(&cluster, "livefor", json!({})).await;
    let elsewhere = namespace(&cluster, "livefor-other", json!({})).await;
    let app = unique("shop");
    let tracked = json!({INSTANCE_LABEL: app});
    let mut annotated = configmap(&ns, "annotated-extra", json!({}));
    annotated["metadata"]["annotations"] =
        json!({TRACKING_ID_ANNOTATION: format!("{app}:/ConfigMap:{ns}/annotated-extra")});
    apply(
        &cluster,
        vec![
            // Desired, live, not labelled yet (first sync pending): still found.
            configmap(&ns, "unlabelled-desired", json!({})),
            // Not desired, but tracked: extras (to prune).
            configmap(&ns, "labelled-extra", tracked.clone()),
            annotated,
            configmap(&elsewhere, "moved-away", tracked.clone()),
            // Neither desired nor tracked: not ours.
            configmap(&ns, "unrelated", json!({})),
        ],
    )
    .await;
    let desired = vec![
        configmap(&ns, "unlabelled-desired", tracked.clone()),
        configmap(&ns, "not-yet-created", tracked.clone()),
    ];
    let live = cluster
        .live_for(&desired, Some(&app), INSTANCE_LABEL)
        .await
        .unwrap();
    assert_eq!(
        names(&live),
        [
            "annotated-extra",
            "labelled-extra",
            "moved-away",
            "unlabelled-desired"
        ]
    );
    assert!(
        live.iter()
            .all(|o| o["apiVersion"] == "v1" && o["kind"] == "ConfigMap")
    );

    // Without an app: only what desired names.
    let live = cluster
        .live_for(&desired, None, INSTANCE_LABEL)
        .await
        .unwrap();
    assert_eq!(names(&live), ["unlabelled-desired"]);
}

#[tokio::test]
async fn replicas_written_through_the_scale_subresource_are_owned_by_that_manager() {
    let Some(cluster) = testbed("scale_subresource").await else {
        return;
    };
    let ns = namespace(&cluster, "scale", json!({})).await;
    apply(&cluster, vec![deployment(&ns, "web", "IfNotPresent")]).await;

    // What the HPA controller does: PATCH .../deployments/web/scale as
    // kube-controller-manager.
    let request = kube::core::Request::new(format!("/apis/apps/v1/namespaces/{ns}/deployments"))
        .patch_subresource(
            "scale",
            "web",
            &kube::api::PatchParams {
                field_manager: Some("kube-controller-manager".into()),
                ..Default::default()
            },
            &kube::api::Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .unwrap();
    let scale: Value = cluster.client().request(request).await.unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);

    let live = cluster
        .list_live(
            &[GroupKind::new("apps", "Deployment")],
            Some(std::slice::from_ref(&ns)),
            None,
        )
        .await
        .unwrap();
    let web = live
        .iter()
        .find(|o| o["metadata"]["name"] == "web")
        .unwrap();
    assert_eq!(web["spec"]["replicas"], 5);
    let managed = web["metadata"]["managedFields"].as_array().unwrap();
    // The real kube-controller-manager, when running, has an entry of its own under the
    // same name (its status writes, subresource `status`): the scale entry is the one by
    // subresource.
    let kcm = managed
        .iter()
        .find(|m| m["manager"] == "kube-controller-manager" && m["subresource"] == "scale")
        .unwrap_or_else(|| panic!("no kube-controller-manager scale entry: {managed:?}"));
    assert!(
        managed
            .iter()
            .filter(|m| m["manager"] == "kube-controller-manager" && m["subresource"] != "scale")
            .all(|m| m["subresource"] == "status"),
        "{managed:?}"
    );
    assert_eq!(kcm["operation"], "Update");
    assert!(
        kcm.pointer("/fieldsV1/f:spec/f:replicas").is_some(),
        "{kcm}"
    );
    // And the applier no longer owns replicas (it was taken over by an update).
    let applier = managed
        .iter()
        .find(|m| m["manager"] == "plumb-test")
        .unwrap();
    assert!(
        applier.pointer("/fieldsV1/f:spec/f:replicas").is_none(),
        "{applier}"
    );
}

#[tokio::test]
async fn custom_resources_appear_after_their_crd_and_unknown_kinds_are_named() {
    let Some(cluster) = testbed("crd").await else {
        return;
    };
    let ns = namespace(&cluster, "crd", json!({})).await;
    let group = format!("{}.plumb.test", unique("g"));
    // Discovery is cached before the CRD exists: the later lookups must refresh it.
    assert!(
        cluster
            .discover()
            .await
            .unwrap()
            .get(&group, "Widget")
            .is_none()
    );
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]
        }
    });
    apply(&cluster, vec![crd]).await;

    let info = eventually(support::DEADLINE, || async {
        cluster.resource_for(&group, "Widget").await.ok()
    })
    .await
    .expect("Widget never appeared in discovery");
    assert_eq!(info.plural, "widgets");
    assert_eq!(info.version, "v1");
    assert!(info.namespaced);
    assert!(info.supports("list") && info.supports("patch"));
    assert!(
        cluster
            .discover()
            .await
            .unwrap()
            .get(&group, "Widget")
            .is_some()
    );

    // The CRD may be in discovery a moment before it serves: retry the create.
    let widget = json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
        "metadata": {"name": "w1", "namespace": ns}, "spec": {"size": 3}});
    eventually(support::DEADLINE, || async {
        cluster
            .apply(vec![widget.clone()], "plumb-test", true)
            .await
            .remove(0)
            .ok()
    })
    .await
    .expect("could not create the Widget");

    let live = cluster
        .list_live(
            &[GroupKind::new(&group, "Widget")],
            Some(std::slice::from_ref(&ns)),
            None,
        )
        .await
        .unwrap();
    assert_eq!(names(&live), ["w1"]);
    assert_eq!(live[0]["apiVersion"], format!("{group}/v1"));
    assert_eq!(live[0]["kind"], "Widget");
    assert_eq!(live[0]["spec"]["size"], 3);

    // A kind without a CRD: UnknownKind naming it, for lookups and LISTs alike.
    let err = cluster.resource_for(&group, "Gadget").await.unwrap_err();
    assert_eq!(
        err,
        ClusterError::UnknownKind {
            group: group.clone(),
            kind: "Gadget".into()
        }
    );
    assert!(err.to_string().contains("Gadget"), "{err}");
    let err = cluster
        .list_live(&[GroupKind::new("nothing.plumb.test", "Gizmo")], None, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Gizmo") && err.to_string().contains("nothing.plumb.test"));
    let results = cluster
        .dry_run_apply(
            vec![json!({"apiVersion": "nothing.plumb.test/v1", "kind": "Gizmo", "metadata": {"name": "g"}})],
            "plumb",
            false,
        )
        .await;
    assert!(matches!(results[0], Err(ClusterError::UnknownKind { .. })));

    // A served kind at a version the server does not serve: said plainly.
    let mut old = widget.clone();
    old["apiVersion"] = json!(format!("{group}/v9"));
    let err = cluster
        .dry_run_apply(vec![old], "plumb", false)
        .await
        .remove(0)
        .unwrap_err();
    assert!(
        matches!(&err, ClusterError::Api { code: 404, message } if message.contains("not served")),
        "{err:?}"
    );
}

#[tokio::test]
async fn lists_are_read_in_pages() {
    let Some(cluster) = testbed("lists_are_read_in_pages").await else {
        return;
    };
    let ns = namespace(&cluster, "paged", json!({})).await;
    let objects: Vec<Value> = (0..7)
        .map(|i| configmap(&ns, &format!("cm-{i}"), json!({"tier": "paged"})))
        .collect();
    apply(&cluster, objects).await;
    let kinds = [GroupKind::new("", "ConfigMap")];
    let one_page = cluster
        .list_live(&kinds, Some(std::slice::from_ref(&ns)), Some("tier=paged"))
        .await
        .expect("list");
    assert_eq!(cluster.list_page_size(), plumb_cluster::LIST_PAGE_SIZE);
    cluster.set_list_page_size(3);
    let paged = cluster
        .list_live(&kinds, Some(std::slice::from_ref(&ns)), Some("tier=paged"))
        .await
        .expect("paged list");
    cluster.set_list_page_size(plumb_cluster::LIST_PAGE_SIZE);
    assert_eq!(names(&paged).len(), 7, "three pages of 3, 3 and 1");
    assert_eq!(names(&paged), names(&one_page));
}
