//! `spec.syncPolicy` and `spec.revisionHistoryLimit` of an Application (plumb-core's
//! `Application` reads only `syncOptions`).

use crate::backoff::{RetryPolicy, RetryPolicyError};
use crate::options::SyncOptions;
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
    #[error("{path}: expected {expected}")]
    Type {
        path: &'static str,
        expected: &'static str,
    },
}

impl SyncPolicy {
    /// Reads `spec.syncPolicy` of an Application object (missing → manual sync, no options).
    pub fn from_application(app: &Value) -> Result<SyncPolicy, PolicyError> {
        let Some(p) = app.pointer("/spec/syncPolicy").filter(|v| !v.is_null()) else {
            return Ok(SyncPolicy::default());
        };
        if !p.is_object() {
            return Err(PolicyError::Type {
                path: "spec.syncPolicy",
                expected: "an object",
            });
        }
        let flag =
            |v: &Value, k: &str, path: &'static str, default: bool| -> Result<bool, PolicyError> {
                match v.get(k) {
                    None | Some(Value::Null) => Ok(default),
                    Some(Value::Bool(b)) => Ok(*b),
                    Some(_) => Err(PolicyError::Type {
                        path,
                        expected: "a boolean",
                    }),
                }
            };
        let automated = match p.get("automated") {
            None | Some(Value::Null) => None,
            Some(a) if a.is_object() => Some(AutomatedPolicy {
                enabled: flag(a, "enabled", "spec.syncPolicy.automated.enabled", true)?,
                prune: flag(a, "prune", "spec.syncPolicy.automated.prune", false)?,
                self_heal: flag(a, "selfHeal", "spec.syncPolicy.automated.selfHeal", false)?,
                allow_empty: flag(
                    a,
                    "allowEmpty",
                    "spec.syncPolicy.automated.allowEmpty",
                    false,
                )?,
            }),
            Some(_) => {
                return Err(PolicyError::Type {
                    path: "spec.syncPolicy.automated",
                    expected: "an object",
                });
            }
        };
        let sync_options = match p.get("syncOptions") {
            None | Some(Value::Null) => SyncOptions::default(),
            Some(Value::Array(items)) => {
                let strs: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
                SyncOptions::parse(strs.ok_or(PolicyError::Type {
                    path: "spec.syncPolicy.syncOptions",
                    expected: "a list of strings",
                })?)
            }
            Some(_) => {
                return Err(PolicyError::Type {
                    path: "spec.syncPolicy.syncOptions",
                    expected: "a list of strings",
                });
            }
        };
        let retry = match p.get("retry") {
            None | Some(Value::Null) => None,
            Some(r) => Some(RetryPolicy::from_value(r)?),
        };
        let mut sync_options = sync_options;
        if let Some(ns) = app
            .pointer("/spec/destination/namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            sync_options.destination_namespace = Some(crate::options::DestinationNamespace {
                name: ns.to_string(),
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
pub fn revision_history_limit(app: &Value) -> Option<i64> {
    app.pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_i64)
}
