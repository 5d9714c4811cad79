#!/usr/bin/env bash
# Benchmark: the native kustomize renderer at growing sizes. For each N (default 2,000, 8,000,
# 20,000 resources) it generates, in a temporary directory, a base of N/4 units (Deployment,
# Service, ConfigMap, ServiceAccount; the Deployment refers to the other three by name) and an
# overlay with namespace, namePrefix, labels with selectors, an image override and one JSON 6902
# patch per Deployment (targeted by name). For each it prints the build time of the overlay
# (`kustomize::build`, as `plumb render`/`diff`/the controller call it: objects plus the origin
# of every scalar), the process's wall time, CPU time and peak RSS, and, from the same run, the
# time to merely parse the same YAML (the base's resource files read as a directory source, with
# origins); then `plumb render`'s whole-process wall time at each size, and `kubectl kustomize`
# on the 2,000 overlay beside both (the in-process build and the CLI) for the ratios.
# Usage: bench/render-scale.sh [SIZES] [RUNS]   e.g. bench/render-scale.sh "2000 8000 20000" 3
# PLUMB_BENCH_SKIP_KUBECTL=1 skips kubectl (10-30 s a run at 2,000); KUBECTL_PAIRS (default 3)
# and PAIR_REST (seconds, default 1) set the pairing; RENDER_SCALE_BIN runs another build of
# the example (e.g. an older commit's); PLUMB_BIN another `plumb` for the whole-process lines
# (e.g. PLUMB_BIN=$(tools/pgo-build.sh), the build with profile-guided optimisation).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-"2000 8000 20000"}
runs=${2:-3}
root=$(mktemp -d "${TMPDIR:-/tmp}/plumb-render-scale.XXXXXX")
trap 'rm -rf "$root"' EXIT
if [ -z "${RENDER_SCALE_BIN:-}" ]; then
  cargo build --release -q -p plumb-render --example render_scale
fi
# The CLI as users run it (`plumb render`, the whole process: start, read, build, print).
if [ -z "${PLUMB_BIN:-}" ]; then
  cargo build --release -q -p plumb-cli
fi
plumb_bin=${PLUMB_BIN:-$PWD/target/release/plumb}
bin=${RENDER_SCALE_BIN:-$PWD/target/release/examples/render_scale}
echo "cores: $(nproc), load average: $(cut -d' ' -f1-3 /proc/loadavg)"

gen() { # gen DIR N
  python3 bench/kustomize-overlay.py "$1" "$2" --namespace prod
}

median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.4f", v[int((NR + 1) / 2)] }'; }
# run MODE PATH DIR: medians over $runs runs of: in-process ms, wall s, peak RSS MB, CPU s; objects.
run() {
  rm -f "$root/times"
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M %U %S" -o "$root/time" "$bin" "$3" "$1" "$2" >"$root/out"
    read -r _ objects _ _ _ ms <"$root/out"
    read -r wall kb user sys < <(tail -n 1 "$root/time")
    echo "$ms $wall $kb $user $sys $objects" >>"$root/times"
  done
  local col
  for col in 1 2; do awk -v c=$col '{ print $c }' "$root/times" | median; printf ' '; done
  awk '{ print $3 / 1024 }' "$root/times" | median; printf ' '
  awk '{ print $4 + $5 }' "$root/times" | median; printf ' '
  awk '{ print $6 }' "$root/times" | head -n 1
}

declare -A ms
for n in $sizes; do
  gen "$root/$n" "$n"
  read -r kms wall mb cpu objects < <(run kustomize overlay "$root/$n")
  read -r pms pwall pmb pcpu _ < <(run parse base/res "$root/$n")
  ms[$n]=$kms
  awk -v n="$n" -v o="$objects" -v k="$kms" -v w="$wall" -v m="$mb" -v c="$cpu" -v p="$pms" -v pm="$pmb" 'BEGIN {
    printf "N=%-6d %d objects: build %.0f ms (process: wall %.2f s, CPU %.2f s, peak RSS %.0f MB) | parse only %.0f ms (peak RSS %.0f MB) | build/parse %.2fx\n", n, o, k, w, c, m, p, pm, k / p }'
done
if [ -n "${ms[2000]:-}" ] && [ -n "${ms[8000]:-}" ]; then
  awk -v a="${ms[2000]}" -v b="${ms[8000]}" 'BEGIN { printf "8,000 / 2,000: %.2fx (linear: 4x)\n", b / a }'
fi
# wall CMD...: the command's wall seconds, to the microsecond (/usr/bin/time's %e is in
# hundredths, and cut, not rounded: a 18 ms run reads 0.01 s).
wall() {
  local t0=$EPOCHREALTIME
  "$@" >/dev/null
  local t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }'
}
# cli N: median wall seconds of `plumb render` on the N overlay, over $runs runs.
cli() {
  for _ in $(seq "$runs"); do
    wall "$plumb_bin" render --repo "$root/$1" --path overlay
  done | median
}
for n in $sizes; do
  printf 'plumb render (whole process) at %d: %.4f s\n' "$n" "$(cli "$n")"
done
if [ -n "${ms[2000]:-}" ] && [ -z "${PLUMB_BENCH_SKIP_KUBECTL:-}" ]; then
  # Whole processes in turn, the ratio taken pair by pair (bench/pair.py), each run after a
  # rest, so that both start from the same state (not plumb always after 20 s of kubectl).
  pairs=${KUBECTL_PAIRS:-3}
  rest=${PAIR_REST:-1}
  echo "plumb render against kubectl kustomize on the 2,000 overlay: $pairs pairs in turn, ${rest} s of rest before each run"
  bench/pair.py -n "$pairs" --warmup 0 --rest "$rest" --vs "kubectl kustomize $root/2000/overlay" -- \
    "$plumb_bin" render --repo "$root/2000" --path overlay | tee "$root/pair"
  ksecs=$(awk '/^B:/ { b = 1 } b && /wall s/ { print $6; exit }' "$root/pair")
  awk -v k="$ksecs" -v p="${ms[2000]}" 'BEGIN {
    printf "kubectl kustomize at 2,000: %.2f s (median) | plumb build (in-process) %.0fx faster\n", k, k * 1000 / p }'
fi
