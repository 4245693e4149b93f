// libFuzzer target for the scheduler's reading of a NodeResourceTopology, from its JSON text to a
// node it schedules on: ReadNrt, TopologyFromNrt and PoolsFromNrt (topology/nrt.h), then
// NodeStateFromNrt (scheduler/objects.h) and one Guaranteed pod's allocation on that node. Any
// text either fails one step with InvalidArgument, or gives a node state that Validate finds
// consistent and that allocates the pod (ResourceExhausted when it does not fit), never a crash,
// an exception, or more memory than the run's -rss_limit_mb (scheduler/CMakeLists.txt): one bad
// NRT costs its node, never the scheduler.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/base/internal/raw_logging.h"
#include "node/node_state.h"
#include "scheduler/objects.h"
#include "topology/nrt.h"

namespace {

bool InvalidArgument(const absl::Status& s) { return s.code() == absl::StatusCode::kInvalidArgument; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using huygens::NodeState;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  absl::StatusOr<huygens::NrtObject> nrt = huygens::ReadNrt(doc);
  if (!nrt.ok()) {
    ABSL_RAW_CHECK(InvalidArgument(nrt.status()), "ReadNrt: wrong error code");
    return 0;
  }
  for (const huygens::NrtZone& zone : nrt->zones) (void)zone.NumaId();
  absl::StatusOr<huygens::CpuTopology> t = huygens::TopologyFromNrt(*nrt);
  ABSL_RAW_CHECK(t.ok() || InvalidArgument(t.status()), "TopologyFromNrt: wrong error code");
  absl::StatusOr<huygens::NrtPools> pools = huygens::PoolsFromNrt(*nrt);
  ABSL_RAW_CHECK(pools.ok() || InvalidArgument(pools.status()), "PoolsFromNrt: wrong error code");
  if (!t.ok() || !pools.ok()) return 0;

  // Half the pools' exclusive CPUs are held by Huygens' pods, the rest by kubelet's.
  huygens::CpuSet held;
  bool take = true;
  for (int cpu : pools->exclusive) {
    if (take) held = held.Union(huygens::CpuSet{cpu});
    take = !take;
  }
  absl::StatusOr<std::shared_ptr<const NodeState>> node =
      huygens::scheduler::NodeStateFromNrt(doc, huygens::NumaStrategy::kMostAllocated, held);
  if (!node.ok()) {
    ABSL_RAW_CHECK(InvalidArgument(node.status()), "NodeStateFromNrt: wrong error code");
    return 0;
  }
  ABSL_RAW_CHECK((*node)->Validate().empty(), "NodeStateFromNrt: an inconsistent node state");

  // One Guaranteed pod of 1 to 16 CPUs (and one device of the node's first resource, if any).
  NodeState state = **node;
  huygens::ContainerSpec app{.name = "app"};
  app.cpu_request_milli = app.cpu_limit_milli = 1000 * (1 + static_cast<int64_t>(size % 16));
  app.memory_request_bytes = app.memory_limit_bytes = int64_t{1} << 20;
  if (!state.Config().devices.empty()) app.extended_requests[state.Config().devices.begin()->first] = 1;
  huygens::PodSpec pod{.uid = "fuzz", .namespace_name = "default", .name = "fuzz", .containers = {app}};
  absl::StatusOr<huygens::PodAllocation> allocation = state.AllocatePod(pod);
  ABSL_RAW_CHECK(allocation.ok() || allocation.status().code() == absl::StatusCode::kResourceExhausted,
                 "AllocatePod: wrong error code");
  ABSL_RAW_CHECK(state.Validate().empty(), "AllocatePod: an inconsistent node state");
  return 0;
}
