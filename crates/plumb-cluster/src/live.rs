//! Reading live objects: one LIST per kind (and namespace), concurrently.
//!
//! Every LIST is read in pages of [`crate::LIST_PAGE_SIZE`] (500). [`crate::Cluster::live_for`]
//! and the watch cache's [`crate::LiveCache::live_for`] share one selection of what a compare
//! sees (`LivePlan`, also used by the in-memory cluster): `add_all` is the one loop over the
//! desired kinds, each caller passing how it resolves a kind.

use crate::discovery::ResourceInfo;
use crate::error::{ClusterError, Result};
use crate::{Cluster, LIST_CONCURRENCY};
use futures::{StreamExt, TryStreamExt, stream};
use plumb_core::{GroupKind, ResourceKey, TRACKING_ID_ANNOTATION};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// One page of a `*List` answer, the part plumb reads. Items lack `apiVersion`/`kind`.
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

/// Whether a request failed with 410 Gone (an expired resourceVersion or continue token).
pub(crate) fn is_gone(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 410)
}

/// Reads the LIST at `url` page by page (`page_size` objects a page, as kubectl and client-go
/// read), each item through `keep` as its page arrives (so a LIST need never hold all its
/// objects as they came). A continue token that expires between pages (410) starts the LIST
/// over, at most twice. Returns the kept items and the list's resourceVersion.
pub(crate) async fn list_pages<T>(
    client: &kube::Client,
    url: &str,
    selector: Option<&str>,
    page_size: u32,
    ctx: &crate::error::RequestContext<'_>,
    mut keep: impl FnMut(Value) -> Option<T>,
) -> Result<(Vec<T>, String)> {
    let mut attempts = 0;
    'again: loop {
        attempts += 1;
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let params = kube::api::ListParams {
                label_selector: selector.map(str::to_string),
                limit: Some(page_size),
                continue_token: token.take(),
                ..Default::default()
            };
            let request = kube::core::Request::new(url).list(&params).map_err(|e| {
                ClusterError::Protocol {
                    reason: e.to_string(),
                }
            })?;
            let page: ListPage = match client.request(request).await {
                Ok(page) => page,
                Err(e) if is_gone(&e) && attempts < 3 && !items.is_empty() => continue 'again,
                Err(e) => return Err(ClusterError::from_kube(e, ctx)),
            };
            items.extend(page.items.into_iter().filter_map(&mut keep));
            match page.metadata.continue_token {
                Some(t) if !t.is_empty() => token = Some(t),
                _ => return Ok((items, page.metadata.resource_version)),
            }
        }
    }
}

/// Completes a listed item with the `apiVersion` and `kind` its LIST leaves out.
pub(crate) fn complete_item(info: &ResourceInfo, mut obj: Value) -> Value {
    if let Some(map) = obj.as_object_mut() {
        map.insert("apiVersion".to_string(), Value::String(info.api_version()));
        map.insert("kind".to_string(), Value::String(info.kind.clone()));
    }
    obj
}

/// One LIST to make: a kind, a namespace (`None`: all namespaces, or cluster
/// scope) and an optional label selector.
#[derive(Debug, Clone)]
pub(crate) struct ListRequest {
    pub info: ResourceInfo,
    pub namespace: Option<String>,
    pub selector: Option<String>,
}

/// Does `obj` belong to `app`: the tracking label equals the app name, or the
/// tracking-id annotation starts with `<app>:` (Argo CD's two tracking methods).
pub(crate) fn is_tracked(obj: &Value, app: &str, tracking_label: &str) -> bool {
    let meta = obj.get("metadata");
    let label = meta
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(tracking_label))
        .and_then(Value::as_str);
    if label == Some(app) {
        return true;
    }
    meta.and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(TRACKING_ID_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|id| id.strip_prefix(app))
        .is_some_and(|rest| rest.starts_with(':'))
}

impl Cluster {
    /// One LIST (in pages of [`Cluster::list_page_size`] objects, as kubectl and client-go
    /// read), its items completed with `apiVersion` and `kind`.
    pub(crate) async fn list_one(&self, req: &ListRequest) -> Result<Vec<Value>> {
        let info = &req.info;
        let url = info.url_path(&info.version, req.namespace.as_deref());
        let ctx = self.context("list", info, req.namespace.as_deref());
        let (items, _) = list_pages(
            &self.client,
            &url,
            req.selector.as_deref(),
            self.list_page_size(),
            &ctx,
            |obj| Some(complete_item(info, obj)),
        )
        .await?;
        Ok(items)
    }

    /// Runs LISTs concurrently (at most [`LIST_CONCURRENCY`] in flight); the
    /// answers in request order. The first error wins.
    pub(crate) async fn list_many(&self, requests: Vec<ListRequest>) -> Result<Vec<Vec<Value>>> {
        stream::iter(requests)
            .map(|req| async move { self.list_one(&req).await })
            .buffered(LIST_CONCURRENCY)
            .try_collect()
            .await
    }

    /// Like [`Cluster::list_many`], each answer on its own (for callers that
    /// tolerate some failures).
    pub(crate) async fn list_each(&self, requests: Vec<ListRequest>) -> Vec<Result<Vec<Value>>> {
        stream::iter(requests)
            .map(|req| async move { self.list_one(&req).await })
            .buffered(LIST_CONCURRENCY)
            .collect()
            .await
    }

    /// Every object in `namespace` of every namespaced kind the server serves and lists
    /// (Events, Endpoints, EndpointSlices and Leases excepted, as in the controller's watch
    /// cache): one LIST per kind, concurrently, sorted by group, kind and name. A kind
    /// this client may not list (or whose LIST the server fails) is left out and named,
    /// with its error, in the second part of the answer; an unreachable server fails.
    /// Discovery is the client's cached one ([`Cluster::api_resources`]). What `plumb app get
    /// --orphaned` looks for orphaned resources in (the controller reads its watch cache:
    /// [`crate::LiveCache::top_level_in_namespace`]).
    pub async fn namespace_objects(
        &self,
        namespace: &str,
    ) -> Result<(Vec<Value>, Vec<(GroupKind, ClusterError)>)> {
        let resources = self.api_resources().await?;
        let requests: Vec<ListRequest> = resources
            .iter()
            .filter(|info| {
                info.namespaced
                    && info.supports("list")
                    && !crate::snapshot::NEVER_TRACKED
                        .iter()
                        .any(|(g, k)| *g == info.group && *k == info.kind)
            })
            .map(|info| ListRequest {
                info: info.clone(),
                namespace: Some(namespace.to_string()),
                selector: None,
            })
            .collect();
        let kinds: Vec<GroupKind> = requests.iter().map(|r| r.info.group_kind()).collect();
        let mut objects = Vec::new();
        let mut skipped = Vec::new();
        for (gk, result) in kinds.into_iter().zip(self.list_each(requests).await) {
            match result {
                Ok(items) => objects.extend(items),
                Err(e @ ClusterError::Unreachable { .. }) => return Err(e),
                Err(e) => skipped.push((gk, e)),
            }
        }
        objects.sort_by_cached_key(ResourceKey::of);
        Ok((objects, skipped))
    }

    /// The live objects of `kinds`: one LIST per kind across all namespaces, or
    /// one per kind and namespace when `namespaces` is given (cluster-scoped
    /// kinds are always listed once). All LISTs run concurrently. Items carry
    /// `apiVersion` (the kind's preferred version) and `kind`; `managedFields`
    /// are kept.
    ///
    /// A kind the server does not serve is [`ClusterError::UnknownKind`].
    pub async fn list_live(
        &self,
        kinds: &[GroupKind],
        namespaces: Option<&[String]>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Value>> {
        let unique: BTreeSet<&GroupKind> = kinds.iter().collect();
        let namespaces: Option<BTreeSet<&String>> = namespaces.map(|n| n.iter().collect());
        let mut requests = Vec::new();
        for gk in unique {
            let info = self.resource_for(&gk.group, &gk.kind).await?;
            match (&namespaces, info.namespaced) {
                (Some(list), true) => requests.extend(list.iter().map(|ns| ListRequest {
                    info: info.clone(),
                    namespace: Some(ns.to_string()),
                    selector: label_selector.map(str::to_string),
                })),
                _ => requests.push(ListRequest {
                    info,
                    namespace: None,
                    selector: label_selector.map(str::to_string),
                }),
            }
        }
        Ok(self
            .list_many(requests)
            .await?
            .into_iter()
            .flatten()
            .collect())
    }

    /// The live objects `plumb diff --cluster` compares `desired` with: for each
    /// kind in `desired`,
    ///
    /// - the objects desired names (a desired object need not carry the
    ///   tracking label yet, so the label cannot be the only filter), and
    /// - the objects tracked by `app` (label `tracking_label=<app>`, or the
    ///   `argocd.argoproj.io/tracking-id` annotation `<app>:...`): these are the
    ///   extras Argo CD would report as needing pruning.
    ///
    /// Requests, per kind: namespaced kinds get one unfiltered LIST per namespace
    /// that desired uses (objects without a namespace are in the context's
    /// default namespace: default namespaces beforehand for another rule), read
    /// for both desired names and tracked objects; with an `app`, one more LIST
    /// across all namespaces with the label selector finds labelled extras in
    /// other namespaces (skipped when forbidden: RBAC limited to the app's
    /// namespaces still works). Cluster-scoped kinds get one unfiltered LIST.
    /// With an `app`, extras of kinds desired does not use are looked for too: every
    /// other listable kind in desired's namespaces, and cluster-scoped kinds by the
    /// tracking label. Objects with an owner (a ReplicaSet's Pods) are never extras.
    ///
    /// The result is sorted by group, kind, namespace, name.
    pub async fn live_for(
        &self,
        desired: &[Value],
        app: Option<&str>,
        tracking_label: &str,
    ) -> Result<Vec<Value>> {
        let mut plan = LivePlan::new(app, tracking_label, &self.default_namespace);
        plan.add_all(desired, |gk| async move {
            self.resource_for(&gk.group, &gk.kind).await
        })
        .await?;
        // Kinds git does not use can still hold the app's objects (prune candidates).
        let served = match app {
            Some(_) => self.api_resources().await?,
            None => Default::default(),
        };
        let reads = plan.reads(served.iter());
        let to_requests = |reads: Vec<PlannedRead>| -> Vec<ListRequest> {
            reads
                .into_iter()
                .map(|r| r.into_list_request(app, tracking_label))
                .collect()
        };
        let (plain, extras) = futures::join!(
            self.list_many(to_requests(reads.plain)),
            self.list_each(to_requests(reads.extras))
        );
        plan.select(plain?.into_iter().flatten(), extras)
    }
}

/// What [`Cluster::live_for`] reads and keeps, whoever serves the reads (LISTs,
/// or the watch cache of [`crate::LiveCache::live_for`]): both build the same
/// plan and select with it, so they return the same objects.
///
/// Use: [`LivePlan::desired_key`] + [`LivePlan::add_kind`] (once per kind, with
/// the resource serving it) + [`LivePlan::add_desired`] for each desired object,
/// then [`LivePlan::reads`], serve them, and [`LivePlan::select`].
pub(crate) struct LivePlan<'a> {
    app: Option<&'a str>,
    tracking_label: &'a str,
    /// Where desired objects without a namespace go.
    default_namespace: &'a str,
    /// Per desired kind: its resource and the namespaces desired uses.
    kinds: BTreeMap<GroupKind, (ResourceInfo, BTreeSet<String>)>,
    /// The keys desired names (namespaces defaulted, cleared for cluster scope).
    wanted: HashSet<ResourceKey>,
}

/// One read of a [`LivePlan`]: the objects of a kind in a namespace (`None`: all
/// namespaces, or cluster scope), only those labelled `tracking_label=<app>`
/// when `labelled`.
#[derive(Debug, Clone)]
pub(crate) struct PlannedRead {
    pub info: ResourceInfo,
    pub namespace: Option<String>,
    pub labelled: bool,
}

impl PlannedRead {
    /// The LIST serving this read.
    pub(crate) fn into_list_request(self, app: Option<&str>, tracking_label: &str) -> ListRequest {
        let selector = match (self.labelled, app) {
            (true, Some(app)) => Some(format!("{tracking_label}={app}")),
            _ => None,
        };
        ListRequest {
            info: self.info,
            namespace: self.namespace,
            selector,
        }
    }
}

/// The reads of a [`LivePlan`]: `plain` ones must succeed; `extras` are looked
/// for on a best-effort basis.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlannedReads {
    pub plain: Vec<PlannedRead>,
    pub extras: Vec<PlannedRead>,
}

impl<'a> LivePlan<'a> {
    pub(crate) fn new(
        app: Option<&'a str>,
        tracking_label: &'a str,
        default_namespace: &'a str,
    ) -> LivePlan<'a> {
        LivePlan {
            app,
            tracking_label,
            default_namespace,
            kinds: BTreeMap::new(),
            wanted: HashSet::new(),
        }
    }

    /// The key of a desired object, as the object states it.
    pub(crate) fn desired_key(obj: &Value) -> Result<ResourceKey> {
        ResourceKey::of(obj).ok_or_else(|| ClusterError::InvalidObject {
            reason: "a desired object lacks apiVersion, kind or metadata.name".to_string(),
        })
    }

    /// Is the resource of `gk` known already.
    pub(crate) fn has_kind(&self, gk: &GroupKind) -> bool {
        self.kinds.contains_key(gk)
    }

    /// Adds every desired object, `resolve` giving the resource that serves a kind (asked
    /// once per kind, in the order desired first uses them; the real cluster's discovery, the
    /// watch cache, the in-memory cluster). A kind not served whose CustomResourceDefinition is
    /// itself desired has nothing live yet: its objects are left out. Any other error of
    /// `resolve` is returned.
    pub(crate) async fn add_all<F, Fut>(&mut self, desired: &[Value], mut resolve: F) -> Result<()>
    where
        F: FnMut(GroupKind) -> Fut,
        Fut: std::future::Future<Output = Result<ResourceInfo>>,
    {
        let mut not_served: HashSet<GroupKind> = HashSet::new();
        for obj in desired {
            let key = LivePlan::desired_key(obj)?;
            let gk = key.group_kind();
            if not_served.contains(&gk) {
                continue;
            }
            if !self.has_kind(&gk) {
                let info = match resolve(gk.clone()).await {
                    Ok(info) => info,
                    Err(ClusterError::UnknownKind { .. }) if crd_desired(desired, &gk) => {
                        not_served.insert(gk);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                self.add_kind(gk, info);
            }
            self.add_desired(key);
        }
        Ok(())
    }

    /// The kinds desired uses that are served.
    pub(crate) fn kinds(&self) -> impl Iterator<Item = &GroupKind> {
        self.kinds.keys()
    }

    /// The names desired uses of kind `gk`.
    pub(crate) fn names_of(&self, gk: &GroupKind) -> HashSet<String> {
        self.wanted
            .iter()
            .filter(|k| k.group == gk.group && k.kind == gk.kind)
            .map(|k| k.name.clone())
            .collect()
    }

    /// The resource serving a desired kind (before its objects are added).
    pub(crate) fn add_kind(&mut self, gk: GroupKind, info: ResourceInfo) {
        self.kinds.entry(gk).or_insert((info, BTreeSet::new()));
    }

    /// Records a desired object's key (from [`LivePlan::desired_key`]; its kind
    /// added already): namespace defaulted for namespaced kinds, cleared for
    /// cluster-scoped ones.
    pub(crate) fn add_desired(&mut self, mut key: ResourceKey) {
        let Some(entry) = self.kinds.get_mut(&key.group_kind()) else {
            return;
        };
        if entry.0.namespaced {
            if key.namespace.is_empty() {
                key.namespace = self.default_namespace.to_string();
            }
            entry.1.insert(key.namespace.clone());
        } else {
            key.namespace.clear();
        }
        self.wanted.insert(key);
    }

    /// What to read, `served` being the kinds the server serves (only read with
    /// an `app`: for extras of kinds desired does not use).
    pub(crate) fn reads<'r>(
        &self,
        served: impl IntoIterator<Item = &'r ResourceInfo>,
    ) -> PlannedReads {
        let mut plain = Vec::new();
        let mut extras = Vec::new();
        for (info, namespaces) in self.kinds.values() {
            if !info.namespaced {
                plain.push(PlannedRead {
                    info: info.clone(),
                    namespace: None,
                    labelled: false,
                });
                continue;
            }
            for ns in namespaces {
                plain.push(PlannedRead {
                    info: info.clone(),
                    namespace: Some(ns.clone()),
                    labelled: false,
                });
            }
            if self.app.is_some() {
                extras.push(PlannedRead {
                    info: info.clone(),
                    namespace: None,
                    labelled: true,
                });
            }
        }

        // Kinds git does not use can still hold the app's objects (prune candidates).
        if self.app.is_some() {
            let all_namespaces: BTreeSet<&String> = self
                .wanted
                .iter()
                .filter(|k| !k.namespace.is_empty())
                .map(|k| &k.namespace)
                .collect();
            for info in served {
                let never = crate::snapshot::NEVER_TRACKED
                    .iter()
                    .any(|(g, k)| *g == info.group && *k == info.kind);
                if never || !info.supports("list") || self.has_kind(&info.group_kind()) {
                    continue;
                }
                if info.namespaced {
                    for ns in &all_namespaces {
                        extras.push(PlannedRead {
                            info: info.clone(),
                            namespace: Some((*ns).clone()),
                            labelled: false,
                        });
                    }
                } else {
                    extras.push(PlannedRead {
                        info: info.clone(),
                        namespace: None,
                        labelled: true,
                    });
                }
            }
        }
        PlannedReads { plain, extras }
    }

    /// Keeps, of what the reads returned (`plain`: every object of the plain
    /// reads; `extras`: the answer of each extra read), the objects desired names
    /// and the objects the app tracks that have no owner; sorted by group, kind,
    /// namespace, name. An extra read that was forbidden or failed with another
    /// API error is skipped; any other error is returned.
    pub(crate) fn select<T: Borrow<Value>>(
        &self,
        plain: impl IntoIterator<Item = T>,
        extras: impl IntoIterator<Item = Result<Vec<T>>>,
    ) -> Result<Vec<T>> {
        let app = self.app;
        let tracking_label = self.tracking_label;
        let mut found: BTreeMap<String, T> = BTreeMap::new();
        for obj in plain {
            let value = obj.borrow();
            let Some(key) = ResourceKey::of(value) else {
                continue;
            };
            let tracked = app.is_some_and(|a| is_tracked(value, a, tracking_label));
            if self.wanted.contains(&key) || (tracked && !plumb_core::argo::has_owner(value)) {
                found.insert(key.sort_key(), obj);
            }
        }
        for result in extras {
            let objects = match result {
                Ok(objects) => objects,
                // Extras are looked for on a best-effort basis: a kind this user may not
                // list, or an aggregated API that is down, does not fail the diff.
                Err(ClusterError::Forbidden { .. } | ClusterError::Api { .. }) => continue,
                Err(e) => return Err(e),
            };
            for obj in objects {
                let value = obj.borrow();
                let tracked = app.is_some_and(|a| is_tracked(value, a, tracking_label));
                if plumb_core::argo::has_owner(value) || !tracked {
                    continue;
                }
                if let Some(key) = ResourceKey::of(value) {
                    found.entry(key.sort_key()).or_insert(obj);
                }
            }
        }
        Ok(found.into_values().collect())
    }
}

/// Whether `desired` holds the CustomResourceDefinition of `gk` (a kind a sync installs).
pub(crate) fn crd_desired(desired: &[Value], gk: &GroupKind) -> bool {
    desired
        .iter()
        .any(|o| GroupKind::defined_by(o).as_ref() == Some(gk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tracking_by_label_or_annotation() {
        let label = json!({"metadata": {"labels": {"app.kubernetes.io/instance": "shop"}}});
        assert!(is_tracked(&label, "shop", "app.kubernetes.io/instance"));
        assert!(!is_tracked(&label, "shop2", "app.kubernetes.io/instance"));
        let ann = json!({"metadata": {"annotations": {TRACKING_ID_ANNOTATION: "shop:apps/Deployment:prod/web"}}});
        assert!(is_tracked(&ann, "shop", "app.kubernetes.io/instance"));
        // A prefix of another app's name is not a match.
        assert!(!is_tracked(&ann, "sho", "app.kubernetes.io/instance"));
        assert!(!is_tracked(&json!({}), "shop", "x"));
    }
}
