#!/usr/bin/env bash
# Download the OpenAPI documents of a running test bed.
#
#   testbed/fetch-openapi.sh [OUT_DIR]      # default: $TESTBED_DIR/openapi
#
# Writes:
#   OUT/version.json                  /version
#   OUT/v2/swagger.json               /openapi/v2 (Accept: application/json)
#   OUT/v3/index.json                 /openapi/v3 (discovery index)
#   OUT/v3/<path>.json                every group-version listed in the index, e.g. v3/api/v1.json,
#                                     v3/apis/apps/v1.json (fetched via its serverRelativeURL, ?hash=...)
# Auth: the admin client cert in $TESTBED_DIR (ca.crt, admin.crt, admin.key, server).
set -euo pipefail

: "${TESTBED_DIR:?TESTBED_DIR not set (eval \"\$(testbed/up.sh)\" first)}"
OUT=${1:-$TESTBED_DIR/openapi}
SERVER=$(cat "$TESTBED_DIR/server")
CURL=(curl -sSf --retry 3 --cacert "$TESTBED_DIR/ca.crt" --cert "$TESTBED_DIR/admin.crt" --key "$TESTBED_DIR/admin.key")
log() { printf '[fetch-openapi] %s\n' "$*" >&2; }

mkdir -p "$OUT/v2" "$OUT/v3"
"${CURL[@]}" -H 'Accept: application/json' "$SERVER/version" -o "$OUT/version.json"
"${CURL[@]}" -H 'Accept: application/json' "$SERVER/openapi/v2" -o "$OUT/v2/swagger.json"
"${CURL[@]}" -H 'Accept: application/json' "$SERVER/openapi/v3" -o "$OUT/v3/index.json"

# index: {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}
if command -v jq >/dev/null 2>&1; then
  entries=$(jq -r '.paths | to_entries[] | "\(.key)\t\(.value.serverRelativeURL)"' "$OUT/v3/index.json")
else
  entries=$(python3 -c 'import json,sys
for k,v in json.load(open(sys.argv[1]))["paths"].items(): print(k+"\t"+v["serverRelativeURL"])' "$OUT/v3/index.json")
fi

n=0
while IFS=$'\t' read -r path url; do
  [ -n "$path" ] || continue
  f="$OUT/v3/$path.json"
  mkdir -p "$(dirname "$f")"
  "${CURL[@]}" -H 'Accept: application/json' "$SERVER$url" -o "$f"
  n=$((n + 1))
done <<<"$entries"

log "v2: $OUT/v2/swagger.json ($(wc -c <"$OUT/v2/swagger.json") bytes)"
log "v3: $n group-version documents under $OUT/v3 (index: $OUT/v3/index.json)"
echo "$OUT"
