//! Every fixture under `tests/fixtures/` is diagnosed and compared with its golden files in
//! `tests/snapshots/` (`<name>.json`, and `<name>.txt` / `<name>.md` for the text and markdown
//! renderings). Hand-rolled snapshots: `UPDATE_SNAPSHOTS=1 cargo test` rewrites them; a
//! missing snapshot is written and the test fails, so a new one is always looked at.
//!
//! A fixture is one YAML document: `now`, `app` (with status), `desired` (objects with
//! `origins`: pointer → `file:line`), `live`, `context`, `kustomizations`, and `expect`
//! (verdict, each finding's `cause` as `type name`, its fix types, and `neverBlamed` names).
//! `ResourceDiff`s come from plumb-diff's own `compare`.

use plumb_core::origin::{Origin, Origins};
use plumb_diff::DiffConfig;
use plumb_diff::compare::{CompareContext, Desired, compare};
use plumb_doctor::{Inputs, Report, diagnose};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn origins(v: Option<&Value>) -> Origins {
    let mut out = Origins::new();
    if let Some(Value::Object(m)) = v {
        for (ptr, at) in m {
            let (file, line) = at.as_str().unwrap().rsplit_once(':').unwrap();
            out.insert(
                ptr,
                Origin {
                    file: file.into(),
                    line: line.parse().unwrap(),
                    column: 1,
                },
            );
        }
    }
    out
}

fn list(v: &Value, k: &str) -> Vec<Value> {
    v.get(k)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn run_fixture(path: &Path) -> (Report, Value) {
    let f = load(path);
    let desired: Vec<Desired> = list(&f, "desired")
        .into_iter()
        .map(|d| Desired {
            object: d["object"].clone(),
            origin: "fixture".into(),
            origins: origins(d.get("origins")),
        })
        .collect();
    let live = list(&f, "live");
    let config = DiffConfig::default();
    let ctx = CompareContext {
        app: None,
        settings: None,
        config: &config,
        keep_equal: false,
        server_side: None,
    };
    let diffs = compare(desired, live.clone(), &ctx).unwrap();
    let context = list(&f, "context");
    let kustomizations: Vec<(String, Value)> = f
        .get("kustomizations")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let now = plumb_core::time::parse_rfc3339(f["now"].as_str().unwrap()).unwrap();
    let report = diagnose(&Inputs {
        app: &f["app"],
        diffs: &diffs,
        live: &live,
        context: &context,
        kustomizations: &kustomizations,
        now,
    });
    (report, f["expect"].clone())
}

fn snapshot(name: &str, ext: &str, actual: &str) -> Result<(), String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.{ext}"));
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    match std::fs::read_to_string(&path) {
        Ok(expected) if expected == actual => Ok(()),
        Ok(_) if update => {
            std::fs::write(&path, actual).unwrap();
            Ok(())
        }
        Ok(expected) => Err(format!(
            "{} differs (UPDATE_SNAPSHOTS=1 to accept)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        )),
        Err(_) => {
            std::fs::write(&path, actual).unwrap();
            if update {
                Ok(())
            } else {
                Err(format!(
                    "{} written: review it and run again",
                    path.display()
                ))
            }
        }
    }
}

fn check_expectations(name: &str, r: &Report, expect: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    if let Some(v) = expect.get("verdict").and_then(Value::as_str)
        && r.verdict.as_str() != v
    {
        errs.push(format!("{name}: verdict {} != {v}", r.verdict.as_str()));
    }
    if let Some(Value::Array(causes)) = expect.get("causes") {
        let got: Vec<String> = r
            .findings
            .iter()
            .map(|f| format!("{} {}", f.cause.kind.as_str(), f.cause.name))
            .collect();
        let want: Vec<String> = causes
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        if got != want {
            errs.push(format!("{name}: causes {got:?} != {want:?}"));
        }
    }
    if let Some(Value::Array(fixes)) = expect.get("fixes") {
        let got: Vec<Vec<&str>> = r
            .findings
            .iter()
            .map(|f| f.fixes.iter().map(|x| x.type_name()).collect())
            .collect();
        let want: Vec<Vec<&str>> = fixes
            .iter()
            .map(|l| {
                l.as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .collect()
            })
            .collect();
        if got != want {
            errs.push(format!("{name}: fixes {got:?} != {want:?}"));
        }
    }
    if let Some(Value::Array(never)) = expect.get("neverBlamed") {
        let json = serde_json::to_string(&r.to_json()).unwrap();
        for n in never.iter().filter_map(Value::as_str) {
            if json.contains(n) {
                errs.push(format!("{name}: {n} is blamed (it does not match)"));
            }
        }
    }
    if let Some(Value::Array(never)) = expect.get("neverPrinted") {
        let all = format!("{}{}{}", r.to_json(), r.to_text(), r.to_markdown());
        for n in never.iter().filter_map(Value::as_str) {
            if all.contains(n) {
                errs.push(format!("{name}: {n} is printed"));
            }
        }
    }
    errs
}

#[test]
fn fixtures_match_expectations_and_snapshots() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 10, "fixtures missing");
    let mut errs = Vec::new();
    for p in &paths {
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        let (report, expect) = run_fixture(p);
        errs.extend(check_expectations(&name, &report, &expect));
        let json = serde_json::to_string_pretty(&report.to_json()).unwrap() + "\n";
        errs.extend(snapshot(&name, "json", &json).err());
        errs.extend(snapshot(&name, "txt", &report.to_text()).err());
        errs.extend(snapshot(&name, "md", &report.to_markdown()).err());
    }
    assert!(errs.is_empty(), "{}", errs.join("\n\n"));
}

/// The seed's incident, checked field by field (the JSON shape of issue 6 item 6).
#[test]
fn seed_webhook_fight() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let (r, _) = run_fixture(&dir.join("pd001_webhook_fight.yaml"));
    let j = r.to_json();
    assert_eq!(j["app"], "payments-prod");
    assert_eq!(j["verdict"], "loop");
    assert_eq!(j["loop"]["syncs"], 5);
    assert_eq!(j["loop"]["revision"], "b5e2be1");
    let f = &j["findings"][0];
    assert_eq!(
        f["resource"],
        serde_json::json!({"group": "apps", "kind": "Deployment", "namespace": "pay-prod", "name": "payments-api"})
    );
    assert_eq!(
        f["path"],
        "/spec/template/spec/containers/0/imagePullPolicy"
    );
    assert_eq!(f["desired"], "IfNotPresent");
    assert_eq!(f["live"], "Always");
    assert_eq!(f["cause"]["type"], "mutating-webhook");
    assert_eq!(f["cause"]["name"], "platform-policy-mutate");
    assert_eq!(f["declaredAt"]["file"], "overlays/prod/pull-policy.yaml");
    assert_eq!(f["declaredAt"]["line"], 10);
    let fixes = f["fixes"].as_array().unwrap();
    assert_eq!(fixes[0]["type"], "stop-declaring");
    assert_eq!(fixes[0]["action"], "delete-file");
    assert_eq!(fixes[0]["file"], "overlays/prod/pull-policy.yaml");
    assert_eq!(
        fixes[0]["kustomization"]["file"],
        "overlays/prod/kustomization.yaml"
    );
    assert_eq!(fixes[0]["kustomization"]["field"], "patches");
    assert_eq!(fixes[1]["type"], "ignore-differences");
    assert_eq!(
        fixes[1]["rule"]["jsonPointers"],
        serde_json::json!(["/spec/template/spec/containers/0/imagePullPolicy"])
    );
    assert!(
        fixes[1]["yaml"]
            .as_str()
            .unwrap()
            .contains("RespectIgnoreDifferences=true")
    );
    assert_eq!(fixes[2]["type"], "server-side-diff");
}
