#!/bin/sh
# Builds a tiny OCI image layout tar, $D/image.tar, holding $BUSYBOX (a statically linked
# busybox) as bin/busybox with the links sh, sleep and cat, entrypoint `sleep 1000000`, named
# $IMAGE for `ctr images import`; $ARCH is the OCI architecture (amd64, arm64). No registry is
# needed: the same image serves as the pod sandbox (pause) image and as the containers' image.
# Digests come from sha256sum; the tar is reproducible. Used by cri/testing/containerd_env.cc
# and testbed/kubelet.sh.
set -eu
cd "$D"
rm -rf image-build && mkdir -p image-build/layer/bin image-build/oci/blobs/sha256
cd image-build
cp "$BUSYBOX" layer/bin/busybox
for l in sh sleep cat; do ln -s busybox "layer/bin/$l"; done
tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C layer -cf layer.tar bin
blob() { d=$(sha256sum "$1" | cut -d' ' -f1); s=$(stat -c %s "$1"); mv "$1" "oci/blobs/sha256/$d"; echo "$d $s"; }
set -- $(blob layer.tar); LD=$1; LS=$2
printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":["/bin/sleep"],"Cmd":["1000000"],"Env":["PATH=/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$ARCH" "$LD" > config.json
set -- $(blob config.json); CD=$1; CS=$2
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' "$CD" "$CS" "$LD" "$LS" > manifest.json
set -- $(blob manifest.json); MD=$1; MS=$2
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s"}}]}' "$MD" "$MS" "$ARCH" "$IMAGE" > oci/index.json
printf '{"imageLayoutVersion":"1.0.0"}' > oci/oci-layout
tar -C oci -cf ../image.tar oci-layout index.json blobs
