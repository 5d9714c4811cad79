//! Sync history (`status.history`): the append-and-truncate rule of Argo CD's
//! `persistRevisionHistory`. The entries are plumb-core's typed
//! [`plumb_core::argo::model::HistoryEntry`] (re-exported here), which keeps fields it does not
//! model (multi-source `sources`/`revisions` included) when the history is written back.

pub use plumb_core::argo::model::{HistoryEntry, InitiatedBy};

/// `spec.revisionHistoryLimit` when unset.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i64 = 10;

/// The id the next entry gets: one more than the largest id (Argo CD takes the last entry's
/// id + 1; entries are kept oldest first, so that is the same number for any history Argo CD
/// wrote), 0 for an empty history.
pub fn next_history_id(history: &[HistoryEntry]) -> i64 {
    history
        .iter()
        .map(|e| e.id)
        .max()
        .map_or(0, |id| id.saturating_add(1))
}

/// Appends `entry` (newest last) with the next id, then keeps only the newest `limit` entries
/// (`spec.revisionHistoryLimit`, default 10; a limit of 0 or less keeps none, as Argo CD's
/// `Trunc` does). Returns the id given to the entry.
pub fn append_history(
    history: &mut Vec<HistoryEntry>,
    mut entry: HistoryEntry,
    limit: Option<i64>,
) -> i64 {
    let id = next_history_id(history);
    entry.id = id;
    history.push(entry);
    let keep = usize::try_from(limit.unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT).max(0))
        .unwrap_or(usize::MAX);
    if history.len() > keep {
        let excess = history.len() - keep;
        history.drain(..excess);
    }
    id
}

/// Whether a finished sync is recorded in the history, as Argo CD decides: it succeeded, was
/// not a dry run, and synced the whole application (no resource subset).
///
/// Argo CD's self-heal syncs only the OutOfSync resources (a subset), so they are not
/// recorded there; plumb's self-heal syncs the whole application and is recorded.
pub fn records_history(succeeded: bool, dry_run: bool, partial: bool) -> bool {
    succeeded && !dry_run && !partial
}

/// The JSON Argo CD writes for an `ApplicationSource` (kept for the runner's callers; the
/// rules are [`plumb_core::argo::AppSource`]'s `Serialize`).
pub mod source_json {
    use plumb_core::argo::AppSource;
    use serde_json::Value;

    pub fn to_value(s: &AppSource) -> Value {
        s.to_value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_core::argo::AppSource;
    use serde_json::json;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn entry(rev: &str, secs: u64) -> HistoryEntry {
        HistoryEntry::new(
            rev,
            AppSource::default(),
            at(secs),
            at(secs + 3),
            InitiatedBy::automated(),
        )
    }

    #[test]
    fn ids_increase_from_zero_and_the_newest_ten_are_kept() {
        let mut h = Vec::new();
        for i in 0..15 {
            let id = append_history(&mut h, entry("b5e2be1", 100 * i), None);
            assert_eq!(id, i as i64);
        }
        assert_eq!(h.len(), 10);
        let ids: Vec<i64> = h.iter().map(|e| e.id).collect();
        assert_eq!(ids, (5..15).collect::<Vec<i64>>());
        assert_eq!(
            h[0].deployed_at,
            Some(at(503)),
            "oldest kept is the 6th entry"
        );
    }

    #[test]
    fn limit_is_configurable_and_zero_keeps_nothing() {
        let table: &[(Option<i64>, usize, usize)] = &[
            (Some(3), 5, 3),
            (Some(1), 4, 1),
            (Some(0), 4, 0),
            (Some(-2), 4, 0),
            (None, 4, 4),
            (Some(100), 12, 12),
        ];
        for (limit, appended, kept) in table {
            let mut h = Vec::new();
            for i in 0..*appended {
                append_history(&mut h, entry("r", i as u64), *limit);
            }
            assert_eq!(h.len(), *kept, "limit {limit:?}");
        }
    }

    #[test]
    fn next_id_is_max_plus_one_even_when_history_is_out_of_order() {
        let mut h = vec![entry("a", 1), entry("b", 2)];
        h[0].id = 7;
        h[1].id = 3;
        assert_eq!(append_history(&mut h, entry("c", 3), None), 8);
    }

    #[test]
    fn json_uses_argo_field_names_and_order() {
        let source = AppSource {
            repo_url: "https://git.example/payments.git".into(),
            path: "overlays/prod".into(),
            target_revision: "HEAD".into(),
            ..AppSource::default()
        };
        let mut h = Vec::new();
        append_history(
            &mut h,
            HistoryEntry::new(
                "b5e2be1",
                source,
                at(1_790_107_023),
                at(1_790_107_026),
                InitiatedBy::automated(),
            ),
            None,
        );
        let text = serde_json::to_string(&h[0]).unwrap();
        assert_eq!(
            text,
            r#"{"revision":"b5e2be1","deployedAt":"2026-09-22T19:57:06Z","id":0,"source":{"repoURL":"https://git.example/payments.git","path":"overlays/prod","targetRevision":"HEAD"},"deployStartedAt":"2026-09-22T19:57:03Z","initiatedBy":{"automated":true}}"#
        );
        let back: HistoryEntry = serde_json::from_str(&text).unwrap();
        assert_eq!(back, h[0]);
    }

    #[test]
    fn reads_argo_history_json() {
        let v = json!({
            "id": 4,
            "revision": "b5e2be1",
            "deployedAt": "2026-09-22T19:58:30Z",
            "deployStartedAt": "2026-09-22T19:58:29Z",
            "source": {"repoURL": "https://git.example/p.git", "path": "p", "targetRevision": "HEAD",
                       "kustomize": {"namePrefix": "prod-"}},
            "initiatedBy": {"username": "admin"},
            "revisions": ["b5e2be1", "9f0c2aa"],
            "sources": [{"repoURL": "https://git.example/p.git", "ref": "values"}],
            "futureField": {"kept": true}
        });
        let e: HistoryEntry = serde_json::from_value(v).unwrap();
        assert_eq!(e.id, 4);
        assert_eq!(e.initiated_by, InitiatedBy::user("admin"));
        assert_eq!(e.deploy_started_at, Some(at(1_790_107_109)));
        assert_eq!(e.source.kustomize.as_ref().unwrap().name_prefix, "prod-");
        // Multi-source and unknown fields survive a read-modify-write.
        assert_eq!(e.revisions, ["b5e2be1", "9f0c2aa"]);
        let back = serde_json::to_value(&e).unwrap();
        assert_eq!(
            back["sources"],
            json!([{"repoURL": "https://git.example/p.git", "ref": "values"}])
        );
        assert_eq!(back["futureField"], json!({"kept": true}));
        // Without deployStartedAt or initiatedBy (older Argo CD), and written back.
        let old: HistoryEntry = serde_json::from_value(json!({
            "id": 0, "revision": "abc", "deployedAt": "2020-01-01T00:00:00Z", "source": {"repoURL": "r"}
        }))
        .unwrap();
        assert_eq!(old.deploy_started_at, None);
        assert_eq!(
            serde_json::to_value(&old).unwrap(),
            json!({"revision": "abc", "deployedAt": "2020-01-01T00:00:00Z", "id": 0,
                   "source": {"repoURL": "r"}, "initiatedBy": {}})
        );
        assert!(records_history(true, false, false));
        assert!(
            !records_history(true, false, true),
            "Argo CD: partial syncs are not recorded"
        );
        assert!(!records_history(true, true, false));
        assert!(!records_history(false, false, false));
    }
}
