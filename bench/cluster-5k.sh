#!/usr/bin/env bash
# Benchmark: `plumb diff --cluster` against `kubectl diff` on an app of 5,000 objects
# (ConfigMaps, headless Services, Deployments; 1% of them drifted) in one namespace of a
# real API server. Target: plumb under 5 s and at least 20x faster than kubectl diff.
#
#   bench/cluster-5k.sh [N] [RUNS]     # defaults: 5000 objects, 3 plumb runs
#
# Uses the test bed of $TESTBED_DIR/$KUBECONFIG when set; otherwise starts one
# (testbed/up.sh, no controller manager) and stops it at exit. Creating the objects
# (parallel `kubectl apply`, client-side, as an Argo CD sync leaves them: with the
# last-applied annotation) is timed and printed, but is not part of the comparison.
# Wall time and peak RSS come from GNU time (`/usr/bin/time -f "%e %M"`); the plumb
# figure of the summary is the median run, its RSS the largest.
#
# Env: PLUMB_BENCH_KUBECTL (kubectl binary; default: the test bed's version-matched one
# when built, else `kubectl`), PLUMB_BENCH_APPLY_JOBS (parallel kubectl applies, default 8),
# PLUMB_BENCH_KEEP=1 (keep the namespace and the generated files), PLUMB_BENCH_SKIP_KUBECTL=1
# (plumb only: kubectl diff takes minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

n=${1:-5000}
runs=${2:-3}
jobs=${PLUMB_BENCH_APPLY_JOBS:-8}
[ -x /usr/bin/time ] || { echo "cluster-5k: needs GNU time at /usr/bin/time" >&2; exit 2; }
command -v python3 >/dev/null || { echo "cluster-5k: needs python3" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-cluster-5k.XXXXXX")
started_testbed=0
ns=""
kubectl=kubectl

cleanup() {
  local rc=$?
  set +e
  if [ "$started_testbed" = 1 ]; then
    "$root/testbed/down.sh" >/dev/null 2>&1
  elif [ -n "$ns" ] && [ "${PLUMB_BENCH_KEEP:-0}" != 1 ]; then
    # Without a controller manager the namespace stays Terminating; its objects go
    # with the test bed.
    "$kubectl" delete namespace "$ns" --wait=false >/dev/null 2>&1
  fi
  if [ "${PLUMB_BENCH_KEEP:-0}" = 1 ]; then
    echo "kept: $work (namespace $ns)" >&2
  else
    rm -rf "$work"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the cluster ----------------------------------------------------------------
if [ -z "${TESTBED_DIR:-}" ]; then
  echo "starting a test bed (testbed/up.sh) ..." >&2
  eval "$(testbed/up.sh)"
  started_testbed=1
fi
export KUBECONFIG TESTBED_DIR
if [ -f "$TESTBED_DIR/pids" ] && grep -q '^kcm ' "$TESTBED_DIR/pids"; then
  echo "warning: this test bed runs kube-controller-manager: it will create pods for the Deployments and skew the figures" >&2
fi
cache=${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}
kubectl=${PLUMB_BENCH_KUBECTL:-}
if [ -z "$kubectl" ]; then
  version=$(cat "$cache/current" 2>/dev/null || true)
  if [ -n "$version" ] && [ -x "$cache/$version/bin/kubectl" ]; then
    kubectl=$cache/$version/bin/kubectl
  else
    kubectl=kubectl
  fi
fi

# ---- plumb ----------------------------------------------------------------------
echo "building plumb (release) ..." >&2
cargo build --release -q -p plumb-cli
plumb=$root/target/release/plumb

# ---- objects ----------------------------------------------------------------------
ns=bench-5k-$(date +%s)-$$
python3 - "$work" "$n" "$ns" <<'EOF'
"""Writes N objects as YAML: desired/ (git) and live/ (what the cluster gets). Two in
five are ConfigMaps, three in ten headless Services (a /24 service range has no room for
thousands of cluster IPs), three in ten Deployments; every 100th object drifted live."""
import json, os, re, sys

out, n, ns = sys.argv[1], int(sys.argv[2]), sys.argv[3]
per_file = 100

PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./:@-]*")
YAML11_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n"}

def string(s, ind):
    """As people write them: plain when that reads back as the same string, a literal
    block for multi-line text, double quotes otherwise."""
    if "\n" in s and s.endswith("\n") and not s.startswith(" "):
        pad = "  " * ind
        return " |\n" + "".join(f"{pad}{line}\n" for line in s[:-1].split("\n"))
    if PLAIN.fullmatch(s) and s.lower() not in YAML11_WORDS:
        return f" {s}\n"
    return " " + json.dumps(s) + "\n"

def y(v, ind=0):
    """Block-style YAML."""
    pad = "  " * ind
    if isinstance(v, dict):
        if not v:
            return " {}\n"
        return "\n" + "".join(f"{pad}{k}:" + y(x, ind + 1) for k, x in v.items())
    if isinstance(v, list):
        if not v:
            return " []\n"
        s = "\n"
        for x in v:
            if isinstance(x, dict) and x:
                items = list(x.items())
                k0, x0 = items[0]
                s += f"{pad}- {k0}:" + y(x0, ind + 2)
                s += "".join(f"{pad}  {k}:" + y(w, ind + 2) for k, w in items[1:])
            else:
                s += f"{pad}-" + y(x, ind + 1)
        return s
    if isinstance(v, bool):
        return " true\n" if v else " false\n"
    if isinstance(v, (int, float)):
        return f" {v}\n"
    if v is None:
        return " null\n"
    return string(v, ind)

def labels(name, component):
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop",
            "app.kubernetes.io/component": component, "team": f"team-{sum(map(ord, name)) % 7}"}

def configmap(i, drift):
    name = f"cfg-{i:05d}"
    props = "\n".join(f"shop.{name}.setting{k}=value-{k}-{i}" for k in range(12))
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": labels(name, "config")},
            "data": {"application.properties": props + "\n",
                     "LOG_LEVEL": "debug" if drift else "info",
                     "FEATURES": json.dumps({"checkout": True, "search": i % 3 == 0, "beta": False}),
                     "TIMEOUT_SECONDS": str(30 + i % 5)}}

def service(i, drift):
    name = f"svc-{i:05d}"
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns, "labels": labels(name, "api"),
                         "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"}},
            "spec": {"clusterIP": "None",
                     "selector": {"app.kubernetes.io/name": name + ("-canary" if drift else "")},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                               {"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"}]}}

def deployment(i, drift):
    name = f"web-{i:05d}"
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "labels": labels(name, "web")},
            "spec": {"replicas": 2, "revisionHistoryLimit": 5,
                     "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                     "template": {
                         "metadata": {"labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "shop"},
                                      "annotations": {"prometheus.io/scrape": "true"}},
                         "spec": {
                             "serviceAccountName": "default",
                             "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "fsGroup": 10001},
                             "containers": [{
                                 "name": "app",
                                 "image": f"registry.example.com/shop/{name}:1.{i % 9}.{3 if drift else 2}",
                                 "ports": [{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}],
                                 "env": [{"name": "LOG_LEVEL", "value": "info"},
                                         {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                         {"name": "CONFIG", "valueFrom": {"configMapKeyRef": {"name": f"cfg-{i:05d}", "key": "FEATURES"}}}],
                                 "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                                               "limits": {"cpu": "1", "memory": "512Mi"}},
                                 "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
                                 "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10},
                                 "volumeMounts": [{"name": "config", "mountPath": "/etc/shop", "readOnly": True}]}],
                             "volumes": [{"name": "config", "configMap": {"name": f"cfg-{i:05d}"}}]}}}}

def make(i, drift):
    r = i % 10
    if r < 4:
        return configmap(i, drift)
    if r < 7:
        return service(i, drift)
    return deployment(i, drift)

for side in ("desired", "live"):
    os.makedirs(f"{out}/{side}", exist_ok=True)
drifted = 0
for start in range(0, n, per_file):
    desired, live = [], []
    for i in range(start, min(n, start + per_file)):
        drift = i % 100 == (7 * (i // 100)) % 100  # 1%, spread over the three kinds
        drifted += drift
        desired.append(y(make(i, False)).lstrip("\n"))
        live.append(y(make(i, drift)).lstrip("\n"))
    for side, docs in (("desired", desired), ("live", live)):
        with open(f"{out}/{side}/objects-{start // per_file:03d}.yaml", "w") as f:
            f.write("---\n".join(docs))
with open(f"{out}/drifted", "w") as f:
    f.write(str(drifted))
EOF
drifted=$(cat "$work/drifted")
echo "generated: $n objects ($drifted drifted), $(du -sh "$work/desired" | cut -f1) of YAML, namespace $ns"

# ---- create them (timed, not compared) -----------------------------------------------
"$kubectl" create namespace "$ns" >/dev/null
t0=$(date +%s.%N)
find "$work/live" -name '*.yaml' -print0 | sort -z |
  xargs -0 -P "$jobs" -n 1 "$kubectl" apply -o name -f >"$work/apply.out" 2>"$work/apply.err" || {
  echo "kubectl apply failed:" >&2
  tail -n 20 "$work/apply.err" >&2
  exit 1
}
t1=$(date +%s.%N)
created=$(grep -c . "$work/apply.out" || true)
[ "$created" = "$n" ] || { echo "created $created objects, expected $n" >&2; tail -n 20 "$work/apply.err" >&2; exit 1; }
awk -v a="$t0" -v b="$t1" -v n="$n" -v j="$jobs" \
  'BEGIN { printf "created: %d objects in %.1f s (kubectl apply, %d in parallel; not part of the comparison)\n", n, b - a, j }'

# ---- plumb diff --cluster ------------------------------------------------------------
: >"$work/plumb.times"
for i in $(seq "$runs"); do
  rc=0
  /usr/bin/time -f "%e %M" -o "$work/time" \
    "$plumb" diff --cluster --desired "$work/desired" >"$work/plumb.out" 2>"$work/plumb.err" || rc=$?
  if [ "$rc" -ne 1 ]; then
    echo "plumb diff --cluster exited $rc (expected 1: differences):" >&2
    cat "$work/plumb.err" >&2
    exit 1
  fi
  found=$(grep -c '^===== ' "$work/plumb.out" || true)
  read -r secs kb < <(tail -n 1 "$work/time")
  echo "$secs $kb" >>"$work/plumb.times"
  awk -v s="$secs" -v kb="$kb" -v n="$n" -v i="$i" -v f="$found" \
    'BEGIN { printf "plumb diff --cluster run %d: %.2f s, %.0f objects/s, peak RSS %.0f MB, %d resources differ\n", i, s, n / s, kb / 1024, f }'
done
if [ "$found" != "$drifted" ]; then
  echo "plumb reported $found differing resources, $drifted drifted: the benchmark data is wrong" >&2
  head -n 40 "$work/plumb.out" >&2
  exit 1
fi

# ---- kubectl diff ------------------------------------------------------------------------
if [ "${PLUMB_BENCH_SKIP_KUBECTL:-0}" = 1 ]; then
  sort -n "$work/plumb.times" | awk -v n="$n" '{ secs[NR] = $1; if ($2 > kb) kb = $2 }
    END { s = secs[int((NR + 1) / 2)]; printf "plumb diff --cluster: %.2f s (%.0f objects/s, %.0f MB) | kubectl diff: skipped\n", s, n / s, kb / 1024 }'
  exit 0
fi
rc=0
/usr/bin/time -f "%e %M" -o "$work/time" \
  env -u KUBECTL_EXTERNAL_DIFF "$kubectl" diff -f "$work/desired" >"$work/kubectl.out" 2>"$work/kubectl.err" || rc=$?
if [ "$rc" -ne 1 ]; then
  echo "kubectl diff exited $rc (expected 1: differences):" >&2
  tail -n 20 "$work/kubectl.err" >&2
  exit 1
fi
read -r ksecs kkb < <(tail -n 1 "$work/time")
kfound=$(grep -c '^diff -u -N ' "$work/kubectl.out" || true)
awk -v s="$ksecs" -v kb="$kkb" -v n="$n" -v f="$kfound" \
  'BEGIN { printf "kubectl diff: %.2f s, %.0f objects/s, peak RSS %.0f MB, %d resources differ\n", s, n / s, kb / 1024, f }'

# ---- summary -----------------------------------------------------------------------------
sort -n "$work/plumb.times" | awk -v n="$n" -v k="$ksecs" '
  { secs[NR] = $1; if ($2 > kb) kb = $2 }
  END {
    s = secs[int((NR + 1) / 2)]
    printf "target: under 5 s: %s, at least 20x faster: %s\n", (s < 5 ? "met" : "NOT met"), (k / s >= 20 ? "met" : "NOT met")
    printf "plumb diff --cluster: %.2f s (%.0f objects/s, %.0f MB) | kubectl diff: %.2f s | speedup: %.1f×\n", s, n / s, kb / 1024, k, k / s
  }'
