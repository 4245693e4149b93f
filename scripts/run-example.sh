#!/usr/bin/env bash
# The main job on its built-in example, from a fresh Debian 12 machine: installs the
# packages, builds, and runs `huygens simulate` (embedded cluster and workload).
# Extra arguments are passed to `huygens simulate`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD_DIR=build scripts/build.sh -DHUYGENS_BUILD_TESTS=OFF -DHUYGENS_BUILD_BENCHMARKS=OFF
exec build/cmd/huygens simulate "$@"
