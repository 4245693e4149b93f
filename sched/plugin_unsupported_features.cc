// UnsupportedFeatures: Huygens' PreFilter that keeps a pod asking for something huygens-scheduler
// cannot honour yet from being placed as if it had not asked (docs/scheduler.md, "Differences
// from kube-scheduler"). kUnsupported below is the one list: a feature is supported once its
// entry is deleted.
#include <string>

#include "fmt/format.h"
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

struct UnsupportedFeature {
  const char* name;  // as the message names it: the pod's field
  bool (*asked)(const Pod&);
};

// kube-scheduler v1.35's plugins for these are DynamicResources and VolumeBinding (with
// VolumeRestrictions, VolumeZone, NodeVolumeLimits).
constexpr UnsupportedFeature kUnsupported[] = {
    {"resourceClaims", [](const Pod& p) { return !p.resource_claims.empty(); }},
    {"persistentVolumeClaim or ephemeral volumes", [](const Pod& p) { return !p.claim_volumes.empty(); }},
};

class UnsupportedFeatures final : public PreFilterPlugin {
 public:
  std::string_view Name() const override { return "UnsupportedFeatures"; }

  // One reason naming every unsupported feature the pod asks for, in the table's order.
  Status PreFilter(CycleState& state) override {
    std::string asked;
    for (const UnsupportedFeature& f : kUnsupported) {
      if (!f.asked(state.pod())) continue;
      if (!asked.empty()) asked += ", ";
      asked += f.name;
    }
    if (asked.empty()) return Status::Success();
    return Status::Unresolvable(
        fmt::format("pod asks for {}, which huygens-scheduler does not support yet", asked));
  }
};

}  // namespace

std::unique_ptr<Plugin> NewUnsupportedFeatures() { return std::make_unique<UnsupportedFeatures>(); }

}  // namespace huygens::sched
