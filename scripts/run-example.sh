#!/usr/bin/env bash
# The main job on its built-in example, from a fresh Debian 12 machine: installs the
# packages, builds only the `huygens` command (not the services or the tests), runs
# `huygens simulate` (embedded cluster and workload) and prints the path of its HTML report.
# Extra arguments are passed to `huygens simulate`; without an --html of their own the report
# goes to $BUILD_DIR/example-report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
scripts/install-deps.sh
BUILD_DIR=$build_dir TARGETS=huygens scripts/build.sh -DHUYGENS_BUILD_TESTS=OFF -DHUYGENS_BUILD_BENCHMARKS=OFF
html=""
previous=""
for arg in "$@"; do
  case "$arg" in
    --html=*) html=${arg#--html=} ;;
    *) [ "$previous" = "--html" ] && html=$arg ;;
  esac
  previous=$arg
done
args=("$@")
if [ -z "$html" ]; then
  html=$build_dir/example-report.html
  args+=(--html "$html")
fi
"$build_dir"/cmd/huygens simulate "${args[@]}"
echo "run-example: HTML report: $(realpath "$html")"
