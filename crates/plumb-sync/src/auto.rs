//! Automated sync decisions: when an automated Application syncs, as Argo CD's `autoSync`
//! decides it, with one deliberate difference (a failed sync is retried with the retry
//! backoff, where Argo CD stops: argo-cd#18442).
//!
//! The rules, in order:
//! 1. an operation in progress, or an Application that is not OutOfSync: nothing;
//! 2. automated prune off and only pruning needed: nothing;
//! 3. the target revision (and source) differs from the last sync attempt's: sync now
//!    (once per new revision). With several sources, every source's revision and every
//!    source are compared: a new commit or an edit of any of them is a new revision. A plain directory source has no commit: its revision is the
//!    digest of its desired objects ([`revision_identity`]), so the same content is the same
//!    revision and a changed directory a new one;
//! 4. the last attempt at this revision failed: retry per `syncPolicy.retry`
//!    (wait for `duration × factor^attempts`, capped; nothing once the limit is exhausted);
//! 5. it succeeded and self-heal is off: nothing (no second automated sync of a revision);
//! 6. self-heal is on: sync once the self-heal backoff for the number of consecutive
//!    self-heal attempts has elapsed since the last sync finished.

use crate::backoff::{RetryPolicy, SelfHealBackoff};
use crate::status::SyncStatusCode;
use plumb_core::argo::AppSource;
use plumb_core::argo::model::ApplicationStatus;
use std::time::{Duration, SystemTime};

/// The outcome of the last sync attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastSync {
    pub succeeded: bool,
    /// When it finished.
    pub at: SystemTime,
    /// Someone stopped it (`plumb app terminate-op`): not retried.
    pub terminated: bool,
}

/// Retries of the current failed sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryState {
    /// `syncPolicy.retry` (or the automated default, `{limit: 5}`).
    pub policy: RetryPolicy,
    /// Retries made since the last failed attempt of a new revision (Argo CD's `retryCount`).
    pub attempts: u32,
}

impl Default for RetryState {
    fn default() -> Self {
        RetryState {
            policy: RetryPolicy::automated_default(),
            attempts: 0,
        }
    }
}

/// What an automated-sync decision reads.
#[derive(Debug, Clone, PartialEq)]
pub struct AppState {
    /// The revision the source resolves to now: a commit SHA (every source's, for several),
    /// or for a plain directory the digest of its desired objects ([`revision_identity`]).
    pub target_revision: String,
    /// The revision of the last sync attempt (successful or not), if any, as
    /// [`revision_identity`] reads it from `status.operationState.syncResult`.
    pub last_synced_revision: Option<String>,
    /// The outcome of that attempt.
    pub last_sync: Option<LastSync>,
    /// The comparison's verdict.
    pub sync_status: SyncStatusCode,
    /// `syncPolicy.automated.selfHeal`.
    pub self_heal: bool,
    /// `syncPolicy.automated.prune`.
    pub automated_prune: bool,
    /// Every resource that is not Synced only needs pruning ([`crate::status::only_pruning_needed`]).
    pub prune_only: bool,
    /// An operation (sync) is running.
    pub operation_in_progress: bool,
    /// The Application's source (any of its sources) changed since the last sync attempt
    /// (Argo CD compares the sources too, so an edited source counts like a new revision).
    pub source_changed: bool,
    /// Consecutive self-heal syncs since the last sync of a new revision, or since the
    /// Application was last seen Synced.
    pub self_heal_attempts: u32,
    /// When the last self-heal sync finished.
    pub last_self_heal_at: Option<SystemTime>,
    pub self_heal_backoff: SelfHealBackoff,
    pub retry: RetryState,
}

impl AppState {
    /// An OutOfSync Application at `target_revision` that was never synced, with Argo CD's
    /// defaults (self-heal off, automated prune off, default backoffs).
    pub fn new(target_revision: impl Into<String>) -> AppState {
        AppState {
            target_revision: target_revision.into(),
            last_synced_revision: None,
            last_sync: None,
            sync_status: SyncStatusCode::OutOfSync,
            self_heal: false,
            automated_prune: false,
            prune_only: false,
            operation_in_progress: false,
            source_changed: false,
            self_heal_attempts: 0,
            last_self_heal_at: None,
            self_heal_backoff: SelfHealBackoff::default(),
            retry: RetryState::default(),
        }
    }

    /// Takes what the Application's typed status records about its last operation: the
    /// revision and outcome of the last sync attempt and when it finished (a `Failed` one
    /// whose message is `terminated_message` was stopped by someone), its retry count,
    /// consecutive self-heal attempts, and whether `source` (the spec's now) differs from the
    /// source that attempt used, or for several sources whether any of `sources`
    /// (`spec.sources` now; empty for one `spec.source`) differs from those it used.
    pub fn read_last_operation(
        &mut self,
        status: &ApplicationStatus,
        source: &AppSource,
        sources: &[AppSource],
        terminated_message: &str,
    ) {
        let Some(op) = &status.operation_state else {
            return;
        };
        let count = |n: Option<i64>| n.map_or(0, |n| u32::try_from(n.max(0)).unwrap_or(u32::MAX));
        self.retry.attempts = count(op.retry_count);
        let result = op.sync_result.as_ref();
        self.last_synced_revision = result
            .map(|r| revision_identity(&r.revision, &r.revisions, &r.content_digest))
            .filter(|r| !r.is_empty());
        if let (Some(at), false) = (op.finished_at, op.phase.is_empty()) {
            self.last_sync = Some(LastSync {
                succeeded: op.phase == "Succeeded",
                at,
                terminated: op.phase == "Failed" && op.message == terminated_message,
            });
        }
        self.source_changed = result.is_some_and(|r| {
            let differs = |a: &AppSource, b: &AppSource| a.to_value() != b.to_value();
            let first = r.source.as_ref().is_some_and(|s| differs(s, source));
            // Several sources: any of them (an attempt that recorded none says nothing).
            let any = !r.sources.is_empty()
                && (r.sources.len() != sources.len()
                    || r.sources.iter().zip(sources).any(|(a, b)| differs(a, b)));
            first || any
        });
        self.self_heal_attempts = count(
            op.operation
                .sync
                .as_ref()
                .and_then(|s| s.auto_heal_attempts_count),
        );
    }

    /// Records a new comparison: the revision the source resolves to and the sync status.
    /// Seeing the Application Synced ends a run of self-heal attempts (the backoff starts over).
    pub fn observe(&mut self, target_revision: impl Into<String>, status: SyncStatusCode) {
        self.target_revision = target_revision.into();
        self.sync_status = status;
        if status == SyncStatusCode::Synced {
            self.self_heal_attempts = 0;
        }
    }

    /// Records the end of a sync started for `reason`.
    pub fn record_sync(
        &mut self,
        reason: SyncReason,
        revision: impl Into<String>,
        succeeded: bool,
        finished_at: SystemTime,
    ) {
        self.last_synced_revision = Some(revision.into());
        self.last_sync = Some(LastSync {
            succeeded,
            at: finished_at,
            terminated: false,
        });
        self.source_changed = false;
        match reason {
            SyncReason::NewRevision => {
                self.self_heal_attempts = 0;
                self.retry.attempts = 0;
            }
            SyncReason::SelfHeal => {
                self.self_heal_attempts = self.self_heal_attempts.saturating_add(1);
                self.last_self_heal_at = Some(finished_at);
                self.retry.attempts = 0;
            }
            SyncReason::Retry => self.retry.attempts = self.retry.attempts.saturating_add(1),
        }
        if succeeded {
            self.retry.attempts = 0;
        }
    }

    /// Records the end of a sync a user started. Like a sync of a new revision it starts a
    /// fresh operation: the self-heal and retry counts start over (Argo CD copies the self-heal
    /// count from the last operation, which for a manual sync is 0).
    pub fn record_manual_sync(
        &mut self,
        revision: impl Into<String>,
        succeeded: bool,
        finished_at: SystemTime,
    ) {
        self.record_sync(SyncReason::NewRevision, revision, succeeded, finished_at);
    }

    /// When the last sync operation finished (the reference point of both backoffs).
    fn last_finished(&self) -> Option<SystemTime> {
        match (self.last_sync.map(|l| l.at), self.last_self_heal_at) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The revision an automated decision compares (and sync-loop recognition keys on): the
/// commit `revision` (Argo CD's `syncResult.revision`) or, for several sources, every
/// source's commit `revisions` in `spec.sources` order (Argo CD compares all of
/// `syncResult.revisions`: a new commit of any source is a new revision); and, when a source
/// is a plain directory (which has no commit), `content_digest` ([`content_digest`] of the
/// desired objects; `syncResult.contentDigest`, plumb's own), so that the same content is
/// "already attempted" (a failed sync is retried per `syncPolicy.retry`, not again at every
/// compare) and a changed directory is a new revision. Empty when nothing identifies anything.
pub fn revision_identity(revision: &str, revisions: &[String], content_digest: &str) -> String {
    let commits = if revisions.is_empty() {
        revision.to_string()
    } else if revisions.iter().all(String::is_empty) {
        String::new()
    } else {
        revisions.join(",")
    };
    match (commits.is_empty(), content_digest.is_empty()) {
        (_, true) => commits,
        (true, false) => content_digest.to_string(),
        // A commit and a directory among several sources: both.
        (false, false) => format!("{commits} {content_digest}"),
    }
}

/// The digest of desired objects (`sha256:<hex>` of each object's JSON text, in the order
/// given): what identifies a plain directory's content for [`revision_identity`].
/// The rendered objects, not the files: a file no object comes from changes nothing to sync.
pub fn content_digest<'a>(objects: impl IntoIterator<Item = &'a serde_json::Value>) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for object in objects {
        // Each JSON text is self-delimiting: no separator is needed between objects.
        ctx.update(object.to_string().as_bytes());
    }
    let hex: String = ctx
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// Why an automated sync starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncReason {
    /// A revision (or source) not attempted yet.
    NewRevision,
    /// Same revision, OutOfSync, self-heal on.
    SelfHeal,
    /// Same revision, the last attempt failed, the retry policy allows another.
    Retry,
}

/// Why no automated sync happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoSync {
    /// An operation is running.
    OperationInProgress,
    /// The Application is Synced.
    NotOutOfSync,
    /// Only pruning is needed and automated prune is off.
    PruneOnlyWithoutAutomatedPrune,
    /// This revision was already synced successfully and self-heal is off.
    AlreadySynced,
    /// This revision's sync failed and the retry limit is used up.
    RetriesExhausted { attempts: u32 },
    /// This revision's sync was terminated by hand: it is not retried (a new revision, a
    /// changed source or a manual sync starts over).
    Terminated,
    /// An open sync window of the app's project blocks automated syncs (the reconcile
    /// outcome names the window).
    SyncWindow,
    /// LoopGuard: in a recognised sync loop, only the looping fields differ (plumb's own;
    /// see [`crate::loops`]).
    LoopGuard,
}

/// An automated-sync decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Start a sync now.
    SyncNow { reason: SyncReason },
    /// A sync is due at `at` (a backoff is running): decide again then.
    WaitUntil { at: SystemTime, reason: SyncReason },
    /// No sync.
    Nothing { why: NoSync },
}

fn due(at: SystemTime, now: SystemTime, reason: SyncReason) -> Decision {
    if now >= at {
        Decision::SyncNow { reason }
    } else {
        Decision::WaitUntil { at, reason }
    }
}

/// Decides whether an automated Application syncs now, later, or not at all. Pure: `now` is
/// passed in.
pub fn automated_decision(app: &AppState, now: SystemTime) -> Decision {
    if app.operation_in_progress {
        return Decision::Nothing {
            why: NoSync::OperationInProgress,
        };
    }
    if app.sync_status != SyncStatusCode::OutOfSync {
        return Decision::Nothing {
            why: NoSync::NotOutOfSync,
        };
    }
    if !app.automated_prune && app.prune_only {
        return Decision::Nothing {
            why: NoSync::PruneOnlyWithoutAutomatedPrune,
        };
    }
    let attempted = !app.source_changed
        && app.last_synced_revision.as_deref() == Some(app.target_revision.as_str());
    let last = match app.last_sync {
        Some(last) if attempted => last,
        _ => {
            return Decision::SyncNow {
                reason: SyncReason::NewRevision,
            };
        }
    };
    if last.terminated {
        return Decision::Nothing {
            why: NoSync::Terminated,
        };
    }
    if !last.succeeded {
        return match app.retry.policy.next_delay(app.retry.attempts) {
            Some(delay) => due(add(last.at, delay), now, SyncReason::Retry),
            None => Decision::Nothing {
                why: NoSync::RetriesExhausted {
                    attempts: app.retry.attempts,
                },
            },
        };
    }
    if !app.self_heal {
        return Decision::Nothing {
            why: NoSync::AlreadySynced,
        };
    }
    let delay = app.self_heal_backoff.delay(app.self_heal_attempts);
    let since = app.last_finished().unwrap_or(last.at);
    due(add(since, delay), now, SyncReason::SelfHeal)
}

/// `t + d`, saturating at the latest time the platform can represent (roughly; a delay that
/// large never comes due in practice).
fn add(t: SystemTime, d: Duration) -> SystemTime {
    let mut d = d;
    loop {
        if let Some(sum) = t.checked_add(d) {
            return sum;
        }
        d /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(op: serde_json::Value) -> ApplicationStatus {
        ApplicationStatus::read_lenient(&json!({"status": {"operationState": op}})).0
    }

    #[test]
    fn last_operation_is_read_from_the_typed_status() {
        let source = AppSource {
            repo_url: "https://git.example/p.git".into(),
            path: "prod".into(),
            ..AppSource::default()
        };
        let mut s = AppState::new("b5e2be1");
        s.read_last_operation(
            &status(json!({"phase": "Failed", "message": "stopped",
                "finishedAt": "2026-09-22T19:57:06Z", "retryCount": 2,
                "operation": {"sync": {"autoHealAttemptsCount": 3}},
                "syncResult": {"revision": "72e773b", "source": {"repoURL": "https://git.example/p.git", "path": "dev"}}})),
            &source,
            &[],
            "stopped",
        );
        assert_eq!(s.last_synced_revision.as_deref(), Some("72e773b"));
        let last = s.last_sync.unwrap();
        assert!(!last.succeeded && last.terminated);
        assert_eq!(
            last.at,
            crate::time::parse_rfc3339("2026-09-22T19:57:06Z").unwrap()
        );
        assert_eq!((s.retry.attempts, s.self_heal_attempts), (2, 3));
        assert!(s.source_changed, "path dev → prod");

        // The same source (as Argo CD wrote it) is no change; a running operation has no outcome.
        let mut s = AppState::new("b5e2be1");
        s.read_last_operation(
            &status(json!({"phase": "Running", "startedAt": "2026-09-22T19:57:06Z",
                "syncResult": {"revision": "b5e2be1", "source": {"repoURL": "https://git.example/p.git", "path": "prod"}}})),
            &source,
            &[],
            "stopped",
        );
        assert!(s.last_sync.is_none() && !s.source_changed);
        assert_eq!((s.retry.attempts, s.self_heal_attempts), (0, 0));

        // No operation recorded: nothing changes.
        let mut s = AppState::new("b5e2be1");
        s.read_last_operation(&ApplicationStatus::default(), &source, &[], "stopped");
        assert_eq!(s, AppState::new("b5e2be1"));
    }

    #[test]
    fn a_content_digest_tells_objects_apart_and_not_their_key_order() {
        let a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "1"}});
        let same: serde_json::Value = serde_json::from_str(
            r#"{"data": {"k": "1"}, "metadata": {"name": "a"}, "kind": "ConfigMap", "apiVersion": "v1"}"#,
        )
        .unwrap();
        let changed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "2"}});
        let b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}});
        let d = content_digest([&a, &b]);
        assert!(d.starts_with("sha256:") && d.len() == 7 + 64, "{d}");
        assert!(d[7..].bytes().all(|c| c.is_ascii_hexdigit()), "{d}");
        assert_eq!(content_digest([&same, &b]), d);
        assert_ne!(content_digest([&changed, &b]), d);
        assert_ne!(content_digest([&a]), d, "an object less");
        assert_ne!(
            content_digest([&b, &a]),
            d,
            "the order is the caller's (sorted by key)"
        );
        assert_ne!(content_digest([]), d);
    }

    #[test]
    fn revision_identity_is_the_commit_or_a_directorys_digest() {
        assert_eq!(revision_identity("b5e2be1", &[], ""), "b5e2be1");
        assert_eq!(revision_identity("", &[], "sha256:ab"), "sha256:ab");
        assert_eq!(
            revision_identity("b5e2be1", &[], "sha256:ab"),
            "b5e2be1 sha256:ab"
        );
        assert_eq!(revision_identity("", &[], ""), "");
    }

    #[test]
    fn several_sources_are_identified_by_every_sources_commit() {
        let revs = |r: &[&str]| r.iter().map(ToString::to_string).collect::<Vec<_>>();
        // `revision` (the first rendered source's) is not all there is.
        let both = revision_identity("aaa", &revs(&["aaa", "bbb"]), "");
        assert_eq!(both, "aaa,bbb");
        assert_ne!(revision_identity("aaa", &revs(&["aaa", "ccc"]), ""), both);
        // One source in `spec.sources`: its commit, as with `spec.source`.
        assert_eq!(revision_identity("aaa", &revs(&["aaa"]), ""), "aaa");
        // Directories only: their digest; a directory beside a commit: both.
        assert_eq!(
            revision_identity("", &revs(&["", ""]), "sha256:ab"),
            "sha256:ab"
        );
        assert_eq!(
            revision_identity("", &revs(&["", "bbb"]), "sha256:ab"),
            ",bbb sha256:ab"
        );
    }

    #[test]
    fn an_edit_of_any_source_is_a_changed_source() {
        let source = |path: &str| AppSource {
            repo_url: "https://git.example/p.git".into(),
            path: path.into(),
            ..AppSource::default()
        };
        let spec = [source("base"), source("prod")];
        let read = |recorded: serde_json::Value| {
            let mut s = AppState::new("aaa,bbb");
            s.read_last_operation(
                &status(
                    json!({"phase": "Succeeded", "finishedAt": "2026-09-22T19:57:06Z",
                    "syncResult": recorded}),
                ),
                &spec[0],
                &spec,
                "stopped",
            );
            s
        };
        let src = |path: &str| json!({"repoURL": "https://git.example/p.git", "path": path});
        let same = read(json!({"revision": "aaa", "revisions": ["aaa", "bbb"],
            "source": src("base"), "sources": [src("base"), src("prod")]}));
        assert!(!same.source_changed);
        assert_eq!(same.last_synced_revision.as_deref(), Some("aaa,bbb"));
        let second = read(json!({"revision": "aaa", "revisions": ["aaa", "bbb"],
            "source": src("base"), "sources": [src("base"), src("dev")]}));
        assert!(second.source_changed, "the second source's path dev → prod");
        let fewer = read(json!({"revision": "aaa", "revisions": ["aaa"],
            "source": src("base"), "sources": [src("base")]}));
        assert!(fewer.source_changed, "a source added");
        // An attempt that recorded no sources: only the first is compared.
        let unrecorded = read(json!({"revision": "aaa", "source": src("base")}));
        assert!(!unrecorded.source_changed);
    }

    /// The decision for a plain directory app (no commit: `syncResult.revision` empty) whose
    /// last automated sync failed, as the controller builds it: the target is the digest of
    /// the desired objects now, the last attempt's is `syncResult.contentDigest`.
    fn directory_app(now_digest: &str, op: serde_json::Value) -> AppState {
        let source = AppSource {
            repo_url: "file:///srv/apps".into(),
            path: "web".into(),
            ..AppSource::default()
        };
        let mut op = op;
        op["syncResult"]["source"] = json!({"repoURL": "file:///srv/apps", "path": "web"});
        let target = revision_identity("", &[], now_digest);
        let mut s = AppState::new(target.clone());
        s.retry.policy = RetryPolicy::from_value(
            &json!({"limit": 2, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "1m"}}),
        )
        .unwrap();
        s.read_last_operation(&status(op), &source, &[], "Operation terminated");
        s.observe(target, SyncStatusCode::OutOfSync);
        s
    }

    #[test]
    fn a_failed_sync_of_the_same_directory_content_is_retried_per_the_backoff() {
        let finished = "2026-09-22T19:57:06Z";
        let at =
            |secs: u64| crate::time::parse_rfc3339(finished).unwrap() + Duration::from_secs(secs);
        let failed = |digest: &str, retries: i64| {
            json!({"phase": "Failed", "message": "one or more objects failed to apply",
                "finishedAt": finished, "retryCount": retries,
                "syncResult": {"contentDigest": digest}})
        };
        // The first attempt failed: the first retry waits 10s, even when asked at once.
        let s = directory_app("sha256:aa", failed("sha256:aa", 0));
        assert_eq!(s.last_synced_revision.as_deref(), Some("sha256:aa"));
        for now in [at(0), at(1), at(9)] {
            assert_eq!(
                automated_decision(&s, now),
                Decision::WaitUntil {
                    at: at(10),
                    reason: SyncReason::Retry
                }
            );
        }
        assert_eq!(
            automated_decision(&s, at(10)),
            Decision::SyncNow {
                reason: SyncReason::Retry
            }
        );
        // After one retry: 20s.
        let s = directory_app("sha256:aa", failed("sha256:aa", 1));
        assert_eq!(
            automated_decision(&s, at(0)),
            Decision::WaitUntil {
                at: at(20),
                reason: SyncReason::Retry
            }
        );
        // After two (the limit): no more, however long one waits.
        let s = directory_app("sha256:aa", failed("sha256:aa", 2));
        assert_eq!(
            automated_decision(&s, at(3600)),
            Decision::Nothing {
                why: NoSync::RetriesExhausted { attempts: 2 }
            }
        );
        // The directory changed (other desired objects): a new revision, synced at once.
        let s = directory_app("sha256:bb", failed("sha256:aa", 2));
        assert_eq!(
            automated_decision(&s, at(0)),
            Decision::SyncNow {
                reason: SyncReason::NewRevision
            }
        );
        // A status written before plumb recorded digests: nothing says what was attempted, so
        // one sync records it (as a new revision), and the next failure is retried per backoff.
        let s = directory_app("sha256:aa", failed("", 0));
        assert_eq!(s.last_synced_revision, None);
        assert_eq!(
            automated_decision(&s, at(0)),
            Decision::SyncNow {
                reason: SyncReason::NewRevision
            }
        );
    }
}
