#!/usr/bin/env bash
# The Helm chart's static checks (CTest `deploy_chart`, label cluster: helm comes from
# testbed/build.sh): `helm lint` in both modes; the plain manifests under deploy/ are the chart's
# rendering (deploy/generate.sh --check); with the Prometheus operator's API present the chart
# renders one PodMonitor per component and a PrometheusRule holding every alert of
# files/*.rules.yaml, and each `job` an alert names is the job label of a PodMonitor's pods.
# The agent gets the privileges of observed affinity only when agent.traffic.enabled. Both
# components serve on the pod's IP (bindAddress: podIP), on every address with bindAddress "".
set -euo pipefail
cd "$(dirname "$0")"
helm=${HELM:-$(../testbed/build.sh | sed -n 3p)/helm}
export HELM=$helm
fail() { echo "chart_test: $*" >&2; exit 1; }

for mode in standalone extender; do
  "$helm" lint --strict helm/huygens --set mode=$mode >/dev/null || { "$helm" lint --strict helm/huygens --set mode=$mode; fail "helm lint ($mode)"; }
done
./generate.sh --check || fail "deploy/ is not the chart's rendering"

for mode in standalone extender; do
  out=$("$helm" template huygens helm/huygens -n huygens-system --set mode=$mode \
    --api-versions monitoring.coreos.com/v1/PodMonitor --api-versions monitoring.coreos.com/v1/PrometheusRule)
  scheduler=huygens-scheduler; [ $mode = extender ] && scheduler=huygens-extender
  # Each PodMonitor selects by app.kubernetes.io/name and takes the job from it.
  monitors=$(awk '/^kind: PodMonitor/{m=1} m && /^  name: /{print $2; m=0}' <<<"$out" | sort | tr '\n' ' ')
  [ "$monitors" = "huygens-agent $scheduler " ] || fail "$mode: PodMonitors '$monitors'"
  [ "$(grep -c '^  jobLabel: app.kubernetes.io/name$' <<<"$out")" = 2 ] || fail "$mode: jobLabel"
  grep -q '^kind: PrometheusRule$' <<<"$out" || fail "$mode: no PrometheusRule"
  # Every alert of the rule files is in the PrometheusRule.
  for f in helm/huygens/files/*.rules.yaml; do
    for alert in $(sed -n 's/^ *- alert: //p' "$f"); do
      grep -q "alert: $alert\$" <<<"$out" || fail "$mode: alert $alert of $f missing"
    done
  done
  # Every job an expression names is a job some PodMonitor of either mode produces.
  for job in $(grep -o 'job=~\?"[^"]*"' <<<"$out" | sed 's/.*"\(.*\)"/\1/' | tr '|' '\n' | sort -u); do
    case $job in huygens-agent|huygens-scheduler|huygens-extender) ;; *) fail "$mode: alert job $job has no PodMonitor";; esac
  done
  grep -q "job=~\?\"[^\"]*$scheduler" <<<"$out" || fail "$mode: no alert watches job $scheduler"
done
# Without the operator's API: none of them.
! "$helm" template huygens helm/huygens | grep -qE '^kind: (PodMonitor|PrometheusRule)$' || fail "monitoring objects without the API"
# Observed affinity is opt-in: only with agent.traffic.enabled does the agent get the host PID
# namespace and SYS_ADMIN + SYS_PTRACE.
default_agent=$("$helm" template huygens helm/huygens)
! grep -v '^ *#' <<<"$default_agent" | grep -qE 'hostPID: true|SYS_ADMIN' || fail "the default agent holds traffic privileges"
traffic_agent=$("$helm" template huygens helm/huygens --set agent.traffic.enabled=true)
grep -q '^ *hostPID: true' <<<"$traffic_agent" || fail "traffic without hostPID"
grep -q 'add: \["SYS_ADMIN", "SYS_PTRACE"\]' <<<"$traffic_agent" || fail "traffic without its capabilities"
# Each component's HTTP servers listen on its pod's IP, from the downward API, unless told otherwise.
for mode in standalone extender; do
  out=$("$helm" template huygens helm/huygens --set mode=$mode)
  [ "$(grep -c -- '"--bind-address=$(POD_IP)"' <<<"$out")" = 2 ] || fail "$mode: a component not bound to its pod's IP"
  [ "$(grep -c 'fieldPath: status.podIP' <<<"$out")" = 2 ] || fail "$mode: a component without POD_IP"
done
! "$helm" template huygens helm/huygens --set bindAddress= | grep -qE 'bind-address|POD_IP' || fail "bindAddress \"\" still binds"
echo "chart_test: ok"
