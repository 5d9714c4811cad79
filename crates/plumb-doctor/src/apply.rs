//! `plumb doctor --fix`: the git changes of a [`Report`], computed without touching a disk.
//!
//! For every finding whose cause git can settle ([`crate::CauseType::fixable_in_git`]) and
//! whose first fix is a `stop-declaring` change, [`plan`] works out the files' new contents
//! from their current ones (read through [`RepoFiles`]) and returns the [`Edit`]s with one
//! line per change for people; the caller writes them. Drift is never "fixed" by editing git:
//! a sync fixes it.
//!
//! ```
//! use plumb_doctor::apply::{Edit, RepoFiles, plan};
//! use std::collections::BTreeMap;
//!
//! struct Mem(BTreeMap<String, String>);
//! impl RepoFiles for Mem {
//!     type Error = String;
//!     fn exists(&self, file: &str) -> bool { self.0.contains_key(file) }
//!     fn read(&self, file: &str) -> Result<String, String> {
//!         self.0.get(file).cloned().ok_or_else(|| format!("{file}: no such file"))
//!     }
//! }
//! let report = plumb_doctor::Report {
//!     app: "web".into(), verdict: plumb_doctor::Verdict::InSync,
//!     loop_evidence: Default::default(), health: None, findings: vec![],
//! };
//! let fixed = plan(&report, &Mem(BTreeMap::new())).unwrap();
//! assert!(fixed.edits.is_empty() && fixed.changes.is_empty());
//! ```

use crate::report::{Fix, Report, StopAction};
use std::collections::BTreeMap;
use std::ops::Range;

/// The repository's work tree as `--fix` sees it: files by repository-relative path.
pub trait RepoFiles {
    type Error;
    fn exists(&self, file: &str) -> bool;
    fn read(&self, file: &str) -> Result<String, Self::Error>;
}

/// One change to a file of the work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Write the file with this content.
    Write { file: String, content: String },
    /// Delete the file.
    Delete { file: String },
}

/// What `--fix` does: the edits to make, and one line per change for people (in order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fixed {
    /// One per file, in path order.
    pub edits: Vec<Edit>,
    pub changes: Vec<String>,
}

/// The work tree as the edits so far leave it: contents written, files deleted.
struct Overlay<'a, F: RepoFiles> {
    files: &'a F,
    /// `None`: deleted.
    changed: BTreeMap<String, Option<String>>,
}

impl<F: RepoFiles> Overlay<'_, F> {
    fn exists(&self, file: &str) -> bool {
        match self.changed.get(file) {
            Some(c) => c.is_some(),
            None => self.files.exists(file),
        }
    }

    fn read(&self, file: &str) -> Result<String, F::Error> {
        match self.changed.get(file) {
            Some(Some(text)) => Ok(text.clone()),
            // Deleted: read what the repository says about a missing file.
            _ => self.files.read(file),
        }
    }

    /// Deletes `file` when it exists; says whether it did.
    fn delete(&mut self, file: &str) -> bool {
        if !self.exists(file) {
            return false;
        }
        self.changed.insert(file.to_string(), None);
        true
    }

    fn write(&mut self, file: &str, content: String) {
        self.changed.insert(file.to_string(), Some(content));
    }
}

/// The edits of `--fix` for `report`, from the files as `files` has them.
pub fn plan<F: RepoFiles>(report: &Report, files: &F) -> Result<Fixed, F::Error> {
    let mut tree = Overlay {
        files,
        changed: BTreeMap::new(),
    };
    let mut changes = Vec::new();
    let mut removals: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    // Kustomization list entries to remove, per (kustomization, field): index, and the patch
    // file to delete once its entry is gone. Removed highest index first, so none shifts.
    type EntryKey = (String, String);
    let mut entries: BTreeMap<EntryKey, Vec<(usize, Option<String>)>> = BTreeMap::new();
    for f in &report.findings {
        if !f.cause.kind.fixable_in_git() {
            continue; // drift is fixed by a sync, not by changing git
        }
        let Some(Fix::StopDeclaring(fix)) = f.fixes.first() else {
            continue;
        };
        let Some(file) = &fix.file else {
            continue;
        };
        let entry = fix
            .kustomization
            .as_ref()
            .map(|k| ((k.file.clone(), k.field.clone()), k.index));
        match (fix.action, entry) {
            (StopAction::DeleteFile, Some((key, index))) => {
                entries
                    .entry(key)
                    .or_default()
                    .push((index, Some(file.clone())));
            }
            (StopAction::DeleteFile, None) => {
                changes.extend(tree.delete(file).then(|| format!("deleted {file}")));
            }
            (StopAction::RemoveEntry, Some((key, index))) => {
                entries.entry(key).or_default().push((index, None));
            }
            (StopAction::RemoveLines, _) => {
                removals
                    .entry(file.clone())
                    .or_default()
                    .extend(fix.lines.iter().map(|l| *l as usize));
            }
            _ => {}
        }
    }
    for ((kfile, field), mut list) in entries {
        list.sort_by_key(|e| std::cmp::Reverse(e.0));
        list.dedup_by_key(|e| e.0);
        for (index, patch) in list {
            // The kustomization first: a patch file is deleted only once nothing pulls it in.
            let text = tree.read(&kfile)?;
            let Some(kept) = remove_field_entry(&text, &field, index) else {
                changes.push(format!(
                    "left {kfile} as it is: {field}[{index}] is not a block list entry plumb can remove{}",
                    patch
                        .as_ref()
                        .map(|p| format!(" (and kept {p})"))
                        .unwrap_or_default()
                ));
                continue;
            };
            tree.write(&kfile, kept);
            changes.push(format!("removed {field}[{index}] from {kfile}"));
            if let Some(p) = patch
                && tree.delete(&p)
            {
                changes.push(format!("deleted {p}"));
            }
        }
    }
    for (file, mut lines) in removals {
        // A file another fix deletes needs no lines removed (and must not come back).
        if tree.changed.get(&file).is_some_and(Option::is_none) {
            continue;
        }
        let text = tree.read(&file)?;
        lines.sort_unstable();
        lines.dedup();
        let kept: String = text
            .split_inclusive('\n')
            .enumerate()
            .filter(|(i, _)| !lines.contains(&(i + 1)))
            .map(|(_, l)| l)
            .collect();
        tree.write(&file, kept);
        changes.push(format!(
            "removed line{} {} of {file}",
            if lines.len() == 1 { "" } else { "s" },
            lines
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let edits = tree
        .changed
        .into_iter()
        .map(|(file, c)| match c {
            Some(content) => Edit::Write { file, content },
            None => Edit::Delete { file },
        })
        .collect();
    Ok(Fixed { edits, changes })
}

/// The top-level list entries of a kustomization's text: for each, the line range (0-based,
/// end exclusive) of the entry with the comment lines right above it, grouped by field.
fn list_entries(lines: &[&str]) -> Vec<(String, usize, Range<usize>)> {
    type Entry = (String, usize, Range<usize>);
    let mut out: Vec<Entry> = Vec::new();
    let mut field: Option<(String, usize)> = None; // (name, its line)
    let mut entry_start: Option<usize> = None;
    let mut entry_indent: Option<usize> = None; // the list's `- ` column
    let mut comments_from: Option<usize> = None;
    let close = |out: &mut Vec<Entry>,
                 field: &Option<(String, usize)>,
                 start: Option<usize>,
                 end: usize| {
        if let (Some((name, at)), Some(start)) = (field, start) {
            out.push((name.clone(), *at, start..end));
        }
    };
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_end();
        let indent = t.len() - t.trim_start().len();
        let top_level = !t.is_empty() && indent == 0 && !t.starts_with('#');
        if top_level && !t.starts_with('-') {
            close(
                &mut out,
                &field,
                entry_start.take(),
                comments_from.unwrap_or(i),
            );
            comments_from = None;
            entry_indent = None;
            field = t.strip_suffix(':').map(|name| (name.trim().to_string(), i));
            continue;
        }
        if t.trim_start().starts_with('#') {
            comments_from.get_or_insert(i);
            continue;
        }
        let item = t.trim_start().starts_with('-');
        if item && field.is_some() && *entry_indent.get_or_insert(indent) == indent {
            close(
                &mut out,
                &field,
                entry_start.take(),
                comments_from.unwrap_or(i),
            );
            entry_start = Some(comments_from.take().unwrap_or(i));
            continue;
        }
        if !t.is_empty() {
            comments_from = None;
        }
    }
    // Comments after the last entry belong to no entry.
    close(
        &mut out,
        &field,
        entry_start,
        comments_from.unwrap_or(lines.len()),
    );
    out
}

/// A kustomization's text without entry `index` of its list `field` (with the comment lines
/// right above it), and without the key when nothing is left under it; `None` when there is
/// no such block list entry.
pub fn remove_field_entry(text: &str, field: &str, index: usize) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let entries: Vec<(String, usize, Range<usize>)> = list_entries(&lines)
        .into_iter()
        .filter(|(f, _, _)| f == field)
        .collect();
    let (_, field_line, range) = entries.get(index).cloned()?;
    let emptied = entries.len() == 1;
    Some(
        lines
            .iter()
            .enumerate()
            .filter(|(i, _)| !(range.contains(i) || (emptied && *i == field_line)))
            .map(|(_, l)| *l)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{
        Cause, CauseType, Finding, KustomizationEdit, ResourceRef, StopDeclaring, Verdict,
    };
    use serde_json::json;

    const TEXT: &str = "\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
replicas:
- name: api
  count: 3
- name: worker
  count: 1
patches:
# save registry traffic
- path: pull-policy.yaml
  target:
    kind: Deployment
    labelSelector: a=b
images:
  - name: app
    newTag: \"2\"
";

    /// The work tree in memory (the logic under test is the planning, not the disk).
    struct Mem(BTreeMap<String, String>);

    impl RepoFiles for Mem {
        type Error = String;
        fn exists(&self, file: &str) -> bool {
            self.0.contains_key(file)
        }
        fn read(&self, file: &str) -> Result<String, String> {
            self.0
                .get(file)
                .cloned()
                .ok_or_else(|| format!("{file}: cannot read"))
        }
    }

    fn finding(cause: CauseType, fix: StopDeclaring) -> Finding {
        Finding {
            resource: ResourceRef {
                group: "apps".into(),
                kind: "Deployment".into(),
                namespace: "shop".into(),
                name: "web".into(),
            },
            path: "/spec/replicas".into(),
            desired: None,
            live: None,
            cause: Cause {
                kind: cause,
                name: "x".into(),
                manager: None,
                evidence: vec![],
            },
            declared_at: None,
            fixes: vec![Fix::StopDeclaring(fix)],
        }
    }

    fn stop(action: StopAction, file: &str, k: Option<(&str, &str, usize)>) -> StopDeclaring {
        StopDeclaring {
            action,
            file: Some(file.into()),
            lines: vec![],
            kustomization: k.map(|(file, field, index)| KustomizationEdit {
                file: file.into(),
                field: field.into(),
                index,
                entry: json!(null),
            }),
            description: String::new(),
        }
    }

    fn report(findings: Vec<Finding>) -> Report {
        Report {
            app: "web".into(),
            verdict: Verdict::Loop,
            loop_evidence: Default::default(),
            health: None,
            findings,
        }
    }

    /// Two entries of one list: removed highest first, so the second index does not shift
    /// onto a neighbour; a patch file goes only with its entry.
    #[test]
    fn fixes_remove_the_entries_they_name() {
        let files = Mem(BTreeMap::from([
            (
                "kustomization.yaml".to_string(),
                "replicas:\n- name: a\n  count: 1\n- name: b\n  count: 2\n- name: c\n  count: 3\npatches: [p.yaml]\n".to_string(),
            ),
            ("p.yaml".to_string(), "x: 1\n".to_string()),
        ]));
        let entry = |i| {
            finding(
                CauseType::Controller,
                stop(
                    StopAction::RemoveEntry,
                    "kustomization.yaml",
                    Some(("kustomization.yaml", "replicas", i)),
                ),
            )
        };
        let r = report(vec![
            entry(0),
            entry(1),
            finding(
                CauseType::Controller,
                stop(
                    StopAction::DeleteFile,
                    "p.yaml",
                    Some(("kustomization.yaml", "patches", 0)),
                ),
            ),
        ]);
        let fixed = plan(&r, &files).unwrap();
        assert_eq!(
            fixed.edits,
            [Edit::Write {
                file: "kustomization.yaml".into(),
                content: "replicas:\n- name: c\n  count: 3\npatches: [p.yaml]\n".into()
            }],
            "a flow-list entry is not removed, so the file stays"
        );
        assert_eq!(
            fixed.changes,
            [
                "left kustomization.yaml as it is: patches[0] is not a block list entry plumb can remove (and kept p.yaml)",
                "removed replicas[1] from kustomization.yaml",
                "removed replicas[0] from kustomization.yaml",
            ]
        );
    }

    /// A file one fix deletes is not brought back by another fix's line removals in it.
    #[test]
    fn a_deleted_file_gets_no_line_removals() {
        let files = Mem(BTreeMap::from([(
            "p.yaml".to_string(),
            "a\nb\n".to_string(),
        )]));
        let mut lines = stop(StopAction::RemoveLines, "p.yaml", None);
        lines.lines = vec![1];
        let r = report(vec![
            finding(
                CauseType::Controller,
                stop(StopAction::DeleteFile, "p.yaml", None),
            ),
            finding(CauseType::Controller, lines),
        ]);
        let fixed = plan(&r, &files).unwrap();
        assert_eq!(
            fixed.edits,
            [Edit::Delete {
                file: "p.yaml".into()
            }]
        );
        assert_eq!(fixed.changes, ["deleted p.yaml"]);
    }

    /// Only causes git can settle are fixed; the patch goes with its entry; line removals
    /// are merged per file; a file the fix deletes is deleted once.
    #[test]
    fn only_git_causes_are_fixed_and_files_go_with_their_entries() {
        let files = Mem(BTreeMap::from([
            ("k/kustomization.yaml".to_string(), TEXT.to_string()),
            ("k/pull-policy.yaml".to_string(), "p\n".to_string()),
            ("a.yaml".to_string(), "1\n2\n3\n4\n".to_string()),
            ("drift.yaml".to_string(), "1\n".to_string()),
        ]));
        let lines = |cause, file: &str, l: Vec<u32>| {
            let mut s = stop(StopAction::RemoveLines, file, None);
            s.lines = l;
            finding(cause, s)
        };
        let r = report(vec![
            finding(
                CauseType::MutatingWebhook,
                stop(
                    StopAction::DeleteFile,
                    "k/pull-policy.yaml",
                    Some(("k/kustomization.yaml", "patches", 0)),
                ),
            ),
            lines(CauseType::Controller, "a.yaml", vec![3]),
            lines(CauseType::MutatingPolicy, "a.yaml", vec![1, 3]),
            lines(CauseType::ManualEdit, "drift.yaml", vec![1]),
            lines(CauseType::ApiServerDefault, "drift.yaml", vec![1]),
            lines(CauseType::Unknown, "drift.yaml", vec![1]),
        ]);
        let fixed = plan(&r, &files).unwrap();
        let k = remove_field_entry(TEXT, "patches", 0).unwrap();
        assert_eq!(
            fixed.edits,
            [
                Edit::Write {
                    file: "a.yaml".into(),
                    content: "2\n4\n".into()
                },
                Edit::Write {
                    file: "k/kustomization.yaml".into(),
                    content: k
                },
                Edit::Delete {
                    file: "k/pull-policy.yaml".into()
                },
            ]
        );
        assert_eq!(
            fixed.changes,
            [
                "removed patches[0] from k/kustomization.yaml",
                "deleted k/pull-policy.yaml",
                "removed lines 1, 3 of a.yaml",
            ]
        );
        // A missing file to edit is the repository's error.
        let r = report(vec![lines(CauseType::Controller, "gone.yaml", vec![1])]);
        assert_eq!(plan(&r, &files).unwrap_err(), "gone.yaml: cannot read");
    }

    #[test]
    fn a_whole_entry_goes_and_an_emptied_key_with_it() {
        let out = remove_field_entry(TEXT, "replicas", 0).unwrap();
        assert!(
            out.contains("replicas:\n- name: worker\n  count: 1\npatches:"),
            "{out}"
        );
        // The patch entry with its comment and nested fields; `patches:` is left empty: gone.
        let out = remove_field_entry(TEXT, "patches", 0).unwrap();
        assert!(
            !out.contains("patches:")
                && !out.contains("save registry")
                && !out.contains("labelSelector"),
            "{out}"
        );
        assert!(
            out.contains("- name: worker\n  count: 1\nimages:\n  - name: app"),
            "{out}"
        );
        // An indented list.
        let out = remove_field_entry(TEXT, "images", 0).unwrap();
        assert!(!out.contains("images:") && !out.contains("newTag"), "{out}");
        assert!(out.ends_with("    labelSelector: a=b\n"), "{out}");
        // Nothing to remove.
        assert_eq!(remove_field_entry(TEXT, "replicas", 5), None);
        assert_eq!(remove_field_entry(TEXT, "resources", 0), None);
    }
}
