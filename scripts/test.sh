#!/usr/bin/env bash
# The test suite, from a fresh Debian 12 machine: installs the packages, builds the pinned
# upstream Kubernetes binaries from their Go modules (testbed/build.sh, cached outside the
# repo), builds Huygens with gcc, runs every CTest test (unit, fixtures, end-to-end, and the
# `cluster` tier against a real kube-apiserver, etcd, kube-scheduler and kubelet), then builds
# the libFuzzer fuzzers with clang and runs each for a bounded time (FUZZ_SECONDS, default 20).
# Needs ../shared/fixtures beside the checkout (see README) and Go (see testbed/build.sh).
# SKIP_CLUSTER=1 leaves the real-cluster and oracle tiers out (no Go needed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The two build folders, the test cluster and its images take about 8 GB; say so up front when
# the disk is short rather than fail later on an unrelated-looking error.
free_gb=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
[ "${free_gb:-0}" -ge 10 ] ||
  echo "test.sh: warning: ${free_gb} GB free on this disk; a full run needs about 8 GB" >&2
if [ ! -d ../shared/fixtures ]; then
  echo "test.sh: ../shared/fixtures is missing; the fixture tests need it" >&2
  exit 2
fi
# The Go side, from their modules at the release pinned in testbed/go.mod: the upstream binaries
# of the `cluster` tier (testbed/build.sh) and the kubelet oracle of the `oracle` tier
# (testbed/oracle/build.sh, kubelet's own CPU manager code).
cluster=ON oracle=""
if [ "${SKIP_CLUSTER:-0}" = 1 ]; then
  cluster=OFF
else
  command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || { echo "test.sh: Go is needed for the cluster and oracle tiers (or SKIP_CLUSTER=1)" >&2; exit 2; }
  echo "test.sh: building the pinned upstream binaries and the kubelet oracle"
  testbed/build.sh >/dev/null
  oracle=$(testbed/oracle/build.sh | tail -1)
fi
export HUYGENS_KUBELET_ORACLE="$oracle"
# The differential test's size in this run: 100,000 seed-15 cases (issue 15), about 80-90 s on
# the shared 2-core CI machine (two oracle processes, streamed; docs/allocate.md).
export HUYGENS_ORACLE_CASES=${HUYGENS_ORACLE_CASES:-100000}
BUILD_DIR=build scripts/build.sh -DHUYGENS_BUILD_TESTS=ON -DHUYGENS_BUILD_BENCHMARKS=ON -DHUYGENS_WERROR=ON \
  -DHUYGENS_CLUSTER_TESTS=$cluster -DHUYGENS_KUBELET_ORACLE="$oracle"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  source scripts/ccache-env.sh
  CXX=clang++ CC=clang cmake -G Ninja -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHUYGENS_BUILD_FUZZERS=ON -DHUYGENS_BUILD_TESTS=OFF -DHUYGENS_BUILD_BENCHMARKS=OFF >/dev/null
  # Also the libraries with lock annotations: clang's -Wthread-safety fails on a violation.
  ninja -C build-fuzz -j "$(nproc)" fuzzers thread_safety
  # One fuzzer per core: each is single-threaded and runs for a fixed time.
  ctest --test-dir build-fuzz -L fuzz --output-on-failure -j "$(nproc)"
fi
