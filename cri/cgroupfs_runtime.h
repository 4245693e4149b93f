// CgroupfsRuntime: a ContainerRuntime that works on cgroupfs alone, with no container runtime
// to ask. It is the second half of FallbackRuntime: it can set and read a container's cpuset
// when the CRI call failed, but it cannot list containers (cgroupfs has no Kubernetes identity).
//
// A container's cgroup is found by its runtime id (CgroupfsWriter::FindContainer: a directory
// named "<id>" or "<prefix>-<id>.scope" in the cpuset hierarchy) and remembered for later calls;
// a remembered cgroup that has gone is searched for again.
//
// Thread-safety: one thread at a time (the cache is not locked), as runtime.h allows.
#ifndef HUYGENS_CRI_CGROUPFS_RUNTIME_H_
#define HUYGENS_CRI_CGROUPFS_RUNTIME_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "cri/cgroupfs.h"
#include "cri/runtime.h"

namespace huygens::cri {

class CgroupfsRuntime final : public ContainerRuntime {
 public:
  explicit CgroupfsRuntime(CgroupfsOptions options = {});

  std::string Name() const override { return "cgroupfs"; }
  /// Always kUnimplemented: cgroupfs does not know which pod a cgroup belongs to.
  absl::StatusOr<std::vector<ContainerInfo>> ListContainers() override;
  /// CgroupfsWriter::SetCpuset on the container's cgroup. Errors: kNotFound when no cgroup of the
  /// container exists (it does not run), else CgroupfsWriter's.
  absl::Status UpdateCpuset(const ContainerInfo& container, const CpuSet& cpus,
                            const CpuSet& mems) override;
  absl::StatusOr<CpusetResources> ReadCpuset(const ContainerInfo& container) override;
  /// The first process of the container's cgroup.procs (its init process, as runc starts it).
  std::optional<int64_t> Pid(const ContainerInfo& container) override;

  const CgroupfsWriter& writer() const { return writer_; }

 private:
  absl::StatusOr<std::string> CgroupOf(const std::string& id);
  CgroupfsWriter writer_;
  std::map<std::string, std::string> cgroups_;  ///< container id -> cgroup path
};

}  // namespace huygens::cri

#endif  // HUYGENS_CRI_CGROUPFS_RUNTIME_H_
