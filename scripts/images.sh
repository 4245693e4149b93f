#!/usr/bin/env bash
# Builds the OCI images of the two services, without a container engine: the binaries that
# `cmake --install` installs from a build folder (stripped), each with the shared libraries it
# loads (as ldd resolves them on this machine, so build on the distribution the nodes may run
# any of: the image carries its own loader and libraries) and nothing else. One image tar per
# component, written by scripts/oci-image.sh:
#   OUT/huygens-agent.tar      REGISTRY/huygens-agent:VERSION      entrypoint /bin/huygens-agent
#   OUT/huygens-scheduler.tar  REGISTRY/huygens-scheduler:VERSION  entrypoint /bin/huygens-scheduler
# VERSION is the CMake project version (the Helm chart's appVersion); REGISTRY defaults to
# huygens.local (the chart's image.registry). Load on a node with
#   ctr -n k8s.io images import OUT/huygens-agent.tar
# or push with any OCI tool (skopeo copy oci-archive:OUT/huygens-agent.tar docker://...).
# Usage: scripts/images.sh [--build-dir DIR] [--out DIR] [--registry R]   (defaults: build,
# build/images, huygens.local). The build folder must hold the built services
# (scripts/build.sh, or TARGETS="huygens-agent huygens-scheduler" scripts/build.sh).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build out="" registry=huygens.local
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$(cd "$2" && pwd); shift 2;;
    --out) out=$2; shift 2;;
    --registry) registry=$2; shift 2;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    *) echo "images.sh: unknown option $1 (see --help)" >&2; exit 2;;
  esac
done
out=${out:-$build/images}
mkdir -p "$out"; out=$(cd "$out" && pwd)
version=$(sed -n 's/^project(huygens VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "images.sh: no project version in CMakeLists.txt" >&2; exit 2; }
arch=$(uname -m); case $arch in x86_64) arch=amd64;; aarch64) arch=arm64;; esac

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/stage" --strip >/dev/null ||
  { echo "images.sh: cmake --install $build failed (is it built?)" >&2; exit 2; }
for component in huygens-agent huygens-scheduler; do
  bin=$tmp/stage/bin/$component
  [ -x "$bin" ] || { echo "images.sh: $build does not install $component" >&2; exit 2; }
  root=$tmp/$component
  mkdir -p "$root/bin" "$root/tmp"
  cp "$bin" "$root/bin/"
  # Every library ldd resolves ("name => /path (addr)") and the loader ("/lib64/ld-... (addr)"),
  # at the same path inside the image, as regular files.
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u |
    while read -r lib; do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  if ldd "$bin" | grep -q "not found"; then
    echo "images.sh: $component needs a library this machine lacks:" >&2
    ldd "$bin" | grep "not found" >&2; exit 2
  fi
  sh "$src/scripts/oci-image.sh" "$root" "$registry/$component:$version" "$arch" "$out/$component.tar" \
    "/bin/$component"
  echo "images.sh: $out/$component.tar ($registry/$component:$version, $(du -h "$out/$component.tar" | cut -f1))"
done
