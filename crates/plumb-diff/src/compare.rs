//! Comparing a whole application: pair desired with live objects, default namespaces,
//! inject tracking, find extra (prune-needed) objects, diff each pair and mask Secrets.
//! This is what `plumb diff` prints and what sync and doctor build on.
//!
//! [`compare_prepared`] is the pipeline's last step: prepared desired objects
//! ([`crate::desired::prepare`]) against live. [`compare`] prepares offline first (the
//! built-in schema's scopes). **Nothing leaves here with a Secret value unmasked**: masking
//! ([`crate::mask`]) runs before anything is returned.

use crate::desired::{
    BuiltinScopes, PrepareError, Prepared, PreparedObject, prepare, set_meta_entry,
};
use crate::{DiffConfig, DiffError, DiffResult, diff_owned, fields, mask, server_side};
use plumb_core::argo::{Application, Settings, TrackingMethod};
use plumb_core::origin::Declared;
use plumb_core::{INSTANCE_LABEL, ResourceKey, TRACKING_ID_ANNOTATION};
use serde_json::Value;
use std::collections::BTreeMap;

pub use crate::desired::Desired;

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
    #[error(transparent)]
    Prepare(#[from] PrepareError),
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

pub use plumb_core::argo::{is_tracked_by, tracking_id};

/// Compares desired with live, offline: desired is prepared with the built-in schema and the
/// CRDs among desired and live deciding scopes ([`desired::prepare`](crate::desired::prepare)),
/// without the hooks each sync names anew; then [`compare_prepared`]. Live objects that are
/// neither desired nor tracked by the app are not part of the comparison.
pub fn compare(
    desired: Vec<Desired>,
    live: Vec<Value>,
    ctx: &CompareContext<'_>,
) -> Result<Vec<ResourceDiff>, CompareError> {
    let scopes = BuiltinScopes::with_crds_of(desired.iter().map(|d| &d.object).chain(live.iter()));
    let tracking = ctx.settings.map(|s| s.tracking_method).unwrap_or_default();
    let prepared = prepare(desired, ctx.app, tracking, &scopes)?.without_generated();
    compare_prepared(prepared, live, ctx)
}

/// Compares prepared desired objects with live: pairs them (an object without a namespace
/// with the one live object of its group, kind and name), finds the app's extra objects,
/// diffs each pair and masks Secrets.
pub fn compare_prepared(
    prepared: Prepared,
    live: Vec<Value>,
    ctx: &CompareContext<'_>,
) -> Result<Vec<ResourceDiff>, CompareError> {
    let tracking = ctx.settings.map(|s| s.tracking_method).unwrap_or_default();
    let Prepared {
        objects: mut want,
        unscoped,
        ..
    } = prepared;

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

    let pairs: Vec<(ResourceKey, PreparedObject, Option<Value>)> = want
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
        let objects = idx
            .iter()
            .map(|&i| pairs[i].1.desired.object.clone())
            .collect();
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
        |(
            (
                key,
                PreparedObject {
                    desired: d,
                    rendered,
                },
                mut live_obj,
            ),
            dry,
        )|
         -> Result<ResourceDiff, CompareError> {
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
            set_meta_entry(live, "annotations", TRACKING_ID_ANNOTATION, &id);
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
