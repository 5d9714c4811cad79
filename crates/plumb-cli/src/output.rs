//! Output formats of `plumb diff`: argocd (default), unified, json.

use anyhow::{Context, Result};
use plumb_diff::compare::{ResourceDiff, Status};
use plumb_diff::text;
use serde_json::{Value, json};
use std::io::Write;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `argocd app diff`: a header per resource, then `diff` normal format (`<` live, `>` desired).
    Argocd,
    /// The same pairs as unified diffs labelled live and desired.
    Unified,
    /// One JSON document: summary and per-resource differing fields.
    Json,
}

fn yaml_or_empty(v: &Value) -> String {
    if v.is_null() {
        String::new()
    } else {
        text::to_yaml(v)
    }
}

fn header(r: &ResourceDiff) -> String {
    format!("\n===== {} ======\n", r.key)
}

/// Standard output for a command's data, buffered: stdout's own buffer writes at every
/// newline, a system call per line or object. Callers flush before they return.
pub fn buffered_stdout() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock())
}

/// Prints the comparison; `revision` (a rendered source's, as Argo CD shows it) goes into
/// the JSON document.
pub fn print(results: &[ResourceDiff], format: Format, revision: Option<&str>) -> Result<()> {
    let mut out = buffered_stdout();
    match format {
        Format::Argocd => {
            let external = std::env::var("KUBECTL_EXTERNAL_DIFF")
                .ok()
                .filter(|s| !s.trim().is_empty());
            for r in results.iter().filter(|r| r.status != Status::Equal) {
                out.write_all(header(r).as_bytes())?;
                let live = yaml_or_empty(&r.result.normalized_live);
                let desired = yaml_or_empty(&r.result.predicted_live);
                match &external {
                    Some(cmd) => {
                        out.flush()?;
                        run_external(cmd, r, &live, &desired)?;
                    }
                    None => out.write_all(text::normal_diff(&live, &desired).as_bytes())?,
                }
            }
        }
        Format::Unified => {
            for r in results.iter().filter(|r| r.status != Status::Equal) {
                out.write_all(header(r).as_bytes())?;
                let live = yaml_or_empty(&r.result.normalized_live);
                let desired = yaml_or_empty(&r.result.predicted_live);
                out.write_all(text::unified_diff(&live, &desired, "live", "desired").as_bytes())?;
            }
        }
        Format::Json => {
            let count = |s: Status| results.iter().filter(|r| r.status == s).count();
            let resources: Vec<Value> = results
                .iter()
                .map(|r| {
                    let fields: Vec<Value> = if r.status == Status::Modified {
                        r.fields().into_iter().map(|f| field_json(r, f)).collect()
                    } else {
                        Vec::new()
                    };
                    json!({
                        "group": r.key.group, "kind": r.key.kind, "namespace": r.key.namespace, "name": r.key.name,
                        "status": r.status, "fields": fields,
                    })
                })
                .collect();
            let mut doc = json!({
                "summary": {
                    "inSync": results.iter().all(|r| r.status == Status::Equal),
                    "modified": count(Status::Modified), "missing": count(Status::Missing),
                    "extra": count(Status::Extra), "equal": count(Status::Equal),
                },
                "resources": resources,
            });
            if let (Some(rev), Some(m)) = (revision, doc.as_object_mut()) {
                m.insert("revision".into(), json!(rev));
            }
            serde_json::to_writer_pretty(&mut out, &doc)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(())
}

/// One differing field, with `declaredAt` (repository-relative file and line) when the
/// desired side declares it and the renderer knew where.
fn field_json(r: &ResourceDiff, f: plumb_diff::fields::FieldChange) -> Value {
    let declared = r.declared.as_ref().and_then(|d| {
        d.locate(&r.result.normalized_live, &f.path)
            .or_else(|| d.locate(&r.result.predicted_live, &f.path))
    });
    let mut v = serde_json::to_value(&f).unwrap_or(Value::Null);
    if let (Some(o), Some(m)) = (declared, v.as_object_mut()) {
        m.insert(
            "declaredAt".into(),
            json!({"file": &*o.file, "line": o.line}),
        );
    }
    v
}

/// Runs `KUBECTL_EXTERNAL_DIFF` on two files, as argocd does (`<cmd> [args] LIVE TARGET`).
fn run_external(cmd: &str, r: &ResourceDiff, live: &str, desired: &str) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("plumb-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = r.key.name.replace('/', "_");
    let live_path = dir.join(format!("{name}-live.yaml"));
    let target_path = dir.join(&name);
    std::fs::write(&live_path, live)?;
    std::fs::write(&target_path, desired)?;
    let mut parts = cmd.split_whitespace();
    let program = parts.next().unwrap_or("diff");
    let status = std::process::Command::new(program)
        .args(parts)
        .arg(&live_path)
        .arg(&target_path)
        .status()
        .with_context(|| format!("cannot run KUBECTL_EXTERNAL_DIFF '{cmd}'"));
    let _ = std::fs::remove_dir_all(&dir);
    status.map(|_| ()) // the diff tool's own exit status is ignored, as argocd ignores it
}

/// Writes `text` to standard output: a reader that went away (`| head`) is an error main
/// ends quietly on, never a panic (as `print!` would).
pub fn stdout(text: &str) -> Result<()> {
    let out = std::io::stdout();
    let mut out = out.lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
