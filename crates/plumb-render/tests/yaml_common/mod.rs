//! Shared helpers for the differential tests: run the fast path and serde-saphyr (with the
//! options plumb uses) on the same document and insist that they agree.
#![allow(dead_code)]

use serde_json::Value;

/// What happened to one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The fast path produced a value, equal to saphyr's.
    Fast,
    /// The fast path declined; saphyr succeeded.
    FallbackOk,
    /// The fast path declined; saphyr failed.
    FallbackErr,
}

/// serde-saphyr's answer, configured as in plumb.
pub fn saphyr(doc: &str) -> Result<Value, String> {
    let options = serde_saphyr::options! { legacy_octal_numbers: true };
    serde_saphyr::from_str_with_options::<Value>(doc, options).map_err(|e| {
        e.to_string()
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string()
    })
}

/// Runs both parsers; panics on any disagreement. Equality is checked both with
/// `Value::eq` (which tells `1` from `1.0`) and on the serialized text (which also tells
/// `-0.0` from `0.0`).
pub fn check(doc: &str) -> Outcome {
    check_tree(doc);
    let fast = plumb_render::yaml_fast::parse_document(doc);
    let slow = saphyr(doc);
    match (fast, slow) {
        (Some(f), Ok(s)) => {
            assert!(
                f == s && serde_json::to_string(&f).unwrap() == serde_json::to_string(&s).unwrap(),
                "values differ for {doc:?}\n fast:   {f}\n saphyr: {s}"
            );
            Outcome::Fast
        }
        (Some(f), Err(e)) => panic!("fast path accepted {doc:?} as {f}, saphyr failed: {e}"),
        (None, Ok(_)) => Outcome::FallbackOk,
        (None, Err(_)) => Outcome::FallbackErr,
    }
}

/// Splits a YAML stream at `---` lines like plumb's `split_documents` does.
pub fn split_documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start_byte = 0;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == "---" || trimmed.starts_with("--- ") || trimmed == "..." {
            docs.push(&text[start_byte..pos]);
            start_byte = pos + line.len();
        }
        pos += line.len();
    }
    docs.push(&text[start_byte..]);
    docs
}

/// Whether plumb would hand this document to the parser at all (it skips blank and
/// comment-only documents).
pub fn plumb_parses(doc: &str) -> bool {
    !(doc.trim().is_empty()
        || doc
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#')))
}

/// [`check`] on the document and on its Windows (CR LF) version; returns the first outcome.
pub fn check_crlf_too(doc: &str) -> Outcome {
    let outcome = check(doc);
    let crlf = check(&doc.replace('\n', "\r\n"));
    if outcome == Outcome::Fast && !doc.contains('\r') {
        assert_eq!(crlf, Outcome::Fast, "CR LF version of {doc:?} fell back");
    }
    outcome
}

/// The kustomize renderer's parse of `text` as a resource stream and as a kustomization:
/// where the fast path gives nodes, they equal serde-saphyr's, origins and document lines
/// included. Returns whether the fast path took it (as resources).
pub fn check_tree(text: &str) -> bool {
    check_tree_as(text, true);
    check_tree_as(text, false)
}

fn check_tree_as(text: &str, kustomization: bool) -> bool {
    match plumb_render::kustomize::__tree_fast_and_slow(text, kustomization) {
        Some((f, Ok(s))) => {
            assert!(
                f == s,
                "origin trees differ for {text:?} (kustomization: {kustomization})\n fast:   {f}\n saphyr: {s}"
            );
            true
        }
        Some((f, Err(e))) => {
            panic!("tree fast path accepted {text:?} as {f}, saphyr failed: {e}")
        }
        None => false,
    }
}
