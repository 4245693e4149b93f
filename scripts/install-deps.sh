#!/usr/bin/env bash
# Installs every Debian 12 package Huygens needs to build, test, benchmark and fuzz.
# Idempotent; needs root (or sudo). Used by the README's commands and by .ci/run.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git ccache
  libabsl-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libhwloc-dev hwloc bzip2
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  libcurl4-openssl-dev libcpp-httplib-dev libssl-dev openssl
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  containerd runc busybox-static iproute2 containernetworking-plugins
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
