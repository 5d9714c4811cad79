//! `spec.syncPolicy` and `spec.revisionHistoryLimit` of an Application, read through
//! plumb-core's typed model ([`plumb_core::argo::model::ApplicationSpec`]) and turned into
//! the planner's decisions (options parsed, retry durations read, `enabled` defaulted). The
//! automated decision's recorded inputs come from the typed status too
//! ([`crate::auto::AppState::read_last_operation`]).

use crate::backoff::{RetryPolicy, RetryPolicyError};
use crate::options::SyncOptions;
use plumb_core::argo::model::{ApplicationSpec, ModelError};
use serde_json::Value;

/// `spec.syncPolicy.automated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutomatedPolicy {
    /// `enabled` (Argo CD ≥ 3.0; absent means enabled).
    pub enabled: bool,
    /// `prune`: automated syncs prune.
    pub prune: bool,
    /// `selfHeal`: resync the same revision when the cluster drifts.
    pub self_heal: bool,
    /// `allowEmpty`: allow an automated, pruning sync to delete every resource.
    pub allow_empty: bool,
}

/// `spec.syncPolicy`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncPolicy {
    /// `automated`, when present.
    pub automated: Option<AutomatedPolicy>,
    /// `syncOptions`.
    pub sync_options: SyncOptions,
    /// `retry`, when present.
    pub retry: Option<RetryPolicy>,
}

/// A `syncPolicy` that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Retry(#[from] RetryPolicyError),
    /// A field of the wrong type (named by its path, `spec.syncPolicy.automated.prune`).
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl SyncPolicy {
    /// Reads `spec.syncPolicy` of an Application object (missing → manual sync, no options).
    /// Only `spec` is read (a status another tool wrote oddly does not stop a sync).
    pub fn from_application(app: &Value) -> Result<SyncPolicy, PolicyError> {
        SyncPolicy::from_spec(&ApplicationSpec::of(app)?)
    }

    /// The policy of a typed Application spec.
    pub fn from_spec(spec: &ApplicationSpec) -> Result<SyncPolicy, PolicyError> {
        let Some(p) = &spec.sync_policy else {
            return Ok(SyncPolicy::default());
        };
        let automated = p.automated.as_ref().map(|a| AutomatedPolicy {
            enabled: a.is_enabled(),
            prune: a.prune,
            self_heal: a.self_heal,
            allow_empty: a.allow_empty,
        });
        let mut sync_options = SyncOptions::parse(p.sync_options.iter().map(String::as_str));
        let retry = p
            .retry
            .as_ref()
            .map(RetryPolicy::from_strategy)
            .transpose()?;
        if !spec.destination.namespace.is_empty() {
            sync_options.destination_namespace = Some(crate::options::DestinationNamespace {
                name: spec.destination.namespace.clone(),
                exists: true,
            });
        }
        Ok(SyncPolicy {
            automated,
            sync_options,
            retry,
        })
    }

    /// Whether automated sync is on.
    pub fn is_automated(&self) -> bool {
        self.automated.is_some_and(|a| a.enabled)
    }

    /// The retry policy a sync gets: `syncPolicy.retry` when set; otherwise `{limit: 5}` for an
    /// automated sync and no retries for a manual one.
    pub fn retry_for(&self, automated: bool) -> RetryPolicy {
        match self.retry {
            Some(r) => r,
            None if automated => RetryPolicy::automated_default(),
            None => RetryPolicy::none(),
        }
    }
}

/// `spec.revisionHistoryLimit`, when set (pass it to [`crate::history::append_history`]).
/// A spec that cannot be read has none (the default applies).
pub fn revision_history_limit(app: &Value) -> Option<i64> {
    ApplicationSpec::of(app)
        .ok()
        .and_then(|s| s.revision_history_limit)
}
