//! Comparing a whole application: pair desired with live objects, default namespaces,
//! inject tracking, find extra (prune-needed) objects, diff each pair and mask Secrets.
//! This is what `plumb diff` prints and what sync and doctor build on.

use crate::{DiffConfig, DiffError, DiffResult, diff_owned, fields, mask, server_side};
use plumb_core::argo::{Application, Settings, TrackingMethod};
use plumb_core::origin::{Declared, Origins};
use plumb_core::schema::Schema;
use plumb_core::{INSTANCE_LABEL, ResourceKey, TRACKING_ID_ANNOTATION};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A desired object and where it came from (`file:line`), for messages.
#[derive(Debug, Clone)]
pub struct Desired {
    pub object: Value,
    pub origin: String,
    /// Where each scalar was set, when the renderer knows (empty otherwise).
    pub origins: Origins,
}

impl Desired {
    /// A desired object known only by its `file:line`.
    pub fn new(object: Value, origin: String) -> Desired {
        Desired {
            object,
            origin,
            origins: Origins::new(),
        }
    }
}

/// The state of one resource of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Equal,
    Modified,
    /// Desired but not live (needs create).
    Missing,
    /// Live and tracked by the app but not desired (needs prune).
    Extra,
}

/// One compared resource. Secret values in `result` are already masked.
#[derive(Debug, Clone)]
pub struct ResourceDiff {
    pub key: ResourceKey,
    pub status: Status,
    pub result: DiffResult,
    /// Where desired declares the object, when it is desired.
    pub origin: Option<String>,
    /// The object as rendered with the origins of its scalars, when the renderer knew them.
    pub declared: Option<Declared>,
}

impl ResourceDiff {
    /// The differing leaves (masked values for Secrets); none for an `Equal` resource.
    pub fn fields(&self) -> Vec<fields::FieldChange> {
        if self.status == Status::Equal {
            return Vec::new();
        }
        fields::changed_fields(&self.result.normalized_live, &self.result.predicted_live)
    }
}

/// Problems with the inputs of a comparison.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{key} is declared twice in desired: {first} and {second}")]
    Duplicate {
        key: Box<ResourceKey>,
        first: String,
        second: String,
    },
    #[error(transparent)]
    Diff(#[from] DiffError),
    #[error("{key}: server-side dry run failed: {message}")]
    DryRun {
        key: Box<ResourceKey>,
        message: String,
    },
}

/// What a comparison is about.
#[derive(Debug)]
pub struct CompareContext<'a> {
    pub app: Option<&'a Application>,
    pub settings: Option<&'a Settings>,
    pub config: &'a DiffConfig,
    /// Keep the normalized and predicted objects of `Equal` resources. Off, they are
    /// dropped as soon as the verdict is known (both `Null`), which halves the memory
    /// of a large, mostly in-sync comparison.
    pub keep_equal: bool,
    /// Server-side diff: predicted live comes from a dry-run apply.
    pub server_side: Option<ServerSide<'a>>,
}

/// How a server-side diff gets its dry runs. The compare engine stays pure: the caller
/// (the CLI, with a cluster connection) supplies the dry run.
pub struct ServerSide<'a> {
    /// The field manager the dry run applies with.
    pub manager: &'a str,
    /// `IncludeMutationWebhook=true`: keep what webhooks changed in the dry run.
    pub include_mutation_webhook: bool,
    /// Dry-run applies the desired objects (namespace defaulted, tracking injected),
    /// returning one result per object, in order.
    #[allow(clippy::type_complexity)]
    pub dry_run: &'a (dyn Fn(Vec<Value>) -> Vec<Result<Value, String>> + Sync),
}

impl std::fmt::Debug for ServerSide<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSide")
            .field("manager", &self.manager)
            .field("include_mutation_webhook", &self.include_mutation_webhook)
            .finish_non_exhaustive()
    }
}

/// Whether a kind is cluster-scoped: the built-in schema, else a CRD among `objects`.
fn cluster_scoped(
    group: &str,
    kind: &str,
    crds: &BTreeMap<(String, String), bool>,
) -> Option<bool> {
    Schema::builtin()
        .is_cluster_scoped(group, kind)
        .or_else(|| crds.get(&(group.to_string(), kind.to_string())).copied())
}

fn crd_scopes<'a>(objects: impl Iterator<Item = &'a Value>) -> BTreeMap<(String, String), bool> {
    let mut out = BTreeMap::new();
    for o in objects {
        if o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
            && let (Some(g), Some(k), Some(scope)) = (
                o.pointer("/spec/group").and_then(Value::as_str),
                o.pointer("/spec/names/kind").and_then(Value::as_str),
                o.pointer("/spec/scope").and_then(Value::as_str),
            )
        {
            out.insert((g.to_string(), k.to_string()), scope == "Cluster");
        }
    }
    out
}

pub use plumb_core::argo::{is_tracked_by, tracking_id};

fn set_map_entry(obj: &mut Value, map: &str, k: &str, v: &str) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let m = meta
            .entry(map)
            .or_insert_with(|| Value::Object(Default::default()));
        if !m.is_object() {
            *m = Value::Object(Default::default());
        }
        if let Some(m) = m.as_object_mut() {
            m.insert(k.to_string(), Value::String(v.to_string()));
        }
    }
}

/// A desired object and, when it has origins, its copy as rendered.
type Wanted = (Desired, Option<Value>);

/// Compares desired with live. Live objects that are neither desired nor tracked by the
/// app are not part of the comparison.
pub fn compare(
    desired: Vec<Desired>,
    live: Vec<Value>,
    ctx: &CompareContext<'_>,
) -> Result<Vec<ResourceDiff>, CompareError> {
    let crds = crd_scopes(desired.iter().map(|d| &d.object).chain(live.iter()));
    let dest_ns = ctx.app.and_then(|a| a.destination_namespace.clone());
    let tracking = ctx.settings.map(|s| s.tracking_method).unwrap_or_default();

    // Desired: namespace defaulting, cluster-scoped namespaces dropped, duplicates refused.
    // Each desired object with, when it has origins, a copy as rendered (before the
    // namespace and tracking injected below) that the origins' pointers address.
    // Per object (in parallel): its key, the as-rendered copy, namespace and tracking.
    let prepared = plumb_core::parallel::map_owned(desired, |mut d| {
        let mut key = ResourceKey::of(&d.object)?;
        let rendered = (!d.origins.is_empty()).then(|| d.object.clone());
        let mut unscoped = false;
        match cluster_scoped(&key.group, &key.kind, &crds) {
            Some(true) => key.namespace.clear(),
            _ => {
                if key.namespace.is_empty() {
                    if let Some(ns) = &dest_ns {
                        key.namespace = ns.clone();
                        if let Some(meta) =
                            d.object.get_mut("metadata").and_then(Value::as_object_mut)
                        {
                            meta.insert("namespace".into(), Value::String(ns.clone()));
                        }
                    } else {
                        unscoped = true;
                    }
                }
            }
        }
        if let Some(app) = ctx.app {
            if tracking.uses_annotation() {
                set_map_entry(
                    &mut d.object,
                    "annotations",
                    TRACKING_ID_ANNOTATION,
                    &tracking_id(&app.name, &key),
                );
            }
            if tracking.uses_label() {
                set_map_entry(&mut d.object, "labels", INSTANCE_LABEL, &app.name);
            }
        }
        Some((key, d, rendered, unscoped))
    });
    let mut want: BTreeMap<ResourceKey, Wanted> = BTreeMap::new();
    let mut unscoped: BTreeSet<ResourceKey> = BTreeSet::new();
    for (key, d, rendered, is_unscoped) in prepared.into_iter().flatten() {
        if let Some((prev, _)) = want.get(&key) {
            return Err(CompareError::Duplicate {
                key: Box::new(key),
                first: prev.origin.clone(),
                second: d.origin,
            });
        }
        if is_unscoped {
            unscoped.insert(key.clone());
        }
        want.insert(key, (d, rendered));
    }

    // Live: index by key.
    let keyed = plumb_core::parallel::map_owned(live, |l| ResourceKey::of(&l).map(|k| (k, l)));
    let mut have: BTreeMap<ResourceKey, Value> = keyed.into_iter().flatten().collect();

    // Desired objects without a namespace (no destination) pair with the single live object
    // of that group/kind/name, as kubectl's current namespace would.
    let mut rekeyed = Vec::new();
    for key in &unscoped {
        if have.contains_key(key) {
            continue;
        }
        let mut candidates = have
            .keys()
            .filter(|k| k.group == key.group && k.kind == key.kind && k.name == key.name);
        if let (Some(only), None) = (candidates.next(), candidates.next()) {
            rekeyed.push((key.clone(), only.clone()));
        }
    }
    for (from, to) in rekeyed {
        if let Some(d) = want.remove(&from) {
            want.insert(to, d);
        }
    }

    let pairs: Vec<(ResourceKey, Wanted, Option<Value>)> = want
        .into_iter()
        .map(|(key, d)| {
            let l = have.remove(&key);
            (key, d, l)
        })
        .collect();
    // Server-side diff: one batch of dry runs for the objects that exist live.
    let mut dry: Vec<Option<Value>> = vec![None; pairs.len()];
    if let Some(ss) = &ctx.server_side {
        let idx: Vec<usize> = (0..pairs.len()).filter(|&i| pairs[i].2.is_some()).collect();
        let objects = idx.iter().map(|&i| pairs[i].1.0.object.clone()).collect();
        for (i, r) in idx.into_iter().zip((ss.dry_run)(objects)) {
            match r {
                Ok(v) => dry[i] = Some(v),
                Err(message) => {
                    return Err(CompareError::DryRun {
                        key: Box::new(pairs[i].0.clone()),
                        message,
                    });
                }
            }
        }
    }
    let pairs: Vec<_> = pairs.into_iter().zip(dry).collect();
    let diffed = plumb_core::parallel::map_owned(
        pairs,
        |((key, (d, rendered), mut live_obj), dry)| -> Result<ResourceDiff, CompareError> {
            if let (Some(lv), TrackingMethod::Annotation) = (live_obj.as_mut(), tracking) {
                pre_diff_tracking(lv, &d.object);
            }
            if let Some(lv) = live_obj.as_mut() {
                mask::restore_redacted(lv, &d.object);
            }
            let exists = live_obj.is_some();
            let declared = rendered.map(|object| Declared {
                object,
                origins: d.origins,
            });
            let mut result = match (dry, live_obj, &ctx.server_side) {
                (Some(predicted), Some(live), Some(ss)) => server_side::diff_server_side(
                    live,
                    predicted,
                    ss.manager,
                    ss.include_mutation_webhook,
                    ctx.config,
                )?,
                (_, live_obj, _) => {
                    crate::diff_owned_with(Some(d.object), live_obj, ctx.config, ctx.keep_equal)?
                }
            };
            let status = match (exists, result.modified) {
                (false, _) => Status::Missing,
                (true, true) => Status::Modified,
                (true, false) => Status::Equal,
            };
            if status == Status::Equal && !ctx.keep_equal {
                result.normalized_live = Value::Null;
                result.predicted_live = Value::Null;
            } else {
                mask_result(&mut result, ctx.settings);
            }
            Ok(ResourceDiff {
                key,
                status,
                result,
                origin: Some(d.origin),
                declared,
            })
        },
    );
    let mut out = diffed.into_iter().collect::<Result<Vec<_>, _>>()?;
    if let Some(app) = ctx.app {
        for (key, l) in have {
            if is_tracked_by(&l, &app.name) {
                let mut result = diff_owned(None, Some(l), ctx.config)?;
                mask_result(&mut result, ctx.settings);
                out.push(ResourceDiff {
                    key,
                    status: Status::Extra,
                    result,
                    origin: None,
                    declared: None,
                });
            }
        }
    }
    out.sort_by_key(|r| r.key.sort_key());
    Ok(out)
}

/// Annotation tracking: a live object with the instance label but no tracking annotation
/// gets desired's annotation; the label is dropped from live when desired lacks it.
fn pre_diff_tracking(live: &mut Value, desired: &Value) {
    if plumb_core::value::annotation(live, TRACKING_ID_ANNOTATION).is_none()
        && let Some(id) = plumb_core::value::annotation(desired, TRACKING_ID_ANNOTATION)
    {
        let id = id.to_string();
        if plumb_core::value::label(live, INSTANCE_LABEL).is_some() {
            set_map_entry(live, "annotations", TRACKING_ID_ANNOTATION, &id);
        }
    }
    if plumb_core::value::label(desired, INSTANCE_LABEL).is_none()
        && let Some(labels) = live
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
    {
        labels.remove(INSTANCE_LABEL);
    }
}

fn mask_result(r: &mut DiffResult, settings: Option<&Settings>) {
    let sensitive = settings.map_or(&[][..], |s| &s.sensitive_annotations[..]);
    let DiffResult {
        predicted_live,
        normalized_live,
        ..
    } = r;
    mask::hide_secret_data(&mut [predicted_live, normalized_live], sensitive);
}
