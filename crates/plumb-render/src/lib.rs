//! Desired and live state from files: YAML and JSON manifests, multi-document,
//! `kind: List`, or directories of them — each object with the file and line it
//! came from, and every problem reported as one line naming the file (and
//! line:column for syntax errors).
//!
//! ```no_run
//! let manifests = plumb_render::load_paths(&["examples/payments/git".into()]).unwrap();
//! for m in &manifests {
//!     println!("{}:{} {}", m.file.display(), m.line, m.object["kind"]);
//! }
//! ```

pub mod chart;
pub mod fetch;
pub mod kustomize;
pub mod remote;
pub mod render;
pub mod repocreds;
pub mod source;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub mod yaml_fast;

use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// One object and where it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub object: Value,
    pub file: PathBuf,
    /// 1-based line where the document (or List item's document) starts.
    pub line: usize,
}

impl Manifest {
    /// `file:line`, for messages.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

/// A problem reading manifests. Displays as one line: `FILE[:LINE[:COL]]: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for LoadError {}

fn err(
    file: &Path,
    line: Option<usize>,
    column: Option<usize>,
    message: impl Into<String>,
) -> LoadError {
    LoadError {
        file: file.to_path_buf(),
        line,
        column,
        message: message.into(),
    }
}

/// Whether a file name is a manifest (`*.yaml`, `*.yml`, `*.json`).
pub fn is_manifest_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// Loads files and directories (recursively, in sorted order). Files are parsed on all
/// cores; the result keeps the order of the paths and files.
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<Manifest>, LoadError> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| err(p, None, None, format!("cannot read: {}", io_reason(&e))))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            collect_dir(p, &mut found)?;
            found.sort();
            files.extend(found);
        } else {
            files.push(p.clone());
        }
    }
    let mut out = Vec::new();
    for r in plumb_core::parallel::map(&files, |f| load_file(f)) {
        out.extend(r?);
    }
    Ok(out)
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

fn collect_dir(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let dir_err = |e: std::io::Error| {
        err(
            dir,
            None,
            None,
            format!("cannot read directory: {}", io_reason(&e)),
        )
    };
    for entry in std::fs::read_dir(dir).map_err(dir_err)? {
        let entry = entry.map_err(dir_err)?;
        let path = entry.path();
        let ft = entry
            .file_type()
            .map_err(|e| err(&path, None, None, io_reason(&e)))?;
        if ft.is_dir() {
            if !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                collect_dir(&path, out)?;
            }
        } else if is_manifest_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// Loads one file.
pub fn load_file(path: &Path) -> Result<Vec<Manifest>, LoadError> {
    let bytes = std::fs::read(path)
        .map_err(|e| err(path, None, None, format!("cannot read: {}", io_reason(&e))))?;
    let text = String::from_utf8(bytes).map_err(|_| err(path, None, None, "not valid UTF-8"))?;
    parse_str(&text, path)
}

/// Parses manifest text; `path` names it in errors. JSON is parsed as JSON when the file
/// ends in `.json`; everything else as a YAML stream.
pub fn parse_str(text: &str, path: &Path) -> Result<Vec<Manifest>, LoadError> {
    let mut out = Vec::new();
    let json = path.extension().and_then(|e| e.to_str()) == Some("json");
    if json {
        let mut de = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        loop {
            let offset = de.byte_offset();
            match de.next() {
                None => break,
                Some(Ok(v)) => {
                    let line = line_of_offset(text, offset);
                    push_object(v, path, line, &mut out)?;
                }
                Some(Err(e)) => {
                    return Err(err(
                        path,
                        Some(e.line()),
                        Some(e.column()),
                        format!("invalid JSON: {}", json_reason(&e)),
                    ));
                }
            }
        }
        return Ok(out);
    }
    for (start_line, doc) in split_documents(text) {
        if doc.trim().is_empty()
            || doc
                .lines()
                .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        {
            continue;
        }
        // The fast path handles the YAML manifests are written in and gives exactly what
        // serde-saphyr gives; anything else (and every error) goes to serde-saphyr.
        let parsed = yaml_fast::parse_document(doc).map(Ok).unwrap_or_else(|| {
            let options = serde_saphyr::options! { legacy_octal_numbers: true };
            serde_saphyr::from_str_with_options(doc, options)
        });
        let v: Value = match parsed {
            Ok(v) => v,
            Err(e) => {
                let (line, col) = match e.location() {
                    Some(l) => (
                        Some(start_line + l.line() as usize - 1),
                        Some(l.column() as usize),
                    ),
                    None => (Some(start_line), None),
                };
                return Err(err(
                    path,
                    line,
                    col,
                    format!("invalid YAML: {}", yaml_reason(&e)),
                ));
            }
        };
        if v.is_null() {
            continue;
        }
        push_object(v, path, start_line, &mut out)?;
    }
    Ok(out)
}

fn json_reason(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// serde-saphyr's message without its own location (plumb prints one, up front).
pub(crate) fn yaml_reason(e: &serde_saphyr::Error) -> String {
    let s = e.to_string();
    let mut first = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("syntax error")
        .trim();
    first = first.strip_prefix("error: ").unwrap_or(first);
    // Drop the library's own "line N column M: " prefix; the location is printed once, up front.
    if first.starts_with("line ")
        && let Some(i) = first.find(": ")
    {
        first = &first[i + 2..];
    }
    let first = first.to_string();
    // Drop a trailing " at line N column M" the library may add; we print our own.
    match first.find(" at line ") {
        Some(i) => first[..i].to_string(),
        None => first,
    }
}

/// The 1-based line of the first non-whitespace byte at or after `offset`.
fn line_of_offset(text: &str, offset: usize) -> usize {
    let rest = &text[offset.min(text.len())..];
    let start = offset.min(text.len()) + (rest.len() - rest.trim_start().len());
    text[..start].matches('\n').count() + 1
}

/// Splits a YAML stream at `---` lines, returning each document with its first line.
fn split_documents(text: &str) -> Vec<(usize, &str)> {
    let mut docs = Vec::new();
    let mut start_byte = 0;
    let mut start_line = 1;
    let mut pos = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == "---" || trimmed.starts_with("--- ") || trimmed == "..." {
            docs.push((start_line, &text[start_byte..pos]));
            start_byte = pos + line.len();
            start_line = i + 2;
        }
        pos += line.len();
    }
    docs.push((start_line, &text[start_byte..]));
    docs
}

/// A sync hook named by `metadata.generateName` (Argo CD and Helm hooks may be: each sync
/// creates a new one). Such objects are not compared, only run by a sync.
fn is_generated_hook(v: &Value) -> bool {
    let meta = v.get("metadata");
    let generate = meta
        .and_then(|m| m.get("generateName"))
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    let annotations = meta.and_then(|m| m.get("annotations"));
    let hook = [
        plumb_core::HOOK_ANNOTATION,
        plumb_core::HELM_HOOK_ANNOTATION,
    ]
    .iter()
    .any(|k| annotations.and_then(|a| a.get(*k)).is_some());
    generate && hook
}

fn push_object(
    v: Value,
    path: &Path,
    line: usize,
    out: &mut Vec<Manifest>,
) -> Result<(), LoadError> {
    let Value::Object(ref m) = v else {
        return Err(err(
            path,
            Some(line),
            None,
            "document is not a Kubernetes object (expected a mapping)",
        ));
    };
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.ends_with("List")
        && m.get("items").is_some_and(Value::is_array)
        && !m.contains_key("metadata")
        || (kind == "List" && m.get("items").is_some())
    {
        if let Some(Value::Array(items)) = m.get("items") {
            for item in items {
                push_object(item.clone(), path, line, out)?;
            }
        }
        return Ok(());
    }
    for (field, ok) in [
        (
            "apiVersion",
            m.get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty()),
        ),
        ("kind", !kind.is_empty()),
        (
            "metadata.name",
            v.pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
                || is_generated_hook(&v),
        ),
    ] {
        if !ok {
            return Err(err(
                path,
                Some(line),
                None,
                format!("not a Kubernetes object: missing {field}"),
            ));
        }
    }
    let mut v = v;
    plumb_core::value::canonicalize_numbers(&mut v);
    out.push(Manifest {
        object: v,
        file: path.to_path_buf(),
        line,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, name: &str) -> Result<Vec<Manifest>, LoadError> {
        parse_str(text, Path::new(name))
    }

    #[test]
    fn multi_document_yaml_with_lines() {
        let ms = parse("# c\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  mode: 0644\n", "x.yaml").unwrap();
        assert_eq!(ms.len(), 2);
        assert_eq!(ms[0].line, 1);
        assert_eq!(ms[1].line, 8);
        assert_eq!(
            ms[1].object.pointer("/metadata/mode"),
            Some(&serde_json::json!(420)),
            "legacy octal"
        );
    }

    #[test]
    fn lists_expand() {
        let ms = parse("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: Secret, metadata: {name: b}}\n", "l.yaml").unwrap();
        assert_eq!(ms.len(), 2);
    }

    #[test]
    fn syntax_errors_have_line_and_column() {
        let e = parse(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a\n",
            "bad.yaml",
        )
        .unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("bad.yaml:"), "{s}");
        assert!(e.line.is_some() && e.column.is_some(), "{s}");
        assert!(!s.contains('\n'), "one line: {s}");
        let e = parse(
            "---\nkind: x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"a\n",
            "b2.yaml",
        )
        .unwrap_err();
        assert!(e.line.unwrap() >= 2, "{e}");
        let e = parse("a: b\n c: d\n", "y.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "y.yaml:2:3: invalid YAML: mapping values are not allowed in this context"
        );
        let j = parse("{\"apiVersion\": \"v1\",\n \"kind\": }", "x.json").unwrap_err();
        assert_eq!((j.line, j.column), (Some(2), Some(10)), "{j}");
    }

    #[test]
    fn identity_is_required() {
        let e = parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "n.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "n.yaml:1: not a Kubernetes object: missing metadata.name"
        );
        let e = parse("- a\n- b\n", "s.yaml").unwrap_err();
        assert!(e.to_string().contains("expected a mapping"));
    }
}
