#include "agent/config.h"

#include <charconv>
#include <cstdint>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "base/config_kind.h"
#include "base/duration.h"
#include "yaml-cpp/yaml.h"

namespace huygens::agent {
namespace {

absl::Status FieldError(std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(fmt::format("agent config: {}: {}", field, problem));
}

// Checks that `node` is a mapping whose keys are all in `known`.
absl::Status CheckKeys(const YAML::Node& node, std::string_view where,
                       const std::set<std::string>& known) {
  if (!node.IsMap()) return FieldError(where, "expected a mapping");
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return FieldError(where, "a key is not a string");
    const std::string key = kv.first.Scalar();
    if (!known.contains(key)) {
      return FieldError(where.empty() ? key : fmt::format("{}.{}", where, key), "unknown key");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Scalar(const YAML::Node& node, std::string_view field) {
  if (!node.IsScalar()) return FieldError(field, "expected a string");
  return node.Scalar();
}

// A list of non-empty names (namespaces) at `field`.
absl::StatusOr<std::vector<std::string>> Names(const YAML::Node& list, std::string_view field) {
  if (!list.IsSequence()) return FieldError(field, "expected a list of strings");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string item = fmt::format("{}[{}]", field, i);
    auto v = Scalar(list[i], item);
    if (!v.ok()) return v.status();
    if (v->empty()) return FieldError(item, "is empty");
    names.push_back(*std::move(v));
  }
  return names;
}

absl::StatusOr<bool> Bool(const YAML::Node& node, std::string_view field) {
  if (!node.IsScalar()) return FieldError(field, "expected true or false");
  const std::string& s = node.Scalar();
  if (s == "true") return true;
  if (s == "false") return false;
  return FieldError(field, fmt::format("{:?} is not true or false", s));
}

absl::StatusOr<std::chrono::milliseconds> PositiveDuration(const YAML::Node& node,
                                                           std::string_view field) {
  auto text = Scalar(node, field);
  if (!text.ok()) return text.status();
  auto micros = ParseDuration(*text);
  if (!micros.ok()) return FieldError(field, fmt::format("{:?} is not a duration", *text));
  if (*micros < 1000) return FieldError(field, "must be at least 1ms");
  return std::chrono::milliseconds(*micros / 1000);
}

absl::Status ParseRuntime(const YAML::Node& node, RuntimeConfig& out) {
  if (auto s = CheckKeys(node, "runtime",
                         {"endpoint", "timeout", "fallbackToCgroupfs", "cgroupRoot",
});
      !s.ok()) {
    return s;
  }
  if (node["endpoint"]) {
    auto v = Scalar(node["endpoint"], "runtime.endpoint");
    if (!v.ok()) return v.status();
    if (v->empty()) return FieldError("runtime.endpoint", "is empty");
    out.endpoint = *v;
  }
  if (node["timeout"]) {
    auto v = PositiveDuration(node["timeout"], "runtime.timeout");
    if (!v.ok()) return v.status();
    out.timeout = *v;
  }
  if (node["fallbackToCgroupfs"]) {
    auto v = Bool(node["fallbackToCgroupfs"], "runtime.fallbackToCgroupfs");
    if (!v.ok()) return v.status();
    out.fallback_to_cgroupfs = *v;
  }
  if (node["cgroupRoot"]) {
    auto v = Scalar(node["cgroupRoot"], "runtime.cgroupRoot");
    if (!v.ok()) return v.status();
    if (v->empty() || (*v)[0] != '/') return FieldError("runtime.cgroupRoot", "must be an absolute path");
    out.cgroup_root = *v;
  }
  return absl::OkStatus();
}

absl::Status ParsePodSource(const YAML::Node& node, AgentConfig& out) {
  if (auto s = CheckKeys(node, "podSource", {"kind", "kubeletUrl"}); !s.ok()) return s;
  if (node["kind"]) {
    auto v = Scalar(node["kind"], "podSource.kind");
    if (!v.ok()) return v.status();
    if (*v == "watch") {
      out.pod_source = PodSourceKind::kWatch;
    } else if (*v == "kubelet") {
      out.pod_source = PodSourceKind::kKubelet;
    } else {
      return FieldError("podSource.kind", fmt::format("{:?} is not watch or kubelet", *v));
    }
  }
  if (node["kubeletUrl"]) {
    auto v = Scalar(node["kubeletUrl"], "podSource.kubeletUrl");
    if (!v.ok()) return v.status();
    if (!v->starts_with("http://") && !v->starts_with("https://")) {
      return FieldError("podSource.kubeletUrl", fmt::format("{:?} is not an http(s) URL", *v));
    }
    out.kubelet_pods_url = *v;
  }
  return absl::OkStatus();
}

absl::Status ParseCapacity(const YAML::Node& node, CapacitySourceConfig& out) {
  if (auto s = CheckKeys(node, "capacity", {"file", "url"}); !s.ok()) return s;
  if (node["file"]) {
    auto v = Scalar(node["file"], "capacity.file");
    if (!v.ok()) return v.status();
    out.file = *v;
  }
  if (node["url"]) {
    auto v = Scalar(node["url"], "capacity.url");
    if (!v.ok()) return v.status();
    if (!v->starts_with("http://")) {
      return FieldError("capacity.url", fmt::format("{:?} is not a local http:// URL", *v));
    }
    out.url = *v;
  }
  if (!out.file.empty() && !out.url.empty()) {
    return FieldError("capacity", "set file or url, not both");
  }
  return absl::OkStatus();
}

absl::Status ParseTraffic(const YAML::Node& node, TrafficConfig& out) {
  if (auto s = CheckKeys(node, "traffic", {"enabled", "sampleInterval", "window", "topPairs"});
      !s.ok()) {
    return s;
  }
  if (node["enabled"]) {
    auto v = Bool(node["enabled"], "traffic.enabled");
    if (!v.ok()) return v.status();
    out.enabled = *v;
  }
  for (auto [key, field] : {std::pair{"sampleInterval", &out.sample_interval},
                            std::pair{"window", &out.window}}) {
    if (!node[key]) continue;
    auto v = PositiveDuration(node[key], fmt::format("traffic.{}", key));
    if (!v.ok()) return v.status();
    *field = *v;
  }
  if (node["topPairs"]) {
    auto v = Scalar(node["topPairs"], "traffic.topPairs");
    if (!v.ok()) return v.status();
    int n = 0;
    const auto [end, error] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (error != std::errc() || end != v->data() + v->size() || n < 1) {
      return FieldError("traffic.topPairs", fmt::format("{:?} is not an integer >= 1", *v));
    }
    out.top_pairs = n;
  }
  if (out.window < out.sample_interval) {
    return FieldError("traffic.window", "must be at least traffic.sampleInterval");
  }
  return absl::OkStatus();
}

absl::StatusOr<AgentConfig> ParseRoot(const YAML::Node& root, const GetEnv& getenv) {
  AgentConfig c;
  if (!root.IsNull()) {
    if (auto s = CheckKeys(root, "",
                           {"apiVersion", "kind", "nodeName", "systemCpus", "kubeletConfig",
                            "mode", "systemNamespaces", "cpuPolicyNoneNamespaces", "topologyPolicy", "topologyScope",
                            "runtime", "podSource", "resyncPeriod", "nrtMinInterval", "capacity",
                            "kubeletCheckpoint", "kubeletMemoryCheckpoint",
                            "podResourcesSocket", "checkpoint", "metricsAddress", "traffic"});
        !s.ok()) {
      return s;
    }
    if (auto problem = CheckConfigKind(root, kAgentConfigurationKind)) {
      return FieldError(problem->field, problem->message);
    }
    if (root["nodeName"]) {
      auto v = Scalar(root["nodeName"], "nodeName");
      if (!v.ok()) return v.status();
      c.node_name = *v;
    }
    if (root["systemCpus"]) {
      auto v = Scalar(root["systemCpus"], "systemCpus");
      if (!v.ok()) return v.status();
      auto set = CpuSet::Parse(*v);
      if (!set.ok()) return FieldError("systemCpus", std::string(set.status().message()));
      c.system_cpus = *set;
    }
    if (root["kubeletConfig"]) {
      auto v = Scalar(root["kubeletConfig"], "kubeletConfig");
      if (!v.ok()) return v.status();
      c.kubelet_config_path = *v;
    }
    if (c.system_cpus.has_value() && !c.kubelet_config_path.empty()) {
      return FieldError("systemCpus", "set systemCpus or kubeletConfig, not both");
    }
    if (root["mode"]) {
      auto v = Scalar(root["mode"], "mode");
      if (!v.ok()) return v.status();
      auto mode = ParseNodeMode(*v);
      if (!mode) return FieldError("mode", fmt::format("{:?} is not allocatable or isolated", *v));
      c.mode = *mode;
    }
    if (root["systemNamespaces"]) {
      auto names = Names(root["systemNamespaces"], "systemNamespaces");
      if (!names.ok()) return names.status();
      for (std::string& ns : *names) {
        if (ns != "kube-system") c.system_namespaces.push_back(std::move(ns));
      }
    }
    if (root["cpuPolicyNoneNamespaces"]) {
      auto names = Names(root["cpuPolicyNoneNamespaces"], "cpuPolicyNoneNamespaces");
      if (!names.ok()) return names.status();
      c.cpu_policy_none_namespaces = *std::move(names);
    }
    if (root["topologyPolicy"]) {
      auto v = Scalar(root["topologyPolicy"], "topologyPolicy");
      if (!v.ok()) return v.status();
      auto p = ParseTopologyPolicy(*v);
      if (!p) return FieldError("topologyPolicy", fmt::format("{:?} is not a topology policy", *v));
      c.topology_policy = *p;
    }
    if (root["topologyScope"]) {
      auto v = Scalar(root["topologyScope"], "topologyScope");
      if (!v.ok()) return v.status();
      auto p = ParseTopologyScope(*v);
      if (!p) return FieldError("topologyScope", fmt::format("{:?} is not container or pod", *v));
      c.topology_scope = *p;
    }
    if (root["runtime"]) {
      if (auto s = ParseRuntime(root["runtime"], c.runtime); !s.ok()) return s;
    }
    if (root["podSource"]) {
      if (auto s = ParsePodSource(root["podSource"], c); !s.ok()) return s;
    }
    if (root["resyncPeriod"]) {
      auto v = PositiveDuration(root["resyncPeriod"], "resyncPeriod");
      if (!v.ok()) return v.status();
      c.resync_period = *v;
    }
    if (root["nrtMinInterval"]) {
      auto v = PositiveDuration(root["nrtMinInterval"], "nrtMinInterval");
      if (!v.ok()) return v.status();
      c.nrt_min_interval = *v;
    }
    if (root["capacity"]) {
      if (auto s = ParseCapacity(root["capacity"], c.capacity); !s.ok()) return s;
    }
    if (root["traffic"]) {
      if (auto s = ParseTraffic(root["traffic"], c.traffic); !s.ok()) return s;
    }
    for (auto [key, field] : {std::pair{"kubeletCheckpoint", &c.kubelet_checkpoint_path},
                              std::pair{"kubeletMemoryCheckpoint",
                                        &c.kubelet_memory_checkpoint_path},
                              std::pair{"podResourcesSocket", &c.pod_resources_socket},
                              std::pair{"checkpoint", &c.checkpoint_path},
                              std::pair{"metricsAddress", &c.metrics_address}}) {
      if (!root[key]) continue;
      auto v = Scalar(root[key], key);
      if (!v.ok()) return v.status();
      *field = *v;
    }
    if (c.checkpoint_path.empty()) return FieldError("checkpoint", "is empty");
  }
  if (c.node_name.empty()) {
    if (auto env = getenv("NODE_NAME"); env.has_value()) c.node_name = *env;
  }
  if (c.node_name.empty()) {
    return FieldError("nodeName", "not set and NODE_NAME is not set either");
  }
  return c;
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

absl::StatusOr<AgentConfig> ParseAgentConfig(std::string_view yaml, const GetEnv& getenv) {
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    return ParseRoot(root, getenv);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(fmt::format("agent config: not valid YAML: {}", e.what()));
  }
}

CpuSet ResolveSystemCpus(const AgentConfig& config, const KubeletConfig& kubelet) {
  if (config.system_cpus.has_value()) return *config.system_cpus;
  return kubelet.reserved_system_cpus.value_or(CpuSet());
}

}  // namespace huygens::agent
