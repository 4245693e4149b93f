#include "cri/cgroupfs_runtime.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "fmt/format.h"

namespace huygens::cri {

CgroupfsRuntime::CgroupfsRuntime(CgroupfsOptions options) : writer_(std::move(options)) {}

absl::StatusOr<std::vector<ContainerInfo>> CgroupfsRuntime::ListContainers() {
  return absl::UnimplementedError(
      "ListContainers: cgroupfs cannot tell which pod a cgroup belongs to; ask the CRI runtime");
}

absl::StatusOr<std::string> CgroupfsRuntime::CgroupOf(const std::string& id) {
  if (auto it = cgroups_.find(id); it != cgroups_.end()) {
    std::error_code ec;
    if (std::filesystem::is_directory(writer_.CpusetDir(it->second), ec)) return it->second;
    cgroups_.erase(it);
  }
  absl::StatusOr<std::string> cgroup = writer_.FindContainer(id);
  if (cgroup.ok()) cgroups_[id] = *cgroup;
  return cgroup;
}

absl::Status CgroupfsRuntime::UpdateCpuset(const ContainerInfo& container, const CpuSet& cpus,
                                           const CpuSet& mems) {
  absl::StatusOr<std::string> cgroup = CgroupOf(container.id);
  if (!cgroup.ok()) return cgroup.status();
  return writer_.SetCpuset(*cgroup, cpus, mems);
}

absl::StatusOr<CpusetResources> CgroupfsRuntime::ReadCpuset(const ContainerInfo& container) {
  absl::StatusOr<std::string> cgroup = CgroupOf(container.id);
  if (!cgroup.ok()) return cgroup.status();
  return writer_.ReadCpuset(*cgroup);
}

std::optional<int64_t> CgroupfsRuntime::Pid(const ContainerInfo& container) {
  absl::StatusOr<std::string> cgroup = CgroupOf(container.id);
  if (!cgroup.ok()) return std::nullopt;
  absl::StatusOr<std::vector<int64_t>> procs = writer_.Procs(*cgroup);
  if (!procs.ok() || procs->empty()) return std::nullopt;
  return procs->front();
}

}  // namespace huygens::cri
