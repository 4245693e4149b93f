#include "agent/pod_resources.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "agent/podresources_api/podresources.grpc.pb.h"
#include "cri/grpc_status.h"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"

namespace huygens::agent {
namespace {

using Clock = std::chrono::system_clock;

std::vector<DeviceGroup> Groups(
    const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& devices) {
  std::vector<DeviceGroup> out;
  for (const v1::ContainerDevices& d : devices) {
    DeviceGroup g{.resource = d.resource_name(),
                  .device_ids = {d.device_ids().begin(), d.device_ids().end()},
                  .numa_nodes = {}};
    if (d.has_topology()) {
      for (const v1::NUMANode& n : d.topology().nodes()) g.numa_nodes.push_back(n.id());
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

NrtDevices CountDevices(const PodResourcesSnapshot& snapshot, const CpuTopology& t,
                        std::vector<std::string>& left_out) {
  // (resource, device id) -> its NUMA node, for the devices that count.
  std::map<std::pair<std::string, std::string>, int> numa_of;
  std::set<std::pair<std::string, std::string>> reported;  // each device named once
  auto place = [&](const DeviceGroup& g, const std::string& id) -> std::optional<int> {
    if (g.numa_nodes.empty()) return std::nullopt;  // not NUMA-affine
    const int64_t lowest = *std::min_element(g.numa_nodes.begin(), g.numa_nodes.end());
    if (lowest < 0 || lowest > std::numeric_limits<int>::max() ||
        !t.HasNumaNode(static_cast<int>(lowest))) {
      if (reported.insert({g.resource, id}).second) {
        left_out.push_back(fmt::format("{} {:?}: NUMA node {} does not exist", g.resource, id,
                                       lowest));
      }
      return std::nullopt;
    }
    return static_cast<int>(lowest);
  };
  NrtDevices out;
  for (const DeviceGroup& g : snapshot.allocatable) {
    if (g.resource.find('/') == std::string::npos) continue;
    for (const std::string& id : g.device_ids) {
      const std::optional<int> numa = place(g, id);
      if (!numa || !numa_of.emplace(std::pair{g.resource, id}, *numa).second) continue;
      NrtDeviceFigures& f = out[*numa][g.resource];
      ++f.allocatable;
      ++f.available;
    }
  }
  std::set<std::pair<std::string, std::string>> used;
  for (const DeviceGroup& g : snapshot.in_use) {
    if (g.resource.find('/') == std::string::npos) continue;
    for (const std::string& id : g.device_ids) {
      if (!used.insert({g.resource, id}).second) continue;  // reused by another container
      auto known = numa_of.find({g.resource, id});
      std::optional<int> numa;
      if (known != numa_of.end()) {
        numa = known->second;
      } else {
        numa = place(g, id);  // held, but no longer allocatable
      }
      if (!numa) continue;
      NrtDeviceFigures& f = out[*numa][g.resource];
      if (f.available > 0) --f.available;
    }
  }
  return out;
}

struct PodResourcesReader::Rpc {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
};

PodResourcesReader::PodResourcesReader(PodResourcesOptions options)
    : options_(std::move(options)) {
  if (options_.socket.empty()) return;
  rpc_ = std::make_unique<Rpc>();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  rpc_->channel = grpc::CreateCustomChannel("unix://" + options_.socket,
                                            grpc::InsecureChannelCredentials(), args);
  rpc_->stub = v1::PodResourcesLister::NewStub(rpc_->channel);
}

PodResourcesReader::~PodResourcesReader() = default;

absl::StatusOr<PodResourcesSnapshot> PodResourcesReader::Ask() {
  if (rpc_ == nullptr) return absl::FailedPreconditionError("no podResourcesSocket configured");
  PodResourcesSnapshot out;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(Clock::now() + options_.timeout);
    v1::AllocatableResourcesRequest req;
    v1::AllocatableResourcesResponse resp;
    grpc::Status s = rpc_->stub->GetAllocatableResources(&ctx, req, &resp);
    if (!s.ok()) return cri::FromGrpcStatus(s, "GetAllocatableResources", options_.socket);
    out.allocatable = Groups(resp.devices());
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(Clock::now() + options_.timeout);
  v1::ListPodResourcesRequest req;
  v1::ListPodResourcesResponse resp;
  grpc::Status s = rpc_->stub->List(&ctx, req, &resp);
  if (!s.ok()) return cri::FromGrpcStatus(s, "List", options_.socket);
  for (const v1::PodResources& pod : resp.pod_resources()) {
    for (const v1::ContainerResources& c : pod.containers()) {
      std::vector<DeviceGroup> groups = Groups(c.devices());
      out.in_use.insert(out.in_use.end(), std::make_move_iterator(groups.begin()),
                        std::make_move_iterator(groups.end()));
    }
  }
  return out;
}

DeviceUse PodResourcesReader::Read() {
  DeviceUse use;
  absl::StatusOr<PodResourcesSnapshot> snapshot = Ask();
  if (!snapshot.ok()) {
    use.reason = fmt::format("kubelet's pod resources API: {}",
                             std::string(snapshot.status().message()));
  } else {
    std::vector<std::string> left_out;
    use.devices = CountDevices(*snapshot, *options_.topology, left_out);
    for (const std::string& line : left_out) {
      use.reason += fmt::format("{}{}; left out", use.reason.empty() ? "" : "; ", line);
    }
  }
  if (use.reason != last_reason_) {
    if (use.reason.empty()) {
      spdlog::info("NUMA-affine devices: from {}", options_.socket);
    } else if (rpc_ == nullptr) {
      spdlog::info("NUMA-affine devices: {}", use.reason);
    } else {
      spdlog::warn("NUMA-affine devices: {}", use.reason);
    }
    last_reason_ = use.reason;
  }
  return use;
}

}  // namespace huygens::agent
