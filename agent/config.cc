#include "agent/config.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "base/config_kind.h"
#include "base/status.h"
#include "base/yaml_reader.h"
#include "fmt/format.h"
#include "yaml-cpp/yaml.h"

namespace huygens::agent {
namespace {

// A duration of at least 1ms, in whole milliseconds.
absl::StatusOr<std::chrono::milliseconds> PositiveMillis(const YamlReader& r,
                                                         const YAML::Node& node,
                                                         const std::string& field) {
  int64_t micros = 0;
  HUYGENS_ASSIGN_OR_RETURN(micros, r.Duration(node, field));
  if (micros < 1000) return r.Error(node, field, "must be at least 1ms");
  return std::chrono::milliseconds(micros / 1000);
}

// A string that must not be empty.
absl::StatusOr<std::string> NonEmpty(const YamlReader& r, const YAML::Node& node,
                                     const std::string& field) {
  std::string s;
  HUYGENS_ASSIGN_OR_RETURN(s, r.String(node, field));
  if (s.empty()) return r.Error(node, field, "is empty");
  return s;
}

// A list of non-empty names (namespaces).
absl::StatusOr<std::vector<std::string>> Names(const YamlReader& r, const YAML::Node& list,
                                               const std::string& field) {
  HUYGENS_RETURN_IF_ERROR(r.CheckSequence(list, field));
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string name;
    HUYGENS_ASSIGN_OR_RETURN(name, NonEmpty(r, list[i], fmt::format("{}[{}]", field, i)));
    names.push_back(std::move(name));
  }
  return names;
}

// A name that `parse` (ParseNodeMode, ParseTopologyPolicy, ...) knows; `known` ends the error.
template <typename T>
absl::StatusOr<T> Named(const YamlReader& r, const YAML::Node& node, const std::string& field,
                        std::optional<T> (*parse)(const std::string&), std::string_view known) {
  std::string s;
  HUYGENS_ASSIGN_OR_RETURN(s, r.String(node, field));
  std::optional<T> value = parse(s);
  if (!value) return r.Error(node, field, fmt::format("{:?} is not {}", s, known));
  return *value;
}

std::optional<PodSourceKind> ParsePodSourceKind(const std::string& s) {
  if (s == "watch") return PodSourceKind::kWatch;
  if (s == "kubelet") return PodSourceKind::kKubelet;
  return std::nullopt;
}

absl::Status ParseRuntime(const YamlReader& r, const YAML::Node& node, RuntimeConfig& out) {
  HUYGENS_RETURN_IF_ERROR(
      r.CheckMap(node, "runtime", {"endpoint", "timeout", "fallbackToCgroupfs", "cgroupRoot"}));
  if (auto v = node["endpoint"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.endpoint, NonEmpty(r, v, "runtime.endpoint"));
  }
  if (auto v = node["timeout"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.timeout, PositiveMillis(r, v, "runtime.timeout"));
  }
  if (auto v = node["fallbackToCgroupfs"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.fallback_to_cgroupfs, r.Bool(v, "runtime.fallbackToCgroupfs"));
  }
  if (auto v = node["cgroupRoot"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.cgroup_root, r.String(v, "runtime.cgroupRoot"));
    if (!out.cgroup_root.starts_with('/')) {
      return r.Error(v, "runtime.cgroupRoot", "must be an absolute path");
    }
  }
  return absl::OkStatus();
}

absl::Status ParsePodSource(const YamlReader& r, const YAML::Node& node, AgentConfig& out) {
  HUYGENS_RETURN_IF_ERROR(r.CheckMap(node, "podSource", {"kind", "kubeletUrl"}));
  if (auto v = node["kind"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.pod_source, Named(r, v, "podSource.kind", ParsePodSourceKind,
                                                   "watch or kubelet"));
  }
  if (auto v = node["kubeletUrl"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.kubelet_pods_url, r.String(v, "podSource.kubeletUrl"));
    if (!out.kubelet_pods_url.starts_with("http://") &&
        !out.kubelet_pods_url.starts_with("https://")) {
      return r.Error(v, "podSource.kubeletUrl",
                     fmt::format("{:?} is not an http(s) URL", out.kubelet_pods_url));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseCapacity(const YamlReader& r, const YAML::Node& node,
                           CapacitySourceConfig& out) {
  HUYGENS_RETURN_IF_ERROR(r.CheckMap(node, "capacity", {"file", "url"}));
  if (auto v = node["file"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.file, r.String(v, "capacity.file"));
  }
  if (auto v = node["url"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.url, r.String(v, "capacity.url"));
    if (!out.url.starts_with("http://")) {
      return r.Error(v, "capacity.url", fmt::format("{:?} is not a local http:// URL", out.url));
    }
  }
  if (!out.file.empty() && !out.url.empty()) {
    return r.Error(node, "capacity", "set file or url, not both");
  }
  return absl::OkStatus();
}

absl::Status ParseTraffic(const YamlReader& r, const YAML::Node& node, TrafficConfig& out) {
  HUYGENS_RETURN_IF_ERROR(
      r.CheckMap(node, "traffic", {"enabled", "sampleInterval", "window", "topPairs"}));
  if (auto v = node["enabled"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.enabled, r.Bool(v, "traffic.enabled"));
  }
  if (auto v = node["sampleInterval"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.sample_interval, PositiveMillis(r, v, "traffic.sampleInterval"));
  }
  if (auto v = node["window"]) {
    HUYGENS_ASSIGN_OR_RETURN(out.window, PositiveMillis(r, v, "traffic.window"));
  }
  if (auto v = node["topPairs"]) {
    int64_t pairs = 0;
    HUYGENS_ASSIGN_OR_RETURN(
        pairs, r.Int(v, "traffic.topPairs", 1, std::numeric_limits<int>::max()));
    out.top_pairs = static_cast<int>(pairs);
  }
  if (out.window < out.sample_interval) {
    const YAML::Node window = node["window"];
    return r.Error(window ? window : node, "traffic.window",
                   "must be at least traffic.sampleInterval");
  }
  return absl::OkStatus();
}

absl::Status ParseRoot(const YamlReader& r, const YAML::Node& root, AgentConfig& c) {
  HUYGENS_RETURN_IF_ERROR(r.CheckMap(
      root, "(top level)",
      {"apiVersion", "kind", "nodeName", "systemCpus", "kubeletConfig", "mode",
       "systemNamespaces", "cpuPolicyNoneNamespaces", "topologyPolicy", "topologyScope",
       "runtime", "podSource", "resyncPeriod", "nrtMinInterval", "capacity",
       "kubeletCheckpoint", "kubeletMemoryCheckpoint", "podResourcesSocket", "checkpoint",
       "metricsAddress", "traffic"}));
  if (auto problem = CheckConfigKind(root, kAgentConfigurationKind)) {
    return r.Error(root[problem->field], problem->field, problem->message);
  }
  if (auto v = root["nodeName"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.node_name, r.String(v, "nodeName"));
  }
  if (auto v = root["systemCpus"]) {
    std::string text;
    HUYGENS_ASSIGN_OR_RETURN(text, r.String(v, "systemCpus"));
    absl::StatusOr<CpuSet> set = CpuSet::Parse(text);
    if (!set.ok()) return r.Error(v, "systemCpus", Msg(set.status()));
    c.system_cpus = *set;
  }
  if (auto v = root["kubeletConfig"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.kubelet_config_path, r.String(v, "kubeletConfig"));
  }
  if (c.system_cpus.has_value() && !c.kubelet_config_path.empty()) {
    return r.Error(root["systemCpus"], "systemCpus", "set systemCpus or kubeletConfig, not both");
  }
  if (auto v = root["mode"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.mode,
                             Named(r, v, "mode", ParseNodeMode, "allocatable or isolated"));
  }
  if (auto v = root["systemNamespaces"]) {
    std::vector<std::string> names;
    HUYGENS_ASSIGN_OR_RETURN(names, Names(r, v, "systemNamespaces"));
    for (std::string& ns : names) {
      if (ns != "kube-system") c.system_namespaces.push_back(std::move(ns));
    }
  }
  if (auto v = root["cpuPolicyNoneNamespaces"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.cpu_policy_none_namespaces,
                             Names(r, v, "cpuPolicyNoneNamespaces"));
  }
  if (auto v = root["topologyPolicy"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.topology_policy, Named(r, v, "topologyPolicy",
                                                      ParseTopologyPolicy, "a topology policy"));
  }
  if (auto v = root["topologyScope"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.topology_scope, Named(r, v, "topologyScope", ParseTopologyScope,
                                                     "container or pod"));
  }
  if (auto v = root["runtime"]) HUYGENS_RETURN_IF_ERROR(ParseRuntime(r, v, c.runtime));
  if (auto v = root["podSource"]) HUYGENS_RETURN_IF_ERROR(ParsePodSource(r, v, c));
  if (auto v = root["resyncPeriod"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.resync_period, PositiveMillis(r, v, "resyncPeriod"));
  }
  if (auto v = root["nrtMinInterval"]) {
    HUYGENS_ASSIGN_OR_RETURN(c.nrt_min_interval, PositiveMillis(r, v, "nrtMinInterval"));
  }
  if (auto v = root["capacity"]) HUYGENS_RETURN_IF_ERROR(ParseCapacity(r, v, c.capacity));
  if (auto v = root["traffic"]) HUYGENS_RETURN_IF_ERROR(ParseTraffic(r, v, c.traffic));
  for (auto [key, field] : {std::pair{"kubeletCheckpoint", &c.kubelet_checkpoint_path},
                            std::pair{"kubeletMemoryCheckpoint", &c.kubelet_memory_checkpoint_path},
                            std::pair{"podResourcesSocket", &c.pod_resources_socket},
                            std::pair{"checkpoint", &c.checkpoint_path},
                            std::pair{"metricsAddress", &c.metrics_address}}) {
    if (auto v = root[key]) {
      HUYGENS_ASSIGN_OR_RETURN(*field, r.String(v, key));
    }
  }
  if (c.checkpoint_path.empty()) return r.Error(root["checkpoint"], "checkpoint", "is empty");
  return absl::OkStatus();
}

}  // namespace

const char kAgentConfigReference[] = R"(apiVersion: huygens.io/v1alpha1  # optional; when present, exactly this
kind: AgentConfiguration         # optional; when present, exactly this
nodeName: n1                     # this node; default $NODE_NAME (--node-name overrides both)
systemCpus: "0-1"                # the system pool, a cpu-list; default none; or instead:
# kubeletConfig: /var/lib/kubelet/config.yaml  # kubelet's config: its reservedSystemCPUs
                                 # (the system pool), memoryManagerPolicy and reservedMemory
mode: allocatable                # allocatable: user pool = online CPUs - system pool;
                                 # isolated: the kernel's isolated CPUs - system pool
systemNamespaces: [kube-system]  # containers here run in the system pool (kube-system always)
cpuPolicyNoneNamespaces: []      # where huygens.io/cpu-policy: none leaves a pod on every CPU;
                                 # elsewhere it runs in the shared pool. Default: none
topologyPolicy: single-numa-node # published on the NRT: none, best-effort, restricted,
                                 # single-numa-node (kubelet's topology manager policies)
topologyScope: container         # published on the NRT: container or pod
runtime:
  endpoint: unix:///run/containerd/containerd.sock  # the CRI socket
  timeout: 2s                    # per runtime call and per capacity URL request
  fallbackToCgroupfs: true       # write cgroupfs when the CRI call cannot set the cpuset
  cgroupRoot: /sys/fs/cgroup     # for the cgroupfs writer (v1 or v2; either cgroup driver)
podSource:
  kind: watch                    # watch: the API (spec.nodeName); kubelet: kubeletUrl
  kubeletUrl: http://127.0.0.1:10255/pods  # kubelet's read-only pod list, polled
resyncPeriod: 30s                # a full pass at least this often
nrtMinInterval: 10s              # at most one NodeResourceTopology write per interval
capacity:                        # per-NUMA capacity factors 0..1; default none
  file: /etc/huygens/numa-capacity.json
  # url: http://127.0.0.1:9101/numa-capacity  # or a local http:// URL (not both)
kubeletCheckpoint: /var/lib/kubelet/cpu_manager_state  # kubelet's CPU manager state; "" = none
kubeletMemoryCheckpoint: /var/lib/kubelet/memory_manager_state  # kubelet's memory manager
                                 # state, read when memoryManagerPolicy is Static; "" = none
podResourcesSocket: /var/lib/kubelet/pod-resources/kubelet.sock  # kubelet's pod resources
                                 # API: NUMA-affine devices for the NRT zones; "" = none
checkpoint: /var/lib/huygens/agent-checkpoint.json     # the agent's own checkpoint
metricsAddress: 0.0.0.0:9464     # /metrics, /healthz, /readyz; "" = no server
                                 # (--bind-address replaces the host)
traffic:                         # observed affinity: TCP traffic between this node's pods
  enabled: false                 # sample it and publish huygens.io/pod-traffic on the NRT (needs privileges)
  sampleInterval: 10s            # time between two samples of every pod's connections
  window: 30s                    # rates are averaged over this span (>= sampleInterval)
  topPairs: 32                   # publish at most this many pairs, highest rates first
)";

absl::StatusOr<AgentConfig> ParseAgentConfig(std::string_view yaml, const std::string& file_name,
                                             const GetEnv& getenv) {
  const YamlReader r(file_name);
  HUYGENS_ASSIGN_OR_RETURN(const YAML::Node root, r.Load(yaml));
  AgentConfig c;
  if (root && !root.IsNull()) HUYGENS_RETURN_IF_ERROR(ParseRoot(r, root, c));
  if (c.node_name.empty()) {
    if (auto env = getenv("NODE_NAME"); env.has_value()) c.node_name = *env;
  }
  if (c.node_name.empty()) {
    return r.Error(root["nodeName"], "nodeName", "not set and NODE_NAME is not set either");
  }
  return c;
}

CpuSet ResolveSystemCpus(const AgentConfig& config, const KubeletConfig& kubelet) {
  if (config.system_cpus.has_value()) return *config.system_cpus;
  return kubelet.reserved_system_cpus.value_or(CpuSet());
}

}  // namespace huygens::agent
