//! plumb's sync engine: what a sync does and when an automated one happens, decided as
//! Argo CD (and gitops-engine) decide it, and the runner and controller that carry it out.
//!
//! **The planner is pure** — no I/O, no async, no clock (time is passed in), and it does not
//! use the runner; a unit test (`purity.rs`) reads the sources and fails on `plumb_cluster`,
//! `plumb_render`, `tokio`, `std::fs`/`net`/`process`/`env`, clock reads or
//! `crate::run`/`crate::controller`. Every module but [`mod@run`] and [`controller`]:
//!
//! - [`mod@plan`]: the ordered steps of a sync (apply / replace / prune / skip) by phase, wave,
//!   kind and name, with prune-wave reversal, `PruneLast`, `Prune=false`, `ApplyOutOfSyncOnly`,
//!   `CreateNamespace`, `Replace`, the apply mode, and the `allowEmpty` guard
//!   ([`plan::plan`]).
//! - [`options`]: `spec.syncPolicy.syncOptions` and the `argocd.argoproj.io/sync-options`
//!   annotation, and how a resource's options override the Application's.
//! - [`backoff`]: the self-heal backoff (0, 2, 6, 18, 54, 162, 300 s …) and the retry backoff
//!   of `syncPolicy.retry`. Go durations and RFC 3339 times are plumb-core's
//!   ([`duration`], [`time`], re-exported here).
//! - [`auto`]: the automated-sync decision (once per revision, self-heal with backoff, retry
//!   of failed syncs).
//! - [`history`]: `status.history` entries, their JSON, ids and `revisionHistoryLimit`.
//! - [`status`]: the Application's sync status from its resources.
//! - [`policy`]: `spec.syncPolicy` read from an Application object.
//! - [`operation`]: hook delete policies, when a hook or an applied resource is done (by
//!   health), generated hook names; [`request`]: a manual sync's flags; [`migration`]:
//!   client-side apply migration of `managedFields`; [`deletion`]: the cascade of a deleted
//!   Application (which wave goes next, what waits, what stays); [`scope`]: which
//!   namespaces' Applications the controller serves (`--application-namespaces`);
//!   [`orphans`]: an AppProject's `orphanedResources` — which objects of the destination
//!   namespace no Application tracks, and the `OrphanedResourceWarning` condition.
//! - [`loops`]: sync-loop recognition (the same revision synced again and again, the same
//!   fields differing after each sync), the `SyncLoop` condition's message and LoopGuard's
//!   fields.
//!
//! **The runner and the controller do the I/O:**
//!
//! - [`mod@run`]: refresh, sync, resume, terminate, roll back and finalize an Application. It
//!   talks to a cluster only through [`plumb_cluster::ClusterApi`] (`&dyn ClusterApi`; pass a
//!   `&plumb_cluster::Cluster`), so its logic is unit-tested on the in-memory cluster of
//!   `plumb-cluster`'s `memory` feature.
//! - [`controller`]: the loop over a connected `Cluster` and its watch cache.
//!
//! `NOTES.md` lists the Argo CD sources the rules come from and each deliberate difference.
//! Tests on the test bed (`tests/`) apply `deploy/` (`deploy.rs`), reproduce the seed
//! incident — webhook and HPA loops, then the fix — end to end (`seed.rs`), exercise waves,
//! hooks and resume, and run the controller loop (drift healed through a watch);
//! `bench/controller-1k.sh` measures the controller at 1,000 apps.
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

// The pure planner.
pub mod auto;
pub mod backoff;
pub mod deletion;
pub mod history;
pub mod loops;
pub mod migration;
pub mod operation;
pub mod options;
pub mod orphans;
pub mod plan;
pub mod policy;
pub mod request;
pub mod scope;
pub mod shard;
pub mod status;
pub mod webhook;

/// plumb-core's Go durations and RFC 3339 times (one implementation for every crate).
pub use plumb_core::{duration, time};

// The runner and the controller (I/O).
pub mod controller;
pub mod run;

pub use auto::{AppState, Decision, NoSync, SyncReason, automated_decision};
pub use backoff::{RetryBackoff, RetryPolicy, SelfHealBackoff, should_retry};
pub use history::{HistoryEntry, InitiatedBy, append_history};
pub use options::{ApplyMode, ResourceSyncOptions, SyncOptions};
pub use plan::{Action, Phase, Plan, PlanError, PlanResource, Step, plan};
pub use status::{SyncStatusCode, sync_status};

#[cfg(test)]
mod purity;
#[cfg(test)]
mod tests;
