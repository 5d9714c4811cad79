//! What the Application's status says about its syncs: `status.history` (oldest first, as
//! Argo CD keeps it), `status.sync.revision` (the target), `status.operationState` (the last
//! operation: its revision, when it finished, `autoHealAttemptsCount`).

use crate::report::LoopEvidence;
use crate::time;
use serde_json::Value;
use std::time::SystemTime;

#[derive(Debug, Clone, Default)]
pub struct SyncState {
    pub evidence: LoopEvidence,
    /// When the last sync finished.
    pub last_sync_at: Option<SystemTime>,
}

pub fn read(app: &Value) -> SyncState {
    let st = |p: &str| app.pointer(p);
    let history: Vec<(String, Option<String>)> = st("/status/history")
        .and_then(Value::as_array)
        .map(|h| {
            h.iter()
                .map(|e| {
                    (
                        e.get("revision")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        e.get("deployedAt")
                            .and_then(Value::as_str)
                            .map(String::from),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let op_revision = st("/status/operationState/syncResult/revision")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .map(String::from);
    let last_revision = op_revision.or_else(|| history.last().map(|(r, _)| r.clone()));
    // The run of consecutive syncs of the last revision, newest backwards.
    let run: Vec<&(String, Option<String>)> = history
        .iter()
        .rev()
        .take_while(|(r, _)| Some(r) == last_revision.as_ref())
        .collect();
    let first = run.last().and_then(|(_, t)| t.clone());
    let last = run.first().and_then(|(_, t)| t.clone());
    let span = match (
        first.as_deref().and_then(time::parse),
        last.as_deref().and_then(time::parse),
    ) {
        (Some(a), Some(b)) => b.duration_since(a).ok().map(|d| d.as_secs()),
        _ => None,
    };
    let finished = st("/status/operationState/finishedAt")
        .and_then(Value::as_str)
        .and_then(time::parse);
    let deployed = history
        .last()
        .and_then(|(_, t)| t.as_deref())
        .and_then(time::parse);
    let last_sync_at = match (finished, deployed) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let evidence = LoopEvidence {
        revision: last_revision,
        syncs: run.len(),
        first_sync_at: first,
        last_sync_at: last,
        span_seconds: span,
        self_heal_attempts: st("/status/operationState/operation/sync/autoHealAttemptsCount")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        target_revision: st("/status/sync/revision")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
            .map(String::from),
    };
    SyncState {
        evidence,
        last_sync_at,
    }
}
