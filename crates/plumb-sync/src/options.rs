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

use plumb_core::SYNC_OPTIONS_ANNOTATION;
use std::collections::BTreeMap;

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
    /// Options Argo CD does not know (kept so they can be reported).
    pub unknown: Vec<String>,
    /// The destination namespace, for `CreateNamespace=true` (an input, not an option).
    pub destination_namespace: Option<DestinationNamespace>,
    /// Whether pruning was confirmed for this operation (an input, not an option).
    pub prune_confirmed: bool,
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
            unknown: Vec::new(),
            destination_namespace: None,
            prune_confirmed: false,
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
                // Accepted values that change nothing.
                "PruneLast=false"
                | "Replace=false"
                | "ApplyOutOfSyncOnly=false"
                | "CreateNamespace=false"
                | "RespectIgnoreDifferences=false"
                | "Validate=true"
                | "SkipDryRunOnMissingResource=false"
                | "FailOnSharedResource=false"
                | "ClientSideApplyMigration=true" => {}
                _ => {
                    if let Some(v) = item.strip_prefix("Prune=") {
                        match PruneOption::parse(v) {
                            Some(p) => {
                                o.prune.get_or_insert(p);
                            }
                            None => o.unknown.push(item.to_string()),
                        }
                    } else if let Some(v) = item.strip_prefix("Delete=") {
                        match PruneOption::parse(v) {
                            Some(p) => {
                                o.delete.get_or_insert(p);
                            }
                            None => o.unknown.push(item.to_string()),
                        }
                    } else {
                        o.unknown.push(item.to_string());
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
        let known = |i: &str| {
            matches!(
                i,
                "PruneLast=true"
                    | "PruneLast=false"
                    | "Replace=true"
                    | "Replace=false"
                    | "ServerSideApply=true"
                    | "ServerSideApply=false"
                    | "ApplyOutOfSyncOnly=true"
                    | "ApplyOutOfSyncOnly=false"
                    | "Force=true"
                    | "Force=false"
                    | "Validate=true"
                    | "Validate=false"
                    | "SkipDryRunOnMissingResource=true"
                    | "SkipDryRunOnMissingResource=false"
                    | "Prune=true"
                    | "Prune=false"
                    | "Prune=confirm"
                    | "Delete=true"
                    | "Delete=false"
                    | "Delete=confirm"
            )
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
            unknown: items
                .iter()
                .filter(|i| !known(i))
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
