#!/usr/bin/env bash
# Build plumb's runtime image without pulling a base image: the root filesystem from Debian
# packages (mmdebstrap: the essential set, git, ca-certificates; no docs, man pages or
# locales), the user 65532, and a plumb binary built on this machine, stripped, committed with
# buildah (vfs storage, chroot isolation: no daemon, no overlay mounts, works as root in a
# container). The result is the Containerfile's runtime stage, for machines that reach Debian's
# packages but no container registry (CI). Then the binary is run from the image's filesystem.
#
#   deploy/build-image.sh [--binary PATH] [--tag NAME] [--root DIR] [--keep]
#
#   --binary PATH  the plumb binary (default: target/release/plumb, else target/debug/plumb)
#   --tag NAME     the image name (default: localhost/plumb:<workspace version>)
#   --root DIR     buildah's storage root (default: buildah's own); --keep keeps the image there,
#                  otherwise it is removed after the check
# Needs buildah and mmdebstrap (Debian packages) and root. Prints figures on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
BINARY="" TAG="localhost/plumb:$VERSION" ROOT="" KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) BINARY=$2; shift 2 ;;
    --tag) TAG=$2; shift 2 ;;
    --root) ROOT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build-image.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$BINARY" ]; then
  for b in target/release/plumb target/debug/plumb; do [ -x "$b" ] && { BINARY=$b; break; }; done
fi
[ -n "$BINARY" ] && [ -x "$BINARY" ] || { echo "build-image.sh: no plumb binary (cargo build -p plumb-cli, or --binary)" >&2; exit 2; }
for tool in buildah mmdebstrap strip; do
  command -v "$tool" >/dev/null || { echo "build-image.sh: $tool not found (apt-get install buildah mmdebstrap binutils)" >&2; exit 2; }
done
B=(buildah --storage-driver vfs)
[ -n "$ROOT" ] && B+=(--root "$ROOT" --runroot "$ROOT/run")
SUITE=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-bookworm}")
SUITE=${SUITE:-bookworm}

T0=$(date +%s)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/plumb-image.XXXXXX")
CTR=""
cleanup() {
  [ -n "$CTR" ] && "${B[@]}" rm "$CTR" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# The root filesystem, as the Containerfile's runtime stage has it. mmdebstrap uses this
# machine's apt sources (the same suite).
mmdebstrap --quiet --mode=root --variant=essential --include=git,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='echo "plumb:x:65532:" >>"$1/etc/group"' \
  --customize-hook='echo "plumb:x:65532:65532:plumb:/tmp:/usr/sbin/nologin" >>"$1/etc/passwd"' \
  --customize-hook='install -d -o 65532 -g 65532 "$1/var/cache/plumb"' \
  --customize-hook='rm -rf "$1/var/cache/apt" "$1/var/lib/apt/lists" "$1/var/log"/*' \
  "$SUITE" "$WORK/rootfs" >&2
install -D -m 0755 "$BINARY" "$WORK/rootfs/usr/local/bin/plumb"
strip --strip-all "$WORK/rootfs/usr/local/bin/plumb"
T_ROOTFS=$(date +%s)

CTR=$("${B[@]}" from scratch)
"${B[@]}" copy "$CTR" "$WORK/rootfs/" / >/dev/null
"${B[@]}" config --user 65532:65532 --env HOME=/tmp --env PLUMB_REPO_CACHE=/var/cache/plumb/repos \
  --entrypoint '["/usr/local/bin/plumb"]' --cmd controller \
  --label org.opencontainers.image.title=plumb --label "org.opencontainers.image.version=$VERSION" "$CTR"
"${B[@]}" commit --quiet "$CTR" "$TAG" >/dev/null
"${B[@]}" rm "$CTR" >/dev/null
CTR=""
T_IMAGE=$(date +%s)

# The binary from the image's filesystem, as its user: the version, git and the CA bundle.
CTR=$("${B[@]}" from "$TAG")
want=$("$BINARY" --version)
got=$("${B[@]}" run --isolation chroot --user 65532:65532 "$CTR" -- /usr/local/bin/plumb --version)
[ "$got" = "$want" ] || { echo "build-image.sh: the image's plumb --version printed '$got', want '$want'" >&2; exit 1; }
"${B[@]}" run --isolation chroot --user 65532:65532 "$CTR" -- sh -c \
  'git --version >/dev/null && test -s /etc/ssl/certs/ca-certificates.crt && test "$(id -u)" = 65532' \
  || { echo "build-image.sh: git, the CA bundle or user 65532 missing in the image" >&2; exit 1; }
"${B[@]}" rm "$CTR" >/dev/null
CTR=""

SIZE=$("${B[@]}" images --format '{{.Size}}' "$TAG" | head -n1)
BIN_SIZE=$(du -h "$WORK/rootfs/usr/local/bin/plumb" | cut -f1)
echo "image $TAG: $got from the image's filesystem; size $SIZE (plumb binary $BIN_SIZE stripped);" \
  "root filesystem $((T_ROOTFS - T0)) s, image $((T_IMAGE - T_ROOTFS)) s" >&2
if [ "$KEEP" = 0 ]; then
  "${B[@]}" rmi "$TAG" >/dev/null
fi
echo "$TAG"
