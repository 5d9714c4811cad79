//! The attribution checks, one per file (ruff's model): each has a stable code and a name,
//! and proposes *candidates* — who may rewrite one differing field, with evidence and a
//! score. The highest score becomes the finding's cause; the others join its evidence.
//!
//! | code  | name                            | cause type           |
//! |-------|---------------------------------|----------------------|
//! | PD001 | mutating-webhook                | mutating-webhook     |
//! | PD002 | mutating-policy                 | mutating-policy      |
//! | PD003 | hpa-replicas                    | controller           |
//! | PD004 | cert-manager-cainjector         | controller           |
//! | PD005 | vpa                             | controller           |
//! | PD006 | manual-edit                     | manual-edit          |
//! | PD007 | controller-manager              | controller           |
//! | PD008 | admission-rewrite-of-own-field  | (boosts PD001/PD002) |
//! | PD009 | api-server-default              | api-server-default   |
//! | PD010 | kyverno-mutate                  | mutating-policy      |
//! | PD011 | gatekeeper-mutation             | mutating-policy      |
//!
//! Codes are never reused or renumbered. A check is complete when it has its file, an entry
//! in [`ALL`], a row here and a fixture `tests/fixtures/<code>_*.yaml` with golden output
//! (the `registry` test checks each).

use crate::managed::Owner;
use crate::report::CauseType;
use plumb_core::ResourceKey;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::SystemTime;

pub mod admission_rewrite;
pub mod api_server_default;
pub mod cert_manager;
pub mod controller_manager;
pub mod gatekeeper;
pub mod hpa;
pub mod kyverno;
pub mod manual_edit;
pub mod mutating_policy;
pub mod mutating_webhook;
pub mod vpa;

/// Everything a check may look at that is the same for every field.
#[derive(Debug)]
pub struct Ctx<'a> {
    pub context: &'a [Value],
    /// Namespace name → its labels (from the Namespace objects in `context`).
    pub namespaces: BTreeMap<String, serde_json::Map<String, Value>>,
    /// When the last sync finished (`operationState.finishedAt`, else the last history entry).
    pub last_sync: Option<SystemTime>,
}

impl Ctx<'_> {
    /// Context objects of a kind (any group with that name, optionally a specific group).
    pub fn objects<'s>(
        &'s self,
        group: &'s str,
        kind: &'s str,
    ) -> impl Iterator<Item = &'s Value> + 's {
        self.context.iter().filter(move |o| {
            o.get("kind").and_then(Value::as_str) == Some(kind)
                && plumb_core::group_of_api_version(
                    o.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
                ) == group
        })
    }
}

/// One differing field of one object.
#[derive(Debug)]
pub struct Field<'a> {
    pub key: &'a ResourceKey,
    /// JSON pointer into live (list indexes).
    pub pointer: &'a str,
    pub desired: Option<&'a Value>,
    pub live_value: Option<&'a Value>,
    /// The live object as the cluster returned it (with `managedFields`), when there is one.
    pub live: Option<&'a Value>,
    /// What git sends for the object (predicted live, masked).
    pub desired_object: &'a Value,
    /// The `managedFields` entries that own the field, newest first.
    pub owners: Vec<Owner>,
}

impl Field<'_> {
    /// The object's `apiVersion` version part (`v1` of `apps/v1`).
    pub fn version(&self) -> &str {
        let av = self
            .live
            .and_then(|l| l.get("apiVersion"))
            .or_else(|| self.desired_object.get("apiVersion"))
            .and_then(Value::as_str)
            .unwrap_or("");
        av.rsplit('/').next().unwrap_or(av)
    }

    /// The pointer's tokens, unescaped.
    pub fn tokens(&self) -> Vec<String> {
        tokens(self.pointer)
    }
}

/// RFC 6901 tokens of a pointer.
pub fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| plumb_core::pointer::unescape_token(t).into_owned())
        .collect()
}

/// A possible writer of a field.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub code: &'static str,
    pub kind: CauseType,
    pub name: String,
    pub manager: Option<String>,
    pub evidence: Vec<String>,
    /// Higher wins. Guide: 100 a policy whose patch touches the field; 90 a controller known
    /// to own the field (HPA, cainjector); 80 a person after the last sync; 70 another
    /// manager owning the field; 60 a matching webhook; 30 an unverified match.
    pub score: u32,
}

/// A check: a stable code, a name, and the function proposing candidates for one field.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    pub code: &'static str,
    pub name: &'static str,
    pub run: fn(&Ctx<'_>, &Field<'_>) -> Vec<Candidate>,
}

/// Every check, in code order.
pub const ALL: &[Check] = &[
    mutating_webhook::CHECK,
    mutating_policy::CHECK,
    hpa::CHECK,
    cert_manager::CHECK,
    vpa::CHECK,
    manual_edit::CHECK,
    controller_manager::CHECK,
    admission_rewrite::CHECK,
    api_server_default::CHECK,
    kyverno::CHECK,
    gatekeeper::CHECK,
];

/// The admission request a sync sends for the field's object.
pub fn request<'a>(ctx: &Ctx<'_>, f: &'a Field<'a>) -> crate::admission::Request<'a> {
    crate::admission::Request {
        group: &f.key.group,
        version: f.version(),
        resource: crate::admission::resource_of(&f.key.group, &f.key.kind, ctx.context),
        subresource: "",
        operation: "UPDATE",
        namespace: &f.key.namespace,
        kind: &f.key.kind,
        name: &f.key.name,
    }
}

/// The selector subject of the field's object.
pub fn subject<'a>(ctx: &Ctx<'_>, f: &'a Field<'a>) -> crate::admission::Subject<'a> {
    crate::admission::Subject {
        namespace_labels: ctx.namespaces.get(&f.key.namespace).cloned(),
        old_labels: f.live.map(crate::selector::labels_of).unwrap_or_default(),
        new_labels: crate::selector::labels_of(f.desired_object),
        request: request(ctx, f),
    }
}

/// `name` of a context object.
pub fn name_of(o: &Value) -> &str {
    o.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `namespace` of a context object.
pub fn namespace_of(o: &Value) -> &str {
    o.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Shell-style wildcard matching (`*`, `?`), as Kyverno and Gatekeeper match names.
pub use plumb_core::glob::wildcard_match as glob;

/// Whether any of `patterns` (a JSON string list) matches `s`; `default` when absent or empty.
pub fn any_glob(patterns: Option<&Value>, s: &str, default: bool) -> bool {
    match patterns.and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a.iter().filter_map(Value::as_str).any(|p| glob(p, s)),
        _ => default,
    }
}

#[cfg(test)]
mod registry {
    //! Every check in [`ALL`] is complete: a unique code in order, a name, its own file that
    //! starts with `//! CODE name`, a row in this module's table, and a fixture of its own
    //! (`tests/fixtures/<code>_*.yaml`) whose golden output shows its evidence. A check added
    //! to `ALL` without them fails here.
    use super::ALL;
    use std::path::{Path, PathBuf};

    fn root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }

    fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn every_check_has_a_code_a_file_a_row_and_a_fixture_with_golden_output() {
        let table = include_str!("mod.rs");
        let sources: Vec<String> = files(&root().join("src/checks"), "rs")
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        let fixtures = files(&root().join("tests/fixtures"), "yaml");
        let mut last = 0u32;
        for c in ALL {
            let number = c
                .code
                .strip_prefix("PD")
                .filter(|n| n.len() == 3)
                .and_then(|n| n.parse::<u32>().ok())
                .unwrap_or_else(|| panic!("{}: a code is PD and three digits", c.code));
            assert!(number > last, "{}: codes are unique, in order", c.code);
            last = number;
            assert!(
                !c.name.is_empty()
                    && c.name
                        .chars()
                        .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-'),
                "{}: name {:?}",
                c.code,
                c.name
            );
            let head = format!("//! {} {}", c.code, c.name);
            assert_eq!(
                sources.iter().filter(|s| s.starts_with(&head)).count(),
                1,
                "{}: one file under src/checks/ starts with `{head}`",
                c.code
            );
            let row = format!("//! | {} | {}", c.code, c.name);
            assert!(
                table.lines().any(|l| l.starts_with(&row)),
                "{}: checks/mod.rs's table has no row `{row}`",
                c.code
            );
            let prefix = format!("{}_", c.code.to_lowercase());
            let own: Vec<&PathBuf> = fixtures
                .iter()
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&prefix))
                })
                .collect();
            assert!(
                !own.is_empty(),
                "{}: no tests/fixtures/{prefix}*.yaml",
                c.code
            );
            let evidence = format!("[{}]", c.code);
            let mut shown = false;
            for f in own {
                let stem = f.file_stem().unwrap().to_string_lossy();
                for ext in ["json", "txt", "md"] {
                    let golden = root().join(format!("tests/snapshots/{stem}.{ext}"));
                    let text = std::fs::read_to_string(&golden)
                        .unwrap_or_else(|_| panic!("{}: no golden {}", c.code, golden.display()));
                    shown |= text.contains(&evidence);
                }
            }
            assert!(
                shown,
                "{}: no golden output of its fixtures shows {evidence}",
                c.code
            );
        }
        // The book's page on the doctor names the range of codes.
        let page =
            std::fs::read_to_string(root().join("../../docs/src/concepts/doctor.md")).unwrap();
        let range = format!("`PD001`–`{}`", ALL.last().unwrap().code);
        assert!(
            page.contains(&range),
            "docs/src/concepts/doctor.md must name {range}"
        );
    }
}
