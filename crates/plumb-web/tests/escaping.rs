//! Every value on the page is text: names, values, evidence, file lines and messages that carry
//! HTML or script come out escaped, and the page loads nothing from elsewhere.

use plumb_doctor::report::{CauseType, DeclaredAt, Fix, SyncFix};
use plumb_doctor::{
    AppHealth, Cause, Finding, LoopEvidence, Report, ResourceHealth, ResourceRef, Verdict,
};
use serde_json::json;

const XSS: &str = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>";

fn report_with(payload: &str) -> Report {
    let resource = ResourceRef {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: "web".into(),
        name: format!("api{payload}"),
    };
    Report {
        app: format!("app{payload}"),
        verdict: Verdict::Loop,
        loop_evidence: LoopEvidence {
            revision: Some(format!("rev{payload}")),
            syncs: 4,
            span_seconds: Some(90),
            ..LoopEvidence::default()
        },
        health: Some(AppHealth {
            status: format!("Degraded{payload}"),
            resources: vec![ResourceHealth {
                resource: resource.clone(),
                status: "Degraded".into(),
                message: format!("crash {payload}"),
                source: "builtin".into(),
            }],
        }),
        findings: vec![Finding {
            resource,
            path: format!("/metadata/annotations/link{payload}"),
            desired: Some(json!("javascript:alert(3)")),
            live: Some(json!(payload)),
            cause: Cause {
                kind: CauseType::MutatingWebhook,
                name: format!("hook{payload}"),
                manager: Some(format!("mgr{payload}")),
                evidence: vec![format!("[PD001] said {payload}")],
            },
            declared_at: Some(DeclaredAt {
                file: format!("dir/{payload}.yaml"),
                line: 2,
                kustomization: Some(format!("k{payload}")),
            }),
            fixes: vec![Fix::Sync(SyncFix {
                command: format!("argocd app sync {payload}"),
                note: format!("note {payload}"),
            })],
        }],
    }
}

#[test]
fn hostile_values_render_as_text() {
    let page = plumb_web::doctor_report(&report_with(XSS), &|_: &str| {
        Some(format!("a: 1\nb: {XSS}\nc: 3\n"))
    });
    // The one markup the values could have made: none of it is there.
    for raw in ["<script", "<img", "\"'>"] {
        assert!(!page.contains(raw), "{raw} unescaped in:\n{page}");
    }
    let escaped = "&#60;script&#62;alert(1)&#60;/script&#62;&#34;&#39;&#62;&#60;img src=x onerror=alert(2)&#62;";
    // In the title, the heading, the banner, every cell, the evidence, the file's line.
    assert!(page.matches(escaped).count() >= 12, "{page}");
    // A `javascript:` value is text in a <code>, never a link.
    assert!(page.contains("<code>javascript:alert(3)</code>"), "{page}");
    assert!(
        page.split("href=\"")
            .skip(1)
            .all(|rest| rest.starts_with("#finding-")),
        "{page}"
    );
}

#[test]
fn the_page_is_self_contained() {
    let page = plumb_web::doctor_report(&report_with("x"), &|_: &str| Some("a: 1\nb: x\n".into()));
    for external in [
        "src=", "url(", "@import", "<link", "<script", "http://", "https://",
    ] {
        assert!(!page.contains(external), "{external} in:\n{page}");
    }
    // Links only within the page.
    assert!(
        page.split("href=\"")
            .skip(1)
            .all(|rest| rest.starts_with('#')),
        "{page}"
    );
    assert!(page.contains("content=\"default-src &#39;none&#39;; style-src &#39;sha256-"));
}

#[test]
fn a_long_report_details_the_first_fields_and_lists_them_all() {
    let mut report = report_with("x");
    let one = report.findings[0].clone();
    report.findings = (0..250)
        .map(|i| {
            let mut f = one.clone();
            f.path = format!("/data/key-{i}");
            f
        })
        .collect();
    let reads = std::cell::Cell::new(0);
    let page = plumb_web::doctor_report(&report, &|_: &str| {
        reads.set(reads.get() + 1);
        Some("a: 1\nb: x\n".into())
    });
    assert_eq!(
        page.matches("<article class=\"finding\"").count(),
        plumb_web::DETAILED_FINDINGS
    );
    assert_eq!(
        page.matches("<code>/data/key-").count(),
        250 + plumb_web::DETAILED_FINDINGS
    );
    assert!(
        page.contains("The first 200 fields in full below; all 250 in the table above"),
        "{page}"
    );
    // One file, read once.
    assert_eq!(reads.get(), 1);
}
