//! The controller's side of sharding ([`crate::shard`] decides): this replica's view of the
//! members ([`ShardView`]), its fence ([`Fence`]: whether it may act, by its Lease's last
//! renewal) and [`Fenced`], the [`ClusterApi`] every write of a sharded reconcile goes through.
//!
//! [`Fenced`]: reads pass through. Every write (create, replace, patch, delete, apply; not a
//! dry run) is refused while the replica's [`Fence`] says it may not act (its Lease not renewed
//! within the renew deadline). A write to the Application itself (its status, its operation)
//! also re-reads the Application, checks that `status.controller` still names this replica with
//! the epoch it claimed, and pins the write to the resourceVersion it checked: when another
//! replica took the app meanwhile, the write fails (`409`, "fenced") instead of landing.

use crate::shard::{AppKey, Sharding, claim_of, owner};
use futures::future::BoxFuture;
use plumb_cluster::{ApiResources, ClusterApi, ClusterError, Deleted, Propagation, ResourceInfo};
use plumb_core::ResourceKey;
use serde_json::Value;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// A replica's view of the shards: who the members are, now.
#[derive(Debug)]
pub struct ShardView {
    sharding: Sharding,
    /// This replica's member id.
    me: String,
    /// The members, sorted; receivers see each change.
    members: tokio::sync::watch::Sender<Vec<String>>,
}

impl ShardView {
    pub fn new(sharding: Sharding) -> Arc<ShardView> {
        let (me, members) = match &sharding {
            Sharding::Static { index, count } => (
                index.to_string(),
                (0..*count).map(|i| i.to_string()).collect(),
            ),
            Sharding::Auto { me } => (me.clone(), vec![me.clone()]),
        };
        Arc::new(ShardView {
            sharding,
            me,
            members: tokio::sync::watch::Sender::new(members),
        })
    }

    /// Whether the split is static (`--shard N --shards M`: no member Leases).
    pub fn is_static(&self) -> bool {
        matches!(self.sharding, Sharding::Static { .. })
    }

    /// This replica's member id.
    pub fn me(&self) -> &str {
        &self.me
    }

    /// The live members, sorted.
    pub fn members(&self) -> Vec<String> {
        self.members.borrow().clone()
    }

    /// The members' changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Vec<String>> {
        self.members.subscribe()
    }

    /// Sets the live members (always including this replica, which is live while it acts);
    /// whether they changed.
    pub fn set_members(&self, mut members: Vec<String>) -> bool {
        if !members.contains(&self.me) {
            members.push(self.me.clone());
        }
        members.sort();
        members.dedup();
        self.members.send_if_modified(|m| {
            if *m == members {
                return false;
            }
            *m = members;
            true
        })
    }

    /// Tells the controller to look at every app again though the members seem the same:
    /// this replica's Lease lapsed (it was paused or cut off), so the others may have taken
    /// its apps meanwhile, and it must claim back what is its own.
    pub fn rejoined(&self) {
        self.members.send_modify(|_| {});
    }

    /// The owner of an app, among the current members.
    pub fn owner_of(&self, key: &AppKey) -> Option<String> {
        owner(&self.members.borrow(), &key.0, &key.1).map(str::to_string)
    }

    /// Whether this replica owns the app (asked for every app the loop finds due).
    pub fn owns(&self, key: &AppKey) -> bool {
        owner(&self.members.borrow(), &key.0, &key.1) == Some(self.me.as_str())
    }
}

/// Whether this replica may act: its Lease was renewed recently enough. A replica stops a
/// margin before its Lease could expire, so it never acts after another may have taken its
/// apps.
#[derive(Debug)]
pub struct Fence {
    /// The member id written in `status.controller.owner`.
    pub me: String,
    /// This process among the member's (`status.controller.instance`): the host name, the
    /// process id and the start time.
    pub instance: String,
    until: RwLock<Option<Instant>>,
}

impl Fence {
    pub fn new(me: String) -> Arc<Fence> {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let host = std::env::var("HOSTNAME").unwrap_or_default();
        Arc::new(Fence {
            instance: format!("{host}-{}-{started}", std::process::id()),
            me,
            until: RwLock::new(None),
        })
    }

    /// The Lease was renewed at `at` (a time taken before the renewal request was sent);
    /// acting is allowed until `at + deadline`.
    pub fn renewed(&self, at: Instant, deadline: Duration) {
        if let Ok(mut u) = self.until.write() {
            *u = Some(at + deadline);
        }
    }

    /// A fence that never expires (a static split has no Lease of its own).
    pub fn always(&self) {
        if let Ok(mut u) = self.until.write() {
            *u = Some(Instant::now() + Duration::from_secs(100 * 365 * 86_400));
        }
    }

    /// Whether writes are allowed now.
    pub fn acting(&self) -> bool {
        self.until
            .read()
            .ok()
            .and_then(|u| *u)
            .is_some_and(|u| Instant::now() < u)
    }

    /// [`Fence::acting`], as the error a write gets when it may not.
    pub fn check(&self) -> Result<(), ClusterError> {
        if self.acting() {
            Ok(())
        } else {
            Err(fenced(format!(
                "{} has not renewed its Lease within its renew deadline: it writes nothing until it does",
                self.me
            )))
        }
    }
}

/// How many times an Application write is tried again when the Application changed between
/// the check and the write (and still names this replica).
const CAS_TRIES: usize = 5;

/// `inner`, fenced.
pub struct Fenced {
    pub inner: Arc<dyn ClusterApi>,
    pub fence: Arc<Fence>,
    /// The epoch this replica's claim on the app has (`None`: no Application is written
    /// through this one, a destination's connection).
    pub epoch: Option<u64>,
}

/// What starts the message of a write refused by the fence ([`fenced`]).
const FENCED: &str = "fenced: ";

/// The error of a write refused by the fence.
pub fn fenced(what: String) -> ClusterError {
    ClusterError::Api {
        code: 409,
        message: format!("{FENCED}{what}"),
    }
}

/// Why the fence refused a write, from the text of its error ([`fenced`]'s, as
/// `to_string` prints it, possibly inside a longer message); `None` for any other error.
pub fn fence_reason(message: &str) -> Option<&str> {
    let (_, reason) = message.split_once(&format!("API error 409: {FENCED}"))?;
    Some(reason)
}

impl Fenced {
    fn check(&self) -> Result<(), ClusterError> {
        self.fence.check()
    }

    /// A merge patch of the Application `namespace/name`, pinned to a resourceVersion at
    /// which it still names this replica and epoch.
    async fn patch_app(
        &self,
        namespace: &str,
        name: &str,
        patch: &Value,
        status: bool,
    ) -> Result<Value, ClusterError> {
        self.check()?;
        let Some(epoch) = self.epoch else {
            return Err(fenced(format!(
                "Application {namespace}/{name} written without a claim"
            )));
        };
        let pinned_by_caller = patch.pointer("/metadata/resourceVersion").is_some();
        let mut last = None;
        for _ in 0..CAS_TRIES {
            let current = self
                .inner
                .get_application(namespace, name)
                .await?
                .ok_or_else(|| ClusterError::Api {
                    code: 404,
                    message: format!("Application {namespace}/{name} not found"),
                })?;
            match claim_of(&current) {
                Some((owner, e)) if owner == self.fence.me && e == epoch => {}
                other => {
                    return Err(fenced(format!(
                        "Application {namespace}/{name} is owned by {} (epoch {}), not {} (epoch {epoch})",
                        other.as_ref().map_or("nobody", |o| o.0.as_str()),
                        other.as_ref().map_or(0, |o| o.1),
                        self.fence.me
                    )));
                }
            }
            let mut p = patch.clone();
            if !pinned_by_caller && let Some(m) = p.as_object_mut() {
                let rv = current
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(Value::Null);
                let meta = m
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("resourceVersion".into(), rv);
                }
            }
            self.check()?;
            let sent = if status {
                self.inner
                    .patch_application_status(namespace, name, &p)
                    .await
            } else {
                self.inner.patch_application(namespace, name, &p).await
            };
            match sent {
                // Changed since the check (and the caller did not pin it): check again.
                Err(ClusterError::Api { code: 409, .. }) if !pinned_by_caller => {
                    last = Some(sent);
                    continue;
                }
                other => return other,
            }
        }
        last.unwrap_or_else(|| Err(fenced(format!("Application {namespace}/{name}: no write"))))
    }
}

impl ClusterApi for Fenced {
    fn api_resources(&self) -> BoxFuture<'_, Result<Arc<ApiResources>, ClusterError>> {
        self.inner.api_resources()
    }

    fn resource_for<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> BoxFuture<'a, Result<ResourceInfo, ClusterError>> {
        self.inner.resource_for(group, kind)
    }

    fn scopes<'a>(
        &'a self,
        kinds: std::collections::BTreeSet<plumb_core::GroupKind>,
    ) -> BoxFuture<'a, Result<std::collections::BTreeMap<plumb_core::GroupKind, bool>, ClusterError>>
    {
        self.inner.scopes(kinds)
    }

    fn live_for<'a>(
        &'a self,
        desired: &'a [Value],
        app: Option<&'a str>,
        tracking_label: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>, ClusterError>> {
        self.inner.live_for(desired, app, tracking_label)
    }

    fn get_object<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, ClusterError>> {
        self.inner.get_object(group, kind, namespace, name)
    }

    fn list_labelled<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
        namespace: &'a str,
        label: (&'a str, &'a str),
    ) -> BoxFuture<'a, Result<Vec<Value>, ClusterError>> {
        self.inner.list_labelled(group, kind, namespace, label)
    }

    fn namespace_objects<'a>(
        &'a self,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>, ClusterError>> {
        self.inner.namespace_objects(namespace)
    }

    fn get_object_as<'a>(
        &'a self,
        obj: &'a Value,
    ) -> BoxFuture<'a, Result<Option<Value>, ClusterError>> {
        self.inner.get_object_as(obj)
    }

    fn create_object<'a>(
        &'a self,
        obj: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value, ClusterError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.create_object(obj, field_manager).await
        })
    }

    fn replace_object<'a>(
        &'a self,
        obj: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value, ClusterError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.replace_object(obj, field_manager).await
        })
    }

    fn merge_patch_object<'a>(
        &'a self,
        obj: &'a Value,
        patch: &'a Value,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<Value, ClusterError>> {
        Box::pin(async move {
            self.check()?;
            self.inner
                .merge_patch_object(obj, patch, field_manager)
                .await
        })
    }

    fn delete_object<'a>(
        &'a self,
        key: &'a ResourceKey,
        propagation: Propagation,
    ) -> BoxFuture<'a, Result<Deleted, ClusterError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.delete_object(key, propagation).await
        })
    }

    fn apply_validating<'a>(
        &'a self,
        objects: Vec<(Value, bool)>,
        field_manager: &'a str,
        force: bool,
        dry_run: bool,
    ) -> BoxFuture<'a, Vec<Result<Value, ClusterError>>> {
        Box::pin(async move {
            if !dry_run && let Err(e) = self.check() {
                let message = e.to_string();
                return objects
                    .iter()
                    .map(|_| Err(fenced(message.clone())))
                    .collect();
            }
            self.inner
                .apply_validating(objects, field_manager, force, dry_run)
                .await
        })
    }

    fn ensure_namespace<'a>(
        &'a self,
        name: &'a str,
        field_manager: &'a str,
    ) -> BoxFuture<'a, Result<bool, ClusterError>> {
        Box::pin(async move {
            self.check()?;
            self.inner.ensure_namespace(name, field_manager).await
        })
    }

    fn get_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, ClusterError>> {
        self.inner.get_application(namespace, name)
    }

    fn patch_application<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ClusterError>> {
        Box::pin(self.patch_app(namespace, name, patch, false))
    }

    fn patch_application_status<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        patch: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ClusterError>> {
        Box::pin(self.patch_app(namespace, name, patch, true))
    }

    fn server_version(&self) -> String {
        self.inner.server_version()
    }

    fn app_group(&self) -> &'static str {
        self.inner.app_group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::claim_patch;
    use futures::executor::block_on;
    use plumb_cluster::memory::MemoryCluster;
    use serde_json::json;
    use std::time::SystemTime;

    fn acting(me: &str) -> Arc<Fence> {
        let f = Fence::new(me.into());
        f.renewed(Instant::now(), Duration::from_secs(600));
        f
    }

    fn claim(cluster: &MemoryCluster, me: &str) -> u64 {
        let app = block_on(cluster.get_application("apps", "a"))
            .expect("get")
            .expect("the app");
        let (patch, epoch) =
            claim_patch(&app, me, &format!("{me}-1"), SystemTime::now()).expect("a claim");
        block_on(cluster.patch_application_status("apps", "a", &patch)).expect("claimed");
        epoch
    }

    #[test]
    fn a_replica_that_lost_its_app_writes_nothing_to_it() {
        let cluster = MemoryCluster::new();
        cluster
            .put(
                json!({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
                "metadata": {"name": "a", "namespace": "apps"}, "spec": {}}),
            )
            .expect("app");
        let (fa, fb) = (acting("a"), acting("b"));
        let ea = claim(&cluster, "a");
        let cluster = Arc::new(cluster);
        let as_a = Fenced {
            inner: cluster.clone(),
            fence: fa,
            epoch: Some(ea),
        };
        let progress = json!({"status": {"operationState": {"phase": "Running"}}});
        block_on(as_a.patch_application_status("apps", "a", &progress)).expect("a writes");
        // b takes the app over (epoch 2): a's next write fails, b's lands.
        let eb = claim(&cluster, "b");
        assert_eq!((ea, eb), (1, 2));
        let late = json!({"status": {"operationState": {"phase": "Succeeded"}}});
        let err = block_on(as_a.patch_application_status("apps", "a", &late)).unwrap_err();
        assert!(err.to_string().contains("owned by b (epoch 2)"), "{err}");
        let as_b = Fenced {
            inner: cluster.clone(),
            fence: fb,
            epoch: Some(eb),
        };
        block_on(as_b.patch_application_status("apps", "a", &late)).expect("b writes");
        // a that claims again has a new epoch: a write of its old claim still fails.
        let ea2 = claim(&cluster, "a");
        assert_eq!(ea2, 3);
        assert!(
            block_on(as_a.patch_application("apps", "a", &json!({"operation": null}))).is_err()
        );
    }

    #[test]
    fn a_replica_past_its_renew_deadline_writes_nothing_but_dry_runs() {
        let cluster = MemoryCluster::new();
        cluster
            .put(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}))
            .expect("namespace");
        let f = Fence::new("a".into());
        f.renewed(
            Instant::now() - Duration::from_secs(10),
            Duration::from_secs(5),
        );
        let cluster = Arc::new(cluster);
        let fenced_api = Fenced {
            inner: cluster.clone(),
            fence: f,
            epoch: None,
        };
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n"}, "data": {"k": "v"}});
        let applied = block_on(fenced_api.apply(vec![cm.clone()], "plumb", true));
        assert!(
            applied[0]
                .as_ref()
                .is_err_and(|e| e.to_string().contains("fenced"))
        );
        let dry = block_on(fenced_api.dry_run_apply(vec![cm], "plumb", true));
        assert!(dry[0].is_ok(), "{dry:?}");
        assert!(
            block_on(cluster.get_object("", "ConfigMap", "n", "c"))
                .expect("get")
                .is_none()
        );
    }

    #[test]
    fn a_static_split_is_the_same_hashing_over_numbered_members() {
        let view = ShardView::new(Sharding::Static { index: 1, count: 3 });
        let apps: Vec<AppKey> = (0..3_000)
            .map(|i| (format!("team-{}", i % 7), format!("app-{i}")))
            .collect();
        let owned = apps.iter().filter(|k| view.owns(k)).count();
        assert!((owned as f64 / 3_000.0 - 1.0 / 3.0).abs() < 0.05, "{owned}");
        assert_eq!(view.members(), ["0", "1", "2"]);
    }

    #[test]
    fn a_fence_stops_acting_at_its_deadline() {
        let f = Fence::new("a".into());
        assert!(!f.acting(), "not before the first renewal");
        f.renewed(Instant::now(), Duration::from_secs(60));
        assert!(f.acting());
        f.renewed(
            Instant::now() - Duration::from_secs(61),
            Duration::from_secs(60),
        );
        assert!(!f.acting());
    }
}
