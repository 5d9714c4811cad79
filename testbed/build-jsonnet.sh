#!/usr/bin/env bash
# Build go-jsonnet's `jsonnet` command (the Jsonnet implementation Argo CD's repo server links)
# from its Go module: the oracle plumb's Jsonnet rendering is compared with
# (crates/plumb-render/tests/jsonnet_oracle.rs).
#
#   testbed/build-jsonnet.sh                            # default: go-jsonnet v0.22.0
#   JSONNET_VERSION=v0.21.0 testbed/build-jsonnet.sh    # another served version
#
# v0.22.0 is the version Argo CD's go.mod requires (github.com/google/go-jsonnet).
# The binary and its throwaway wrapper module live OUTSIDE the repo:
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/jsonnet-<version>/jsonnet
# Prints the binary's directory on stdout (logs go to stderr), so
#   PLUMB_JSONNET="$(testbed/build-jsonnet.sh)/jsonnet"
# Idempotent: if the binary and a matching STAMP exist, it exits immediately.
# Env knobs: JSONNET_VERSION, GO, FORCE=1 (as testbed/build-helm.sh).
set -euo pipefail
. "$(dirname "$0")/lib/go-tool.sh"

JSONNET_VERSION=${JSONNET_VERSION:-v0.22.0}
build_go_tool build-jsonnet jsonnet github.com/google/go-jsonnet "$JSONNET_VERSION" \
  github.com/google/go-jsonnet/cmd/jsonnet "-s -w" --version
