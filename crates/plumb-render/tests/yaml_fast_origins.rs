//! The kustomize renderer's fast path (nodes with origins) against serde-saphyr on every
//! YAML file of the shared conformance fixtures and this repository's test data: where the
//! fast path takes a file, nodes, origins and document lines are identical.

mod yaml_common;

use std::path::{Path, PathBuf};

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "target" || n == ".git") {
                continue;
            }
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
}

#[test]
fn fixture_files_agree_with_origins() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for d in ["../shared", "crates", "testbed", "examples", "bench"] {
        yaml_files(&root.join(d), &mut files);
    }
    assert!(files.len() > 50, "found only {} YAML files", files.len());
    let (mut fast, mut total) = (0, 0);
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        total += 1;
        if yaml_common::check_tree(&text) {
            fast += 1;
        }
        // Each document alone too (other line numbers, no separators).
        for doc in yaml_common::split_documents(&text) {
            yaml_common::check_tree(doc);
        }
    }
    // Most fixture files are in the subset.
    assert!(fast * 2 > total, "fast path took {fast} of {total} files");
}
