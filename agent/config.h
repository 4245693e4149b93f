// AgentConfig: the node agent's configuration, parsed once from its YAML file.
//
// What it is: a plain struct with a documented default per field, and the parser that fills it
// from the agent's config file (deploy/agent/configmap.yaml shows every field; docs/agent.md
// describes them). Unknown keys are errors (a typo must not silently fall back to a default).
//
// File shape (every key optional unless stated; durations as base/duration.h reads them: "250ms", "30s", "10m", "1h"):
//   apiVersion: huygens.io/v1alpha1      # when present, exactly this (base/config_kind.h)
//   kind: AgentConfiguration             # when present, exactly this
//   nodeName: n1                         # default: $NODE_NAME
//   systemCpus: "0-1"                    # the system pool, a cpu-list; or
//   kubeletConfig: /var/lib/kubelet/config.yaml   # its reservedSystemCPUs is the system pool;
//                                        # memoryManagerPolicy, reservedMemory: kubelet_config.h
//   mode: allocatable                    # allocatable | isolated
//   systemNamespaces: [monitoring]       # kube-system is always a system namespace
//   cpuPolicyNoneNamespaces: [batch]     # where huygens.io/cpu-policy: none is honoured
//   topologyPolicy: single-numa-node     # none | best-effort | restricted | single-numa-node
//   topologyScope: container             # container | pod
//   runtime:
//     endpoint: unix:///run/containerd/containerd.sock
//     timeout: 2s
//     fallbackToCgroupfs: true
//     cgroupRoot: /sys/fs/cgroup         # either driver's layout is found (cri/cgroupfs.h)
//   podSource:
//     kind: watch                        # watch (API, spec.nodeName) | kubelet (read-only /pods)
//     kubeletUrl: http://127.0.0.1:10255/pods
//   resyncPeriod: 30s
//   nrtMinInterval: 10s
//   capacity:                            # per-NUMA capacity factors 0..1 (at most one source)
//     file: /etc/huygens/numa-capacity.json
//     url: http://127.0.0.1:9101/numa-capacity
//   kubeletCheckpoint: /var/lib/kubelet/cpu_manager_state
//   kubeletMemoryCheckpoint: /var/lib/kubelet/memory_manager_state
//   podResourcesSocket: /var/lib/kubelet/pod-resources/kubelet.sock
//   checkpoint: /var/lib/huygens/agent-checkpoint.json
//   metricsAddress: 0.0.0.0:9464
//   traffic:                             # observed affinity (docs/agent.md, "Observed affinity")
//     enabled: true
//     sampleInterval: 10s
//     window: 30s
//     topPairs: 32
//
// Thread-safety: plain data; the parser is a pure function of its inputs.
#ifndef HUYGENS_AGENT_CONFIG_H_
#define HUYGENS_AGENT_CONFIG_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/kubelet_config.h"
#include "alloc/pod.h"
#include "cpuset/cpuset.h"
#include "node/node_state.h"

namespace huygens::agent {

// Where the agent learns the pods of its node.
enum class PodSourceKind {
  kWatch,    // list + watch pods with fieldSelector spec.nodeName=<node> (default)
  kKubelet,  // poll kubelet's read-only /pods endpoint every resync period
};

struct RuntimeConfig {
  // CRI endpoint of the container runtime. Default containerd's socket.
  std::string endpoint = "unix:///run/containerd/containerd.sock";
  // Per-call timeout. Default 2 s.
  std::chrono::milliseconds timeout{2000};
  // When the CRI call fails or the runtime cannot set a cpuset, write cgroupfs directly.
  // Default true.
  bool fallback_to_cgroupfs = true;
  // cgroupfs mount point (cgroup v1 or v2, detected; containers are found under either
  // kubelet cgroup driver's layout). Default /sys/fs/cgroup.
  std::string cgroup_root = "/sys/fs/cgroup";
};

struct CapacitySourceConfig {
  // A JSON file {"version":1,"numaNodes":{"<numa id>":<factor 0..1>,...}}. Default none.
  std::string file;
  // A local http:// URL serving the same JSON. Default none. At most one of file and url.
  std::string url;
  bool Empty() const { return file.empty() && url.empty(); }
};

// Observed affinity: sampling the TCP traffic between this node's pods (agent/traffic_meter.h)
// and publishing it as huygens.io/pod-traffic on the NRT object (topology/pod_traffic.h).
struct TrafficConfig {
  // Sample and publish. Default false: it needs the host PID namespace and CAP_SYS_ADMIN +
  // CAP_SYS_PTRACE (docs/agent.md, "Observed affinity"), which an agent otherwise does without.
  // When false, an annotation left by an earlier run is removed.
  bool enabled = false;
  // Time between two samples of every pod's connections. Default 10 s.
  std::chrono::milliseconds sample_interval{10000};
  // Rates are averaged over this span (the published windowSeconds). Default 30 s; at least
  // sample_interval.
  std::chrono::milliseconds window{30000};
  // At most this many pairs are published, the highest rates first. Default 32; at least 1.
  int top_pairs = 32;
};

struct AgentConfig {
  // This node's name. Default: the NODE_NAME environment variable. Required (after defaulting).
  std::string node_name;
  // The system pool as an explicit cpu-list. Default: none (see kubelet_config_path).
  std::optional<CpuSet> system_cpus;
  // kubelet's config file (ParseKubeletConfig); when system_cpus is unset, its
  // `reservedSystemCPUs` is the system pool (ResolveSystemCpus); its `memoryManagerPolicy` and
  // `reservedMemory` shape the published memory (docs/agent.md). Default none. At most one of
  // system_cpus and kubelet_config_path.
  std::string kubelet_config_path;
  // allocatable (default) or isolated (user pool = the kernel's isolated CPUs).
  NodeMode mode = NodeMode::kAllocatable;
  // Namespaces whose containers run in the system pool, besides kube-system (always one).
  // Default {"kube-system"}.
  std::vector<std::string> system_namespaces{"kube-system"};
  // Namespaces whose pods may opt out with huygens.io/cpu-policy: none (their containers then
  // run on every online CPU, exclusive ones included); elsewhere such a pod runs in the shared
  // pool. Default: none.
  std::vector<std::string> cpu_policy_none_namespaces;
  // Published as NRT attributes topologyManagerPolicy / topologyManagerScope; the scheduler's
  // default for pods that set no huygens.io/topology-policy. Defaults single-numa-node,
  // container.
  TopologyPolicy topology_policy = TopologyPolicy::kSingleNumaNode;
  TopologyScope topology_scope = TopologyScope::kContainer;
  RuntimeConfig runtime;
  PodSourceKind pod_source = PodSourceKind::kWatch;
  // kubelet's read-only pod list (pod_source kKubelet). Default http://127.0.0.1:10255/pods.
  std::string kubelet_pods_url = "http://127.0.0.1:10255/pods";
  // Full reconcile pass at least this often, even without events. Default 30 s.
  std::chrono::milliseconds resync_period{30000};
  // The NRT object is written at most once per this interval. Default 10 s.
  std::chrono::milliseconds nrt_min_interval{10000};
  CapacitySourceConfig capacity;
  // kubelet's CPU manager checkpoint. Default /var/lib/kubelet/cpu_manager_state; "" = none.
  std::string kubelet_checkpoint_path = "/var/lib/kubelet/cpu_manager_state";
  // kubelet's memory manager checkpoint, read each pass when kubelet's memoryManagerPolicy is
  // Static (KubeletMemoryReader). Default /var/lib/kubelet/memory_manager_state; "" = none.
  std::string kubelet_memory_checkpoint_path = "/var/lib/kubelet/memory_manager_state";
  // kubelet's pod resources API socket, asked each pass for the NUMA-affine devices the NRT
  // zones list (PodResourcesReader). Default /var/lib/kubelet/pod-resources/kubelet.sock; "" =
  // none (no devices are published).
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  // The agent's own checkpoint. Default /var/lib/huygens/agent-checkpoint.json.
  std::string checkpoint_path = "/var/lib/huygens/agent-checkpoint.json";
  // host:port of /metrics, /healthz and /readyz. Default 0.0.0.0:9464; "" = no server.
  std::string metrics_address = "0.0.0.0:9464";
  TrafficConfig traffic;
};

// Every configuration field with its default (or an example where there is no default value)
// and its meaning, as a YAML file that ParseAgentConfig accepts (alternatives to a field are
// commented out): the footer of `huygens-agent --help`. docs/agent.md describes the same fields.
extern const char kAgentConfigReference[];

// Reads an environment variable; nullopt when unset.
using GetEnv = std::function<std::optional<std::string>(const char*)>;

// Parses the YAML text of the config file `file_name` (used in errors only). Missing keys take
// their defaults; node_name defaults to `getenv("NODE_NAME")`. Errors: InvalidArgument
// "FILE:LINE:COL: FIELD: message" as base/yaml_reader.h writes them, like the scheduler's
// config (e.g. `agent.yaml:3:12: runtime.timeout: "2x" is not a duration ...`; "FILE: FIELD:
// message" where there is no place to point at): not YAML or not a map; an unknown key; an
// apiVersion or kind other than the above; a value of the wrong type; a bad cpu-list, mode,
// policy, scope, pod source; a duration below 1ms; both systemCpus and kubeletConfig; both
// capacity.file and capacity.url; a capacity.url that is not http://; a traffic.topPairs that
// is not an integer >= 1; a traffic.window shorter than traffic.sampleInterval; no node name at
// all.
absl::StatusOr<AgentConfig> ParseAgentConfig(std::string_view yaml, const std::string& file_name,
                                             const GetEnv& getenv);

// The system pool: `config.system_cpus`, else kubelet's `reservedSystemCPUs` (`kubelet`, parsed
// from config.kubelet_config_path; default-constructed when there is none), else none.
CpuSet ResolveSystemCpus(const AgentConfig& config, const KubeletConfig& kubelet);

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_CONFIG_H_
