#!/usr/bin/env bash
# The test suite, from a fresh Debian 12 machine: installs the packages, builds with gcc,
# runs every CTest test (unit, fixtures, end-to-end), then builds the libFuzzer fuzzers with
# clang and runs each for a bounded time (FUZZ_SECONDS, default 20).
# Needs ../shared/fixtures beside the checkout (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ ! -d ../shared/fixtures ]; then
  echo "test.sh: ../shared/fixtures is missing; the fixture tests need it" >&2
  exit 2
fi
# The kubelet oracle (label `oracle`): kubelet's own CPU manager code at the release pinned in
# testbed/go.mod. Without Go it is not built and the oracle tests skip themselves.
oracle=""
if command -v go >/dev/null; then
  oracle=$(testbed/oracle/build.sh | tail -1)
fi
export HUYGENS_KUBELET_ORACLE="$oracle"
BUILD_DIR=build scripts/build.sh -DHUYGENS_BUILD_TESTS=ON -DHUYGENS_BUILD_BENCHMARKS=ON \
  -DHUYGENS_KUBELET_ORACLE="$oracle"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  source scripts/ccache-env.sh
  CXX=clang++ CC=clang cmake -G Ninja -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHUYGENS_BUILD_FUZZERS=ON -DHUYGENS_BUILD_TESTS=OFF -DHUYGENS_BUILD_BENCHMARKS=OFF >/dev/null
  ninja -C build-fuzz -j "$(nproc)" fuzzers
  ctest --test-dir build-fuzz -L fuzz --output-on-failure
fi
