#!/usr/bin/env bash
# Stop a test bed started by testbed/up.sh and remove its directory.
#
#   testbed/down.sh [TESTBED_DIR]     # default: $TESTBED_DIR
#   testbed/down.sh --keep [DIR]      # stop processes but keep the directory (logs)
#
# Only the PIDs listed in $TESTBED_DIR/pids are signalled, and only if their command line still
# mentions $TESTBED_DIR (guards against PID reuse). Order: kcm, apiserver, then etcd.
set -euo pipefail

KEEP=0
DIR=""
for a in "$@"; do
  case "$a" in
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) DIR=$a ;;
  esac
done
DIR=${DIR:-${TESTBED_DIR:-}}
log() { printf '[down %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

[ -n "$DIR" ] || { log "no TESTBED_DIR given"; exit 1; }
if [ ! -d "$DIR" ]; then log "$DIR does not exist; nothing to do"; exit 0; fi
[ -f "$DIR/.plumb-testbed" ] || { log "$DIR is not a plumb test bed dir (no .plumb-testbed marker); refusing"; exit 1; }

ours() { # PID: is this process still one of ours? (a zombie has an empty cmdline)
  local cmd
  cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline") || return 1
  case "$cmd" in *"$DIR"*) return 0 ;; *) return 1 ;; esac
}

stop() { # NAME PID
  local name=$1 pid=$2 i
  if ! ours "$pid"; then log "$name (pid $pid) not running"; return 0; fi
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do   # up to 20 s
    ours "$pid" || { log "stopped $name (pid $pid)"; return 0; }
    sleep 0.2
  done
  log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do ours "$pid" || return 0; sleep 0.2; done
  log "ERROR: $name (pid $pid) still alive"; return 1
}

rc=0
if [ -f "$DIR/pids" ]; then
  for name in kcm apiserver etcd; do
    while read -r n pid; do
      [ "$n" = "$name" ] && { stop "$n" "$pid" || rc=1; }
    done <"$DIR/pids"
  done
fi

if [ $rc -ne 0 ]; then log "some processes survived; keeping $DIR"; exit 1; fi
if [ "$KEEP" = 1 ]; then log "kept $DIR"; else rm -rf -- "$DIR"; log "removed $DIR"; fi
