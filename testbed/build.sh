#!/usr/bin/env bash
# Build the plumb test bed binaries (kube-apiserver, kube-controller-manager, etcd) from Go modules.
#
#   testbed/build.sh            # default: k8s v1.36.3 + etcd v3.6.16, falls back to v1.34.4, then v1.37.2
#   K8S_VERSION=v1.34.4 testbed/build.sh   # build exactly this version (no fallback)
#
# Binaries and wrapper modules live OUTSIDE the repo:
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/<k8s-version>/bin/{kube-apiserver,kube-controller-manager,etcd}
# and "$CACHE/current" names the version that up.sh uses by default.
#
# Idempotent: if the binaries and a matching STAMP exist, it exits immediately.
# Env knobs:
#   K8S_VERSION     only try this Kubernetes version (vX.Y.Z); staging modules use v0.Y.Z
#   ETCD_VERSION    etcd server version (default: paired with the k8s minor, see etcd_for)
#   BUILD_KUBECTL=1 also build a version-matched kubectl into the same bin dir
#   ETCD_APT_FALLBACK=0  do not fall back to Debian's etcd-server (3.4.23) if the etcd build fails
#   GO              go binary (default: go on PATH, else /usr/local/go/bin/go)
#   FORCE=1         rebuild even if the stamp matches
set -euo pipefail

CACHE=${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export CGO_ENABLED=0

export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
TIME=$(command -v /usr/bin/time || true)

mkdir -p "$CACHE"
ATTEMPTS_LOG="$CACHE/build-attempts.log"

log() { printf '[build %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# etcd version paired with a k8s minor (same pairing as controller-tools' envtest matrix).
etcd_for() {
  case "$1" in
    v1.37.*) echo "${ETCD_VERSION:-v3.7.3}" ;;
    *)       echo "${ETCD_VERSION:-v3.6.16}" ;;
  esac
}

# run_timed NAME LOGFILE cmd...: runs cmd, appends output to LOGFILE, records wall time + peak RSS in STATS.
run_timed() {
  local name=$1 logf=$2; shift 2
  local t0 t1 rc=0 tv="$STATS_DIR/$name.time"
  t0=$(date +%s)
  if [ -n "$TIME" ]; then
    "$TIME" -v -o "$tv" "$@" >>"$logf" 2>&1 || rc=$?
  else
    "$@" >>"$logf" 2>&1 || rc=$?
  fi
  t1=$(date +%s)
  local rss="n/a"
  [ -f "$tv" ] && rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tv")
  printf '%-28s rc=%s wall=%ss peak_rss_kb=%s\n' "$name" "$rc" "$((t1 - t0))" "$rss" >>"$STATS_DIR/build-stats.txt"
  log "$name: rc=$rc wall=$((t1 - t0))s peak_rss_kb=$rss"
  return $rc
}

build_k8s() { # K S BIN
  local K=$1 S=$2 BIN=$3
  local W="$CACHE/$K/k8s-build"
  local logf="$CACHE/$K/build.log"
  mkdir -p "$W" "$BIN"
  if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ] && [ -z "${FORCE:-}" ] &&
     { [ "${BUILD_KUBECTL:-0}" != 1 ] || [ -x "$BIN/kubectl" ]; }; then
    log "k8s $K binaries already present"; return 0
  fi
  log "k8s $K: wrapper module in $W (log: $logf)"
  (
    cd "$W"
    [ -f go.mod ] || "$GO" mod init testbed.local/k8sbuild >>"$logf" 2>&1
    # The exact go.mod of k8s.io/kubernetes@$K: its ./staging replaces give the list of staging modules.
    local GOMOD
    GOMOD=$("$GO" mod download -json "k8s.io/kubernetes@$K" 2>>"$logf" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    if [ -z "$GOMOD" ] || [ ! -f "$GOMOD" ]; then
      echo "cannot download k8s.io/kubernetes@$K (see $logf)" >&2; exit 1
    fi
    local mods n=0
    mods=$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/.*#\1#p' "$GOMOD")
    for m in $mods; do "$GO" mod edit -replace="$m=$m@$S"; n=$((n + 1)); done
    log "k8s $K: $n staging replaces -> $S"
    # Main module's godebug line picks GODEBUG defaults; copy k8s' own.
    local gd
    gd=$(sed -n 's/^godebug[[:space:]]\{1,\}\(default=go[0-9.]*\).*/\1/p' "$GOMOD" | head -n1)
    [ -n "$gd" ] && "$GO" mod edit -godebug="$gd"
    local pkgs="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager"
    [ "${BUILD_KUBECTL:-0}" = 1 ] && pkgs="$pkgs k8s.io/kubernetes/cmd/kubectl"
    local getargs=""
    for p in $pkgs; do getargs="$getargs $p@$K"; done
    # shellcheck disable=SC2086
    run_timed "k8s-$K-go-get" "$logf" "$GO" get $getargs || { echo "go get failed for k8s $K (see $logf)" >&2; exit 1; }

    local MIN=${K#v1.}; MIN=${MIN%%.*}
    local D LDF="-s -w"
    D=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      LDF="$LDF -X $p.gitVersion=$K -X $p.gitMajor=1 -X $p.gitMinor=$MIN -X $p.gitTreeState=clean -X $p.buildDate=$D"
    done
    # shellcheck disable=SC2086
    run_timed "k8s-$K-go-build" "$logf" "$GO" build -trimpath -tags selinux,notest,grpcnotrace \
      -ldflags "$LDF" -o "$BIN/" $pkgs || { echo "go build failed for k8s $K (see $logf)" >&2; exit 1; }
  )
}

build_etcd() { # E BIN K
  local E=$1 BIN=$2 K=$3
  local W="$CACHE/$K/etcd-build-$E"
  local logf="$CACHE/$K/build.log"
  mkdir -p "$W" "$BIN"
  if [ -x "$BIN/etcd" ] && [ -z "${FORCE:-}" ]; then log "etcd already present"; return 0; fi
  log "etcd $E: wrapper module in $W"
  (
    cd "$W"
    [ -f go.mod ] || "$GO" mod init testbed.local/etcdbuild >>"$logf" 2>&1
    run_timed "etcd-$E-go-get" "$logf" "$GO" get "go.etcd.io/etcd/server/v3@$E" || exit 1
    # Always -o .../etcd: the import path ends in /v3, go would name the binary "server".
    run_timed "etcd-$E-go-build" "$logf" "$GO" build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3 || exit 1
  )
}

etcd_apt_fallback() { # BIN
  local BIN=$1
  [ "${ETCD_APT_FALLBACK:-1}" = 1 ] || return 1
  log "falling back to Debian etcd-server (3.4.23)"
  if [ ! -x /usr/bin/etcd ]; then
    apt-get install -y --no-install-recommends etcd-server >&2 || { apt-get update >&2 && apt-get install -y --no-install-recommends etcd-server >&2; } || return 1
  fi
  ln -sf /usr/bin/etcd "$BIN/etcd"
}

try_version() { # K
  local K=$1
  local S="v0.${K#v1.}"
  local E; E=$(etcd_for "$K")
  local BIN="$CACHE/$K/bin"
  STATS_DIR="$CACHE/$K"
  mkdir -p "$BIN"
  local want="$K etcd=$E"
  if [ -z "${FORCE:-}" ] && [ -f "$BIN/STAMP" ] && [ "$(head -n1 "$BIN/STAMP")" = "$want" ] &&
     [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ] && [ -x "$BIN/etcd" ] &&
     { [ "${BUILD_KUBECTL:-0}" != 1 ] || [ -x "$BIN/kubectl" ]; }; then
    echo "$K" >"$CACHE/current"
    log "up to date: $BIN ($want)"
    return 0
  fi
  log "building k8s $K (staging $S) + etcd $E with $("$GO" version)"
  local t0; t0=$(date +%s)
  if ! build_k8s "$K" "$S" "$BIN"; then
    echo "$(date -u +%FT%TZ) k8s $K FAILED: $(grep -E 'error|unknown revision|not found|go: ' "$CACHE/$K/build.log" | tail -n 5 | tr '\n' ' ')" >>"$ATTEMPTS_LOG"
    return 1
  fi
  local etcd_note="$E (built from go.etcd.io/etcd/server/v3)"
  if ! build_etcd "$E" "$BIN" "$K"; then
    echo "$(date -u +%FT%TZ) etcd $E FAILED: $(grep -E 'error|go: ' "$CACHE/$K/build.log" | tail -n 5 | tr '\n' ' ')" >>"$ATTEMPTS_LOG"
    etcd_apt_fallback "$BIN" || return 1
    etcd_note="Debian etcd-server $(/usr/bin/etcd --version 2>/dev/null | head -n1)"
  fi
  "$BIN/kube-apiserver" --version >&2
  "$BIN/etcd" --version 2>&1 | head -n1 >&2
  {
    echo "$want"
    echo "etcd: $etcd_note"
    echo "go: $("$GO" version)"
    echo "built: $(date -u +%FT%TZ) total_wall=$(( $(date +%s) - t0 ))s"
  } >"$BIN/STAMP"
  du -sh "$BIN"/* >>"$STATS_DIR/build-stats.txt" 2>/dev/null || true
  echo "$(date -u +%FT%TZ) k8s $K + etcd $E OK" >>"$ATTEMPTS_LOG"
  echo "$K" >"$CACHE/current"
  log "done: $BIN"
}

if [ -n "${K8S_VERSION:-}" ]; then
  candidates=$K8S_VERSION
else
  candidates="v1.36.3 v1.34.4 v1.37.2"
fi

for K in $candidates; do
  if try_version "$K"; then
    echo "$CACHE/$K/bin"
    exit 0
  fi
  log "k8s $K failed; see $ATTEMPTS_LOG and $CACHE/$K/build.log"
done
log "all candidate versions failed: $candidates"
exit 1
