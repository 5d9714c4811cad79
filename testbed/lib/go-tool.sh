# Sourced by testbed/build-helm.sh, testbed/build-jsonnet.sh and testbed/build-registry.sh:
# builds one command of a Go module into
# ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/<name>-<version>/<name>, in a wrapper
# module of its own (<dir>/build: go.mod, build.log), and prints that directory. A STAMP
# naming module@version makes a second call free (FORCE=1 rebuilds).
#
#   build_go_tool LOGTAG NAME MODULE VERSION CMD_PACKAGE LDFLAGS VERSION_ARGS...
#
# VERSION_ARGS: the arguments the built binary prints its version with (checked after the build).
# Environment: GO (default: go on PATH, else /usr/local/go/bin/go), GOTOOLCHAIN (default local).

build_go_tool() {
  local tag=$1 name=$2 module=$3 version=$4 cmd=$5 ldflags=$6
  shift 6
  local cache=${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}
  local go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  export CGO_ENABLED=0
  export GOFLAGS=-mod=mod
  export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

  local dir="$cache/$name-$version"
  local bin="$dir/$name"
  local w="$dir/build"
  local logf="$w/build.log"
  local want="$module@$version"

  log() { printf '[%s %s] %s\n' "$tag" "$(date -u +%H:%M:%S)" "$*" >&2; }

  if [ -z "${FORCE:-}" ] && [ -x "$bin" ] && [ -f "$dir/STAMP" ] && [ "$(head -n1 "$dir/STAMP")" = "$want" ]; then
    log "up to date: $bin ($want)"
    echo "$dir"
    return 0
  fi

  mkdir -p "$w"
  : >"$logf"
  log "building $want with $("$go" version) (log: $logf)"

  # run_timed STEP cmd...: runs cmd in the wrapper module, output to the log, logs wall time.
  run_timed() {
    local step=$1; shift
    local t0 rc=0
    t0=$(date +%s)
    (cd "$w" && "$@") >>"$logf" 2>&1 || rc=$?
    log "$step: rc=$rc wall=$(( $(date +%s) - t0 ))s"
    if [ "$rc" != 0 ]; then
      log "$step failed; last lines of $logf:"
      tail -n 15 "$logf" >&2
    fi
    return $rc
  }

  local t0
  t0=$(date +%s)
  [ -f "$w/go.mod" ] || run_timed go-mod-init "$go" mod init "testbed.local/${name}build"
  run_timed go-get "$go" get "$want"
  run_timed go-build "$go" build -trimpath -ldflags "$ldflags" -o "$bin.tmp" "$cmd"
  mv -f "$bin.tmp" "$bin"

  "$bin" "$@" >&2
  {
    echo "$want"
    echo "go: $("$go" version)"
    echo "built: $(date -u +%FT%TZ) total_wall=$(( $(date +%s) - t0 ))s"
  } >"$dir/STAMP"
  log "done: $bin in $(( $(date +%s) - t0 ))s"
  echo "$dir"
}
