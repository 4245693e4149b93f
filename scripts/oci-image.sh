#!/bin/sh
# Writes an OCI image layout tar (image-spec v1.0: oci-layout, index.json, blobs/sha256/...) of
# one uncompressed layer, the files of a root filesystem folder, without a container engine.
# The tar loads with `ctr images import` (the index names the image through the annotation
# io.containerd.image.name) and with any tool that reads OCI layouts (skopeo, podman load).
#
# Usage: scripts/oci-image.sh ROOTFS NAME ARCH OUT.tar ENTRYPOINT [ARG...]
#   ROOTFS      folder whose content is the image's root (owner 0:0, mtime 0 in the layer)
#   NAME        the image reference, e.g. huygens.local/huygens-agent:0.1.0
#   ARCH        OCI architecture: amd64, arm64, ...
#   OUT.tar     the image tar to write
#   ENTRYPOINT  the image's Entrypoint (absolute path inside ROOTFS) and its arguments (Cmd is
#               empty); arguments must not hold '"' or '\'.
# The same ROOTFS, NAME and ENTRYPOINT give the same bytes (digests from sha256sum), so an
# unchanged image imports as a no-op. Used by scripts/images.sh (the component images) and
# cri/testing/busybox_image.sh (the tests' busybox image).
set -eu
[ $# -ge 5 ] || { echo "usage: oci-image.sh ROOTFS NAME ARCH OUT.tar ENTRYPOINT [ARG...]" >&2; exit 2; }
rootfs=$1 name=$2 arch=$3 out=$4; shift 4
[ -d "$rootfs" ] || { echo "oci-image.sh: no folder $rootfs" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/oci-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/oci/blobs/sha256"

# The entrypoint as a JSON array.
entry="" sep=""
for a in "$@"; do entry="$entry$sep\"$a\""; sep=","; done

tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "$rootfs" -cf "$work/layer.tar" .
# blob FILE: moves FILE into the layout under its digest; prints "DIGEST SIZE".
blob() { d=$(sha256sum "$1" | cut -d' ' -f1); s=$(stat -c %s "$1"); mv "$1" "$work/oci/blobs/sha256/$d"; echo "$d $s"; }
set -- $(blob "$work/layer.tar"); ld=$1 ls=$2
printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":[%s],"Env":["PATH=/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$arch" "$entry" "$ld" >"$work/config.json"
set -- $(blob "$work/config.json"); cd_=$1 cs=$2
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$cd_" "$cs" "$ld" "$ls" >"$work/manifest.json"
set -- $(blob "$work/manifest.json"); md=$1 ms=$2
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$md" "$ms" "$arch" "$name" "${name##*:}" >"$work/oci/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$work/oci" -cf "$out" oci-layout index.json blobs
