#!/usr/bin/env bash
# Builds the `plumb` binary with profile-guided optimisation (PGO) and prints its path.
#
# 1. An instrumented release build (target/pgo/gen) counts how often each branch and function
#    of plumb runs.
# 2. It renders every kustomization of the pinned public corpus (tests/kustomize-public: Argo
#    CD, cluster-api, kubebuilder, kubeflow, kustomize's examples, microservices-demo) and of
#    the kustomize corpus (tests/kustomize), each with and without `--show-origins`. These are
#    real projects' trees, not the benchmark's generated overlay.
# 3. llvm-profdata merges the counts, and a second release build (target/pgo/use) is optimised
#    with them: hot paths laid out together and inlined, cold ones moved aside.
#
# The output is the same as the plain release build's; only its speed differs (see
# docs/src/performance.md). Needs llvm-profdata that reads the raw profiles of rustc's LLVM:
# rustup's `llvm-tools` component, or Debian's llvm-19 (or newer). Two release builds: about
# 20 minutes on 2 cores.
#
# On Linux with glibc the binary is also linked statically, at a fixed address
# (`-Ctarget-feature=+crt-static -Crelocation-model=static`, for the target only: build
# scripts and proc macros stay as they are). No loader, no shared libraries to map and
# relocate at every start: `plumb --version` and a 2,000-resource render start about 0.4 ms
# sooner after a rest. glibc 2.34+ has its `files` and `dns` name lookups inside the C
# library, so host names resolve as before; NSS modules loaded at run time (mdns, ldap, sss)
# are not. PGO_STATIC=0 builds a dynamically linked binary instead.
# Usage: tools/pgo-build.sh            prints the optimised binary's path
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

host=$(rustc -vV | sed -n 's/^host: //p')
flags="" target_args=() out=release
if [ "${PGO_STATIC:-1}" != 0 ] && [[ $host == *-linux-gnu ]]; then
  flags="-Ctarget-feature=+crt-static -Crelocation-model=static"
  target_args=(--target "$host")
  out=$host/release
fi

find_profdata() {
  local sysroot c
  sysroot=$(rustc --print sysroot)
  for c in "$sysroot"/lib/rustlib/*/bin/llvm-profdata \
    $(ls -d /usr/lib/llvm-*/bin/llvm-profdata 2>/dev/null | sort -t- -k2 -n -r); do
    if [ -x "$c" ]; then
      echo "$c"
      return
    fi
  done
  echo "tools/pgo-build.sh: no llvm-profdata found (rustup component add llvm-tools, or apt-get install llvm-19)" >&2
  exit 2
}
profdata=$(find_profdata)

raw=$root/target/pgo/raw
rm -rf "$raw"
mkdir -p "$raw"
echo "pgo: instrumented build" >&2
RUSTFLAGS="-Cprofile-generate=$raw $flags" CARGO_TARGET_DIR=$root/target/pgo/gen \
  cargo build --release --locked -q -p plumb-cli "${target_args[@]}"
gen=$root/target/pgo/gen/$out/plumb

echo "pgo: training on the pinned corpora" >&2
n=0 ok=0
render() { # render REPO PATH: with and without origins; a refusal (exit 2) still counts paths
  local code=0
  "$gen" render --repo "$1" --path "$2" >/dev/null 2>&1 || code=$?
  "$gen" render --repo "$1" --path "$2" --show-origins >/dev/null 2>&1 || code=$?
  n=$((n + 1))
  if [ "$code" = 0 ]; then ok=$((ok + 1)); fi
}
for project in "$root"/tests/kustomize-public/*/; do
  while IFS= read -r file; do
    dir=$(dirname "$file")
    rel=${dir#"$project"}
    render "$project" "${rel:-.}"
  done < <(find "$project" \( -name kustomization.yaml -o -name kustomization.yml -o -name Kustomization \) | sort)
done
for case in "$root"/tests/kustomize/*/; do
  case=${case%/}
  render "$root/tests/kustomize" "$(basename "$case")"
done
echo "pgo: $ok of $n kustomizations rendered (the others refused, as plumb refuses them)" >&2
if [ "$ok" = 0 ]; then
  # A profile of nothing but refusals would steer the optimiser wrong, and quietly.
  echo "tools/pgo-build.sh: the instrumented plumb rendered none of the $n kustomizations" >&2
  exit 2
fi

"$profdata" merge -o "$root/target/pgo/plumb.profdata" "$raw"/*.profraw
echo "pgo: optimised build" >&2
RUSTFLAGS="-Cprofile-use=$root/target/pgo/plumb.profdata $flags" CARGO_TARGET_DIR=$root/target/pgo/use \
  cargo build --release --locked -q -p plumb-cli "${target_args[@]}"
echo "$root/target/pgo/use/$out/plumb"
