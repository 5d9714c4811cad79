//! Argo CD's own Lua health checks, run by plumb: every `health.lua` of Argo CD's
//! `resource_customizations` on the inputs its `health_test.yaml` names, with the status and
//! message Argo CD's test expects.
//!
//! The corpus is pinned test data (`tests/argocd-lua/`, with Argo CD's LICENSE and a NOTICE
//! naming the commit; re-created by `tools/pin-argocd-lua.sh`). The scripts are loaded as a
//! `resource_customizations` directory ([`Customizations::from_dir`]) and each input is judged
//! by [`LuaRunner::health`], the path `plumb health` and the controller take for a user script.
//! As in Argo CD's `TestLuaHealthScript`, the script is found by the input's own group and kind
//! (an exact key before a wildcard one) and runs with the standard libraries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plumb_health::lua::LuaRunner;
use plumb_health::{Customizations, Health, HealthStatus, LuaLimits};
use serde_json::Value;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/argocd-lua/resource_customizations")
}

/// The file's first YAML document, as sigs.k8s.io/yaml reads it: a few inputs end in `---`, one
/// repeats a key (the last wins).
fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::LastWins,
    };
    let docs: Vec<Value> = serde_saphyr::from_str_multiple_with_options(&text, options)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    docs.into_iter().next().unwrap_or(Value::Null)
}

/// Every directory holding a `health.lua`, sorted.
fn script_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("corpus directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "health.lua") {
                out.push(dir.clone());
            }
        }
    }
    out.sort();
    out
}

/// A field read as Argo CD's test reads it (sigs.k8s.io/yaml: JSON's case-insensitive keys).
fn field<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v.as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

fn group_kind(obj: &Value) -> (String, String) {
    let api_version = obj["apiVersion"].as_str().unwrap_or("");
    let group = api_version
        .rsplit_once('/')
        .map_or("", |(group, _)| group)
        .to_owned();
    (group, obj["kind"].as_str().unwrap_or("").to_owned())
}

/// What went wrong with a case, coarsely: the start of plumb's message when plumb could not run
/// the script, else "different health".
fn category(got: &Health) -> String {
    let Some(rest) = got.message.split_once(" failed: ").map(|(_, r)| r) else {
        return "different health".into();
    };
    if rest.contains("'=' expected near 'continue'") || rest.contains("near '::'") {
        return "syntax error: goto or a label (Lua 5.1 has neither)".into();
    }
    let rest = rest.split_once(": ").map_or(rest, |(_, r)| r);
    rest.chars().take(60).collect()
}

#[test]
fn argo_cd_health_scripts_give_argo_cd_answers() {
    let root = corpus();
    let custom = Customizations::from_dir(&root).expect("the corpus loads");
    let runner = LuaRunner::new(custom, LuaLimits::default());
    let (mut cases, mut equal) = (0, 0);
    let mut failed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let dirs = script_dirs(&root);
    for dir in &dirs {
        let tests = yaml(&dir.join("health_test.yaml"));
        let name = dir.strip_prefix(&root).unwrap_or(dir).display().to_string();
        for test in field(&tests, "tests")
            .and_then(Value::as_array)
            .expect("tests: a list")
        {
            cases += 1;
            let input = field(test, "inputPath")
                .and_then(Value::as_str)
                .expect("inputPath");
            let want = field(test, "healthStatus").expect("healthStatus");
            let want = Health::new(
                field(want, "status")
                    .and_then(Value::as_str)
                    .expect("status")
                    .parse::<HealthStatus>()
                    .expect("a health status"),
                field(want, "message").and_then(Value::as_str).unwrap_or(""),
            );
            let obj = yaml(&dir.join(input));
            let (group, kind) = group_kind(&obj);
            let got = runner
                .health(&obj, &group, &kind)
                .unwrap_or_else(|| Health::new(HealthStatus::Unknown, "no script applies"));
            if got == want {
                equal += 1;
            } else {
                failed.entry(category(&got)).or_default().push(format!(
                    "{name}/{input}: want {} {:?}, got {} {:?}",
                    want.status, want.message, got.status, got.message
                ));
            }
        }
    }
    eprintln!(
        "{} scripts, {cases} cases: {equal} equal, {} not",
        dirs.len(),
        cases - equal
    );
    for (why, list) in &failed {
        eprintln!("{} × {why}", list.len());
        for line in list.iter().take(3) {
            eprintln!("    {line}");
        }
    }
    assert!(dirs.len() > 200 && cases > 1000, "the corpus is there");
    assert_eq!(equal, cases, "every case gives Argo CD's answer");
}
