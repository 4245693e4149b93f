// Report: what one simulation found, for Huygens, the NRT peer (scheduler-plugins'
// NodeResourceTopologyMatch) and the stock baseline side by side, and its three
// renderings: a text table, JSON (stable keys, documented field by field in docs/simulate.md)
// and one self-contained HTML page (inline SVG, CSS and JS; no network).
//
// Thread-safety: plain data and pure functions.
#ifndef HUYGENS_SIM_REPORT_H_
#define HUYGENS_SIM_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace huygens::sim {

// The cluster at one moment of simulated time.
struct TimelineSample {
  double seconds = 0;               // simulated time
  double exclusive_utilisation = 0; // exclusive CPUs held / user-pool CPUs, cluster-wide
  int shared_sibling_cores = 0;     // cores whose SMT threads are held by two different pods
  int fragmented_cpus = 0;          // free CPUs on NUMA nodes with fewer than 4 free CPUs
  int running_pods = 0;
  int pending_pods = 0;             // in the scheduling queue
  // Affinity groups (docs/simulate.md, "The placement figures"): running exclusive members of
  // same-numa / nearest groups that share their node with another member of their group, where
  // one NUMA node could hold those members together, and of those, the ones whose group's
  // members on that node all lie on one NUMA node together.
  int group_members_colocated = 0;
  int group_members_aligned = 0;
  // Over the nodes with at least two NUMA nodes with user-pool CPUs: the mean of (most minus
  // fewest exclusive CPUs held on one NUMA node), CpuLedger::NumaLoadSpread.
  double numa_load_spread = 0;
};

// Which pod holds which CPU on one node, at the moment of peak exclusive utilisation.
struct CpuMap {
  std::string node;
  std::string shape;
  double seconds = 0;
  struct Cpu {
    int id = 0, core = 0, socket = 0, numa = 0;
    bool user = true;  // in the user pool (false: system pool)
    int pod = -1;      // index into `pods`, -1 free
  };
  std::vector<Cpu> cpus;
  std::vector<std::string> pods;  // names of the pods that hold CPUs here
};

// One Huygens scheduling attempt of the pod named by SimulationOptions::explain_pod
// (`huygens simulate --explain POD`): why the pod went where it went.
struct PodExplanation {
  std::string pod;                  // pod name
  double seconds = 0;               // simulated time of the attempt
  std::vector<std::string> score_plugins;  // the profile's score plugins, in order
  std::vector<int64_t> weights;            // their weights
  struct NodeVerdict {
    std::string node;
    std::string filter;             // the filter plugin that refused the node; empty = feasible
    std::string reason;             // that plugin's reason
    std::vector<int64_t> scores;    // feasible nodes: normalised score per score plugin (0..100)
    int64_t total = 0;              // feasible nodes: the weighted sum
    bool visited = true;            // the scheduler's attempt ran the filters on this node
  };
  // Feasible nodes the attempt visited (highest total first), then the feasible ones it did not
  // visit (likewise), then the refused ones.
  std::vector<NodeVerdict> nodes;
  // The nodes the scheduler's attempt visited. On clusters of 100 nodes or more it stops once
  // it has found NumFeasibleNodesToFind feasible nodes (kube-scheduler's
  // percentageOfNodesToScore, sched/scheduler.h), round-robin from where the last attempt
  // stopped, and chooses among those: a node it did not visit may score higher than the one
  // it chose. Equals nodes.size() when it visited every node.
  int visited_nodes = 0;
  std::string outcome;              // "scheduled", "unschedulable" or "error"
  std::string node;                 // scheduled: the chosen node
  std::vector<int> numa_nodes;      // scheduled: the NUMA nodes of its exclusive CPUs
  std::vector<std::pair<std::string, std::string>> cpusets;  // container name -> cpuset
  std::string message;              // unschedulable or error: the scheduler's message
};

// The explanation as text: one line per node (verdict, or scores by plugin and total; nodes
// the attempt did not visit marked so, with their count on the second line), then the outcome
// with the NUMA nodes and each container's cpuset, and how many visited nodes tied with the
// chosen one (the first visited wins, sched::Scheduler).
std::string ExplanationToText(const PodExplanation& explanation);

// One scheduler's run.
struct RunReport {
  std::string scheduler;            // "huygens", "huygens+rebalance", "nrt" or "baseline"
  int pods = 0;                     // pods that arrived
  int scheduled = 0;                // pods that started running (nrt, baseline: kubelet admitted)
  int unschedulable = 0;            // pods still waiting at the end of the run
  std::map<std::string, int> unschedulable_reasons;  // reason -> pods whose last attempt gave it
  int admission_rejected = 0;       // kubelet rejections (TopologyAffinityError and others)
  std::map<std::string, int> admission_rejected_reasons;
  int admission_failed_pods = 0;    // pods given up after the last re-creation was rejected
  // Of admission_rejected, those memory caused (nodes whose kubelet runs the memory manager
  // Static): the merge of the CPU hints alone would have admitted the pod, or the memory
  // manager's Allocate failed.
  int memory_admission_rejected = 0;
  // Memory placement of the exclusive pods on nodes that model memory (groups with
  // `memoryManager`; both 0 elsewhere). Remote: some container's memory NUMA nodes (its mems:
  // Huygens' allocation, or kubelet's Static memory manager blocks) are not all among the
  // NUMA nodes of its exclusive CPUs. Unpinned: kubelet runs the memory manager None, so
  // nothing pins the pod's memory (the kernel's first-touch policy decides; nrt and baseline
  // runs only, since Huygens writes the mems itself).
  int remote_memory_pods = 0;
  int memory_unpinned_pods = 0;
  // Devices (groups with `devices`; all 0 elsewhere). Of admission_rejected, those the device
  // manager caused (the merge without its hints would have admitted the pod, or its devices
  // ran out). Of exclusive_pods, those holding devices, and of those the misaligned ones: the
  // NUMA nodes of the pod's devices are not exactly the NUMA nodes of its exclusive CPUs (a
  // device off the CPUs' NUMA nodes, or CPUs on a NUMA node without any of its devices; Huygens:
  // the devices NodeState predicts kubelet gives; kubelet runs: the device manager's).
  int device_admission_rejected = 0;
  int device_pods = 0;
  int device_misaligned_pods = 0;
  int resizes = 0;                  // in-place resizes of running pods' containers, tried
  int resizes_refused = 0;          // of those, refused (the container kept its CPUs)
  std::map<std::string, int> resize_refused_reasons;  // reason -> refusals
  int exclusive_pods = 0;           // scheduled pods that held exclusive CPUs
  double single_numa_ratio = 0;     // of exclusive_pods, those whose CPUs lie in one NUMA node
  double mean_numa_nodes_per_pod = 0;
  // Of exclusive_pods, those whose exclusive CPUs lie in more than one socket (each socket
  // crossed puts the pod's threads behind the inter-socket link).
  int multi_socket_pods = 0;
  // Of exclusive_pods, those whose exclusive CPUs fit the user-pool CPUs of one NUMA node of
  // some node in the cluster, and the share of them placed on one NUMA node.
  int fits_one_numa_pods = 0;
  double fits_one_numa_single_ratio = 0;
  int shared_sibling_cores = 0;     // peak over the timeline
  double shared_sibling_cores_mean = 0;
  double exclusive_utilisation_mean = 0;
  double exclusive_utilisation_peak = 0;
  int fragmented_cpus_peak = 0;
  double fragmented_cpus_mean = 0;
  int64_t attempts = 0;             // ScheduleOne calls
  int64_t scheduling_errors = 0;    // attempts that ended in an error (Reserve/Bind failed)
  double attempts_per_second = 0;   // attempts / time spent inside ScheduleOne
  double p50_micros = 0, p90_micros = 0, p99_micros = 0, max_micros = 0;
  // Affinity groups: of the co-located member samples over the timeline (sum over samples of
  // TimelineSample::group_members_colocated), the share that were aligned, 0..1; nullopt when
  // no sample had co-located members.
  std::optional<double> group_aligned_share;
  double group_members_colocated_mean = 0;  // TimelineSample::group_members_colocated, mean
  double numa_load_spread_mean = 0;         // TimelineSample::numa_load_spread, mean
  // The rebalancer (huygens+rebalance only; 0 elsewhere): moves carried out, CPUs the moved
  // pods did not hold before (rebalance::Move::moved_cpus, summed), and its intervals run.
  int rebalance_moves = 0;
  int rebalance_moved_cpus = 0;
  int rebalance_intervals = 0;
  double simulated_seconds = 0;     // simulated time at the last event
  std::vector<TimelineSample> timeline;
  std::vector<CpuMap> cpu_maps;
  std::vector<PodExplanation> explanations;  // Huygens run, with explain_pod: one per attempt
};

struct Report {
  std::string cluster_source;   // "built-in example", a file path, ...
  std::string workload_source;
  uint64_t seed = 0;
  int nodes = 0;
  int64_t cpus = 0;             // logical CPUs in the cluster
  struct Group {
    std::string name, shape, topology_policy, topology_scope;
    std::string memory_manager;  // "None", "Static", or "" when the group does not model memory
    int count = 0, cpus_per_node = 0, numa_nodes_per_node = 0;
  };
  std::vector<Group> groups;
  int cpu_map_sample_nodes = 0; // nodes shown in the CPU maps (a sample when < nodes)
  RunReport huygens;
  // The Huygens run again with the rebalancer (SimulationOptions::rebalance); has_rebalance.
  RunReport huygens_rebalance;
  bool has_rebalance = false;
  int64_t rebalance_interval_us = 0;  // its settings, for the report (has_rebalance)
  int rebalance_max_moves = 0;
  bool rebalance_balance = false;
  RunReport nrt;                // the NRT peer's run
  std::string nrt_scoring;      // its scoring strategy, e.g. "LeastAllocated"
  RunReport baseline;
  bool has_baseline = true;     // false: neither nrt nor baseline ran
  // Some group models memory (`memoryManager`): the table, JSON and HTML carry the memory
  // figures (memory rejections, remote-memory and unpinned pods); absent otherwise.
  bool memory_modelled = false;
  // Some group has NUMA-affine devices (`devices`): the table, JSON and HTML carry the device
  // figures (device rejections, device-misaligned pods); absent otherwise.
  bool devices_modelled = false;
  // Some pod has an affinity group, or the rebalancer ran: the table, JSON and HTML carry the
  // affinity and NUMA-load figures (group_aligned_share, numa_load_spread_mean); the moves
  // only with has_rebalance.
  bool affinity_figures = false;
};

// JSON, top-level keys "version", "cluster", "workload", "nrtScoring", "huygens", "nrt",
// "baseline" (see
// docs/simulate.md). `detail` adds the timelines and CPU maps.
nlohmann::json ReportToJson(const Report& report, bool detail);
// The side-by-side table printed by `huygens simulate`.
std::string ReportToTable(const Report& report);
// One self-contained HTML page.
std::string ReportToHtml(const Report& report);

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_REPORT_H_
