#!/usr/bin/env bash
# One real kubelet for this machine, joined to a cluster that testbed/cluster.sh brought up: a
# private containerd (CRI on, runc with the cgroupfs driver, a locally built busybox image as
# both the sandbox "pause" image and the containers' image: no registry is needed) and the
# pinned kubelet with a KubeletConfiguration file and a client certificate for
# system:node:<name> (group system:nodes, so the Node authorizer and NodeRestriction apply).
# Needs root, containerd, ctr, runc and a static busybox (Debian: containerd runc busybox-static).
#
# Usage:
#   testbed/kubelet.sh up      DIR [--name NODE]  start containerd and the kubelet; wait until
#                                                 the Node is registered (after a failed `up`,
#                                                 `down` removes what it started)
#   testbed/kubelet.sh restart DIR                stop the kubelet and start it again (same
#                                                 config; containers keep running)
#   testbed/kubelet.sh down    DIR                stop the kubelet and containerd, kill what they
#                                                 left, unmount, remove the cgroups and data
#   testbed/kubelet.sh env     DIR                print the assignments for tests (below)
# DIR is the cluster.sh folder. What `up` adds to it:
#   node/containerd/   containerd's config.toml, root, state and socket (containerd.sock)
#   node/kubelet/      config.yaml (the KubeletConfiguration), root (kubelet's --root-dir)
#   node/env           HUYGENS_KUBELET_NODE, HUYGENS_KUBELET_SOCKET, HUYGENS_KUBELET_CONFIG,
#                      HUYGENS_KUBELET_KUBECONFIG, HUYGENS_KUBELET_ROOT, HUYGENS_KUBELET_CGROUP, HUYGENS_KUBELET_IMAGE,
#                      HUYGENS_KUBELET_SNAPSHOTTER (for `ctr images import --snapshotter`)
#   logs/containerd.log, logs/kubelet.log; pids/containerd, pids/kubelet
# The kubelet runs as DESIGN.md's allocatable node mode wants: cpuManagerPolicy none (Huygens
# sets the cpusets), cgroup v1 allowed (failCgroupV1: false), swap allowed, the QoS cgroups under
# a private cgroup root (/huygens-testbed-<name>) in every hierarchy, so that `down` removes
# exactly what this kubelet made. Serving and health ports are free loopback ports.
# Disk-pressure eviction is off (kubelet ignores a "0%" threshold): the testbed shares its disk
# with builds and other checkouts, and a kubelet that evicts the tests' pods when that disk runs
# low fails tests for a reason that is not theirs (the project's CI of 8343579 failed so, on a
# disk left almost full). `up` warns instead when under 5% of the disk is free. Memory eviction
# stays at 100Mi.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)

die() { echo "testbed/kubelet.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: kubelet.sh up|restart|down|env DIR [--name NODE] (see the header of this file)"
cmd=$1 dir=$2; shift 2
if [ ! -d "$dir" ]; then
  [ "$cmd" = down ] && exit 0
  die "no folder $dir (testbed/cluster.sh up $dir first)"
fi
dir=$(cd "$dir" && pwd)
node_dir=$dir/node
image=huygens.local/busybox:testbed

# shellcheck source=testbed/procs.sh
. "$here/procs.sh"

# Every cgroup hierarchy: the v1 controllers' mount points under /sys/fs/cgroup, or the v2 root.
hierarchies() {
  awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) ~ /^cgroup2?$/) print $5; break } }' \
    /proc/self/mountinfo | sort -u
}

start_kubelet() {
  # shellcheck disable=SC1091
  . "$node_dir/env"
  start kubelet "$kube_bin/kubelet" --config "$node_dir/kubelet/config.yaml" \
    --kubeconfig "$HUYGENS_KUBELET_KUBECONFIG" --root-dir "$HUYGENS_KUBELET_ROOT" \
    --cert-dir "$node_dir/kubelet/pki" --hostname-override "$HUYGENS_KUBELET_NODE" \
    --v=2
}

# Waits until kubelet's /healthz answers ok (90 s).
wait_kubelet() {
  local port; port=$(cat "$node_dir/kubelet/healthz-port")
  for _ in $(seq 1 360); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$(cat "$dir/pids/kubelet")" 2>/dev/null || break
    sleep 0.25
  done
  tail -30 "$dir/logs/kubelet.log" >&2
  die "the kubelet did not become healthy (log: $dir/logs/kubelet.log)"
}

bins() {
  local out; out=$("$here/build.sh") || die "building the upstream binaries failed"
  kube_bin=$(sed -n 1p <<<"$out")
}

case "$cmd" in
up)
  name=huygens-$(hostname -s | tr 'A-Z_' 'a-z-')
  while [ $# -gt 0 ]; do
    case "$1" in
      --name) name=$2; shift 2;;
      *) die "up: unknown option $1";;
    esac
  done
  [ -f "$dir/admin.kubeconfig" ] || die "no cluster in $dir (testbed/cluster.sh up $dir first)"
  [ -f "$dir/pids/kubelet" ] && die "a kubelet already runs for $dir (kubelet.sh down $dir first)"
  [ "$(id -u)" = 0 ] || die "needs root (the kubelet and containerd manage cgroups and mounts)"
  for b in containerd ctr runc; do command -v "$b" >/dev/null || die "$b is not installed"; done
  [ -x /bin/busybox ] || die "/bin/busybox is missing (Debian package busybox-static)"
  bins
  mkdir -p "$node_dir/containerd" "$node_dir/kubelet/root" "$node_dir/kubelet/pki"
  sock=$node_dir/containerd/containerd.sock
  cgroup_root=/huygens-testbed-$name

  # containerd (cri/testing/containerd_config.sh, as the containerd tests run it): overlayfs
  # cannot stack on overlayfs (a containerised CI): native there.
  snapshotter=overlayfs
  [ "$(stat -f -c %T "$node_dir")" = overlayfs ] && snapshotter=native
  grep -qw overlay /proc/filesystems || snapshotter=native
  sh "$src/cri/testing/containerd_config.sh" "$node_dir/containerd" "$sock" "$image" "$snapshotter"
  # A CNI network list, so that the runtime reports NetworkReady and the Node becomes Ready. Its
  # plugin does not exist and is never run: every pod here uses host networking.
  printf '{"cniVersion": "0.4.0", "name": "testbed", "plugins": [{"type": "huygens-testbed-none"}]}\n' \
    >"$node_dir/containerd/cni/conf/10-testbed.conflist"
  start containerd containerd --config "$node_dir/containerd/config.toml"
  for _ in $(seq 1 120); do
    ctr -a "$sock" version >/dev/null 2>&1 && break
    sleep 0.25
  done
  ctr -a "$sock" version >/dev/null 2>&1 || { tail -20 "$dir/logs/containerd.log" >&2; die "containerd did not start"; }
  arch=$(uname -m); case $arch in x86_64) arch=amd64;; aarch64) arch=arm64;; esac
  D=$node_dir BUSYBOX=/bin/busybox IMAGE=$image ARCH=$arch sh "$src/cri/testing/busybox_image.sh" ||
    die "building the busybox image failed"
  ctr -a "$sock" -n k8s.io images import --snapshotter "$snapshotter" "$node_dir/image.tar" >/dev/null ||
    die "ctr images import failed"

  # The kubelet's cgroup root, in every hierarchy (kubelet refuses a root that does not exist);
  # a new cgroup v1 cpuset starts empty, so it gets its parent's CPUs and memory nodes.
  for h in $(hierarchies); do
    mkdir -p "$h$cgroup_root"
    if [ -f "$h/cpuset.cpus" ] && [ ! -f "$h/cgroup.controllers" ]; then
      cat "$h/cpuset.cpus" >"$h$cgroup_root/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h$cgroup_root/cpuset.mems"
    fi
  done

  # Disk-pressure eviction is off (header); say so when the disk is close to full.
  free_pct=$(df -P "$node_dir" | awk 'NR == 2 { print int(100 * $4 / $2) }')
  [ "${free_pct:-100}" -ge 5 ] || echo "testbed/kubelet.sh: warning: only ${free_pct}% of the disk" \
    "under $node_dir is free; builds and containers may fail" >&2

  # Credentials: a client certificate for system:node:<name> in system:nodes.
  kubeconfig=$("$here/cluster.sh" user "$dir" "system:node:$name" system:nodes)

  port=10250
  while ! { port_free "$port" && port_free $((port + 1)); }; do port=$((port + 2)); done
  echo $((port + 1)) >"$node_dir/kubelet/healthz-port"
  cat >"$node_dir/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((port + 1))
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$dir/pki/ca.crt"}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: "unix://$sock"
imageServiceEndpoint: "unix://$sock"
cgroupDriver: cgroupfs
cgroupRoot: "$cgroup_root"
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
failCgroupV1: false
failSwapOn: false
cpuManagerPolicy: none
memoryManagerPolicy: None
topologyManagerPolicy: none
registerNode: true
podLogsDir: "$node_dir/kubelet/logs"
serializeImagePulls: false
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
evictionHard: {memory.available: 100Mi, nodefs.available: "0%", nodefs.inodesFree: "0%", imagefs.available: "0%", imagefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  cat >"$node_dir/env" <<EOF
HUYGENS_KUBELET_NODE=$name
HUYGENS_KUBELET_SOCKET=$sock
HUYGENS_KUBELET_CONFIG=$node_dir/kubelet/config.yaml
HUYGENS_KUBELET_KUBECONFIG=$kubeconfig
HUYGENS_KUBELET_ROOT=$node_dir/kubelet/root
HUYGENS_KUBELET_CGROUP=$cgroup_root
HUYGENS_KUBELET_IMAGE=$image
HUYGENS_KUBELET_SNAPSHOTTER=$snapshotter
EOF
  start_kubelet
  wait_kubelet
  for _ in $(seq 1 240); do
    KUBECONFIG=$dir/admin.kubeconfig "$kube_bin/kubectl" get node "$name" >/dev/null 2>&1 && break
    sleep 0.25
  done
  KUBECONFIG=$dir/admin.kubeconfig "$kube_bin/kubectl" get node "$name" >/dev/null 2>&1 ||
    die "node $name did not register (log: $dir/logs/kubelet.log)"
  # The kubelet registers its Node with the taint node.kubernetes.io/not-ready:NoSchedule; the
  # node lifecycle controller, which the testbed does not run (cluster.sh), would lift it once
  # the Node is Ready. Done here instead.
  KUBECONFIG=$dir/admin.kubeconfig "$kube_bin/kubectl" wait --for condition=Ready --timeout=60s \
    node "$name" >/dev/null || die "node $name did not become Ready (log: $dir/logs/kubelet.log)"
  KUBECONFIG=$dir/admin.kubeconfig "$kube_bin/kubectl" taint node "$name" \
    node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  echo "testbed: kubelet for node $name up (containerd $sock, log $dir/logs/kubelet.log)" >&2
  ;;
restart)
  [ -f "$node_dir/env" ] || die "no kubelet in $dir (kubelet.sh up $dir first)"
  bins
  stop kubelet
  mv "$dir/logs/kubelet.log" "$dir/logs/kubelet.log.1" 2>/dev/null || true  # the log before
  start_kubelet
  wait_kubelet
  ;;
down)
  stop kubelet
  sock=$node_dir/containerd/containerd.sock
  cgroup_root=""
  if [ -f "$node_dir/env" ]; then
    # shellcheck disable=SC1091
    . "$node_dir/env"; cgroup_root=$HUYGENS_KUBELET_CGROUP
  fi
  stop containerd
  # The shims of this containerd outlive it: found by their -address argument, killed by pid;
  # then whatever still runs in the kubelet's cgroups (the containers).
  for p in /proc/[0-9]*; do
    { tr '\0' '\n' <"$p/cmdline"; } 2>/dev/null | grep -qxF "$sock" && { kill -KILL "${p#/proc/}" 2>/dev/null || true; }
  done
  if [ -n "$cgroup_root" ]; then
    for h in $(hierarchies); do
      [ -d "$h$cgroup_root" ] || continue
      find "$h$cgroup_root" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do
        kill -KILL "$pid" 2>/dev/null || true
      done
    done
    sleep 0.5
    for h in $(hierarchies); do
      [ -d "$h$cgroup_root" ] && { find "$h$cgroup_root" -depth -type d -exec rmdir {} \; 2>/dev/null || true; }
    done
  fi
  # Mounts left under the folder (container root filesystems, sandbox shm), deepest first.
  awk -v d="$node_dir" '$5 == d || index($5, d "/") == 1 {print length($5), $5}' /proc/self/mountinfo |
    sort -rn | cut -d' ' -f2- | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$node_dir"
  ;;
env)
  [ -f "$node_dir/env" ] || die "no kubelet in $dir (kubelet.sh up $dir first)"
  cat "$node_dir/env"
  ;;
*) die "unknown command $cmd" ;;
esac
