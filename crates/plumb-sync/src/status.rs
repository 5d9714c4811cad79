//! The Application's sync status, as Argo CD's `CompareAppState` derives it from the
//! per-resource comparison.

use crate::plan::{Hook, PlanResource, Status};
use serde::{Deserialize, Serialize};

/// An Application's (or a resource's) sync status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SyncStatusCode {
    Synced,
    OutOfSync,
}

/// The status of one resource, `None` for resources that have none and never affect the
/// Application's: hooks (including hooks of unknown types) and `hook: Skip` resources.
///
/// Otherwise a resource is OutOfSync when it differs, is missing, or is extra (needs
/// pruning, whatever its `Prune=` option: a `Prune=false` resource stays OutOfSync).
pub fn resource_sync_status(r: &PlanResource) -> Option<SyncStatusCode> {
    if r.hook() != Hook::None {
        return None;
    }
    Some(match r.status {
        Status::Equal => SyncStatusCode::Synced,
        Status::Modified | Status::Missing | Status::Extra => SyncStatusCode::OutOfSync,
    })
}

/// Whether a resource needs pruning (live, not desired).
pub fn requires_pruning(r: &PlanResource) -> bool {
    r.status == Status::Extra
}

/// The Application's sync status: OutOfSync when any resource is OutOfSync, except an extra
/// resource whose compare options say `IgnoreExtraneous` (it is OutOfSync itself but does not
/// make the Application OutOfSync); Synced otherwise (also when there are no resources).
pub fn sync_status(resources: &[PlanResource]) -> SyncStatusCode {
    let out_of_sync = resources.iter().any(|r| {
        resource_sync_status(r) == Some(SyncStatusCode::OutOfSync)
            && !(requires_pruning(r) && r.ignore_extraneous())
    });
    if out_of_sync {
        SyncStatusCode::OutOfSync
    } else {
        SyncStatusCode::Synced
    }
}

/// Whether every resource that is not Synced only needs pruning: Argo CD's automated sync
/// then does nothing unless automated prune is on. As in Argo CD, a resource without a
/// status (a hook) counts as "not Synced and not needing pruning", so any desired hook makes
/// this false.
pub fn only_pruning_needed(resources: &[PlanResource]) -> bool {
    resources
        .iter()
        .all(|r| resource_sync_status(r) == Some(SyncStatusCode::Synced) || requires_pruning(r))
}
