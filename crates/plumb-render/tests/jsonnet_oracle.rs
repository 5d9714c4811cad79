//! plumb's Jsonnet evaluation against go-jsonnet, the implementation Argo CD's repo server
//! links: every program of `tests/jsonnet/` is evaluated by
//! [`plumb_render::jsonnet::evaluate`] and by go-jsonnet's `jsonnet` command with the same
//! search path (`-J`), external variables (`--ext-str`/`--ext-code`) and top-level arguments
//! (`--tla-str`/`--tla-code`), and the two JSON values must be equal; a program marked to fail
//! must fail in both.
//!
//! A program's first line is a comment holding its settings as JSON: the
//! `spec.source.directory.jsonnet` block (`libs`, `extVars`, `tlas`) and `"fails": true` for
//! the error cases. The corpus directory is the repository and its root the source path, so
//! the search path is Argo CD's: the source directory, then the `libs`.
//!
//! `jsonnet` is found through `PLUMB_JSONNET` (the binary's path, e.g.
//! `PLUMB_JSONNET="$(testbed/build-jsonnet.sh)/jsonnet"`). Without it the test prints `SKIP`
//! and passes, unless `REQUIRE_JSONNET=1`, which makes a missing binary a failure.
//!
//! Differences go-jsonnet and jrsonnet are known to have are listed in the book
//! (`docs/src/concepts/sources.md`, "Jsonnet"), each with the program here that shows it:
//! [`KNOWN_DIFFERENCES`] names those programs, whose outputs must *differ* (so a fix upstream
//! is noticed and the entry removed).

use plumb_core::argo::JsonnetSource;
use plumb_render::source::open_source;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Programs whose output go-jsonnet and jrsonnet are known to disagree on (the book lists
/// each with the reason).
const KNOWN_DIFFERENCES: &[&str] = &[
    "numbers_max_double.jsonnet",
    "numbers_tostring.jsonnet",
    "std_base64_unicode.jsonnet",
    "std_format_g_1e21.jsonnet",
    "std_manifest_yaml_keys.jsonnet",
    "std_manifest_yaml_multiline.jsonnet",
    "strings_escape_slash.jsonnet",
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/jsonnet")
}

fn jsonnet_binary() -> Option<PathBuf> {
    match std::env::var_os("PLUMB_JSONNET").filter(|p| !p.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "PLUMB_JSONNET={} is not a file", p.display());
            Some(p)
        }
        None => {
            assert!(
                std::env::var("REQUIRE_JSONNET").as_deref() != Ok("1"),
                "REQUIRE_JSONNET=1 but PLUMB_JSONNET is not set: testbed/build-jsonnet.sh \
                 builds go-jsonnet's jsonnet"
            );
            None
        }
    }
}

/// A program's settings: its first line, `// {…}`.
fn settings(text: &str, name: &str) -> (JsonnetSource, bool) {
    let first = text.lines().next().unwrap_or("");
    let json = first
        .strip_prefix("//")
        .unwrap_or_else(|| panic!("{name}: the first line must be `// {{settings}}`"));
    let mut v: Value =
        serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{name}: settings: {e}"));
    let fails = v
        .as_object_mut()
        .and_then(|o| o.remove("fails"))
        .is_some_and(|f| f == Value::Bool(true));
    let s = serde_json::from_value(v).unwrap_or_else(|e| panic!("{name}: settings: {e}"));
    (s, fails)
}

/// go-jsonnet's output for `file`, with the flags Argo CD's settings stand for.
fn go_jsonnet(bin: &Path, dir: &Path, file: &str, s: &JsonnetSource) -> Result<String, String> {
    let mut cmd = Command::new(bin);
    cmd.current_dir(dir).arg("-J").arg(dir);
    for lib in &s.libs {
        cmd.arg("-J").arg(dir.join(lib));
    }
    for (flags, vars) in [
        (("--ext-str", "--ext-code"), &s.ext_vars),
        (("--tla-str", "--tla-code"), &s.tlas),
    ] {
        for v in vars {
            cmd.arg(if v.code { flags.1 } else { flags.0 })
                .arg(format!("{}={}", v.name, v.value));
        }
    }
    let out = cmd.arg(file).output().expect("run jsonnet");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).expect("UTF-8 output"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn plumb_evaluates_the_corpus_as_go_jsonnet_does() {
    let Some(bin) = jsonnet_binary() else {
        println!(
            "SKIP plumb_evaluates_the_corpus_as_go_jsonnet_does: PLUMB_JSONNET is not set \
             (testbed/build-jsonnet.sh builds go-jsonnet's jsonnet)"
        );
        return;
    };
    let dir = std::fs::canonicalize(corpus()).expect("tests/jsonnet");
    let fs = open_source(&dir, None).expect("open the corpus");
    let mut programs: Vec<String> = std::fs::read_dir(&dir)
        .expect("list tests/jsonnet")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".jsonnet"))
        .collect();
    programs.sort();
    assert!(
        programs.len() >= 20,
        "the corpus has {} programs",
        programs.len()
    );
    let (mut agree, mut failures) = (0, Vec::new());
    for name in &programs {
        let text = std::fs::read_to_string(dir.join(name)).expect("read");
        let (s, fails) = settings(&text, name);
        let ours =
            plumb_render::jsonnet::evaluate(fs.as_ref(), "", name, &s, Duration::from_secs(60));
        let theirs = go_jsonnet(&bin, &dir, name, &s);
        let known = KNOWN_DIFFERENCES.contains(&name.as_str());
        // Whether the two agree (equal JSON, or both fail where failing is expected), with
        // what to say when they do not.
        let (agreed, detail) = match (&ours, &theirs) {
            (Ok(a), Ok(b)) if fails => (false, format!("should fail, both evaluated it: {a}")),
            (Ok(a), Ok(b)) => {
                let parse = |t: &str| serde_json::from_str::<Value>(t).map_err(|e| e.to_string());
                match (parse(a), parse(b)) {
                    (Ok(x), Ok(y)) => (
                        x == y,
                        format!("outputs differ\n  plumb:      {x}\n  go-jsonnet: {y}"),
                    ),
                    (x, y) => (
                        false,
                        format!("unparsable JSON\n  plumb:      {x:?}\n  go-jsonnet: {y:?}"),
                    ),
                }
            }
            (Err(e), Err(_)) if fails => {
                let e = e.to_string();
                let one_line = !e.contains('\n') && e.starts_with(name.as_str());
                assert!(
                    one_line,
                    "{name}: plumb's error is not one line naming the file: {e}"
                );
                (true, String::new())
            }
            (Err(e), Err(g)) => (
                false,
                format!("both fail\n  plumb:      {e}\n  go-jsonnet: {g}"),
            ),
            (Ok(a), Err(g)) => (
                false,
                format!("only go-jsonnet fails\n  plumb:      {a}\n  go-jsonnet: {g}"),
            ),
            (Err(e), Ok(b)) => (
                false,
                format!("only plumb fails\n  plumb:      {e}\n  go-jsonnet: {b}"),
            ),
        };
        let verdict = match (agreed, known) {
            (true, false) | (false, true) => Ok(()),
            (true, true) => Err(format!(
                "{name}: listed as a known difference, but both agree now: remove it from \
                 KNOWN_DIFFERENCES and the book"
            )),
            (false, false) => Err(format!("{name}: {detail}")),
        };
        match verdict {
            Ok(()) if !known => agree += 1,
            Ok(()) => {}
            Err(f) => failures.push(f),
        }
    }
    println!(
        "jsonnet oracle: {} programs, {agree} agree ({} known differences)",
        programs.len(),
        KNOWN_DIFFERENCES.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
