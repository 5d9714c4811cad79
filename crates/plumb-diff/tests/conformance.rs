//! Argo CD parity: every case of `../shared/conformance/argo-diff/cases.yaml`, read in
//! place (never copied into this repository), must reach Argo CD's verdict.
//! Set `PLUMB_SHARED_DIR` to point elsewhere.

use plumb_core::argo::IgnoreRule;
use plumb_diff::ignore::{DEFAULT_JQ_TIMEOUT, IgnoreNormalizer};
use plumb_diff::{DiffConfig, diff, normalize_target_for_sync, text};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn shared_dir() -> PathBuf {
    match std::env::var_os("PLUMB_SHARED_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

#[derive(Deserialize)]
struct Cases {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Case {
    name: String,
    kind: String,
    desired: String,
    live: String,
    #[serde(default)]
    ignore_aggregated_roles: bool,
    #[serde(default)]
    ignore_differences: Vec<IgnoreRule>,
    expect: Expect,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Expect {
    modified: Option<bool>,
    #[serde(default)]
    argocd_output_lines_once: Vec<String>,
    #[serde(default)]
    applied: serde_json::Map<String, Value>,
    #[serde(default)]
    absent: Vec<String>,
}

fn load(dir: &Path, rel: &str) -> Value {
    let path = dir.join(rel);
    let ms = plumb_render::load_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ms.len(), 1, "{rel}: one object per fixture");
    ms.into_iter()
        .next()
        .map(|m| m.object)
        .unwrap_or(Value::Null)
}

fn run_case(dir: &Path, c: &Case) -> Result<(), String> {
    let desired = load(dir, &c.desired);
    let live = load(dir, &c.live);
    let rules = c
        .ignore_differences
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("ignoreDifferences[{i}]"), r.clone()));
    let cfg = DiffConfig {
        ignore: IgnoreNormalizer::new(rules, DEFAULT_JQ_TIMEOUT).map_err(|e| e.to_string())?,
        ignore_aggregated_roles: c.ignore_aggregated_roles,
        ..Default::default()
    };
    match c.kind.as_str() {
        "diff" => {
            let r = diff(Some(&desired), Some(&live), &cfg).map_err(|e| e.to_string())?;
            let out = text::normal_diff(
                &text::to_yaml(&r.normalized_live),
                &text::to_yaml(&r.predicted_live),
            );
            if let Some(m) = c.expect.modified
                && m != r.modified
            {
                return Err(format!("modified: want {m}, got {}\n{out}", r.modified));
            }
            for line in &c.expect.argocd_output_lines_once {
                let n = out.lines().filter(|l| l == line).count();
                if n != 1 {
                    return Err(format!("line {line:?} appears {n} times in:\n{out}"));
                }
            }
            Ok(())
        }
        "respect-ignore-differences" => {
            let applied = normalize_target_for_sync(&desired, Some(&live), &cfg)
                .map_err(|e| e.to_string())?;
            for (ptr, want) in &c.expect.applied {
                let got = match ptr.strip_suffix("/length") {
                    Some(list) => applied
                        .pointer(list)
                        .and_then(Value::as_array)
                        .map(|a| Value::from(a.len())),
                    None => applied.pointer(ptr).cloned(),
                };
                if got.as_ref() != Some(want) {
                    return Err(format!("{ptr}: want {want}, got {got:?}"));
                }
            }
            for ptr in &c.expect.absent {
                if applied.pointer(ptr).is_some() {
                    return Err(format!("{ptr} must be absent"));
                }
            }
            Ok(())
        }
        other => Err(format!("unknown case kind {other}")),
    }
}

#[test]
fn argo_cd_conformance_cases() {
    let dir = shared_dir().join("conformance/argo-diff");
    let text = std::fs::read_to_string(dir.join("cases.yaml"))
        .unwrap_or_else(|e| panic!("cannot read {}: {e} (set PLUMB_SHARED_DIR)", dir.display()));
    let cases: Cases = serde_saphyr::from_str(&text).expect("cases.yaml parses");
    assert!(
        cases.cases.len() >= 25,
        "expected the full suite, found {}",
        cases.cases.len()
    );
    let failures: Vec<String> = cases
        .cases
        .iter()
        .filter_map(|c| run_case(&dir, c).err().map(|e| format!("{}: {e}", c.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.cases.len(),
        failures.join("\n\n")
    );
}
