//! A watch-fed cache of live objects (an informer): one LIST and then one
//! long-running WATCH per kind, across all namespaces, so a controller sees
//! drift within seconds and reads live objects without a LIST per app.
//!
//! Per kind, a task on the current tokio runtime keeps the cache current:
//!
//! - the initial LIST is paged (500 objects a page), its items completed with
//!   `apiVersion` and `kind` as [`Cluster::list_live`] does (`managedFields`
//!   are kept);
//! - the WATCH starts at the LIST's `resourceVersion`, asks for bookmarks, and
//!   ends server-side after 240–290 s (jittered so kinds do not re-watch in
//!   step); a closed stream is resumed from the last `resourceVersion` seen;
//! - `410 Gone` (an `ERROR` event or the HTTP answer) means the version is too
//!   old: the kind is LISTed again and the cache reconciled with the answer,
//!   emitting `Deleted` for objects gone and `Added`/`Modified` for the others
//!   that changed;
//! - failures are retried after 1 s, doubling up to 30 s while they repeat.
//!
//! Nothing is logged (this crate has no logger), so no object, Secret or
//! otherwise, ever reaches a log from here; [`Change`]'s `Debug` omits the
//! object too.

use crate::discovery::ResourceInfo;
use crate::error::{ClusterError, RequestContext, Result};
use crate::live::{LivePlan, PlannedRead};
use crate::{Cluster, LIST_CONCURRENCY};
use futures::{StreamExt, TryStreamExt, stream};
use kube::core::WatchEvent;
use plumb_core::{GroupKind, ResourceKey};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{OnceCell, broadcast};
use tokio::task::AbortHandle;

/// How many changes a subscriber may fall behind before it lags (and gets
/// [`broadcast::error::RecvError::Lagged`]; the cache itself never waits).
pub const CHANGE_CAPACITY: usize = 4096;

/// Objects per page of a LIST.
const PAGE_SIZE: u32 = 500;
/// Server-side duration of one WATCH: `WATCH_TIMEOUT_MIN` plus up to
/// `WATCH_TIMEOUT_JITTER` seconds.
const WATCH_TIMEOUT_MIN: u32 = 240;
const WATCH_TIMEOUT_JITTER: u32 = 50;
/// A WATCH still open this long after its server-side timeout is taken for a
/// dead connection (the client has no read timeout) and resumed.
const WATCH_GRACE: Duration = Duration::from_secs(30);
/// Retry delays on repeated failures.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A WATCH closed sooner than this without any event counts as a failure (a
/// server that closes at once must not make the task spin).
const WATCH_MIN_HEALTHY: Duration = Duration::from_secs(1);

/// What happened to a cached object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One change of the cache, as [`LiveCache::subscribe`] delivers it. `object` is
/// the new state (for `Deleted`: the last state).
#[derive(Clone)]
pub struct Change {
    pub key: ResourceKey,
    pub kind: ChangeKind,
    pub object: Arc<Value>,
}

/// Without the object: it may be a Secret.
impl std::fmt::Debug for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Change")
            .field("key", &self.key)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// A cluster-wide, watch-fed cache of live objects. Cheap to clone (an `Arc`
/// inside); the watch tasks stop with [`LiveCache::stop`] or when the last
/// handle is dropped.
#[derive(Clone)]
pub struct LiveCache {
    inner: Arc<Inner>,
}

struct Inner {
    /// This cache's own handle on the cluster (same client and discovery as
    /// the `Cluster` it came from), for `ensure_kind`.
    cluster: Cluster,
    /// Every kind asked for; the cell is set once its initial LIST is in.
    kinds: RwLock<HashMap<GroupKind, Arc<OnceCell<Arc<Watched>>>>>,
    changes: broadcast::Sender<Change>,
    stopped: AtomicBool,
    /// Kinds [`Cluster::watch_cache_all`] could not watch, with the reason.
    skipped: Mutex<BTreeMap<GroupKind, String>>,
}

/// A kind being watched.
struct Watched {
    ctx: Arc<KindContext>,
    task: Mutex<Option<AbortHandle>>,
}

/// What a kind's watch task works with (never the [`Inner`]: a task must not
/// keep the cache alive).
struct KindContext {
    client: kube::Client,
    server: String,
    info: ResourceInfo,
    store: Store,
    changes: broadcast::Sender<Change>,
    /// LISTs made after the initial one (410 Gone).
    relists: AtomicU64,
}

/// The objects of one kind.
struct Store {
    group: String,
    kind: String,
    content: RwLock<Content>,
    len: AtomicUsize,
}

/// Namespace (empty for cluster scope) → name → object.
type Objects = HashMap<String, HashMap<String, Arc<Value>>>;

/// Label value → the (namespace, name) of the objects carrying it.
type LabelIndex = HashMap<String, HashSet<(String, String)>>;

#[derive(Default)]
struct Content {
    objects: Objects,
    /// Indexes of the label keys `live_for` selects by (the tracking label),
    /// built on first use and kept current from then on.
    by_label: HashMap<String, LabelIndex>,
}

fn label<'v>(obj: &'v Value, key: &str) -> Option<&'v str> {
    obj.get("metadata")?.get("labels")?.get(key)?.as_str()
}

impl Content {
    fn index(&mut self, namespace: &str, name: &str, obj: &Value) {
        for (key, index) in &mut self.by_label {
            if let Some(value) = label(obj, key) {
                index
                    .entry(value.to_string())
                    .or_default()
                    .insert((namespace.to_string(), name.to_string()));
            }
        }
    }

    fn unindex(&mut self, namespace: &str, name: &str, obj: &Value) {
        for (key, index) in &mut self.by_label {
            if let Some(value) = label(obj, key)
                && let Some(set) = index.get_mut(value)
            {
                set.remove(&(namespace.to_string(), name.to_string()));
                if set.is_empty() {
                    index.remove(value);
                }
            }
        }
    }

    fn build_index(objects: &Objects, key: &str) -> LabelIndex {
        let mut index = LabelIndex::new();
        for (namespace, names) in objects {
            for (name, obj) in names {
                if let Some(value) = label(obj, key) {
                    index
                        .entry(value.to_string())
                        .or_default()
                        .insert((namespace.clone(), name.clone()));
                }
            }
        }
        index
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

fn lock<T>(lock: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

fn meta_str<'v>(obj: &'v Value, field: &str) -> Option<&'v str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// Same object version: equal `resourceVersion`s (equal contents without one).
fn same_version(a: &Value, b: &Value) -> bool {
    match (
        meta_str(a, "resourceVersion"),
        meta_str(b, "resourceVersion"),
    ) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

impl Store {
    fn new(group: &str, kind: &str) -> Store {
        Store {
            group: group.to_string(),
            kind: kind.to_string(),
            content: RwLock::new(Content::default()),
            len: AtomicUsize::new(0),
        }
    }

    fn key(&self, namespace: &str, name: &str) -> ResourceKey {
        ResourceKey {
            group: self.group.clone(),
            kind: self.kind.clone(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    fn get(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        read(&self.content)
            .objects
            .get(namespace)?
            .get(name)
            .cloned()
    }

    /// The objects in `namespace` (`None`: all), in no particular order.
    fn scan(&self, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let content = read(&self.content);
        match namespace {
            Some(ns) => content
                .objects
                .get(ns)
                .map(|names| names.values().cloned().collect())
                .unwrap_or_default(),
            None => content
                .objects
                .values()
                .flat_map(|names| names.values().cloned())
                .collect(),
        }
    }

    /// The objects in `namespace` (`None`: all), sorted by namespace and name.
    fn list(&self, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let content = read(&self.content);
        let mut out: Vec<(&String, &String, &Arc<Value>)> = content
            .objects
            .iter()
            .filter(|(ns, _)| namespace.is_none_or(|wanted| wanted == ns.as_str()))
            .flat_map(|(ns, names)| names.iter().map(move |(name, obj)| (ns, name, obj)))
            .collect();
        out.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        out.into_iter().map(|(_, _, obj)| obj.clone()).collect()
    }

    /// The objects labelled `key=value`, in no particular order. The first call
    /// for a label key indexes it.
    fn labelled(&self, key: &str, value: &str) -> Vec<Arc<Value>> {
        let lookup = |content: &Content| -> Option<Vec<Arc<Value>>> {
            let index = content.by_label.get(key)?;
            Some(
                index
                    .get(value)
                    .into_iter()
                    .flatten()
                    .filter_map(|(ns, name)| content.objects.get(ns)?.get(name).cloned())
                    .collect(),
            )
        };
        if let Some(found) = lookup(&read(&self.content)) {
            return found;
        }
        let mut content = write(&self.content);
        if !content.by_label.contains_key(key) {
            let index = Content::build_index(&content.objects, key);
            content.by_label.insert(key.to_string(), index);
        }
        lookup(&content).unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Stores an added or modified object; the change, if it is one.
    fn upsert(&self, obj: Value) -> Option<Change> {
        let name = meta_str(&obj, "name")?.to_string();
        let namespace = meta_str(&obj, "namespace").unwrap_or_default().to_string();
        let obj = Arc::new(obj);
        let old = {
            let mut content = write(&self.content);
            let content = &mut *content;
            let names = content.objects.entry(namespace.clone()).or_default();
            if let Some(old) = names.get(&name)
                && same_version(old, &obj)
            {
                return None;
            }
            let old = names.insert(name.clone(), obj.clone());
            if let Some(old) = &old {
                content.unindex(&namespace, &name, old);
            }
            content.index(&namespace, &name, &obj);
            old
        };
        let kind = match old {
            Some(_) => ChangeKind::Modified,
            None => {
                self.len.fetch_add(1, Ordering::Relaxed);
                ChangeKind::Added
            }
        };
        Some(Change {
            key: self.key(&namespace, &name),
            kind,
            object: obj,
        })
    }

    /// Forgets a deleted object; the change, if it was cached.
    fn remove(&self, obj: Value) -> Option<Change> {
        let name = meta_str(&obj, "name")?;
        let namespace = meta_str(&obj, "namespace").unwrap_or_default();
        {
            let mut content = write(&self.content);
            let names = content.objects.get_mut(namespace)?;
            let old = names.remove(name)?;
            if names.is_empty() {
                content.objects.remove(namespace);
            }
            content.unindex(namespace, name, &old);
        }
        self.len.fetch_sub(1, Ordering::Relaxed);
        Some(Change {
            key: self.key(namespace, name),
            kind: ChangeKind::Deleted,
            object: Arc::new(obj),
        })
    }

    /// Replaces the content with the answer of a LIST: the changes from the old
    /// content (`Deleted` for objects gone, `Added`/`Modified` for new or changed
    /// ones; unchanged objects keep their `Arc`), when `emit`.
    fn replace_all(&self, items: Vec<Value>, emit: bool) -> Vec<Change> {
        let mut fresh = Objects::new();
        let mut count = 0;
        let mut changes = Vec::new();
        let mut content = write(&self.content);
        let objects = &content.objects;
        for item in items {
            let Some(name) = meta_str(&item, "name").map(str::to_string) else {
                continue;
            };
            let namespace = meta_str(&item, "namespace").unwrap_or_default();
            let old = objects.get(namespace).and_then(|names| names.get(&name));
            let obj = match old {
                Some(old) if same_version(old, &item) => old.clone(),
                _ => {
                    let obj = Arc::new(item);
                    if emit {
                        changes.push(Change {
                            key: self.key(meta_str(&obj, "namespace").unwrap_or_default(), &name),
                            kind: if old.is_some() {
                                ChangeKind::Modified
                            } else {
                                ChangeKind::Added
                            },
                            object: obj.clone(),
                        });
                    }
                    obj
                }
            };
            let namespace = meta_str(&obj, "namespace").unwrap_or_default().to_string();
            if fresh
                .entry(namespace)
                .or_default()
                .insert(name, obj)
                .is_none()
            {
                count += 1;
            }
        }
        if emit {
            for (namespace, names) in objects {
                for (name, obj) in names {
                    let kept = fresh.get(namespace).is_some_and(|n| n.contains_key(name));
                    if !kept {
                        changes.push(Change {
                            key: self.key(namespace, name),
                            kind: ChangeKind::Deleted,
                            object: obj.clone(),
                        });
                    }
                }
            }
        }
        let keys: Vec<String> = content.by_label.keys().cloned().collect();
        content.by_label = keys
            .into_iter()
            .map(|key| {
                let index = Content::build_index(&fresh, &key);
                (key, index)
            })
            .collect();
        content.objects = fresh;
        self.len.store(count, Ordering::Relaxed);
        changes
    }
}

/// One page of a LIST.
#[derive(Deserialize)]
struct ListPage {
    #[serde(default)]
    items: Vec<Value>,
    #[serde(default)]
    metadata: ListMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ListMeta {
    #[serde(default)]
    resource_version: String,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// How one WATCH ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WatchEnd {
    /// Closed (server-side timeout, or presumed dead): resume.
    Closed,
    /// 410: the version is too old; LIST again.
    Gone,
    /// Any other failure: resume after a delay.
    Failed,
}

/// A number in `0..n`, different on each call (no random-number crate here).
fn jitter(n: u32) -> u32 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    (hasher.finish() % u64::from(n.max(1))) as u32
}

/// Delays between retries: 1 s, doubling up to 30 s.
struct Backoff {
    next: Duration,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff {
            next: BACKOFF_FIRST,
        }
    }

    fn reset(&mut self) {
        self.next = BACKOFF_FIRST;
    }

    async fn wait(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(BACKOFF_MAX);
    }
}

fn is_gone(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 410)
}

impl KindContext {
    fn context(&self, verb: &'static str) -> RequestContext<'_> {
        RequestContext {
            server: &self.server,
            verb,
            resource: self.info.resource_name(),
            namespace: String::new(),
        }
    }

    /// Completes an item as [`Cluster::list_live`] does.
    fn complete(&self, mut obj: Value) -> Value {
        if let Some(map) = obj.as_object_mut() {
            map.insert(
                "apiVersion".to_string(),
                Value::String(self.info.api_version()),
            );
            map.insert("kind".to_string(), Value::String(self.info.kind.clone()));
        }
        obj
    }

    /// A full LIST (all namespaces, paged): the items and the version to watch from.
    async fn list_all(&self) -> Result<(Vec<Value>, String)> {
        let url = self.info.url_path(&self.info.version, None);
        // A continue token can expire (410) between pages: start over, a few times.
        let mut attempts = 0;
        'again: loop {
            attempts += 1;
            let mut items = Vec::new();
            let mut continue_token = None;
            loop {
                let params = kube::api::ListParams {
                    limit: Some(PAGE_SIZE),
                    continue_token: continue_token.take(),
                    ..Default::default()
                };
                let request = kube::core::Request::new(&url).list(&params).map_err(|e| {
                    ClusterError::Protocol {
                        reason: e.to_string(),
                    }
                })?;
                let page: ListPage = match self.client.request(request).await {
                    Ok(page) => page,
                    Err(e) if is_gone(&e) && attempts < 3 && !items.is_empty() => continue 'again,
                    Err(e) => return Err(ClusterError::from_kube(e, &self.context("list"))),
                };
                items.extend(page.items.into_iter().map(|obj| self.complete(obj)));
                match page.metadata.continue_token {
                    Some(token) if !token.is_empty() => continue_token = Some(token),
                    _ => return Ok((items, page.metadata.resource_version)),
                }
            }
        }
    }

    fn send(&self, change: Option<Change>) {
        if let Some(change) = change {
            // No subscriber is not an error; a lagging one loses the oldest changes.
            let _ = self.changes.send(change);
        }
    }

    /// One WATCH from `resource_version`, applying its events; `resource_version`
    /// follows them. Also says whether it made progress (had an event, or lasted).
    async fn watch_once(&self, resource_version: &mut String) -> (WatchEnd, bool) {
        let started = tokio::time::Instant::now();
        let mut seen = false;
        let end = self.watch_events(resource_version, &mut seen).await;
        (end, seen || started.elapsed() >= WATCH_MIN_HEALTHY)
    }

    async fn watch_events(&self, resource_version: &mut String, seen: &mut bool) -> WatchEnd {
        let timeout = WATCH_TIMEOUT_MIN + jitter(WATCH_TIMEOUT_JITTER);
        let params = kube::api::WatchParams {
            bookmarks: true,
            timeout: Some(timeout),
            ..Default::default()
        };
        let url = self.info.url_path(&self.info.version, None);
        let Ok(request) = kube::core::Request::new(url).watch(&params, resource_version) else {
            return WatchEnd::Failed;
        };
        let deadline =
            tokio::time::Instant::now() + Duration::from_secs(u64::from(timeout)) + WATCH_GRACE;
        let events = match self.client.request_events::<Value>(request).await {
            Ok(events) => events,
            Err(e) if is_gone(&e) => return WatchEnd::Gone,
            Err(_) => return WatchEnd::Failed,
        };
        let mut events = std::pin::pin!(events);
        loop {
            let event = match tokio::time::timeout_at(deadline, events.try_next()).await {
                // Presumed dead connection, or closed (server-side timeout).
                Err(_) | Ok(Ok(None)) => return WatchEnd::Closed,
                Ok(Ok(Some(event))) => event,
                Ok(Err(e)) if is_gone(&e) => return WatchEnd::Gone,
                Ok(Err(_)) => return WatchEnd::Failed,
            };
            *seen = true;
            match event {
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                    if let Some(rv) = meta_str(&obj, "resourceVersion") {
                        *resource_version = rv.to_string();
                    }
                    self.send(self.store.upsert(self.complete(obj)));
                }
                WatchEvent::Deleted(obj) => {
                    if let Some(rv) = meta_str(&obj, "resourceVersion") {
                        *resource_version = rv.to_string();
                    }
                    self.send(self.store.remove(self.complete(obj)));
                }
                WatchEvent::Bookmark(bookmark) => {
                    if !bookmark.metadata.resource_version.is_empty() {
                        *resource_version = bookmark.metadata.resource_version;
                    }
                }
                WatchEvent::Error(status) if status.code == 410 => return WatchEnd::Gone,
                WatchEvent::Error(_) => return WatchEnd::Failed,
            }
        }
    }

    /// LISTs again and reconciles the cache with the answer; the version to
    /// watch from.
    async fn relist(&self) -> Result<String> {
        let (items, resource_version) = self.list_all().await?;
        self.relists.fetch_add(1, Ordering::Relaxed);
        for change in self.store.replace_all(items, true) {
            self.send(Some(change));
        }
        Ok(resource_version)
    }

    /// Keeps the kind current, forever (until aborted).
    async fn run(self: Arc<Self>, mut resource_version: String) {
        let mut backoff = Backoff::new();
        let mut must_list = resource_version.is_empty();
        loop {
            if must_list {
                match self.relist().await {
                    Ok(rv) => {
                        resource_version = rv;
                        must_list = false;
                    }
                    Err(_) => {
                        backoff.wait().await;
                        continue;
                    }
                }
            }
            let (end, progressed) = self.watch_once(&mut resource_version).await;
            if progressed {
                backoff.reset();
            }
            match end {
                WatchEnd::Closed if progressed => {}
                WatchEnd::Closed | WatchEnd::Failed => backoff.wait().await,
                WatchEnd::Gone => must_list = true,
            }
        }
    }
}

impl Watched {
    fn abort(&self) {
        if let Some(task) = lock(&self.task).take() {
            task.abort();
        }
    }

    /// (Re)starts the watch task from `resource_version` (empty: LIST first).
    fn spawn(&self, resource_version: String) {
        let task = tokio::spawn(self.ctx.clone().run(resource_version));
        if let Some(old) = lock(&self.task).replace(task.abort_handle()) {
            old.abort();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Inner {
    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        for cell in read(&self.kinds).values() {
            if let Some(watched) = cell.get() {
                watched.abort();
            }
        }
    }

    /// The watched kinds, sorted by group and kind.
    fn watched(&self) -> Vec<Arc<Watched>> {
        let mut out: Vec<Arc<Watched>> = read(&self.kinds)
            .values()
            .filter_map(|cell| cell.get().cloned())
            .collect();
        out.sort_by(|a, b| {
            (&a.ctx.info.group, &a.ctx.info.kind).cmp(&(&b.ctx.info.group, &b.ctx.info.kind))
        });
        out
    }

    fn watched_kind(&self, gk: &GroupKind) -> Option<Arc<Watched>> {
        read(&self.kinds).get(gk)?.get().cloned()
    }

    /// The kind, watched: started (resource looked up unless `info` is given,
    /// initial LIST, task) on first use. Concurrent calls share one start; a
    /// failed start is tried again by the next call.
    async fn ensure(&self, gk: &GroupKind, info: Option<ResourceInfo>) -> Result<Arc<Watched>> {
        if let Some(watched) = self.watched_kind(gk) {
            return Ok(watched);
        }
        let cell = write(&self.kinds).entry(gk.clone()).or_default().clone();
        let watched = cell.get_or_try_init(|| self.start(gk, info)).await?.clone();
        if let Ok(mut skipped) = self.skipped.lock() {
            skipped.remove(gk);
        }
        Ok(watched)
    }

    async fn start(&self, gk: &GroupKind, info: Option<ResourceInfo>) -> Result<Arc<Watched>> {
        if self.stopped.load(Ordering::SeqCst) {
            return Err(ClusterError::Api {
                code: 0,
                message: "the live cache was stopped".to_string(),
            });
        }
        let info = match info {
            Some(info) => info,
            None => self.cluster.resource_for(&gk.group, &gk.kind).await?,
        };
        if !info.supports("list") || !info.supports("watch") {
            return Err(ClusterError::Api {
                code: 405,
                message: format!(
                    "{} cannot be listed and watched (verbs: {})",
                    info.resource_name(),
                    info.verbs.join(", ")
                ),
            });
        }
        let ctx = Arc::new(KindContext {
            client: self.cluster.client.clone(),
            server: self.cluster.server.clone(),
            store: Store::new(&info.group, &info.kind),
            info,
            changes: self.changes.clone(),
            relists: AtomicU64::new(0),
        });
        let (items, resource_version) = ctx.list_all().await?;
        ctx.store.replace_all(items, false);
        let watched = Arc::new(Watched {
            ctx,
            task: Mutex::new(None),
        });
        watched.spawn(resource_version);
        // stop() may have run while this kind was starting.
        if self.stopped.load(Ordering::SeqCst) {
            watched.abort();
        }
        Ok(watched)
    }
}

/// Errors that fail [`Cluster::watch_cache_all`] rather than skip one kind.
fn is_fatal(err: &ClusterError) -> bool {
    matches!(
        err,
        ClusterError::Unreachable { .. } | ClusterError::Kubeconfig { .. }
    )
}

impl Cluster {
    /// A second handle on the same client and discovery.
    fn handle(&self) -> Cluster {
        Cluster {
            client: self.client.clone(),
            server: self.server.clone(),
            source: self.source.clone(),
            default_namespace: self.default_namespace.clone(),
            server_version: self.server_version.clone(),
            discovery: Mutex::new(self.discovery.lock().ok().and_then(|d| d.clone())),
        }
    }

    fn empty_cache(&self) -> LiveCache {
        LiveCache {
            inner: Arc::new(Inner {
                cluster: self.handle(),
                kinds: RwLock::new(HashMap::new()),
                changes: broadcast::channel(CHANGE_CAPACITY).0,
                stopped: AtomicBool::new(false),
                skipped: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// A cache of `kinds` (all namespaces, or cluster scope): one LIST then one
    /// WATCH each, the LISTs concurrently ([`LIST_CONCURRENCY`] at a time).
    /// Returns once every initial LIST is in the cache. A kind that is not
    /// served, cannot be listed and watched, or whose LIST fails is an error.
    pub async fn watch_cache(&self, kinds: &[GroupKind]) -> Result<LiveCache> {
        let cache = self.empty_cache();
        let mut unique: Vec<GroupKind> = kinds.to_vec();
        unique.sort();
        unique.dedup();
        let inner = &cache.inner;
        stream::iter(unique)
            .map(|gk| async move { inner.ensure(&gk, None).await })
            .buffer_unordered(LIST_CONCURRENCY)
            .try_collect::<Vec<_>>()
            .await?;
        Ok(cache)
    }

    /// A cache of every kind [`Cluster::live_for`] could return: every kind the
    /// server serves that can be listed and watched, except the never-tracked
    /// ones (Events, Endpoints, EndpointSlices, Leases). A kind that cannot be
    /// read (forbidden, an aggregated API that is down, ...) is skipped (see
    /// [`LiveCache::skipped`]; [`LiveCache::ensure_kind`] tries again); an
    /// unreachable server fails.
    pub async fn watch_cache_all(&self) -> Result<LiveCache> {
        let resources = self.api_resources().await?;
        let cache = self.empty_cache();
        let eligible: Vec<ResourceInfo> = resources
            .iter()
            .filter(|info| {
                !crate::snapshot::NEVER_TRACKED
                    .iter()
                    .any(|(g, k)| *g == info.group && *k == info.kind)
                    && info.supports("list")
                    && info.supports("watch")
            })
            .cloned()
            .collect();
        let results: Vec<(GroupKind, Result<Arc<Watched>>)> = stream::iter(eligible)
            .map(|info| {
                let inner = &cache.inner;
                async move {
                    let gk = info.group_kind();
                    let result = inner.ensure(&gk, Some(info)).await;
                    (gk, result)
                }
            })
            .buffer_unordered(LIST_CONCURRENCY)
            .collect()
            .await;
        for (gk, result) in results {
            match result {
                Ok(_) => {}
                Err(e) if is_fatal(&e) => return Err(e),
                Err(e) => {
                    lock(&cache.inner.skipped).insert(gk, e.to_string());
                }
            }
        }
        Ok(cache)
    }
}

impl std::fmt::Debug for LiveCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveCache")
            .field("server", &self.inner.cluster.server)
            .field("kinds", &self.inner.watched().len())
            .field("objects", &self.len())
            .finish_non_exhaustive()
    }
}

impl LiveCache {
    /// Starts watching `gk` if it is not watched yet (a CRD installed after the
    /// cache started, say); returns once its initial LIST is in the cache. Its
    /// initial objects are not announced to subscribers; later changes are.
    pub async fn ensure_kind(&self, gk: &GroupKind) -> Result<()> {
        self.inner.ensure(gk, None).await.map(|_| ())
    }

    /// The cached object of `key` (the namespace is ignored for cluster-scoped
    /// kinds).
    pub fn get(&self, key: &ResourceKey) -> Option<Arc<Value>> {
        let watched = self.inner.watched_kind(&key.group_kind())?;
        let namespace = if watched.ctx.info.namespaced {
            key.namespace.as_str()
        } else {
            ""
        };
        watched.ctx.store.get(namespace, &key.name)
    }

    /// The cached objects of `gk` in `namespace` (`None`, or a cluster-scoped
    /// kind: all), sorted by namespace and name. Empty for a kind not watched.
    pub fn list(&self, gk: &GroupKind, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let Some(watched) = self.inner.watched_kind(gk) else {
            return Vec::new();
        };
        let namespace = namespace.filter(|_| watched.ctx.info.namespaced);
        watched.ctx.store.list(namespace)
    }

    /// Changes from now on. Initial LISTs are not announced; a re-LIST after
    /// `410 Gone` announces what it changed. A receiver more than
    /// [`CHANGE_CAPACITY`] changes behind gets `Lagged` and continues with the
    /// oldest change still held.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.inner.changes.subscribe()
    }

    /// Exactly the objects [`Cluster::live_for`] would return for the same
    /// arguments (the selection is the same code), read from the cache: sorted by
    /// group, kind, namespace, name. Makes no request, except
    /// [`LiveCache::ensure_kind`] for a desired kind not watched yet.
    ///
    /// Extras of kinds desired does not use are looked for in the watched kinds
    /// (where `Cluster::live_for` LISTs every listable kind of the discovery).
    pub async fn live_for(
        &self,
        desired: &[Value],
        app: Option<&str>,
        tracking_label: &str,
    ) -> Result<Vec<Value>> {
        let inner = &self.inner;
        let mut plan = LivePlan::new(app, tracking_label, &inner.cluster.default_namespace);
        for obj in desired {
            let key = LivePlan::desired_key(obj)?;
            let gk = key.group_kind();
            if !plan.has_kind(&gk) {
                let watched = inner.ensure(&gk, None).await?;
                plan.add_kind(gk, watched.ctx.info.clone());
            }
            plan.add_desired(key);
        }
        let served = match app {
            Some(_) => inner.watched(),
            None => Vec::new(),
        };
        let reads = plan.reads(served.iter().map(|w| &w.ctx.info));
        let serve = |read: &PlannedRead| -> Vec<Arc<Value>> {
            let Some(watched) = inner.watched_kind(&read.info.group_kind()) else {
                return Vec::new();
            };
            let store = &watched.ctx.store;
            match (read.labelled, app) {
                (true, Some(app)) => store.labelled(tracking_label, app),
                (true, None) => Vec::new(),
                (false, _) => store.scan(read.namespace.as_deref()),
            }
        };
        let plain = reads.plain.iter().flat_map(serve);
        let extras = reads.extras.iter().map(|read| Ok(serve(read)));
        let selected = plan.select(plain, extras)?;
        Ok(selected.into_iter().map(Arc::unwrap_or_clone).collect())
    }

    /// The number of cached objects.
    pub fn len(&self) -> usize {
        self.inner.watched().iter().map(|w| w.ctx.store.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The watched kinds, sorted by group and kind.
    pub fn kinds(&self) -> Vec<GroupKind> {
        self.inner
            .watched()
            .iter()
            .map(|w| w.ctx.info.group_kind())
            .collect()
    }

    /// The kinds [`Cluster::watch_cache_all`] skipped and why (one line each),
    /// until [`LiveCache::ensure_kind`] succeeds for them.
    pub fn skipped(&self) -> Vec<(GroupKind, String)> {
        lock(&self.inner.skipped)
            .iter()
            .map(|(gk, reason)| (gk.clone(), reason.clone()))
            .collect()
    }

    /// Stops every watch task (also done when the last handle is dropped). The
    /// cache keeps what it holds but no longer follows the cluster;
    /// [`LiveCache::ensure_kind`] of a new kind fails.
    pub fn stop(&self) {
        self.inner.stop();
    }

    /// Test hook: stops following `gk` (its objects stay). `false` if not watched.
    #[doc(hidden)]
    pub fn pause_kind_for_test(&self, gk: &GroupKind) -> bool {
        let Some(watched) = self.inner.watched_kind(gk) else {
            return false;
        };
        watched.abort();
        true
    }

    /// Test hook: follows `gk` again by a WATCH from `resource_version` (a very
    /// old one provokes `410 Gone`). `false` if not watched.
    #[doc(hidden)]
    pub fn resume_kind_for_test(&self, gk: &GroupKind, resource_version: &str) -> bool {
        let Some(watched) = self.inner.watched_kind(gk) else {
            return false;
        };
        watched.spawn(resource_version.to_string());
        true
    }

    /// Test hook: how many times `gk` was LISTed again (after `410 Gone`).
    #[doc(hidden)]
    pub fn relists_for_test(&self, gk: &GroupKind) -> u64 {
        self.inner
            .watched_kind(gk)
            .map_or(0, |w| w.ctx.relists.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(ns: &str, name: &str, rv: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "resourceVersion": rv}})
    }

    fn changes(store: &Store, items: Vec<Value>) -> Vec<(ChangeKind, String, String)> {
        let mut out: Vec<(ChangeKind, String, String)> = store
            .replace_all(items, true)
            .into_iter()
            .map(|c| {
                assert_eq!(c.object["metadata"]["name"], c.key.name.as_str());
                (
                    c.kind,
                    c.key.name,
                    c.object["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                )
            })
            .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out
    }

    #[test]
    fn relist_reconciles_the_store() {
        let store = Store::new("", "ConfigMap");
        assert!(
            store
                .replace_all(vec![cm("a", "keep", "1"), cm("a", "change", "2")], false)
                .is_empty()
        );
        store.replace_all(vec![cm("b", "gone", "3")], false);
        // The second replace_all replaced everything: only b/gone is left.
        assert_eq!(store.len(), 1);
        store.replace_all(
            vec![
                cm("a", "keep", "1"),
                cm("a", "change", "2"),
                cm("b", "gone", "3"),
            ],
            false,
        );
        assert_eq!(store.len(), 3);
        let kept = store.get("a", "keep").unwrap();

        let got = changes(
            &store,
            vec![
                cm("a", "keep", "1"),
                cm("a", "change", "5"),
                cm("c", "new", "6"),
            ],
        );
        assert_eq!(
            got,
            [
                (ChangeKind::Modified, "change".into(), "5".into()),
                (ChangeKind::Deleted, "gone".into(), "3".into()),
                (ChangeKind::Added, "new".into(), "6".into()),
            ]
        );
        assert_eq!(store.len(), 3);
        assert!(store.get("b", "gone").is_none());
        assert_eq!(
            store.get("a", "change").unwrap()["metadata"]["resourceVersion"],
            "5"
        );
        // Unchanged objects keep their allocation.
        assert!(Arc::ptr_eq(&kept, &store.get("a", "keep").unwrap()));
        // Same answer again: nothing to announce.
        assert!(
            changes(
                &store,
                vec![
                    cm("a", "keep", "1"),
                    cm("a", "change", "5"),
                    cm("c", "new", "6")
                ]
            )
            .is_empty()
        );
        assert_eq!(
            store
                .list(None)
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap())
                .collect::<Vec<_>>(),
            ["change", "keep", "new"]
        );
        assert_eq!(store.list(Some("c")).len(), 1);
        assert!(store.list(Some("b")).is_empty());
    }

    #[test]
    fn events_update_the_store() {
        let store = Store::new("", "ConfigMap");
        let added = store.upsert(cm("a", "x", "1")).unwrap();
        assert_eq!(added.kind, ChangeKind::Added);
        assert_eq!(
            added.key,
            ResourceKey {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: "a".into(),
                name: "x".into()
            }
        );
        // The same version again (a re-watch replaying it) is no change.
        assert!(store.upsert(cm("a", "x", "1")).is_none());
        assert_eq!(
            store.upsert(cm("a", "x", "2")).unwrap().kind,
            ChangeKind::Modified
        );
        assert_eq!(store.len(), 1);
        let deleted = store.remove(cm("a", "x", "3")).unwrap();
        assert_eq!(deleted.kind, ChangeKind::Deleted);
        assert_eq!(store.len(), 0);
        assert!(store.remove(cm("a", "x", "3")).is_none());
        assert!(read(&store.content).objects.is_empty());
    }

    fn labelled_names(store: &Store, value: &str) -> Vec<String> {
        let mut names: Vec<String> = store
            .labelled("app", value)
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }

    fn labelled_cm(ns: &str, name: &str, rv: &str, app: &str) -> Value {
        let mut obj = cm(ns, name, rv);
        obj["metadata"]["labels"] = json!({"app": app});
        obj
    }

    #[test]
    fn the_label_index_follows_every_change() {
        let store = Store::new("", "ConfigMap");
        store.replace_all(
            vec![
                labelled_cm("a", "x", "1", "shop"),
                labelled_cm("b", "y", "1", "shop"),
                labelled_cm("a", "z", "1", "other"),
                cm("a", "plain", "1"),
            ],
            false,
        );
        // Built on first use.
        assert_eq!(labelled_names(&store, "shop"), ["x", "y"]);
        assert!(labelled_names(&store, "none").is_empty());
        // Kept current by events.
        store.upsert(labelled_cm("a", "z", "2", "shop"));
        store.upsert(labelled_cm("c", "new", "1", "shop"));
        store.upsert(labelled_cm("a", "x", "2", "moved-away"));
        store.upsert(labelled_cm("a", "plain", "2", "shop"));
        store.remove(cm("b", "y", "3"));
        assert_eq!(labelled_names(&store, "shop"), ["new", "plain", "z"]);
        assert_eq!(labelled_names(&store, "moved-away"), ["x"]);
        assert!(labelled_names(&store, "other").is_empty());
        // An unlabelled update leaves the index.
        store.upsert(cm("a", "plain", "3"));
        assert_eq!(labelled_names(&store, "shop"), ["new", "z"]);
        // And a re-LIST rebuilds it.
        store.replace_all(
            vec![
                labelled_cm("a", "z", "2", "shop"),
                labelled_cm("d", "w", "1", "shop"),
            ],
            true,
        );
        assert_eq!(labelled_names(&store, "shop"), ["w", "z"]);
        assert!(labelled_names(&store, "moved-away").is_empty());
        // Other label keys are indexed separately.
        assert!(store.labelled("shop", "app").is_empty());
        assert_eq!(read(&store.content).by_label.len(), 2);
    }

    #[test]
    fn change_debug_omits_the_object() {
        let change = Change {
            key: ResourceKey::default(),
            kind: ChangeKind::Added,
            object: Arc::new(json!({"kind": "Secret", "data": {"password": "aHVudGVyMg=="}})),
        };
        assert!(!format!("{change:?}").contains("aHVudGVy"));
    }

    #[test]
    fn jitter_is_in_range() {
        for _ in 0..100 {
            assert!(jitter(WATCH_TIMEOUT_JITTER) < WATCH_TIMEOUT_JITTER);
        }
    }

    #[test]
    fn cache_is_send_and_sync() {
        fn is_send_sync<T: Send + Sync>() {}
        is_send_sync::<LiveCache>();
        is_send_sync::<Change>();
    }

    /// The futures of the cache are `Send`, so callers can spawn them.
    #[allow(dead_code)]
    fn futures_are_send(cluster: &Cluster, cache: &LiveCache) {
        fn is_send<T: Send>(_: T) {}
        is_send(cluster.watch_cache(&[]));
        is_send(cluster.watch_cache_all());
        is_send(cache.ensure_kind(&GroupKind::new("", "ConfigMap")));
        is_send(cache.live_for(&[], None, plumb_core::INSTANCE_LABEL));
    }
}
