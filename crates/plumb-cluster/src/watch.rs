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
//! Objects are stored compactly: as their JSON text (`serde_json::to_string`,
//! about a tenth of the memory of the `Value`: ~0.75 KB per ConfigMap), with the
//! few fields the cache reads without parsing (`resourceVersion`, the tracking-id
//! annotation, whether it has an owner; an index of the tracking label). They are parsed again on
//! demand: [`LiveCache::get`] and [`LiveCache::list`] parse what they return,
//! [`LiveCache::live_for`] only the objects it may select (the same selection as
//! [`Cluster::live_for`](crate::Cluster::live_for): see [`crate::live`]). An object whose text
//! would not give back exactly the same `Value` (a float serde_json's fast float
//! parser reads back a bit off) is kept parsed instead.
//!
//! Nothing is logged (this crate has no logger), so no object, Secret or
//! otherwise, ever reaches a log from here; [`Change`]'s `Debug` omits the
//! object too.

use crate::discovery::ResourceInfo;
use crate::error::{ClusterError, RequestContext, Result};
use crate::live::{LivePlan, PlannedRead};
use crate::live::{complete_item, is_gone, list_pages};
use crate::{Cluster, LIST_CONCURRENCY};
use futures::{StreamExt, TryStreamExt, stream};
use kube::core::WatchEvent;
use plumb_core::{GroupKind, ResourceKey, TRACKING_ID_ANNOTATION};
use serde::Deserialize;
use serde_json::Value;
use std::cell::RefCell;
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
    /// The one namespace a namespace-scoped cache lists and watches
    /// ([`Cluster::watch_cache_in`]); `None`: all namespaces.
    scope: Option<String>,
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
    /// Objects per LIST page (the cluster's).
    page_size: u32,
    /// The namespace listed and watched; `None`: all (or a cluster-scoped kind).
    namespace: Option<String>,
}

/// The objects of one kind.
struct Store {
    group: String,
    kind: String,
    content: RwLock<Content>,
    len: AtomicUsize,
}

/// A cached object, compactly: its JSON text (parsed again when asked for) and
/// the few fields the cache reads without parsing it.
#[derive(Clone)]
struct Stored {
    body: Body,
    /// `metadata.resourceVersion`.
    resource_version: Option<Box<str>>,
    /// The tracking-id annotation.
    tracking_id: Option<Box<str>>,
    /// Has it `ownerReferences` (then it is never an extra).
    owned: bool,
}

/// The object itself.
#[derive(Clone)]
enum Body {
    /// `serde_json::to_string` of the object: a tenth of the memory of the
    /// `Value` (whose maps are B-trees of `String`s), parsed on demand.
    Text(Arc<str>),
    /// An object with a floating-point number its text would not give back
    /// exactly (serde_json parses floats fast rather than correctly rounded):
    /// kept parsed. Rare: Kubernetes APIs avoid floats.
    Parsed(Arc<Value>),
}

/// The labels of an object.
type Labels = serde_json::Map<String, Value>;

fn labels(obj: &Value) -> Option<&Labels> {
    obj.get("metadata")?.get("labels")?.as_object()
}

fn label<'l>(labels: Option<&'l Labels>, key: &str) -> Option<&'l str> {
    labels?.get(key)?.as_str()
}

/// Has `value` a floating-point number anywhere.
fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}

/// Are `a` and `b` the same, floats bit for bit (`==` has `-0.0 == 0.0`).
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            x.is_f64() && y.is_f64() && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| identical(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && identical(vx, vy))
        }
        _ => a == b,
    }
}

impl Body {
    fn new(obj: &Arc<Value>) -> Body {
        match serde_json::to_string(&**obj) {
            Ok(text)
                if !has_float(obj)
                    || serde_json::from_str::<Value>(&text)
                        .is_ok_and(|back| identical(&back, obj)) =>
            {
                Body::Text(text.into())
            }
            _ => Body::Parsed(obj.clone()),
        }
    }

    /// The object. `None` if its text does not parse, which serde_json's own
    /// output always does.
    fn value(&self) -> Option<Arc<Value>> {
        match self {
            Body::Text(text) => serde_json::from_str(text).ok().map(Arc::new),
            Body::Parsed(obj) => Some(obj.clone()),
        }
    }

    /// The object's labels, without parsing the rest of it.
    fn labels(&self) -> Option<Labels> {
        /// An object parsed for its labels only (the rest is skipped).
        #[derive(Deserialize)]
        struct Object {
            metadata: Option<Metadata>,
        }
        #[derive(Deserialize)]
        struct Metadata {
            labels: Option<Labels>,
        }
        match self {
            Body::Text(text) => serde_json::from_str::<Object>(text).ok()?.metadata?.labels,
            Body::Parsed(obj) => labels(obj).cloned(),
        }
    }

    fn same(&self, other: &Body) -> bool {
        match (self, other) {
            // The text of a `Value` is canonical (sorted keys, shortest floats).
            (Body::Text(a), Body::Text(b)) => a == b,
            _ => self.value() == other.value(),
        }
    }
}

impl Stored {
    fn new(obj: &Arc<Value>) -> Stored {
        let annotation = obj
            .get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(TRACKING_ID_ANNOTATION))
            .and_then(Value::as_str);
        Stored {
            body: Body::new(obj),
            resource_version: meta_str(obj, "resourceVersion").map(Into::into),
            tracking_id: annotation.map(Into::into),
            owned: obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|o| !o.is_empty()),
        }
    }

    /// Same object version: equal `resourceVersion`s (equal contents without one).
    fn same_version(&self, other: &Stored) -> bool {
        match (&self.resource_version, &other.resource_version) {
            (Some(a), Some(b)) => a == b,
            _ => self.body.same(&other.body),
        }
    }

    /// Is it tracked by `app` through the tracking-id annotation (`<app>:...`).
    fn tracked_by_id(&self, app: &str) -> bool {
        self.tracking_id
            .as_deref()
            .and_then(|id| id.strip_prefix(app))
            .is_some_and(|rest| rest.starts_with(':'))
    }
}

/// An object of a LIST, ready to store.
struct Item {
    namespace: String,
    name: String,
    stored: Stored,
}

impl Item {
    /// `None` for an object without a name.
    fn new(obj: Value) -> Option<Item> {
        let name = meta_str(&obj, "name")?.to_string();
        let namespace = meta_str(&obj, "namespace").unwrap_or_default().to_string();
        Some(Item {
            namespace,
            name,
            stored: Stored::new(&Arc::new(obj)),
        })
    }
}

/// Namespace (empty for cluster scope) → name → object.
type Objects = HashMap<String, HashMap<String, Stored>>;

/// Label value → namespace → the names of the objects carrying it there.
type LabelIndex = HashMap<String, HashMap<String, HashSet<String>>>;

#[derive(Default)]
struct Content {
    objects: Objects,
    /// Indexes of the label keys `live_for` selects by (the tracking label),
    /// built on first use and kept current from then on.
    by_label: HashMap<String, LabelIndex>,
}

/// Records that `namespace/name` carries the indexed label with `value`.
fn add_to_index(index: &mut LabelIndex, value: &str, namespace: &str, name: &str) {
    index
        .entry(value.to_string())
        .or_default()
        .entry(namespace.to_string())
        .or_default()
        .insert(name.to_string());
}

impl Content {
    fn index(&mut self, namespace: &str, name: &str, labels: Option<&Labels>) {
        for (key, index) in &mut self.by_label {
            if let Some(value) = label(labels, key) {
                add_to_index(index, value, namespace, name);
            }
        }
    }

    /// Takes `old` (as stored) out of the indexes.
    fn unindex(&mut self, namespace: &str, name: &str, old: &Stored) {
        if self.by_label.is_empty() {
            return;
        }
        let labels = old.body.labels();
        for (key, index) in &mut self.by_label {
            let Some(value) = label(labels.as_ref(), key) else {
                continue;
            };
            let Some(namespaces) = index.get_mut(value) else {
                continue;
            };
            if let Some(names) = namespaces.get_mut(namespace) {
                names.remove(name);
                if names.is_empty() {
                    namespaces.remove(namespace);
                }
            }
            if namespaces.is_empty() {
                index.remove(value);
            }
        }
    }

    /// Indexes of `keys` over `objects` (namespace, name, object; each
    /// object's labels parsed once).
    fn build_indexes<'o>(
        objects: impl IntoIterator<Item = (&'o str, &'o str, &'o Stored)>,
        keys: Vec<String>,
    ) -> HashMap<String, LabelIndex> {
        let mut indexes: Vec<(String, LabelIndex)> = keys
            .into_iter()
            .map(|key| (key, LabelIndex::new()))
            .collect();
        if indexes.is_empty() {
            return HashMap::new();
        }
        for (namespace, name, stored) in objects {
            let labels = stored.body.labels();
            for (key, index) in &mut indexes {
                if let Some(value) = label(labels.as_ref(), key) {
                    add_to_index(index, value, namespace, name);
                }
            }
        }
        indexes.into_iter().collect()
    }

    /// Every object: namespace, name, object.
    fn all(objects: &Objects) -> impl Iterator<Item = (&str, &str, &Stored)> {
        Content::within(objects, None)
    }

    /// The objects of `namespace` (`None`: every namespace): namespace, name, object.
    fn within<'o>(
        objects: &'o Objects,
        namespace: Option<&str>,
    ) -> impl Iterator<Item = (&'o str, &'o str, &'o Stored)> {
        objects
            .iter()
            .filter(move |(ns, _)| namespace.is_none_or(|wanted| wanted == ns.as_str()))
            .flat_map(|(namespace, names)| {
                names
                    .iter()
                    .map(move |(name, stored)| (namespace.as_str(), name.as_str(), stored))
            })
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

/// The objects parsed for one [`LiveCache::live_for`]: each once, however many
/// of its reads return it (the labelled read of a kind returns again the app's
/// objects the plain reads of its namespaces return). By text address, with
/// the text (kept, so the address stays its own).
#[derive(Default)]
struct ParseOnce(RefCell<HashMap<usize, ParsedText>>);

/// A stored text and its object.
type ParsedText = (Arc<str>, Arc<Value>);

impl ParseOnce {
    fn parse(&self, body: Body) -> Option<Arc<Value>> {
        let text = match body {
            Body::Text(text) => text,
            Body::Parsed(obj) => return Some(obj),
        };
        let address = text.as_ptr() as usize;
        let mut parsed = self.0.borrow_mut();
        if let Some((_, obj)) = parsed.get(&address) {
            return Some(obj.clone());
        }
        let obj = Arc::new(serde_json::from_str::<Value>(&text).ok()?);
        parsed.insert(address, (text, obj.clone()));
        Some(obj)
    }
}

/// What a read of [`LiveCache::live_for`] returns, to select from.
struct Wanted<'a> {
    /// Only the objects labelled `tracking_label=<app>` (none without an app).
    labelled: bool,
    /// The names desired uses for the kind.
    names: Option<&'a HashSet<String>>,
    /// `(tracking_label, app)`, with an app.
    tracking: Option<(&'a str, &'a str)>,
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
        let body = read(&self.content)
            .objects
            .get(namespace)?
            .get(name)?
            .body
            .clone();
        body.value()
    }

    /// The objects in `namespace` (`None`: all), sorted by namespace and name.
    fn list(&self, namespace: Option<&str>) -> Vec<Arc<Value>> {
        self.list_where(namespace, |_| true)
    }

    /// [`Store::list`] of the objects `keep` accepts, chosen before any body is parsed.
    fn list_where(
        &self,
        namespace: Option<&str>,
        keep: impl Fn(&Stored) -> bool,
    ) -> Vec<Arc<Value>> {
        // Parsed without holding the lock.
        self.bodies(namespace, keep)
            .iter()
            .filter_map(Body::value)
            .collect()
    }

    /// The bodies of the objects in `namespace` (`None`: all) that `keep` accepts, sorted
    /// by namespace and name: shared, not parsed.
    fn bodies(&self, namespace: Option<&str>, keep: impl Fn(&Stored) -> bool) -> Vec<Body> {
        let content = read(&self.content);
        let mut out: Vec<(&str, &str, &Stored)> = Content::within(&content.objects, namespace)
            .filter(|(_, _, obj)| keep(obj))
            .collect();
        out.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        out.into_iter()
            .map(|(_, _, obj)| obj.body.clone())
            .collect()
    }

    /// Namespace and name of the objects in `namespace` (`None`: all), sorted; nothing
    /// parsed.
    fn keys(&self, namespace: Option<&str>) -> Vec<(String, String)> {
        let content = read(&self.content);
        let mut out: Vec<(String, String)> = Content::within(&content.objects, namespace)
            .map(|(ns, name, _)| (ns.to_string(), name.to_string()))
            .collect();
        out.sort_unstable();
        out
    }

    /// Indexes the label `key`, if not done yet.
    fn ensure_index(&self, key: &str) {
        if read(&self.content).by_label.contains_key(key) {
            return;
        }
        let mut content = write(&self.content);
        if !content.by_label.contains_key(key) {
            let mut built =
                Content::build_indexes(Content::all(&content.objects), vec![key.to_string()]);
            let index = built.remove(key).unwrap_or_default();
            content.by_label.insert(key.to_string(), index);
        }
    }

    /// The objects labelled `key=value` (parsed), in no particular order. The
    /// first call for a label key indexes it.
    #[cfg(test)]
    fn labelled(&self, key: &str, value: &str) -> Vec<Arc<Value>> {
        self.ensure_index(key);
        let content = read(&self.content);
        let Some(namespaces) = content.by_label.get(key).and_then(|i| i.get(value)) else {
            return Vec::new();
        };
        namespaces
            .iter()
            .flat_map(|(ns, names)| names.iter().map(move |name| (ns, name)))
            .filter_map(|(ns, name)| content.objects.get(ns)?.get(name)?.body.value())
            .collect()
    }

    /// Of the objects in `namespace` (`None`: all) that a read returns (only
    /// those labelled `tracking_label=<app>` for a `labelled` read), those
    /// [`LivePlan::select`] may keep: the names desired uses, and with an app,
    /// those it tracks (label or annotation) that have no owner: the only ones
    /// to parse. `select` still decides.
    fn candidates(&self, namespace: Option<&str>, wanted: &Wanted<'_>) -> Vec<Body> {
        if wanted.labelled && wanted.tracking.is_none() {
            return Vec::new();
        }
        if let Some((key, _)) = wanted.tracking {
            self.ensure_index(key);
        }
        let content = read(&self.content);
        let objects = &content.objects;
        let in_namespace = |ns: &str| namespace.is_none_or(|wanted| wanted == ns);
        let namespaces: Vec<(&String, &HashMap<String, Stored>)> = match namespace {
            Some(ns) => objects.get_key_value(ns).into_iter().collect(),
            None => objects.iter().collect(),
        };
        // Per namespace: the names labelled `tracking_label=<app>` there.
        let labelled_names = wanted
            .tracking
            .and_then(|(key, app)| content.by_label.get(key).and_then(|index| index.get(app)));
        let desired = |name: &str| wanted.names.is_some_and(|names| names.contains(name));
        let mut out = Vec::new();
        match wanted.tracking {
            _ if wanted.labelled => {
                for (ns, names) in labelled_names.into_iter().flatten() {
                    if !in_namespace(ns) {
                        continue;
                    }
                    for name in names {
                        if let Some(stored) = objects.get(ns).and_then(|n| n.get(name))
                            && (!stored.owned || desired(name))
                        {
                            out.push(stored.body.clone());
                        }
                    }
                }
            }
            // Without an app: only the names desired uses.
            None => {
                for (_, names) in namespaces {
                    for name in wanted.names.into_iter().flatten() {
                        if let Some(stored) = names.get(name) {
                            out.push(stored.body.clone());
                        }
                    }
                }
            }
            Some((_, app)) => {
                for (ns, names) in namespaces {
                    let labelled_here = labelled_names.and_then(|l| l.get(ns));
                    for (name, stored) in names {
                        let tracked = || {
                            labelled_here.is_some_and(|l| l.contains(name))
                                || stored.tracked_by_id(app)
                        };
                        if desired(name) || (!stored.owned && tracked()) {
                            out.push(stored.body.clone());
                        }
                    }
                }
            }
        }
        out
    }

    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Stores an added or modified object; the change, if it is one.
    fn upsert(&self, obj: Value) -> Option<Change> {
        let name = meta_str(&obj, "name")?.to_string();
        let namespace = meta_str(&obj, "namespace").unwrap_or_default().to_string();
        let obj = Arc::new(obj);
        let stored = Stored::new(&obj);
        let modified = {
            let mut content = write(&self.content);
            let content = &mut *content;
            let names = content.objects.entry(namespace.clone()).or_default();
            if let Some(old) = names.get(&name)
                && old.same_version(&stored)
            {
                return None;
            }
            let old = names.insert(name.clone(), stored);
            if let Some(old) = &old {
                content.unindex(&namespace, &name, old);
            }
            content.index(&namespace, &name, labels(&obj));
            old.is_some()
        };
        let kind = if modified {
            ChangeKind::Modified
        } else {
            self.len.fetch_add(1, Ordering::Relaxed);
            ChangeKind::Added
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
    /// ones; unchanged objects keep their allocation), when `emit`.
    fn replace_all(&self, items: Vec<Item>, emit: bool) -> Vec<Change> {
        let mut fresh = Objects::new();
        let mut count = 0;
        let mut changes: Vec<(ResourceKey, ChangeKind, Body)> = Vec::new();
        // The label indexes of the new content, built before taking the lock (an
        // object of the same version as the one stored has the same labels).
        let keys: Vec<String> = read(&self.content).by_label.keys().cloned().collect();
        let mut indexes = Content::build_indexes(
            items
                .iter()
                .map(|item| (item.namespace.as_str(), item.name.as_str(), &item.stored)),
            keys,
        );
        {
            let mut content = write(&self.content);
            let objects = &content.objects;
            for Item {
                namespace,
                name,
                stored,
            } in items
            {
                let old = objects.get(&namespace).and_then(|names| names.get(&name));
                let stored = match old {
                    Some(old) if old.same_version(&stored) => old.clone(),
                    _ => {
                        if emit {
                            let kind = if old.is_some() {
                                ChangeKind::Modified
                            } else {
                                ChangeKind::Added
                            };
                            changes.push((self.key(&namespace, &name), kind, stored.body.clone()));
                        }
                        stored
                    }
                };
                if fresh
                    .entry(namespace)
                    .or_default()
                    .insert(name, stored)
                    .is_none()
                {
                    count += 1;
                }
            }
            if emit {
                for (namespace, names) in objects {
                    for (name, old) in names {
                        let kept = fresh.get(namespace).is_some_and(|n| n.contains_key(name));
                        if !kept {
                            changes.push((
                                self.key(namespace, name),
                                ChangeKind::Deleted,
                                old.body.clone(),
                            ));
                        }
                    }
                }
            }
            // A label key indexed since (rare): indexed now.
            let missing: Vec<String> = content
                .by_label
                .keys()
                .filter(|key| !indexes.contains_key(*key))
                .cloned()
                .collect();
            indexes.extend(Content::build_indexes(Content::all(&fresh), missing));
            content.by_label = indexes;
            content.objects = fresh;
            self.len.store(count, Ordering::Relaxed);
        }
        // Parsed without holding the lock.
        changes
            .into_iter()
            .filter_map(|(key, kind, body)| {
                Some(Change {
                    key,
                    kind,
                    object: body.value()?,
                })
            })
            .collect()
    }
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
    fn complete(&self, obj: Value) -> Value {
        complete_item(&self.info, obj)
    }

    /// A full LIST (all namespaces, paged): the items (stored compactly page by
    /// page, so a LIST never holds all its objects parsed) and the version to
    /// watch from.
    async fn list_all(&self) -> Result<(Vec<Item>, String)> {
        let url = self
            .info
            .url_path(&self.info.version, self.namespace.as_deref());
        list_pages(
            &self.client,
            &url,
            None,
            self.page_size,
            &self.context("list"),
            |obj| Item::new(self.complete(obj)),
        )
        .await
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
        let url = self
            .info
            .url_path(&self.info.version, self.namespace.as_deref());
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
        if let (Some(scope), false) = (&self.scope, info.namespaced) {
            return Err(ClusterError::Api {
                code: 403,
                message: format!(
                    "{} is cluster-scoped: not watched by a cache limited to namespace {scope}",
                    info.resource_name()
                ),
            });
        }
        let namespace = self.scope.clone();
        let ctx = Arc::new(KindContext {
            namespace,
            client: self.cluster.client.clone(),
            server: self.cluster.server.clone(),
            store: Store::new(&info.group, &info.kind),
            info,
            changes: self.changes.clone(),
            relists: AtomicU64::new(0),
            page_size: self.cluster.list_page_size(),
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
            list_page: std::sync::atomic::AtomicU32::new(self.list_page_size()),
            app_group: self.app_group,
        }
    }

    fn empty_cache(&self) -> LiveCache {
        self.empty_cache_in(None)
    }

    fn empty_cache_in(&self, scope: Option<&str>) -> LiveCache {
        LiveCache {
            inner: Arc::new(Inner {
                cluster: self.handle(),
                kinds: RwLock::new(HashMap::new()),
                changes: broadcast::channel(CHANGE_CAPACITY).0,
                stopped: AtomicBool::new(false),
                skipped: Mutex::new(BTreeMap::new()),
                scope: scope.map(str::to_string),
            }),
        }
    }

    /// A cache of `kinds` (all namespaces, or cluster scope): one LIST then one
    /// WATCH each, the LISTs concurrently ([`LIST_CONCURRENCY`] at a time).
    /// Returns once every initial LIST is in the cache. A kind that is not
    /// served, cannot be listed and watched, or whose LIST fails is an error.
    pub async fn watch_cache(&self, kinds: &[GroupKind]) -> Result<LiveCache> {
        self.watch_cache_scoped(kinds, None).await
    }

    /// Like [`Cluster::watch_cache`], limited to `namespace`: for a client
    /// whose rights are a Role there (no cluster-wide LIST or WATCH). A
    /// cluster-scoped kind is an error (403, naming the kind); so is, later,
    /// [`LiveCache::ensure_kind`] of one.
    pub async fn watch_cache_in(&self, kinds: &[GroupKind], namespace: &str) -> Result<LiveCache> {
        self.watch_cache_scoped(kinds, Some(namespace)).await
    }

    async fn watch_cache_scoped(
        &self,
        kinds: &[GroupKind],
        scope: Option<&str>,
    ) -> Result<LiveCache> {
        let cache = self.empty_cache_in(scope);
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
        self.store_of(gk, namespace)
            .map_or_else(Vec::new, |(watched, ns)| watched.ctx.store.list(ns))
    }

    /// The watched kind `gk` and the namespace to read of it (`None` for a cluster-scoped
    /// kind); `None` for a kind not watched.
    fn store_of<'n>(
        &self,
        gk: &GroupKind,
        namespace: Option<&'n str>,
    ) -> Option<(Arc<Watched>, Option<&'n str>)> {
        let watched = self.inner.watched_kind(gk)?;
        let namespace = namespace.filter(|_| watched.ctx.info.namespaced);
        Some((watched, namespace))
    }

    /// Namespace and name of the cached objects of `gk` in `namespace` (`None`, or a
    /// cluster-scoped kind: all), sorted; no object parsed. Empty for a kind not watched.
    pub fn keys(&self, gk: &GroupKind, namespace: Option<&str>) -> Vec<(String, String)> {
        self.store_of(gk, namespace)
            .map_or_else(Vec::new, |(watched, ns)| watched.ctx.store.keys(ns))
    }

    /// Calls `f` with each cached object of `gk` in `namespace` (as [`LiveCache::list`]),
    /// parsed one at a time: what reads every Application of a big namespace holds one
    /// parsed object at a time, not all of them (10,000 parsed Applications with their
    /// status are about 500 MB).
    pub fn each(&self, gk: &GroupKind, namespace: Option<&str>, mut f: impl FnMut(&Value)) {
        let Some((watched, namespace)) = self.store_of(gk, namespace) else {
            return;
        };
        for body in watched.ctx.store.bodies(namespace, |_| true) {
            if let Some(obj) = body.value() {
                f(&obj);
            }
        }
    }

    /// The cached objects of every namespaced kind watched, in `namespace`: by group and
    /// kind, then name. No request (a kind not watched is not looked at). What the
    /// controller looks for orphaned resources in.
    pub fn in_namespace(&self, namespace: &str) -> Vec<Arc<Value>> {
        self.inner
            .watched()
            .iter()
            .filter(|w| w.ctx.info.namespaced)
            .flat_map(|w| w.ctx.store.list(Some(namespace)))
            .collect()
    }

    /// The objects of `namespace` without `ownerReferences` (what orphaned resources are
    /// looked for in), of every namespaced kind watched: the owned ones (Pods, ReplicaSets,
    /// …) are skipped before their bodies are parsed.
    pub fn top_level_in_namespace(&self, namespace: &str) -> Vec<Arc<Value>> {
        self.inner
            .watched()
            .iter()
            .filter(|w| w.ctx.info.namespaced)
            .flat_map(|w| w.ctx.store.list_where(Some(namespace), |o| !o.owned))
            .collect()
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
        plan.add_all(desired, |gk| async move {
            inner.ensure(&gk, None).await.map(|w| w.ctx.info.clone())
        })
        .await?;
        // Per desired kind, the names desired uses.
        let names: HashMap<GroupKind, HashSet<String>> = plan
            .kinds()
            .map(|gk| (gk.clone(), plan.names_of(gk)))
            .collect();
        let served = match app {
            Some(_) => inner.watched(),
            None => Vec::new(),
        };
        let reads = plan.reads(served.iter().map(|w| &w.ctx.info));
        // Only the objects `select` may keep are parsed, each once.
        let parsed = ParseOnce::default();
        let serve = |read: &PlannedRead| -> Vec<Arc<Value>> {
            let gk = read.info.group_kind();
            let Some(watched) = inner.watched_kind(&gk) else {
                return Vec::new();
            };
            let wanted = Wanted {
                labelled: read.labelled,
                names: names.get(&gk),
                tracking: app.map(|app| (tracking_label, app)),
            };
            let candidates = watched
                .ctx
                .store
                .candidates(read.namespace.as_deref(), &wanted);
            candidates
                .into_iter()
                .filter_map(|body| parsed.parse(body))
                .collect()
        };
        let plain = reads.plain.iter().flat_map(serve);
        let extras = reads.extras.iter().map(|read| Ok(serve(read)));
        let selected = plan.select(plain, extras)?;
        // The selected objects are then this function's only references.
        drop(parsed);
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

    /// The candidates of a read, parsed.
    fn select_from(store: &Store, namespace: Option<&str>, wanted: &Wanted<'_>) -> Vec<Value> {
        store
            .candidates(namespace, wanted)
            .into_iter()
            .filter_map(|body| body.value())
            .map(Arc::unwrap_or_clone)
            .collect()
    }

    /// `objects`, as a LIST answer.
    fn items(objects: Vec<Value>) -> Vec<Item> {
        objects.into_iter().filter_map(Item::new).collect()
    }

    /// The text a stored object is kept as (panics if kept parsed).
    fn text(store: &Store, ns: &str, name: &str) -> Arc<str> {
        match &read(&store.content).objects[ns][name].body {
            Body::Text(text) => text.clone(),
            Body::Parsed(_) => panic!("{ns}/{name} is not stored as text"),
        }
    }

    fn changes(store: &Store, objects: Vec<Value>) -> Vec<(ChangeKind, String, String)> {
        let mut out: Vec<(ChangeKind, String, String)> = store
            .replace_all(items(objects), true)
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
                .replace_all(
                    items(vec![cm("a", "keep", "1"), cm("a", "change", "2")]),
                    false
                )
                .is_empty()
        );
        store.replace_all(items(vec![cm("b", "gone", "3")]), false);
        // The second replace_all replaced everything: only b/gone is left.
        assert_eq!(store.len(), 1);
        store.replace_all(
            items(vec![
                cm("a", "keep", "1"),
                cm("a", "change", "2"),
                cm("b", "gone", "3"),
            ]),
            false,
        );
        assert_eq!(store.len(), 3);
        let kept = text(&store, "a", "keep");

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
        assert!(Arc::ptr_eq(&kept, &text(&store, "a", "keep")));
        assert_eq!(*store.get("a", "keep").unwrap(), cm("a", "keep", "1"));
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
            items(vec![
                labelled_cm("a", "x", "1", "shop"),
                labelled_cm("b", "y", "1", "shop"),
                labelled_cm("a", "z", "1", "other"),
                cm("a", "plain", "1"),
            ]),
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
            items(vec![
                labelled_cm("a", "z", "2", "shop"),
                labelled_cm("d", "w", "1", "shop"),
            ]),
            true,
        );
        assert_eq!(labelled_names(&store, "shop"), ["w", "z"]);
        assert!(labelled_names(&store, "moved-away").is_empty());
        // Other label keys are indexed separately.
        assert!(store.labelled("shop", "app").is_empty());
        assert_eq!(read(&store.content).by_label.len(), 2);
    }

    /// An object with every kind of JSON value a stored object may hold.
    fn odd_object(float: f64) -> Value {
        let mut obj = cm("ns", "odd", "7");
        obj["data"] = json!({
            "unicode": "naïve – 日本語 🦀 \u{0} \u{1f} \"quoted\" back\\slash \u{2028}",
            "": "empty key",
            "🔑": "unicode key",
        });
        obj["spec"] = json!({
            "empty_map": {},
            "empty_array": [],
            "empty_string": "",
            "nested": [[], {}, [{}], {"a": [null, true, false]}],
            "u64_max": u64::MAX,
            "i64_min": i64::MIN,
            "zero": 0,
            "negative": -1,
            "big_float": 1e300,
            "tiny_float": 5e-324,
            "negative_zero": -0.0,
            "one_point_zero": 1.0,
            "float": float,
        });
        obj
    }

    #[test]
    fn stored_objects_round_trip_exactly() {
        // A float serde_json's fast parser reads back one bit off, and one it
        // reads back exactly.
        let off = 1.0715660391465826e-75;
        let exact = 0.5;
        let back = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        assert!(!identical(
            &back(&serde_json::to_string(&json!(off)).unwrap()),
            &json!(off)
        ));
        assert!(identical(&back("-0.0"), &json!(-0.0)));
        assert!(!identical(&json!(0.0), &json!(-0.0)));
        assert!(!identical(&json!(1), &json!(1.0)));

        for (float, as_text) in [(exact, true), (off, false)] {
            let obj = odd_object(float);
            let body = Body::new(&Arc::new(obj.clone()));
            assert_eq!(matches!(body, Body::Text(_)), as_text, "{float:e}");
            let value = body.value().unwrap();
            assert!(identical(&value, &obj), "{float:e}");
            assert_eq!(*value, obj);

            // Through the store, each way in and out.
            let store = Store::new("", "ConfigMap");
            store.replace_all(items(vec![obj.clone()]), false);
            assert!(identical(&store.get("ns", "odd").unwrap(), &obj));
            assert!(identical(&store.list(None)[0], &obj));
            let changed = odd_object(float);
            let mut changed_rv = changed.clone();
            changed_rv["metadata"]["resourceVersion"] = json!("8");
            let change = store.upsert(changed_rv.clone()).unwrap();
            assert!(identical(&change.object, &changed_rv));
            assert!(identical(&store.get("ns", "odd").unwrap(), &changed_rv));
            let wanted = Wanted {
                labelled: false,
                names: Some(&HashSet::from(["odd".to_string()])),
                tracking: None,
            };
            assert!(identical(
                &select_from(&store, Some("ns"), &wanted)[0],
                &changed_rv
            ));
            let changes = store.replace_all(items(vec![changed]), true);
            assert_eq!(changes.len(), 1);
            assert!(identical(&changes[0].object, &odd_object(float)));
        }
    }

    #[test]
    fn unreadable_text_is_skipped() {
        let store = Store::new("", "ConfigMap");
        store.replace_all(items(vec![cm("a", "x", "1"), cm("a", "y", "1")]), false);
        write(&store.content)
            .objects
            .get_mut("a")
            .unwrap()
            .get_mut("x")
            .unwrap()
            .body = Body::Text("{not json".into());
        assert!(store.get("a", "x").is_none());
        assert_eq!(store.list(None).len(), 1);
        let wanted = Wanted {
            labelled: false,
            names: Some(&HashSet::from(["x".to_string(), "y".to_string()])),
            tracking: None,
        };
        assert_eq!(select_from(&store, Some("a"), &wanted).len(), 1);
        // Gone from the next LIST: no object to announce, so no change.
        assert!(
            store
                .replace_all(items(vec![cm("a", "y", "1")]), true)
                .is_empty()
        );
        assert_eq!(store.len(), 1);
    }

    fn selected(store: &Store, namespace: Option<&str>, wanted: &Wanted<'_>) -> Vec<String> {
        let mut names: Vec<String> = select_from(store, namespace, wanted)
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn live_for_parses_only_what_select_may_keep() {
        let store = Store::new("", "ConfigMap");
        let owner = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "1"}]);
        let mut owned = labelled_cm("a", "owned", "1", "shop");
        owned["metadata"]["ownerReferences"] = owner.clone();
        let mut owned_desired = labelled_cm("a", "owned-desired", "1", "shop");
        owned_desired["metadata"]["ownerReferences"] = owner;
        let mut annotated = cm("a", "annotated", "1");
        annotated["metadata"]["annotations"] =
            json!({TRACKING_ID_ANNOTATION: "shop:/ConfigMap:a/annotated"});
        let mut other_app = cm("a", "other-app", "1");
        other_app["metadata"]["annotations"] =
            json!({TRACKING_ID_ANNOTATION: "shopping:/ConfigMap:a/other-app"});
        store.replace_all(
            items(vec![
                labelled_cm("a", "labelled", "1", "shop"),
                owned,
                owned_desired,
                annotated,
                other_app,
                cm("a", "desired", "1"),
                cm("a", "unrelated", "1"),
                labelled_cm("b", "elsewhere", "1", "shop"),
                cm("b", "desired", "1"),
            ]),
            false,
        );
        let desired = HashSet::from(["desired".to_string(), "owned-desired".to_string()]);
        let app = Wanted {
            labelled: false,
            names: Some(&desired),
            tracking: Some(("app", "shop")),
        };
        assert_eq!(
            selected(&store, Some("a"), &app),
            ["annotated", "desired", "labelled", "owned-desired"]
        );
        assert_eq!(
            selected(&store, None, &app),
            [
                "annotated",
                "desired",
                "desired",
                "elsewhere",
                "labelled",
                "owned-desired"
            ]
        );
        let labelled = Wanted {
            labelled: true,
            ..app
        };
        assert_eq!(
            selected(&store, None, &labelled),
            ["elsewhere", "labelled", "owned-desired"]
        );
        assert_eq!(selected(&store, Some("b"), &labelled), ["elsewhere"]);
        // Without an app: the names desired uses, and no label read.
        let no_app = Wanted {
            labelled: false,
            names: Some(&desired),
            tracking: None,
        };
        assert_eq!(
            selected(&store, Some("a"), &no_app),
            ["desired", "owned-desired"]
        );
        assert_eq!(selected(&store, None, &no_app).len(), 3);
        assert!(
            select_from(
                &store,
                None,
                &Wanted {
                    labelled: true,
                    ..no_app
                }
            )
            .is_empty()
        );
        assert!(
            select_from(
                &store,
                Some("a"),
                &Wanted {
                    names: None,
                    ..no_app
                }
            )
            .is_empty()
        );
        // The index follows changes.
        store.upsert(cm("a", "labelled", "2"));
        store.upsert(labelled_cm("a", "unrelated", "2", "shop"));
        assert_eq!(
            selected(&store, Some("a"), &app),
            ["annotated", "desired", "owned-desired", "unrelated"]
        );
    }

    #[test]
    fn keys_and_bodies_are_sorted_and_unparsed() {
        let store = Store::new("", "ConfigMap");
        store.replace_all(
            items(vec![
                cm("b", "x", "1"),
                cm("a", "z", "2"),
                cm("a", "y", "3"),
            ]),
            false,
        );
        let all = [("a", "y"), ("a", "z"), ("b", "x")].map(|(n, m)| (n.into(), m.into()));
        assert_eq!(store.keys(None), all.to_vec());
        assert_eq!(store.keys(Some("b")), all[2..].to_vec());
        // Each body is the stored text (shared, not a parsed copy), in the same order.
        let names: Vec<String> = store
            .bodies(None, |_| true)
            .iter()
            .filter_map(Body::value)
            .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(names, ["y", "z", "x"]);
        assert!(
            store
                .bodies(Some("a"), |_| true)
                .iter()
                .all(|b| matches!(b, Body::Text(_)))
        );
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
