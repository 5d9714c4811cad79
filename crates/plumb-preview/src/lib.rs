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
}

/// One object that differs between base and head.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectChange {
    /// `GROUP/KIND NAMESPACE/NAME`.
    pub resource: String,
    pub change: Change,
    /// `diff -u` of its YAML, base then head (Secret values masked).
    pub diff: String,
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

impl AppPreview {
    fn count(&self, c: Change) -> usize {
        self.objects.iter().filter(|o| o.change == c).count()
    }
}

/// The objects that differ between `base` and `head`, paired by kind and name, in key order.
pub fn diff_objects(base: Vec<Value>, head: Vec<Value>) -> Vec<ObjectChange> {
    plumb_diff::pairs::differing(base, head)
        .into_iter()
        .map(|(key, a, b)| {
            let change = match (a.is_null(), b.is_null()) {
                (true, _) => Change::Added,
                (_, true) => Change::Removed,
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
                diff: unified_diff(&yaml(&a), &yaml(&b), "base", "head"),
            }
        })
        .collect()
}

/// The preview of one Application from its objects at base and at head (`None`: the app is
/// not there at that revision).
pub fn preview_app(app: String, base: Option<Vec<Value>>, head: Option<Vec<Value>>) -> AppPreview {
    let status = match (&base, &head) {
        (None, Some(_)) => AppStatus::Added,
        (Some(_), None) => AppStatus::Removed,
        _ => AppStatus::Changed,
    };
    let objects = diff_objects(base.unwrap_or_default(), head.unwrap_or_default());
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
fn summary(previews: &[AppPreview], base: &str, head: &str) -> String {
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
    let shown: Vec<&AppPreview> = previews
        .iter()
        .filter(|p| !matches!(p.status, AppStatus::Unchanged | AppStatus::Skipped))
        .collect();
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
                "`{}` {:?}\n\n{fence}diff\n{}{fence}\n\n",
                o.resource, o.change, o.diff
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
    for p in previews
        .iter()
        .filter(|p| !matches!(p.status, AppStatus::Unchanged | AppStatus::Skipped))
    {
        let _ = writeln!(out, "\n{} {}", p.app, status_word(&p.status));
        if let AppStatus::Error(m) = &p.status {
            let _ = writeln!(out, "  {m}");
        }
        for w in &p.preflight {
            let _ = writeln!(out, "  preflight: {w}");
        }
        for o in &p.objects {
            let _ = writeln!(out, "  {} {:?}", o.resource, o.change);
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
            ),
            preview_app("argocd/b".into(), None, Some(vec![cm("b", "1")])),
            preview_app("argocd/c".into(), Some(vec![cm("c", "1")]), None),
            preview_app(
                "argocd/d".into(),
                Some(vec![cm("d", "1")]),
                Some(vec![cm("d", "1")]),
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
}
