#include "cri/testing/fake_runtime.h"

#include <utility>

#include "absl/base/internal/raw_logging.h"
#include "fmt/format.h"

namespace huygens::cri::testing {

FakeRuntime::FakeRuntime(CpuSet node_cpus, CpuSet node_mems)
    : node_cpus_(std::move(node_cpus)), node_mems_(std::move(node_mems)) {
  ABSL_RAW_CHECK(!node_cpus_.Empty() && !node_mems_.Empty(),
                 "FakeRuntime needs a non-empty node cpuset and memory node set");
}

absl::Status FakeRuntime::CheckUp(std::string_view verb, std::string_view id) const {
  if (down_) {
    return absl::UnavailableError(
        fmt::format("{} {:?}: fake runtime is down (connection refused)", verb, id));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ContainerInfo>> FakeRuntime::ListContainers() {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status up = CheckUp("ListContainers", ""); !up.ok()) return up;
  std::vector<ContainerInfo> out;
  out.reserve(containers_.size());
  for (const auto& [id, c] : containers_) out.push_back(c.info);
  return out;
}

absl::Status FakeRuntime::UpdateCpuset(const ContainerInfo& container, const CpuSet& cpus,
                                       const CpuSet& mems) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::Status result = [&]() -> absl::Status {
    if (absl::Status up = CheckUp("UpdateContainerResources", container.id); !up.ok()) return up;
    auto it = containers_.find(container.id);
    if (it == containers_.end()) {
      return absl::NotFoundError(
          fmt::format("UpdateContainerResources {:?}: no such container", container.id));
    }
    if (it->second.failure) return absl::FailedPreconditionError(*it->second.failure);
    if (cpus.Empty() || !cpus.IsSubsetOf(node_cpus_)) {
      return absl::FailedPreconditionError(fmt::format(
          "UpdateContainerResources {:?}: write cpuset.cpus {:?}: Invalid argument (EINVAL); "
          "node cpus are {:?}",
          container.id, cpus.ToString(), node_cpus_.ToString()));
    }
    if (mems.Empty() || !mems.IsSubsetOf(node_mems_)) {
      return absl::FailedPreconditionError(fmt::format(
          "UpdateContainerResources {:?}: write cpuset.mems {:?}: Invalid argument (EINVAL); "
          "node mems are {:?}",
          container.id, mems.ToString(), node_mems_.ToString()));
    }
    it->second.cpuset = CpusetResources{cpus, mems};
    return absl::OkStatus();
  }();
  updates_.push_back(UpdateCall{container.id, cpus, mems, result});
  return result;
}

absl::StatusOr<CpusetResources> FakeRuntime::ReadCpuset(const ContainerInfo& container) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status up = CheckUp("ReadCpuset", container.id); !up.ok()) return up;
  auto it = containers_.find(container.id);
  if (it == containers_.end()) {
    return absl::NotFoundError(fmt::format("ReadCpuset {:?}: no such container", container.id));
  }
  return it->second.cpuset;
}

std::optional<int64_t> FakeRuntime::Pid(const ContainerInfo& container) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return std::nullopt;
  auto it = containers_.find(container.id);
  if (it == containers_.end()) return std::nullopt;
  return it->second.pid;
}

ContainerInfo FakeRuntime::AddLocked(ContainerInfo info) {
  const int64_t serial = next_serial_++;
  if (info.id.empty()) info.id = fmt::format("fake-{}", serial);
  if (info.state == ContainerState::kUnknown) info.state = ContainerState::kRunning;
  if (info.created_at_ns == 0) info.created_at_ns = serial;
  ABSL_RAW_CHECK(!containers_.contains(info.id), "FakeRuntime::AddContainer: id in use");
  Container c{info, CpusetResources{node_cpus_, node_mems_}, std::nullopt, std::nullopt};
  if (info.state == ContainerState::kRunning) c.pid = 1000 + serial;
  containers_.emplace(info.id, std::move(c));
  return info;
}

ContainerInfo FakeRuntime::AddContainer(ContainerInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  return AddLocked(std::move(info));
}

ContainerInfo FakeRuntime::AddPodContainer(std::string_view pod_uid,
                                           std::string_view pod_namespace,
                                           std::string_view pod_name,
                                           std::string_view container_name) {
  ContainerInfo info;
  info.sandbox_id = fmt::format("sandbox-{}", pod_uid);
  info.pod_uid = std::string(pod_uid);
  info.pod_namespace = std::string(pod_namespace);
  info.pod_name = std::string(pod_name);
  info.container_name = std::string(container_name);
  return AddContainer(std::move(info));
}

bool FakeRuntime::RemoveContainer(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) return false;
  containers_.erase(it);
  return true;
}

absl::StatusOr<ContainerInfo> FakeRuntime::RestartContainer(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) {
    return absl::NotFoundError(fmt::format("RestartContainer {:?}: no such container", id));
  }
  it->second.info.state = ContainerState::kExited;
  it->second.pid.reset();
  ContainerInfo next = it->second.info;
  next.id.clear();
  next.attempt += 1;
  next.state = ContainerState::kRunning;
  next.created_at_ns = 0;
  return AddLocked(std::move(next));
}

bool FakeRuntime::SetState(std::string_view id, ContainerState state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) return false;
  it->second.info.state = state;
  if (state == ContainerState::kRunning) {
    if (!it->second.pid) it->second.pid = 1000 + next_serial_++;
  } else {
    it->second.pid.reset();
  }
  return true;
}

void FakeRuntime::SetDown(bool down) {
  std::lock_guard<std::mutex> lock(mu_);
  down_ = down;
}

void FakeRuntime::FailUpdates(std::string_view id, std::string message) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = containers_.find(id);
  if (it != containers_.end()) it->second.failure = std::move(message);
}

void FakeRuntime::ClearFailure(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = containers_.find(id);
  if (it != containers_.end()) it->second.failure.reset();
}

bool FakeRuntime::SetCpusetBehindTheAgentsBack(std::string_view id, const CpuSet& cpus,
                                               const CpuSet& mems) {
  ABSL_RAW_CHECK(cpus.IsSubsetOf(node_cpus_) && mems.IsSubsetOf(node_mems_),
                 "FakeRuntime drift must stay within the node's cpuset");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) return false;
  it->second.cpuset = CpusetResources{cpus, mems};
  return true;
}

std::optional<CpusetResources> FakeRuntime::CpusetOf(std::string_view id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) return std::nullopt;
  return it->second.cpuset;
}

std::vector<FakeRuntime::UpdateCall> FakeRuntime::Updates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return updates_;
}

void FakeRuntime::ClearUpdates() {
  std::lock_guard<std::mutex> lock(mu_);
  updates_.clear();
}

}  // namespace huygens::cri::testing
