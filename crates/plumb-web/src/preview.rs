//! `plumb preview -o html`: the preview of a change as one self-contained page, with the web
//! page's style and its diff markup (the same resource blocks as an app's diff page).

use crate::diff::{ResourceChange, ResourceView, views};
use crate::{Chrome, render};
use askama::Template;
use plumb_preview::{AppPreview, AppStatus, Change};

#[derive(Template)]
#[template(path = "preview.html")]
struct PreviewPage {
    chrome: Chrome,
    base: String,
    head: String,
    summary: String,
    apps: Vec<AppView>,
    /// The resource blocks' settings (shared with the diff page).
    split: bool,
    old_label: String,
    new_label: String,
    /// No manager wrote a preview's lines: the blocks have no column for them.
    actors: Vec<String>,
}

struct AppView {
    anchor: String,
    app: String,
    status: &'static str,
    icon: &'static str,
    class: &'static str,
    added: usize,
    changed: usize,
    removed: usize,
    error: Option<String>,
    preflight: Vec<String>,
    resources: Vec<ResourceView>,
}

/// The preview as an HTML document: the summary, a table of the apps that change (or could not
/// be rendered), then per app its preflight warnings and each object's diff, base against head.
pub fn preview_report(previews: &[AppPreview], base: &str, head: &str) -> String {
    let apps = previews
        .iter()
        .filter(|p| p.shown())
        .enumerate()
        .map(|(i, p)| {
            let changes: Vec<ResourceChange> = p
                .objects
                .iter()
                .map(|o| ResourceChange {
                    resource: o.resource.clone(),
                    status: o.words(),
                    live: o.base.clone(),
                    desired: o.head.clone(),
                    live_object: None,
                })
                .collect();
            let (resources, _) = views(&changes, None);
            let (icon, class) = match &p.status {
                AppStatus::Error(_) => ("✖", "bad"),
                AppStatus::Removed => ("−", "warn"),
                AppStatus::Added => ("+", "good"),
                _ => ("●", "warn"),
            };
            AppView {
                anchor: format!("app-{}", i + 1),
                app: p.app.clone(),
                status: p.status.word(),
                icon,
                class,
                added: p.count(Change::Added),
                changed: p.count(Change::Changed),
                removed: p.count(Change::Removed),
                error: match &p.status {
                    AppStatus::Error(m) => Some(m.clone()),
                    _ => None,
                },
                preflight: p.preflight.clone(),
                resources,
            }
        })
        .collect();
    render(&PreviewPage {
        chrome: Chrome::file(format!("plumb preview: {base} → {head}")),
        base: base.to_string(),
        head: head.to_string(),
        summary: plumb_preview::summary(previews, base, head),
        apps,
        split: false,
        old_label: "base".into(),
        new_label: "head".into(),
        actors: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_preview::{Noise, preview_app};
    use serde_json::json;

    #[test]
    fn the_page_lists_changed_apps_with_their_diffs_escaped_and_secrets_masked() {
        let cm = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {"k": v}});
        let secret = |v: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}, "stringData": {"p": v}});
        let mut changed = preview_app(
            "argocd/a".into(),
            Some(vec![cm("<b>1</b>"), secret("hunter2")]),
            Some(vec![cm("<b>2</b>"), secret("hunter3")]),
            &Noise::default(),
        );
        changed.preflight = vec!["/Deployment n/d `/spec/x`: rewritten by webhook w".into()];
        let same = preview_app(
            "argocd/same".into(),
            Some(vec![cm("1")]),
            Some(vec![cm("1")]),
            &Noise::default(),
        );
        let page = preview_report(&[changed, same], "main", "pr-7");
        assert!(page.contains("plumb preview: main → pr-7"), "{page}");
        assert!(
            page.contains("k: &#60;b&#62;2") && !page.contains("<b>2</b>"),
            "{page}"
        );
        assert!(page.contains("rewritten by webhook w"), "{page}");
        assert!(!page.contains("argocd/same</a>"), "{page}");
        assert!(!page.contains("hunter"), "{page}");
        assert!(page.contains("default-src &#39;none&#39;"), "{page}");
        // Two renders compared: no manager wrote their lines, so no column for one.
        assert!(!page.contains("Last written by"), "{page}");
    }
}
