//! What the Application's status says about its syncs: `status.history` (oldest first, as
//! Argo CD keeps it), `status.sync.revision` (the target), `status.operationState` (the last
//! operation: its revision, when it finished, `autoHealAttemptsCount`). Read through
//! plumb-core's typed model, leniently: a status field of the wrong shape counts as absent.

use crate::report::LoopEvidence;
use plumb_core::argo::model::ApplicationStatus;
use plumb_core::time::format_rfc3339;
use serde_json::Value;
use std::time::SystemTime;

#[derive(Debug, Clone, Default)]
pub struct SyncState {
    pub evidence: LoopEvidence,
    /// When the last sync finished.
    pub last_sync_at: Option<SystemTime>,
}

pub fn read(app: &Value) -> SyncState {
    let (status, _) = ApplicationStatus::read_lenient(app);
    let history = &status.history;
    let op = status.operation_state.as_ref();
    let op_revision = op
        .and_then(|o| o.sync_result.as_ref())
        .map(|r| r.revision.clone())
        .filter(|r| !r.is_empty());
    let last_revision = op_revision.or_else(|| history.last().map(|e| e.revision.clone()));
    // The run of consecutive syncs of the last revision, newest backwards.
    let run: Vec<Option<SystemTime>> = history
        .iter()
        .rev()
        .take_while(|e| Some(&e.revision) == last_revision.as_ref())
        .map(|e| e.deployed_at)
        .collect();
    let first = run.last().copied().flatten();
    let last = run.first().copied().flatten();
    let span = match (first, last) {
        (Some(a), Some(b)) => b.duration_since(a).ok().map(|d| d.as_secs()),
        _ => None,
    };
    let finished = op.and_then(|o| o.finished_at);
    let deployed = history.last().and_then(|e| e.deployed_at);
    let last_sync_at = match (finished, deployed) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let evidence = LoopEvidence {
        revision: last_revision,
        syncs: run.len(),
        first_sync_at: first.map(format_rfc3339),
        last_sync_at: last.map(format_rfc3339),
        span_seconds: span,
        self_heal_attempts: op
            .and_then(|o| o.operation.sync.as_ref())
            .and_then(|s| s.auto_heal_attempts_count)
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0),
        target_revision: Some(status.sync.revision).filter(|r| !r.is_empty()),
    };
    SyncState {
        evidence,
        last_sync_at,
    }
}
