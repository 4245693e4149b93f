// Simulator: an event-driven run of a workload over a modelled cluster, with the Huygens
// scheduler, with the NRT peer (kube-scheduler with scheduler-plugins' NodeResourceTopologyMatch
// followed by kubelet admission) and with the baseline (the stock NUMA-blind scheduler followed
// by kubelet admission), producing a Report.
//
// What it does (docs/simulate.md has the full story):
//   - Simulated time only: events (arrivals, departures, kubelet re-creations, queue wakeups)
//     are processed in time order, ties in a fixed order; the only wall-clock use is the
//     injected monotonic clock around Scheduler::ScheduleOne for latency and throughput.
//   - Huygens run: sched::HuygensProfile over a ClusterCache whose nodes carry NodeState
//     (with NodeConfig::memory_manager from the group's memoryManager); Reserve computes the
//     exact cpusets and, on such nodes, the memory NUMA nodes.
//   - Baseline run: sched::DefaultProfile over NUMA-blind nodes; a scheduled pod is then
//     admitted by a model of the node's kubelet: topology manager (alloc/hints.h CPU hints,
//     alloc/merge.h merge, the node's policy and scope) and the static CPU manager
//     (alloc/static_policy.h, reservedSystemCPUs = the node's system CPUs, no policy options).
//     On groups whose kubelet runs the memory manager Static (NodeGroupSpec::memory_manager),
//     kubelet's memory manager (alloc/memory_manager.h) is a second hint provider merged with
//     the CPU hints, and allocates each container's memory with the merged hint after its CPUs;
//     RunReport counts the rejections it causes and the exclusive pods whose memory lies off
//     their CPUs' NUMA nodes (remote) or is not pinned (policy None), in every run.
//     A rejected pod (TopologyAffinityError, or an allocation error) is removed from the node;
//     like a ReplicaSet, a replacement is created after `admission_retry_delay_us`, at most
//     `max_admission_retries` times; then the pod counts as failed.
//   - NRT run: sched::NrtProfile(options.nrt_scoring) over NUMA-blind nodes that carry a
//     NodeResourceTopology (Node::nrt) derived from the node's kubelet state as NFD's
//     topology-updater reports it, republished after every admission and departure; the chosen
//     node's kubelet admits the pod exactly as in the baseline run.
//   - Termination: a pod is retried only after a cluster change or its backoff; a Reserve
//     refusal counts as unschedulable (it waits for a change), and a pod whose attempts end in
//     a scheduling error max_scheduling_errors_per_pod times stops the run with an Internal
//     error, so every run ends or says why it cannot.
//   - Rebalancer (SimulationOptions::rebalance, Huygens only): see there.
//   - Checks: a CpuLedger per node records every exclusive CPU independently; a CPU taken by
//     two pods, a CPU outside the user pool, or a placement that breaks its policy (CPU count,
//     single-numa-node, full-cores) stops the run with an Internal error. With
//     `check_every_event`, NodeState::Validate (Huygens) and kubelet state disjointness
//     (baseline) are also checked after every event.
//
// Thread-safety: a run uses only its own objects; runs may proceed on different threads.
#ifndef HUYGENS_SIM_SIMULATOR_H_
#define HUYGENS_SIM_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sched/cache.h"
#include "sched/framework.h"
#include "sched/profile.h"
#include "sim/cluster_spec.h"
#include "sim/report.h"
#include "sim/workload.h"

namespace huygens::sim {

struct SimulationOptions {
  // NRT run: NodeResourceTopologyMatch's scoring strategy. Default kLeastAllocated (the
  // plugin's own default).
  sched::NrtScoring nrt_scoring = sched::NrtScoring::kLeastAllocated;
  // Baseline and NRT runs: re-creations of a pod kubelet rejected. Default 3.
  int max_admission_retries = 3;
  // Baseline and NRT runs: delay before a re-created pod reaches the scheduler. Default 1 s.
  int64_t admission_retry_delay_us = 1000000;
  // Points on the utilisation timeline; 0 = none. Default 240.
  int timeline_samples = 240;
  // Nodes whose CPU map the report carries (a deterministic sample: the first node of each
  // group, then round-robin over groups). Default 6.
  int cpu_map_nodes = 6;
  // Attempts of one pod that may end in a scheduling error (ScheduleResult kError: a plugin or
  // bind failure, never a pod that merely does not fit) before the run stops with an Internal
  // error naming the pod and the last error. A deterministic run that fails the same way keeps
  // failing, so without this bound it would back off and retry forever. Default 20.
  int max_scheduling_errors_per_pod = 20;
  // Validate every node's state after every event (slow; for tests). Default false.
  bool check_every_event = false;
  // Monotonic clock in nanoseconds, read around ScheduleOne. Default: std::chrono::steady_clock.
  std::function<int64_t()> clock_ns;
  // Called now and then with the fraction of arrivals processed (0..1).
  std::function<void(double)> progress;
  // Huygens run: the name of a pod (e.g. "ls-12-7") whose every scheduling attempt is
  // explained in RunReport::explanations (each node's filter verdict and scores by plugin, the
  // chosen node, NUMA nodes and cpusets). Empty (default): none.
  std::string explain_pod;
  // Huygens runs: the rebalancer. When set, RunSimulation(kHuygens) runs rebalance::PlanMoves
  // every interval_us of simulated time (from interval_us on) on every node, with the node's
  // affinity groups (the pods on it that name one group; the group's policy from the workload)
  // and pinned = the pods with sched::Pod::rebalance false (the template's `rebalance: false`,
  // huygens.io/rebalance "false"), as huygens-scheduler's rebalancer does, and carries every
  // move out through the scheduler cache (ClusterCache::MovePod, NodeState::ReplaceAllocation) and the
  // simulator's ledger, so later attempts see the moved CPUs; each moved node is validated
  // after the interval. Ticks go on while arrivals or events remain, and after that while a
  // tick still moves something (the planner reaches a fixed point; 1000 such rounds stop the
  // run with an Internal error instead of looping forever). Simulate() then runs
  // Huygens twice: "huygens" without, "huygens+rebalance" with. Default: none.
  std::optional<RebalanceSettings> rebalance;
  // Huygens run: makes the Bind plugin over the run's cache (a seam for tests, e.g. a binder
  // that fails). Default (empty): bind in the cache at once (sched's CacheBind).
  std::function<std::unique_ptr<sched::BindPlugin>(sched::ClusterCache*)> huygens_binder;
};

enum class Scheduler { kHuygens, kBaseline, kNrt };

// One run. Errors: InvalidArgument for a cluster that cannot be modelled (e.g. a baseline node
// without system CPUs: kubelet's static policy needs a reservation), Internal for a broken
// invariant (see the file comment; the message names the node, the pods and the CPUs) or a
// pod that keeps failing with a scheduling error (max_scheduling_errors_per_pod).
absl::StatusOr<RunReport> RunSimulation(const ClusterSpec& cluster,
                                        const std::vector<PodArrival>& arrivals,
                                        Scheduler which, const SimulationOptions& options);

// The three runs on the same input (huygens, nrt, baseline), and the cluster summary; with
// options.rebalance a fourth, huygens+rebalance (Report::has_rebalance; the plain huygens run
// then has no rebalancer, and --explain applies to it only).
// `with_baseline` false runs Huygens only (Report::has_baseline false).
absl::StatusOr<Report> Simulate(const ClusterSpec& cluster, const std::vector<PodArrival>& arrivals,
                                const SimulationOptions& options, bool with_baseline = true);

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_SIMULATOR_H_
