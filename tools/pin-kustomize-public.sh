#!/usr/bin/env bash
# Pins public kustomize trees as test data under tests/kustomize-public/<project>/:
# manifests only (YAML, kustomization files and the files generators read), each
# project with its LICENSE and a NOTICE naming the origin and commit.
#
#   tools/pin-kustomize-public.sh PROJECT GIT_DIR URL 'PATH...' ['EXCLUDE_REGEX']
#
# GIT_DIR is a clone (bare is fine) at the commit to pin; paths keep their place in
# the repository so that references between directories still resolve.
set -euo pipefail
project=$1 git_dir=$2 url=$3 paths=$4 exclude=${5:-'^$'}
root=$(cd "$(dirname "$0")/.." && pwd)/tests/kustomize-public/$project
commit=$(git --git-dir="$git_dir" rev-parse HEAD)
rm -rf "$root"
mkdir -p "$root"
# shellcheck disable=SC2086
git --git-dir="$git_dir" archive --format=tar HEAD -- $paths | tar -x -C "$root"
# Not manifests: documentation, code, images, build files, unless a kustomization
# names them (a generator may read any file).
names=$(find "$root" -name 'kustomization.y*ml' -o -name Kustomization | xargs cat)
find "$root" \( -type f -o -type l \) \( -name '*.md' -o -name '*.go' -o -name '*.sh' -o -name '*.py' \
  -o -name '*.png' -o -name '*.svg' -o -name '*.jpg' -o -name '*.gif' -o -name 'Makefile' \
  -o -name 'Dockerfile' -o -name 'OWNERS' -o -name '.gitignore' -o -name 'go.mod' \
  -o -name 'go.sum' -o -name 'Tiltfile' \) -print |
  while read -r f; do
    grep -qF "$(basename "$f")" <<<"$names" || rm -f "$f"
  done
find "$root" -type f | sed "s|^$root/||" | { grep -E "$exclude" || true; } |
  while read -r f; do rm -f "$root/$f"; done
find "$root" -type d -empty -delete
git --git-dir="$git_dir" show HEAD:LICENSE >"$root/LICENSE"
echo "$url $paths at commit $commit (manifests only; Apache-2.0, see LICENSE)" >"$root/NOTICE"
du -sh "$root"
