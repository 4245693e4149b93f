#!/usr/bin/env bash
# A real Kubernetes control plane on loopback for tests and by hand: etcd, kube-apiserver (RBAC
# and Node authorization, client-certificate users, service-account tokens),
# kube-controller-manager and, on request, kube-scheduler, all from the pinned release that
# testbed/build.sh builds. No image registry: Node objects are created through the API by the
# tests (or a real kubelet registers one).
#
# Usage:
#   testbed/cluster.sh up   DIR [--port P] [--apply PATH]...
#                                            start; DIR holds certificates, kubeconfigs, data,
#                                            logs; then `kubectl apply -f PATH` for each PATH
#   testbed/cluster.sh down DIR              stop everything started in DIR (and remove DIR's data)
#   testbed/cluster.sh env  DIR              print shell assignments for the test tier
#   testbed/cluster.sh scheduler DIR [ARGS]  start kube-scheduler with DIR's kubeconfig (+ ARGS)
#   testbed/cluster.sh restart-apiserver DIR stop kube-apiserver (SIGTERM) and start it again with
#                                            the same flags; returns once /readyz answers. Its
#                                            watch caches start afresh: a watch from an earlier
#                                            resourceVersion gets 410 Expired, as after any restart
#
# What `up` leaves in DIR:
#   pki/           ca.{crt,key}, apiserver.{crt,key}, sa.{key,pub}, one client pair per user
#   admin.kubeconfig            user "admin" (group system:masters): full access
#   scheduler.kubeconfig        user system:kube-scheduler (the default RBAC role of kube-scheduler)
#   controller-manager.kubeconfig  user system:kube-controller-manager
#   user-<name>.kubeconfig      made by `user DIR NAME [GROUP]` for tests that need other identities
#   logs/  etcd.log, kube-apiserver.log, kube-controller-manager.log, kube-scheduler.log,
#          audit.log: the apiserver's audit events (JSON lines, level Metadata, stage
#          ResponseComplete) of every request made by a service account, so that tests can see
#          what a component was refused (responseStatus.code 403) and what it used
#   pids/  one file per process
#   env    the assignments `env` prints (HUYGENS_TEST_KUBECONFIG, HUYGENS_TESTBED_DIR, ...)
#   restart-apiserver  runs `cluster.sh restart-apiserver DIR` (for tests, which know DIR only)
# Ports: the apiserver listens on 127.0.0.1:P (default: the first free one from a start picked
# by process id in 20000-35000); etcd on the next two ports. Everything binds to loopback only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

die() { echo "testbed/cluster.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: cluster.sh up|down|env|scheduler|user|restart-apiserver DIR [...] (see the header of this file)"
cmd=$1 dir=$2; shift 2
mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
# port_free, start, stop (shared with kubelet.sh)
# shellcheck source=testbed/procs.sh
. "$here/procs.sh"

bins() {
  local out; out=$("$here/build.sh") || die "building the upstream binaries failed"
  kube_bin=$(sed -n 1p <<<"$out"); etcd_bin=$(sed -n 2p <<<"$out")
}

# kubeconfig NAME: DIR/NAME.kubeconfig for the client certificate pki/NAME.{crt,key}.
kubeconfig() {
  local name=$1 server; server=$(cat "$dir/server")
  cat >"$dir/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster: {server: "$server", certificate-authority: pki/ca.crt}
users:
- name: $name
  user: {client-certificate: pki/$name.crt, client-key: pki/$name.key}
contexts:
- name: testbed
  context: {cluster: testbed, user: $name, namespace: default}
current-context: testbed
EOF
}

# client_cert NAME CN [O]: a client certificate signed by the cluster CA.
client_cert() {
  local name=$1 cn=$2 org=${3:-} subj
  subj="/CN=$cn"; [ -n "$org" ] && subj="/O=$org$subj"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$dir/pki/$name.key" -subj "$subj" \
    -out "$dir/pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$dir/pki/$name.csr" -CA "$dir/pki/ca.crt" -CAkey "$dir/pki/ca.key" \
    -CAcreateserial -days 30 -out "$dir/pki/$name.crt" \
    -extfile <(printf 'extendedKeyUsage=clientAuth\n') 2>/dev/null
}

wait_ready() {  # URL WHAT LOG: polls until the URL answers ok (60 s)
  local i
  for i in $(seq 1 240); do
    if curl -sf --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" \
        "$1" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  tail -20 "$3" >&2
  die "$2 did not become ready at $1 (log: $3)"
}

# start_apiserver: kube-apiserver with DIR's certificates, on the port of DIR/server, against the
# etcd of DIR/etcd-url; returns once /readyz answers. REQUIRES: $kube_bin.
start_apiserver() {
  local server; server=$(cat "$dir/server")
  start kube-apiserver "$kube_bin/kube-apiserver" \
    --audit-policy-file "$dir/audit-policy.yaml" --audit-log-path "$dir/logs/audit.log" \
    --audit-log-format json --audit-log-mode blocking \
    --etcd-servers "$(cat "$dir/etcd-url")" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "${server##*:}" \
    --tls-cert-file "$dir/pki/apiserver.crt" --tls-private-key-file "$dir/pki/apiserver.key" \
    --client-ca-file "$dir/pki/ca.crt" \
    --service-account-key-file "$dir/pki/sa.pub" \
    --service-account-signing-key-file "$dir/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --api-audiences https://kubernetes.default.svc \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction \
    --service-cluster-ip-range 10.0.0.0/24 \
    --allow-privileged=true \
    --profiling=false \
    --event-ttl 1h \
    --v=1
  wait_ready "$server/readyz" kube-apiserver "$dir/logs/kube-apiserver.log"
}

case "$cmd" in
up)
  port="" apply=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) port=$2; shift 2;;
      --apply) apply+=("$2"); shift 2;;
      *) die "up: unknown option $1";;
    esac
  done
  [ -f "$dir/pids/kube-apiserver" ] && die "a cluster already runs in $dir (cluster.sh down $dir first)"
  bins
  if [ -z "$port" ]; then
    # A start that differs per process, so testbeds brought up at once rarely race for a port.
    port=$((20000 + 3 * ($$ % 5000)))
    while ! { port_free "$port" && port_free $((port + 1)) && port_free $((port + 2)); }; do
      port=$((port + 3))
    done
  fi
  mkdir -p "$dir/pki" "$dir/logs" "$dir/pids" "$dir/etcd"
  echo "https://127.0.0.1:$port" >"$dir/server"

  # Certificates: one CA for serving and client certificates, a service-account key pair.
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/pki/ca.key" -out "$dir/pki/ca.crt" \
    -days 30 -subj "/CN=huygens-testbed-ca" 2>/dev/null
  openssl req -new -newkey rsa:2048 -nodes -keyout "$dir/pki/apiserver.key" \
    -subj "/CN=kube-apiserver" -out "$dir/pki/apiserver.csr" 2>/dev/null
  openssl x509 -req -in "$dir/pki/apiserver.csr" -CA "$dir/pki/ca.crt" -CAkey "$dir/pki/ca.key" \
    -CAcreateserial -days 30 -out "$dir/pki/apiserver.crt" -extfile <(printf '%s\n' \
    "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes.default.svc" \
    "extendedKeyUsage=serverAuth") 2>/dev/null
  openssl genrsa -out "$dir/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$dir/pki/sa.key" -pubout -out "$dir/pki/sa.pub" 2>/dev/null
  client_cert admin admin system:masters
  client_cert scheduler system:kube-scheduler
  client_cert controller-manager system:kube-controller-manager
  kubeconfig admin
  kubeconfig scheduler
  kubeconfig controller-manager

  start etcd "$etcd_bin/etcd" --name testbed --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$((port + 1))" \
    --advertise-client-urls "http://127.0.0.1:$((port + 1))" \
    --listen-peer-urls "http://127.0.0.1:$((port + 2))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((port + 2))" \
    --initial-cluster "testbed=http://127.0.0.1:$((port + 2))" \
    --unsafe-no-fsync --log-level warn
  echo "http://127.0.0.1:$((port + 1))" >"$dir/etcd-url"

  # Audit: requests of service accounts only (the Huygens components under test run as theirs),
  # one line per finished request, without bodies.
  cat >"$dir/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
EOF
  start_apiserver

  # The controllers the tests need: namespaces end, service accounts and their tokens,
  # Deployments and DaemonSets make pods, garbage collection. Not the node lifecycle controller:
  # the tests' Node objects have no kubelet behind them and must not be tainted unreachable.
  start kube-controller-manager "$kube_bin/kube-controller-manager" \
    --kubeconfig "$dir/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$dir/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$dir/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$dir/pki/sa.key" --root-ca-file "$dir/pki/ca.crt" \
    --use-service-account-credentials=true \
    --controllers namespace-controller,serviceaccount-controller,serviceaccount-token-controller,garbage-collector-controller,deployment-controller,replicaset-controller,daemonset-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller \
    --v=1
  local_kubectl() { KUBECONFIG="$dir/admin.kubeconfig" "$kube_bin/kubectl" "$@"; }
  for _ in $(seq 1 240); do
    local_kubectl get serviceaccount default -n default >/dev/null 2>&1 && break
    sleep 0.25
  done
  local_kubectl get serviceaccount default -n default >/dev/null 2>&1 ||
    die "kube-controller-manager made no default ServiceAccount (log: $dir/logs/kube-controller-manager.log)"
  for path in "${apply[@]}"; do
    local_kubectl apply -f "$path" >"$dir/logs/apply.log" 2>&1 || { cat "$dir/logs/apply.log" >&2; die "kubectl apply -f $path failed"; }
  done
  # Established CRDs serve their resources only a moment after they are created.
  [ ${#apply[@]} -eq 0 ] || local_kubectl wait --for condition=established --timeout=60s crd --all >/dev/null
  cat >"$dir/env" <<EOF
HUYGENS_TESTBED_DIR=$dir
HUYGENS_TEST_KUBECONFIG=$dir/admin.kubeconfig
HUYGENS_TESTBED_KUBE_BIN=$kube_bin
HUYGENS_TESTBED_ETCD_URL=http://127.0.0.1:$((port + 1))
EOF
  printf '#!/bin/sh\nexec %q restart-apiserver %q\n' "$here/cluster.sh" "$dir" >"$dir/restart-apiserver"
  chmod +x "$dir/restart-apiserver"
  echo "testbed: kube-apiserver ready at https://127.0.0.1:$port (kubeconfig $dir/admin.kubeconfig)" >&2
  ;;
restart-apiserver)
  [ -f "$dir/env" ] || die "no cluster in $dir (cluster.sh up $dir first)"
  kube_bin=$(sed -n 's/^HUYGENS_TESTBED_KUBE_BIN=//p' "$dir/env")
  stop kube-apiserver
  [ -f "$dir/logs/kube-apiserver.log" ] && mv "$dir/logs/kube-apiserver.log" "$dir/logs/kube-apiserver.log.1"
  start_apiserver
  echo "testbed: kube-apiserver restarted at $(cat "$dir/server")" >&2
  ;;
scheduler)
  bins
  stop kube-scheduler
  mkdir -p "$dir/logs" "$dir/pids"
  start kube-scheduler "$kube_bin/kube-scheduler" --kubeconfig "$dir/scheduler.kubeconfig" \
    --authentication-kubeconfig "$dir/scheduler.kubeconfig" \
    --authorization-kubeconfig "$dir/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false --v=1 "$@"
  echo "testbed: kube-scheduler started (log $dir/logs/kube-scheduler.log)" >&2
  ;;
user)
  [ $# -ge 1 ] || die "usage: cluster.sh user DIR NAME [GROUP]"
  client_cert "user-$1" "$1" "${2:-}"
  kubeconfig "user-$1"
  echo "$dir/user-$1.kubeconfig"
  ;;
down)
  for p in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$p"; done
  rm -rf "$dir/etcd"
  ;;
env)
  [ -f "$dir/env" ] || die "no cluster in $dir (cluster.sh up $dir first)"
  cat "$dir/env"
  ;;
*) die "unknown command $cmd" ;;
esac
