#!/usr/bin/env bash
# Huygens installed with one `helm install` on the testbed's real node, from the images this
# repository builds (CTest `deploy_helm_install`, label cluster; docs/install.md):
#   1. scripts/images.sh builds the agent and scheduler images from the build folder; they are
#      imported into the node's containerd (no registry);
#   2. a real kubelet (testbed/kubelet.sh) and kube-scheduler (for the chart's own pods) run;
#   3. `helm install` of deploy/helm/huygens with the node's paths (runtime socket, kubelet
#      root and config), system CPU 0, --wait: the agent DaemonSet and huygens-scheduler run
#      from the images and become Ready;
#   4. a Guaranteed 1-CPU pod for huygens-scheduler is bound with an allocation, and the agent
#      (in its container) applies it through CRI: the container's cgroup cpuset is that CPU;
#   5. `huygens status` (and `kubectl huygens status`) shows the live CPU map of the real node
#      with that pod holding its CPU and the agent's pod on the system pool;
#   6. `helm uninstall` removes everything the chart made.
# Needs root, containerd, ctr, runc, busybox-static and 2 or more CPUs (skips with 77 otherwise);
# HUYGENS_TESTBED_DIR (the running cluster), HUYGENS_BUILD_DIR (the build folder) and
# HUYGENS_CLI (the huygens binary).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${HUYGENS_TESTBED_DIR:?run through CTest (fixture testbed)}
build=${HUYGENS_BUILD_DIR:?} cli=${HUYGENS_CLI:?}
[ "$(id -u)" = 0 ] || { echo "helm_install_test: skipped (needs root)"; exit 77; }
for b in containerd ctr runc; do command -v $b >/dev/null || { echo "helm_install_test: skipped (no $b)"; exit 77; }; done
[ -x /bin/busybox ] || { echo "helm_install_test: skipped (no busybox-static)"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "helm_install_test: skipped (needs 2 CPUs)"; exit 77; }

work=$dir/helm-install
rm -rf "$work"; mkdir -p "$work"
bins=$("$src/testbed/build.sh")
kube_bin=$(sed -n 1p <<<"$bins"); helm=$(sed -n 3p <<<"$bins")/helm
export KUBECONFIG=$dir/admin.kubeconfig
kubectl() { "$kube_bin/kubectl" "$@"; }
node=helm-node
ks_pid=""
fail() {
  echo "helm_install_test: FAILED: $*" >&2
  kubectl get pods -A -o wide >&2 || true
  kubectl -n huygens-system logs daemonset/huygens-agent --tail 40 >&2 || true
  kubectl -n huygens-system logs deployment/huygens-scheduler --tail 40 >&2 || true
  kubectl -n huygens-system get events >&2 || true
  tail -20 "$dir/logs/kubelet.log" >&2 || true
  exit 1
}
cleanup() {
  "$helm" uninstall huygens -n huygens-system --wait --timeout 60s >/dev/null 2>&1 || true
  kubectl delete pod -n default exclusive --ignore-not-found --grace-period 0 --force >/dev/null 2>&1 || true
  [ -n "$ks_pid" ] && kill "$ks_pid" 2>/dev/null || true
  "$src/testbed/kubelet.sh" down "$dir" >>"$work/kubelet.sh.log" 2>&1 || true
  kubectl delete node "$node" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete noderesourcetopologies.topology.node.k8s.io "$node" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete namespace huygens-system --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

# What earlier tests of the testbed left (a `kubectl apply` of deploy/, their pods) would collide
# with the release or crowd the node: removed first.
kubectl delete clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding \
  -l app.kubernetes.io/part-of=huygens --ignore-not-found >/dev/null
kubectl delete namespace huygens-system --ignore-not-found --wait --timeout 120s >/dev/null
kubectl delete pods -n default --all --grace-period 0 --force >/dev/null 2>&1 || true

# 1-2. The node, the images in its containerd, kube-scheduler.
"$src/testbed/kubelet.sh" down "$dir" >"$work/kubelet.sh.log" 2>&1
"$src/testbed/kubelet.sh" up "$dir" --name "$node" >>"$work/kubelet.sh.log" 2>&1 || { tail -30 "$work/kubelet.sh.log"; fail "kubelet.sh up"; }
# shellcheck disable=SC1091
. "$dir/node/env"
"$src/scripts/images.sh" --build-dir "$build" --out "$work/images" || fail "scripts/images.sh"
for image in "$work"/images/*.tar; do
  ctr -a "$HUYGENS_KUBELET_SOCKET" -n k8s.io images import --snapshotter "$HUYGENS_KUBELET_SNAPSHOTTER" "$image" >/dev/null ||
    fail "ctr images import $image"
done
"$kube_bin/kube-scheduler" --kubeconfig "$dir/scheduler.kubeconfig" --authentication-kubeconfig "$dir/scheduler.kubeconfig" \
  --authorization-kubeconfig "$dir/scheduler.kubeconfig" --bind-address 127.0.0.1 --secure-port 0 \
  --leader-elect=false >"$work/kube-scheduler.log" 2>&1 &
ks_pid=$!

# 3. One helm install. The testbed has no pod network and no kube-proxy: host network, and the
# apiserver's own address instead of the `kubernetes` Service. Free ports for the metrics.
server=$(cat "$dir/server"); port=${server##*:}
free_port() { local p=$1; while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done; echo "$p"; }
agent_port=$(free_port 19464) scheduler_port=$(free_port 19251)
"$helm" install huygens "$src/deploy/helm/huygens" -n huygens-system --create-namespace --wait --timeout 240s \
  --set apiServer.host=127.0.0.1 --set-string apiServer.port="$port" \
  --set agent.runtimeSocket="$HUYGENS_KUBELET_SOCKET" \
  --set agent.kubelet.rootDir="$HUYGENS_KUBELET_ROOT" --set agent.kubelet.configFile="$HUYGENS_KUBELET_CONFIG" \
  --set-string agent.systemCpus=0 --set agent.stateDir="$work/agent-state" \
  --set agent.hostNetwork=true --set scheduler.hostNetwork=true --set scheduler.replicas=1 \
  --set agent.metricsPort="$agent_port" --set scheduler.metricsPort="$scheduler_port" \
  --set agent.nodeSelector."kubernetes\.io/hostname"=$node \
  --set scheduler.nodeSelector."kubernetes\.io/hostname"=$node \
  --set agent.logLevel=debug >"$work/helm-install.log" 2>&1 || { cat "$work/helm-install.log" >&2; fail "helm install"; }
for c in huygens-agent huygens-scheduler; do
  image=$(kubectl -n huygens-system get pods -l app.kubernetes.io/name=$c -o jsonpath='{.items[0].status.containerStatuses[0].image}')
  [ "$image" = "huygens.local/$c:0.1.0" ] || fail "$c runs image '$image'"
done
echo "helm_install_test: installed; agent and scheduler Ready from their images"

# 4. An exclusive pod: bound by huygens-scheduler, its cpuset applied by the agent through CRI.
kubectl create -f - >/dev/null <<POD
apiVersion: v1
kind: Pod
metadata: {name: exclusive, namespace: default}
spec:
  schedulerName: huygens-scheduler
  nodeSelector: {kubernetes.io/hostname: $node}
  hostNetwork: true
  automountServiceAccountToken: false
  enableServiceLinks: false
  terminationGracePeriodSeconds: 0
  containers:
  - name: app
    image: $HUYGENS_KUBELET_IMAGE
    imagePullPolicy: Never
    command: [/bin/sleep, "3600"]
    resources:
      requests: {cpu: "1", memory: 32Mi}
      limits: {cpu: "1", memory: 32Mi}
POD
kubectl wait --for condition=Ready --timeout 120s pod/exclusive -n default >/dev/null || fail "pod exclusive not Ready"
state=""
for _ in $(seq 1 120); do
  state=$(kubectl get pod exclusive -n default -o jsonpath='{.metadata.annotations.huygens\.io/allocation-status}')
  grep -q '"state":"applied"' <<<"$state" && break
  sleep 0.5
done
grep -q '"state":"applied"' <<<"$state" || fail "allocation-status '$state'"
allocation=$(kubectl get pod exclusive -n default -o jsonpath='{.metadata.annotations.huygens\.io/allocation}')
grep -q '"cpuset":"1"' <<<"$allocation" || fail "allocation '$allocation' (the user pool is CPU 1)"
uid=$(kubectl get pod exclusive -n default -o jsonpath='{.metadata.uid}')
cid=$(kubectl get pod exclusive -n default -o jsonpath='{.status.containerStatuses[0].containerID}'); cid=${cid#containerd://}
cpus=$(cat /sys/fs/cgroup/cpuset"$HUYGENS_KUBELET_CGROUP"/kubepods/pod"$uid"/"$cid"/cpuset.cpus 2>/dev/null ||
       cat "$(find /sys/fs/cgroup/cpuset"$HUYGENS_KUBELET_CGROUP" -type d -name "$cid" | head -1)/cpuset.cpus")
[ "$cpus" = 1 ] || fail "the container's cgroup cpuset is '$cpus', want 1"
echo "helm_install_test: pod exclusive bound with cpuset 1, applied by the agent (cgroup cpuset.cpus=$cpus)"

# 5. The live CPU map of the real node.
"$cli" status --kubeconfig "$KUBECONFIG" --node "$node" >"$work/status.txt" || { cat "$work/status.txt"; fail "huygens status"; }
cat "$work/status.txt"
grep -q "exclusive" "$work/status.txt" || fail "huygens status does not show pod exclusive"
"$cli" status --kubeconfig "$KUBECONFIG" --node "$node" --output json >"$work/status.json" || fail "huygens status --output json"
python3 - "$work/status.json" "$node" <<'PY' || fail "huygens status --output json: no pod exclusive with cpuset 1 on $node"
import json, sys
doc = json.load(open(sys.argv[1]))
text = json.dumps(doc)
assert sys.argv[2] in text and "exclusive" in text, text[:400]
def walk(o):
    if isinstance(o, dict):
        if o.get("name") == "exclusive" or o.get("pod", "").endswith("exclusive"):
            yield o
        for v in o.values(): yield from walk(v)
    elif isinstance(o, list):
        for v in o: yield from walk(v)
assert any('"1"' in json.dumps(p) for p in walk(doc)), text[:800]
PY
mkdir -p "$work/plugin"; ln -sf "$cli" "$work/plugin/kubectl-huygens"
PATH=$work/plugin:$PATH kubectl huygens status --node "$node" | grep -q exclusive || fail "kubectl huygens status"

# 6. helm uninstall leaves nothing of the chart's.
kubectl delete pod exclusive -n default --grace-period 0 --force >/dev/null 2>&1
"$helm" uninstall huygens -n huygens-system --wait --timeout 120s >/dev/null || fail "helm uninstall"
left=$(kubectl get clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding \
  -l app.kubernetes.io/part-of=huygens -o name)
[ -z "$left" ] || fail "left after uninstall: $left"
echo "helm_install_test: ok"
