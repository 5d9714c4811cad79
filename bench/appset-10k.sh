#!/usr/bin/env bash
# Benchmark: `plumb appset generate` of an ApplicationSet whose matrix crosses a git directories
# generator (D directories of a real git repository) with a clusters generator (C cluster
# Secrets): D × C Applications (default 100 × 100 = 10,000), goTemplate with a pipeline in the
# name, printed as JSON. The whole process, medians over RUNS runs (GNU time). There is no
# anchor to run beside it here: Argo CD's `argocd appset generate` needs an Argo CD API server.
#
#   bench/appset-10k.sh [D] [C] [RUNS]      # defaults: 100 100 5
set -euo pipefail
cd "$(dirname "$0")/.."
d=${1:-100}
c=${2:-100}
runs=${3:-5}
[ -x /usr/bin/time ] || { echo "appset-10k: needs GNU time at /usr/bin/time" >&2; exit 2; }
plumb=${PLUMB_BIN:-$PWD/target/release/plumb}
if [ -z "${PLUMB_BIN:-}" ]; then
  cargo build --release -q -p plumb-cli
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-appset-10k.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "cores: $(nproc), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$d"); do
  mkdir -p "$work/repo/apps/app-$i"
  echo "kind: ConfigMap" >"$work/repo/apps/app-$i/cm.yaml"
done
git -C "$work/repo" init -q
git -C "$work/repo" add -A
git -C "$work/repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m estate
for i in $(seq "$c"); do
  cat >>"$work/clusters.yaml" <<YAML
---
apiVersion: v1
kind: Secret
metadata:
  name: cluster-$i
  labels: {argocd.argoproj.io/secret-type: cluster, env: prod}
stringData: {name: cluster-$i, server: 'https://cluster-$i.example.com'}
YAML
done
cat >"$work/appset.yaml" <<YAML
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: estate, namespace: argocd}
spec:
  goTemplate: true
  generators:
  - matrix:
      generators:
      - git: {repoURL: file://$work/repo, revision: HEAD, directories: [{path: apps/*}]}
      - clusters: {selector: {matchLabels: {env: prod}}}
  template:
    metadata: {name: '{{.path.basename}}-{{.name | normalize}}'}
    spec:
      project: default
      source: {repoURL: file://$work/repo, targetRevision: HEAD, path: '{{.path.path}}'}
      destination: {server: '{{.server}}', namespace: '{{.path.basename}}'}
YAML
count=$("$plumb" appset generate "$work/appset.yaml" --cluster-secrets "$work/clusters.yaml" -o json | grep -c '"kind": "Application"')
for _ in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o "$work/time" "$plumb" appset generate "$work/appset.yaml" \
    --cluster-secrets "$work/clusters.yaml" -o json >/dev/null
  tail -n 1 "$work/time"
done >"$work/times"
sort -n "$work/times" | awk -v n="$count" '{ w[NR] = $1; m[NR] = $2 } END {
  i = int((NR + 1) / 2); printf "plumb appset generate: %d Applications in %.3f s (median of %d; min %.3f, max %.3f), peak RSS %.0f MB\n", n, w[i], NR, w[1], w[NR], m[i] / 1024 }'
