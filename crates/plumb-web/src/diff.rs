//! The diff page: per resource, live against desired as `plumb diff -o unified` shows them
//! (the same YAML, the same hunks), unified or side by side, each changed line badged with the
//! manager that last wrote that field in the cluster (its `managedFields`).
//!
//! Each line's field comes from the YAML writer itself: the value is written with a marker
//! comment carrying its JSON pointer after every scalar, then the markers are cut off (the
//! text is then exactly `to_yaml`'s, which a test checks); lines of a block scalar take their
//! header's pointer.

use plumb_diff::text::{Line, hunks, to_yaml_with_comments};
use plumb_doctor::managed::Index;
use serde_json::Value;
use std::collections::BTreeMap;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// A resource whose diff has more changed lines than this is shown collapsed.
pub const COLLAPSE_ABOVE: usize = 200;

/// One compared resource that differs.
pub struct ResourceChange {
    /// `GROUP/KIND NAMESPACE/NAME`.
    pub resource: String,
    /// `Modified`, `Missing` (in git, not live) or `Extra` (live only).
    pub status: String,
    /// Live, normalised as compared (Secret values masked); `Null` when absent.
    pub live: Value,
    /// What live would be after applying git (masked alike); `Null` when not desired.
    pub desired: Value,
    /// The live object as read, for its `managedFields` only: never shown.
    pub live_object: Option<Value>,
}

/// The objects that differ between two renders of an app (`old`, `new`), paired by kind and
/// name: `Modified`, `Added` (only in `new`) or `Removed` (only in `old`), in key order. Secret
/// values are masked on both sides alike (equal values, equal masks) before anything else.
pub fn between(old: Vec<Value>, new: Vec<Value>) -> Vec<ResourceChange> {
    plumb_diff::pairs::differing(old, new)
        .into_iter()
        .map(|(key, a, b)| {
            let status = match (a.is_null(), b.is_null()) {
                (true, _) => "Added",
                (_, true) => "Removed",
                _ => "Modified",
            };
            ResourceChange {
                resource: key.to_string(),
                status: status.into(),
                live: a,
                desired: b,
                live_object: None,
            }
        })
        .collect()
}

/// A YAML text and the JSON pointer of the value on each line (when it has one).
pub(crate) struct Annotated {
    pub text: String,
    pub pointers: Vec<Option<String>>,
}

const MARK: &str = " # \u{1}";

/// `v` as `to_yaml` writes it, with the pointer of each line's value.
pub(crate) fn annotate(v: &Value) -> Annotated {
    if v.is_null() {
        return Annotated {
            text: String::new(),
            pointers: Vec::new(),
        };
    }
    let marked = to_yaml_with_comments(v, &|p: &str| Some(format!("\u{1}{p}")));
    let mut text = String::with_capacity(marked.len());
    let mut pointers = Vec::new();
    // A block scalar's header carries its pointer; its lines are indented deeper.
    let mut block: Option<(usize, String)> = None;
    for line in marked.lines() {
        let indent = line.len() - line.trim_start().len();
        let (plain, pointer) = match line.find(MARK) {
            Some(i) => (&line[..i], Some(line[i + MARK.len()..].to_string())),
            None => (line, None),
        };
        let pointer = match pointer {
            Some(p) => {
                let t = plain.trim_end();
                let header = t.ends_with('|')
                    || t.ends_with("|-")
                    || t.ends_with("|+")
                    || t.rsplit_once(' ').is_some_and(|(_, h)| {
                        h.starts_with('|')
                            && h[1..]
                                .chars()
                                .all(|c| c.is_ascii_digit() || c == '-' || c == '+')
                    });
                block = header.then(|| (indent, p.clone()));
                Some(p)
            }
            None => match &block {
                Some((at, p)) if indent > *at || plain.is_empty() => Some(p.clone()),
                _ => {
                    block = None;
                    None
                }
            },
        };
        text.push_str(plain);
        text.push('\n');
        pointers.push(pointer);
    }
    Annotated { text, pointers }
}

/// The manager that last wrote the field at `pointer` (the newest owner).
fn last_writer(index: &Index, pointer: &str) -> Option<String> {
    index
        .owners(pointer)
        .into_iter()
        .next()
        .map(|o| o.manager)
        .filter(|m| !m.is_empty())
}

/// One line as the page shows it.
pub(crate) struct Row {
    /// `same`, `removed`, `added`.
    pub kind: &'static str,
    pub sign: &'static str,
    pub old: Option<usize>,
    pub new: Option<usize>,
    pub text: String,
    pub actor: Option<String>,
}

pub(crate) struct HunkView {
    pub header: String,
    pub rows: Vec<Row>,
    /// Side by side: (old, new) per row.
    pub pairs: Vec<(Option<Row>, Option<Row>)>,
}

pub(crate) struct ResourceView {
    pub anchor: String,
    pub resource: String,
    pub status: String,
    pub changed: usize,
    pub open: bool,
    pub hunks: Vec<HunkView>,
}

impl ResourceView {
    /// The resource and its lines as data (`?format=json`): each line's kind, numbers, text
    /// and the manager that last wrote it (`null` when none is known).
    pub(crate) fn to_json(&self) -> Value {
        let lines: Vec<Value> = self
            .hunks
            .iter()
            .flat_map(|h| &h.rows)
            .map(|l| {
                serde_json::json!({"kind": l.kind, "old": l.old, "new": l.new,
                    "text": l.text, "actor": l.actor})
            })
            .collect();
        serde_json::json!({"resource": self.resource, "status": self.status,
            "changed": self.changed, "lines": lines})
    }
}

/// The resources' views, and the actors with how many changed lines each last wrote. Lines
/// whose actor is `hide` are left out.
pub(crate) fn views(
    changes: &[ResourceChange],
    hide: Option<&str>,
) -> (Vec<ResourceView>, BTreeMap<String, usize>) {
    let mut actors: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        let live = annotate(&c.live);
        let desired = annotate(&c.desired);
        let live_lines: Vec<&str> = live.text.lines().collect();
        let desired_lines: Vec<&str> = desired.text.lines().collect();
        // The live object's managedFields, resolved once for all its lines.
        let index = c.live_object.as_ref().map(Index::of);
        let actor_of =
            |pointer: Option<&String>| -> Option<String> { last_writer(index.as_ref()?, pointer?) };
        let mut changed = 0;
        let mut hunk_views = Vec::new();
        for h in hunks(&live.text, &desired.text, CONTEXT) {
            let mut rows = Vec::new();
            for line in &h.lines {
                let row = match *line {
                    Line::Same { old, new } => Row {
                        kind: "same",
                        sign: " ",
                        old: Some(old + 1),
                        new: Some(new + 1),
                        text: live_lines.get(old).copied().unwrap_or("").to_string(),
                        actor: None,
                    },
                    Line::Removed { old } => Row {
                        kind: "removed",
                        sign: "-",
                        old: Some(old + 1),
                        new: None,
                        text: live_lines.get(old).copied().unwrap_or("").to_string(),
                        actor: actor_of(live.pointers.get(old).and_then(Option::as_ref)),
                    },
                    Line::Added { new } => Row {
                        kind: "added",
                        sign: "+",
                        old: None,
                        new: Some(new + 1),
                        text: desired_lines.get(new).copied().unwrap_or("").to_string(),
                        actor: actor_of(desired.pointers.get(new).and_then(Option::as_ref)),
                    },
                };
                if row.kind != "same" {
                    if let Some(a) = &row.actor {
                        *actors.entry(a.clone()).or_default() += 1;
                    }
                    if hide.is_some() && row.actor.as_deref() == hide {
                        continue;
                    }
                    changed += 1;
                }
                rows.push(row);
            }
            let pairs = pair(&rows);
            hunk_views.push(HunkView {
                header: format!(
                    "@@ -{},{} +{},{} @@",
                    h.old.start + 1,
                    h.old.len(),
                    h.new.start + 1,
                    h.new.len()
                ),
                rows,
                pairs,
            });
        }
        out.push(ResourceView {
            anchor: format!("resource-{}", i + 1),
            resource: c.resource.clone(),
            status: c.status.clone(),
            changed,
            open: changed <= COLLAPSE_ABOVE,
            hunks: hunk_views,
        });
    }
    (out, actors)
}

fn copy(r: &Row) -> Row {
    Row {
        kind: r.kind,
        sign: r.sign,
        old: r.old,
        new: r.new,
        text: r.text.clone(),
        actor: r.actor.clone(),
    }
}

/// Side by side: a same line on both sides; a run of removed lines beside the added lines
/// that follow it.
fn pair(rows: &[Row]) -> Vec<(Option<Row>, Option<Row>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        if rows[i].kind == "same" {
            out.push((Some(copy(&rows[i])), Some(copy(&rows[i]))));
            i += 1;
            continue;
        }
        let removed: Vec<&Row> = rows[i..]
            .iter()
            .take_while(|r| r.kind == "removed")
            .collect();
        let added: Vec<&Row> = rows[i + removed.len()..]
            .iter()
            .take_while(|r| r.kind == "added")
            .collect();
        for k in 0..removed.len().max(added.len()) {
            out.push((
                removed.get(k).map(|r| copy(r)),
                added.get(k).map(|r| copy(r)),
            ));
        }
        i += removed.len() + added.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn between_pairs_objects_and_masks_secrets() {
        let cm = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {"k": v}});
        let secret = |v: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}, "data": {"p": v}});
        let only_old = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "gone", "namespace": "n"}});
        let changes = between(
            vec![cm("a"), secret("c2VjcmV0LW9uZQ=="), only_old],
            vec![cm("b"), secret("c2VjcmV0LXR3bw==")],
        );
        let summary: Vec<(&str, &str)> = changes
            .iter()
            .map(|c| (c.resource.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                ("/ConfigMap n/c", "Modified"),
                ("/Secret n/s", "Modified"),
                ("/Service n/gone", "Removed")
            ]
        );
        let text = format!(
            "{:?}",
            changes
                .iter()
                .map(|c| (&c.live, &c.desired))
                .collect::<Vec<_>>()
        );
        assert!(
            !text.contains("c2VjcmV0") && !text.contains("secret-"),
            "{text}"
        );
        assert_eq!(changes[1].live["data"]["p"], "++++++++");
        assert_eq!(changes[1].desired["data"]["p"], "++++++++++++");
    }

    #[test]
    fn the_marked_text_is_the_plain_text() {
        let v = json!({"metadata": {"name": "web", "labels": {"a/b": "x"}},
            "spec": {"replicas": 2, "script": "line1\nline2\n", "args": ["--x", "a long value that goes on and on past the eightieth column of the line, folded"], "empty": {}}});
        let a = annotate(&v);
        assert_eq!(a.text, plumb_diff::text::to_yaml(&v));
        let at = |needle: &str| {
            let i = a
                .text
                .lines()
                .position(|l| l.contains(needle))
                .expect(needle);
            a.pointers[i].clone()
        };
        assert_eq!(at("replicas").as_deref(), Some("/spec/replicas"));
        assert_eq!(at("name: web").as_deref(), Some("/metadata/name"));
        assert_eq!(at("line2").as_deref(), Some("/spec/script"));
        assert_eq!(at("--x").as_deref(), Some("/spec/args/0"));
    }
}
