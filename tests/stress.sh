#!/usr/bin/env bash
# Runs the test suite N times under CPU load, to catch tests that depend on timing.
#
#   tests/stress.sh [N] [cargo test arguments...]   # default: 5 runs of `cargo test --all`
#   tests/stress.sh 3 -p plumb-cluster              # 3 runs of one crate's tests
#
# Builds once, starts one test bed (testbed/up.sh --kcm) for all runs, loads the CPUs
# (`stress-ng --cpu $STRESS_CPUS`, default 4; installed with apt-get when missing and
# possible, else as many shell busy loops), then runs `cargo test` N times with
# REQUIRE_K8S_TESTBED=1. Prints each run's result and duration and a summary line; exits 1
# when a run failed, 2 when it could not start. The load and the test bed are stopped
# however it ends. Logs: $STRESS_LOG_DIR (default a new directory under $TMPDIR), one per run.
# As .ci/run, it uses helm when PLUMB_HELM is set and kubectl when installed.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=5
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  RUNS=$1
  shift
fi
[ "$RUNS" -ge 1 ] || { echo "stress: N must be at least 1" >&2; exit 2; }
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(--all)
CPUS=${STRESS_CPUS:-4}
LOG_DIR=${STRESS_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/plumb-stress.XXXXXX")}
mkdir -p "$LOG_DIR"

log() { printf '[stress %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

LOAD_PIDS=()
TESTBED_STARTED=0
cleanup() {
  local pid
  for pid in "${LOAD_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${LOAD_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ "$TESTBED_STARTED" = 1 ]; then
    testbed/down.sh >/dev/null 2>&1 || log "testbed/down.sh failed (dir $TESTBED_DIR)"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export CARGO_TERM_COLOR=never REQUIRE_K8S_TESTBED=1
command -v kubectl >/dev/null 2>&1 && export REQUIRE_KUBECTL=1
[ -n "${PLUMB_HELM:-}" ] && export REQUIRE_HELM=1

# Build once (the runs below then only run the tests).
log "building the tests: cargo test ${ARGS[*]} --no-run"
if ! cargo test "${ARGS[@]}" --locked --no-run >"$LOG_DIR/build.log" 2>&1; then
  tail -n 30 "$LOG_DIR/build.log" >&2
  log "the build failed (log: $LOG_DIR/build.log)"
  exit 2
fi

testbed/build.sh >/dev/null || { log "testbed/build.sh failed"; exit 2; }
eval "$(testbed/up.sh --kcm)"
TESTBED_STARTED=1

if ! command -v stress-ng >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
  && [ "$(id -u)" = 0 ]; then
  log "installing stress-ng (apt-get)"
  apt-get install -y -q stress-ng >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q stress-ng >/dev/null 2>&1; } \
    || log "could not install stress-ng; using busy loops"
fi
if command -v stress-ng >/dev/null 2>&1; then
  stress-ng --cpu "$CPUS" --timeout 0 --quiet &
  LOAD_PIDS+=($!)
  LOAD="stress-ng --cpu $CPUS"
else
  for _ in $(seq "$CPUS"); do
    bash -c 'while :; do :; done' &
    LOAD_PIDS+=($!)
  done
  LOAD="$CPUS busy loops"
fi
log "load: $LOAD; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"

PASSED=0
FAILED_RUNS=()
TOTAL_START=$(date +%s)
for i in $(seq "$RUNS"); do
  start=$(date +%s)
  run_log="$LOG_DIR/run-$i.log"
  # --no-fail-fast: every run covers the whole suite, not just up to its first failure.
  if cargo test "${ARGS[@]}" --locked --no-fail-fast >"$run_log" 2>&1; then
    result=pass
    PASSED=$((PASSED + 1))
  else
    result=FAIL
    FAILED_RUNS+=("$i")
  fi
  took=$(($(date +%s) - start))
  echo "run $i/$RUNS: $result in ${took}s (load average $(cut -d' ' -f1-3 /proc/loadavg); log $run_log)"
  if [ "$result" = FAIL ]; then
    grep -E '^test .* FAILED$|^error: test failed|overflowed its stack|fatal runtime error' "$run_log" \
      | head -n 20 | sed 's/^/  /' || true
  fi
done
TOTAL=$(($(date +%s) - TOTAL_START))
echo "stress: $PASSED/$RUNS runs passed of cargo test ${ARGS[*]} under $LOAD in ${TOTAL}s${FAILED_RUNS[*]:+ (failed: ${FAILED_RUNS[*]})}; logs in $LOG_DIR"
[ "$PASSED" -eq "$RUNS" ]
