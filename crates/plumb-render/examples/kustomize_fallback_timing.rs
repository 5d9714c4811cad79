//! Times plumb's fall-back to the kustomize binary on a git revision against
//! `kubectl kustomize` run directly on the same directory of the work tree.
//!
//! `cargo run --release -p plumb-render --example kustomize_fallback_timing -- REPO PATH [RUNS]`
//! (REPO a git work tree whose HEAD holds PATH, a kustomization plumb renders with the binary).

use plumb_core::argo::AppSource;
use plumb_render::render::{RenderOptions, render};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(repo), Some(path)) = (args.next(), args.next()) else {
        eprintln!("usage: kustomize_fallback_timing REPO PATH [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(3);
    let fs = plumb_render::source::GitSource::open(Path::new(&repo), Some("HEAD"))
        .unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..runs {
        let t = Instant::now();
        let r = render(&fs, &path, &AppSource::default(), &RenderOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let plumb = t.elapsed();
        let fallback = r.notes.iter().any(|n| n.contains("kustomize binary"));
        let t = Instant::now();
        let out = Command::new("kubectl")
            .arg("kustomize")
            .arg(Path::new(&repo).join(&path))
            .output()
            .expect("kubectl runs");
        assert!(out.status.success(), "kubectl kustomize failed");
        println!(
            "plumb render (git revision, fall-back {fallback}): {plumb:?}, {} objects; kubectl kustomize in place: {:?}",
            r.objects.len(),
            t.elapsed()
        );
    }
}
