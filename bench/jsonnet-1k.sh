#!/usr/bin/env bash
# Benchmark: `plumb render` of a directory source whose one Jsonnet program generates N objects
# (default 1,000: Deployments, Services and ConfigMaps built by a library of functions with
# mixins, comprehensions, std.format, std.manifestJsonEx and std.md5), against go-jsonnet's
# `jsonnet` evaluating the same program, in the same run. Both are whole processes: plumb reads
# the directory, evaluates, checks and prints the objects as YAML; jsonnet evaluates and prints
# JSON.
#
#   bench/jsonnet-1k.sh [N] [RUNS]      # defaults: 1000 objects, 5 runs each (medians)
#
# Env: PLUMB_BIN (default target/release/plumb, built if missing), PLUMB_JSONNET (default
# "$(testbed/build-jsonnet.sh)/jsonnet"), PLUMB_BENCH_KEEP=1 keeps the generated directory.
# Wall time and peak RSS come from GNU time (`/usr/bin/time -f "%e %M"`).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
runs=${2:-5}
[ -x /usr/bin/time ] || { echo "jsonnet-1k: needs GNU time at /usr/bin/time" >&2; exit 2; }
plumb=${PLUMB_BIN:-$PWD/target/release/plumb}
if [ -z "${PLUMB_BIN:-}" ] && [ ! -x "$plumb" ]; then
  cargo build --release -q -p plumb-cli
fi
jsonnet=${PLUMB_JSONNET:-"$(testbed/build-jsonnet.sh)/jsonnet"}
work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-jsonnet-1k.XXXXXX")
[ "${PLUMB_BENCH_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
echo "cores: $(nproc), load average: $(cut -d' ' -f1-3 /proc/loadavg)"

mkdir -p "$work/lib" "$work/app"
cat >"$work/lib/kube.libsonnet" <<'JSONNET'
{
  labels(app, tier):: { app: app, tier: tier, 'app.kubernetes.io/part-of': 'bench' },
  meta(name, app, tier):: { name: name, namespace: 'bench', labels: $.labels(app, tier) },
  deployment(i):: {
    local name = 'web-%04d' % i,
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: $.meta(name, name, 'front') + { annotations: { checksum: std.md5(name) } },
    spec: {
      replicas: 1 + i % 3,
      selector: { matchLabels: $.labels(name, 'front') },
      template: {
        metadata: { labels: $.labels(name, 'front') },
        spec: {
          containers: [{
            name: 'app',
            image: 'registry.example/web:%d.%d.%d' % [1, i % 10, i % 7],
            ports: [{ containerPort: 8080 + k, name: 'p%d' % k } for k in std.range(0, 2)],
            env: [{ name: 'VAR_%d' % k, value: std.toString(i * k) } for k in std.range(0, 4)],
            resources: { requests: { cpu: '%dm' % (100 + i % 50), memory: '%dMi' % (64 + i % 64) } },
          }],
        },
      },
    },
  },
  service(i):: {
    local name = 'web-%04d' % i,
    apiVersion: 'v1',
    kind: 'Service',
    metadata: $.meta(name, name, 'front'),
    spec: { selector: $.labels(name, 'front'), ports: [{ port: 80, targetPort: 8080 }] },
  },
  configMap(i):: {
    local name = 'config-%04d' % i,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: $.meta(name, name, 'config'),
    data: {
      'settings.json': std.manifestJsonEx({ id: i, features: std.filter(function(f) f % 2 == i % 2, std.range(0, 9)) }, '  '),
      greeting: std.join(' ', std.map(std.asciiUpper, ['hello', 'from', name])),
    },
  },
}
JSONNET
cat >"$work/app/main.jsonnet" <<JSONNET
local k = import 'kube.libsonnet';
local n = $n;
[
  if i % 3 == 0 then k.deployment(i) else if i % 3 == 1 then k.service(i) else k.configMap(i)
  for i in std.range(0, n - 1)
]
JSONNET
cat >"$work/app.yaml" <<YAML
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: bench}
spec:
  destination: {namespace: bench}
  source:
    repoURL: file://$work
    path: app
    directory:
      jsonnet:
        libs: [lib]
YAML

plumb_cmd=("$plumb" render --app "$work/app.yaml" --repo "$work")
jsonnet_cmd=("$jsonnet" -J "$work/app" -J "$work/lib" "$work/app/main.jsonnet")

# Both render the same N objects.
got=$("${plumb_cmd[@]}" | grep -c '^kind: ')
want=$("${jsonnet_cmd[@]}" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$got" = "$n" ] && [ "$want" = "$n" ] || { echo "jsonnet-1k: plumb rendered $got objects, jsonnet $want; want $n" >&2; exit 1; }

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() { # measure NAME CMD...: RUNS runs (after one warm-up); prints medians
  local name=$1; shift
  "$@" >/dev/null
  local walls=() rss=()
  for _ in $(seq "$runs"); do
    read -r w m < <(/usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -n1)
    walls+=("$w"); rss+=("$m")
  done
  local wm rm
  wm=$(printf '%s\n' "${walls[@]}" | median)
  rm=$(printf '%s\n' "${rss[@]}" | median)
  printf '%-28s median wall %6.3f s, median peak RSS %6.1f MiB (runs: %s)\n' \
    "$name" "$wm" "$(awk -v k="$rm" 'BEGIN {print k/1024}')" "${walls[*]}"
  echo "$wm" >"$work/$name.median"
}
measure "plumb render ($n objects)" "${plumb_cmd[@]}"
measure "jsonnet ($n objects)" "${jsonnet_cmd[@]}"
a=$(cat "$work/plumb render ($n objects).median"); b=$(cat "$work/jsonnet ($n objects).median")
awk -v a="$a" -v b="$b" 'BEGIN {printf "ratio plumb/jsonnet: %.2fx\n", a/b}'
