// SchedulerConfig: the huygens-scheduler configuration file (YAML), parsed once into a typed
// struct.
//
// Shape (every key optional; defaults as documented per field; unknown keys are errors):
//   apiVersion: huygens.io/v1alpha1   # when present, exactly this (base/config_kind.h)
//   kind: SchedulerConfiguration      # when present, exactly this
//   schedulerName: huygens-scheduler
//   profiles:                       # one scheduler per profile, all over one cluster cache
//   - schedulerName: huygens-scheduler
//     pluginWeights: {NumaScore: 12, SmtScore: 1, NodeResourcesFit: 1, ...}
//     percentageOfNodesToScore: 0
//     defaultTopologyPolicy: single-numa-node   # for pods without huygens.io/topology-policy
//     defaultBindPolicy: full-cores             # for pods without huygens.io/bind-policy
//   numaStrategy: most-allocated                # node-level (NodeConfig): most- | least-allocated
//   systemPoolNamespaces: [kube-system]
//   leaderElection: {leaderElect: true, resourceName: huygens-scheduler,
//                    resourceNamespace: kube-system, leaseDuration: 15s, renewDeadline: 10s,
//                    retryPeriod: 2s}
//   clientConnection: {qps: 50, burst: 100}
//   metricsAddress: 0.0.0.0:10251
//   extender: {enabled: false, address: 0.0.0.0:8888, maxRequestBytes: 4Mi}
// The leader election and client connection names are kube-scheduler's
// (KubeSchedulerConfiguration), so an operator who knows it recognises them.
//
// Errors: InvalidArgument "FILE:LINE:COL: FIELD: message" naming the file and the field path
// (e.g. `profiles[0].pluginWeights.NumaScore`); an apiVersion or kind other than the above is
// one (`kind: "AgentConfiguration" is not supported (...)`).
// Thread-safety: plain data; functions are pure (LoadSchedulerConfig reads one file).
#ifndef HUYGENS_SCHEDULER_CONFIG_H_
#define HUYGENS_SCHEDULER_CONFIG_H_

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serving/http_server.h"
#include "absl/status/statusor.h"
#include "alloc/pod.h"
#include "node/node_state.h"
#include "rebalance/planner.h"
#include "sched/profile.h"

namespace huygens::scheduler {

struct ProfileConfig {
  // Pods with this spec.schedulerName use this profile. Default: the top-level schedulerName.
  std::string scheduler_name;
  // The scheduling profile: sched::HuygensProfile() with the configured score weights (a weight
  // of 0 removes the score plugin) and percentageOfNodesToScore.
  sched::Profile profile;
  // Filled into pods that carry no huygens.io/topology-policy / bind-policy annotation;
  // nullopt (default) = the node's default (from its NodeResourceTopology).
  std::optional<TopologyPolicy> default_topology_policy;
  std::optional<BindPolicy> default_bind_policy;
};

struct LeaderElectionSettings {
  bool leader_elect = true;                          // default true
  std::string resource_name = "huygens-scheduler";  // the Lease's name
  std::string resource_namespace = "kube-system";
  std::chrono::milliseconds lease_duration{15000};  // kube-scheduler's defaults
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// The rebalancer (scheduler/rebalancer.h, docs/rebalancer.md): moves of running pods' exclusive
// CPUs so affinity groups share a NUMA node and NUMA load stays even.
struct RebalancerSettings {
  bool enabled = true;                         // default true (moves only grouped pods, or
                                               // every pod when `balance`)
  // How often each node is planned; default 30 s (rebalance::kDefaultInterval).
  std::chrono::milliseconds interval{rebalance::kDefaultInterval};
  // Moves written per node per interval; default 1 (rebalance::PlannerOptions).
  int max_moves_per_node = rebalance::PlannerOptions{}.max_moves;
  bool balance = false;                        // also even exclusive load per NUMA node; default false
  // Observed affinity: pods of a node whose traffic (huygens.io/pod-traffic on its NRT,
  // published by agents with traffic.enabled) reaches this rate, in bytes per second, form a
  // group (same-numa) with the pods they are so linked to. 0 turns it off. Default 1 MB/s.
  int64_t observed_min_bytes_per_second = 1000000;
};

struct SchedulerConfig {
  std::string scheduler_name = "huygens-scheduler";
  // Default: one profile named scheduler_name with sched::HuygensProfile().
  std::vector<ProfileConfig> profiles;
  NumaStrategy numa_strategy = NumaStrategy::kMostAllocated;  // default most-allocated (pack)
  // Pods of these namespaces run in the system pool: the scheduler treats them as shared
  // (huygens.io/cpu-policy none) and never gives them exclusive CPUs. Default [kube-system].
  std::vector<std::string> system_pool_namespaces{"kube-system"};
  LeaderElectionSettings leader_election;
  double qps = 50;  // client-side rate limit; default 50 (kube-scheduler's)
  int burst = 100;  // default 100
  std::string metrics_address = "0.0.0.0:10251";  // /metrics, /healthz, /readyz
  bool extender_enabled = false;                     // serve the extender protocol instead
  std::string extender_address = "0.0.0.0:8888";    // default 0.0.0.0:8888
  // The largest extender request body read (serving::HttpServerOptions::max_body_bytes); a larger
  // one is answered 413 unread. Default 4 MiB: kube-scheduler's largest with nodeCacheCapable
  // (a Pod, which etcd keeps under 1.5 MiB, and up to 5,000 node names of up to 253 bytes) is
  // under 3 MiB. nodeCacheCapable: false sends whole Nodes instead, some 10-20 KiB each.
  std::size_t extender_max_request_bytes = std::size_t{4} << 20;
  // extender.tls: HTTPS with kube-scheduler's client certificate checked (kube-scheduler's
  // extender `enableHTTPS` + `tlsConfig`). Unset: plain HTTP (say why in your deployment).
  std::optional<serving::TlsOptions> extender_tls;
  RebalancerSettings rebalancer;
  // A node whose agent's heartbeat (huygens.io/agent-heartbeat on its NRT) has not changed for
  // this long takes no more exclusive pods until it changes again; 0 turns the check off.
  // Nodes whose NRT has no heartbeat (agents before it) are not judged. Default 3 minutes
  // (three of the agent's default heartbeat intervals).
  std::chrono::milliseconds agent_heartbeat_timeout{std::chrono::minutes(3)};
};

// Every configuration field with its default (or an example where there is no default value)
// and its meaning, as a YAML file that ParseSchedulerConfig accepts: the footer of
// `huygens-scheduler --help`. docs/scheduler-service.md describes the same fields.
extern const char kSchedulerConfigReference[];

// Parses the YAML text of `file_name` (used in errors only). Empty text gives the defaults.
absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml,
                                                     const std::string& file_name);
// Reads and parses a file. Errors: NotFound naming the file, or ParseSchedulerConfig's.
absl::StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string& path);

// The configuration's profiles (the default one when none are configured). In extender mode
// without their PreFilter-only plugins (UnsupportedFeatures): kube-scheduler's own plugins
// judge what those refuse.
std::vector<ProfileConfig> EffectiveProfiles(const SchedulerConfig& config);

}  // namespace huygens::scheduler

#endif  // HUYGENS_SCHEDULER_CONFIG_H_
