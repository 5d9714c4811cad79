#!/usr/bin/env bash
# Pins Argo CD's Lua health checks as test data under
# crates/plumb-health/tests/argocd-lua/: every resource_customizations/**/health.lua, its
# health_test.yaml and the inputs that file names (not the actions, not their test data),
# with Argo CD's LICENSE and a NOTICE naming the origin and commit.
#
#   tools/pin-argocd-lua.sh GIT_DIR
#
# GIT_DIR is a clone of https://github.com/argoproj/argo-cd (bare is fine) at the commit
# to pin.
set -euo pipefail
git_dir=$1
root=$(cd "$(dirname "$0")/.." && pwd)/crates/plumb-health/tests/argocd-lua
commit=$(git --git-dir="$git_dir" rev-parse HEAD)
rm -rf "$root"
mkdir -p "$root"
git --git-dir="$git_dir" ls-tree -r --name-only HEAD resource_customizations |
  grep '/health\.lua$' |
  while read -r script; do
    dir=$(dirname "$script")
    files=("$script" "$dir/health_test.yaml")
    # Argo CD's test reads inputPath case-insensitively (sigs.k8s.io/yaml), so does this.
    while read -r input || [ -n "$input" ]; do
      files+=("$dir/$input")
    done < <(git --git-dir="$git_dir" show "HEAD:$dir/health_test.yaml" |
      sed -nE 's/^[[:space:]-]*[iI][nN][pP][uU][tT][pP][aA][tT][hH]:[[:space:]]*["'\'']?([^"'\''[:space:]]+).*/\1/p')
    for f in "${files[@]}"; do
      mkdir -p "$root/$(dirname "$f")"
      git --git-dir="$git_dir" show "HEAD:$f" >"$root/$f"
    done
  done
git --git-dir="$git_dir" show HEAD:LICENSE >"$root/LICENSE"
echo "https://github.com/argoproj/argo-cd resource_customizations at commit $commit (health.lua, health_test.yaml and the inputs it names only; Apache-2.0, see LICENSE)" >"$root/NOTICE"
find "$root" -name health.lua | wc -l | sed 's/$/ scripts/'
du -sh "$root"
