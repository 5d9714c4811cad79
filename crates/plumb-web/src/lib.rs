//! plumb's pages: the doctor's report as one self-contained HTML file (`plumb doctor -o
//! html`, to attach to an incident or a pull request), and the pages `plumb ui` serves
//! ([`server`]): the list of apps and each app's page, which is that same report.
//!
//! Every page is an askama template under `templates/`, checked at compile time, and every
//! value in it is escaped by askama's HTML escaper: names, labels, values and file lines come
//! from git and the cluster, and are text, never markup. The page carries its own style
//! (inline, allowed by its hash in the page's Content-Security-Policy) and no script, font,
//! image or link to anything outside the file. Secret values never reach a template: the diff
//! masks them before they become findings.
//!
//! The report reads as the app page will: the verdict first, then "why OutOfSync" (one row per
//! differing field: object, field, git's and the cluster's value, who rewrites it and the
//! evidence, where git declares it with the lines around, and the fixes to copy), then the
//! resources' health.

use askama::Template;
use base64::Engine as _;
use plumb_doctor::{Finding, Fix, Report, Verdict};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The lines shown above and below the line git declares a field at.
const CONTEXT_LINES: u32 = 3;

/// The characters of a context line shown (a minified JSON file is one long line).
const LINE_WIDTH: usize = 240;

/// The style every page carries (inline: the report is one file).
const CSS: &str = include_str!("../templates/style.css");

mod app;
pub mod diff;
pub mod history;
pub mod preview;
pub mod server;

/// The doctor's report as a self-contained HTML document. `file` reads a repository file at
/// the rendered revision (for the lines around each `declaredAt`); `None` when it cannot be
/// read, and the page then shows the place without its lines.
pub fn doctor_report(report: &Report, file: &dyn Fn(&str) -> Option<String>) -> String {
    render(&report_page(
        report,
        file,
        Chrome::file(format!("plumb doctor: {}", report.app)),
    ))
}

/// What every page has around its content: its policy, title and style, and whether it links
/// to the other pages (served) or stands alone (a file).
struct Chrome {
    csp: String,
    title: String,
    css: &'static str,
    nav: bool,
    /// The path the pages are served under (empty, or e.g. `/ui`).
    base: String,
}

impl Chrome {
    /// A page written to a file: no form, no link to pages that are not there.
    fn file(title: String) -> Chrome {
        Chrome {
            csp: csp("'none'"),
            title,
            css: CSS,
            nav: false,
            base: String::new(),
        }
    }

    /// A page `plumb ui` serves: forms submit to itself.
    fn served(base: &str, title: String) -> Chrome {
        Chrome {
            csp: csp("'self'"),
            title,
            css: CSS,
            nav: true,
            base: base.to_string(),
        }
    }
}

/// A page as text. Templates have no fallible part: askama fails only on a writer error, and
/// a String does not fail.
fn render(page: &impl Template) -> String {
    page.render()
        .unwrap_or_else(|e| format!("<!doctype html><title>error</title>{e}"))
}

/// The findings shown in full (who, evidence, where, fixes) on one page; the table lists them
/// all. A page of thousands of articles is slow to open and to read.
pub const DETAILED_FINDINGS: usize = 200;

fn report_page<'a>(
    report: &'a Report,
    file: &dyn Fn(&str) -> Option<String>,
    chrome: Chrome,
) -> ReportPage<'a> {
    // Each file read and split once, however many fields it declares.
    let mut files: HashMap<String, Option<Vec<String>>> = HashMap::new();
    let mut lines_of = |path: &str| -> Option<Vec<String>> {
        files
            .entry(path.to_string())
            .or_insert_with(|| file(path).map(|t| t.lines().map(str::to_string).collect()))
            .clone()
    };
    let mut lines_around = |path: &str, line: u32| -> Vec<LineView> {
        lines_of(path)
            .map(|l| context(&l, line))
            .unwrap_or_default()
    };
    ReportPage {
        chrome,
        app: &report.app,
        verdict: verdict_view(Some(report.verdict)),
        headline: report.headline(),
        loop_banner: loop_banner(report),
        detailed: report.findings.len().min(DETAILED_FINDINGS),
        findings: report
            .findings
            .iter()
            .enumerate()
            .map(|(i, f)| finding_view(i, f, i < DETAILED_FINDINGS, &mut lines_around))
            .collect(),
        links: None,
        refresh: None,
        extras: None,
        health: report.health.as_ref().map(|h| HealthView {
            status: status_view(&h.status),
            resources: h
                .resources
                .iter()
                .filter(|r| r.is_judged())
                .map(|r| ResourceHealthView {
                    resource: r.resource.to_string(),
                    status: status_view(&r.status),
                    message: r.message.clone(),
                })
                .collect(),
        }),
    }
}

/// `default-src 'none'`, plus the page's own style by its hash and where its forms may go:
/// nothing else may load or run.
fn csp(form_action: &str) -> String {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(CSS.as_bytes()));
    // (`frame-ancestors` is the HTTP header's alone: a `<meta>` policy may not carry it.)
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; base-uri 'none'; form-action {form_action}"
    )
}

#[derive(Template)]
#[template(path = "report.html")]
struct ReportPage<'a> {
    chrome: Chrome,
    /// The app's diff and history pages, when served.
    links: Option<(String, String)>,
    /// The Refresh form's action and CSRF token, when refreshing is allowed.
    refresh: Option<(String, String)>,
    /// Conditions, the resource tree and the last operation (served pages).
    extras: Option<app::Extras>,
    app: &'a str,
    verdict: StatusView,
    headline: String,
    loop_banner: Option<String>,
    findings: Vec<FindingView>,
    /// How many findings are shown in full.
    detailed: usize,
    health: Option<HealthView>,
}

impl ReportPage<'_> {
    fn with_links(mut self, diff: String, history: String) -> Self {
        self.links = Some((diff, history));
        self
    }

    fn with_refresh(mut self, form: Option<(String, String)>) -> Self {
        self.refresh = form;
        self
    }

    fn with_extras(mut self, extras: app::Extras) -> Self {
        self.extras = Some(extras);
        self
    }
}

/// A status shown as an icon and its word (never colour alone); `class` picks the colour.
struct StatusView {
    icon: &'static str,
    text: String,
    class: &'static str,
}

struct FindingView {
    /// Shown in full below the table.
    detailed: bool,
    anchor: String,
    resource: String,
    field: String,
    git: String,
    cluster: String,
    who: String,
    manager: Option<String>,
    evidence: Vec<String>,
    declared: Option<DeclaredView>,
    fixes: Vec<FixView>,
}

struct DeclaredView {
    place: String,
    kustomization: Option<String>,
    secret: bool,
    lines: Vec<LineView>,
}

struct LineView {
    number: u32,
    text: String,
    here: bool,
}

struct FixView {
    summary: String,
    body: String,
}

struct HealthView {
    status: StatusView,
    resources: Vec<ResourceHealthView>,
}

struct ResourceHealthView {
    resource: String,
    status: StatusView,
    message: String,
}

/// The doctor's verdict; `None`: never compared.
fn verdict_view(v: Option<Verdict>) -> StatusView {
    let (icon, class) = match v {
        Some(Verdict::Loop) => ("⟳", "bad"),
        Some(Verdict::Drift) => ("≠", "warn"),
        Some(Verdict::OutOfSync) => ("≠", "warn"),
        Some(Verdict::InSync) => ("✓", "good"),
        None => ("?", "unknown"),
    };
    StatusView {
        icon,
        text: v.map_or("unknown", Verdict::as_str).to_string(),
        class,
    }
}

/// A sync status (`Synced`, `OutOfSync`, `Unknown`).
fn sync_view(status: &str) -> StatusView {
    let (icon, class) = match status {
        "Synced" => ("✓", "good"),
        "OutOfSync" => ("≠", "warn"),
        _ => ("?", "unknown"),
    };
    StatusView {
        icon,
        text: if status.is_empty() { "Unknown" } else { status }.to_string(),
        class,
    }
}

/// A health status (`Healthy`, `Degraded`, …) as icon, word and colour class.
fn status_view(status: &str) -> StatusView {
    let (icon, class) = match status {
        "Healthy" => ("✓", "good"),
        "Degraded" => ("✗", "bad"),
        "Progressing" => ("↻", "warn"),
        "Suspended" => ("⏸", "warn"),
        "Missing" => ("∅", "bad"),
        _ => ("?", "unknown"),
    };
    StatusView {
        icon,
        text: status.to_string(),
        class,
    }
}

/// "loop: N syncs of REV in M, rewritten by X" for a loop, naming every writer found.
pub(crate) fn loop_banner(report: &Report) -> Option<String> {
    if report.verdict != Verdict::Loop {
        return None;
    }
    let e = &report.loop_evidence;
    let mut s = format!(
        "loop: {} syncs of {}",
        e.syncs,
        e.revision.as_deref().unwrap_or("?")
    );
    if let Some(span) = e.span_seconds {
        s.push_str(&format!(" in {}", plumb_doctor::report::human_span(span)));
    }
    // The writers that rewrite git's value on every sync (not a hand edit since, nor a field
    // nobody owns).
    let mut writers: Vec<&str> = Vec::new();
    for f in report.findings.iter().filter(|f| f.cause.kind.preflight()) {
        if !f.cause.name.is_empty() && !writers.contains(&f.cause.name.as_str()) {
            writers.push(&f.cause.name);
        }
    }
    if !writers.is_empty() {
        s.push_str(", rewritten by ");
        s.push_str(&writers.join(", "));
    }
    Some(s)
}

fn finding_view(
    i: usize,
    f: &Finding,
    detailed: bool,
    lines_around: &mut dyn FnMut(&str, u32) -> Vec<LineView>,
) -> FindingView {
    let (git, cluster) = f.sides();
    let mut who = f.cause.kind.as_str().to_string();
    if !f.cause.name.is_empty() && f.cause.name != f.cause.kind.as_str() {
        who.push(' ');
        who.push_str(&f.cause.name);
    }
    FindingView {
        detailed,
        anchor: format!("finding-{}", i + 1),
        resource: f.resource.to_string(),
        field: f.field().to_string(),
        git,
        cluster,
        who,
        manager: f.cause.manager.clone(),
        evidence: f.cause.evidence.clone(),
        declared: f.declared_at.as_ref().map(|d| DeclaredView {
            place: format!("{}:{}", d.file, d.line),
            kustomization: d.kustomization.clone(),
            // A Secret's file holds its values in clear: its place is shown, never its lines.
            secret: f.resource.is_secret(),
            lines: if f.resource.is_secret() || !detailed {
                Vec::new()
            } else {
                lines_around(&d.file, d.line)
            },
        }),
        fixes: f.fixes.iter().map(fix_view).collect(),
    }
}

fn fix_view(fix: &Fix) -> FixView {
    FixView {
        summary: fix.summary(),
        body: fix.body(),
    }
}

/// The lines from `line - 3` to `line + 3` (1-based) of a file's `lines`, `line` marked,
/// within the YAML document and the top-level field of `line`: a neighbouring document (a
/// Secret) or field (a kustomization's `secretGenerator` under its `configMapGenerator`) is
/// not shown.
fn context(lines: &[String], line: u32) -> Vec<LineView> {
    let first = line.saturating_sub(CONTEXT_LINES).max(1);
    let last = line.saturating_add(CONTEXT_LINES);
    let window: Vec<(u32, &str)> = (first..=last)
        .filter_map(|n| Some((n, lines.get(usize::try_from(n).ok()? - 1)?.as_str())))
        .collect();
    // A document separator, or a top-level key (`secretGenerator:`), starts another part.
    let separator = |t: &str| {
        t.starts_with("---")
            || t.starts_with("...")
            || t.chars()
                .next()
                .is_some_and(|c| !c.is_whitespace() && c != '-' && c != '#')
    };
    // From the declared line's top-level key (kept), or after the separator before it.
    let start = window
        .iter()
        .rposition(|&(n, t)| n <= line && separator(t))
        .map_or(0, |i| {
            let (_, t) = window[i];
            if t.starts_with("---") || t.starts_with("...") {
                i + 1
            } else {
                i
            }
        });
    let end = window
        .iter()
        .position(|&(n, t)| n > line && separator(t))
        .unwrap_or(window.len());
    window[start..end.max(start)]
        .iter()
        .map(|&(n, t)| LineView {
            number: n,
            text: match t.char_indices().nth(LINE_WIDTH) {
                Some((cut, _)) => format!("{}…", &t[..cut]),
                None => t.to_string(),
            },
            here: n == line,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`context`] of a text.
    fn around(text: &str, line: u32) -> Vec<LineView> {
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        context(&lines, line)
    }

    #[test]
    fn context_marks_the_line_and_keeps_three_around() {
        let text: String = std::iter::once("root:\n".to_string())
            .chain((2..=10).map(|n| format!("  line {n}\n")))
            .collect();
        let lines = around(&text, 2);
        assert_eq!(
            lines.iter().map(|l| l.number).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert!(lines.iter().all(|l| l.here == (l.number == 2)));
        assert_eq!(around(&text, 10).len(), 4);
        assert!(around(&text, 40).is_empty());
        // Not across a document separator: the next document may be a Secret.
        let doc = "kind: Deployment\nspec:\n  image: x\n---\nkind: Secret\ndata:\n  p: c2VjcmV0\n";
        let lines = around(doc, 3);
        assert_eq!(
            lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
            ["spec:", "  image: x"]
        );
        // Not into another top-level field of a kustomization.
        let kustomization = "configMapGenerator:\n- name: c\n  literals:\n  - a=b\nsecretGenerator:\n- name: s\n  literals:\n  - password=hunter2\n";
        let lines = around(kustomization, 4);
        assert_eq!(lines.first().map(|l| l.number), Some(1));
        assert_eq!(lines.last().map(|l| l.text.as_str()), Some("  - a=b"));
        let lines = around(doc, 5);
        assert_eq!(lines.iter().map(|l| l.number).collect::<Vec<_>>(), [5]);
        // A long line is cut.
        let long = format!("{{\"data\": \"{}\"}}\n", "x".repeat(1000));
        let lines = around(&long, 1);
        assert_eq!(lines[0].text.chars().count(), LINE_WIDTH + 1);
        assert!(lines[0].text.ends_with('…'));
    }

    #[test]
    fn the_policy_allows_exactly_the_style_the_page_carries() {
        let digest = Sha256::digest(CSS.as_bytes());
        let want = base64::engine::general_purpose::STANDARD.encode(digest);
        assert!(csp("'none'").contains(&format!("'sha256-{want}'")));
        assert!(csp("'none'").starts_with("default-src 'none';"));
    }
}
