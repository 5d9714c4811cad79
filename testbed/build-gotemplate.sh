#!/usr/bin/env bash
# Build the Go text/template oracle (testbed/gotemplate: Go's text/template with the Sprig
# functions, as ApplicationSet templates run with goTemplate: true) that plumb-appset's
# templates are compared with (crates/plumb-appset/tests/go_oracle.rs).
#
#   PLUMB_GOTEMPLATE="$(testbed/build-gotemplate.sh)"
#
# The binary lives OUTSIDE the repo, keyed by a hash of the program and its go.mod/go.sum:
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/gotemplate-oracle-<hash>/gotemplate-oracle
# Prints the binary's path on stdout (logs go to stderr). Idempotent; FORCE=1 rebuilds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC="$HERE/gotemplate"
CACHE=${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-local}
log() { printf '[build-gotemplate %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
hash=$(cd "$SRC" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16)
DIR="$CACHE/gotemplate-oracle-$hash"
BIN="$DIR/gotemplate-oracle"
if [ -z "${FORCE:-}" ] && [ -x "$BIN" ]; then
  log "up to date: $BIN"
  echo "$BIN"
  exit 0
fi
mkdir -p "$DIR"
W="$DIR/build"
rm -rf "$W"; mkdir -p "$W"
cp "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go "$W/"
LOGF="$DIR/build.log"
log "building with $("$GO" version) (log: $LOGF)"
t0=$(date +%s)
if ! (cd "$W" && "$GO" build -trimpath -ldflags "-s -w" -o "$BIN.tmp" .) >"$LOGF" 2>&1; then
  log "go build failed; last lines of $LOGF:"
  tail -n 15 "$LOGF" >&2
  exit 1
fi
mv -f "$BIN.tmp" "$BIN"
rm -rf "$W"
"$BIN" --version >&2
log "done: $BIN in $(( $(date +%s) - t0 ))s"
echo "$BIN"
