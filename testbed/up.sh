#!/usr/bin/env bash
# Start a throw-away etcd + kube-apiserver (+ optional kube-controller-manager) on 127.0.0.1.
#
#   eval "$(testbed/up.sh)"          # prints only `export KUBECONFIG=... TESTBED_DIR=...` on stdout
#   eval "$(testbed/up.sh --kcm)"    # also start kube-controller-manager (or TESTBED_KCM=1)
#   eval "$(testbed/up.sh --audit)"  # also write the API server's audit log (or TESTBED_AUDIT=1):
#                                    # every request at Metadata level, JSON lines, $TESTBED_DIR/audit.log
#   testbed/down.sh                  # stop it again (uses $TESTBED_DIR)
#
# Binaries come from testbed/build.sh:
#   ${TESTBED_BIN:-${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/${K8S_VERSION:-<cat $CACHE/current>}/bin}
# Working dir: mktemp -d under ${TESTBED_TMP:-/dev/shm} (falls back to $TMPDIR). Logs: $TESTBED_DIR/*.log,
# PIDs: $TESTBED_DIR/pids ("name pid" per line, in start order).
# Env: TESTBED_KCM=1, TESTBED_AUDIT=1, TESTBED_START_TIMEOUT (seconds, default 90), TESTBED_KEEP_ON_FAIL=1 (keep dir on failure).
set -euo pipefail

KCM=${TESTBED_KCM:-0}
AUDIT=${TESTBED_AUDIT:-0}
for a in "$@"; do
  case "$a" in
    --kcm) KCM=1 ;;
    --no-kcm) KCM=0 ;;
    --audit) AUDIT=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "up.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done

log() { printf '[up %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

T_START=$(date +%s.%N)
CACHE=${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}
if [ -z "${TESTBED_BIN:-}" ]; then
  VER=${K8S_VERSION:-$(cat "$CACHE/current" 2>/dev/null || true)}
  [ -n "$VER" ] || die "no built version found in $CACHE/current; run testbed/build.sh first"
  TESTBED_BIN="$CACHE/$VER/bin"
fi
BIN=$TESTBED_BIN
for b in etcd kube-apiserver; do
  [ -x "$BIN/$b" ] || die "$BIN/$b missing; run testbed/build.sh"
done
[ "$KCM" = 1 ] && { [ -x "$BIN/kube-controller-manager" ] || die "$BIN/kube-controller-manager missing"; }
TIMEOUT=${TESTBED_START_TIMEOUT:-90}

TMPBASE=${TESTBED_TMP:-/dev/shm}
W=$(mktemp -d "$TMPBASE/plumb-testbed.XXXXXX" 2>/dev/null || mktemp -d "${TMPDIR:-/tmp}/plumb-testbed.XXXXXX")
chmod 700 "$W"
touch "$W/.plumb-testbed"   # marker checked by down.sh before rm -rf
: >"$W/pids"

cleanup_on_fail() {
  local rc=$?
  [ $rc -eq 0 ] && return
  log "start-up failed (rc=$rc); last log lines:"
  for f in "$W"/*.log; do
    case "$f" in */certs.log) continue ;; esac
    [ -f "$f" ] && { echo "==> $f" >&2; tail -n 25 "$f" >&2; }
  done
  if [ "${TESTBED_KEEP_ON_FAIL:-0}" = 1 ]; then
    TESTBED_DIR=$W "$(dirname "$0")/down.sh" --keep >&2 || true
    log "kept $W"
  else
    TESTBED_DIR=$W "$(dirname "$0")/down.sh" >&2 || true
  fi
}
trap cleanup_on_fail EXIT

# ---- free ports (bind 127.0.0.1:0 all at once so they are distinct) ----
free_ports() { # N
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
  else
    local out="" p
    while [ "$(wc -w <<<"$out")" -lt "$1" ]; do
      p=$(( (RANDOM % 20000) + 20000 ))
      ss -ltnH "sport = :$p" | grep -q . || case " $out " in *" $p "*) ;; *) out="$out $p" ;; esac
    done
    echo $out
  fi
}
read -r EP PP AP <<<"$(free_ports 3)"
log "dir=$W etcd=$EP peer=$PP apiserver=$AP bin=$BIN"

# ---- certificates (openssl, ECDSA P-256; CA -> leaf chain) ----
(
  cd "$W"
  exec >>"$W/certs.log" 2>&1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt -days 2 \
    -subj /CN=plumb-testbed-ca -addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign
  leaf() { # name subj eku [san]
    {
      echo "basicConstraints=critical,CA:false"
      echo "keyUsage=critical,digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=$3"
      [ -n "${4:-}" ] && echo "subjectAltName=$4"
    } >"$1.ext"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out "$1.crt" -extfile "$1.ext"
  }
  leaf apiserver /CN=127.0.0.1 serverAuth "IP:127.0.0.1,DNS:localhost"
  leaf admin "/O=system:masters/CN=admin" clientAuth
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key
  openssl pkey -in sa.key -pubout -out sa.pub
  chmod 600 ./*.key
) || die "certificate generation failed (see $W/certs.log)"

b64() { base64 -w0 <"$1"; }
SERVER="https://127.0.0.1:$AP"
echo "$SERVER" >"$W/server"
cat >"$W/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster:
    server: $SERVER
    certificate-authority-data: $(b64 "$W/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(b64 "$W/admin.crt")
    client-key-data: $(b64 "$W/admin.key")
contexts:
- name: testbed
  context:
    cluster: testbed
    user: admin
current-context: testbed
EOF
chmod 600 "$W/admin.kubeconfig"

# start NAME BINARY ARGS...: background process, stdin closed, output to $W/NAME.log, PID recorded.
start() {
  local name=$1; shift
  "$@" </dev/null >"$W/$name.log" 2>&1 &
  local pid=$!
  echo "$name $pid" >>"$W/pids"
  log "started $name pid=$pid"
}
alive() { kill -0 "$1" 2>/dev/null; }
pid_of() { awk -v n="$1" '$1==n {print $2}' "$W/pids"; }

# wait_for DESC NAME CMD...: poll CMD every 0.2 s until success, process NAME dies, or TIMEOUT.
wait_for() {
  local desc=$1 name=$2; shift 2
  local deadline=$(( $(date +%s) + TIMEOUT )) pid
  pid=$(pid_of "$name")
  until "$@" >/dev/null 2>&1; do
    alive "$pid" || die "$name (pid $pid) exited while waiting for $desc"
    [ "$(date +%s)" -lt "$deadline" ] || die "timeout (${TIMEOUT}s) waiting for $desc"
    sleep 0.2
  done
  log "ready: $desc ($(awk -v s="$T_START" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')s since start)"
}

# ---- etcd ----
ETCD_EXTRA=()
ETCD_HELP=$("$BIN/etcd" --help 2>&1 || true)
case "$ETCD_HELP" in *--unsafe-no-fsync*) ETCD_EXTRA+=(--unsafe-no-fsync=true) ;; esac  # etcd >= 3.5 only
start etcd "$BIN/etcd" --name=plumb-testbed --data-dir="$W/etcd-data" \
  --listen-client-urls="http://127.0.0.1:$EP" --advertise-client-urls="http://127.0.0.1:$EP" \
  --listen-peer-urls="http://127.0.0.1:$PP" --initial-advertise-peer-urls="http://127.0.0.1:$PP" \
  --initial-cluster="plumb-testbed=http://127.0.0.1:$PP" --logger=zap --log-level=warn "${ETCD_EXTRA[@]}"
wait_for "etcd /health" etcd curl -sf "http://127.0.0.1:$EP/health"

# ---- kube-apiserver ----
AUDIT_ARGS=()
if [ "$AUDIT" = 1 ]; then
  # Every request at Metadata level (who, verb, resource, namespace, name, URI; no bodies),
  # one JSON object per line, written before the request completes (blocking mode).
  printf '%s\n' 'apiVersion: audit.k8s.io/v1' 'kind: Policy' 'omitStages: [RequestReceived]' \
    'rules:' '- level: Metadata' >"$W/audit-policy.yaml"
  AUDIT_ARGS=(--audit-policy-file="$W/audit-policy.yaml" --audit-log-path="$W/audit.log"
    --audit-log-format=json --audit-log-mode=blocking --audit-log-maxsize=0)
fi
# Its command line is kept (apiserver.cmd) so testbed/restart-apiserver.sh can start it again.
APISERVER_CMD=("$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$EP" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$AP" \
  --cert-dir="$W/apiserver-certs" \
  --tls-cert-file="$W/apiserver.crt" --tls-private-key-file="$W/apiserver.key" \
  --client-ca-file="$W/ca.crt" \
  --authorization-mode=RBAC \
  --disable-admission-plugins=ServiceAccount \
  --service-cluster-ip-range=10.0.0.0/24 \
  --allow-privileged=true \
  --endpoint-reconciler-type=none \
  --service-account-issuer="$SERVER" \
  --service-account-key-file="$W/sa.pub" \
  --service-account-signing-key-file="$W/sa.key" \
  ${AUDIT_ARGS[@]+"${AUDIT_ARGS[@]}"} \
  --v=1)
printf '%q ' "${APISERVER_CMD[@]}" >"$W/apiserver.cmd"
start apiserver "${APISERVER_CMD[@]}"
CURL=(curl -sf --cacert "$W/ca.crt")
CURL_ADMIN=("${CURL[@]}" --cert "$W/admin.crt" --key "$W/admin.key")
wait_for "apiserver /readyz" apiserver "${CURL[@]}" "$SERVER/readyz"
wait_for "namespace default" apiserver "${CURL_ADMIN[@]}" "$SERVER/api/v1/namespaces/default"

# ---- optional kube-controller-manager ----
if [ "$KCM" = 1 ]; then
  start kcm "$BIN/kube-controller-manager" \
    --kubeconfig="$W/admin.kubeconfig" \
    --leader-elect=false --secure-port=0 \
    --controllers=deployment-controller,replicaset-controller,horizontal-pod-autoscaler-controller,namespace-controller,garbage-collector-controller,serviceaccount-controller \
    --horizontal-pod-autoscaler-sync-period=1s \
    --use-service-account-credentials=false \
    --v=1
  wait_for "serviceaccount default/default (KCM)" kcm "${CURL_ADMIN[@]}" "$SERVER/api/v1/namespaces/default/serviceaccounts/default"
fi

STARTUP=$(awk -v s="$T_START" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
echo "$STARTUP" >"$W/startup-seconds"
printf 'export KUBECONFIG=%s TESTBED_DIR=%s\n' "$W/admin.kubeconfig" "$W" >"$W/env"
log "test bed up in ${STARTUP}s: $SERVER ($("${CURL[@]}" "$SERVER/version" | sed -n 's/.*"gitVersion": "\([^"]*\)".*/\1/p'))"
trap - EXIT
cat "$W/env"
