#!/bin/sh
# Writes DIR/config.toml for a private containerd 1.6 whose root, state, plugin and CNI folders
# all live in DIR: CRI on with SOCKET as its gRPC address, IMAGE as the sandbox ("pause") image,
# SNAPSHOTTER (overlayfs, or native where overlay cannot mount), runc with the cgroupfs driver
# (SystemdCgroup false, as kubelet's cgroupDriver: cgroupfs wants) and restrict_oom_score_adj on
# (so it also runs where lowering oom_score_adj is denied, as in unprivileged CI containers).
# The CNI folders are empty unless the caller fills them (ContainerdEnv's pod network); pod network
# namespaces are mounted under DIR's state folder (netns_mounts_under_state_dir), not in
# /var/run/netns. Used by cri/testing/containerd_env.cc and testbed/kubelet.sh.
# Usage: containerd_config.sh DIR SOCKET IMAGE SNAPSHOTTER
set -eu
[ $# -eq 4 ] || { echo "usage: containerd_config.sh DIR SOCKET IMAGE SNAPSHOTTER" >&2; exit 2; }
dir=$1 socket=$2 image=$3 snapshotter=$4
mkdir -p "$dir/cni/bin" "$dir/cni/conf"
cat >"$dir/config.toml" <<TOML
version = 2
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$socket"
[ttrpc]
  address = "$socket.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$image"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$snapshotter"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$dir/cni/bin"
    conf_dir = "$dir/cni/conf"
TOML
