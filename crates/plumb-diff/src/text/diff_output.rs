//! GNU diffutils' two output formats, printed from `diff_algo.rs`'s change list.
//!
//! * [`normal_diff`]: `diff OLD NEW`, what `argocd app diff` runs on the live and
//!   target YAML (`plumb diff`'s default output).
//! * [`unified_diff`]: `diff -u --label OLD --label NEW`, without timestamps,
//!   three lines of context (`plumb diff --output unified`).
//!
//! Both must match GNU diffutils 3.8 byte for byte, `\ No newline at end of file`
//! markers and range numbering included.

use super::diff_algo::{TextFile, gnu_changes};

/// GNU diffutils' default output for `diff OLD NEW`: change commands
/// (`3c3`, `5a6,7`, `8,9d7`), `< `/`> ` lines, `---` between the two sides of
/// a change, and `\ No newline at end of file` after a last line that lacks
/// one. Empty when the texts are equal.
#[must_use]
pub fn normal_diff(old: &str, new: &str) -> String {
    let a = TextFile::new(old);
    let b = TextFile::new(new);
    let changes = gnu_changes(&a, &b, 0);
    let mut out = String::new();
    for ch in &changes {
        let letter = match (ch.deleted > 0, ch.inserted > 0) {
            (true, true) => 'c',
            (true, false) => 'd',
            _ => 'a',
        };
        push_normal_range(&mut out, ch.line0, ch.deleted);
        out.push(letter);
        push_normal_range(&mut out, ch.line1, ch.inserted);
        out.push('\n');
        for i in ch.line0..ch.line0 + ch.deleted {
            out.push_str("< ");
            a.push_line(&mut out, i);
        }
        if ch.deleted > 0 && ch.inserted > 0 {
            out.push_str("---\n");
        }
        for i in ch.line1..ch.line1 + ch.inserted {
            out.push_str("> ");
            b.push_line(&mut out, i);
        }
    }
    out
}

/// One line of a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// In both texts: line `old` of the old one and `new` of the new one (0-based).
    Same { old: usize, new: usize },
    /// Line `old` of the old text only.
    Removed { old: usize },
    /// Line `new` of the new text only.
    Added { new: usize },
}

/// One hunk of a unified diff: its line ranges (half-open, 0-based) and its lines in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old: std::ops::Range<usize>,
    pub new: std::ops::Range<usize>,
    pub lines: Vec<Line>,
}

/// The hunks of `diff -u` with `context` lines around each change, as GNU groups them (a hunk
/// runs on while fewer than `2 * context + 1` unchanged lines separate two changes). Empty
/// when the texts are equal. The lines of [`unified_diff`], as data (e.g. for a web page).
#[must_use]
pub fn hunks(old: &str, new: &str, context: usize) -> Vec<Hunk> {
    let a = TextFile::new(old);
    let b = TextFile::new(new);
    hunks_of(&a, &b, context)
}

fn hunks_of(a: &TextFile, b: &TextFile, context: usize) -> Vec<Hunk> {
    let changes = gnu_changes(a, b, context);
    let mut out = Vec::new();
    let mut start = 0;
    while start < changes.len() {
        let mut end = start;
        while end + 1 < changes.len()
            && changes[end + 1].line0 - (changes[end].line0 + changes[end].deleted) <= 2 * context
        {
            end += 1;
        }
        let hunk = &changes[start..=end];
        let (first, last) = (&hunk[0], &hunk[hunk.len() - 1]);
        let lo0 = first.line0.saturating_sub(context);
        let lo1 = first.line1.saturating_sub(context);
        let hi0 = (last.line0 + last.deleted + context).min(a.lines.len());
        let hi1 = (last.line1 + last.inserted + context).min(b.lines.len());
        let mut lines = Vec::new();
        let (mut i, mut j) = (lo0, lo1);
        let mut next = hunk.iter().peekable();
        while i < hi0 || j < hi1 {
            match next.peek() {
                Some(ch) if i >= ch.line0 => {
                    lines
                        .extend((ch.line0..ch.line0 + ch.deleted).map(|old| Line::Removed { old }));
                    lines.extend((ch.line1..ch.line1 + ch.inserted).map(|new| Line::Added { new }));
                    i = ch.line0 + ch.deleted;
                    j = ch.line1 + ch.inserted;
                    next.next();
                }
                _ => {
                    lines.push(Line::Same { old: i, new: j });
                    i += 1;
                    j += 1;
                }
            }
        }
        out.push(Hunk {
            old: lo0..hi0,
            new: lo1..hi1,
            lines,
        });
        start = end + 1;
    }
    out
}

/// GNU `diff -u --label OLD_LABEL --label NEW_LABEL`: `---`/`+++` headers
/// without timestamps, hunks with three lines of context. Empty when the
/// texts are equal.
#[must_use]
pub fn unified_diff(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    const CONTEXT: usize = 3;
    let a = TextFile::new(old);
    let b = TextFile::new(new);
    let hunks = hunks_of(&a, &b, CONTEXT);
    if hunks.is_empty() {
        return String::new();
    }
    let mut out = format!("--- {old_label}\n+++ {new_label}\n");
    for h in &hunks {
        out.push_str("@@ -");
        push_unified_range(&mut out, h.old.start, h.old.end);
        out.push_str(" +");
        push_unified_range(&mut out, h.new.start, h.new.end);
        out.push_str(" @@\n");
        for line in &h.lines {
            match *line {
                Line::Same { old, .. } => {
                    out.push(' ');
                    a.push_line(&mut out, old);
                }
                Line::Removed { old } => {
                    out.push('-');
                    a.push_line(&mut out, old);
                }
                Line::Added { new } => {
                    out.push('+');
                    b.push_line(&mut out, new);
                }
            }
        }
    }
    out
}

/// `print_number_range` for normal output: `a,b`, or one number; an empty
/// range prints the number of the line before it.
fn push_normal_range(out: &mut String, start: usize, len: usize) {
    if len > 1 {
        out.push_str(&format!("{},{}", start + 1, start + len));
    } else if len == 1 {
        out.push_str(&(start + 1).to_string());
    } else {
        out.push_str(&start.to_string());
    }
}

/// `print_unidiff_number_range` for the half-open range `[lo, hi)`.
fn push_unified_range(out: &mut String, lo: usize, hi: usize) {
    match hi - lo {
        0 => out.push_str(&format!("{lo},0")),
        1 => out.push_str(&hi.to_string()),
        n => out.push_str(&format!("{},{n}", lo + 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::tests::{XorShift, random_text};

    // --- diff: expectations produced by GNU diffutils 3.8

    #[test]
    fn equal_inputs_give_no_output() {
        for s in ["", "a\n", "a\nb", "x\n\n"] {
            assert_eq!(normal_diff(s, s), "");
            assert_eq!(unified_diff(s, s, "live", "target"), "");
        }
    }

    #[test]
    fn normal_diff_commands() {
        let cases = [
            (
                "a\nb\nc\nd\n",
                "a\nB\nc\nd\ne\n",
                "2c2\n< b\n---\n> B\n4a5\n> e\n",
            ),
            ("a\nb\nc\nd\n", "a\nd\n", "2,3d1\n< b\n< c\n"),
            ("", "a\nb\nc\n", "0a1,3\n> a\n> b\n> c\n"),
            ("a\nb\nc\n", "", "1,3d0\n< a\n< b\n< c\n"),
            ("a\n\nb\n", "a\nb\n", "2d1\n< \n"),
        ];
        for (old, new, want) in cases {
            assert_eq!(normal_diff(old, new), want, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn missing_newline_markers() {
        let cases = [
            (
                "a\nb",
                "a\nb\n",
                "2c2\n< b\n\\ No newline at end of file\n---\n> b\n",
            ),
            (
                "a\nb\n",
                "a\nc",
                "2c2\n< b\n---\n> c\n\\ No newline at end of file\n",
            ),
            (
                "x\ny",
                "x\nz",
                "2c2\n< y\n\\ No newline at end of file\n---\n> z\n\\ No newline at end of file\n",
            ),
        ];
        for (old, new, want) in cases {
            assert_eq!(normal_diff(old, new), want, "{old:?} -> {new:?}");
        }
        assert_eq!(
            unified_diff("x\ny", "x\nz", "live", "target"),
            "--- live\n+++ target\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+z\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn unified_hunks_context_and_merging() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let edit = |changed: [usize; 2]| -> String {
            (1..=20)
                .map(|i| {
                    if changed.contains(&i) {
                        format!("L{i}\n")
                    } else {
                        format!("l{i}\n")
                    }
                })
                .collect()
        };
        assert_eq!(
            unified_diff(&old, &edit([2, 18]), "live", "target"),
            "--- live\n+++ target\n@@ -1,5 +1,5 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n@@ -15,6 +15,6 @@\n l15\n l16\n l17\n-l18\n+L18\n l19\n l20\n"
        );
        assert_eq!(
            unified_diff(&old, &edit([5, 11]), "live", "target"),
            "--- live\n+++ target\n@@ -2,13 +2,13 @@\n l2\n l3\n l4\n-l5\n+L5\n l6\n l7\n l8\n l9\n l10\n-l11\n+L11\n l12\n l13\n l14\n"
        );
        assert_eq!(
            unified_diff("", "a\nb\n", "l", "t"),
            "--- l\n+++ t\n@@ -0,0 +1,2 @@\n+a\n+b\n"
        );
        assert_eq!(
            unified_diff("a\nb\nc\n", "", "l", "t"),
            "--- l\n+++ t\n@@ -1,3 +0,0 @@\n-a\n-b\n-c\n"
        );
        assert_eq!(
            unified_diff("a\nb\nc\nd\ne\n", "new\na\nb\nc\nd\ne\n", "l", "t"),
            "--- l\n+++ t\n@@ -1,3 +1,4 @@\n+new\n a\n b\n c\n"
        );
    }

    // --- patch appliers for the property test

    /// Lines with their terminators; the last may lack one.
    fn lines(s: &str) -> Vec<String> {
        s.split_inclusive('\n').map(str::to_owned).collect()
    }

    /// Applies a normal-format diff, checking every `<` line against `old`.
    fn apply_normal(old: &str, diff: &str) -> String {
        let old_lines = lines(old);
        let mut out: Vec<String> = Vec::new();
        let mut next_old = 0; // 0-based index of the next old line to copy
        let mut last_was_new = false;
        for line in diff.lines() {
            if let Some(text) = line.strip_prefix("< ") {
                assert_eq!(old_lines[next_old].trim_end_matches('\n'), text);
                next_old += 1;
                last_was_new = false;
            } else if let Some(text) = line.strip_prefix("> ") {
                out.push(format!("{text}\n"));
                last_was_new = true;
            } else if line == "\\ No newline at end of file" {
                if last_was_new {
                    let l = out.last_mut().expect("a line precedes the marker");
                    l.pop();
                }
            } else if line == "---" {
            } else {
                let cmd = line.find(['a', 'c', 'd']).expect("a change command");
                let range = &line[..cmd];
                let first: usize = range
                    .split(',')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("line number");
                // Lines before the change (for `a`, up to and including `first`).
                let copy_to = if &line[cmd..=cmd] == "a" {
                    first
                } else {
                    first - 1
                };
                while next_old < copy_to {
                    out.push(old_lines[next_old].clone());
                    next_old += 1;
                }
            }
        }
        out.extend(old_lines[next_old..].iter().cloned());
        out.concat()
    }

    /// Applies a unified diff, checking context and `-` lines against `old`.
    fn apply_unified(old: &str, diff: &str) -> String {
        let old_lines = lines(old);
        let mut out: Vec<String> = Vec::new();
        let mut next_old = 0;
        let mut last_kept = false;
        for line in diff.lines().skip(2) {
            if let Some(rest) = line.strip_prefix("@@ -") {
                let range = rest.split(' ').next().expect("old range");
                let mut parts = range.split(',');
                let start: usize = parts.next().and_then(|n| n.parse().ok()).expect("start");
                let len: usize = parts.next().map_or(1, |n| n.parse().expect("len"));
                let copy_to = if len == 0 { start } else { start - 1 };
                while next_old < copy_to {
                    out.push(old_lines[next_old].clone());
                    next_old += 1;
                }
            } else if line == "\\ No newline at end of file" {
                if last_kept {
                    out.last_mut().expect("a line precedes the marker").pop();
                }
            } else if let Some(text) = line.strip_prefix('+') {
                out.push(format!("{text}\n"));
                last_kept = true;
            } else if let Some(text) = line.strip_prefix('-') {
                assert_eq!(old_lines[next_old].trim_end_matches('\n'), text);
                next_old += 1;
                last_kept = false;
            } else {
                let text = line.strip_prefix(' ').expect("context line");
                assert_eq!(old_lines[next_old].trim_end_matches('\n'), text);
                out.push(format!("{text}\n"));
                next_old += 1;
                last_kept = true;
            }
        }
        out.extend(old_lines[next_old..].iter().cloned());
        out.concat()
    }

    #[test]
    fn property_diffs_applied_as_patches_rebuild_the_new_text() {
        let mut r = XorShift(0x9E37_79B9_7F4A_7C15);
        let alphabet = ["a", "b", "c", "", "- name: x"];
        for _ in 0..3000 {
            let old = random_text(&mut r, &alphabet, 10);
            let new = random_text(&mut r, &alphabet, 10);
            let normal = normal_diff(&old, &new);
            assert_eq!(normal.is_empty(), old == new, "{old:?} -> {new:?}");
            assert_eq!(
                apply_normal(&old, &normal),
                new,
                "normal {old:?} -> {new:?}\n{normal}"
            );
            let unified = unified_diff(&old, &new, "a", "b");
            assert_eq!(
                apply_unified(&old, &unified),
                new,
                "unified {old:?} -> {new:?}\n{unified}"
            );
        }
    }
}
