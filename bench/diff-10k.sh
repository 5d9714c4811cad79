#!/usr/bin/env bash
# Benchmark: `plumb diff` on 10,000 Deployment pairs (1% modified) from YAML files on disk.
# Prints wall time, objects/s, peak RSS (GNU time) and, from the same run, the time spent
# merely parsing the inputs (PLUMB_TIMINGS). Usage: bench/diff-10k.sh [N] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
runs=${2:-5}
data=${PLUMB_BENCH_DIR:-${TMPDIR:-/tmp}/plumb-bench-$n}
[ -d "$data/live" ] || python3 bench/gen.py "$data" "$n"
cargo build --release -q -p plumb-cli
bin=target/release/plumb
du -sh "$data/desired" "$data/live" | sed 's/^/input: /'
for i in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o /tmp/plumb-bench-time env PLUMB_TIMINGS=1 "$bin" diff --desired "$data/desired" --live "$data/live" >/dev/null 2>/tmp/plumb-bench-err || [ $? -eq 1 ]
  read -r secs kb < <(tail -n 1 /tmp/plumb-bench-time)
  timings=$(grep '^timings:' /tmp/plumb-bench-err)
  awk -v s="$secs" -v kb="$kb" -v n="$n" -v t="$timings" 'BEGIN { printf "run: wall %.3f s, %.0f objects/s, peak RSS %.0f MB | %s\n", s, n/s, kb/1024, t }'
done
