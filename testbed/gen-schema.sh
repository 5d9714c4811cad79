#!/usr/bin/env bash
# Regenerates crates/plumb-core/data/k8s-schema.json from the OpenAPI document a real
# kube-apiserver serves (the test bed), plus client-go's scheme (tools/schemagen).
# Usage: testbed/gen-schema.sh   (builds and starts the test bed as needed, stops it after)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
"$here/build.sh" >&2
started=0
if [ -z "${TESTBED_DIR:-}" ]; then
  eval "$("$here/up.sh")"
  started=1
fi
trap '[ "$started" = 1 ] && "$here/down.sh" >&2 || true' EXIT
out=$(mktemp -d)
"$here/fetch-openapi.sh" "$out" >&2
(cd "$repo/tools/schemagen" && GOFLAGS=-mod=mod go run . "$out/v2/swagger.json") > "$repo/crates/plumb-core/data/k8s-schema.json.new"
mv "$repo/crates/plumb-core/data/k8s-schema.json.new" "$repo/crates/plumb-core/data/k8s-schema.json"
rm -rf "$out"
echo "wrote crates/plumb-core/data/k8s-schema.json" >&2
