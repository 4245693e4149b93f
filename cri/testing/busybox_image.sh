#!/bin/sh
# Builds a tiny OCI image layout tar, $D/image.tar, holding $BUSYBOX (a statically linked
# busybox) as bin/busybox with the links sh, sleep and cat, entrypoint `sleep 1000000`, named
# $IMAGE for `ctr images import`; $ARCH is the OCI architecture (amd64, arm64). No registry is
# needed: the same image serves as the pod sandbox (pause) image and as the containers' image.
# The layout is written by scripts/oci-image.sh (reproducible). Used by
# cri/testing/containerd_env.cc and testbed/kubelet.sh.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$D/image-build" && mkdir -p "$D/image-build/bin"
cp "$BUSYBOX" "$D/image-build/bin/busybox"
for l in sh sleep cat; do ln -s busybox "$D/image-build/bin/$l"; done
sh "$src/scripts/oci-image.sh" "$D/image-build" "$IMAGE" "$ARCH" "$D/image.tar" /bin/sleep 1000000
