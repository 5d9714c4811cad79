#!/usr/bin/env bash
# Build the helm CLI (used by `plumb render` for Helm charts, as Argo CD runs `helm template`)
# from its Go module.
#
#   testbed/build-helm.sh                        # default: helm v3.22.0
#   HELM_VERSION=v3.21.4 testbed/build-helm.sh   # another served version (see go-partial.tsv)
#
# The binary and its throwaway wrapper module live OUTSIDE the repo:
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/helm-<version>/helm
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/helm-<version>/build/   (go.mod, build.log)
# Prints the binary's directory on stdout (logs go to stderr), so
#   PATH="$(testbed/build-helm.sh):$PATH"   or   PLUMB_HELM="$(testbed/build-helm.sh)/helm"
# Idempotent: if the binary and a matching STAMP exist, it exits immediately.
# Env knobs:
#   HELM_VERSION  helm.sh/helm/v3 version (vX.Y.Z)
#   GO            go binary (default: go on PATH, else /usr/local/go/bin/go)
#   FORCE=1       rebuild even if the stamp matches
set -euo pipefail
. "$(dirname "$0")/lib/go-tool.sh"

HELM_VERSION=${HELM_VERSION:-v3.22.0}
# helm's own Makefile stamps these; without them `helm version` says v3.x-dev style defaults.
PKG=helm.sh/helm/v3/internal/version
build_go_tool build-helm helm helm.sh/helm/v3 "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
  "-s -w -X $PKG.version=$HELM_VERSION -X $PKG.gitTreeState=clean" version --short
