#!/usr/bin/env bash
# Benchmark: the ApplicationSet controller's steady state on a real API server (the test bed):
# SETS ApplicationSets of APPS Applications each (a list generator of APPS elements; default
# 50 × 100 = 5,000 Applications), each regenerated every REQUEUE seconds.
#
#   bench/appset-controller.sh [SETS] [APPS] [WINDOW_S] [REQUEUE_S]
#                                   # defaults: 50, 100, 60 s, 15 s
#
# 1. SETS ApplicationSets are applied; `plumb controller --interval 3600` starts and creates
#    their Applications (timed until all SETS × APPS exist). The Applications have no automated
#    sync and refresh once an hour: what is measured is the ApplicationSet controller.
# 2. Once every Application has been reconciled once (the start's refreshes), the controller
#    process is sampled over WINDOW_S seconds: CPU = (utime+stime) delta / wall from
#    /proc/PID/stat, memory VmRSS/VmHWM. In the window every ApplicationSet is generated again
#    (templates over its elements, a plan against its stored Applications, nothing to write) at
#    least WINDOW_S / REQUEUE_S times: the figure per regeneration is CPU / regenerations.
#
# There is no anchor beside it: Argo CD's ApplicationSet controller is not built here.
# Uses the test bed of $TESTBED_DIR/$KUBECONFIG when set; otherwise starts one and stops it at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
sets=${1:-50}
apps=${2:-100}
window=${3:-60}
requeue=${4:-15}

work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-appset-bench.XXXXXX")
started_testbed=0
pid=""
cleanup() {
  local rc=$?
  set +e
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ "$started_testbed" = 1 ] && "$root/testbed/down.sh" >/dev/null 2>&1
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${TESTBED_DIR:-}" ]; then
  echo "starting a test bed (testbed/up.sh) ..." >&2
  eval "$(testbed/up.sh)"
  started_testbed=1
fi
export KUBECONFIG TESTBED_DIR
if [ -n "${PLUMB_BIN:-}" ]; then
  plumb=$PLUMB_BIN
else
  cargo build -q --release -p plumb-cli
  plumb="$root/target/release/plumb"
fi

ns="bench-appsets-$$"
repo="$work/repo"
mkdir -p "$repo/app"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n' >"$repo/app/cm.yaml"
git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@plumb.invalid commit -qm bench
python3 - "$sets" "$apps" "$ns" "$repo" "$work/sets.json" <<'EOF'
import json, sys
sets, apps, ns, repo, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
items = []
for s in range(sets):
    items.append({"apiVersion": "plumb.dev/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": f"set-{s:03d}", "namespace": ns},
        "spec": {"goTemplate": True,
            "generators": [{"list": {"elements": [{"env": f"e{a:03d}", "tier": "web"} for a in range(apps)]}}],
            "template": {"metadata": {"name": f"s{s:03d}-{{{{.env}}}}", "labels": {"tier": "{{.tier}}"}},
                "spec": {"project": "default",
                    "source": {"repoURL": f"file://{repo}", "path": "app", "targetRevision": "HEAD"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "{{.env}}"}}}}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(out, "w"))
EOF
kubectl apply --server-side -f deploy/crd.yaml >/dev/null
kubectl wait --for=condition=Established crd/applicationsets.plumb.dev crd/applications.plumb.dev --timeout=60s >/dev/null
kubectl create namespace "$ns" >/dev/null
kubectl apply --server-side -f "$work/sets.json" >/dev/null
total=$((sets * apps))
echo "cores: $(nproc), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "applied $sets ApplicationSets of $apps Applications each ($total) in namespace $ns"

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1==k {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)
log="$work/controller.log"
t0=$(date +%s.%N)
"$plumb" controller -N "$ns" --lease-namespace "$ns" --interval 3600 --jitter 0 \
  --applicationset-requeue "$requeue" 2>"$log" &
pid=$!
count() { kubectl get applications.plumb.dev -n "$ns" --no-headers 2>/dev/null | wc -l; }
while [ "$(count)" -lt "$total" ]; do
  kill -0 "$pid" 2>/dev/null || { tail -5 "$log" >&2; exit 1; }
  sleep 1
done
t1=$(date +%s.%N)
echo "all $total Applications created $(python3 -c "print(round($t1-$t0,1))") s after the controller started"
while [ "$(grep -c '"trigger":"app"' "$log" || true)" -lt "$total" ]; do
  kill -0 "$pid" 2>/dev/null || { tail -5 "$log" >&2; exit 1; }
  sleep 1
done
t2=$(date +%s.%N)
echo "all $total Applications reconciled once $(python3 -c "print(round($t2-$t0,1))") s after start"
errors=$(grep -c '"error":"' "$log" || true)
c0=$(cpu_ticks "$pid"); w0=$(date +%s.%N)
sleep "$window"
c1=$(cpu_ticks "$pid"); w1=$(date +%s.%N)
rss=$(status_kb "$pid" VmRSS); hwm=$(status_kb "$pid" VmHWM)
python3 - "$c0" "$c1" "$w0" "$w1" "$hz" "$sets" "$window" "$requeue" "$rss" "$hwm" "$errors" <<'EOF'
import sys
c0, c1, w0, w1, hz, sets, window, requeue, rss, hwm, errors = sys.argv[1:]
cpu = (float(c1) - float(c0)) / float(hz)
wall = float(w1) - float(w0)
regens = int(sets) * (int(window) // int(requeue))
print(f"steady state over {wall:.0f} s: {cpu:.2f} CPU s, {cpu / wall:.3f} cores; "
      f"at least {regens} regenerations: {cpu * 1000 / regens:.1f} ms CPU each; "
      f"RSS {int(rss) // 1024} MB (peak {int(hwm) // 1024} MB); errors logged: {errors}")
EOF
