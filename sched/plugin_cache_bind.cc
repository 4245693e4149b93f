// CacheBind: the simulator's binder: the bind succeeds at once and the cache confirms the
// assume (ClusterCache::AddPod), as if the API had echoed the binding back.
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

class CacheBind final : public BindPlugin {
 public:
  explicit CacheBind(ClusterCache* cache) : cache_(cache) {}
  std::string_view Name() const override { return "CacheBind"; }

  Status Bind(CycleState& state, const NodeInfo& node) override {
    absl::Status s = cache_->AddPod(state.pod_ptr(), node.node.name, state.allocation);
    if (!s.ok()) return Status::Error(std::string(s.message()));
    return Status::Success();
  }

 private:
  ClusterCache* cache_;
};

}  // namespace

std::unique_ptr<BindPlugin> NewCacheBind(ClusterCache* cache) {
  return std::make_unique<CacheBind>(cache);
}

}  // namespace huygens::sched
