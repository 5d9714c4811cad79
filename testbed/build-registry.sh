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
. "$(dirname "$0")/lib/go-tool.sh"

REGISTRY_VERSION=${REGISTRY_VERSION:-v3.1.2}
build_go_tool build-registry registry github.com/distribution/distribution/v3 "$REGISTRY_VERSION" \
  github.com/distribution/distribution/v3/cmd/registry \
  "-s -w -X github.com/distribution/distribution/v3/version.version=$REGISTRY_VERSION" --version
