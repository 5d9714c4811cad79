#!/usr/bin/env bash
# Benchmark: `plumb render --app` of N Applications (default 50) that use the same chart of a
# Helm chart repository (exact version: served from the repository cache after the first),
# against `helm template` alone on the same chart archive with the same flags, N times.
# The repository is `python3 -m http.server` on 127.0.0.1; its request log shows that no
# request is made after the first render. Usage: bench/helm-repo.sh [N]
# helm: PLUMB_HELM (a helm binary; testbed/build-helm.sh builds one) or PATH.
# plumb: PLUMB_BIN, else a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-50}
helm=${PLUMB_HELM:-$(command -v helm)}
if [ -z "${PLUMB_BIN:-}" ]; then
  cargo build --release -q -p plumb-cli
  PLUMB_BIN=target/release/plumb
fi
bin=$(realpath "$PLUMB_BIN")
work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-bench-helm-XXXXXX")
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
export HELM_CONFIG_HOME=$work/helm/config HELM_CACHE_HOME=$work/helm/cache HELM_DATA_HOME=$work/helm/data
export PLUMB_REPO_CACHE=$work/cache
mkdir -p "$work/bin" "$work/srv/charts" "$work/apps"
ln -s "$(realpath "$helm")" "$work/bin/helm"
export PATH=$work/bin:$PATH

# A chart with a few typical templates.
c=$work/src/shop
mkdir -p "$c/templates"
printf 'apiVersion: v2\nname: shop\nversion: 1.4.2\nappVersion: "1.4.2"\n' >"$c/Chart.yaml"
printf 'replicas: 2\nimage: registry.example.com/shop\nport: 8080\n' >"$c/values.yaml"
for k in web api worker; do
  cat >"$c/templates/$k.yaml" <<EOF
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-$k
  labels: {app: {{ .Release.Name }}, component: $k}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}, component: $k}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}, component: $k}}
    spec:
      containers:
      - name: $k
        image: "{{ .Values.image }}:{{ .Chart.AppVersion }}"
        ports: [{containerPort: {{ .Values.port }}}]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-$k
spec:
  selector: {app: {{ .Release.Name }}, component: $k}
  ports: [{port: 80, targetPort: {{ .Values.port }}}]
EOF
done
helm package -d "$work/srv/charts" "$c" >/dev/null
helm repo index "$work/srv/charts"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/srv" 2>"$work/requests.log" >/dev/null &
server=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/charts/index.yaml" >/dev/null && break; sleep 0.05; done
: >"$work/requests.log"

for i in $(seq "$n"); do
  cat >"$work/apps/app-$i.yaml" <<EOF
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop-$i, namespace: argocd}
spec:
  source:
    repoURL: http://127.0.0.1:$port/charts
    chart: shop
    targetRevision: 1.4.2
    helm: {parameters: [{name: replicas, value: "$i"}]}
  destination: {server: https://kubernetes.default.svc, namespace: shop-$i}
EOF
done

now() { date +%s.%N; }
"$bin" render --app "$work/apps/app-1.yaml" >/dev/null 2>&1 # first render: downloads the chart
first=$(grep -c '"GET ' "$work/requests.log" || true)
t0=$(now)
for i in $(seq "$n"); do "$bin" render --app "$work/apps/app-$i.yaml" >/dev/null 2>&1; done
t1=$(now)
after=$(grep -c '"GET ' "$work/requests.log" || true)
tgz=$work/srv/charts/shop-1.4.2.tgz
t2=$(now)
for i in $(seq "$n"); do helm template "shop-$i" "$tgz" --namespace "shop-$i" --set "replicas=$i" --include-crds >/dev/null; done
t3=$(now)
awk -v n="$n" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v first="$first" -v after="$after" 'BEGIN {
  p = b - a; h = d - c
  printf "plumb render, %d apps, one cached chart: %.3f s (%.1f ms/app)\n", n, p, p * 1000 / n
  printf "helm template alone, %d times:           %.3f s (%.1f ms/app)\n", n, h, h * 1000 / n
  printf "ratio plumb/helm: %.2fx; requests to the chart repository: %d for the first render, %d for the next %d\n", p / h, first, after - first, n
}'
