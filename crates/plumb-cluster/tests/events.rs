//! Events on the test bed: the recorder's deduplication as client-go's (the same event again
//! is one Event with `count` 2, not two), a new Event after the old one is gone (the PATCH
//! answered 404), and the background [`Recorder`] writing what it was given.

mod support;

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, DeleteParams, ListParams};
use plumb_cluster::events::{AppRef, EventType, EventWriter, Written};
use plumb_cluster::{EventSink, Recorder};
use serde_json::json;
use std::time::Duration;
use support::{apply, configmap, namespace, testbed};

async fn events_of(api: &Api<Event>, name: &str) -> Vec<Event> {
    api.list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .expect("list events")
        .items
}

#[tokio::test]
async fn the_same_event_twice_is_one_event_counted_twice() {
    let Some(cluster) = testbed("the_same_event_twice_is_one_event_counted_twice").await else {
        return;
    };
    let ns = namespace(&cluster, "events", json!({})).await;
    let stored = apply(&cluster, vec![configmap(&ns, "subject", json!({}))]).await;
    let object = AppRef::of(&stored[0]).expect("a reference");
    let writer = EventWriter::new(&cluster, "test-instance");
    let api: Api<Event> = Api::namespaced(cluster.client().clone(), &ns);

    let first = writer
        .write(
            &object,
            EventType::Normal,
            "OperationStarted",
            "initiated sync to abc",
        )
        .await
        .expect("create");
    let Written::Created(name) = first else {
        panic!("a new Event first: {first:?}")
    };
    let again = writer
        .write(
            &object,
            EventType::Normal,
            "OperationStarted",
            "initiated sync to abc",
        )
        .await
        .expect("patch");
    assert_eq!(again, Written::Counted(name.clone(), 2));

    let events = events_of(&api, "subject").await;
    assert_eq!(events.len(), 1, "{events:#?}");
    let e = &events[0];
    assert_eq!(e.metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(e.count, Some(2));
    assert_eq!(e.type_.as_deref(), Some("Normal"));
    assert_eq!(e.reason.as_deref(), Some("OperationStarted"));
    assert_eq!(e.message.as_deref(), Some("initiated sync to abc"));
    let source = e.source.as_ref().expect("source");
    assert_eq!(source.component.as_deref(), Some("plumb-controller"));
    assert_eq!(e.reporting_component.as_deref(), Some("plumb-controller"));
    assert_eq!(e.reporting_instance.as_deref(), Some("test-instance"));
    let involved = &e.involved_object;
    assert_eq!(involved.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(involved.namespace.as_deref(), Some(ns.as_str()));
    assert_eq!(involved.uid.as_deref(), Some(object.uid.as_str()));
    assert_eq!(
        involved.resource_version.as_deref(),
        Some(object.resource_version.as_str())
    );
    let (first_at, last_at) = (
        e.first_timestamp.as_ref().expect("firstTimestamp").0,
        e.last_timestamp.as_ref().expect("lastTimestamp").0,
    );
    assert!(last_at >= first_at);

    // Another type, reason or message is another Event.
    writer
        .write(
            &object,
            EventType::Warning,
            "OperationCompleted",
            "Sync operation to abc failed: no",
        )
        .await
        .expect("create");
    assert_eq!(events_of(&api, "subject").await.len(), 2);

    // The Event gone (expired, deleted): the PATCH's 404 makes a new one.
    api.delete(&name, &DeleteParams::default())
        .await
        .expect("delete event");
    let after = writer
        .write(
            &object,
            EventType::Normal,
            "OperationStarted",
            "initiated sync to abc",
        )
        .await
        .expect("create again");
    let Written::Created(renewed) = after else {
        panic!("created again: {after:?}")
    };
    assert_ne!(renewed, name);
    let events = events_of(&api, "subject").await;
    let counts: Vec<(Option<String>, Option<i32>)> =
        events.iter().map(|e| (e.reason.clone(), e.count)).collect();
    assert_eq!(events.len(), 2, "{counts:?}");
    assert!(
        counts.contains(&(Some("OperationStarted".into()), Some(1))),
        "{counts:?}"
    );
}

#[tokio::test]
async fn the_recorder_writes_in_the_background_and_deduplicates() {
    let Some(cluster) = testbed("the_recorder_writes_in_the_background_and_deduplicates").await
    else {
        return;
    };
    let ns = namespace(&cluster, "events", json!({})).await;
    let stored = apply(&cluster, vec![configmap(&ns, "subject", json!({}))]).await;
    let object = AppRef::of(&stored[0]).expect("a reference");
    let recorder = Recorder::start(&cluster, "test-instance");
    for _ in 0..3 {
        recorder.record(
            &object,
            EventType::Normal,
            "ResourceUpdated",
            "Updated sync status: OutOfSync -> Synced",
        );
    }
    recorder.flush(Duration::from_secs(30)).await;
    let api: Api<Event> = Api::namespaced(cluster.client().clone(), &ns);
    let events = events_of(&api, "subject").await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].count, Some(3));
}
