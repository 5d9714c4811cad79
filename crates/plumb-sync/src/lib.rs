//! plumb's sync engine core: what a sync does and when an automated one happens, decided as
//! Argo CD (and gitops-engine) decide it. Pure: no I/O, no clock (time is passed in).
//!
//! - [`mod@plan`]: the ordered steps of a sync (apply / replace / prune / skip) by phase, wave,
//!   kind and name, with prune-wave reversal, `PruneLast`, `Prune=false`, `ApplyOutOfSyncOnly`,
//!   `CreateNamespace`, `Replace`, the apply mode, and the `allowEmpty` guard
//!   ([`plan::plan`]).
//! - [`options`]: `spec.syncPolicy.syncOptions` and the `argocd.argoproj.io/sync-options`
//!   annotation, and how a resource's options override the Application's.
//! - [`backoff`]: the self-heal backoff (0, 2, 6, 18, 54, 162, 300 s …) and the retry backoff
//!   of `syncPolicy.retry`; [`duration`]: Go durations.
//! - [`auto`]: the automated-sync decision (once per revision, self-heal with backoff, retry
//!   of failed syncs).
//! - [`history`]: `status.history` entries, their JSON, ids and `revisionHistoryLimit`.
//! - [`status`]: the Application's sync status from its resources.
//! - [`policy`]: `spec.syncPolicy` read from an Application object.
//!
//! ```
//! use plumb_core::ResourceKey;
//! use plumb_sync::plan::{plan, Action, PlanResource, Status};
//! use plumb_sync::options::SyncOptions;
//!
//! let key = |kind: &str, name: &str| ResourceKey {
//!     group: String::new(), kind: kind.into(), namespace: "prod".into(), name: name.into(),
//! };
//! let resources = [
//!     PlanResource::new(key("Service", "web"), Status::Missing),
//!     PlanResource::new(key("ConfigMap", "web"), Status::Modified),
//!     PlanResource::new(key("Secret", "old"), Status::Extra),
//! ];
//! let p = plan(&resources, &SyncOptions::default(), false, false, true).unwrap();
//! let order: Vec<(&str, Action)> =
//!     p.steps.iter().map(|s| (s.key.kind.as_str(), s.action)).collect();
//! assert_eq!(order, [("Secret", Action::Prune), ("ConfigMap", Action::Apply), ("Service", Action::Apply)]);
//! ```

pub mod auto;
pub mod backoff;
pub mod controller;
pub mod deletion;
pub mod duration;
pub mod history;
pub mod migration;
pub mod operation;
pub mod options;
pub mod plan;
pub mod policy;
pub mod request;
pub mod run;
pub mod status;
pub mod time;

pub use auto::{AppState, Decision, NoSync, SyncReason, automated_decision};
pub use backoff::{RetryBackoff, RetryPolicy, SelfHealBackoff, should_retry};
pub use history::{HistoryEntry, InitiatedBy, append_history};
pub use options::{ApplyMode, ResourceSyncOptions, SyncOptions};
pub use plan::{Action, Phase, Plan, PlanError, PlanResource, Step, plan};
pub use status::{SyncStatusCode, sync_status};

#[cfg(test)]
mod tests;
