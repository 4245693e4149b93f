#!/usr/bin/env bash
# Builds the pinned upstream binaries the `cluster` tests run against, into a cache folder
# outside the repo keyed by release:
#   $HUYGENS_TESTBED_CACHE/kubernetes-<version>/{kube-apiserver,kube-controller-manager,
#     kube-scheduler,kubelet,kubectl}
#   $HUYGENS_TESTBED_CACHE/etcd-<version>/etcd
#   $HUYGENS_TESTBED_CACHE/helm-<version>/helm   (helm/go.mod: the tests of the Helm chart)
# (HUYGENS_TESTBED_CACHE defaults to ~/.cache/huygens-testbed). A binary already there is kept,
# so a second run costs nothing; Go's own build cache makes a rebuild after `rm` quick too.
# Usage: testbed/build.sh [--print-dir]   Prints the three folders on its last three lines.
set -euo pipefail
cd "$(dirname "$0")"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
cache=${HUYGENS_TESTBED_CACHE:-$HOME/.cache/huygens-testbed}

# The versions come from the go.mod files, so they are written down once.
kube_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(cd etcd && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
kube_dir="$cache/kubernetes-$kube_version"
etcd_dir="$cache/etcd-$etcd_version"
helm_version=$(cd helm && go list -m -f '{{.Version}}' helm.sh/helm/v4)
helm_dir="$cache/helm-$helm_version"
if [ "${1:-}" = --print-dir ]; then echo "$kube_dir"; echo "$etcd_dir"; echo "$helm_dir"; exit 0; fi
mkdir -p "$kube_dir" "$etcd_dir" "$helm_dir"

# Version ldflags as Kubernetes' hack/lib/version.sh sets them, so `--version` and the
# apiserver's /version report the release.
minor=${kube_version#v*.}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

want=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
missing=()
for b in "${want[@]}"; do [ -x "$kube_dir/$b" ] || missing+=("k8s.io/kubernetes/cmd/$b"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "testbed: building ${missing[*]##*/} $kube_version into $kube_dir" >&2
  go build -trimpath -ldflags "$ldflags" -o "$kube_dir/" "${missing[@]}"
fi
if [ ! -x "$etcd_dir/etcd" ]; then
  echo "testbed: building etcd $etcd_version into $etcd_dir" >&2
  (cd etcd && go build -trimpath -ldflags "-s -w" -o "$etcd_dir/etcd" go.etcd.io/etcd/server/v3)
fi
if [ ! -x "$helm_dir/helm" ]; then
  echo "testbed: building helm $helm_version into $helm_dir" >&2
  (cd helm && go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version" \
    -o "$helm_dir/helm" helm.sh/helm/v4/cmd/helm)
fi
echo "$kube_dir"
echo "$etcd_dir"
echo "$helm_dir"
