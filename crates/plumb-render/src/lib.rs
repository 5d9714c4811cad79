//! Desired and live state from files: YAML and JSON manifests, multi-document,
//! `kind: List`, or directories of them — each object with the file and line it
//! came from, and every problem reported as one line naming the file (and
//! line:column for syntax errors).
//!
//! Files parse on all cores. A manifest file is read only when it is a regular file under
//! the size limit ([`load_file`], and the [`source::SourceFs`]s), and an object no API server
//! would hold (an over-long name, an integer past 64 bits, a malformed `fieldsV1`) is refused
//! here, where files are read. Documents go through [`yaml_fast`] first and serde-saphyr
//! when it declines; the fast parser builds through a `Build` trait, so the kustomize
//! renderer gets its annotated tree (locations included, both dialects: `tree::TreeBuild`)
//! from the same parser.
//!
//! ```no_run
//! let manifests = plumb_render::load_paths(&["examples/payments/git".into()]).unwrap();
//! for m in &manifests {
//!     println!("{}:{} {}", m.file.display(), m.line, m.object["kind"]);
//! }
//! ```

pub mod chart;
pub mod fetch;
pub mod http;
pub mod jsonnet;
pub mod kustomize;
pub mod plugin;
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
    for r in plumb_core::parallel::map_coarse(&files, |f| load_file(f)) {
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

/// Loads one file: a regular file (symlinks followed) of at most
/// [`plumb_core::limits::MAX_FILE_BYTES`]; a device, FIFO or socket is refused unopened.
pub fn load_file(path: &Path) -> Result<Vec<Manifest>, LoadError> {
    use std::io::Read;
    let cannot =
        |e: std::io::Error| err(path, None, None, format!("cannot read: {}", io_reason(&e)));
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if meta.is_dir() {
        return Err(err(path, None, None, "is a directory"));
    }
    if !meta.is_file() {
        return Err(err(
            path,
            None,
            None,
            "not a regular file (a device, FIFO or socket is never read)",
        ));
    }
    let limit = plumb_core::limits::MAX_FILE_BYTES;
    let too_big = |len: u64| source::too_big(&path.display().to_string(), len, limit);
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    // Read at most one byte past the limit, in case the file grew since the check.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    std::fs::File::open(path)
        .and_then(|f| f.take(limit.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
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
            let options = serde_saphyr::options! {
                legacy_octal_numbers: true,
                alias_limits: yaml_alias_limits(),
                // Comments are not kept, so no limit on consecutive comment lines applies.
                emit_comments: false,
            };
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

/// serde-saphyr's alias limits with plumb's bound on replayed events
/// ([`plumb_core::limits::MAX_YAML_ALIAS_EVENTS`]).
/// A deadline in seconds from the environment variable `var` (a positive number, fractions
/// allowed), or `default` when it is unset or not one.
pub(crate) fn seconds_from_env(var: &str, default: std::time::Duration) -> std::time::Duration {
    std::env::var(var)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0 && s.is_finite())
        .map_or(default, std::time::Duration::from_secs_f64)
}

pub(crate) fn yaml_alias_limits() -> serde_saphyr::options::AliasLimits {
    serde_saphyr::alias_limits! {
        max_total_replayed_events: plumb_core::limits::MAX_YAML_ALIAS_EVENTS,
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
    if let Some(problem) = object_problem(&v) {
        return Err(err(path, Some(line), None, problem));
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

/// What makes an object (read from a file) one no API server would hold: a name or
/// namespace over Kubernetes' lengths ([`plumb_core::limits`]), an integer past 64 bits,
/// or a `managedFields` entry whose `fieldsV1` does not parse. Named as
/// `Kind name: field: problem`.
fn object_problem(v: &Value) -> Option<String> {
    use plumb_core::limits::{MAX_NAME_LEN, MAX_NAMESPACE_LEN};
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let short = plumb_core::limits::quoted(name);
    let what = format!("{kind} {short}");
    for (field, max) in [("name", MAX_NAME_LEN), ("namespace", MAX_NAMESPACE_LEN)] {
        let len = v
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .map_or(0, |s| s.chars().count());
        if len > max {
            return Some(format!(
                "{what}: metadata.{field} is {len} characters, over Kubernetes' limit of {max}"
            ));
        }
    }
    if let Some(path) = number_past_64_bits(v, &mut String::new()) {
        return Some(format!(
            "{what}: {path}: integer past 64 bits (Kubernetes integers are 64-bit)"
        ));
    }
    if let Some(entries) = v.pointer("/metadata/managedFields") {
        let Some(entries) = entries.as_array() else {
            return Some(format!("{what}: metadata.managedFields: expected a list"));
        };
        for (i, e) in entries.iter().enumerate() {
            if let Some(fields) = e.get("fieldsV1")
                && let Err(problem) = plumb_core::fieldpath::FieldSet::parse(fields)
            {
                let entry = plumb_core::limits::quoted(&problem.entry);
                return Some(format!(
                    "{what}: metadata.managedFields[{i}].fieldsV1: invalid entry '{entry}': {}",
                    problem.reason
                ));
            }
        }
    }
    None
}

/// The dotted path of the first number that was written as an integer too large for 64
/// bits (parsed as a float with no fraction beyond `u64`/`i64`), if any.
fn number_past_64_bits(v: &Value, path: &mut String) -> Option<String> {
    match v {
        Value::Number(n) => {
            let f = n.as_f64()?;
            let past = n.is_f64()
                && f.fract() == 0.0
                && !(-9_223_372_036_854_775_808.0..18_446_744_073_709_551_616.0).contains(&f);
            past.then(|| path.clone())
        }
        Value::Object(m) => m.iter().find_map(|(k, child)| {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(k);
            let found = number_past_64_bits(child, path);
            path.truncate(len);
            found
        }),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, child)| {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            let found = number_past_64_bits(child, path);
            path.truncate(len);
            found
        }),
        _ => None,
    }
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
