#!/usr/bin/env bash
# Configures and builds Huygens (release build with tests and benchmarks) in build/.
# Usage: scripts/build.sh [extra cmake args...]   Environment: BUILD_DIR (default build),
# JOBS (default: number of CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
source scripts/ccache-env.sh
cmake -G Ninja -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C "$build_dir" -j "$jobs"
