// CgroupfsWriter: sets and reads the cpuset (cpuset.cpus, cpuset.mems) of a cgroup directly in
// the cgroup filesystem, for cgroup v1 and v2 and both of kubelet's cgroup drivers (the driver
// only changes the cgroup path; see cri/cgroup_path.h for both forms).
//
// Files (the kernel's, Documentation/admin-guide/cgroup-v1/cpusets.rst and cgroup-v2.rst):
//   - v1: <root>/cpuset<cgroup>/cpuset.cpus and cpuset.mems, read and written.
//   - v2: <root><cgroup>/cpuset.cpus and cpuset.mems are written; the kernel truth is read from
//     cpuset.cpus.effective and cpuset.mems.effective.
//
// Write order (why SetCpuset may touch more than one cgroup): on v1 a cgroup's cpuset must be a
// subset of its parent's (else EINVAL) and a superset of each child's (else EBUSY). So SetCpuset
// first widens every ancestor below the hierarchy root that lacks a wanted CPU (top-down, each to
// its own set plus the wanted set), then narrows each descendant to its intersection with the
// new set (bottom-up), then writes the cgroup itself; cpuset.cpus first, then cpuset.mems. A
// descendant whose intersection would be empty is left as is, and the kernel's EBUSY on the
// cgroup itself is reported. On v2 parents do not bound a child's configured set but do bound
// its effective set, so ancestors with a non-empty cpuset.cpus are widened the same way; there
// is no child constraint.
//
// Errors name the file, the value written and the errno: kFailedPrecondition for the kernel's
// refusals (EBUSY: a child holds CPUs outside the new set; EACCES as root: on v1 the new set is
// not within the parent's; EINVAL / ERANGE: CPUs offline or beyond the machine; ENOSPC, EROFS,
// EISDIR), kPermissionDenied (EPERM, and EACCES when not root), kNotFound
// (ENOENT: no such cgroup, or the cpuset controller is not enabled for it on v2),
// kInvalidArgument (a malformed cgroup path, an empty cpuset). On v1 a failure of cpuset.mems
// after cpuset.cpus was written leaves the new cpus in place (the message says so).
//
// The root is configurable so tests run on a folder tree that mimics the layouts.
// Thread-safety: const methods touch only the filesystem; concurrent writers to one cgroup race
// as they would in the kernel.
#ifndef HUYGENS_CRI_CGROUPFS_H_
#define HUYGENS_CRI_CGROUPFS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"
#include "cri/cgroup_path.h"
#include "cri/runtime.h"

namespace huygens::cri {

struct CgroupfsOptions {
  /// Mount point of the cgroup filesystem. Default "/sys/fs/cgroup".
  std::string root = "/sys/fs/cgroup";
  /// Cgroup version. Default (nullopt): detected at construction, v2 when
  /// <root>/cgroup.controllers exists, else v1.
  std::optional<CgroupVersion> version;
};

class CgroupfsWriter {
 public:
  explicit CgroupfsWriter(CgroupfsOptions options = {});

  CgroupVersion version() const { return version_; }
  const std::string& root() const { return root_; }

  /// Filesystem directory of `cgroup` (a normalised cgroup path) in the cpuset hierarchy:
  /// v1 "<root>/cpuset<cgroup>", v2 "<root><cgroup>".
  std::string CpusetDir(std::string_view cgroup) const;

  /// Sets cpuset.cpus and cpuset.mems of `cgroup` (an absolute cgroup path, normalised here), in
  /// the order described in the file comment. Errors: see the file comment.
  absl::Status SetCpuset(std::string_view cgroup, const CpuSet& cpus, const CpuSet& mems) const;

  /// The cgroup's cpuset as the kernel applies it (v1 cpuset.cpus / cpuset.mems; v2 the
  /// .effective files). Errors: kNotFound for a missing cgroup or file, kInvalidArgument for a
  /// file that does not hold a cpu-list, other read errors as for SetCpuset.
  absl::StatusOr<CpusetResources> ReadCpuset(std::string_view cgroup) const;

  /// Process ids in the cgroup's cgroup.procs, in file order. Errors as ReadCpuset.
  absl::StatusOr<std::vector<int64_t>> Procs(std::string_view cgroup) const;

  /// Searches the cpuset hierarchy (at most 8 levels deep, symbolic links not followed) for the
  /// cgroup of the container with runtime id `container_id`: a directory named `<id>` (cgroupfs
  /// driver) or `<prefix>-<id>.scope` (systemd driver: cri-containerd-, crio-, docker-). Returns
  /// its cgroup path. Errors: kInvalidArgument for an id that is empty or holds '/';
  /// kNotFound when no directory matches.
  absl::StatusOr<std::string> FindContainer(std::string_view container_id) const;

 private:
  // Widens ancestors, narrows descendants, writes `cgroup`'s `file` (cpuset.cpus or .mems).
  absl::Status SetOne(const std::string& cgroup, std::string_view file, const CpuSet& want) const;

  std::string root_;
  CgroupVersion version_;
};

}  // namespace huygens::cri

#endif  // HUYGENS_CRI_CGROUPFS_H_
