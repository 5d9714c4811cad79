#!/usr/bin/env bash
# Benchmark: `plumb controller` reconciling 1,000 Applications of 50 objects each on a real
# API server (the test bed), steady state, nothing to sync. Target: under one core and
# under 500 MB.
#
#   bench/controller-1k.sh [APPS] [OBJECTS] [WINDOW_S] [INTERVAL_S]
#                                   # defaults: 1000 apps, 50 objects, 75 s, 60 s refresh
#
# 1. One git repository holds the app: OBJECTS ConfigMaps (block YAML, ~0.5 KB each). APPS automated
#    Applications (CreateNamespace=true) each deploy it into their own namespace.
# 2. Initial sync: `plumb controller --once` syncs every app (timed; CPU, RSS printed).
# 3. Steady state: `plumb controller --interval INTERVAL_S --jitter 10` starts (watching
#    every kind, 50,000+ objects cached), reconciles every app once at start (timed), then
#    the script samples the process over WINDOW_S seconds of steady state in which every app
#    is refreshed (render from git, compare 50 objects from the watch cache, status write) at
#    least once: CPU = (utime+stime) delta / wall from /proc/PID/stat, memory = VmRSS and
#    VmHWM from /proc/PID/status. The default interval is a third of Argo CD's 180 s, so the
#    figure is three times the load of the default configuration.
#    PLUMB_BENCH_LOOPS=compare measures the steady state once more first, sync-loop recognition
#    off (`--loop-threshold 0`), and prints the two CPU figures (recognition is on by default).
#
# LUA=1: after that window, the same steady state again with Argo CD Lua health customizations on
# (`--resource-customizations`, four scripts in Argo CD's layout: one for every ConfigMap the apps
# deploy, one for Namespaces, two for kinds the bench has none of), measured the same way by a
# fresh controller, and both printed as CPU seconds (utime+stime) per window and per refresh, with
# the ratio: the figure a loaded machine does not distort, unlike wall time.
#
# KUSTOMIZE=1: the app is a kustomize overlay instead (bench/kustomize-overlay.py, the shape of
# bench/render-scale.sh scaled to OBJECTS: OBJECTS/4 units of Deployment, headless Service,
# ConfigMap and ServiceAccount referring to each other by name; namePrefix, labels with
# selectors, an image override and a JSON 6902 patch per Deployment), so each refresh runs the
# native kustomize build.
# PLUMB_BIN_BEFORE=path: the steady state is measured first with that build (e.g. an older commit's),
# then with this one, each a fresh controller over the same synced apps, and both CPU figures per
# refresh are printed with their ratio.
#
# Uses the test bed of $TESTBED_DIR/$KUBECONFIG when set; otherwise starts one (no controller
# manager) and stops it at exit. Builds plumb in release mode (PLUMB_BIN=path skips the build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

apps=${1:-1000}
objects=${2:-50}
window=${3:-75}
interval=${4:-60}
command -v python3 >/dev/null || { echo "controller-1k: needs python3" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-controller-1k.XXXXXX")
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
lua=${LUA:-0}
kustomize=${KUSTOMIZE:-0}
# A kustomize app is made of units of four objects (at least one, as the generator makes).
[ "$kustomize" = 1 ] && objects=$(( objects < 4 ? 4 : objects / 4 * 4 ))

# ---- the app and the Applications -----------------------------------------------
repo="$work/repo"
apps_ns="bench-apps-$$"
if [ "$kustomize" = 1 ]; then
  # The app: repo/base and the overlay repo/app (Services headless: 12,000 of them would
  # exhaust the test bed's service range).
  python3 bench/kustomize-overlay.py "$repo" "$objects" --headless --overlay app
fi
python3 - "$repo" "$objects" "$apps" "$apps_ns" "$work/apps.json" "$kustomize" <<'EOF'
import json, os, sys
repo, n, apps, ns, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
os.makedirs(f"{repo}/app", exist_ok=True)
for i in range(n if sys.argv[6] != "1" else 0):
    # Block-style YAML, as manifests are written.
    data = "".join(f"  key-{k}: value-{i}-{k}-{'x' * 40}\n" for k in range(8))
    with open(f"{repo}/app/cm-{i:03d}.yaml", "w") as f:
        f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                f"  name: config-{i:03d}\n  labels:\n"
                "    app.kubernetes.io/part-of: bench\n    tier: backend\n"
                f"data:\n{data}")
items = []
for a in range(apps):
    items.append({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": f"app-{a:04d}", "namespace": ns},
        "spec": {"project": "default",
            "source": {"repoURL": f"file://{repo}", "path": "app", "targetRevision": "HEAD"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": f"bench-{a:04d}"},
            "syncPolicy": {"automated": {"prune": True, "selfHeal": True},
                           "syncOptions": ["CreateNamespace=true"]}}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(out, "w"))
EOF
# Lua health customizations (LUA=1), in Argo CD's resource_customizations layout.
scripts="$work/resource_customizations"
mkdir -p "$scripts/_/ConfigMap" "$scripts/_/Namespace" "$scripts/cert-manager.io/Certificate" \
  "$scripts/argoproj.io/Rollout"
cat >"$scripts/_/ConfigMap/health.lua" <<'LUA'
hs = {}
if obj.data == nil then
  hs.status = "Progressing"
  hs.message = "no data yet"
  return hs
end
local keys = 0
for k, v in pairs(obj.data) do
  if v == "" then
    hs.status = "Degraded"
    hs.message = "empty value for " .. k
    return hs
  end
  keys = keys + 1
end
hs.status = "Healthy"
hs.message = keys .. " keys"
return hs
LUA
cat >"$scripts/_/Namespace/health.lua" <<'LUA'
hs = {status = "Healthy", message = ""}
if obj.status ~= nil and obj.status.phase == "Terminating" then
  hs.status = "Progressing"
  hs.message = "terminating"
end
return hs
LUA
cat >"$scripts/cert-manager.io/Certificate/health.lua" <<'LUA'
hs = {status = "Progressing", message = "Waiting for certificate"}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for i, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" and c.status == "True" then
      hs.status = "Healthy"
      hs.message = c.message
    end
  end
end
return hs
LUA
cat >"$scripts/argoproj.io/Rollout/health.lua" <<'LUA'
hs = {status = "Progressing", message = ""}
if obj.status ~= nil and obj.status.phase == "Healthy" then
  hs.status = "Healthy"
end
return hs
LUA

git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@plumb.invalid commit -qm bench

kubectl apply --server-side -f deploy/crd.yaml >/dev/null
kubectl wait --for=condition=Established crd/applications.plumb.dev --timeout=60s >/dev/null
kubectl create namespace "$apps_ns" >/dev/null
kubectl create namespace plumb-system >/dev/null 2>&1 || true
kubectl apply --server-side -f "$work/apps.json" >/dev/null
echo "created $apps Applications of $objects objects each (namespace $apps_ns)" >&2

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1==k {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

# ---- initial sync: one pass syncing every app --------------------------------------
echo "initial sync: plumb controller --once ..." >&2
/usr/bin/time -f "%e %U %S %M" -o "$work/once.time" \
  "$plumb" controller --once -N "$apps_ns" --workers 8 2>"$work/once.log"
read -r once_wall once_user once_sys once_rss <"$work/once.time"
synced=$(grep -c '"synced":true' "$work/once.log" || true)
failed=$(grep -c '"error"' "$work/once.log" || true)
echo "initial sync: $synced apps synced, $failed errors, ${once_wall}s wall, $(python3 -c "print(round(($once_user+$once_sys)/$once_wall,2))") cores, peak RSS $((once_rss / 1024)) MB" >&2
[ "$failed" = 0 ] || { grep '"error"' "$work/once.log" | head -3 >&2; exit 1; }

# ---- steady state ------------------------------------------------------------------
# steady LABEL [ARGS...]: a controller (with ARGS) started, every app reconciled once, then sampled
# over the window; sets startup, refreshes, syncs, errors, cpu_s (CPU seconds in the window),
# cores, ms_per, rss, hwm; stops the controller.
steady() {
  local label=$1
  shift
  local log="$work/controller-$label.log"
  "${steady_bin:-$plumb}" controller -N "$apps_ns" --interval "$interval" --jitter 10 --workers 8 "$@" \
    2>"$log" &
  pid=$!
  local t0 t1 c0 c1 w0 w1 lines0 lines1
  t0=$(date +%s.%N)
  # Started: every app reconciled once (nothing to sync).
  while [ "$(grep -c '"trigger":"app"' "$log" || true)" -lt "$apps" ]; do
    kill -0 "$pid" 2>/dev/null || { tail -5 "$log" >&2; exit 1; }
    sleep 0.5
  done
  t1=$(date +%s.%N)
  startup=$(python3 -c "print(round($t1-$t0,1))")
  local start_line resynced
  start_line=$(grep -m1 '"watching"' "$log")
  resynced=$(grep -c '"synced":true' "$log" || true)
  echo "controller up ($label): $start_line; all $apps apps reconciled ${startup}s after start ($resynced synced)" >&2

  c0=$(cpu_ticks "$pid"); w0=$(date +%s.%N)
  lines0=$(wc -l <"$log")
  sleep "$window"
  c1=$(cpu_ticks "$pid"); w1=$(date +%s.%N)
  lines1=$(wc -l <"$log")
  rss=$(status_kb "$pid" VmRSS); hwm=$(status_kb "$pid" VmHWM)
  refreshes=$(tail -n +"$((lines0 + 1))" "$log" | head -n "$((lines1 - lines0))" | grep -c '"trigger":"timer"' || true)
  syncs=$(tail -n +"$((lines0 + 1))" "$log" | grep -c '"synced":true' || true)
  errors=$(grep -c '"error"' "$log" || true)
  cpu_s=$(python3 -c "print(round(($c1-$c0)/$hz,2))")
  cores=$(python3 -c "print(round(($c1-$c0)/$hz/($w1-$w0),3))")
  ms_per=$(python3 -c "print(round(($c1-$c0)/$hz*1000/max($refreshes,1),2))")
  kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  pid=""
}

report() {
  echo "  startup (watch all kinds, reconcile every app once): ${startup}s"
  echo "  steady state over ${window}s: $refreshes refreshes, $syncs syncs, $errors errors"
  echo "  CPU: ${cpu_s} s in the window, $cores cores average (${ms_per} ms CPU per app refresh)"
  echo "  memory: RSS $((rss / 1024)) MB now, peak $((hwm / 1024)) MB"
}

if [ "${PLUMB_BENCH_LOOPS:-}" = compare ]; then
  steady loops-off --loop-threshold 0
  off_report=$(report)
  off_cpu=$cpu_s off_ms=$ms_per off_refreshes=$refreshes
fi
if [ -n "${PLUMB_BIN_BEFORE:-}" ]; then
  steady_bin=$PLUMB_BIN_BEFORE steady before
  steady_bin=""
  before_report=$(report)
  before_cpu=$cpu_s before_ms=$ms_per before_refreshes=$refreshes
fi
steady plain
plain_report=$(report)
plain_cpu=$cpu_s plain_ms=$ms_per plain_refreshes=$refreshes
if [ "$lua" = 1 ]; then
  steady lua --resource-customizations "$scripts"
  lua_report=$(report)
  lua_cpu=$cpu_s lua_ms=$ms_per lua_refreshes=$refreshes
  # The scripts ran: a ConfigMap has no health without them, Healthy ("N keys") with them.
  judged=$(kubectl get applications.plumb.dev -n "$apps_ns" app-0000 \
    -o jsonpath='{.status.resources[0].kind} {.status.resources[0].health.status}')
  [ "$judged" = "ConfigMap Healthy" ] || { echo "controller-1k: the Lua scripts did not judge the ConfigMaps ($judged)" >&2; exit 1; }
fi

echo
shape="objects"
[ "$kustomize" = 1 ] && shape="objects, a kustomize overlay"
echo "controller-1k: $apps Applications x $objects $shape ($((apps * objects)) objects), refresh ${interval}s (+<=10s jitter), 8 workers, $(nproc) cores"
echo "  initial sync (--once): ${once_wall}s wall, peak RSS $((once_rss / 1024)) MB"
if [ "${PLUMB_BENCH_LOOPS:-}" = compare ]; then
  echo "with sync-loop recognition off (--loop-threshold 0):"
  echo "$off_report"
  echo "with sync-loop recognition on (the default):"
fi
if [ -n "${PLUMB_BIN_BEFORE:-}" ]; then
  echo "before ($PLUMB_BIN_BEFORE):"
  echo "$before_report"
  echo "now ($plumb):"
fi
echo "$plain_report"
if [ -n "${PLUMB_BIN_BEFORE:-}" ]; then
  echo "  before vs now, same run: ${before_cpu} -> ${plain_cpu} CPU s over ${window}s ($before_refreshes / $plain_refreshes refreshes), ${before_ms} -> ${plain_ms} ms CPU per app refresh: $(python3 -c "print(f'{($plain_ms/$before_ms-1)*100:+.1f}%')")"
fi
if [ "${PLUMB_BENCH_LOOPS:-}" = compare ]; then
  echo "  loop recognition on vs off, same run: ${off_cpu} -> ${plain_cpu} CPU s over ${window}s ($off_refreshes / $plain_refreshes refreshes), ${off_ms} -> ${plain_ms} ms CPU per app refresh: $(python3 -c "print(f'{($plain_ms/$off_ms-1)*100:+.1f}%')")"
fi
if [ "$lua" = 1 ]; then
  echo "with Lua health customizations (--resource-customizations, 4 scripts, one per ConfigMap):"
  echo "$lua_report"
  echo "  Lua vs none, same run: ${plain_cpu} -> ${lua_cpu} CPU s over ${window}s ($plain_refreshes / $lua_refreshes refreshes), ${plain_ms} -> ${lua_ms} ms CPU per app refresh: $(python3 -c "print(f'{($lua_ms/$plain_ms-1)*100:+.1f}%')")"
fi
