#include "sched/profile.h"

namespace huygens::sched {
namespace {

// kube-scheduler's default filters for the fields Huygens models, in its order.
std::vector<std::string> DefaultFilters() {
  return {"NodeUnschedulable", "NodeName",         "TaintToleration",   "NodeAffinity",
          "NodePorts",         "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"};
}

}  // namespace

Profile HuygensProfile() {
  Profile p;
  p.scheduler_name = "huygens";
  p.pre_filters = {"UnsupportedFeatures"};
  p.filters = DefaultFilters();
  p.filters.push_back("NumaFit");
  p.scores = {{"NodeResourcesFit", 1},
              {"NodeAffinity", 2},
              {"TaintToleration", 3},
              {"PodTopologySpread", 2},
              {"InterPodAffinity", 2},
              {"ImageLocality", 1},
              {"NumaScore", 12},
              {"SmtScore", 1}};
  p.reserves = {"NumaReserve"};
  p.resource_scoring = ResourceScoring::kMostAllocated;
  return p;
}

Profile DefaultProfile() {
  Profile p;
  p.scheduler_name = "default-scheduler";
  p.filters = DefaultFilters();
  // kube-scheduler's default weights: NodeResourcesFit 1, NodeAffinity 2, TaintToleration 3,
  // PodTopologySpread 2, InterPodAffinity 2, ImageLocality 1 (NodeResourcesBalancedAllocation 1 is
  // left out: kOptionalScorePlugins).
  p.scores = {{"NodeResourcesFit", 1},
              {"NodeAffinity", 2},
              {"TaintToleration", 3},
              {"PodTopologySpread", 2},
              {"InterPodAffinity", 2},
              {"ImageLocality", 1}};
  p.resource_scoring = ResourceScoring::kLeastAllocated;
  return p;
}

Profile NrtProfile(NrtScoring scoring) {
  Profile p = DefaultProfile();
  p.scheduler_name = "topo-aware-scheduler";
  p.filters.push_back("NodeResourceTopologyMatch");
  p.scores.push_back({"NodeResourceTopologyMatch", 1});
  p.nrt_scoring = scoring;
  return p;
}

const char* ToString(NrtScoring s) {
  switch (s) {
    case NrtScoring::kLeastAllocated:
      return "LeastAllocated";
    case NrtScoring::kMostAllocated:
      return "MostAllocated";
    case NrtScoring::kBalancedAllocation:
      return "BalancedAllocation";
    case NrtScoring::kLeastNumaNodes:
      return "LeastNUMANodes";
  }
  return "?";
}

std::optional<NrtScoring> ParseNrtScoring(std::string_view s) {
  for (NrtScoring v : {NrtScoring::kLeastAllocated, NrtScoring::kMostAllocated,
                       NrtScoring::kBalancedAllocation, NrtScoring::kLeastNumaNodes}) {
    if (s == ToString(v)) return v;
  }
  return std::nullopt;
}

}  // namespace huygens::sched
