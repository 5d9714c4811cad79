//! Renders every kustomization of the pinned public trees (`tests/kustomize-public/`:
//! argo-cd's `manifests/`, kubeflow, microservices-demo, kubebuilder's scaffold,
//! cluster-api's `config/`, kustomize's examples) with `kubectl kustomize` and with the
//! renderer `plumb render` uses (native, with its reported fall-back to the kustomize
//! binary), and requires the same objects, in the same order, with equal content, for
//! every directory the oracle renders. Directories the oracle refuses (remote bases with
//! no network, components built alone, broken upstream references) are counted and
//! listed, not failed.
//!
//! `CASE=substring` limits the run; `REQUIRE_KUBECTL=1` makes a missing kubectl a failure.

use plumb_core::argo::AppSource;
use plumb_render::render::{RenderOptions, render};
use plumb_render::source::DirSource;
mod kustomize_common;

use kustomize_common::{canonical, oracle_documents};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/kustomize-public");

const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// `(project, project-relative directory)` of every directory holding a kustomization.
fn directories() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut projects: Vec<PathBuf> = std::fs::read_dir(CORPUS)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    projects.retain(|p| p.is_dir());
    projects.sort();
    for project in projects {
        let name = project
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut stack = vec![project.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.filter_map(|e| e.ok()) {
                let p = e.path();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(p);
                }
            }
            if KUSTOMIZATION_FILES.iter().any(|f| dir.join(f).exists()) {
                let rel = dir
                    .strip_prefix(&project)
                    .map(|r| r.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push((name.clone(), rel));
            }
        }
    }
    out.sort();
    out
}

/// `kubectl kustomize` output as JSON values, or its first error line.
fn oracle(dir: &Path) -> Result<Vec<Value>, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        // kubectl logs `E1202 … "command failed" err="…"`, or `err=<` and the text below.
        let err = String::from_utf8_lossy(&out.stderr);
        let mut lines = err
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("# Warning"));
        let first = lines.next().unwrap_or("failed");
        let line = match first.split_once("err=") {
            Some((_, "<")) => lines.next().unwrap_or("failed").trim(),
            Some((_, rest)) => rest.trim_matches('"'),
            None => first,
        };
        return Err(line.chars().take(160).collect());
    }
    oracle_documents(&String::from_utf8_lossy(&out.stdout))
        .map_err(|e| format!("oracle output does not parse: {e}"))
}

fn diff(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    if out.len() > 4 {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let p = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(va), Some(vb)) => diff(va, vb, &p, out),
                    (va, vb) => out.push(format!("{p}: plumb {} kubectl {}", short(va), short(vb))),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff(va, vb, &format!("{path}/{i}"), out);
            }
        }
        _ if a != b => out.push(format!(
            "{path}: plumb {} kubectl {}",
            short(Some(a)),
            short(Some(b))
        )),
        _ => {}
    }
}

fn short(v: Option<&Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(v) => v.to_string().chars().take(120).collect(),
    }
}

fn id(v: &Value) -> String {
    let ns = v["metadata"]["namespace"].as_str().unwrap_or("");
    format!(
        "{}/{}{}{}",
        v["kind"].as_str().unwrap_or("?"),
        ns,
        if ns.is_empty() { "" } else { "/" },
        v["metadata"]["name"].as_str().unwrap_or("?")
    )
}

enum Outcome {
    Native,
    Fallback(String),
    Different(String),
    OracleFails(String),
}

fn check(project: &str, dir: &str) -> Outcome {
    let root = Path::new(CORPUS).join(project);
    let expected = match oracle(&root.join(dir)) {
        Ok(v) => v,
        Err(e) => return Outcome::OracleFails(e),
    };
    let fs = match DirSource::open(&root) {
        Ok(fs) => fs,
        Err(e) => return Outcome::Different(format!("cannot open: {e}")),
    };
    let rendered = match render(&fs, dir, &AppSource::default(), &RenderOptions::default()) {
        Ok(r) => r,
        Err(e) => return Outcome::Different(format!("plumb error: {e}")),
    };
    let fallback = rendered
        .notes
        .iter()
        .find(|n| n.contains("kustomize binary"))
        .cloned();
    let got: Vec<Value> = rendered
        .objects
        .into_iter()
        .map(|r| {
            let mut v = r.object.into_value();
            canonical(&mut v);
            v
        })
        .collect();
    let gi: Vec<String> = got.iter().map(id).collect();
    let ei: Vec<String> = expected.iter().map(id).collect();
    if gi != ei {
        let first = gi
            .iter()
            .zip(&ei)
            .position(|(a, b)| a != b)
            .unwrap_or(gi.len().min(ei.len()));
        return Outcome::Different(format!(
            "objects or order differ ({} vs {}) from #{first}: plumb {:?} kubectl {:?}",
            gi.len(),
            ei.len(),
            gi.get(first..(first + 3).min(gi.len())).unwrap_or_default(),
            ei.get(first..(first + 3).min(ei.len())).unwrap_or_default(),
        ));
    }
    let mut msgs = Vec::new();
    for (g, e) in got.iter().zip(&expected) {
        let mut d = Vec::new();
        diff(g, e, "", &mut d);
        msgs.extend(d.into_iter().map(|l| format!("{} {l}", id(g))));
        if msgs.len() > 4 {
            break;
        }
    }
    if !msgs.is_empty() {
        return Outcome::Different(msgs.join("\n      "));
    }
    match fallback {
        Some(note) => Outcome::Fallback(note),
        None => Outcome::Native,
    }
}

#[test]
fn public_trees_match_kubectl_kustomize() {
    let kubectl = Command::new("kubectl")
        .args(["version", "--client"])
        .output();
    if !kubectl.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var_os("REQUIRE_KUBECTL").is_none(),
            "REQUIRE_KUBECTL is set and kubectl (the oracle) does not run"
        );
        eprintln!("kubectl not found: the public kustomize corpus was not checked");
        return;
    }
    let filter = std::env::var("CASE").unwrap_or_default();
    let dirs: Vec<(String, String)> = directories()
        .into_iter()
        .filter(|(p, d)| format!("{p}/{d}").contains(&filter))
        .collect();
    if filter.is_empty() {
        assert!(
            dirs.len() >= 250,
            "the corpus has {} directories",
            dirs.len()
        );
    }
    let outcomes = plumb_core::parallel::map_coarse(&dirs, |(p, d)| check(p, d));
    let (mut native, mut fallback, mut different, mut oracle_fails) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ((p, d), o) in dirs.iter().zip(outcomes) {
        let name = format!("{p}/{d}");
        match o {
            Outcome::Native => native.push(name),
            Outcome::Fallback(n) => fallback.push(format!("{name}: {n}")),
            Outcome::Different(m) => different.push(format!("{name}:\n      {m}")),
            Outcome::OracleFails(m) => oracle_fails.push(format!("{name}: {m}")),
        }
    }
    eprintln!("kubectl kustomize fails ({}):", oracle_fails.len());
    for l in &oracle_fails {
        eprintln!("  {l}");
    }
    eprintln!("rendered by the reported fall-back ({}):", fallback.len());
    for l in &fallback {
        eprintln!("  {l}");
    }
    eprintln!(
        "public kustomize corpus: {} directories; equal natively {}, equal by reported fall-back {}, different {}, oracle fails {}",
        dirs.len(),
        native.len(),
        fallback.len(),
        different.len(),
        oracle_fails.len()
    );
    assert!(
        different.is_empty(),
        "{} directories differ from kubectl kustomize:\n  {}",
        different.len(),
        different.join("\n  ")
    );
}
