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
rm -f /tmp/plumb-bench-ratios
for i in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o /tmp/plumb-bench-time env PLUMB_TIMINGS=1 "$bin" diff --desired "$data/desired" --live "$data/live" >/dev/null 2>/tmp/plumb-bench-err || [ $? -eq 1 ]
  read -r secs kb < <(tail -n 1 /tmp/plumb-bench-time)
  timings=$(grep '^timings:' /tmp/plumb-bench-err)
  parse=$(sed -E 's/.*parse ([0-9.]+) ms.*/\1/' <<<"$timings")
  total=$(sed -E 's/.*total ([0-9.]+) ms.*/\1/' <<<"$timings")
  echo "$secs $parse $total" >>/tmp/plumb-bench-ratios
  awk -v s="$secs" -v kb="$kb" -v n="$n" -v t="$timings" -v p="$parse" -v tot="$total" 'BEGIN { printf "run: wall %.3f s, %.0f objects/s, peak RSS %.0f MB | %s | diff/parse %.2fx (wall/parse %.2fx)\n", s, n/s, kb/1024, t, tot/p, s*1000/p }'
done
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }'; }
w=$(awk '{ print $1 }' /tmp/plumb-bench-ratios | median)
r=$(awk '{ print $3 / $2 }' /tmp/plumb-bench-ratios | median)
rw=$(awk '{ print $1 * 1000 / $2 }' /tmp/plumb-bench-ratios | median)
echo "median of $runs runs: wall $w s; diff/parse ${r}x, wall/parse ${rw}x"
rm -f /tmp/plumb-bench-ratios
