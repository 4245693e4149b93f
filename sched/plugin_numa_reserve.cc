// NumaReserve: computes the pod's exact cpusets at Reserve (see plugins.h).
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

class NumaReserve final : public ReservePlugin {
 public:
  explicit NumaReserve(ClusterCache* cache) : cache_(cache) {}
  std::string_view Name() const override { return "NumaReserve"; }

  Status Reserve(CycleState& state, const NodeInfo& node) override {
    NodeState* cpu = cache_->MutableCpuState(node.node.name);
    if (cpu == nullptr) return Status::Success();
    near_.clear();
    const std::string& group = state.pod().spec.affinity_group;
    if (!group.empty()) {
      if (const AffinityGroupPlacement* placement = cache_->AffinityGroup(group)) {
        near_ = GroupNumaNodes(*placement, node);
      }
    }
    absl::StatusOr<PodAllocation> got = cpu->AllocatePod(state.pod().spec, near_);
    if (!got.ok()) {
      return Status::Unschedulable(std::string("NUMA: ") + std::string(got.status().message()));
    }
    state.allocation = *std::move(got);
    return Status::Success();
  }

  void Unreserve(const ReservedPod& reserved) override {
    const std::string& uid = reserved.pod->Uid();
    NodeState* cpu = cache_->MutableCpuState(reserved.node);
    // A pod the cache still lists is released by ForgetPod; here only a Reserve whose assume
    // never happened is undone.
    if (cpu != nullptr && cache_->FindPod(uid) == nullptr && cpu->SpecOf(uid) != nullptr) {
      (void)cpu->ReleasePod(uid);
    }
  }

 private:
  ClusterCache* cache_;
  std::vector<int> near_;  // scratch
};

}  // namespace

std::unique_ptr<Plugin> NewNumaReserve(ClusterCache* cache) {
  return std::make_unique<NumaReserve>(cache);
}

}  // namespace huygens::sched
