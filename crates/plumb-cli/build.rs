//! Links `plumb` as a position-dependent executable on Linux with glibc (`-no-pie`).
//!
//! A position-independent `plumb` is relocated by the loader on every start: 24,600 relative
//! relocations, which write (and so copy) every page of `.data.rel.ro` before `main` runs. A
//! fixed-address executable has them resolved when it is linked (202 are left, all in the C
//! library's symbols). `plumb --version` starts in 0.74 ms instead of 0.99 ms, with 171 page
//! faults instead of 282; `plumb render` of 2,000 resources uses 9% less CPU. The code is still
//! compiled position-independent; only the executable's address is fixed, as in Go's default
//! builds of kubectl, helm and argocd. The heap, stacks and shared libraries keep their
//! randomised addresses.
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=plumb=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
