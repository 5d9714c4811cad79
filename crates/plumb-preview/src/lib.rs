//! The preview of a change (`plumb preview`), pure: for each Application, the objects its
//! sources render at the base revision and at the head revision, paired by kind and name and
//! diffed (added, removed, changed, each change as a unified diff of the YAML `plumb diff`
//! prints), and the report of all of them as a pull-request comment (Markdown, kept under
//! GitHub's 65,536 characters), JSON or text.
//!
//! The rendering is the caller's (plumb-cli's `preview_cmd`, through the one pipeline); this
//! crate sees objects only. Secret values are masked (both sides alike) before any diff.

use plumb_diff::text::{to_yaml, unified_diff};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;

/// GitHub's limit on a comment's length, in characters.
pub const COMMENT_LIMIT: usize = 65_536;

/// What became of one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    Added,
    Removed,
    Changed,
    /// A kustomize generated object whose name's hash changed (`NAME-HASH`): one object.
    Renamed,
}

/// One object that differs between base and head.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectChange {
    /// `GROUP/KIND NAMESPACE/NAME`.
    pub resource: String,
    pub change: Change,
    /// The name at the base, for a renamed object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// `diff -u` of its YAML, base then head (Secret values masked).
    pub diff: String,
    /// The object at the base, Secret values masked (`Null`: added), for the HTML report.
    #[serde(skip)]
    pub base: Value,
    /// The object at the head, masked alike (`Null`: removed).
    #[serde(skip)]
    pub head: Value,
}

/// What the change does to one Application.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "status", content = "message")]
pub enum AppStatus {
    /// Only at head.
    Added,
    /// Only at base.
    Removed,
    /// At both, and its objects differ.
    Changed,
    /// Rendered at both, the same objects.
    Unchanged,
    /// Not rendered: its `manifest-generate-paths` say the change cannot affect it.
    Skipped,
    /// It could not be rendered (the message says why); the others still are.
    Error(String),
}

/// One Application's preview.
#[derive(Debug, Clone, Serialize)]
pub struct AppPreview {
    /// `NAMESPACE/NAME`.
    pub app: String,
    #[serde(flatten)]
    pub status: AppStatus,
    pub objects: Vec<ObjectChange>,
    /// The doctor's preflight on the head: each field it declares that the cluster will
    /// rewrite (a webhook, a policy, an HPA, a controller), in one line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<String>,
}

impl ObjectChange {
    /// How the change reads: `changed`, `renamed from OLD-NAME`…
    pub fn words(&self) -> String {
        match (&self.change, &self.renamed_from) {
            (Change::Renamed, Some(from)) => format!("renamed from {from}"),
            (Change::Added, _) => "added".into(),
            (Change::Removed, _) => "removed".into(),
            _ => "changed".into(),
        }
    }
}

impl AppPreview {
    /// How many of its objects are added, changed (renamed ones too) or removed.
    pub fn count(&self, c: Change) -> usize {
        self.objects
            .iter()
            .filter(|o| o.change == c || (c == Change::Changed && o.change == Change::Renamed))
            .count()
    }

    /// Whether a report shows it: it changes, or could not be rendered.
    pub fn shown(&self) -> bool {
        !matches!(self.status, AppStatus::Unchanged | AppStatus::Skipped)
    }
}

/// What is noise in a preview: labels that change on every release (a chart's version label)
/// and kinds nobody reviews.
#[derive(Debug, Clone, Default)]
pub struct Noise {
    /// Label keys removed from every object's (and pod template's) labels on both sides.
    pub ignore_labels: Vec<String>,
    /// Kinds (`KIND` or `GROUP/KIND`) left out on both sides.
    pub suppress_kinds: Vec<String>,
}

impl Noise {
    fn suppressed(&self, o: &Value) -> bool {
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
        let group = o
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.rsplit_once('/'))
            .map_or("", |(g, _)| g);
        self.suppress_kinds.iter().any(|s| match s.split_once('/') {
            Some((g, k)) => g == group && k == kind,
            None => s == kind,
        })
    }

    /// Every `metadata.labels` in the object (its own, its pod template's, its volume claim
    /// templates'), without the ignored keys.
    fn strip_labels(&self, v: &mut Value) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Object(labels)) =
                    m.get_mut("metadata").and_then(|md| md.get_mut("labels"))
                {
                    for k in &self.ignore_labels {
                        labels.remove(k);
                    }
                }
                for (k, child) in m.iter_mut() {
                    if k != "metadata" {
                        self.strip_labels(child);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|c| self.strip_labels(c)),
            _ => {}
        }
    }

    /// The objects without the noise.
    pub fn clean(&self, objects: Vec<Value>) -> Vec<Value> {
        if self.ignore_labels.is_empty() && self.suppress_kinds.is_empty() {
            return objects;
        }
        objects
            .into_iter()
            .filter(|o| !self.suppressed(o))
            .map(|mut o| {
                if !self.ignore_labels.is_empty() {
                    self.strip_labels(&mut o);
                }
                o
            })
            .collect()
    }
}

/// The objects that differ between `base` and `head`, paired by kind and name (a kustomize
/// generated name whose hash changed paired as renamed), in key order.
pub fn diff_objects(base: Vec<Value>, head: Vec<Value>) -> Vec<ObjectChange> {
    plumb_diff::pairs::differing(base, head)
        .into_iter()
        .map(|(key, a, b)| {
            let name_of = |v: &Value| {
                v.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let mut renamed_from = None;
            let change = match (a.is_null(), b.is_null()) {
                (true, _) => Change::Added,
                (_, true) => Change::Removed,
                _ if name_of(&a) != name_of(&b) => {
                    renamed_from = Some(name_of(&a));
                    Change::Renamed
                }
                _ => Change::Changed,
            };
            let yaml = |v: &Value| {
                if v.is_null() {
                    String::new()
                } else {
                    to_yaml(v)
                }
            };
            ObjectChange {
                resource: key.to_string(),
                change,
                renamed_from,
                diff: unified_diff(&yaml(&a), &yaml(&b), "base", "head"),
                base: a,
                head: b,
            }
        })
        .collect()
}

/// The preview of one Application from its objects at base and at head (`None`: the app is
/// not there at that revision), without the noise.
pub fn preview_app(
    app: String,
    base: Option<Vec<Value>>,
    head: Option<Vec<Value>>,
    noise: &Noise,
) -> AppPreview {
    let status = match (&base, &head) {
        (None, Some(_)) => AppStatus::Added,
        (Some(_), None) => AppStatus::Removed,
        _ => AppStatus::Changed,
    };
    let objects = diff_objects(
        noise.clean(base.unwrap_or_default()),
        noise.clean(head.unwrap_or_default()),
    );
    let status = if status == AppStatus::Changed && objects.is_empty() {
        AppStatus::Unchanged
    } else {
        status
    };
    AppPreview {
        app,
        status,
        objects,
        preflight: Vec::new(),
    }
}

/// Whether the preflight warns of a fight for any app.
pub fn has_warnings(previews: &[AppPreview]) -> bool {
    previews.iter().any(|p| !p.preflight.is_empty())
}

/// Whether any app changes (the exit code's question).
pub fn has_changes(previews: &[AppPreview]) -> bool {
    previews.iter().any(|p| {
        matches!(
            p.status,
            AppStatus::Added | AppStatus::Removed | AppStatus::Changed
        )
    })
}

impl AppStatus {
    /// The word a report shows.
    pub fn word(&self) -> &'static str {
        status_word(self)
    }
}

fn status_word(s: &AppStatus) -> &'static str {
    match s {
        AppStatus::Added => "added",
        AppStatus::Removed => "removed",
        AppStatus::Changed => "changed",
        AppStatus::Unchanged => "unchanged",
        AppStatus::Skipped => "not affected",
        AppStatus::Error(_) => "error",
    }
}

/// The counts line: apps changed, unchanged, not rendered.
pub fn summary(previews: &[AppPreview], base: &str, head: &str) -> String {
    let n = |f: &dyn Fn(&AppStatus) -> bool| previews.iter().filter(|p| f(&p.status)).count();
    format!(
        "{} apps: {} changed, {} added, {} removed, {} unchanged, {} not rendered (the change cannot affect them), {} errors — {base}..{head}",
        previews.len(),
        n(&|s| *s == AppStatus::Changed),
        n(&|s| *s == AppStatus::Added),
        n(&|s| *s == AppStatus::Removed),
        n(&|s| *s == AppStatus::Unchanged),
        n(&|s| *s == AppStatus::Skipped),
        n(&|s| matches!(s, AppStatus::Error(_))),
    )
}

/// A pull-request comment: a summary table of the apps that change (or fail), then per app
/// a `<details>` with each object's diff. Kept under `limit` characters: diffs that do not
/// fit are left out with their counts kept, and the comment says so.
pub fn markdown(previews: &[AppPreview], base: &str, head: &str, limit: usize) -> String {
    let shown: Vec<&AppPreview> = previews.iter().filter(|p| p.shown()).collect();
    let mut out = format!("### plumb preview\n\n{}\n\n", summary(previews, base, head));
    if shown.is_empty() {
        out.push_str("No Application changes.\n");
        return out;
    }
    out.push_str(
        "| App | Status | Added | Changed | Removed | Preflight |\n|---|---|---|---|---|---|\n",
    );
    for p in &shown {
        let warn = if p.preflight.is_empty() {
            String::new()
        } else {
            format!("⚠ {} field(s) the cluster will rewrite", p.preflight.len())
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {warn} |",
            p.app,
            status_word(&p.status),
            p.count(Change::Added),
            p.count(Change::Changed),
            p.count(Change::Removed)
        );
    }
    for p in shown.iter().filter(|p| !p.preflight.is_empty()) {
        let _ = writeln!(
            out,
            "\n**⚠ `{}`: the cluster will rewrite what this change declares**\n",
            p.app
        );
        for w in &p.preflight {
            let _ = writeln!(out, "- {}", w.replace('|', "\\|"));
        }
    }
    let closing = "\n_Diffs left out to keep this comment under GitHub's limit: see the full report (`--out`)._\n";
    let mut cut = 0usize;
    for p in &shown {
        let mut block = format!(
            "\n<details><summary><code>{}</code> {}</summary>\n\n",
            p.app,
            status_word(&p.status)
        );
        if let AppStatus::Error(m) = &p.status {
            let _ = writeln!(block, "```text\n{m}\n```");
        }
        for o in &p.objects {
            let fence = if o.diff.contains("```") {
                "~~~~"
            } else {
                "```"
            };
            let _ = write!(
                block,
                "`{}` {}\n\n{fence}diff\n{}{fence}\n\n",
                o.resource,
                o.words(),
                o.diff
            );
        }
        block.push_str("</details>\n");
        if out.chars().count() + block.chars().count() + closing.len() > limit {
            cut += 1;
            continue;
        }
        out.push_str(&block);
    }
    if cut > 0 {
        let _ = write!(
            out,
            "\n_{cut} apps' diffs left out to keep this comment under GitHub's limit: see the full report (`--out`)._\n"
        );
    }
    out
}

/// For people at a terminal: the summary, then per app each object's diff.
pub fn text(previews: &[AppPreview], base: &str, head: &str) -> String {
    let mut out = format!("{}\n", summary(previews, base, head));
    for p in previews.iter().filter(|p| p.shown()) {
        let _ = writeln!(out, "\n{} {}", p.app, status_word(&p.status));
        if let AppStatus::Error(m) = &p.status {
            let _ = writeln!(out, "  {m}");
        }
        for w in &p.preflight {
            let _ = writeln!(out, "  preflight: {w}");
        }
        for o in &p.objects {
            let _ = writeln!(out, "  {} {}", o.resource, o.words());
            for line in o.diff.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(name: &str, v: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "n"}, "data": {"k": v}})
    }

    #[test]
    fn objects_are_paired_and_secrets_masked() {
        let secret = |v: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}, "stringData": {"p": v}});
        let changes = diff_objects(
            vec![cm("a", "1"), cm("gone", "x"), secret("hunter2")],
            vec![cm("a", "2"), cm("new", "y"), secret("hunter3")],
        );
        let summary: Vec<(&str, Change)> = changes
            .iter()
            .map(|c| (c.resource.as_str(), c.change))
            .collect();
        assert_eq!(
            summary,
            [
                ("/ConfigMap n/a", Change::Changed),
                ("/ConfigMap n/gone", Change::Removed),
                ("/ConfigMap n/new", Change::Added),
                ("/Secret n/s", Change::Changed)
            ]
        );
        assert!(
            changes[0].diff.contains("-  k: \"1\"\n+  k: \"2\"\n"),
            "{}",
            changes[0].diff
        );
        let all: String = changes.iter().map(|c| c.diff.clone()).collect();
        assert!(
            !all.contains("hunter") && !all.contains("aHVudGVy"),
            "{all}"
        );
    }

    #[test]
    fn apps_added_removed_unchanged_and_a_comment_under_the_limit() {
        let previews = vec![
            preview_app(
                "argocd/a".into(),
                Some(vec![cm("a", "1")]),
                Some(vec![cm("a", "2")]),
                &Noise::default(),
            ),
            preview_app(
                "argocd/b".into(),
                None,
                Some(vec![cm("b", "1")]),
                &Noise::default(),
            ),
            preview_app(
                "argocd/c".into(),
                Some(vec![cm("c", "1")]),
                None,
                &Noise::default(),
            ),
            preview_app(
                "argocd/d".into(),
                Some(vec![cm("d", "1")]),
                Some(vec![cm("d", "1")]),
                &Noise::default(),
            ),
        ];
        let st: Vec<&AppStatus> = previews.iter().map(|p| &p.status).collect();
        assert_eq!(
            st,
            [
                &AppStatus::Changed,
                &AppStatus::Added,
                &AppStatus::Removed,
                &AppStatus::Unchanged
            ]
        );
        assert!(has_changes(&previews));
        let md = markdown(&previews, "main", "pr", COMMENT_LIMIT);
        assert!(
            md.contains("| `argocd/a` | changed | 0 | 1 | 0 |  |"),
            "{md}"
        );
        assert!(!md.contains("`argocd/d`"), "{md}");
        // A small limit: the table stays, diffs are cut, and the comment says so.
        let short = markdown(&previews, "main", "pr", 700);
        assert!(short.chars().count() <= 700, "{}", short.chars().count());
        assert!(
            short.contains("| `argocd/c` | removed |") && short.contains("left out"),
            "{short}"
        );
    }

    #[test]
    fn noise_is_left_out_on_both_sides() {
        let deploy = |chart: &str, image: &str| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n",
                "labels": {"helm.sh/chart": chart, "app": "d"}},
                "spec": {"template": {"metadata": {"labels": {"helm.sh/chart": chart}},
                    "spec": {"containers": [{"name": "c", "image": image}]}}}})
        };
        let lease = |v: &str| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": v}});
        let noise = Noise {
            ignore_labels: vec!["helm.sh/chart".into()],
            suppress_kinds: vec!["coordination.k8s.io/Lease".into()],
        };
        let p = |noise: &Noise, image: &str| {
            preview_app(
                "argocd/a".into(),
                Some(vec![deploy("c-1.0.0", "i:1"), lease("a")]),
                Some(vec![deploy("c-1.0.1", image), lease("b")]),
                noise,
            )
        };
        // Only the chart version and the Lease changed: nothing, once they are noise.
        assert_eq!(p(&noise, "i:1").status, AppStatus::Unchanged);
        assert_eq!(p(&Noise::default(), "i:1").objects.len(), 2);
        // A real change still shows, without the label.
        let changed = p(&noise, "i:2");
        assert_eq!(changed.objects.len(), 1);
        assert!(
            !changed.objects[0].diff.contains("helm.sh/chart"),
            "{}",
            changed.objects[0].diff
        );
        // A kind alone matches any group.
        let by_kind = Noise {
            suppress_kinds: vec!["Lease".into()],
            ..Noise::default()
        };
        assert_eq!(p(&by_kind, "i:1").objects.len(), 1);
    }

    #[test]
    fn a_renamed_generated_config_map_is_one_change() {
        let p = preview_app(
            "argocd/a".into(),
            Some(vec![cm("cfg-5dh7bg7t4f", "1")]),
            Some(vec![cm("cfg-8h5f96mtb2", "2")]),
            &Noise::default(),
        );
        assert_eq!(p.objects.len(), 1);
        assert_eq!(p.objects[0].words(), "renamed from cfg-5dh7bg7t4f");
        assert!(
            p.objects[0]
                .diff
                .contains("-  name: cfg-5dh7bg7t4f\n+  name: cfg-8h5f96mtb2"),
            "{}",
            p.objects[0].diff
        );
        let md = markdown(&[p], "main", "pr", COMMENT_LIMIT);
        assert!(
            md.contains("| `argocd/a` | changed | 0 | 1 | 0 |  |"),
            "{md}"
        );
        assert!(
            md.contains("`/ConfigMap n/cfg-8h5f96mtb2` renamed from cfg-5dh7bg7t4f"),
            "{md}"
        );
    }
}
