#!/usr/bin/env bash
# Restart the kube-apiserver of a test bed started by testbed/up.sh, keeping etcd (and its data):
# SIGTERM (SIGKILL after 15 s), wait for it to exit, start it again with the same command line (apiserver.cmd), same
# port and certificates; returns once /readyz answers. For fault tests.
#
#   testbed/restart-apiserver.sh [TESTBED_DIR]    # default: $TESTBED_DIR
set -euo pipefail
DIR=${1:-${TESTBED_DIR:-}}
[ -n "$DIR" ] && [ -f "$DIR/.plumb-testbed" ] && [ -f "$DIR/apiserver.cmd" ] \
  || { echo "restart-apiserver.sh: $DIR is not a test bed started by this up.sh" >&2; exit 2; }
TIMEOUT=${TESTBED_START_TIMEOUT:-90}
pid=$(awk '$1=="apiserver" {print $2}' "$DIR/pids" | tail -n1)
ours() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF "$DIR"; }
if [ -n "$pid" ] && ours "$pid"; then
  kill -TERM "$pid"
  # A graceful shutdown drains in-flight requests (up to a minute): after 15 s it is killed.
  for _ in $(seq 1 150); do ours "$pid" || break; sleep 0.1; done
  ours "$pid" && kill -KILL "$pid" 2>/dev/null
  for _ in $(seq 1 100); do ours "$pid" || break; sleep 0.1; done
  ours "$pid" && { echo "restart-apiserver.sh: apiserver $pid did not stop" >&2; exit 1; }
fi
eval "set -- $(cat "$DIR/apiserver.cmd")"
"$@" </dev/null >>"$DIR/apiserver.log" 2>&1 &
new=$!
# The pids file names the running apiserver (down.sh stops it).
sed -i "s/^apiserver .*/apiserver $new/" "$DIR/pids"
server=$(cat "$DIR/server")
deadline=$(( $(date +%s) + TIMEOUT ))
until curl -sf --cacert "$DIR/ca.crt" "$server/readyz" >/dev/null 2>&1; do
  kill -0 "$new" 2>/dev/null || { echo "restart-apiserver.sh: apiserver exited; see $DIR/apiserver.log" >&2; exit 1; }
  [ "$(date +%s)" -lt "$deadline" ] || { echo "restart-apiserver.sh: not ready after ${TIMEOUT}s" >&2; exit 1; }
  sleep 0.2
done
echo "apiserver restarted: pid $new" >&2
