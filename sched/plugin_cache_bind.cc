// CacheBind: the simulator's binder: the bind succeeds at once and the cache confirms the
// assume (ClusterCache::AddPod), as if the API had echoed the binding back. It touches the
// cache, so it runs on the cache's thread (the simulator runs both cycles back to back).
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

class CacheBind final : public BindPlugin {
 public:
  explicit CacheBind(ClusterCache* cache) : cache_(cache) {}
  std::string_view Name() const override { return "CacheBind"; }

  Status Bind(const ReservedPod& reserved) override {
    absl::Status s = cache_->AddPod(reserved.pod, reserved.node, reserved.allocation);
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
