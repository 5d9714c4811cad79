#!/usr/bin/env bash
# Build the CNCF distribution registry (the OCI registry the OCI Helm tests push charts to with
# `helm push`) from its Go module.
#
#   testbed/build-registry.sh                              # default: distribution v3.1.2
#   REGISTRY_VERSION=v3.1.1 testbed/build-registry.sh
#
# The binary and its throwaway wrapper module live OUTSIDE the repo:
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/registry-<version>/registry
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/registry-<version>/build/   (go.mod, build.log)
# Prints the binary's directory on stdout (logs go to stderr), so
#   PLUMB_REGISTRY="$(testbed/build-registry.sh)/registry"
# Idempotent: if the binary and a matching STAMP exist, it exits immediately.
# Env knobs:
#   REGISTRY_VERSION  github.com/distribution/distribution/v3 version (vX.Y.Z)
#   GO                go binary (default: go on PATH, else /usr/local/go/bin/go)
#   FORCE=1           rebuild even if the stamp matches
set -euo pipefail

CACHE=${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}
REGISTRY_VERSION=${REGISTRY_VERSION:-v3.1.2}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export CGO_ENABLED=0
export GOFLAGS=-mod=mod
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

DIR="$CACHE/registry-$REGISTRY_VERSION"
BIN="$DIR/registry"
W="$DIR/build"
LOGF="$W/build.log"

log() { printf '[build-registry %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

want="github.com/distribution/distribution/v3@$REGISTRY_VERSION"
if [ -z "${FORCE:-}" ] && [ -x "$BIN" ] && [ -f "$DIR/STAMP" ] && [ "$(head -n1 "$DIR/STAMP")" = "$want" ]; then
  log "up to date: $BIN ($want)"
  echo "$DIR"
  exit 0
fi

mkdir -p "$W"
: >"$LOGF"
log "building $want with $("$GO" version) (log: $LOGF)"

run_timed() {
  local name=$1; shift
  local t0 rc=0
  t0=$(date +%s)
  (cd "$W" && "$@") >>"$LOGF" 2>&1 || rc=$?
  log "$name: rc=$rc wall=$(( $(date +%s) - t0 ))s"
  if [ "$rc" != 0 ]; then
    log "$name failed; last lines of $LOGF:"
    tail -n 15 "$LOGF" >&2
  fi
  return $rc
}

t0=$(date +%s)
[ -f "$W/go.mod" ] || run_timed go-mod-init "$GO" mod init testbed.local/registrybuild
run_timed go-get "$GO" get "$want"

LDF="-s -w -X github.com/distribution/distribution/v3/version.version=$REGISTRY_VERSION"
run_timed go-build "$GO" build -trimpath -ldflags "$LDF" -o "$BIN.tmp" \
  github.com/distribution/distribution/v3/cmd/registry
mv -f "$BIN.tmp" "$BIN"

"$BIN" --version >&2
{
  echo "$want"
  echo "go: $("$GO" version)"
  echo "built: $(date -u +%FT%TZ) total_wall=$(( $(date +%s) - t0 ))s"
} >"$DIR/STAMP"
log "done: $BIN in $(( $(date +%s) - t0 ))s"
echo "$DIR"
