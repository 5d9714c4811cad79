#!/usr/bin/env bash
# Build the helm CLI (used by `plumb render` for Helm charts, as Argo CD runs `helm template`)
# from its Go module.
#
#   testbed/build-helm.sh                        # default: helm v3.22.0
#   HELM_VERSION=v3.21.4 testbed/build-helm.sh   # another served version (see go-partial.tsv)
#
# The binary and its throwaway wrapper module live OUTSIDE the repo:
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/helm-<version>/helm
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/helm-<version>/build/   (go.mod, build.log)
# Prints the binary's directory on stdout (logs go to stderr), so
#   PATH="$(testbed/build-helm.sh):$PATH"   or   PLUMB_HELM="$(testbed/build-helm.sh)/helm"
# Idempotent: if the binary and a matching STAMP exist, it exits immediately.
# Env knobs:
#   HELM_VERSION  helm.sh/helm/v3 version (vX.Y.Z)
#   GO            go binary (default: go on PATH, else /usr/local/go/bin/go)
#   FORCE=1       rebuild even if the stamp matches
set -euo pipefail

CACHE=${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export CGO_ENABLED=0
export GOFLAGS=-mod=mod
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

DIR="$CACHE/helm-$HELM_VERSION"
BIN="$DIR/helm"
W="$DIR/build"
LOGF="$W/build.log"

log() { printf '[build-helm %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

want="helm.sh/helm/v3@$HELM_VERSION"
if [ -z "${FORCE:-}" ] && [ -x "$BIN" ] && [ -f "$DIR/STAMP" ] && [ "$(head -n1 "$DIR/STAMP")" = "$want" ]; then
  log "up to date: $BIN ($want)"
  echo "$DIR"
  exit 0
fi

mkdir -p "$W"
: >"$LOGF"
log "building $want with $("$GO" version) (log: $LOGF)"

# run_timed NAME cmd...: runs cmd in the wrapper module, output to LOGF, logs wall time.
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
[ -f "$W/go.mod" ] || run_timed go-mod-init "$GO" mod init testbed.local/helmbuild
run_timed go-get "$GO" get "$want"

# helm's own Makefile stamps these; without them `helm version` says v3.x-dev style defaults.
PKG=helm.sh/helm/v3/internal/version
LDF="-s -w -X $PKG.version=$HELM_VERSION -X $PKG.gitTreeState=clean"
run_timed go-build "$GO" build -trimpath -ldflags "$LDF" -o "$BIN.tmp" helm.sh/helm/v3/cmd/helm
mv -f "$BIN.tmp" "$BIN"

"$BIN" version --short >&2
{
  echo "$want"
  echo "go: $("$GO" version)"
  echo "built: $(date -u +%FT%TZ) total_wall=$(( $(date +%s) - t0 ))s"
} >"$DIR/STAMP"
log "done: $BIN in $(( $(date +%s) - t0 ))s"
echo "$DIR"
