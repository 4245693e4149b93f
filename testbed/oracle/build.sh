#!/usr/bin/env bash
# Builds the kubelet oracle (testbed/oracle, see main.go) from the k8s.io/kubernetes release
# pinned in testbed/go.mod, into the same version-keyed cache folder as testbed/build.sh:
#   $HUYGENS_TESTBED_CACHE/kubernetes-<version>/huygens-kubelet-oracle
# The oracle reaches kubelet's unexported take and hint functions through
# overlay/zz_huygens_oracle_export.go and overlay/zz_huygens_oracle_devices.go, which
# `go build -overlay` adds to kubelet's cpumanager and devicemanager packages; no kubelet file is
# changed or copied. Rebuilt when a source is newer than the binary.
# Usage: testbed/oracle/build.sh [--print-path]   Prints the binary's path on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0 GOFLAGS=-mod=mod
cache=${HUYGENS_TESTBED_CACHE:-$HOME/.cache/huygens-testbed}
kube_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
bin="$cache/kubernetes-$kube_version/huygens-kubelet-oracle"
if [ "${1:-}" = --print-path ]; then echo "$bin"; exit 0; fi
mkdir -p "$(dirname "$bin")"
# Go refuses overlays of files beneath GOMODCACHE, so kubelet's module is mirrored as a tree
# of symlinks to the module cache's files (nothing copied), which an alternate go.mod
# (-modfile) puts in place of k8s.io/kubernetes; the overlay adds the wrapper file there.
mod_dir="$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)"
work="$cache/kubernetes-$kube_version/oracle-build"
src_tree="$work/kubernetes"
if [ ! -f "$src_tree/go.mod" ]; then
  rm -rf "$src_tree"; mkdir -p "$work"
  cp -rs "$mod_dir" "$src_tree.tmp" && mv "$src_tree.tmp" "$src_tree"
fi
cp go.mod "$work/go.mod"; cp go.sum "$work/go.sum"
printf '\nreplace k8s.io/kubernetes => %s\n' "$src_tree" >>"$work/go.mod"
overlay="$work/overlay.json"
printf '{"Replace":{"%s/pkg/kubelet/cm/cpumanager/zz_huygens_oracle_export.go":"%s",' \
  "$src_tree" "$PWD/oracle/overlay/zz_huygens_oracle_export.go" >"$overlay"
printf '"%s/pkg/kubelet/cm/devicemanager/zz_huygens_oracle_devices.go":"%s"}}\n' \
  "$src_tree" "$PWD/oracle/overlay/zz_huygens_oracle_devices.go" >>"$overlay"
stale=0
[ -x "$bin" ] || stale=1
for f in oracle/*.go oracle/overlay/*.go go.mod go.sum; do [ "$f" -nt "$bin" ] && stale=1; done
if [ "$stale" = 1 ]; then
  echo "testbed: building huygens-kubelet-oracle (kubelet $kube_version) into $bin" >&2
  go build -trimpath -modfile "$work/go.mod" -overlay "$overlay" -o "$bin" ./oracle
fi
echo "$bin"
