#!/usr/bin/env bash
# Runs the README's first command as a newcomer types it (the first ```sh block of README.md,
# from the repository root) and checks what it must show: plumb's main job on the shipped
# example finds the sync loop and exits 1 (findings). The README's second block must be the
# test command, `.ci/run`, which is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
blocks() { awk -v want="$1" '/^```sh$/ {n++; inside = (n == want); next} /^```/ {inside = 0} inside' README.md; }
first="$(blocks 1)"
second="$(blocks 2)"
[ -n "$first" ] || { echo "error: README.md: no first \`\`\`sh block (the quick start command)" >&2; exit 2; }
[ "$second" = ".ci/run" ] || { echo "error: README.md: the second \`\`\`sh block must be '.ci/run', found: $second" >&2; exit 2; }
echo "README quick start: $first" >&2
set +e
out="$(bash -c "$first" 2>&1)"
rc=$?
set -e
if [ "$rc" -ne 1 ]; then
  printf '%s\n' "$out" >&2
  echo "error: the README's quick start exited $rc, expected 1 (findings)" >&2
  exit 2
fi
for want in "payments-prod" "loop" "imagePullPolicy" "platform-policy-mutate" "overlays/prod/pull-policy.yaml:10"; do
  if ! grep -qF -- "$want" <<<"$out"; then
    printf '%s\n' "$out" >&2
    echo "error: the README's quick start output lacks '$want'" >&2
    exit 2
  fi
done
echo "README quick start: exit 1 with the loop, the webhook and the patch's line, as the README says" >&2
