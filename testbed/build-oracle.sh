#!/usr/bin/env bash
# Build argo-diff-oracle (testbed/oracle/): Argo CD's compare, gitops-engine's diff.Diff at the
# commit Argo CD 3.2 pins, as a JSON-lines filter for plumb's differential test
# (crates/plumb-diff/tests/differential.rs).
#
#   testbed/build-oracle.sh        # prints the binary's path on stdout (logs go to stderr)
#   PLUMB_ARGO_ORACLE="$(testbed/build-oracle.sh)" REQUIRE_ARGO_ORACLE=1 cargo test -p plumb-diff --test differential
#
# The binary lives OUTSIDE the repo, keyed by a hash of the wrapper module's sources:
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/argo-diff-oracle-<hash>/argo-diff-oracle
# Idempotent: when that binary exists, it exits at once. Go's module and build caches are the
# caller's GOMODCACHE/GOCACHE when set (.ci/run gives throwaway ones), else a temporary
# directory removed on exit.
# Env knobs: GO (go binary), FORCE=1 (rebuild).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC="$HERE/oracle"
CACHE=${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-local}

log() { printf '[build-oracle %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

hash=$(cd "$SRC" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16)
DIR="$CACHE/argo-diff-oracle-$hash"
BIN="$DIR/argo-diff-oracle"
if [ -z "${FORCE:-}" ] && [ -x "$BIN" ]; then
  log "up to date: $BIN"
  echo "$BIN"
  exit 0
fi

scratch=""
if [ -z "${GOMODCACHE:-}" ] || [ -z "${GOCACHE:-}" ]; then
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/plumb-oracle-go.XXXXXX")
  export GOMODCACHE="$scratch/mod" GOCACHE="$scratch/build"
  trap 'chmod -R u+w "$scratch" 2>/dev/null || true; rm -rf "$scratch"' EXIT
fi

mkdir -p "$DIR"
W="$DIR/build"
rm -rf "$W"; mkdir -p "$W"
cp "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go "$W/"
LOGF="$DIR/build.log"
log "building $(sed -n 's/^[[:space:]]*github.com\/argoproj\/gitops-engine \(v[^ ]*\).*/gitops-engine \1/p' "$SRC/go.mod" | head -n1) with $("$GO" version) (log: $LOGF)"
t0=$(date +%s)
if ! (cd "$W" && "$GO" build -trimpath -ldflags "-s -w" -o "$BIN.tmp" .) >"$LOGF" 2>&1; then
  log "go build failed; last lines of $LOGF:"
  tail -n 15 "$LOGF" >&2
  exit 1
fi
mv -f "$BIN.tmp" "$BIN"
rm -rf "$W"
log "done: $BIN in $(( $(date +%s) - t0 ))s"
echo "$BIN"
