#!/usr/bin/env bash
# Benchmark: `plumb preview` of a repository of APPS Applications (kustomize overlays over
# BASES shared bases, each app annotated with manifest-generate-paths for its overlay and its
# base, as Argo CD users do), the whole process, no cluster.
#
#   bench/preview.sh [APPS] [BASES] [RUNS]     # defaults: 100 apps, 4 bases, 5 runs
#
# Two changes, each one commit: ALL changes every base (every app renders, at base and at
# head), ONE changes one base (the apps on it render; the others are skipped, counted).
# bench/pair.py times both in the same call (A = ALL, B = ONE, in turn), and the script prints
# the counts `plumb preview` reported for each.
set -euo pipefail
cd "$(dirname "$0")/.."
apps=${1:-100}
bases=${2:-4}
runs=${3:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-bench-preview.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -z "${PLUMB_BIN:-}" ]; then
  cargo build --release -q -p plumb-cli
  PLUMB_BIN=$PWD/target/release/plumb
fi
echo "cores: $(nproc), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
repo=$work/repo
python3 - "$repo" "$apps" "$bases" <<'PY'
import os, sys
repo, apps, bases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def w(path, text):
    os.makedirs(os.path.dirname(f"{repo}/{path}"), exist_ok=True)
    open(f"{repo}/{path}", "w").write(text)
for b in range(bases):
    docs = []
    for k in range(10):
        docs.append(f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc-{k}
  labels: {{app: svc-{k}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: svc-{k}}}}}
  template:
    metadata: {{labels: {{app: svc-{k}}}}}
    spec:
      containers:
      - name: main
        image: registry.example.com/base-{b}/svc-{k}:1.0.0
        env: [{{name: LEVEL, value: info}}]
---
apiVersion: v1
kind: Service
metadata: {{name: svc-{k}}}
spec:
  selector: {{app: svc-{k}}}
  ports: [{{port: 80, targetPort: 8080}}]
""")
    w(f"bases/b{b}/all.yaml", "---\n".join(docs))
    w(f"bases/b{b}/kustomization.yaml", "resources:\n- all.yaml\n")
apps_yaml = []
for a in range(apps):
    b = a % bases
    w(f"apps/a{a}/kustomization.yaml", f"resources:\n- ../../bases/b{b}\nnamePrefix: a{a}-\nnamespace: ns-{a}\n")
    apps_yaml.append(f"""apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: a{a}
  namespace: argocd
  annotations:
    argocd.argoproj.io/manifest-generate-paths: .;/bases/b{b}
spec:
  project: default
  destination: {{server: https://kubernetes.default.svc, namespace: ns-{a}}}
  source: {{repoURL: https://git.example.com/r.git, path: apps/a{a}, targetRevision: HEAD}}
""")
w("argocd/apps.yaml", "---\n".join(apps_yaml))
PY
git -C "$repo" init -q -b main
git -C "$repo" add .
git -C "$repo" -c user.name=b -c user.email=b@x commit -qm base
git -C "$repo" branch start
# ONE: one base's image tag.
sed -i 's/:1.0.0/:1.1.0/' "$repo/bases/b0/all.yaml"
git -C "$repo" -c user.name=b -c user.email=b@x commit -qam one
git -C "$repo" branch one
# ALL: every base's image tag (from start).
git -C "$repo" checkout -q -b all start
sed -i 's/:1.0.0/:1.2.0/' "$repo"/bases/*/all.yaml
git -C "$repo" -c user.name=b -c user.email=b@x commit -qam all
for c in all one; do
  printf '%s: ' "$c"
  "$PLUMB_BIN" preview --repo "$repo" --base start --head "$c" -o text --fail-on never | head -n 1
done
bench/pair.py -n "$runs" --vs "$PLUMB_BIN preview --repo $repo --base start --head one -o json" -- \
  "$PLUMB_BIN" preview --repo "$repo" --base start --head all -o json
