#!/usr/bin/env bash
# Benchmark: `plumb controller --shards auto`, REPLICAS replicas sharing APPS Applications of
# OBJECTS objects each on a real API server (the test bed).
#
#   bench/controller-10k.sh [APPS] [OBJECTS] [REPLICAS] [INTERVAL_S] [WINDOW_S]
#                            # defaults: 10000 apps, 10 objects, 3 replicas, 180 s, 200 s
#
# 1. One git repository: a kustomize base of OBJECTS ConfigMaps, and per app an overlay
#    (`namePrefix: app-NNNNN-`). The apps deploy into 100 namespaces of the run (app i into the (i % 100)th).
# 2. First full sync: REPLICAS controllers start (Lease 15 s, the apps already created) and
#    the time until every app is Synced is measured (Applications read from the API server).
# 3. Steady state at INTERVAL_S (Argo CD's 180 s by default, +<=10 s jitter): each replica's CPU
#    ((utime+stime) delta / wall, /proc/PID/stat) and memory (VmRSS, VmHWM) over WINDOW_S, and
#    the balance (apps each replica owns, from status.controller).
# 4. Failover: one replica SIGKILLed; the time until every app it owned is claimed by another.
#
# Argo CD's published figures (not measured here, beside ours in the book): 10,000 trivial apps
# took 53 min to sync with the defaults and 8.5 min with 10 shards (AWS); 50,000 apps on 500
# clusters, 22 min on 9 shards (CNOE).
#
# Uses the test bed of $TESTBED_DIR/$KUBECONFIG when set; otherwise starts one (no controller
# manager) and stops it at exit. Builds plumb in release mode (PLUMB_BIN=path skips the build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

apps=${1:-10000}
objects=${2:-10}
replicas=${3:-3}
interval=${4:-180}
window=${5:-200}
lease=15

work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-controller-10k.XXXXXX")
started_testbed=0
pids=()
cleanup() {
  local rc=$?
  set +e
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  [ -n "${apps_ns:-}" ] && kubectl delete namespace "$apps_ns" --wait=false >/dev/null 2>&1
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

repo="$work/repo"
apps_ns="bench10k-$$"
python3 - "$repo" "$objects" "$apps" "$apps_ns" "$work/apps.json" <<'EOF'
import json, os, sys
repo, n, apps, ns, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
os.makedirs(f"{repo}/base", exist_ok=True)
for i in range(n):
    with open(f"{repo}/base/cm-{i:02d}.yaml", "w") as f:
        f.write(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-{i:02d}\n"
                f"data:\n  key: value-{i}\n")
with open(f"{repo}/base/kustomization.yaml", "w") as f:
    f.write("resources:\n" + "".join(f"- cm-{i:02d}.yaml\n" for i in range(n)))
items = []
for a in range(apps):
    os.makedirs(f"{repo}/apps/app-{a:05d}", exist_ok=True)
    with open(f"{repo}/apps/app-{a:05d}/kustomization.yaml", "w") as f:
        f.write(f"resources:\n- ../../base\nnamePrefix: app-{a:05d}-\n")
    items.append({"apiVersion": "plumb.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": f"app-{a:05d}", "namespace": ns},
        "spec": {"project": "default",
            "source": {"repoURL": f"file://{repo}", "path": f"apps/app-{a:05d}", "targetRevision": "HEAD"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": f"{ns}-{a % 100:02d}"},
            "syncPolicy": {"automated": {"prune": True, "selfHeal": True}}}})
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(out, "w"))
EOF
git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@plumb.invalid commit -qm bench

kubectl apply --server-side -f deploy/crd.yaml >/dev/null
kubectl wait --for=condition=Established crd/applications.plumb.dev --timeout=60s >/dev/null
kubectl create namespace "$apps_ns" >/dev/null
for i in $(seq 0 99); do printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s-%02d}\n---\n' "$apps_ns" "$i"; done \
  | kubectl apply --server-side -f - >/dev/null
kubectl apply --server-side -f "$work/apps.json" >/dev/null
echo "created $apps Applications of $objects objects each (namespace $apps_ns)" >&2

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1==k {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)
# owners: "OWNER COUNT" lines, and "synced N".
census() {
  kubectl get applications.plumb.dev -n "$apps_ns" -o json | python3 -c '
import json, sys, collections
items = json.load(sys.stdin)["items"]
owners = collections.Counter(i.get("status", {}).get("controller", {}).get("owner", "-") for i in items)
synced = sum(1 for i in items if i.get("status", {}).get("sync", {}).get("status") == "Synced")
for o, n in sorted(owners.items()): print(o, n)
print("synced", synced)'
}

declare -A pid_of
start_replica() { # start_replica ID: sets pid_of[ID]
  "$plumb" controller -N "$apps_ns" --lease-namespace "$apps_ns" --lease-duration "$lease" \
    --interval "$interval" --jitter 10 --workers 8 --shards auto --shard-id "$1" \
    >/dev/null 2>"$work/$1.log" &
  pids+=($!)
  pid_of[$1]=$!
}

echo "first full sync: $replicas replicas ..." >&2
t0=$(date +%s.%N)
for r in $(seq 0 $((replicas - 1))); do start_replica "r$r"; done
# Counted from the replicas' logs (an app's first sync logs "synced":true; each app counted
# once): listing 10,000 Applications every few seconds would load the machine measured.
synced_apps() {
  { cat "$work"/r*.log 2>/dev/null | grep '"synced":true' | grep -o '"app":"[^"]*"' || true; } | sort -u | wc -l
}
while :; do
  synced=$(synced_apps)
  [ "$synced" -ge "$apps" ] && break
  for r in "${!pid_of[@]}"; do kill -0 "${pid_of[$r]}" 2>/dev/null || { tail -5 "$work/$r.log" >&2; exit 1; }; done
  echo "  $synced of $apps Synced after $(python3 -c "import time; print(round(time.time()-$t0))")s" >&2
  sleep 5
done
t1=$(date +%s.%N)
first=$(python3 -c "print(round($t1-$t0,1))")
# The API server agrees: every app Synced.
census_synced=$(census | awk '$1=="synced" {print $2}')
[ "$census_synced" -ge "$apps" ] || { echo "controller-10k: the logs say $synced synced, the API server $census_synced" >&2; exit 1; }
echo "first full sync: every app Synced after ${first}s" >&2

# ---- steady state ---------------------------------------------------------------------
declare -A c0
w0=$(date +%s.%N)
for r in "${!pid_of[@]}"; do c0[$r]=$(cpu_ticks "${pid_of[$r]}"); done
sleep "$window"
w1=$(date +%s.%N)
steady=""
for r in $(printf '%s\n' "${!pid_of[@]}" | sort); do
  p=${pid_of[$r]}
  c1=$(cpu_ticks "$p")
  cores=$(python3 -c "print(round(($c1-${c0[$r]})/$hz/($w1-$w0),3))")
  rss=$(status_kb "$p" VmRSS); hwm=$(status_kb "$p" VmHWM)
  refreshes=$(grep -c '"trigger":"timer"' "$work/$r.log" || true)
  steady+="  $r: $cores cores over ${window}s, RSS $((rss / 1024)) MB (peak $((hwm / 1024)) MB), $refreshes timer refreshes so far"$'\n'
done
owners=$(census)

# ---- failover ------------------------------------------------------------------------
victim=r1
[ "$replicas" -ge 2 ] || victim=r0
lost=$(echo "$owners" | awk -v v="$victim" '$1==v {print $2}')
kill -9 "${pid_of[$victim]}"
t2=$(date +%s.%N)
while :; do
  left=$(census | awk -v v="$victim" '$1==v {print $2}')
  [ -z "$left" ] && break
  sleep 1
done
t3=$(date +%s.%N)
failover=$(python3 -c "print(round($t3-$t2,1))")

echo
echo "controller-10k: $apps Applications x $objects objects ($((apps * objects)) objects), $replicas replicas (--shards auto, Lease ${lease}s), refresh ${interval}s (+<=10s jitter), 8 workers each, $(nproc) cores (test bed on the same machine)"
echo "  first full sync: ${first}s"
echo "  steady state:"
printf '%s' "$steady"
echo "  apps per replica:"
echo "$owners" | grep -v '^synced' | sed 's/^/    /'
echo "  failover: $victim SIGKILLed owning ${lost:-0} apps; all claimed by the others after ${failover}s"
