//! The Kubernetes Events the runner records on an Application, through
//! [`RunOptions::events`] (the controller's [`plumb_cluster::Recorder`]; `None`: none), with
//! Argo CD's reasons and wording:
//!
//! - `OperationStarted` (Normal) when a sync operation starts (not when an interrupted one
//!   is resumed): `Initiated automated sync to '<revision>'` (the controller's words), or,
//!   for one a user started, the API server's: `initiated sync to <requested revision>`
//!   and `initiated rollback to <history id>`;
//! - `OperationCompleted` when it ends: `Sync operation to <revision> succeeded` (Normal) or
//!   `Sync operation to <revision> failed: <message>` (Warning); `Partial sync operation`
//!   for a sync of selected resources;
//! - `ResourceUpdated` (Normal) when a status write changes the sync status
//!   (`Updated sync status: OutOfSync -> Synced`) or the health status
//!   (`Updated health status: Progressing -> Healthy`, then ` (<health message>)` when the
//!   app's health has a message).
//!
//! Messages carry revisions, status names and the operation's message, which the status
//! holds too: never a secret value. Recording never waits and never fails.

use super::{Observation, RunOptions};
use plumb_cluster::events::{AppRef, EventSink, EventType};
use plumb_core::argo::model::ApplicationStatus;
use serde_json::Value;
use std::sync::Arc;

/// Argo CD's reason for an operation started.
pub const OPERATION_STARTED: &str = "OperationStarted";
/// Argo CD's reason for an operation ended.
pub const OPERATION_COMPLETED: &str = "OperationCompleted";
/// Argo CD's reason for a sync or health status change.
pub const RESOURCE_UPDATED: &str = "ResourceUpdated";

/// The event sink in [`RunOptions::events`].
#[derive(Clone)]
pub struct EventsHandle(pub Arc<dyn EventSink>);

impl std::fmt::Debug for EventsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventSink")
    }
}

/// Who or what started a sync operation (the `trigger` label of `plumb_app_sync_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncTrigger {
    /// A user (`plumb app sync`, rollback, a resumed operation a user started).
    Manual,
    /// Automated sync: a new revision, or a retry of a failed sync.
    Automated,
    /// Self-heal: an automated sync of the revision already synced, the app OutOfSync.
    SelfHeal,
}

impl SyncTrigger {
    /// The trigger of an operation: a user's is manual; an automated one is self-heal when
    /// its self-heal count is above 0 (a self-heal sync, or a retry of one), else automated.
    pub(super) fn of(automated: bool, self_heal_count: i64) -> SyncTrigger {
        match (automated, self_heal_count) {
            (false, _) => SyncTrigger::Manual,
            (true, 0) => SyncTrigger::Automated,
            (true, _) => SyncTrigger::SelfHeal,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SyncTrigger::Manual => "manual",
            SyncTrigger::Automated => "automated",
            SyncTrigger::SelfHeal => "self-heal",
        }
    }
}

/// Records one event on the Application `app` (nothing without a sink or a reference).
pub fn record(opts: &RunOptions, app: &Value, kind: EventType, reason: &str, message: &str) {
    if let Some(sink) = &opts.events
        && let Some(object) = AppRef::of(app)
    {
        sink.0.record(&object, kind, reason, message);
    }
}

/// The revision (or revisions, for several sources) an operation syncs, as Argo CD names
/// it in its events.
fn target(obs: &Observation) -> String {
    if !obs.revisions.is_empty() {
        return obs.revisions.join(", ");
    }
    if obs.revision.is_empty() {
        return obs.source.target_revision.clone();
    }
    obs.revision.clone()
}

/// `OperationStarted`: the controller's words for an automated sync (the revision it
/// syncs), the API server's for a user's (the revision requested, else the app's target;
/// a rollback names the history id).
pub(super) fn operation_started(
    opts: &RunOptions,
    app: &Value,
    obs: &Observation,
    op: &super::execute::Operation,
) {
    let message = match (op.trigger, op.rollback) {
        (SyncTrigger::Manual, Some(id)) => format!("initiated rollback to {id}"),
        (SyncTrigger::Manual, None) => {
            let requested = op
                .revision
                .clone()
                .filter(|r| !r.is_empty())
                .or_else(|| Some(obs.source.target_revision.clone()).filter(|r| !r.is_empty()))
                .unwrap_or_else(|| target(obs));
            format!("initiated sync to {requested}")
        }
        (SyncTrigger::Automated | SyncTrigger::SelfHeal, _) => {
            format!("Initiated automated sync to '{}'", target(obs))
        }
    };
    record(opts, app, EventType::Normal, OPERATION_STARTED, &message);
}

/// `OperationCompleted`: Normal when it succeeded, Warning with its message when not.
pub(super) fn operation_completed(
    opts: &RunOptions,
    app: &Value,
    obs: &Observation,
    partial: bool,
    succeeded: bool,
    message: &str,
) {
    let what = if partial {
        "Partial sync operation"
    } else {
        "Sync operation"
    };
    let (kind, text) = if succeeded {
        (
            EventType::Normal,
            format!("{what} to {} succeeded", target(obs)),
        )
    } else {
        (
            EventType::Warning,
            format!("{what} to {} failed: {message}", target(obs)),
        )
    };
    record(opts, app, kind, OPERATION_COMPLETED, &text);
}

/// `ResourceUpdated` for each of sync and health status that `new` changes from `old`
/// (after the write of `new`).
pub(super) fn status_changes(
    opts: &RunOptions,
    app: &Value,
    old: &ApplicationStatus,
    new: &ApplicationStatus,
) {
    if opts.events.is_none() {
        return;
    }
    if old.sync.status != new.sync.status {
        let message = format!(
            "Updated sync status: {} -> {}",
            old.sync.status, new.sync.status
        );
        record(opts, app, EventType::Normal, RESOURCE_UPDATED, &message);
    }
    if old.health.status != new.health.status {
        let mut message = format!(
            "Updated health status: {} -> {}",
            old.health.status, new.health.status
        );
        // Argo CD adds the health message when there is one.
        if !new.health.message.is_empty() {
            message.push_str(&format!(" ({})", new.health.message));
        }
        record(opts, app, EventType::Normal, RESOURCE_UPDATED, &message);
    }
}
