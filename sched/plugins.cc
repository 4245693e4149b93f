#include "sched/plugins.h"

#include "fmt/format.h"

namespace huygens::sched {

absl::StatusOr<std::unique_ptr<Plugin>> NewPlugin(std::string_view name, const Profile& profile,
                                                  ClusterCache* cache) {
  if (name == "NodeUnschedulable") return NewNodeUnschedulable();
  if (name == "NodeName") return NewNodeName();
  if (name == "TaintToleration") return NewTaintToleration();
  if (name == "NodeAffinity") return NewNodeAffinity();
  if (name == "NodePorts") return NewNodePorts();
  if (name == "NodeResourcesFit") return NewNodeResourcesFit(profile.resource_scoring);
  if (name == "NodeResourcesBalancedAllocation") return NewBalancedAllocation();
  if (name == "ImageLocality") return NewImageLocality(cache);
  if (name == "UnsupportedFeatures") return NewUnsupportedFeatures();
  if (name == "InterPodAffinity") return NewInterPodAffinity(cache);
  if (name == "PodTopologySpread") return NewPodTopologySpread(cache);
  if (name == "NumaFit") return NewNumaFit();
  if (name == "NumaScore") return NewNumaScore(cache);
  if (name == "SmtScore") return NewSmtScore();
  if (name == "NumaReserve") return NewNumaReserve(cache);
  if (name == "NodeResourceTopologyMatch") return NewNodeResourceTopologyMatch(profile.nrt_scoring);
  return absl::InvalidArgumentError(
      fmt::format("profile {:?}: unknown plugin {:?}", profile.scheduler_name, name));
}

}  // namespace huygens::sched
