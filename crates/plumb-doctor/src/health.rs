//! The app's health and each resource's, judged by plumb-health's one entry
//! ([`plumb_health::check`]: the process's user Lua scripts, then the built-in checks, then the
//! generic status-conditions check) and folded by [`plumb_health::app_health_by`] — the same
//! function sync waves, the controller's app health and `plumb health` use.
//!
//! Per resource, as the controller lists them: a hook is left out; an object absent from the
//! cluster is `Missing`; a live object is judged once (`source` says which check decided, and
//! `none` means no check applies: it counts as Healthy and stays out of the app's health). A
//! Secret is judged with its data masked, so no script can echo a value into a message.
//!
//! Through the installed checker, the CLI's `--resource-customizations` / `--settings-configmap`
//! apply here too. `Report.health` is `None` for a preflight.

use crate::report::ResourceRef;
use plumb_core::ResourceKey;
use plumb_diff::compare::ResourceDiff;
use plumb_health::{AppResource, HealthStatus, Source};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The application's health, and the health of each of its resources.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppHealth {
    /// The app's health (Argo CD's aggregation over the resources).
    pub status: String,
    /// Every resource of the app but hooks, in the order of the comparison.
    pub resources: Vec<ResourceHealth>,
}

/// One resource's health: the row `plumb health -o json` prints for an object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceHealth {
    #[serde(flatten)]
    pub resource: ResourceRef,
    /// `Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing` or `Unknown`.
    pub status: String,
    pub message: String,
    /// The check that decided: `builtin`, `lua`, `generic`, or `none` (no check applies, or the
    /// object is missing).
    pub source: String,
}

impl ResourceHealth {
    /// Whether the row says something: a check judged it, or it is missing.
    pub fn is_judged(&self) -> bool {
        self.source != Source::None.as_str() || self.status == HealthStatus::Missing.as_str()
    }
}

/// The health of the resources of `diffs` (the comparison: every resource of the app, `Equal`
/// ones included), whose live objects are in `live`.
pub fn assess(diffs: &[ResourceDiff], live: &BTreeMap<ResourceKey, &Value>) -> AppHealth {
    let mut rows = Vec::new();
    let mut judged: BTreeMap<&ResourceKey, Option<plumb_health::Health>> = BTreeMap::new();
    let mut pairs: Vec<(Option<&Value>, Option<&Value>)> = Vec::new();
    for d in diffs {
        let live_obj = live.get(&d.key).copied();
        let target = target_of(d);
        if live_obj.or(target).is_some_and(plumb_health::is_hook) {
            continue;
        }
        let (status, message, source) = match live_obj {
            Some(obj) => {
                let a = judge(obj);
                judged.insert(&d.key, a.clone().checked());
                (a.health.status, a.health.message, a.source)
            }
            None => (HealthStatus::Missing, String::new(), Source::None),
        };
        pairs.push((target, live_obj));
        rows.push(ResourceHealth {
            resource: ResourceRef {
                group: d.key.group.clone(),
                kind: d.key.kind.clone(),
                namespace: d.key.namespace.clone(),
                name: d.key.name.clone(),
            },
            status: status.as_str().to_string(),
            message,
            source: source.as_str().to_string(),
        });
    }
    let status = plumb_health::app_health_by(
        pairs
            .into_iter()
            .map(|(target, live)| AppResource { target, live }),
        |obj| {
            let key = ResourceKey::of(obj)?;
            judged.get(&key).cloned().flatten()
        },
    );
    AppHealth {
        status: status.as_str().to_string(),
        resources: rows,
    }
}

/// The desired object of a resource, when the comparison kept one.
fn target_of(d: &ResourceDiff) -> Option<&Value> {
    match &d.result.predicted_live {
        Value::Null => d.declared.as_ref().map(|decl| &decl.object),
        v => Some(v),
    }
}

/// [`plumb_health::check`], on a masked copy for a Secret.
fn judge(obj: &Value) -> plumb_health::Assessment {
    if plumb_diff::mask::is_secret(obj) {
        let mut masked = obj.clone();
        plumb_diff::mask::hide_secret_data(&mut [&mut masked], &[]);
        return plumb_health::check(&masked);
    }
    plumb_health::check(obj)
}
