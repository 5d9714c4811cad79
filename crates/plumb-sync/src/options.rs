//! Sync options: the Application's `spec.syncPolicy.syncOptions` and a resource's
//! `argocd.argoproj.io/sync-options` annotation, read as Argo CD reads them, and their
//! combination for one resource.
//!
//! - Application level: a list of strings, each matched **exactly** (Argo CD's
//!   `SyncOptions.HasOption`: no trimming, no case folding), values read with the
//!   `Key=` prefix (`GetOptionValue`).
//! - Resource level: one annotation, comma separated; each item trimmed, empty items and
//!   duplicates dropped (gitops-engine's `GetAnnotationCSVs`).
//! - Combination: an explicit value on the resource wins over the Application's; otherwise
//!   the Application's value applies; otherwise the default. Argo CD documents this for
//!   `Prune`/`Delete` and implements it for `ServerSideApply` (a resource's
//!   `ServerSideApply=false` disables an app-level `ServerSideApply=true`).
//!
//! Every option is one row of [`TABLE`]: its name, values, default, where it may be set
//! (Application, resource) and what plumb does with it there — acted on, or accepted and
//! ignored with the reason. The parsers accept exactly what the table lists; the book's
//! sync-options table (`docs/src/argocd/sync-options.md`) is [`markdown_table`] (a test
//! keeps the two equal, and another that every option Argo CD documents has a row).
//! `FailOnSharedResource`'s decision is [`shared_resource`]; LoopGuard (`plumb.dev/LoopGuard`)
//! is plumb's own row.

use plumb_core::SYNC_OPTIONS_ANNOTATION;
use std::collections::BTreeMap;

/// Where an option may be set, and what plumb does with it there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Not accepted there: the item is unknown (kept in `unknown`).
    No,
    /// Accepted and acted on.
    Acted,
    /// Accepted and ignored, for this reason.
    Ignored(&'static str),
}

/// One sync option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncOptionSpec {
    /// The key before `=`.
    pub name: &'static str,
    /// The values accepted after `=`.
    pub values: &'static [&'static str],
    /// Argo CD's default (the value when the option is absent).
    pub default: &'static str,
    /// In `spec.syncPolicy.syncOptions`.
    pub app: Support,
    /// In a resource's `argocd.argoproj.io/sync-options` annotation.
    pub resource: Support,
    /// What plumb does with it.
    pub effect: &'static str,
}

impl SyncOptionSpec {
    /// Whether `key=value` is accepted at the Application (`app`) or resource level.
    fn accepts(&self, value: &str, app: bool) -> bool {
        let support = if app { self.app } else { self.resource };
        support != Support::No && self.values.contains(&value)
    }
}

const BOOL: &[&str] = &["true", "false"];

/// Why `SkipDryRunOnMissingResource` changes nothing yet.
const PRUNE: &[&str] = &["true", "false", "confirm"];

/// Every sync option plumb reads, in the order of Argo CD's documentation.
pub const TABLE: &[SyncOptionSpec] = &[
    SyncOptionSpec {
        name: "Prune",
        values: PRUNE,
        default: "true",
        app: Support::Acted,
        resource: Support::Acted,
        effect: "`false`: never pruned (the resource stays OutOfSync); `confirm`: pruned once the Application carries `argocd.argoproj.io/deletion-approved`; the resource's value wins",
    },
    SyncOptionSpec {
        name: "Validate",
        values: BOOL,
        default: "true",
        app: Support::Acted,
        resource: Support::Acted,
        effect: "`false`: server-side applies and their dry runs are sent with `fieldValidation=Ignore` (kubectl's `--validate=false`): a custom resource's unknown fields are pruned without a warning. Otherwise the API server's default applies (it warns), not kubectl's strict default; a built-in kind with an unknown field is refused by server-side apply either way. Client-side applies, replaces and hooks keep the default",
    },
    SyncOptionSpec {
        name: "SkipDryRunOnMissingResource",
        values: BOOL,
        default: "false",
        app: Support::Acted,
        resource: Support::Acted,
        effect: "`true`: `plumb app sync --dry-run` reports a resource whose kind the cluster does not serve yet as skipped instead of failed (one whose CRD comes with the same sync is skipped even without it, as Argo CD). A real sync has no dry-run step: it applies wave by wave, a CRD's wave before its resources'",
    },
    SyncOptionSpec {
        name: "Delete",
        values: PRUNE,
        default: "true",
        app: Support::Acted,
        resource: Support::Acted,
        effect: "on Application deletion with cascade: `false` keeps the resource, `confirm` waits for `argocd.argoproj.io/deletion-approved`",
    },
    SyncOptionSpec {
        name: "ApplyOutOfSyncOnly",
        values: BOOL,
        default: "false",
        app: Support::Acted,
        resource: Support::Acted,
        effect: "`true`: resources already in sync are not applied (hooks still run, history is recorded)",
    },
    SyncOptionSpec {
        name: "PrunePropagationPolicy",
        values: &["foreground", "background", "orphan"],
        default: "foreground",
        app: Support::Acted,
        resource: Support::No,
        effect: "the deletion propagation of prunes",
    },
    SyncOptionSpec {
        name: "PruneLast",
        values: BOOL,
        default: "false",
        app: Support::Acted,
        resource: Support::Acted,
        effect: "`true`: pruned in a last wave, after every other wave is healthy",
    },
    SyncOptionSpec {
        name: "Replace",
        values: BOOL,
        default: "false",
        app: Support::Acted,
        resource: Support::Acted,
        effect: "`true`: replaced (created when missing) instead of applied",
    },
    SyncOptionSpec {
        name: "Force",
        values: BOOL,
        default: "false",
        app: Support::No,
        resource: Support::Acted,
        effect: "`true`: what the API server refuses to change (an immutable field) is deleted and created again; with `Replace=true`, always",
    },
    SyncOptionSpec {
        name: "ServerSideApply",
        values: BOOL,
        default: "true (plumb; Argo CD: false)",
        app: Support::Acted,
        resource: Support::Acted,
        effect: "`false`: client-side apply with the last-applied annotation and a three-way merge; the resource's value wins",
    },
    SyncOptionSpec {
        name: "ClientSideApplyMigration",
        values: BOOL,
        default: "true",
        app: Support::Acted,
        resource: Support::No,
        effect: "`false`: a server-side apply does not take over the fields a client-side apply manager owns",
    },
    SyncOptionSpec {
        name: "FailOnSharedResource",
        values: BOOL,
        default: "false",
        app: Support::Acted,
        resource: Support::No,
        effect: "`true`: the sync fails before applying anything when a resource it applies is tracked by another Application",
    },
    SyncOptionSpec {
        name: "RespectIgnoreDifferences",
        values: BOOL,
        default: "false",
        app: Support::Acted,
        resource: Support::Acted,
        effect: "`true`: fields `ignoreDifferences` matches keep their live values when applied (live objects only); the resource's value wins",
    },
    SyncOptionSpec {
        name: "CreateNamespace",
        values: BOOL,
        default: "false",
        app: Support::Acted,
        resource: Support::No,
        effect: "`true`: the destination namespace is created first when missing",
    },
    // plumb's own options (prefixed `plumb.dev/`; Argo CD does not know them).
    SyncOptionSpec {
        name: crate::loops::GUARD_OPTION_NAME,
        values: BOOL,
        default: "false",
        app: Support::Acted,
        resource: Support::No,
        effect: "plumb's own. `true`: in a recognised sync loop, automated syncs of that revision leave the looping fields as live has them (as `RespectIgnoreDifferences` does) and are not made when nothing else differs (see [Sync loops](../concepts/sync-loops.md)); `plumb controller --loop-guard` turns it on for every app",
    },
];

/// The row of option `name`.
pub fn spec(name: &str) -> Option<&'static SyncOptionSpec> {
    TABLE.iter().find(|s| s.name == name)
}

/// Whether `item` (`Key=value`, exactly) is an option the table accepts at the Application
/// (`app`) or resource level.
pub fn is_known(item: &str, app: bool) -> bool {
    item.split_once('=')
        .and_then(|(k, v)| spec(k).map(|s| s.accepts(v, app)))
        .unwrap_or(false)
}

/// The book's sync-options table (`docs/src/argocd/sync-options.md`).
pub fn markdown_table() -> String {
    let support = |s: Support| match s {
        Support::No => "—".to_string(),
        Support::Acted => "acted on".to_string(),
        Support::Ignored(why) => format!("ignored: {why}"),
    };
    let mut out = String::from(
        "| option | values | default | Application | resource | what plumb does |\n|---|---|---|---|---|---|\n",
    );
    for s in TABLE {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            s.name,
            s.values.join(", "),
            s.default,
            support(s.app),
            if s.resource == s.app && matches!(s.resource, Support::Ignored(_)) {
                "ignored (as for the Application)".to_string()
            } else {
                support(s.resource)
            },
            s.effect
        ));
    }
    out
}

/// `Prune=true|false|confirm` (also used for `Delete=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PruneOption {
    /// Prune when the sync prunes.
    #[default]
    True,
    /// Never prune; the resource stays OutOfSync ("ignored (no prune)").
    False,
    /// Prune only once the deletion is confirmed (`argocd.argoproj.io/deletion-approved`).
    Confirm,
}

impl PruneOption {
    fn parse(value: &str) -> Option<PruneOption> {
        match value {
            "true" => Some(PruneOption::True),
            "false" => Some(PruneOption::False),
            "confirm" => Some(PruneOption::Confirm),
            _ => None,
        }
    }
}

/// `PrunePropagationPolicy=foreground|background|orphan` (default foreground).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PropagationPolicy {
    #[default]
    Foreground,
    Background,
    Orphan,
}

/// How an object is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApplyMode {
    /// Server-side apply (plumb's default; Argo CD's `ServerSideApply=true`).
    #[default]
    ServerSide,
    /// Client-side apply with the last-applied annotation (`ServerSideApply=false`).
    ClientSide,
}

/// Where the destination namespace stands, for `CreateNamespace=true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationNamespace {
    /// `spec.destination.namespace`.
    pub name: String,
    /// Whether the namespace exists in the cluster. Readers of the Application
    /// ([`SyncOptions::from_application`], [`crate::policy::SyncPolicy::from_application`])
    /// cannot know and set `true` (no namespace step); the caller sets it from the cluster.
    pub exists: bool,
}

/// The Application-level sync options (`spec.syncPolicy.syncOptions`), plus the two facts
/// about the operation a plan needs: the destination namespace and whether pruning of
/// `Prune=confirm` resources has been confirmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncOptions {
    /// `Prune=false|confirm|true`: the default for resources without their own `Prune=`.
    pub prune: Option<PruneOption>,
    /// `Delete=false|confirm|true` (Application deletion; recorded, not used by the plan).
    pub delete: Option<PruneOption>,
    /// `PruneLast=true`.
    pub prune_last: bool,
    /// `Replace=true`.
    pub replace: bool,
    /// `ServerSideApply=true|false`; `None` leaves plumb's default (server-side).
    pub server_side_apply: Option<bool>,
    /// `ApplyOutOfSyncOnly=true`.
    pub apply_out_of_sync_only: bool,
    /// `CreateNamespace=true`.
    pub create_namespace: bool,
    /// `RespectIgnoreDifferences=true`.
    pub respect_ignore_differences: bool,
    /// `Validate=false` turns this off.
    pub validate: bool,
    /// `SkipDryRunOnMissingResource=true`.
    pub skip_dry_run_on_missing_resource: bool,
    /// `PrunePropagationPolicy=...`.
    pub prune_propagation_policy: PropagationPolicy,
    /// `FailOnSharedResource=true`.
    pub fail_on_shared_resource: bool,
    /// `ClientSideApplyMigration=false` turns this off.
    pub client_side_apply_migration: bool,
    /// `plumb.dev/LoopGuard=true` (plumb's own; see [`crate::loops`]).
    pub loop_guard: bool,
    /// Options Argo CD does not know (kept so they can be reported).
    pub unknown: Vec<String>,
    /// The destination namespace, for `CreateNamespace=true` (an input, not an option).
    pub destination_namespace: Option<DestinationNamespace>,
    /// Whether pruning was confirmed for this operation (an input, not an option).
    pub prune_confirmed: bool,
    /// Whether this run resumes an operation an earlier run left `Running` (an input, not an
    /// option): a resource already in sync is not applied again ([`SkipReason::InSyncOnResume`]).
    ///
    /// [`SkipReason::InSyncOnResume`]: crate::plan::SkipReason::InSyncOnResume
    pub resumed: bool,
}

impl Default for SyncOptions {
    fn default() -> Self {
        SyncOptions {
            prune: None,
            delete: None,
            prune_last: false,
            replace: false,
            server_side_apply: None,
            apply_out_of_sync_only: false,
            create_namespace: false,
            respect_ignore_differences: false,
            validate: true,
            skip_dry_run_on_missing_resource: false,
            prune_propagation_policy: PropagationPolicy::Foreground,
            fail_on_shared_resource: false,
            client_side_apply_migration: true,
            loop_guard: false,
            unknown: Vec::new(),
            destination_namespace: None,
            prune_confirmed: false,
            resumed: false,
        }
    }
}

impl SyncOptions {
    /// Reads `spec.syncPolicy.syncOptions`. Each entry is compared exactly, as Argo CD's
    /// `HasOption` does: `" PruneLast=true"` (with a space) is not `PruneLast=true`.
    /// When an option appears twice with different values, the enabling form wins where
    /// Argo CD only tests for it (`Replace=true`, `ServerSideApply=true`, ...), and the first
    /// `Prune=`/`Delete=` value wins (`GetOptionValue`).
    pub fn parse<S: AsRef<str>>(options: impl IntoIterator<Item = S>) -> SyncOptions {
        let mut o = SyncOptions::default();
        let mut ssa_true = false;
        let mut ssa_false = false;
        let mut propagation: Option<PropagationPolicy> = None;
        for item in options {
            let item = item.as_ref();
            if !is_known(item, true) {
                o.unknown.push(item.to_string());
                continue;
            }
            match item {
                "PruneLast=true" => o.prune_last = true,
                "Replace=true" => o.replace = true,
                "ServerSideApply=true" => ssa_true = true,
                "ServerSideApply=false" => ssa_false = true,
                "ApplyOutOfSyncOnly=true" => o.apply_out_of_sync_only = true,
                "CreateNamespace=true" => o.create_namespace = true,
                "RespectIgnoreDifferences=true" => o.respect_ignore_differences = true,
                "Validate=false" => o.validate = false,
                "SkipDryRunOnMissingResource=true" => o.skip_dry_run_on_missing_resource = true,
                "FailOnSharedResource=true" => o.fail_on_shared_resource = true,
                "ClientSideApplyMigration=false" => o.client_side_apply_migration = false,
                crate::loops::GUARD_OPTION => o.loop_guard = true,
                // Argo CD tests these in this order, so the first listed wins a conflict.
                "PrunePropagationPolicy=background" => {
                    propagation = merge_propagation(propagation, PropagationPolicy::Background)
                }
                "PrunePropagationPolicy=foreground" => {
                    propagation = merge_propagation(propagation, PropagationPolicy::Foreground)
                }
                "PrunePropagationPolicy=orphan" => {
                    propagation = merge_propagation(propagation, PropagationPolicy::Orphan)
                }
                _ => {
                    // The first `Prune=`/`Delete=` value wins; the other accepted values
                    // (`Replace=false`, `Validate=true`, ...) are the defaults.
                    if let Some(p) = item.strip_prefix("Prune=").and_then(PruneOption::parse) {
                        o.prune.get_or_insert(p);
                    } else if let Some(p) =
                        item.strip_prefix("Delete=").and_then(PruneOption::parse)
                    {
                        o.delete.get_or_insert(p);
                    }
                }
            }
        }
        // Argo CD: the app-level SSA flag is `HasOption("ServerSideApply=true")`.
        o.server_side_apply = if ssa_true {
            Some(true)
        } else if ssa_false {
            Some(false)
        } else {
            None
        };
        o.prune_propagation_policy = propagation.unwrap_or_default();
        o
    }

    /// Whether the apply of `target` (a desired object) keeps live's values of the fields
    /// `ignoreDifferences` matches: the resource's own `RespectIgnoreDifferences=` wins over
    /// the Application's, in either direction.
    pub fn respects_ignore_differences(&self, target: &serde_json::Value) -> bool {
        target
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(SYNC_OPTIONS_ANNOTATION))
            .and_then(serde_json::Value::as_str)
            .and_then(|v| ResourceSyncOptions::parse(v).respect_ignore_differences)
            .unwrap_or(self.respect_ignore_differences)
    }

    /// The options of an Application read by plumb-core.
    pub fn from_application(app: &plumb_core::argo::Application) -> SyncOptions {
        let mut o = SyncOptions::parse(&app.sync_options);
        if let Some(ns) = &app.destination_namespace {
            o.destination_namespace = Some(DestinationNamespace {
                name: ns.clone(),
                exists: true,
            });
        }
        o
    }
}

/// The Application other than `app` that tracks a live object, by the tracking method in
/// use: the tracking-id annotation's owner, when the id names this very object (an id copied
/// onto another object does not count), else the instance label under label tracking.
/// Objects with an owner are their owner's, as in [`plumb_core::argo::is_tracked_by`].
pub fn tracked_by_other<'a>(
    app: &str,
    tracking: plumb_core::argo::TrackingMethod,
    live: &'a serde_json::Value,
) -> Option<&'a str> {
    use plumb_core::value::{annotation, label};
    if plumb_core::argo::has_owner(live) {
        return None;
    }
    if tracking.uses_annotation() && annotation(live, plumb_core::TRACKING_ID_ANNOTATION).is_some()
    {
        return plumb_core::argo::tracking_id_app(live).filter(|o| !o.is_empty() && *o != app);
    }
    if tracking.uses_label() {
        return label(live, plumb_core::INSTANCE_LABEL).filter(|owner| *owner != app);
    }
    None
}

/// `FailOnSharedResource=true`: the message that fails the sync of `app` before anything is
/// applied, when one of the live objects of the resources it applies is tracked by another
/// Application ([`tracked_by_other`]); `None` when none is.
pub fn shared_resource<'a>(
    app: &str,
    tracking: plumb_core::argo::TrackingMethod,
    live: impl IntoIterator<Item = (&'a plumb_core::ResourceKey, &'a serde_json::Value)>,
) -> Option<String> {
    live.into_iter().find_map(|(key, obj)| {
        tracked_by_other(app, tracking, obj).map(|other| {
            format!("FailOnSharedResource=true: {key} is already tracked by Application {other}")
        })
    })
}

/// Argo CD checks `background`, then `foreground`, then `orphan`: the first of those present wins.
fn merge_propagation(
    current: Option<PropagationPolicy>,
    new: PropagationPolicy,
) -> Option<PropagationPolicy> {
    let rank = |p: PropagationPolicy| match p {
        PropagationPolicy::Background => 0,
        PropagationPolicy::Foreground => 1,
        PropagationPolicy::Orphan => 2,
    };
    match current {
        Some(c) if rank(c) <= rank(new) => Some(c),
        _ => Some(new),
    }
}

/// Splits an annotation value as gitops-engine's `GetAnnotationCSVs`: comma separated, each
/// item trimmed, empty items and repeats dropped, order kept.
pub fn annotation_csv(value: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for item in value.split(',').map(str::trim) {
        if !item.is_empty() && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// A resource's own `argocd.argoproj.io/sync-options`. `None` means "not set on the
/// resource" (the Application's value applies).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceSyncOptions {
    /// `Prune=false|confirm|true`. `Prune=false` anywhere in the list wins, as gitops-engine
    /// tests for it with `HasAnnotationOption`; then `confirm`; then `true`.
    pub prune: Option<PruneOption>,
    /// `Delete=false|confirm|true`.
    pub delete: Option<PruneOption>,
    /// `PruneLast=true` (`PruneLast=false` is an explicit override, a plumb extension).
    pub prune_last: Option<bool>,
    /// `Replace=true|false`.
    pub replace: Option<bool>,
    /// `ServerSideApply=true|false`; `false` wins a conflict, as in gitops-engine.
    pub server_side_apply: Option<bool>,
    /// `ApplyOutOfSyncOnly=true|false`.
    pub apply_out_of_sync_only: Option<bool>,
    /// `Force=true`.
    pub force: bool,
    /// `Validate=false|true`.
    pub validate: Option<bool>,
    /// `SkipDryRunOnMissingResource=true`.
    pub skip_dry_run_on_missing_resource: bool,
    /// `RespectIgnoreDifferences=true|false`; `false` wins a conflict.
    pub respect_ignore_differences: Option<bool>,
    /// Items Argo CD does not know.
    pub unknown: Vec<String>,
}

impl ResourceSyncOptions {
    /// Parses the annotation value.
    pub fn parse(value: &str) -> ResourceSyncOptions {
        let items = annotation_csv(value);
        let has = |s: &str| items.contains(&s);
        let tri = |t: &str, f: &str| {
            if has(f) {
                Some(false)
            } else if has(t) {
                Some(true)
            } else {
                None
            }
        };
        let value_of = |key: &str| -> Option<PruneOption> {
            let prefix = format!("{key}=");
            let vals: Vec<PruneOption> = items
                .iter()
                .filter_map(|i| i.strip_prefix(prefix.as_str()))
                .filter_map(PruneOption::parse)
                .collect();
            [PruneOption::False, PruneOption::Confirm, PruneOption::True]
                .into_iter()
                .find(|p| vals.contains(p))
        };
        ResourceSyncOptions {
            prune: value_of("Prune"),
            delete: value_of("Delete"),
            prune_last: tri("PruneLast=true", "PruneLast=false"),
            // Argo CD tests `Replace=true` only; an explicit `Replace=false` alone overrides.
            replace: if has("Replace=true") {
                Some(true)
            } else if has("Replace=false") {
                Some(false)
            } else {
                None
            },
            server_side_apply: tri("ServerSideApply=true", "ServerSideApply=false"),
            apply_out_of_sync_only: tri("ApplyOutOfSyncOnly=true", "ApplyOutOfSyncOnly=false"),
            force: has("Force=true"),
            validate: tri("Validate=true", "Validate=false"),
            skip_dry_run_on_missing_resource: has("SkipDryRunOnMissingResource=true"),
            respect_ignore_differences: tri(
                "RespectIgnoreDifferences=true",
                "RespectIgnoreDifferences=false",
            ),
            unknown: items
                .iter()
                .filter(|i| !is_known(i, false))
                .map(|i| i.to_string())
                .collect(),
        }
    }

    /// The options of an object's annotations (empty when the annotation is absent).
    pub fn from_annotations(annotations: &BTreeMap<String, String>) -> ResourceSyncOptions {
        annotations
            .get(SYNC_OPTIONS_ANNOTATION)
            .map(|v| ResourceSyncOptions::parse(v))
            .unwrap_or_default()
    }
}

/// The options that decide one resource's step, after combining the Application's options
/// with the resource's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveOptions {
    pub prune: PruneOption,
    pub prune_last: bool,
    pub replace: bool,
    pub apply_mode: ApplyMode,
    pub apply_out_of_sync_only: bool,
    pub force: bool,
    pub validate: bool,
    pub skip_dry_run_on_missing_resource: bool,
}

impl EffectiveOptions {
    /// Combines the Application's options with those of the resource's desired (`target`)
    /// and live objects, as gitops-engine reads them:
    /// - `Prune`, `PruneLast`: the live object (the one being pruned);
    /// - `ServerSideApply`, `Validate`: the desired object;
    /// - `Replace`, `Force`, `ApplyOutOfSyncOnly`: the desired object, else the live one.
    pub fn resolve(
        app: &SyncOptions,
        target: Option<&ResourceSyncOptions>,
        live: Option<&ResourceSyncOptions>,
    ) -> EffectiveOptions {
        let either = |f: &dyn Fn(&ResourceSyncOptions) -> Option<bool>| {
            target.and_then(f).or_else(|| live.and_then(f))
        };
        let prune_source = live.or(target);
        let ssa = target
            .and_then(|t| t.server_side_apply)
            .or(app.server_side_apply)
            .unwrap_or(true);
        EffectiveOptions {
            prune: prune_source
                .and_then(|r| r.prune)
                .or(app.prune)
                .unwrap_or_default(),
            prune_last: prune_source
                .and_then(|r| r.prune_last)
                .unwrap_or(app.prune_last),
            replace: either(&|r| r.replace).unwrap_or(app.replace),
            apply_mode: if ssa {
                ApplyMode::ServerSide
            } else {
                ApplyMode::ClientSide
            },
            apply_out_of_sync_only: either(&|r| r.apply_out_of_sync_only)
                .unwrap_or(app.apply_out_of_sync_only),
            force: target.is_some_and(|t| t.force) || live.is_some_and(|l| l.force),
            validate: target.and_then(|t| t.validate).unwrap_or(app.validate),
            skip_dry_run_on_missing_resource: app.skip_dry_run_on_missing_resource
                || target.is_some_and(|t| t.skip_dry_run_on_missing_resource),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sync options Argo CD documents (docs/user-guide/sync-options.md): each has a row,
    /// accepted somewhere.
    const ARGO_DOCUMENTED: &[&str] = &[
        "Prune",
        "Validate",
        "SkipDryRunOnMissingResource",
        "Delete",
        "ApplyOutOfSyncOnly",
        "PrunePropagationPolicy",
        "PruneLast",
        "Replace",
        "Force",
        "ServerSideApply",
        "ClientSideApplyMigration",
        "FailOnSharedResource",
        "RespectIgnoreDifferences",
        "CreateNamespace",
    ];

    #[test]
    fn every_documented_option_is_acted_on_or_ignored_with_a_reason() {
        for name in ARGO_DOCUMENTED {
            let s = spec(name).unwrap_or_else(|| panic!("{name}: no row in TABLE"));
            assert!(
                s.app != Support::No || s.resource != Support::No,
                "{name}: accepted nowhere"
            );
        }
        let mut names: Vec<&str> = TABLE.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len(), "one row per option");
        for s in TABLE {
            assert!(
                ARGO_DOCUMENTED.contains(&s.name) || s.name.starts_with("plumb.dev/"),
                "{}: not an Argo CD option (nor plumb's own)",
                s.name
            );
            assert!(!s.effect.is_empty() && !s.values.is_empty(), "{}", s.name);
            for (support, app) in [(s.app, true), (s.resource, false)] {
                if let Support::Ignored(why) = support {
                    assert!(!why.is_empty(), "{}: ignored without a reason", s.name);
                }
                for v in s.values {
                    let item = format!("{}={v}", s.name);
                    assert_eq!(is_known(&item, app), support != Support::No, "{item}");
                    // An option acted on changes what is parsed (its default value aside).
                    if support != Support::Acted || s.default == *v {
                        continue;
                    }
                    if app {
                        let o = SyncOptions::parse([item.as_str()]);
                        assert!(o.unknown.is_empty(), "{item}");
                        assert_ne!(o, SyncOptions::default(), "{item} changes nothing");
                    } else {
                        let r = ResourceSyncOptions::parse(&item);
                        assert!(r.unknown.is_empty(), "{item}");
                        assert_ne!(r, ResourceSyncOptions::default(), "{item} changes nothing");
                    }
                }
            }
        }
        // Not accepted where the table says no.
        assert_eq!(SyncOptions::parse(["Force=true"]).unknown, ["Force=true"]);
        assert_eq!(
            ResourceSyncOptions::parse("CreateNamespace=true").unknown,
            ["CreateNamespace=true"]
        );
    }

    #[test]
    fn the_book_documents_every_option() {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/src/argocd/sync-options.md"),
        )
        .unwrap();
        let table = markdown_table();
        assert!(
            page.contains(&table),
            "docs/src/argocd/sync-options.md must hold the sync-options table:\n{table}"
        );
    }

    /// Validate and SkipDryRunOnMissingResource reach the plan's steps.
    #[test]
    fn validate_and_skip_dry_run_reach_the_steps() {
        use crate::plan::{PlanResource, Status, plan};
        let key = plumb_core::ResourceKey {
            group: "example.com".into(),
            kind: "Widget".into(),
            namespace: "shop".into(),
            name: "w".into(),
        };
        let step = |app: &[&str], annotation: &str| {
            let mut r = PlanResource::new(key.clone(), Status::Missing);
            if let Some(t) = r.target.as_mut() {
                t.annotations
                    .insert(SYNC_OPTIONS_ANNOTATION.into(), annotation.into());
            }
            let p = plan(&[r], &SyncOptions::parse(app), false, false, true).unwrap();
            let s = &p.steps[0];
            (s.validate, s.skip_dry_run_on_missing_resource)
        };
        assert_eq!(step(&[], ""), (true, false));
        assert_eq!(step(&["Validate=false"], ""), (false, false));
        assert_eq!(step(&["Validate=false"], "Validate=true"), (true, false));
        assert_eq!(step(&[], "SkipDryRunOnMissingResource=true"), (true, true));
        assert_eq!(
            step(&["SkipDryRunOnMissingResource=true"], ""),
            (true, true)
        );
    }

    #[test]
    fn respect_ignore_differences_per_resource_wins_either_way() {
        let obj = |opts: &str| serde_json::json!({"metadata": {"annotations": {SYNC_OPTIONS_ANNOTATION: opts}}});
        let on = SyncOptions::parse(["RespectIgnoreDifferences=true"]);
        let off = SyncOptions::default();
        assert!(on.respects_ignore_differences(&obj("Prune=false")));
        assert!(!on.respects_ignore_differences(&obj("RespectIgnoreDifferences=false")));
        assert!(off.respects_ignore_differences(&obj("RespectIgnoreDifferences=true")));
        assert!(!off.respects_ignore_differences(&serde_json::json!({})));
        assert!(
            !on.respects_ignore_differences(&obj(
                "RespectIgnoreDifferences=true,RespectIgnoreDifferences=false"
            )),
            "false wins a conflict"
        );
    }

    #[test]
    fn a_resource_tracked_by_another_app_is_shared() {
        use plumb_core::argo::TrackingMethod;
        let obj = |annotations: serde_json::Value, labels: serde_json::Value| {
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": "shop",
                    "annotations": annotations, "labels": labels}})
        };
        let id = |app: &str| serde_json::json!({"argocd.argoproj.io/tracking-id": format!("{app}:/ConfigMap:shop/cfg")});
        let none = serde_json::json!({});
        let inst = |app: &str| serde_json::json!({"app.kubernetes.io/instance": app});
        let a = TrackingMethod::Annotation;
        assert_eq!(
            tracked_by_other("web", a, &obj(id("other"), none.clone())),
            Some("other")
        );
        assert_eq!(
            tracked_by_other("web", a, &obj(id("web"), none.clone())),
            None
        );
        // Annotation tracking: a Helm chart's instance label names no Application.
        assert_eq!(
            tracked_by_other("web", a, &obj(none.clone(), inst("release"))),
            None
        );
        // An id copied from another object is not tracking.
        let copied =
            serde_json::json!({"argocd.argoproj.io/tracking-id": "other:apps/Deployment:shop/api"});
        assert_eq!(tracked_by_other("web", a, &obj(copied, none.clone())), None);
        let l = TrackingMethod::Label;
        assert_eq!(
            tracked_by_other("web", l, &obj(none.clone(), inst("other"))),
            Some("other")
        );
        assert_eq!(
            tracked_by_other("web", l, &obj(none.clone(), inst("web"))),
            None
        );
        assert_eq!(
            tracked_by_other("web", l, &obj(none.clone(), none.clone())),
            None
        );
        // Owned objects are their owner's.
        let mut owned = obj(id("other"), none.clone());
        owned["metadata"]["ownerReferences"] =
            serde_json::json!([{"kind": "Deployment", "name": "x"}]);
        assert_eq!(tracked_by_other("web", a, &owned), None);

        let key = plumb_core::ResourceKey::of(&obj(none.clone(), none.clone())).unwrap();
        let mine = obj(id("web"), none.clone());
        let theirs = obj(id("other"), none);
        assert_eq!(shared_resource("web", a, [(&key, &mine)]), None);
        assert_eq!(
            shared_resource("web", a, [(&key, &mine), (&key, &theirs)]).as_deref(),
            Some(
                "FailOnSharedResource=true: /ConfigMap shop/cfg is already tracked by Application other"
            )
        );
    }

    #[test]
    fn app_options_are_matched_exactly() {
        let o = SyncOptions::parse([
            "CreateNamespace=true",
            "PruneLast=true",
            " Replace=true",
            "ApplyOutOfSyncOnly=true",
            "PrunePropagationPolicy=orphan",
            "Prune=false",
            "Prune=confirm",
            "Bogus=1",
        ]);
        assert!(o.create_namespace);
        assert!(o.prune_last);
        assert!(!o.replace, "a leading space is not Replace=true");
        assert!(o.apply_out_of_sync_only);
        assert_eq!(o.prune_propagation_policy, PropagationPolicy::Orphan);
        assert_eq!(
            o.prune,
            Some(PruneOption::False),
            "the first Prune= value wins"
        );
        assert_eq!(o.unknown, [" Replace=true", "Bogus=1"]);
        assert_eq!(o.server_side_apply, None);
        assert!(o.validate);
    }

    #[test]
    fn app_level_server_side_apply_true_wins_a_conflict() {
        let o = SyncOptions::parse(["ServerSideApply=false", "ServerSideApply=true"]);
        assert_eq!(o.server_side_apply, Some(true));
        let o = SyncOptions::parse(["ServerSideApply=false"]);
        assert_eq!(o.server_side_apply, Some(false));
        let o = SyncOptions::parse([
            "PrunePropagationPolicy=orphan",
            "PrunePropagationPolicy=background",
        ]);
        assert_eq!(o.prune_propagation_policy, PropagationPolicy::Background);
    }

    #[test]
    fn resource_annotation_is_trimmed_and_deduplicated() {
        assert_eq!(
            annotation_csv(" Prune=false ,, PruneLast=true,Prune=false "),
            ["Prune=false", "PruneLast=true"]
        );
        let r = ResourceSyncOptions::parse(
            "Prune=false, ServerSideApply=true,ServerSideApply=false, Force=true,Replace=true, What=ever",
        );
        assert_eq!(r.prune, Some(PruneOption::False));
        assert_eq!(
            r.server_side_apply,
            Some(false),
            "false wins, as in gitops-engine"
        );
        assert!(r.force);
        assert_eq!(r.replace, Some(true));
        assert_eq!(r.prune_last, None);
        assert_eq!(r.unknown, ["What=ever"]);
        assert_eq!(
            ResourceSyncOptions::parse("Prune=true,Prune=confirm").prune,
            Some(PruneOption::Confirm)
        );
    }

    #[test]
    fn resource_options_override_app_options() {
        struct Case {
            app: &'static [&'static str],
            target: &'static str,
            live: &'static str,
            check: fn(&EffectiveOptions) -> bool,
            what: &'static str,
        }
        let cases = [
            Case {
                app: &["Prune=false"],
                target: "",
                live: "",
                check: |e| e.prune == PruneOption::False,
                what: "app Prune=false is the default",
            },
            Case {
                app: &["Prune=false"],
                target: "",
                live: "Prune=true",
                check: |e| e.prune == PruneOption::True,
                what: "resource Prune=true overrides app Prune=false",
            },
            Case {
                app: &[],
                target: "",
                live: "Prune=confirm",
                check: |e| e.prune == PruneOption::Confirm,
                what: "resource Prune=confirm",
            },
            Case {
                app: &[],
                target: "",
                live: "",
                check: |e| e.apply_mode == ApplyMode::ServerSide,
                what: "plumb applies server-side by default",
            },
            Case {
                app: &["ServerSideApply=false"],
                target: "",
                live: "",
                check: |e| e.apply_mode == ApplyMode::ClientSide,
                what: "app ServerSideApply=false",
            },
            Case {
                app: &["ServerSideApply=false"],
                target: "ServerSideApply=true",
                live: "",
                check: |e| e.apply_mode == ApplyMode::ServerSide,
                what: "resource SSA=true over app SSA=false",
            },
            Case {
                app: &["ServerSideApply=true"],
                target: "ServerSideApply=false",
                live: "",
                check: |e| e.apply_mode == ApplyMode::ClientSide,
                what: "resource SSA=false over app SSA=true",
            },
            Case {
                app: &[],
                target: "",
                live: "ServerSideApply=false",
                check: |e| e.apply_mode == ApplyMode::ServerSide,
                what: "SSA is read from the desired object only",
            },
            Case {
                app: &[],
                target: "",
                live: "Replace=true",
                check: |e| e.replace,
                what: "Replace=true on live counts",
            },
            Case {
                app: &["Replace=true"],
                target: "Replace=false",
                live: "",
                check: |e| !e.replace,
                what: "resource Replace=false over app Replace=true",
            },
            Case {
                app: &["PruneLast=true"],
                target: "",
                live: "",
                check: |e| e.prune_last,
                what: "app PruneLast",
            },
            Case {
                app: &[],
                target: "PruneLast=true",
                live: "",
                check: |e| !e.prune_last,
                what: "PruneLast is read from the live object when there is one",
            },
            Case {
                app: &["ApplyOutOfSyncOnly=true"],
                target: "ApplyOutOfSyncOnly=false",
                live: "",
                check: |e| !e.apply_out_of_sync_only,
                what: "resource ApplyOutOfSyncOnly=false",
            },
            Case {
                app: &[],
                target: "Validate=false",
                live: "",
                check: |e| !e.validate,
                what: "resource Validate=false",
            },
        ];
        for c in cases {
            let app = SyncOptions::parse(c.app);
            let t = ResourceSyncOptions::parse(c.target);
            let l = ResourceSyncOptions::parse(c.live);
            let e = EffectiveOptions::resolve(&app, Some(&t), Some(&l));
            assert!((c.check)(&e), "{}: {e:?}", c.what);
        }
    }
}
