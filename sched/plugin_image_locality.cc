// ImageLocality: kube-scheduler v1.35.4's plugin of that name (pkg/scheduler/framework/plugins/
// imagelocality). For each container of the pod (init and app) whose image the node has, the
// image's size on the node scaled by the share of all nodes that have it (so an image every node
// has counts in full, one only this node has counts 1/N of its size: spreading images is not
// rewarded); the sum is clamped to [23 MiB, 1000 MiB * containers] and mapped linearly to
// 0..kMaxNodeScore. No normalisation. A pod without containers scores 0.
#include <algorithm>
#include <cstdint>
#include <string>

#include "sched/plugins.h"

namespace huygens::sched {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kMinThreshold = 23 * kMiB;
constexpr int64_t kMaxContainerThreshold = 1000 * kMiB;

class ImageLocality final : public ScorePlugin {
 public:
  explicit ImageLocality(const ClusterCache* cache) : cache_(cache) {}

  std::string_view Name() const override { return "ImageLocality"; }

  // The score reads every node's images (how many have each), not only the node judged.
  void AppendEquivalenceKey(const CycleState& state, std::string& key) const override {
    (void)state;
    key += "image-generation:";
    key += std::to_string(cache_->ImageGeneration());
  }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    const std::vector<std::string>& images = state.pod().container_images;
    if (images.empty() || node.node.images.empty()) return 0;
    const double total = static_cast<double>(cache_->Nodes().size());
    int64_t sum = 0;
    for (const std::string& image : images) {
      auto it = node.node.images.find(image);
      if (it == node.node.images.end()) continue;
      const double spread = static_cast<double>(cache_->NodesWithImage(image)) / total;
      sum += static_cast<int64_t>(static_cast<double>(it->second) * spread);
    }
    const int64_t max = kMaxContainerThreshold * static_cast<int64_t>(images.size());
    sum = std::clamp(sum, kMinThreshold, max);
    return kMaxNodeScore * (sum - kMinThreshold) / (max - kMinThreshold);
  }

 private:
  const ClusterCache* cache_;
};

}  // namespace

std::string NormalizedImageName(std::string_view image) {
  std::string name(image);
  const size_t colon = name.rfind(':');
  const size_t slash = name.rfind('/');
  // Go's LastIndex gives -1 where npos is the largest value: compare as kube-scheduler does.
  const auto index = [](size_t i) { return i == std::string::npos ? -1 : static_cast<int64_t>(i); };
  if (index(colon) <= index(slash)) name += ":latest";
  return name;
}

std::unique_ptr<Plugin> NewImageLocality(const ClusterCache* cache) { return std::make_unique<ImageLocality>(cache); }

}  // namespace huygens::sched
