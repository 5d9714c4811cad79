//! Sync history (`status.history`): Argo CD's `RevisionHistory` entries, their JSON, and the
//! append-and-truncate rule of `persistRevisionHistory`.

use plumb_core::argo::AppSource;
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// `spec.revisionHistoryLimit` when unset.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i64 = 10;

/// Who started a sync (`initiatedBy`): a user, or the automated-sync controller.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitiatedBy {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub automated: bool,
}

impl InitiatedBy {
    pub fn user(name: impl Into<String>) -> InitiatedBy {
        InitiatedBy {
            username: name.into(),
            automated: false,
        }
    }

    pub fn automated() -> InitiatedBy {
        InitiatedBy {
            username: String::new(),
            automated: true,
        }
    }
}

/// One `status.history[]` entry. Fields are declared (and serialized) in the order of Argo
/// CD's Go struct: `revision`, `deployedAt`, `id`, `source`, `deployStartedAt`, `initiatedBy`.
/// Times are RFC 3339 in whole UTC seconds. Multi-source entries (`sources`, `revisions`) are
/// not modelled and are dropped when read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// The revision synced (a commit SHA).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// When the sync finished.
    #[serde(with = "crate::time::rfc3339")]
    pub deployed_at: SystemTime,
    /// Assigned by [`append_history`]: one more than the largest id so far, 0 for the first.
    pub id: i64,
    /// The Application source the sync used.
    #[serde(default, serialize_with = "source_json::serialize")]
    pub source: AppSource,
    /// When the sync started.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::time::rfc3339_option"
    )]
    pub deploy_started_at: Option<SystemTime>,
    /// Go writes this struct even when empty (`{}`).
    #[serde(default)]
    pub initiated_by: InitiatedBy,
}

impl HistoryEntry {
    /// An entry to append (its `id` is set by [`append_history`]).
    pub fn new(
        revision: impl Into<String>,
        source: AppSource,
        deploy_started_at: SystemTime,
        deployed_at: SystemTime,
        initiated_by: InitiatedBy,
    ) -> HistoryEntry {
        HistoryEntry {
            revision: revision.into(),
            deployed_at,
            id: 0,
            source,
            deploy_started_at: Some(deploy_started_at),
            initiated_by,
        }
    }
}

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

/// JSON for `AppSource` with Go's `omitempty` rules (plumb-core's type only derives
/// `Deserialize`). Fields plumb-core does not model (`plugin`, `ref`, `name`, ...) are not
/// written.
pub mod source_json {
    use plumb_core::argo::{AppSource, DirectorySource, HelmSource, KustomizeSource};
    use serde::Serializer;
    use serde::ser::Serialize;
    use serde_json::{Map, Value, json};

    fn put_str(m: &mut Map<String, Value>, k: &str, v: &str) {
        if !v.is_empty() {
            m.insert(k.into(), Value::String(v.into()));
        }
    }

    fn put_bool(m: &mut Map<String, Value>, k: &str, v: bool) {
        if v {
            m.insert(k.into(), Value::Bool(true));
        }
    }

    fn put_strs(m: &mut Map<String, Value>, k: &str, v: &[String]) {
        if !v.is_empty() {
            m.insert(k.into(), json!(v));
        }
    }

    fn helm(h: &HelmSource) -> Value {
        let mut m = Map::new();
        put_strs(&mut m, "valueFiles", &h.value_files);
        if !h.parameters.is_empty() {
            let params: Vec<Value> = h
                .parameters
                .iter()
                .map(|p| {
                    let mut pm = Map::new();
                    put_str(&mut pm, "name", &p.name);
                    put_str(&mut pm, "value", &p.value);
                    put_bool(&mut pm, "forceString", p.force_string);
                    Value::Object(pm)
                })
                .collect();
            m.insert("parameters".into(), Value::Array(params));
        }
        put_str(&mut m, "releaseName", &h.release_name);
        put_str(&mut m, "values", &h.values);
        if let Some(v) = &h.values_object {
            m.insert("valuesObject".into(), v.clone());
        }
        put_str(&mut m, "namespace", &h.namespace);
        put_bool(&mut m, "skipCrds", h.skip_crds);
        put_bool(
            &mut m,
            "ignoreMissingValueFiles",
            h.ignore_missing_value_files,
        );
        put_str(&mut m, "kubeVersion", &h.kube_version);
        put_strs(&mut m, "apiVersions", &h.api_versions);
        Value::Object(m)
    }

    fn kustomize(k: &KustomizeSource) -> Value {
        let mut m = Map::new();
        put_str(&mut m, "namePrefix", &k.name_prefix);
        put_str(&mut m, "nameSuffix", &k.name_suffix);
        put_strs(&mut m, "images", &k.images);
        if !k.common_labels.is_empty() {
            m.insert("commonLabels".into(), json!(k.common_labels));
        }
        if !k.common_annotations.is_empty() {
            m.insert("commonAnnotations".into(), json!(k.common_annotations));
        }
        put_bool(&mut m, "forceCommonLabels", k.force_common_labels);
        put_bool(&mut m, "forceCommonAnnotations", k.force_common_annotations);
        put_str(&mut m, "namespace", &k.namespace);
        if !k.replicas.is_empty() {
            let reps: Vec<Value> = k
                .replicas
                .iter()
                .map(|r| json!({"name": r.name, "count": r.count}))
                .collect();
            m.insert("replicas".into(), Value::Array(reps));
        }
        if !k.patches.is_empty() {
            m.insert("patches".into(), Value::Array(k.patches.clone()));
        }
        put_strs(&mut m, "components", &k.components);
        put_bool(&mut m, "labelWithoutSelector", k.label_without_selector);
        Value::Object(m)
    }

    fn directory(d: &DirectorySource) -> Value {
        let mut m = Map::new();
        put_bool(&mut m, "recurse", d.recurse);
        put_str(&mut m, "exclude", &d.exclude);
        put_str(&mut m, "include", &d.include);
        Value::Object(m)
    }

    /// The JSON object Argo CD writes for an `ApplicationSource`.
    pub fn to_value(s: &AppSource) -> Value {
        let mut m = Map::new();
        // `repoURL` has no omitempty.
        m.insert("repoURL".into(), Value::String(s.repo_url.clone()));
        put_str(&mut m, "path", &s.path);
        put_str(&mut m, "targetRevision", &s.target_revision);
        if let Some(h) = &s.helm {
            m.insert("helm".into(), helm(h));
        }
        if let Some(k) = &s.kustomize {
            m.insert("kustomize".into(), kustomize(k));
        }
        if let Some(d) = &s.directory {
            m.insert("directory".into(), directory(d));
        }
        if let Some(c) = &s.chart {
            put_str(&mut m, "chart", c);
        }
        Value::Object(m)
    }

    pub fn serialize<S: Serializer>(s: &AppSource, ser: S) -> Result<S::Ok, S::Error> {
        to_value(s).serialize(ser)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::{Duration, UNIX_EPOCH};

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
        assert_eq!(h[0].deployed_at, at(503), "oldest kept is the 6th entry");
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
            r#"{"revision":"b5e2be1","deployedAt":"2026-09-22T19:57:06Z","id":0,"source":{"path":"overlays/prod","repoURL":"https://git.example/payments.git","targetRevision":"HEAD"},"deployStartedAt":"2026-09-22T19:57:03Z","initiatedBy":{"automated":true}}"#
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
            "revisions": ["ignored"]
        });
        let e: HistoryEntry = serde_json::from_value(v).unwrap();
        assert_eq!(e.id, 4);
        assert_eq!(e.initiated_by, InitiatedBy::user("admin"));
        assert_eq!(e.deploy_started_at, Some(at(1_790_107_109)));
        assert_eq!(e.source.kustomize.as_ref().unwrap().name_prefix, "prod-");
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
