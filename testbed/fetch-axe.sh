#!/usr/bin/env bash
# Fetch axe-core (Deque's accessibility rules engine, MPL-2.0) from the npm registry: the
# accessibility check of plumb ui's pages in crates/plumb-cli/tests/browser.rs runs it in
# Chromium. Pinned by version and by the registry's integrity hash, checked here.
#
#   testbed/fetch-axe.sh          # prints the path of axe.min.js
#
# The file lives OUTSIDE the repo:
#   ${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/axe-core-<version>/axe.min.js
# Idempotent: an existing file whose hash matches is kept.
set -euo pipefail

AXE_VERSION=4.10.3
AXE_INTEGRITY='sha512-Xm7bpRXnDSX2YE2YFfBk2FnF0ep6tmG7xPh8iHee8MIcrgq762Nkce856dYtJYLkuIoYZvGfTs/PbZhideTcEg=='
cache=${PLUMB_TESTBED_CACHE:-$HOME/.cache/plumb-testbed}/axe-core-$AXE_VERSION
out=$cache/axe.min.js
if [ -s "$out" ] && [ -f "$cache/STAMP" ] && [ "$(cat "$cache/STAMP")" = "$AXE_INTEGRITY" ]; then
  echo "$out"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "error: npm is needed to fetch axe-core" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/plumb-axe.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "axe-core@$AXE_VERSION" >/dev/null)
tgz=$work/axe-core-$AXE_VERSION.tgz
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$AXE_INTEGRITY" ]; then
  echo "error: axe-core $AXE_VERSION: integrity $got, want $AXE_INTEGRITY" >&2
  exit 2
fi
mkdir -p "$cache"
tar -xzf "$tgz" -C "$work" package/axe.min.js package/LICENSE
cp "$work/package/axe.min.js" "$out"
cp "$work/package/LICENSE" "$cache/LICENSE"
echo "$AXE_INTEGRITY" > "$cache/STAMP"
echo "$out"
