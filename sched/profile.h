// Profile: which plugins a scheduler runs, their order and weights, and its defaults.
//
// What it is: kube-scheduler's KubeSchedulerProfile reduced to Huygens' needs. Two built-in
// profiles:
//   - HuygensProfile(): UnsupportedFeatures, the default filters plus NumaFit, the NUMA/SMT scores and the Reserve
//     plugin that computes exact cpusets (scheduler name "huygens");
//   - DefaultProfile(): NUMA-blind, like stock kube-scheduler on these fields (no cpusets at
//     Reserve; kubelet would pick the CPUs at admission). The simulator's baseline.
//   - NrtProfile(): DefaultProfile plus scheduler-plugins' NodeResourceTopologyMatch (zone-level
//     Filter and Score on each node's NodeResourceTopology), as its manifests deploy it; kubelet
//     still picks the CPUs. The simulator's NRT peer.
//
// Topology policy and scope, bind policy and NUMA strategy are not profile settings: a pod's
// annotations win, else the node's NodeConfig decides (DESIGN.md: "default from the node").
//
// Plugin names (one file each, sched/plugin_*.cc; see docs/scheduler.md):
//   pre-filters: UnsupportedFeatures
//   filters:  NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
//             NodeResourcesFit, PodTopologySpread, InterPodAffinity, NumaFit,
//             NodeResourceTopologyMatch
//   scores:   NodeResourcesFit, NodeAffinity, TaintToleration, PodTopologySpread,
//             InterPodAffinity, NumaScore,
//             SmtScore, NodeResourceTopologyMatch
//   reserve:  NumaReserve
//
// Thread-safety: plain data.
#ifndef HUYGENS_SCHED_PROFILE_H_
#define HUYGENS_SCHED_PROFILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>


namespace huygens::sched {

// NodeResourcesFit's scoring strategy (kube-scheduler's ScoringStrategy.Type).
enum class ResourceScoring {
  kLeastAllocated,  // prefer emptier nodes (kube-scheduler's default)
  kMostAllocated,   // prefer fuller nodes (bin packing)
};

// NodeResourceTopologyMatch's scoring strategy (scheduler-plugins' ScoringStrategyType; its
// config defaults to LeastAllocated, apis/config/v1/defaults.go).
enum class NrtScoring {
  kLeastAllocated,      // prefer nodes whose NUMA zones keep more of the request free
  kMostAllocated,       // prefer nodes whose NUMA zones the request fills more
  kBalancedAllocation,  // prefer zones where cpu and memory are used in equal shares
  kLeastNumaNodes,      // prefer nodes that fit the pod on the fewest NUMA zones
};

// The strategy's name as scheduler-plugins spells it ("LeastAllocated", "LeastNUMANodes", ...).
const char* ToString(NrtScoring s);
// The strategy named `s` (the spellings of ToString); nullopt for any other string.
std::optional<NrtScoring> ParseNrtScoring(std::string_view s);

struct WeightedPlugin {
  std::string name;
  int64_t weight = 1;  // kube-scheduler's plugin weight (1..100)

  friend bool operator==(const WeightedPlugin&, const WeightedPlugin&) = default;
};

struct Profile {
  // Pods whose spec.schedulerName equals this are scheduled with this profile.
  std::string scheduler_name = "huygens";
  // PreFilter-only plugins, run in this order before the filters' own PreFilters.
  std::vector<std::string> pre_filters;
  // Filter plugins in the order they run (cheap first). A plugin that also has a PreFilter
  // runs it, in this order, before any Filter.
  std::vector<std::string> filters;
  // Score plugins and weights. A plugin that also has a PreScore runs it first.
  std::vector<WeightedPlugin> scores;
  // Reserve plugins in order ("NumaReserve" computes and assumes cpusets).
  std::vector<std::string> reserves;
  // kube-scheduler's percentageOfNodesToScore: 0 = adaptive (50% minus 1% per 125 nodes,
  // floor 5%); otherwise 1..100. At least 100 nodes are always evaluated when there are that
  // many. Default 0.
  int percentage_of_nodes_to_score = 0;
  // Default kLeastAllocated (kube-scheduler's default); the Huygens profile packs.
  ResourceScoring resource_scoring = ResourceScoring::kLeastAllocated;
  // NodeResourceTopologyMatch's scoring strategy. Default kLeastAllocated (scheduler-plugins'
  // default).
  NrtScoring nrt_scoring = NrtScoring::kLeastAllocated;
  // Reuse Filter and raw Score results of an earlier pod with the same equivalence key on
  // nodes unchanged since (Huygens' own; see scheduler.h). Results are identical either way;
  // false recomputes everything (for tests that prove that). Default true.
  bool equivalence_cache = true;
};

// Score plugins that no built-in profile runs and a configuration may add by giving one a weight
// (scheduler/config.h, pluginWeights): kube-scheduler's NodeResourcesBalancedAllocation, in its
// default profile at weight 1. Left out of HuygensProfile because with it (and NumaScore raised
// to 16, which keeps NumaScore's tiers above it) the simulator's device example misaligned 2
// GPU pods; left out of DefaultProfile so far because the simulator's peer comparisons were
// built without it (docs/scheduler.md, "Differences from kube-scheduler").
inline constexpr const char* kOptionalScorePlugins[] = {"NodeResourcesBalancedAllocation"};

// The Huygens profile (see the file comment). PreFilter: UnsupportedFeatures (dropped in
// extender mode, scheduler/config.h's EffectiveProfiles). Filters: NodeUnschedulable, NodeName,
// TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, PodTopologySpread,
// InterPodAffinity, NumaFit. Scores (weight): NodeResourcesFit (1, most-allocated), NodeAffinity
// (2), TaintToleration (3), PodTopologySpread (2), InterPodAffinity (2), NumaScore (12: its tiers then decide before the other scores, see
// plugin_numa_score.cc), SmtScore (1).
// Reserve: NumaReserve.
Profile HuygensProfile();

// The stock-scheduler baseline: the same default filters and scores (PodTopologySpread and
// InterPodAffinity weight 2, kube-scheduler's) without any NUMA plugin
// and without Reserve; NodeResourcesFit scores least-allocated; scheduler name
// "default-scheduler".
Profile DefaultProfile();

// The NUMA-aware peer: DefaultProfile() with NodeResourceTopologyMatch added as the last filter
// and as a score of weight 1 (kube-scheduler's default weight for a plugin configured without
// one, as scheduler-plugins' manifests/noderesourcetopology/scheduler-config.yaml does), scoring
// with `scoring`; scheduler name "topo-aware-scheduler" (the name in those manifests).
Profile NrtProfile(NrtScoring scoring);

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_PROFILE_H_
