//! Reading live objects: one LIST per kind (and namespace), concurrently.

use crate::discovery::ResourceInfo;
use crate::error::{ClusterError, Result};
use crate::{Cluster, LIST_CONCURRENCY};
use futures::{StreamExt, TryStreamExt, stream};
use plumb_core::{GroupKind, ResourceKey, TRACKING_ID_ANNOTATION};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The part of a `*List` answer plumb reads. Items lack `apiVersion`/`kind`.
#[derive(Deserialize)]
struct ListBody {
    #[serde(default)]
    items: Vec<Value>,
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
    /// One LIST, its items completed with `apiVersion` and `kind`.
    pub(crate) async fn list_one(&self, req: &ListRequest) -> Result<Vec<Value>> {
        let info = &req.info;
        let url = info.url_path(&info.version, req.namespace.as_deref());
        let params = kube::api::ListParams {
            label_selector: req.selector.clone(),
            ..Default::default()
        };
        let ctx = self.context("list", info, req.namespace.as_deref());
        let request =
            kube::core::Request::new(url)
                .list(&params)
                .map_err(|e| ClusterError::Protocol {
                    reason: e.to_string(),
                })?;
        let body: ListBody = self
            .client
            .request(request)
            .await
            .map_err(|e| ClusterError::from_kube(e, &ctx))?;
        let api_version = Value::String(info.api_version());
        let kind = Value::String(info.kind.clone());
        let mut items = body.items;
        for item in &mut items {
            if let Some(map) = item.as_object_mut() {
                map.insert("apiVersion".to_string(), api_version.clone());
                map.insert("kind".to_string(), kind.clone());
            }
        }
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
        // Per kind: the namespaces desired uses; and the keys it names.
        let mut kinds: BTreeMap<GroupKind, (ResourceInfo, BTreeSet<String>)> = BTreeMap::new();
        let mut wanted: HashSet<ResourceKey> = HashSet::new();
        for obj in desired {
            let mut key = ResourceKey::of(obj).ok_or_else(|| ClusterError::InvalidObject {
                reason: "a desired object lacks apiVersion, kind or metadata.name".to_string(),
            })?;
            let gk = key.group_kind();
            let entry = match kinds.get_mut(&gk) {
                Some(entry) => entry,
                None => {
                    let info = self.resource_for(&gk.group, &gk.kind).await?;
                    kinds.entry(gk).or_insert((info, BTreeSet::new()))
                }
            };
            if entry.0.namespaced {
                if key.namespace.is_empty() {
                    key.namespace = self.default_namespace.clone();
                }
                entry.1.insert(key.namespace.clone());
            } else {
                key.namespace.clear();
            }
            wanted.insert(key);
        }

        let mut plain = Vec::new();
        let mut extras = Vec::new();
        for (info, namespaces) in kinds.into_values() {
            if !info.namespaced {
                plain.push(ListRequest {
                    info,
                    namespace: None,
                    selector: None,
                });
                continue;
            }
            for ns in namespaces {
                plain.push(ListRequest {
                    info: info.clone(),
                    namespace: Some(ns),
                    selector: None,
                });
            }
            if let Some(app) = app {
                extras.push(ListRequest {
                    info,
                    namespace: None,
                    selector: Some(format!("{tracking_label}={app}")),
                });
            }
        }

        // Kinds git does not use can still hold the app's objects (prune candidates).
        let mut others = Vec::new();
        if let Some(app) = app {
            let all_namespaces: BTreeSet<String> = wanted
                .iter()
                .filter(|k| !k.namespace.is_empty())
                .map(|k| k.namespace.clone())
                .collect();
            let used: BTreeSet<(String, String)> = plain
                .iter()
                .map(|r: &ListRequest| (r.info.group.clone(), r.info.kind.clone()))
                .collect();
            let resources = self.api_resources().await?;
            for info in resources.iter() {
                let never = crate::snapshot::NEVER_TRACKED
                    .iter()
                    .any(|(g, k)| *g == info.group && *k == info.kind);
                if never
                    || !info.supports("list")
                    || used.contains(&(info.group.clone(), info.kind.clone()))
                {
                    continue;
                }
                if info.namespaced {
                    for ns in &all_namespaces {
                        others.push(ListRequest {
                            info: info.clone(),
                            namespace: Some(ns.clone()),
                            selector: None,
                        });
                    }
                } else {
                    others.push(ListRequest {
                        info: info.clone(),
                        namespace: None,
                        selector: Some(format!("{tracking_label}={app}")),
                    });
                }
            }
        }
        let extras: Vec<ListRequest> = extras.into_iter().chain(others).collect();

        let (plain, extras) = futures::join!(self.list_many(plain), self.list_each(extras));
        let mut found: BTreeMap<String, Value> = BTreeMap::new();
        for obj in plain?.into_iter().flatten() {
            let Some(key) = ResourceKey::of(&obj) else {
                continue;
            };
            let tracked = app.is_some_and(|a| is_tracked(&obj, a, tracking_label));
            let owned = obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|o| !o.is_empty());
            if wanted.contains(&key) || (tracked && !owned) {
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
                let owned = obj
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|o| !o.is_empty());
                let tracked = app.is_some_and(|a| is_tracked(&obj, a, tracking_label));
                if owned || !tracked {
                    continue;
                }
                if let Some(key) = ResourceKey::of(&obj) {
                    found.entry(key.sort_key()).or_insert(obj);
                }
            }
        }
        Ok(found.into_values().collect())
    }
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
