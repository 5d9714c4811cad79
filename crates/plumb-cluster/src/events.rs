//! Kubernetes Events on Applications (core/v1 `Event`), recorded as client-go's
//! `EventRecorder` does.
//!
//! - [`EventSink`] is what callers see: `record(app, type, reason, message)`, which never
//!   blocks and never fails. [`Recorder`] (the controller's) queues the event (a bounded
//!   queue of [`QUEUE`] events; when it is full the event is dropped, as client-go's
//!   broadcaster drops) and one background task writes it; a failed write is logged to
//!   stderr at most once a minute and otherwise ignored, so an Event can never hold up or
//!   fail a reconcile.
//! - Deduplication (client-go's `EventLogger`): the same object, type, reason and message
//!   again within the cache's memory is not a new Event but a merge PATCH of the existing
//!   one: `count + 1` and `lastTimestamp` now. A PATCH answered 404 (the Event expired or
//!   was deleted) creates a new one. The cache holds [`DEDUP_CACHE`] entries and forgets
//!   the least recently seen.
//! - Events are written in the Application's namespace, `involvedObject` naming it by
//!   apiVersion, kind, namespace, name, uid and resourceVersion, `source.component` and
//!   `reportingComponent` [`COMPONENT`], `reportingInstance` the controller's identity.
//! - Messages are folded to one line and cut at [`MESSAGE_LIMIT`] bytes. They must carry
//!   no secret values: callers pass only text already fit for the Application's status
//!   (operation messages, status names, revisions).
//!
//! [`EventWriter::write`] does one write at once and returns what it did (tests of the
//! deduplication use it directly); `plumb-cluster`'s `tests/events.rs` runs it on the test
//! bed. With the `memory` feature, `memory::CollectedEvents` is a sink that keeps
//! the events for unit tests.

use crate::Cluster;
use crate::error::{ClusterError, RequestContext};
use k8s_openapi::api::core::v1::Event as KubeEvent;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};
use tokio::sync::{mpsc, oneshot};

/// The controller's name in `source.component` and `reportingComponent`.
pub const COMPONENT: &str = "plumb-controller";
/// Events waiting to be written; more are dropped (client-go's queue holds 1,000).
pub const QUEUE: usize = 1000;
/// Distinct events remembered for deduplication (client-go's LRU holds 4,096).
pub const DEDUP_CACHE: usize = 4096;
/// The longest message kept, in bytes (the API server's limit for an event's note).
pub const MESSAGE_LIMIT: usize = 1024;

/// `Normal` or `Warning`, as the Event's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// The object an Event is about (its `involvedObject`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AppRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

impl AppRef {
    /// The reference to an object as read from the API server; `None` without a name or
    /// namespace (nothing to attach an Event to).
    pub fn of(obj: &Value) -> Option<AppRef> {
        let s = |p: &str| {
            obj.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let r = AppRef {
            api_version: s("/apiVersion"),
            kind: s("/kind"),
            namespace: s("/metadata/namespace"),
            name: s("/metadata/name"),
            uid: s("/metadata/uid"),
            resource_version: s("/metadata/resourceVersion"),
        };
        (!r.name.is_empty() && !r.namespace.is_empty()).then_some(r)
    }
}

/// Where Events go. `record` returns at once and never fails.
pub trait EventSink: Send + Sync {
    fn record(&self, object: &AppRef, kind: EventType, reason: &str, message: &str);
}

/// A sink that drops every event (callers without a recorder).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn record(&self, _: &AppRef, _: EventType, _: &str, _: &str) {}
}

/// The message as written: one line, at most [`MESSAGE_LIMIT`] bytes (cut on a character
/// boundary).
pub fn clean_message(message: &str) -> String {
    let mut m: String = message
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if m.len() > MESSAGE_LIMIT {
        let mut end = MESSAGE_LIMIT;
        while !m.is_char_boundary(end) {
            end -= 1;
        }
        m.truncate(end);
    }
    m
}

/// What identifies an event for deduplication (client-go's `getEventKey`, less the source,
/// which is one per writer).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DedupKey {
    object: (String, String, String, String, String),
    kind: EventType,
    reason: String,
    message: String,
}

/// The Event written for a key.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    count: i32,
    used: Instant,
}

/// What [`EventWriter::write`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// A new Event, by name.
    Created(String),
    /// An existing Event's count raised to this.
    Counted(String, i32),
}

/// Writes Events with deduplication (see the module docs); shared by the [`Recorder`]'s
/// background task and tests.
pub struct EventWriter {
    client: kube::Client,
    server: String,
    instance: String,
    seen: Mutex<HashMap<DedupKey, Seen>>,
}

impl std::fmt::Debug for EventWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventWriter")
            .field("server", &self.server)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

fn now_rfc3339() -> String {
    plumb_core::time::format_rfc3339(SystemTime::now())
}

impl EventWriter {
    /// A writer through `cluster`'s client; `instance` is `reportingInstance` and
    /// `source.host` (the controller's identity).
    pub fn new(cluster: &Cluster, instance: &str) -> EventWriter {
        EventWriter {
            client: cluster.client().clone(),
            server: cluster.server().to_string(),
            instance: instance.to_string(),
            seen: Mutex::new(HashMap::new()),
        }
    }

    fn ctx(&self, verb: &'static str, namespace: &str) -> RequestContext<'_> {
        RequestContext {
            server: &self.server,
            verb,
            resource: "events".into(),
            namespace: namespace.to_string(),
        }
    }

    /// Writes one event now: a PATCH of the Event written for the same object, type,
    /// reason and message before (`count + 1`, `lastTimestamp`), else a new Event.
    pub async fn write(
        &self,
        object: &AppRef,
        kind: EventType,
        reason: &str,
        message: &str,
    ) -> Result<Written, ClusterError> {
        let message = clean_message(message);
        let key = DedupKey {
            object: (
                object.api_version.clone(),
                object.kind.clone(),
                object.namespace.clone(),
                object.name.clone(),
                object.uid.clone(),
            ),
            kind,
            reason: reason.to_string(),
            message: message.clone(),
        };
        let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), &object.namespace);
        let known = self.seen.lock().ok().and_then(|s| s.get(&key).cloned());
        if let Some(seen) = known {
            let count = seen.count.saturating_add(1);
            let patch = json!({"count": count, "lastTimestamp": now_rfc3339()});
            match api
                .patch(&seen.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    self.remember(key, seen.name.clone(), count);
                    return Ok(Written::Counted(seen.name, count));
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(ClusterError::from_kube(
                        e,
                        &self.ctx("patch", &object.namespace),
                    ));
                }
            }
        }
        let event = self.event(object, kind, reason, &message);
        let event: KubeEvent =
            serde_json::from_value(event).map_err(|e| ClusterError::InvalidObject {
                reason: format!("Event for {}/{}: {e}", object.namespace, object.name),
            })?;
        let created = api
            .create(&PostParams::default(), &event)
            .await
            .map_err(|e| ClusterError::from_kube(e, &self.ctx("create", &object.namespace)))?;
        let name = created.metadata.name.unwrap_or_default();
        self.remember(key, name.clone(), 1);
        Ok(Written::Created(name))
    }

    fn remember(&self, key: DedupKey, name: String, count: i32) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        if seen.len() >= DEDUP_CACHE && !seen.contains_key(&key) {
            // Forget the least recently seen (rare: only past the cache's size).
            if let Some(oldest) = seen
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone())
            {
                seen.remove(&oldest);
            }
        }
        seen.insert(
            key,
            Seen {
                name,
                count,
                used: Instant::now(),
            },
        );
    }

    /// A new Event (named as client-go names them: the object's name and the time in
    /// nanoseconds, hexadecimal).
    fn event(&self, object: &AppRef, kind: EventType, reason: &str, message: &str) -> Value {
        let now = SystemTime::now();
        let nanos = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let stamp = plumb_core::time::format_rfc3339(now);
        let mut involved = json!({
            "apiVersion": object.api_version,
            "kind": object.kind,
            "namespace": object.namespace,
            "name": object.name,
        });
        for (field, value) in [
            ("uid", &object.uid),
            ("resourceVersion", &object.resource_version),
        ] {
            if !value.is_empty() {
                involved[field] = json!(value);
            }
        }
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": format!("{}.{nanos:x}", object.name),
                "namespace": object.namespace,
            },
            "involvedObject": involved,
            "type": kind.as_str(),
            "reason": reason,
            "message": message,
            "source": {"component": COMPONENT, "host": self.instance},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        })
    }
}

enum Job {
    Write {
        object: AppRef,
        kind: EventType,
        reason: String,
        message: String,
    },
    Flush(oneshot::Sender<()>),
}

/// The controller's [`EventSink`]: a bounded queue and one task writing through an
/// [`EventWriter`]. Cloning shares the queue.
#[derive(Clone)]
pub struct Recorder {
    queue: mpsc::Sender<Job>,
    writer: Arc<EventWriter>,
    dropped: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("writer", &self.writer)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Starts the writing task (on the current tokio runtime); it ends when every clone of
    /// the recorder is dropped.
    pub fn start(cluster: &Cluster, instance: &str) -> Recorder {
        let writer = Arc::new(EventWriter::new(cluster, instance));
        let (queue, mut jobs) = mpsc::channel::<Job>(QUEUE);
        let task_writer = writer.clone();
        tokio::spawn(async move {
            let mut last_complaint: Option<Instant> = None;
            while let Some(job) = jobs.recv().await {
                match job {
                    Job::Write {
                        object,
                        kind,
                        reason,
                        message,
                    } => {
                        if let Err(e) = task_writer.write(&object, kind, &reason, &message).await
                            && last_complaint
                                .is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(60))
                        {
                            last_complaint = Some(Instant::now());
                            eprintln!(
                                "{}",
                                json!({"event": reason, "app": format!("{}/{}", object.namespace, object.name),
                                    "eventError": e.to_string()})
                            );
                        }
                    }
                    Job::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Recorder {
            queue,
            writer,
            dropped: Arc::default(),
        }
    }

    /// The writer (for a write that must be awaited).
    pub fn writer(&self) -> &EventWriter {
        &self.writer
    }

    /// Returns once every event recorded before has been written (or its write failed),
    /// or after `timeout` (`plumb controller --once` flushes before exiting).
    pub async fn flush(&self, timeout: std::time::Duration) {
        let (tx, rx) = oneshot::channel();
        // The whole wait is bounded: a full queue must not hold up the caller either.
        let _ = tokio::time::timeout(timeout, async {
            if self.queue.send(Job::Flush(tx)).await.is_ok() {
                let _ = rx.await;
            }
        })
        .await;
    }

    /// How many events a full queue has dropped since the recorder started.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl EventSink for Recorder {
    fn record(&self, object: &AppRef, kind: EventType, reason: &str, message: &str) {
        // A full queue drops the event: a reconcile never waits for an Event. Drops are
        // counted ([`Recorder::dropped`]) and logged, the first and then every 1,000th.
        if let Err(mpsc::error::TrySendError::Full(_)) = self.queue.try_send(Job::Write {
            object: object.clone(),
            kind,
            reason: reason.to_string(),
            message: message.to_string(),
        }) {
            let n = self
                .dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            if n == 1 || n.is_multiple_of(1000) {
                eprintln!(
                    "{}",
                    json!({"event": reason, "app": format!("{}/{}", object.namespace, object.name),
                        "eventError": "event queue full: event dropped", "eventsDropped": n})
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_bounded() {
        assert_eq!(clean_message("a\n  b\r\n\nc"), "a b c");
        let long = "é".repeat(MESSAGE_LIMIT);
        let m = clean_message(&long);
        assert!(m.len() <= MESSAGE_LIMIT && m.chars().all(|c| c == 'é'));
    }

    #[test]
    fn an_app_ref_needs_a_name_and_namespace() {
        let app = json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "web", "namespace": "apps", "uid": "u1", "resourceVersion": "7"}});
        let r = AppRef::of(&app).expect("ref");
        assert_eq!(
            (r.kind.as_str(), r.uid.as_str(), r.resource_version.as_str()),
            ("Application", "u1", "7")
        );
        assert_eq!(AppRef::of(&json!({"metadata": {"name": "web"}})), None);
    }
}
