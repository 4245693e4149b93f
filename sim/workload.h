// Workload: the pods a simulation runs, from YAML pod templates or from a CSV trace.
//
// What it is: a list of PodArrival (a pod, the simulated time it is created, and how long it
// lives once it runs), sorted by arrival time. Two sources:
//   - a workload YAML (ParseWorkloadSpec + GenerateArrivals): pod templates with a count, a
//     Poisson arrival rate, a start time, a lifetime distribution (fixed, exponential,
//     uniform, or forever), containers with cpu/memory requests and limits (the QoS class
//     follows from them as in Kubernetes), Huygens policies, an affinity group, a node
//     selector, tolerations, a priority and in-place resizes of its containers. Randomness comes from one seeded generator
//     (PCG32, see Random), so the
//     same spec and seed give the same arrivals on every platform;
//   - a trace CSV in the column layout of openb_pod_list_default.csv (ParseTrace): creation
//     and deletion times drive arrivals and departures; see TraceOptions for how Alibaba's QoS
//     classes and fractional CPU requests map to Kubernetes pods.
// docs/simulate.md documents every field of both.
//
// Time is simulated, in microseconds from the start of the run.
//
// Thread-safety: plain data and pure functions.
#ifndef HUYGENS_SIM_WORKLOAD_H_
#define HUYGENS_SIM_WORKLOAD_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rebalance/planner.h"
#include "sched/pod.h"

namespace huygens::sim {

// How long a pod runs once it is bound.
struct Lifetime {
  enum class Kind { kForever, kFixed, kExponential, kUniform };
  Kind kind = Kind::kForever;  // default: the pod never leaves
  int64_t a_us = 0;            // fixed: the value; exponential: the mean; uniform: the minimum
  int64_t b_us = 0;            // uniform: the maximum
};

// An in-place resize of one exclusive container of a running pod (kubelet's in-place resize
// of a Guaranteed pod, KEP-5554): `after_us` after the pod starts running, its container
// `container` asks for `cpus` CPUs (requests = limits). Huygens keeps the CPUs the container
// has and adds or returns CPUs on its NUMA nodes (NodeState::ResizeContainer); kubelet v1.35
// refuses it as Infeasible under the static CPU manager policy (feature gate
// InPlacePodVerticalScalingExclusiveCPUs off by default).
struct ResizeEvent {
  int64_t after_us = 0;
  std::string container;
  int cpus = 1;
};

struct PodTemplate {
  std::string name;
  int count = 1;                    // pods made from this template, >= 0
  double arrivals_per_second = 0;   // Poisson rate; 0 = all `count` pods arrive at start_us
  int64_t start_us = 0;             // first possible arrival
  Lifetime lifetime;
  std::vector<ResizeEvent> resizes;  // in YAML order; each applies to every pod of the template
  // Affinity groups (with pod.spec.affinity_group set, the base name): 1 = every pod of the
  // template joins that group; N > 1 = the pods are dealt round-robin into N groups named
  // "<base>-0" ... "<base>-<N-1>" (pod i joins group i mod N), so with Poisson arrivals the
  // members of each group arrive spread over the run. >= 1.
  int affinity_groups = 1;
  // The groups' policy (a NumaAffinityGroup's spec.policy), read by the rebalancer; every
  // template naming one group gives it the same policy. Default same-numa.
  rebalance::GroupPolicy affinity_policy = rebalance::GroupPolicy::kSameNuma;
  // Prototype: containers, Huygens annotations (cpu/topology/bind policy, affinity group,
  // huygens.io/rebalance as sched::Pod::rebalance),
  // labels, node selector, tolerations, priority. uid/name/creation_index are set per pod.
  sched::Pod pod;
};

// The rebalancer in a simulation (the Huygens run's second column, "huygens+rebalance"):
// every `interval_us` of simulated time, rebalance::PlanMoves on every node, and the moves
// carried out (sim/simulator.h).
struct RebalanceSettings {
  // > 0. Default 30 s, as huygens-scheduler's (rebalance::kDefaultInterval).
  int64_t interval_us = std::chrono::duration_cast<std::chrono::microseconds>(rebalance::kDefaultInterval).count();
  rebalance::PlannerOptions planner;  // maxMoves (per node per interval) and balance
};

struct WorkloadSpec {
  std::vector<PodTemplate> templates;
  std::optional<uint64_t> seed;  // the spec's own seed; --seed overrides it
  std::optional<RebalanceSettings> rebalance;  // the spec's `rebalance` block, when given
};

// One pod of the run.
struct PodArrival {
  int64_t arrival_us = 0;
  int64_t lifetime_us = -1;  // -1: never leaves
  sched::Pod pod;            // uid, name and creation_index set
  int source = 0;            // template index (YAML) or trace row line (CSV)
  std::vector<ResizeEvent> resizes;  // from the template (YAML); none from a trace
  // Its affinity group's policy (pod.spec.affinity_group names the group); from the template
  // (YAML), same-numa from a trace.
  rebalance::GroupPolicy affinity_policy = rebalance::GroupPolicy::kSameNuma;
};

// Parses a workload YAML. Errors: InvalidArgument "FILE:LINE:COL: FIELD: problem" (unknown
// field, wrong unit, negative count or rate, limit below request, bad policy name, two
// templates giving one affinity group different policies, ...).
absl::StatusOr<WorkloadSpec> ParseWorkloadSpec(std::string_view yaml, std::string_view file_name);
absl::StatusOr<WorkloadSpec> LoadWorkloadSpec(const std::string& path);

// Draws the arrivals of every template with the seeded generator and merges them by time
// (ties: template order, then index). Pod uids are "<template>-<index>"; creation_index
// follows the merged order. Deterministic: a function of (spec, seed) only.
std::vector<PodArrival> GenerateArrivals(const WorkloadSpec& spec, uint64_t seed);

// How trace rows become pods.
struct TraceOptions {
  // LS and Guaranteed rows request CPUs exclusively when the request is a whole number of
  // CPUs (Kubernetes Guaranteed: limits = requests for cpu and memory). Fractional LS /
  // Guaranteed rows: shared (Burstable, requests only) unless `round_up_exclusive`, which rounds
  // the request up to whole CPUs and makes them Guaranteed too. Default false.
  bool round_up_exclusive = false;
  // BE and Burstable rows: always shared (Burstable with the row's requests; Alibaba's BE pods
  // still carry requests, which kube-scheduler counts). GPUs are ignored.
  // Only rows whose creation_time is below this (seconds; 0 = no limit) are read.
  int64_t max_creation_seconds = 0;
  // At most this many rows (0 = all), in file order.
  int max_pods = 0;
  // Divides trace times (1 = real time; 10 = ten times faster). >= 1. Default 1.
  int64_t time_compression = 1;
};

// Parses a trace CSV (header name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,
// pod_phase,creation_time,deletion_time,scheduled_time; only name, cpu_milli, memory_mib, qos,
// creation_time and deletion_time are read). A pod arrives at creation_time and leaves
// deletion_time - creation_time after it starts; an empty or earlier deletion_time means it
// never leaves. Errors: InvalidArgument "FILE:LINE: column NAME: problem" (missing column,
// non-number, negative request, unknown qos).
absl::StatusOr<std::vector<PodArrival>> ParseTrace(std::string_view csv, std::string_view file_name,
                                                   const TraceOptions& options);
absl::StatusOr<std::vector<PodArrival>> LoadTrace(const std::string& path,
                                                  const TraceOptions& options);

// The seeded generator (PCG32, O'Neill 2014): same sequence on every platform.
class Random {
 public:
  explicit Random(uint64_t seed);
  uint32_t Next32();
  double Uniform01();                 // in [0, 1), 53 bits
  double Exponential(double mean);    // -mean * ln(1 - u)
 private:
  uint64_t state_ = 0;
  uint64_t inc_ = 0;
};

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_WORKLOAD_H_
