//! The planner is pure: every module at the top of `src/` but the controller names no I/O
//! crate, no file, network, process or environment access, no clock, and not the runner.
//! (The runner, `run/`, and `controller.rs` do the I/O; tests are exempt.)

use std::path::Path;

/// Modules that do I/O, and files that are not modules of the planner.
const NOT_PURE: [&str; 4] = ["controller.rs", "lib.rs", "tests.rs", "purity.rs"];

/// What a pure module must not name.
const FORBIDDEN: [&str; 12] = [
    "plumb_cluster",
    "plumb_render",
    "tokio",
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "SystemTime::now",
    "Instant::now",
    "async fn",
    "crate::run",
    "crate::controller",
];

#[test]
fn planner_modules_do_no_io() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = Vec::new();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&src).expect("src/") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if !name.ends_with(".rs") || NOT_PURE.contains(&name.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        // The module's own code, before its tests.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for word in FORBIDDEN.iter().filter(|w| line.contains(**w)) {
                found.push(format!("{name}:{}: {word}", n + 1));
            }
        }
        checked.push(name);
    }
    assert!(checked.len() >= 10, "only {checked:?}");
    assert!(found.is_empty(), "I/O in pure modules: {found:#?}");
}
