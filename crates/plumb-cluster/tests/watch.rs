//! The watch-fed live cache on the real test bed: initial LISTs, changes seen
//! within seconds, `live_for` equal to `Cluster::live_for`, kinds added later,
//! 410 Gone, and kinds this user may not read.

mod support;

use plumb_cluster::{Change, ChangeKind, Cluster, ClusterError, ConnectOptions, LiveCache};
use plumb_core::{GroupKind, INSTANCE_LABEL, ResourceKey, TRACKING_ID_ANNOTATION};
use serde_json::{Value, json};
use std::time::Duration;
use support::{apply, configmap, deployment, eventually, names, namespace, testbed, unique};
use tokio::sync::broadcast::{Receiver, error::RecvError};

/// How long a change may take to reach the cache (generous: the machine may be busy).
const WAIT: Duration = support::DEADLINE;

fn cm_kind() -> GroupKind {
    GroupKind::new("", "ConfigMap")
}

fn key(kind: &str, namespace: &str, name: &str) -> ResourceKey {
    ResourceKey {
        group: String::new(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// The next change of `key` of `kind`, skipping others; panics after [`WAIT`].
async fn next_change(rx: &mut Receiver<Change>, key: &ResourceKey, kind: ChangeKind) -> Change {
    let wait = async {
        loop {
            match rx.recv().await {
                Ok(change) if &change.key == key && change.kind == kind => return change,
                Ok(_) | Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => panic!("change channel closed"),
            }
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .unwrap_or_else(|_| panic!("no {kind:?} change for {key} within {WAIT:?}"))
}

/// The changes of `wanted` (in any order), skipping others; panics after [`WAIT`].
/// In `wanted`'s order.
async fn changes(rx: &mut Receiver<Change>, wanted: &[(ResourceKey, ChangeKind)]) -> Vec<Change> {
    let mut found: Vec<Option<Change>> = vec![None; wanted.len()];
    let wait = async {
        while found.iter().any(Option::is_none) {
            match rx.recv().await {
                Ok(change) => {
                    if let Some(i) = wanted
                        .iter()
                        .position(|(k, kind)| *k == change.key && *kind == change.kind)
                    {
                        found[i] = Some(change);
                    }
                }
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => panic!("change channel closed"),
            }
        }
    };
    if tokio::time::timeout(WAIT, wait).await.is_err() {
        let missing: Vec<String> = wanted
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|((k, kind), _)| format!("{kind:?} {k}"))
            .collect();
        panic!("no change within {WAIT:?} for {missing:?}");
    }
    found.into_iter().flatten().collect()
}

/// `group/kind/namespace/name@resourceVersion` of each object, for messages.
fn versions(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            format!(
                "{}@{}",
                ResourceKey::of(o).map(|k| k.sort_key()).unwrap_or_default(),
                o["metadata"]["resourceVersion"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn values(objects: Vec<std::sync::Arc<Value>>) -> Vec<Value> {
    objects.into_iter().map(|o| (*o).clone()).collect()
}

#[tokio::test]
async fn initial_lists_equal_list_live() {
    let Some(cluster) = testbed("watch_initial_list").await else {
        return;
    };
    let a = namespace(&cluster, "watch-a", json!({})).await;
    let b = namespace(&cluster, "watch-b", json!({})).await;
    apply(
        &cluster,
        vec![
            configmap(&a, "cm-1", json!({"x": "1"})),
            configmap(&a, "cm-2", json!({})),
            configmap(&b, "cm-3", json!({})),
        ],
    )
    .await;
    let ns = [a.clone(), b.clone()];
    // KCM (when running) adds kube-root-ca.crt to new namespaces at some point:
    // leave it out of the comparison.
    let ours = |objects: Vec<Value>| -> Vec<Value> {
        objects
            .into_iter()
            .filter(|o| o["metadata"]["name"] != "kube-root-ca.crt")
            .collect()
    };

    let namespace_kind = GroupKind::new("", "Namespace");
    let kinds = [cm_kind(), namespace_kind.clone(), cm_kind()];
    let cache = cluster.watch_cache(&kinds).await.unwrap();
    assert_eq!(cache.kinds(), [cm_kind(), namespace_kind.clone()]);

    let expected = ours(
        cluster
            .list_live(&[cm_kind()], Some(&ns), None)
            .await
            .unwrap(),
    );
    let mut cached = ours(values(cache.list(&cm_kind(), Some(&a))));
    cached.extend(ours(values(cache.list(&cm_kind(), Some(&b)))));
    assert_eq!(names(&cached), ["cm-1", "cm-2", "cm-3"]);
    assert_eq!(names(&cached), names(&expected));
    assert_eq!(cached, expected, "cached ConfigMaps differ from list_live");
    for obj in &cached {
        assert_eq!(obj["apiVersion"], "v1");
        assert_eq!(obj["kind"], "ConfigMap");
    }
    let cm1 = cache.get(&key("ConfigMap", &a, "cm-1")).unwrap();
    let managers = cm1["metadata"]["managedFields"].as_array().unwrap();
    assert!(managers.iter().any(|m| m["manager"] == "plumb-test"));
    assert!(cache.get(&key("ConfigMap", &b, "cm-1")).is_none());

    // Every ConfigMap and Namespace the server lists (other tests run alongside:
    // compare what both views have, by identity). A namespace another test created after
    // the cache's LIST reaches the cache through its watch, a moment later: wait for it
    // (unless it is being deleted, when it may be gone before the cache saw it).
    let all = cluster
        .list_live(&[cm_kind(), namespace_kind.clone()], None, None)
        .await
        .unwrap();
    for obj in &all {
        let k = ResourceKey::of(obj).unwrap();
        if [a.as_str(), b.as_str()].contains(&k.namespace.as_str()) || k.kind == "Namespace" {
            support::wait_until(&format!("{k} reaching the cache"), || async {
                if cache.get(&k).is_some() {
                    return Some(());
                }
                let now = cluster
                    .get_object(&k.group, &k.kind, &k.namespace, &k.name)
                    .await
                    .unwrap();
                now.is_none_or(|o| o.pointer("/metadata/deletionTimestamp").is_some())
                    .then_some(())
            })
            .await;
        }
    }
    // Cluster-scoped: namespaces ignored.
    let ours = cache.get(&key("Namespace", "", &a)).unwrap();
    assert_eq!(ours["apiVersion"], "v1");
    assert_eq!(ours["kind"], "Namespace");
    assert!(cache.get(&key("Namespace", "anything", &a)).is_some());
    assert!(cache.list(&namespace_kind, Some("x")).len() >= 2);
    assert!(cache.len() >= cache.list(&cm_kind(), None).len() + 2);
    assert!(!cache.is_empty());

    // A kind asked for explicitly that the server does not serve fails the cache.
    let err = cluster
        .watch_cache(&[cm_kind(), GroupKind::new("nothing.plumb.test", "Gizmo")])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClusterError::UnknownKind { kind, .. } if kind == "Gizmo"),
        "{err:?}"
    );
    // So does one that cannot be watched.
    let err = cluster
        .watch_cache(&[GroupKind::new(
            "authorization.k8s.io",
            "SubjectAccessReview",
        )])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("cannot be listed and watched"),
        "{err}"
    );
}

#[tokio::test]
async fn changes_reach_the_cache_and_subscribers_within_seconds() {
    let Some(cluster) = testbed("watch_changes").await else {
        return;
    };
    let ns = namespace(&cluster, "watch-changes", json!({})).await;
    let cache = cluster.watch_cache(&[cm_kind()]).await.unwrap();
    let mut rx = cache.subscribe();
    // A second subscriber that never reads must not disturb anything.
    let _idle = cache.subscribe();
    let k = key("ConfigMap", &ns, "watched");

    apply(&cluster, vec![configmap(&ns, "watched", json!({}))]).await;
    let added = next_change(&mut rx, &k, ChangeKind::Added).await;
    assert_eq!(added.object["data"]["key"], "watched");
    assert_eq!(added.object["apiVersion"], "v1");
    assert_eq!(added.object["kind"], "ConfigMap");
    assert!(added.object["metadata"]["managedFields"].is_array());
    assert_eq!(cache.get(&k).unwrap(), added.object);

    let mut changed = configmap(&ns, "watched", json!({}));
    changed["data"]["key"] = json!("changed");
    apply(&cluster, vec![changed]).await;
    let modified = next_change(&mut rx, &k, ChangeKind::Modified).await;
    assert_eq!(modified.object["data"]["key"], "changed");
    assert_eq!(cache.get(&k).unwrap()["data"]["key"], "changed");

    cluster
        .delete_object(&k, plumb_cluster::Propagation::Background)
        .await
        .unwrap();
    let deleted = next_change(&mut rx, &k, ChangeKind::Deleted).await;
    assert_eq!(deleted.object["metadata"]["name"], "watched");
    assert!(cache.get(&k).is_none());

    // live_for with a desired kind the cache does not watch yet starts watching it.
    apply(&cluster, vec![deployment(&ns, "web", "IfNotPresent")]).await;
    let live = cache
        .live_for(
            &[deployment(&ns, "web", "IfNotPresent")],
            None,
            INSTANCE_LABEL,
        )
        .await
        .unwrap();
    assert_eq!(names(&live), ["web"]);
    assert!(
        cache
            .kinds()
            .contains(&GroupKind::new("apps", "Deployment"))
    );

    // stop(): nothing follows the cluster any more.
    cache.stop();
    apply(&cluster, vec![configmap(&ns, "after-stop", json!({}))]).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(cache.get(&key("ConfigMap", &ns, "after-stop")).is_none());
    assert!(
        cache
            .ensure_kind(&GroupKind::new("", "Secret"))
            .await
            .is_err()
    );
}

/// Compares `LiveCache::live_for` with `Cluster::live_for` until they agree
/// (the cache follows the cluster within moments); the agreed result.
async fn agree(
    cluster: &Cluster,
    cache: &LiveCache,
    desired: &[Value],
    app: Option<&str>,
) -> Vec<Value> {
    let last = std::cell::RefCell::new((Vec::new(), Vec::new()));
    let agreed = eventually(WAIT, || async {
        let listed = cluster
            .live_for(desired, app, INSTANCE_LABEL)
            .await
            .unwrap();
        let cached = cache.live_for(desired, app, INSTANCE_LABEL).await.unwrap();
        if listed == cached {
            return Some(cached);
        }
        *last.borrow_mut() = (listed, cached);
        None
    })
    .await;
    agreed.unwrap_or_else(|| {
        let last = last.borrow();
        panic!(
            "LiveCache::live_for never agreed with Cluster::live_for\n listed: {:?}\n cached: {:?}",
            versions(&last.0),
            versions(&last.1)
        )
    })
}

#[tokio::test]
async fn cache_live_for_equals_cluster_live_for() {
    let Some(cluster) = testbed("watch_live_for").await else {
        return;
    };
    let ns1 = namespace(&cluster, "watch-lf1", json!({})).await;
    let ns2 = namespace(&cluster, "watch-lf2", json!({})).await;
    let ns3 = namespace(&cluster, "watch-lf3", json!({})).await;
    let app = unique("shop");
    let tracked = json!({INSTANCE_LABEL: app});
    let role = format!("{app}-reader");

    // The cache first: objects created from now on reach it through the watches.
    let cache = cluster.watch_cache_all().await.unwrap();
    assert!(cache.skipped().is_empty(), "{:?}", cache.skipped());
    let kinds = cache.kinds();
    assert!(kinds.contains(&cm_kind()));
    assert!(kinds.contains(&GroupKind::new("rbac.authorization.k8s.io", "ClusterRole")));
    for never in [
        GroupKind::new("", "Event"),
        GroupKind::new("events.k8s.io", "Event"),
        GroupKind::new("", "Endpoints"),
        GroupKind::new("discovery.k8s.io", "EndpointSlice"),
        GroupKind::new("coordination.k8s.io", "Lease"),
    ] {
        assert!(!kinds.contains(&never), "{never} is never tracked");
    }

    let mut web = deployment(&ns1, "web", "IfNotPresent");
    // The ReplicaSet and Pods get these labels too: tracked, but owned.
    web["metadata"]["labels"] = tracked.clone();
    web["spec"]["template"]["metadata"]["labels"][INSTANCE_LABEL] = json!(app);
    let mut annotated = configmap(&ns1, "annotated", json!({}));
    annotated["metadata"]["annotations"] =
        json!({TRACKING_ID_ANNOTATION: format!("{app}:/ConfigMap:{ns1}/annotated")});
    let mut annotated_elsewhere = configmap(&ns3, "annotated-elsewhere", json!({}));
    annotated_elsewhere["metadata"]["annotations"] = annotated["metadata"]["annotations"].clone();
    let stored = apply(
        &cluster,
        vec![
            configmap(&ns1, "d1", tracked.clone()),
            // Desired, not labelled yet.
            configmap(&ns2, "d2", json!({})),
            web.clone(),
            annotated,
            // Labelled extra of a desired kind in a namespace desired does not use.
            configmap(&ns3, "moved", tracked.clone()),
            // Annotated only, outside desired's namespaces: not found by either.
            annotated_elsewhere,
            configmap(&ns1, "unrelated", json!({})),
            // Tracked extra of another kind, in a desired namespace.
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "extra-secret", "namespace": ns1, "labels": tracked},
                "stringData": {"password": "not-in-logs"}}),
            // Another kind, outside desired's namespaces: not looked for.
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "svc", "namespace": ns3, "labels": tracked},
                "spec": {"ports": [{"port": 80}]}}),
            // Cluster-scoped extra, by label.
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": role, "labels": tracked}, "rules": []}),
        ],
    )
    .await;
    let d1_uid = stored[0]["metadata"]["uid"].as_str().unwrap().to_string();
    // Tracked but owned: never an extra.
    apply(
        &cluster,
        vec![json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "owned-secret", "namespace": ns1, "labels": tracked,
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "d1", "uid": d1_uid}]},
            "stringData": {"password": "not-in-logs"}})],
    )
    .await;

    let desired = vec![
        configmap(&ns1, "d1", tracked.clone()),
        configmap(&ns2, "d2", tracked.clone()),
        configmap(&ns2, "not-created", tracked.clone()),
        web,
    ];
    let live = agree(&cluster, &cache, &desired, Some(&app)).await;
    assert_eq!(
        names(&live),
        [
            "annotated",
            "d1",
            "d2",
            "extra-secret",
            "moved",
            role.as_str(),
            "web"
        ]
    );
    // Sorted by group, kind, namespace, name.
    let keys: Vec<String> = live
        .iter()
        .map(|o| ResourceKey::of(o).unwrap().sort_key())
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    // The owned objects exist and are tracked; they are left out all the same.
    assert!(
        cache
            .get(&key("Secret", &ns1, "owned-secret"))
            .is_some_and(|s| s["metadata"]["labels"][INSTANCE_LABEL] == app.as_str())
    );
    let replica_sets = eventually(WAIT, || async {
        let rs = cache.list(&GroupKind::new("apps", "ReplicaSet"), Some(&ns1));
        (!rs.is_empty()).then_some(rs)
    })
    .await
    .expect("the Deployment got no ReplicaSet (is KCM running?)");
    assert_eq!(
        replica_sets[0]["metadata"]["labels"][INSTANCE_LABEL],
        app.as_str()
    );
    let live = agree(&cluster, &cache, &desired, Some(&app)).await;
    assert!(!names(&live).iter().any(|n| n.starts_with("web-")));

    // Without an app: only what desired names.
    let live = agree(&cluster, &cache, &desired, None).await;
    assert_eq!(names(&live), ["d1", "d2", "web"]);

    // A desired object without a name is an error for both.
    let bad = [json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})];
    assert!(matches!(
        cache.live_for(&bad, Some(&app), INSTANCE_LABEL).await,
        Err(ClusterError::InvalidObject { .. })
    ));
}

/// Installs a namespaced CRD `Widget` in a new group and waits until it is
/// established; its group.
async fn widget_crd(cluster: &Cluster) -> String {
    let group = format!("{}.plumb.test", unique("w"));
    let crd_name = format!("widgets.{group}");
    apply(
        cluster,
        vec![json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": crd_name},
            "spec": {
                "group": group, "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]
            }
        })],
    )
    .await;
    eventually(WAIT, || async {
        let crd = cluster
            .get_object(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "",
                &crd_name,
            )
            .await
            .ok()??;
        crd["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
            .then_some(())
    })
    .await
    .expect("the CRD was never established");
    group
}

fn widget(group: &str, namespace: &str, name: &str, size: u32) -> Value {
    json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"size": size}})
}

fn widget_key(group: &str, namespace: &str, name: &str) -> ResourceKey {
    ResourceKey {
        group: group.into(),
        kind: "Widget".into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// Applies, retrying while a new CRD does not serve yet.
async fn apply_when_served(cluster: &Cluster, objects: Vec<Value>) {
    eventually(WAIT, || async {
        let results = cluster.apply(objects.clone(), "plumb-test", true).await;
        results.iter().all(Result::is_ok).then_some(())
    })
    .await
    .expect("could not apply the custom resources");
}

#[tokio::test]
async fn ensure_kind_watches_a_crd_installed_later() {
    let Some(cluster) = testbed("watch_crd").await else {
        return;
    };
    let ns = namespace(&cluster, "watch-crd", json!({})).await;
    let cache = cluster.watch_cache(&[cm_kind()]).await.unwrap();
    let mut rx = cache.subscribe();
    let group = widget_crd(&cluster).await;
    let widget_kind = GroupKind::new(&group, "Widget");
    assert!(!cache.kinds().contains(&widget_kind));

    // Discovery may lag the Established condition by a moment.
    eventually(WAIT, || async {
        cache.ensure_kind(&widget_kind).await.ok()
    })
    .await
    .expect("ensure_kind kept failing for the new CRD");
    assert!(cache.kinds().contains(&widget_kind));
    assert!(cache.list(&widget_kind, None).is_empty());
    // Again: already watched, nothing to do.
    cache.ensure_kind(&widget_kind).await.unwrap();

    apply_when_served(&cluster, vec![widget(&group, &ns, "w1", 3)]).await;
    let k = widget_key(&group, &ns, "w1");
    let added = next_change(&mut rx, &k, ChangeKind::Added).await;
    assert_eq!(added.object["apiVersion"], format!("{group}/v1"));
    assert_eq!(added.object["kind"], "Widget");
    assert_eq!(added.object["spec"]["size"], 3);
    assert_eq!(cache.list(&widget_kind, Some(&ns)).len(), 1);
    assert_eq!(cache.get(&k).unwrap()["spec"]["size"], 3);
}

#[tokio::test]
async fn gone_relists_and_reconciles() {
    let Some(cluster) = testbed("watch_gone").await else {
        return;
    };
    let ns = namespace(&cluster, "watch-gone", json!({})).await;
    // A kind created now: the server's watch cache starts at the current
    // version, so a WATCH from version 1 is answered 410 Gone (for kinds as old
    // as the test bed, the server still replays everything from 1).
    let group = widget_crd(&cluster).await;
    let kind = GroupKind::new(&group, "Widget");
    apply_when_served(
        &cluster,
        vec![
            widget(&group, &ns, "keep", 1),
            widget(&group, &ns, "change", 1),
            widget(&group, &ns, "remove", 1),
        ],
    )
    .await;
    let cache = eventually(WAIT, || async {
        cluster.watch_cache(std::slice::from_ref(&kind)).await.ok()
    })
    .await
    .expect("could not watch the new kind");
    let mut rx = cache.subscribe();
    let keep = cache.get(&widget_key(&group, &ns, "keep")).unwrap();
    assert!(cache.get(&widget_key(&group, &ns, "remove")).is_some());

    // While the cache does not follow the cluster, the cluster changes.
    assert!(cache.pause_kind_for_test(&kind));
    apply(
        &cluster,
        vec![
            widget(&group, &ns, "change", 2),
            widget(&group, &ns, "new", 1),
        ],
    )
    .await;
    cluster
        .delete_object(
            &widget_key(&group, &ns, "remove"),
            plumb_cluster::Propagation::Background,
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(cache.get(&widget_key(&group, &ns, "new")).is_none());
    assert_eq!(cache.relists_for_test(&kind), 0);

    // A WATCH from a version long gone: 410, LIST again, reconcile.
    assert!(cache.resume_kind_for_test(&kind, "1"));
    let got = changes(
        &mut rx,
        &[
            (widget_key(&group, &ns, "change"), ChangeKind::Modified),
            (widget_key(&group, &ns, "new"), ChangeKind::Added),
            (widget_key(&group, &ns, "remove"), ChangeKind::Deleted),
        ],
    )
    .await;
    assert_eq!(got[0].object["spec"]["size"], 2);
    assert_eq!(got[1].object["kind"], "Widget");
    assert_eq!(got[2].object["metadata"]["name"], "remove");
    assert_eq!(
        cache.relists_for_test(&kind),
        1,
        "no re-LIST: was there no 410?"
    );
    assert!(cache.get(&widget_key(&group, &ns, "remove")).is_none());
    assert_eq!(
        cache.get(&widget_key(&group, &ns, "change")).unwrap()["spec"]["size"],
        2
    );
    assert_eq!(cache.list(&kind, Some(&ns)).len(), 3);
    // Unchanged objects are kept as they were (same version, same content; `get`
    // parses a new `Value` each time), and not announced.
    assert_eq!(keep, cache.get(&widget_key(&group, &ns, "keep")).unwrap());
    while let Ok(change) = rx.try_recv() {
        assert_ne!(change.key, widget_key(&group, &ns, "keep"), "{change:?}");
    }

    // And the cache follows the cluster again, from the new LIST's version.
    apply(&cluster, vec![widget(&group, &ns, "later", 1)]).await;
    next_change(
        &mut rx,
        &widget_key(&group, &ns, "later"),
        ChangeKind::Added,
    )
    .await;
    assert_eq!(cache.relists_for_test(&kind), 1);
}

/// A WATCH answered with a `410 Gone` ERROR event (by `support::proxy`, in front of the
/// test bed) after a change the watch would have carried: the cache LISTs again and has the
/// change, then follows the cluster from the new LIST.
#[tokio::test]
async fn a_watch_answered_410_gone_relists_without_missing_a_change() {
    let Some(cluster) = testbed("watch_gone_event").await else {
        return;
    };
    let ns = namespace(&cluster, "watch-gone-event", json!({})).await;
    apply(&cluster, vec![configmap(&ns, "before", json!({}))]).await;
    let proxy = support::proxy::Proxy::start(support::proxy::Rule {
        method: axum::http::Method::GET,
        path: format!("/namespaces/{ns}/configmaps"),
        refusals: 0,
        retry_after: 0,
        race: None,
        watch_gone: Some((
            format!("/api/v1/namespaces/{ns}/configmaps"),
            configmap(&ns, "while-gone", json!({})),
        )),
    })
    .await;
    let through = proxy.connect().await;
    let cache = through
        .watch_cache_in(&[cm_kind()], &ns)
        .await
        .expect("watch through the proxy");
    let mut rx = cache.subscribe();
    assert!(cache.get(&key("ConfigMap", &ns, "before")).is_some());
    // The object created just before the 410 is there after the re-LIST.
    eventually(WAIT, || async {
        cache.get(&key("ConfigMap", &ns, "while-gone")).map(|_| ())
    })
    .await
    .expect("the change made before the 410 was missed");
    assert_eq!(cache.relists_for_test(&cm_kind()), 1, "one re-LIST");
    assert!(
        proxy.seen().iter().any(|s| s.status == 410),
        "the proxy answered a WATCH with 410"
    );
    // And the cache follows the cluster again.
    apply(&cluster, vec![configmap(&ns, "after", json!({}))]).await;
    next_change(&mut rx, &key("ConfigMap", &ns, "after"), ChangeKind::Added).await;
    assert_eq!(cache.relists_for_test(&cm_kind()), 1);
}

/// The test bed's admin kubeconfig impersonating `user`, in a temporary file.
fn impersonating(user: &str) -> (tempdir::Dir, std::path::PathBuf) {
    let admin = std::env::var("KUBECONFIG").expect("KUBECONFIG");
    let text = std::fs::read_to_string(&admin).unwrap();
    let mut config: Value = serde_saphyr::from_str(&text).unwrap();
    for u in config["users"].as_array_mut().unwrap() {
        u["user"]["as"] = json!(user);
    }
    let dir = tempdir::Dir::new(&unique("plumb-watch"));
    let path = dir.0.join("kubeconfig");
    std::fs::write(&path, serde_json::to_string(&config).unwrap()).unwrap();
    (dir, path)
}

mod tempdir {
    /// A directory removed on drop.
    pub struct Dir(pub std::path::PathBuf);

    impl Dir {
        pub fn new(name: &str) -> Dir {
            let path = std::env::temp_dir().join(name);
            std::fs::create_dir_all(&path).unwrap();
            Dir(path)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[tokio::test]
async fn kinds_this_user_may_not_read_are_skipped_unless_asked_for() {
    let Some(admin) = testbed("watch_forbidden").await else {
        return;
    };
    let user = unique("cm-watcher");
    apply(
        &admin,
        vec![
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": user},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": user},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
        ],
    )
    .await;
    let (_dir, kubeconfig) = impersonating(&user);
    let cluster = Cluster::connect(&ConnectOptions {
        kubeconfig: Some(kubeconfig),
        context: None,
    })
    .await
    .unwrap();

    // RBAC reaches the authorizer quickly, but not instantly.
    let cache = eventually(WAIT, || async {
        let cache = cluster.watch_cache_all().await.unwrap();
        cache.kinds().contains(&cm_kind()).then_some(cache)
    })
    .await
    .expect("ConfigMaps never became watchable");
    assert_eq!(cache.kinds(), [cm_kind()]);
    let skipped = cache.skipped();
    assert!(
        skipped
            .iter()
            .any(|(gk, reason)| *gk == GroupKind::new("", "Secret") && reason.contains("forbidden")),
        "{skipped:?}"
    );

    // Asked for explicitly, a forbidden kind is an error.
    let err = cluster
        .watch_cache(&[cm_kind(), GroupKind::new("", "Secret")])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClusterError::Forbidden { resource, .. } if resource == "secrets"),
        "{err:?}"
    );
    let err = cache
        .ensure_kind(&GroupKind::new("", "Secret"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClusterError::Forbidden { .. }), "{err:?}");
}

/// Memory per cached ConfigMap (resident set growth, so approximate): run with
/// `cargo test -p plumb-cluster --test watch -- --ignored --nocapture memory`.
#[tokio::test]
#[ignore = "creates thousands of objects; run on its own to measure"]
async fn memory_per_cached_configmap() {
    let Some(cluster) = testbed("watch_memory").await else {
        return;
    };
    let n: usize = std::env::var("WATCH_MEMORY_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let ns = namespace(&cluster, "watch-memory", json!({})).await;
    let app = unique("mem");
    let objects: Vec<Value> = (0..n)
        .map(|i| configmap(&ns, &format!("cm-{i:05}"), json!({INSTANCE_LABEL: app})))
        .collect();
    for chunk in objects.chunks(500) {
        apply(&cluster, chunk.to_vec()).await;
    }
    // A typical app: 50 ConfigMaps in a namespace of its own.
    let app_ns = namespace(&cluster, "watch-memory-app", json!({})).await;
    let app50 = unique("app50");
    let app50_desired: Vec<Value> = (0..50)
        .map(|i| {
            configmap(
                &app_ns,
                &format!("cm-{i:02}"),
                json!({INSTANCE_LABEL: app50}),
            )
        })
        .collect();
    apply(&cluster, app50_desired.clone()).await;
    let sample = cluster
        .get_object("", "ConfigMap", &ns, "cm-00000")
        .await
        .unwrap()
        .unwrap();
    let json_size = serde_json::to_string(&sample).unwrap().len();

    fn rss_bytes() -> usize {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }
    let before = rss_bytes();
    let started = std::time::Instant::now();
    let cache = cluster.watch_cache(&[cm_kind()]).await.unwrap();
    let listed_in = started.elapsed();
    let after = rss_bytes();
    let cached = cache.len();
    assert!(cached >= n);
    eprintln!(
        "{cached} ConfigMaps cached in {listed_in:?}; resident set +{} KiB: {} bytes per \
         ConfigMap (one is {json_size} bytes of JSON)",
        (after - before) / 1024,
        (after - before) / cached
    );
    // What one app's live_for costs on that cache: its namespace, plus a label
    // scan of every ConfigMap.
    let desired = vec![configmap(&ns, "cm-00000", json!({INSTANCE_LABEL: app}))];
    let started = std::time::Instant::now();
    let live = cache
        .live_for(&desired, Some(&app), INSTANCE_LABEL)
        .await
        .unwrap();
    eprintln!(
        "LiveCache::live_for: {} objects in {:?}",
        live.len(),
        started.elapsed()
    );
    let started = std::time::Instant::now();
    let listed = cluster
        .live_for(&desired, Some(&app), INSTANCE_LABEL)
        .await
        .unwrap();
    eprintln!(
        "Cluster::live_for: {} objects in {:?}",
        listed.len(),
        started.elapsed()
    );
    assert_eq!(live.len(), n);
    assert_eq!(listed.len(), n);
    // A small app on the same cache: the label scan of every ConfigMap dominates.
    let small = unique("small");
    let desired = vec![configmap(&ns, "cm-00001", json!({INSTANCE_LABEL: small}))];
    let started = std::time::Instant::now();
    let live = cache
        .live_for(&desired, Some(&small), INSTANCE_LABEL)
        .await
        .unwrap();
    eprintln!(
        "LiveCache::live_for, small app: {} object in {:?}",
        live.len(),
        started.elapsed()
    );

    // The typical app: 50 objects in a namespace of their own, among all the
    // cached ConfigMaps (the label index is built by now).
    let mut timings = Vec::new();
    for _ in 0..21 {
        let started = std::time::Instant::now();
        let live = cache
            .live_for(&app50_desired, Some(&app50), INSTANCE_LABEL)
            .await
            .unwrap();
        timings.push(started.elapsed());
        assert_eq!(live.len(), 50);
    }
    timings.sort();
    eprintln!(
        "LiveCache::live_for, 50-object app among {cached} ConfigMaps: median {:?} \
         (min {:?}, max {:?})",
        timings[timings.len() / 2],
        timings[0],
        timings[timings.len() - 1]
    );
}
