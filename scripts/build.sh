#!/usr/bin/env bash
# Configures and builds Huygens (release build with tests and benchmarks) in build/.
# Usage: scripts/build.sh [extra cmake args...]   Environment: BUILD_DIR (default build),
# JOBS (default: number of CPUs), TARGETS (space-separated Ninja targets; default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
source scripts/ccache-env.sh
cmake -G Ninja -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
# shellcheck disable=SC2086  # TARGETS is a list of words
ninja -C "$build_dir" -j "$jobs" ${TARGETS:-}
